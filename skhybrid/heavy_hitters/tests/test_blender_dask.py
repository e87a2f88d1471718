"""BlenderHeavyHitters on Dask inputs: two reductions over chunks of users.

The first gives the record counts of S and T (the curator's random split of the opt-in
users is drawn in blocks of opt-in ranks, so it does not depend on the chunking); the
second, against the head list built from them, the counts of the clients' reports,
privatized per chunk with that chunk's own generator. Hence:

- with opt-in users only (only the curator's noise), a fit on chunks is the in-memory
  fit for the same seed, exactly (the statistics are integer counts);
- with clients, it has the in-memory fit's distribution.
"""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

from skhybrid.datasets import make_search_logs  # noqa: E402
from skhybrid.heavy_hitters import BlenderHeavyHitters  # noqa: E402
from skhybrid.heavy_hitters._blender_chunks import _SPLIT_BLOCK, _HeadListSplit  # noqa: E402

SMALL_LOG = {"n_queries": 10, "urls_per_query": 2, "zipf_exponent": 1.0, "url_zipf_exponent": 1.0}


@pytest.fixture(scope="module")
def client():
    """An in-process Dask cluster: the fits below compute on it."""
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as dask_client:
            yield dask_client


def _dask_logs(n_users, chunk_rows, seed):
    """Search logs generated chunk by chunk (no data in the task graph)."""
    import dask

    lengths = [min(chunk_rows, n_users - start) for start in range(0, n_users, chunk_rows)]
    blocks = [
        da.from_delayed(dask.delayed(make_search_logs)(length, random_state=seed + index),
                        shape=(length, 2), dtype=np.int64)
        for index, length in enumerate(lengths)
    ]
    return da.concatenate(blocks)


# -- the curator's split of the opt-in users -----------------------------------------------


def test_the_split_into_s_and_t_does_not_depend_on_the_chunks():
    n_optin, n_headlist = 3 * _SPLIT_BLOCK + 123, 2 * _SPLIT_BLOCK
    split = _HeadListSplit(n_optin, n_headlist, np.random.default_rng(0))
    whole = split.part(0, n_optin).in_headlist()
    assert whole.sum() == n_headlist
    boundaries = [0, 1, 5_000, _SPLIT_BLOCK, _SPLIT_BLOCK + 7, 2 * _SPLIT_BLOCK + 99, n_optin]
    pieces = [split.part(start, stop).in_headlist()
              for start, stop in zip(boundaries[:-1], boundaries[1:])]
    np.testing.assert_array_equal(np.concatenate(pieces), whole)


