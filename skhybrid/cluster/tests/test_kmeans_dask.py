"""HybridKMeans on Dask inputs: each iteration is one reduction over chunks of users.

The fit on a Dask array or DataFrame runs the in-memory fit's per-chunk statistics on
every chunk and lets the curator draw its noise once from the totals, so:

- with only tcm users (only the curator's noise), it gives the in-memory estimate for the
  same seed, up to the rounding of sums added in another order;
- with local users, whose devices' randomness is drawn per chunk, it gives an estimate
  with the in-memory fit's distribution (and exactly the in-memory fit on one chunk).
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import skhybrid.cluster._k_means_statistics as statistics_module  # noqa: E402
from skhybrid.cluster import HybridKMeans  # noqa: E402
from skhybrid.exceptions import PrivacyLeakWarning  # noqa: E402

CORNERS = np.array([[0.25, 0.25], [0.25, 0.75], [0.75, 0.25], [0.75, 0.75]])
#: Initial centres near the corners, so that every fit labels the clusters alike.
INIT = CORNERS + np.array([[0.05, -0.04], [-0.03, 0.05], [0.04, 0.03], [-0.05, -0.02]])


@pytest.fixture(scope="module")
def client():
    """An in-process Dask cluster: the fits below compute on it."""
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as dask_client:
            yield dask_client


def _blobs(n, seed=0, tcm_fraction=0.0):
    rng = np.random.default_rng(seed)
    X = CORNERS[rng.integers(0, 4, n)] + rng.normal(0.0, 0.04, (n, 2))
    trust = np.where(rng.random(n) < tcm_fraction, "tcm", "lm")
    return X, trust


def _dask_blobs(n, chunk_rows, seed=0):
    """The four clusters generated chunk by chunk by Dask (no data in the task graph)."""
    rng = da.random.default_rng(seed)
    labels = rng.integers(0, 4, size=n, chunks=chunk_rows)
    corners = da.stack([0.25 + 0.5 * (labels // 2), 0.25 + 0.5 * (labels % 2)], axis=1)
    return corners + rng.normal(0.0, 0.04, size=(n, 2), chunks=(chunk_rows, 2))


# -- the same estimate when only the curator draws noise ------------------------------------


@pytest.mark.slow
def test_tcm_fit_on_millions_of_rows_in_chunks_is_the_in_memory_fit(client):
    chunks = _dask_blobs(2_500_000, 300_000, seed=1)
    X = chunks.compute()
    km = HybridKMeans(4, epsilon=0.5, n_iter=5, bounds=(0, 1), random_state=3)
    in_memory = km.fit(X)
    expected_centres, expected_weight = in_memory.cluster_centers_, in_memory.weight_
    chunked = HybridKMeans(4, epsilon=0.5, n_iter=5, bounds=(0, 1), random_state=3).fit(chunks)
    # The chunks' sums are added in another order: equal up to rounding.
    np.testing.assert_allclose(chunked.cluster_centers_, expected_centres, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(chunked.weight_, expected_weight)
    assert (chunked.n_tcm_, chunked.n_lm_) == (2_500_000, 0)
    # A different seed moves the centres by far more than the tolerance.
    other = HybridKMeans(4, epsilon=0.5, n_iter=5, bounds=(0, 1), random_state=4).fit(X)
    assert np.abs(other.cluster_centers_ - expected_centres).max() > 1e-6


@pytest.mark.parametrize("strategy", ["hybrid", "full_lm"])
def test_a_fit_on_one_chunk_is_the_in_memory_fit_with_local_users(client, strategy):
    X, trust = _blobs(20_000, seed=2, tcm_fraction=0.3)
    params = {"epsilon": 3.0, "strategy": strategy, "bounds": (0, 1), "random_state": 5}
    in_memory = HybridKMeans(4, **params).fit(X, trust_group=trust)
    one_chunk = HybridKMeans(4, **params).fit(
        da.from_array(X, chunks=(20_000, 2)), trust_group=da.from_array(trust, chunks=20_000)
    )
    np.testing.assert_array_equal(one_chunk.cluster_centers_, in_memory.cluster_centers_)
    np.testing.assert_array_equal(one_chunk.weight_, in_memory.weight_)


# -- local users: their devices' randomness, chunk by chunk ---------------------------------


def test_each_lm_users_report_is_drawn_once_and_reused_in_every_iteration(client, monkeypatch):
    X, _ = _blobs(9_000, seed=3)
    reports_by_chunk = {}
    privatize = statistics_module.privatized_rows

    def recording_privatize(values, rows, **kwargs):
        reports = privatize(values, rows, **kwargs)
        reports_by_chunk.setdefault(values.tobytes(), []).append(reports)
        return reports

    monkeypatch.setattr(statistics_module, "privatized_rows", recording_privatize)
    n_iter = 3
    HybridKMeans(4, n_iter=n_iter, strategy="full_lm", bounds=(0, 1), random_state=0).fit(
        da.from_array(X, chunks=(3_000, 2))
    )
    assert len(reports_by_chunk) == 3
    for reports in reports_by_chunk.values():
        # Each iteration re-creates the chunk's reports from the same generator: the one
        # report of each user, never a fresh draw.
        assert len(reports) == n_iter
        for again in reports[1:]:
            np.testing.assert_array_equal(again, reports[0])
    # ...while different chunks (different devices) draw independent noise.
    first, second = (reports[0] for reports in list(reports_by_chunk.values())[:2])
    chunk_noise = [first - np.clip(X[:3_000], 0, 1), second - np.clip(X[3_000:6_000], 0, 1)]
    assert not np.allclose(*chunk_noise)


@pytest.mark.slow
def test_fits_with_local_noise_on_chunks_have_the_in_memory_distribution(client):
    chunks = _dask_blobs(100_000, 25_000, seed=4)
    X = chunks.compute()
    n_seeds = 12
    params = {"epsilon": 8.0, "n_iter": 3, "strategy": "full_lm", "bounds": (0, 1),
              "init": INIT}
    fits = {"memory": [], "dask": []}
    for seed in range(n_seeds):
        fits["memory"].append(HybridKMeans(4, random_state=seed, **params).fit(X).cluster_centers_)
        fits["dask"].append(
            HybridKMeans(4, random_state=seed, **params).fit(chunks).cluster_centers_
        )
    memory, chunked = np.array(fits["memory"]), np.array(fits["dask"])
    # Same seeds, but the devices' noise comes from each chunk's own generator.
    assert np.abs(memory - chunked).max() > 1e-3
    standard_error = np.sqrt((memory.var(axis=0, ddof=1) + chunked.var(axis=0, ddof=1)) / n_seeds)
    assert np.all(np.abs(memory.mean(axis=0) - chunked.mean(axis=0)) < 4 * standard_error)
    # The fits are informative: about the clusters' means (up to the few points that
    # K-means assigns to another cluster than the corner they were drawn around).
    corner = np.argmin(((X[:, np.newaxis] - CORNERS) ** 2).sum(axis=-1), axis=1)
    truth = np.array([X[corner == k].mean(axis=0) for k in range(4)])
    tolerance = 4 * chunked.std(axis=0, ddof=1) / np.sqrt(n_seeds) + 0.005
    assert np.all(np.abs(chunked.mean(axis=0) - truth) < tolerance)


# -- inputs: Dask DataFrames, numpy metadata, errors ----------------------------------------


def test_dask_dataframe_input_is_the_dask_array_fit_and_records_feature_names(client):
    X, trust = _blobs(40_000, seed=5, tcm_fraction=0.2)
    frame = dd.from_pandas(
        pd.DataFrame({"height": X[:, 0], "width": X[:, 1], "trust": trust}), npartitions=4
    )
    lengths = tuple(int(n) for n in frame.map_partitions(len).compute())
    params = {"epsilon": 2.0, "bounds": (0, 1), "random_state": 6}
    from_frame = HybridKMeans(4, **params).fit(frame[["height", "width"]],
                                              trust_group=frame["trust"])
    from_array = HybridKMeans(4, **params).fit(
        da.from_array(X, chunks=(lengths, 2)), trust_group=da.from_array(trust, chunks=lengths)
    )
    np.testing.assert_array_equal(from_frame.cluster_centers_, from_array.cluster_centers_)
    assert from_frame.feature_names_in_.tolist() == ["height", "width"]
    assert from_frame.n_features_in_ == 2
    assert (from_frame.n_tcm_, from_frame.n_lm_) == (int((trust == "tcm").sum()),
                                                     int((trust == "lm").sum()))
    # The fitted estimator predicts in memory.
    labels = from_frame.predict(pd.DataFrame(X[:5], columns=["height", "width"]))
    assert labels.shape == (5,)


def test_numpy_metadata_with_a_dask_X_is_the_dask_metadata_fit(client):
    X, trust = _blobs(30_000, seed=6, tcm_fraction=0.4)
    epsilon = np.where(trust == "tcm", 2.0, 1.0)
    chunks = da.from_array(X, chunks=(7_000, 2))
    params = {"bounds": (0, 1), "random_state": 7}
    numpy_metadata = HybridKMeans(4, **params).fit(chunks, trust_group=trust, epsilon=epsilon)
    dask_metadata = HybridKMeans(4, **params).fit(
        chunks, trust_group=da.from_array(trust, chunks=5_000),
        epsilon=da.from_array(epsilon, chunks=11_000),
    )
    np.testing.assert_array_equal(numpy_metadata.cluster_centers_, dask_metadata.cluster_centers_)


@pytest.mark.parametrize("as_dask", [False, True])
def test_metadata_of_another_length_raises(client, as_dask):
    X, trust = _blobs(10_000, seed=7, tcm_fraction=0.5)
    short = trust[:-1]
    if as_dask:
        short = da.from_array(short, chunks=3_000)
    # Both messages name the metadata's length.
    with pytest.raises(ValueError, match="9999"):
        HybridKMeans(4, bounds=(0, 1)).fit(da.from_array(X, chunks=(3_000, 2)), trust_group=short)


def test_bad_values_in_a_later_chunk_name_their_row_in_the_whole_input(client):
    X, trust = _blobs(10_000, seed=8, tcm_fraction=0.5)
    chunks = da.from_array(X, chunks=(3_000, 2))
    bad_trust = trust.astype(object)
    bad_trust[7_012] = "trusted"
    with pytest.raises(ValueError, match=r"got 'trusted' at index 7012"):
        HybridKMeans(4, bounds=(0, 1)).fit(chunks, trust_group=da.from_array(bad_trust, 3_000))
    bad_X = X.copy()
    bad_X[6_001, 1] = np.nan
    with pytest.raises(ValueError, match=r"got nan at row 6001, column 1"):
        HybridKMeans(4, bounds=(0, 1)).fit(da.from_array(bad_X, chunks=(3_000, 2)),
                                           trust_group=trust)
    epsilon = np.ones(10_000)
    epsilon[9_999] = -1.0
    with pytest.raises(ValueError, match=r"epsilon must be > 0.*-1.0\)? at index 9999"):
        HybridKMeans(4, bounds=(0, 1)).fit(chunks, trust_group=trust, epsilon=epsilon)


def test_a_groups_epsilon_that_changes_in_a_later_chunk_names_the_first_row_with_it(client):
    X, _ = _blobs(10_000, seed=9)
    trust = np.array(["tcm", "lm"] * 5_000)
    epsilon = np.where(trust == "tcm", 1.0, 3.0)
    epsilon[6_000:][trust[6_000:] == "tcm"] = 2.0  # the tcm group's level changes in chunk 3
    with pytest.raises(ValueError, match=r"tcm group has 1.0 and 2.0 \(at index 6000\)"):
        HybridKMeans(4, bounds=(0, 1)).fit(da.from_array(X, chunks=(3_000, 2)),
                                           trust_group=trust, epsilon=epsilon)


def test_bounds_from_a_dask_input_warn_and_match_the_in_memory_bounds(client):
    # TCM-only: the central noise is the same for both paths (the lm users' local
    # noise is drawn chunk by chunk); every user is tcm without trust_group.
    X, _ = _blobs(50_000, seed=10)
    with pytest.warns(PrivacyLeakWarning):
        in_memory = HybridKMeans(4, strategy="tcm_only", random_state=8).fit(X)
    with pytest.warns(PrivacyLeakWarning):
        chunked = HybridKMeans(4, strategy="tcm_only", random_state=8).fit(
            da.from_array(X, chunks=(12_000, 2)))
    np.testing.assert_allclose(chunked.cluster_centers_, in_memory.cluster_centers_,
                               rtol=0, atol=1e-9)


def test_data_independent_bounds_do_not_warn_on_dask_input(client):
    X, trust = _blobs(5_000, seed=11, tcm_fraction=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        HybridKMeans(4, bounds=(0, 1), random_state=0).fit(da.from_array(X, chunks=(2_000, 2)),
                                                           trust_group=trust)


def test_the_core_does_not_import_dask():
    code = (
        "import sys, numpy as np, skhybrid; "
        "from skhybrid.cluster import HybridKMeans; "
        "from skhybrid.heavy_hitters import BlenderHeavyHitters; "
        "X = np.random.default_rng(0).random((500, 2)); "
        "HybridKMeans(2, bounds=(0, 1), random_state=0).fit(X); "
        "BlenderHeavyHitters(random_state=0).fit((X * 4).astype(int)); "
        "assert 'dask' not in sys.modules, sorted(m for m in sys.modules if 'dask' in m)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