def test_the_split_puts_every_opt_in_user_in_s_with_the_same_probability():
    # A uniform subset of size s: each user is in S with probability s / n, in every
    # block alike (the blocks' shares follow the hypergeometric distribution).
    n_optin, n_headlist, n_splits = _SPLIT_BLOCK + _SPLIT_BLOCK // 2, 30_000, 200
    rng = np.random.default_rng(1)
    blocks = np.zeros((n_splits, 2))
    first_user = 0
    for index in range(n_splits):
        members = _HeadListSplit(n_optin, n_headlist, rng).part(0, n_optin).in_headlist()
        blocks[index] = members[:_SPLIT_BLOCK].sum(), members[_SPLIT_BLOCK:].sum()
        first_user += members[0]
    p = n_headlist / n_optin
    expected = p * np.array([_SPLIT_BLOCK, _SPLIT_BLOCK // 2])
    hypergeometric_sd = np.sqrt(
        n_headlist * (_SPLIT_BLOCK / n_optin) * (1 - _SPLIT_BLOCK / n_optin)
        * (n_optin - n_headlist) / (n_optin - 1)
    )
    standard_error = hypergeometric_sd / np.sqrt(n_splits)
    assert np.all(np.abs(blocks.mean(axis=0) - expected) < 4 * standard_error)
    assert abs(first_user / n_splits - p) < 4 * np.sqrt(p * (1 - p) / n_splits)


# -- the same estimate when only the curator draws noise ------------------------------------


@pytest.mark.slow
def test_opt_in_fit_on_millions_of_rows_in_chunks_is_the_in_memory_fit(client):
    chunks = _dask_logs(2_000_000, 250_000, seed=0)
    X = chunks.compute()
    params = {"epsilon": 1.0, "max_records": 30, "random_state": 2}
    in_memory = BlenderHeavyHitters(**params).fit(X)
    chunked = BlenderHeavyHitters(**params).fit(chunks)
    assert chunked.head_list_ == in_memory.head_list_
    assert chunked.n_candidates_ == in_memory.n_candidates_ > 30
    np.testing.assert_array_equal(chunked.probabilities_, in_memory.probabilities_)
    np.testing.assert_array_equal(chunked.optin_variances_, in_memory.optin_variances_)
    assert (chunked.n_headlist_users_, chunked.n_estimation_users_) == (
        in_memory.n_headlist_users_, in_memory.n_estimation_users_)
    # Another seed gives other estimates: the equality above is not an accident.
    other = BlenderHeavyHitters(**{**params, "random_state": 3}).fit(X)
    assert not np.array_equal(other.probabilities_, in_memory.probabilities_)


def test_opt_in_users_interleaved_with_clients_are_split_as_in_memory(client):
    X = make_search_logs(60_000, random_state=4, **SMALL_LOG)
    trust = np.random.default_rng(5).random(60_000) < 0.5
    params = {"max_records": 8, "random_state": 6}
    in_memory = BlenderHeavyHitters(**params).fit(X, trust_group=trust)
    chunked = BlenderHeavyHitters(**params).fit(da.from_array(X, chunks=(13_000, 2)),
                                                trust_group=trust)
    # The opt-in side (split, candidates, opt-in estimates) is the curator's alone.
    order = [in_memory.head_list_.index(record) for record in chunked.head_list_]
    assert sorted(order) == list(range(len(order)))
    np.testing.assert_array_equal(chunked.optin_probabilities_,
                                  in_memory.optin_probabilities_[order])
    assert chunked.n_clients_ == in_memory.n_clients_ == int((~trust).sum())


# -- clients: their devices' randomness, chunk by chunk -------------------------------------


@pytest.mark.slow
def test_fits_with_clients_on_chunks_have_the_in_memory_distribution(client):
    X = make_search_logs(200_000, random_state=7, **SMALL_LOG)
    trust = np.random.default_rng(8).random(200_000) < 0.3
    chunks = da.from_array(X, chunks=(40_000, 2))
    n_seeds = 12
    estimates = {"memory": [], "dask": []}
    records = None
    for seed in range(n_seeds):
        params = {"max_records": 20, "random_state": seed}
        for name, data in (("memory", X), ("dask", chunks)):
            est = BlenderHeavyHitters(**params).fit(data, trust_group=trust)
            records = records or sorted(est.head_list_)
            assert sorted(est.head_list_) == records  # all 20 records, every fit
            index = {record: i for i, record in enumerate(est.head_list_)}
            estimates[name].append(est.client_probabilities_[[index[r] for r in records]])
    memory, chunked = np.array(estimates["memory"]), np.array(estimates["dask"])
    # Same seeds, but the clients' noise comes from each chunk's own generator.
    assert np.abs(memory - chunked).max() > 1e-4
    standard_error = np.sqrt((memory.var(axis=0, ddof=1) + chunked.var(axis=0, ddof=1)) / n_seeds)
    assert np.all(np.abs(memory.mean(axis=0) - chunked.mean(axis=0)) < 4 * standard_error)
    # ...and both estimate the records' frequencies.
    distinct, counts = np.unique(X, axis=0, return_counts=True)
    frequency = dict(zip(map(tuple, distinct.tolist()), counts / X.shape[0]))
    truth = np.array([frequency[record] for record in records])
    spread = chunked.std(axis=0, ddof=1) / np.sqrt(n_seeds)
    assert np.all(np.abs(chunked.mean(axis=0) - truth) < 4 * spread + 0.002)


# -- inputs: Dask DataFrames, numpy metadata, errors ----------------------------------------


def test_dask_dataframe_input_is_the_dask_array_fit_and_records_feature_names(client):
    X = make_search_logs(40_000, random_state=9, **SMALL_LOG)
    trust = np.where(np.random.default_rng(10).random(40_000) < 0.4, "tcm", "lm")
    frame = dd.from_pandas(pd.DataFrame({"query": X[:, 0], "url": X[:, 1], "trust": trust}),
                           npartitions=3)
    lengths = tuple(int(n) for n in frame.map_partitions(len).compute())
    from_frame = BlenderHeavyHitters(max_records=8, random_state=11).fit(
        frame[["query", "url"]], trust_group=frame["trust"]
    )
    from_array = BlenderHeavyHitters(max_records=8, random_state=11).fit(
        da.from_array(X, chunks=(lengths, 2)), trust_group=da.from_array(trust, chunks=lengths)
    )
    assert from_frame.head_list_ == from_array.head_list_
    np.testing.assert_array_equal(from_frame.probabilities_, from_array.probabilities_)
    assert from_frame.feature_names_in_.tolist() == ["query", "url"]
    assert from_frame.score(pd.DataFrame(X, columns=["query", "url"])) > 0.5


def test_numpy_metadata_with_a_dask_X_is_the_dask_metadata_fit(client):
    X = make_search_logs(30_000, random_state=12, **SMALL_LOG)
    trust = np.random.default_rng(13).random(30_000) < 0.5
    epsilon = np.where(trust, 4.0, 2.0)
    chunks = da.from_array(X, chunks=(7_000, 2))
    numpy_metadata = BlenderHeavyHitters(max_records=8, random_state=14).fit(
        chunks, trust_group=trust, epsilon=epsilon
    )
    dask_metadata = BlenderHeavyHitters(max_records=8, random_state=14).fit(
        chunks, trust_group=da.from_array(trust, chunks=4_000),
        epsilon=da.from_array(epsilon, chunks=9_000),
    )
    assert numpy_metadata.head_list_ == dask_metadata.head_list_
    np.testing.assert_array_equal(numpy_metadata.probabilities_, dask_metadata.probabilities_)


@pytest.mark.parametrize("as_dask", [False, True])
def test_metadata_of_another_length_raises(client, as_dask):
    X = make_search_logs(10_000, random_state=15, **SMALL_LOG)
    short = np.ones(9_999, dtype=bool)
    if as_dask:
        short = da.from_array(short, chunks=3_000)
    # Both messages name the metadata's length.
    with pytest.raises(ValueError, match="9999"):
        BlenderHeavyHitters().fit(da.from_array(X, chunks=(3_000, 2)), trust_group=short)


def test_bad_values_in_a_later_chunk_name_their_row_in_the_whole_input(client):
    X = make_search_logs(10_000, random_state=16, **SMALL_LOG)
    trust = np.array(["tcm", "lm"] * 5_000, dtype=object)
    trust[8_765] = "client"
    chunks = da.from_array(X, chunks=(3_000, 2))
    with pytest.raises(ValueError, match=r"got 'client' at index 8765"):
        BlenderHeavyHitters().fit(chunks, trust_group=da.from_array(trust, chunks=3_000))
    bad_X = X.copy()
    bad_X[6_543, 0] = -3
    with pytest.raises(ValueError, match=r"got -3 at row 6543, column 0"):
        BlenderHeavyHitters().fit(da.from_array(bad_X, chunks=(3_000, 2)),
                                  trust_group=np.ones(10_000, dtype=bool))


def test_records_with_other_than_two_columns_raise(client):
    X = np.zeros((100, 3), dtype=int)
    with pytest.raises(ValueError, match="must have two columns.*got n_features = 3"):
        BlenderHeavyHitters().fit(da.from_array(X, chunks=(50, 3)),
                                  trust_group=np.ones(100, dtype=bool))
