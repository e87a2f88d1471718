"""The mean estimators on Dask inputs: the same statistics chunk by chunk, the same release."""

import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy import stats

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import skhybrid._group_estimates as group_estimates  # noqa: E402
from skhybrid import (  # noqa: E402
    ADPMEstimator,
    HybridMeanEstimator,
    MixedMeanEstimator,
    PDPSampleEstimator,
)
from skhybrid.audit import audit_samples  # noqa: E402
from skhybrid.exceptions import EmptyGroupWarning, PrivacyLeakWarning  # noqa: E402
from skhybrid.mechanisms import LocalLaplaceRandomizer  # noqa: E402

N_USERS = 2_000_000
CHUNK = 250_000
BOUNDS = (0.0, 10.0)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None
    )
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


@pytest.fixture(scope="module")
def population():
    """Two million users, 10% tcm; lm rows are reports their devices privatized."""
    rng = np.random.default_rng(0)
    raw = rng.gamma(2.0, 1.5, size=(N_USERS, 1))
    is_tcm = rng.random(N_USERS) < 0.1
    epsilon = np.where(is_tcm, 1.0, 2.0)
    reports = LocalLaplaceRandomizer(bounds=BOUNDS).privatize(
        np.clip(raw, *BOUNDS), epsilon=epsilon, random_state=1
    )
    X = np.where(is_tcm[:, np.newaxis], raw, reports)
    return X, np.where(is_tcm, "tcm", "lm"), epsilon


def _dask(X, trust, epsilon):
    return (
        da.from_array(X, chunks=(CHUNK, 1)),
        da.from_array(trust, chunks=CHUNK),
        da.from_array(epsilon, chunks=CHUNK),
    )


ESTIMATORS = {
    **{
        f"hybrid-{strategy}": HybridMeanEstimator(strategy, bounds=BOUNDS, local_reports=True)
        for strategy in ["kvh", "pwh", "naive", "tcm_only", "full_lm", "lm_only"]
    },
    "adpm": ADPMEstimator(bounds=BOUNDS, local_reports=True),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_dask_fit_equals_in_memory_fit_when_lm_rows_are_reports(client, population, name):
    X, trust, epsilon = population
    estimator = ESTIMATORS[name]
    in_memory = estimator.set_params(random_state=7).fit(X, trust_group=trust, epsilon=epsilon)
    expected = in_memory.mean_.copy()
    X_dask, trust_dask, epsilon_dask = _dask(X, trust, epsilon)
    on_dask = estimator.set_params(random_state=7).fit(
        X_dask, trust_group=trust_dask, epsilon=epsilon_dask
    )
    if name == "hybrid-full_lm":
        # full_lm privatizes the tcm users' values too: local noise, drawn per chunk.
        assert on_dask.mean_[0] != expected[0]
        return
    # Only the curator's noise is drawn, from the same generator: the same release up
    # to the summation order of the chunks.
    np.testing.assert_allclose(on_dask.mean_, expected, rtol=1e-12)
    np.testing.assert_allclose(on_dask.expected_mse_, in_memory.expected_mse_, rtol=1e-12)


def test_mixed_mean_on_dask_equals_in_memory_with_public_users(client):
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, size=(300_000, 2))
    epsilon = rng.choice([0.5, 1.0, np.inf], size=300_000, p=[0.5, 0.4, 0.1])
    estimator = MixedMeanEstimator(bounds=(0, 1), random_state=3)
    expected = estimator.fit(X, epsilon=epsilon).mean_.copy()
    sizes = estimator.group_sizes_.copy()
    estimator.fit(da.from_array(X, chunks=(70_000, 2)), epsilon=da.from_array(epsilon, chunks=70_000))
    np.testing.assert_allclose(estimator.mean_, expected, rtol=1e-12)
    np.testing.assert_array_equal(estimator.group_sizes_, sizes)


def test_adpm_on_dask_keeps_the_in_memory_level_weights_and_no_per_user_array(client):
    rng = np.random.default_rng(4)
    X = rng.uniform(0, 1, size=(50_000, 1))
    epsilon = rng.choice([0.1, 0.5, 4.0, np.inf], size=50_000)
    trust = np.where(rng.random(50_000) < 0.2, "lm", "tcm")
    # At the worst-case variance: the weights follow the levels alone (the private
    # variance reads lm reports drawn per chunk).
    estimator = ADPMEstimator(bounds=(0, 1), variance=None, random_state=0)
    estimator.fit(X, trust_group=trust, epsilon=epsilon)
    expected = {name: getattr(estimator, name).copy()
                for name in ("level_epsilons_", "level_local_", "level_weights_")}
    estimator.fit(da.from_array(X, chunks=(9_000, 1)), trust_group=trust, epsilon=epsilon)
    assert not hasattr(estimator, "weights_")
    for name, value in expected.items():
        np.testing.assert_allclose(getattr(estimator, name), value, rtol=1e-12)
    assert estimator.level_weights_ @ estimator.level_sizes_ == pytest.approx(1.0)


def test_adpm_private_variance_on_dask_adds_the_levels_square_sums_exactly(client):
    rng = np.random.default_rng(5)
    X = rng.beta(2, 5, size=(30_000, 1))
    epsilon = rng.choice([0.5, 2.0, np.inf], size=30_000)
    estimator = ADPMEstimator(bounds=(0, 1), random_state=0)
    expected = estimator.fit(X, epsilon=epsilon)
    variance, mean = expected.variance_.copy(), expected.mean_.copy()
    estimator.fit(da.from_array(X, chunks=(7_000, 1)), epsilon=da.from_array(epsilon, chunks=7_000))
    # tcm users only: exact fixed-point sums, the same noise from the same generator.
    np.testing.assert_array_equal(estimator.variance_, variance)
    np.testing.assert_array_equal(estimator.mean_, mean)


def test_pdp_on_dask_keeps_the_in_memory_level_probabilities_and_no_per_user_array(client):
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, size=(20_000, 1))
    epsilon = rng.choice([0.1, 0.5, 4.0, np.inf], size=20_000)
    estimator = PDPSampleEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=epsilon)
    levels = estimator.level_epsilons_.copy()
    probability = estimator.level_sampling_probability_.copy()
    np.testing.assert_array_equal(
        estimator.sampling_probability_,
        probability[np.searchsorted(levels, epsilon)],
    )
    estimator.fit(da.from_array(X, chunks=(6_000, 1)), epsilon=da.from_array(epsilon, 6_000))
    assert not hasattr(estimator, "sampling_probability_")
    np.testing.assert_array_equal(estimator.level_epsilons_, levels)
    np.testing.assert_allclose(estimator.level_sampling_probability_, probability, rtol=1e-12)


def _two_sample_check(in_memory, on_dask):
    """Same distribution: means within 4 standard errors and a KS test that does not reject."""
    in_memory, on_dask = np.asarray(in_memory), np.asarray(on_dask)
    standard_error = np.sqrt(in_memory.var(ddof=1) / in_memory.size + on_dask.var(ddof=1) / on_dask.size)
    assert abs(in_memory.mean() - on_dask.mean()) < 4 * standard_error
    assert stats.ks_2samp(in_memory, on_dask).pvalue > 1e-3
    # Not a degenerate comparison: both spread alike (the interdecile range, robust to the
    # heavy tails of Laplace noise; the interquartile range of a release whose weight is
    # itself random, as with a private variance, varies too much over 300 draws).
    spread = [np.subtract(*np.percentile(values, [90, 10])) for values in (on_dask, in_memory)]
    assert 0.75 < spread[0] / spread[1] < 1.33


@pytest.mark.slow
@pytest.mark.parametrize(
    "estimator, metadata",
    [
        (HybridMeanEstimator("kvh", bounds=(0, 1)), "trust"),
        (HybridMeanEstimator("full_lm", bounds=(0, 1)), "trust"),
        (ADPMEstimator(bounds=(0, 1)), "both"),
        (PDPSampleEstimator(threshold="max", bounds=(0, 1)), "epsilon"),
    ],
    ids=["hybrid-kvh", "hybrid-full_lm", "adpm", "pdp-sample"],
)
def test_dask_fit_has_the_in_memory_distribution_when_local_noise_is_simulated(estimator, metadata):
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, size=(4_000, 1))
    trust = np.where(rng.random(4_000) < 0.2, "tcm", "lm")
    epsilon = np.where(rng.random(4_000) < 0.5, 0.5, 2.0)
    fit_params = {
        "trust": {"trust_group": trust},
        "both": {"trust_group": trust, "epsilon": epsilon},
        "epsilon": {"epsilon": epsilon},
    }[metadata]
    X_dask = da.from_array(X, chunks=(700, 1))
    in_memory, on_dask = [], []
    with dask.config.set(scheduler="synchronous"):
        for seed in range(300):
            in_memory.append(estimator.set_params(random_state=seed).fit(X, **fit_params).mean_[0])
            on_dask.append(
                estimator.set_params(random_state=10_000 + seed).fit(X_dask, **fit_params).mean_[0]
            )
    _two_sample_check(in_memory, on_dask)


def test_dask_dataframe_input_with_the_metadata_as_columns(client):
    rng = np.random.default_rng(6)
    frame = pd.DataFrame({
        "salary": rng.uniform(0, 1, 100_000),
        "trust": np.where(rng.random(100_000) < 0.3, "tcm", "lm"),
    })
    ddf = dd.from_pandas(frame, npartitions=4)
    estimator = HybridMeanEstimator(bounds=(0, 1), local_reports=True, random_state=1)
    estimator.fit(ddf[["salary"]], trust_group=ddf["trust"])
    expected = HybridMeanEstimator(bounds=(0, 1), local_reports=True, random_state=1).fit(
        frame[["salary"]], trust_group=frame["trust"]
    )
    np.testing.assert_allclose(estimator.mean_, expected.mean_, rtol=1e-12)
    assert list(estimator.feature_names_in_) == ["salary"]
    assert estimator.n_tcm_ == expected.n_tcm_


def test_numpy_metadata_with_dask_X_and_bounds_from_the_data_warn(client):
    rng = np.random.default_rng(7)
    X = rng.normal(5, 2, size=(60_000, 2))
    trust = np.where(rng.random(60_000) < 0.5, "tcm", "lm")
    # The worst-case variance (variance=None), so that the weights are public.
    in_memory = HybridMeanEstimator("pwh", variance=None, random_state=2)
    on_dask = HybridMeanEstimator("pwh", variance=None, random_state=2)
    with pytest.warns(PrivacyLeakWarning):
        in_memory.fit(X, trust_group=trust)
    with pytest.warns(PrivacyLeakWarning):
        on_dask.fit(da.from_array(X, chunks=(25_000, 1)), trust_group=trust)
    # The bounds (the global minimum and maximum over the chunks) set the worst-case
    # variance, hence the weights and expected errors: equal to the in-memory fit's.
    np.testing.assert_allclose(on_dask.expected_mse_, in_memory.expected_mse_, rtol=1e-12)
    np.testing.assert_allclose(on_dask.weight_, in_memory.weight_, rtol=1e-12)
    # Local noise is simulated per chunk, so the estimate only agrees in distribution.
    tolerance = 5 * np.sqrt(2 * in_memory.expected_mse_)
    assert np.all(np.abs(on_dask.mean_ - in_memory.mean_) < tolerance)


def test_bounds_from_dask_chunks_are_the_global_minimum_and_maximum():
    rng = np.random.default_rng(8)
    X = rng.normal(0, 3, size=(20_000, 2))
    in_memory = MixedMeanEstimator(random_state=0)
    on_dask = MixedMeanEstimator(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        in_memory.fit(X)
        on_dask.fit(da.from_array(X, chunks=(3_000, 2)))
    np.testing.assert_allclose(on_dask.mean_, in_memory.mean_, rtol=1e-12)
    np.testing.assert_allclose(on_dask.expected_mse_, in_memory.expected_mse_, rtol=1e-12)


def test_metadata_of_another_length_raises():
    X = da.zeros((1_000, 1), chunks=(300, 1))
    with pytest.raises(ValueError, match="one entry per sample: expected 1000, got 999"):
        HybridMeanEstimator(bounds=(0, 1)).fit(X, trust_group=np.array(["tcm"] * 999))


def test_a_bad_trust_group_in_a_later_chunk_names_its_global_index():
    trust = np.array(["tcm"] * 1_000, dtype=object)
    trust[731] = "maybe"
    X = da.zeros((1_000, 1), chunks=(300, 1))
    with pytest.raises(ValueError, match="'maybe' at index 731"):
        HybridMeanEstimator(bounds=(0, 1)).fit(X, trust_group=da.from_array(trust, chunks=300))


def test_a_bad_trust_group_in_a_later_dataframe_partition_names_its_global_index():
    # DataFrame partitions are read once (no counting pass): the index is still global.
    frame = pd.DataFrame({"value": np.zeros(1_000), "trust": ["tcm"] * 1_000})
    frame.loc[731, "trust"] = "maybe"
    ddf = dd.from_pandas(frame, npartitions=4)
    with pytest.raises(ValueError, match="'maybe' at index 731"):
        HybridMeanEstimator(bounds=(0, 1)).fit(ddf[["value"]], trust_group=ddf["trust"])


def test_dataframe_partitions_are_read_once(monkeypatch):
    import skhybrid.utils._dask as dask_utils

    frame = pd.DataFrame({"value": np.linspace(0, 1, 1_000), "trust": ["tcm", "lm"] * 500})
    ddf = dd.from_pandas(frame, npartitions=4)
    calls = []
    original = dask_utils._row_lengths
    monkeypatch.setattr(dask_utils, "_row_lengths", lambda X: calls.append(X) or original(X))
    HybridMeanEstimator(bounds=(0, 1), local_reports=True, random_state=0).fit(
        ddf[["value"]], trust_group=ddf["trust"])
    assert calls == []


def test_metadata_columns_of_the_features_frame_are_selected_with_them(monkeypatch):
    """Metadata that are columns of X's own frame are read in one selection with the
    features (no assign): the same releases as metadata from another, aligned frame
    (which is assigned), also when a metadata column is a feature too."""
    import skhybrid.utils._dask as dask_utils

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"value": rng.uniform(0, 1, 3_000), "other": rng.uniform(0, 1, 3_000),
                          "tcm": rng.random(3_000) < 0.3,
                          "epsilon": rng.choice([0.5, 2.0], 3_000)})
    ddf = dd.from_pandas(frame, npartitions=3)
    # Another frame with the same metadata columns and partitions (an equal frame would
    # be the same Dask expression).
    copy = dd.from_pandas(frame.assign(unused=0), npartitions=3)
    selections = []
    original = dask_utils._columns_of_one_frame
    monkeypatch.setattr(dask_utils, "_columns_of_one_frame",
                        lambda X, series: selections.append(original(X, series)[1])
                        or original(X, series))
    for features, estimator in ((["value"], HybridMeanEstimator(bounds=(0, 1),
                                                                 local_reports=True)),
                                (["value", "other"], ADPMEstimator(bounds=(0, 1))),
                                (["value", "epsilon"], ADPMEstimator(bounds=(0, 3)))):
        fits = []
        for metadata in (ddf, copy):
            kwargs = {"trust_group": metadata["tcm"]}
            if isinstance(estimator, ADPMEstimator):
                kwargs = {"epsilon": metadata["epsilon"]}
            fits.append(estimator.set_params(random_state=7).fit(ddf[features], **kwargs))
        np.testing.assert_array_equal(fits[0].mean_, fits[1].mean_)
    # The same frame's columns were selected together; the other frame's were not.
    assert selections == [{"trust_group": "tcm"}, None, {"epsilon": "epsilon"}, None,
                          {"epsilon": "epsilon"}, None]


def test_a_non_finite_value_in_a_chunk_raises():
    X = np.zeros((1_000, 1))
    X[555] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ADPMEstimator(bounds=(0, 1)).fit(da.from_array(X, chunks=(300, 1)))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_value_in_a_chunk_raises_where_the_statistics_test_it(bad):
    """HybridMeanEstimator leaves a float64 chunk's finiteness to its statistics' pass
    (no pass of its own per chunk): a NaN or an infinity in any chunk, in an lm row that a
    tcm_only fit never sums, still raises check_array's error, for an array's chunks and
    a DataFrame's partitions."""
    from sklearn.utils import check_array

    X = np.random.default_rng(0).uniform(0, 1, (1_000, 1))
    is_tcm = np.arange(1_000) % 2 == 0
    X[555] = bad  # an lm row of the second chunk
    with pytest.raises(ValueError) as expected:
        check_array(X[300:600], dtype=np.float64)
    frame = dd.from_pandas(pd.DataFrame({"value": X[:, 0], "tcm": is_tcm}), npartitions=3)
    inputs = [(da.from_array(X, chunks=(300, 1)), da.from_array(is_tcm, chunks=300)),
              (frame[["value"]], frame["tcm"])]
    for strategy in ("tcm_only", "kvh"):
        for data, trust in inputs:
            with pytest.raises(ValueError) as raised:
                HybridMeanEstimator(strategy, bounds=(0, 1)).fit(data, trust_group=trust)
            assert str(raised.value) == str(expected.value)


@pytest.mark.parametrize("chunk", [
    pd.DataFrame({"a": [0.5, 1.5], "b": [2.0, -1.0]}),  # float64 frame: the fast path
    np.array([[0.5, 2.0], [1.5, -1.0]]),  # float64 array: the fast path
    pd.DataFrame({"a": [1, 2], "b": [3.0, 4.0]}),  # an int column: check_array converts
    pd.DataFrame({"a": np.array([0.5, 1.5], dtype=np.float32)}),  # float32: check_array
])
def test_a_chunk_is_validated_as_check_array_does(chunk):
    from sklearn.utils import check_array

    from skhybrid.mean._statistics import _chunk_array

    array, unchecked = _chunk_array(chunk)
    np.testing.assert_array_equal(array, check_array(chunk, dtype=np.float64))
    assert not unchecked
    for bad in [np.nan, np.inf, 1e308]:  # two of 1e308: finite, but their sum overflows
        broken = chunk.copy()
        if isinstance(broken, pd.DataFrame):
            broken.iloc[:, -1] = bad  # a float column
        else:
            broken[:, 0] = bad
        try:
            expected = check_array(broken, dtype=np.float64)
        except ValueError as error:
            with pytest.raises(ValueError, match=re.escape(str(error))):
                _chunk_array(broken)
        else:
            array, unchecked = _chunk_array(broken)
            np.testing.assert_array_equal(array, expected)
            assert not unchecked
        # Deferred: a float64 chunk is returned untested (the caller's pass tests it),
        # anything else is validated as before.
        fast = isinstance(broken, np.ndarray) or all(broken.dtypes == np.float64)
        if fast:
            array, unchecked = _chunk_array(broken, defer_finite=True)
            assert unchecked
            np.testing.assert_array_equal(array, np.asarray(broken, dtype=np.float64))
    empty = chunk.iloc[:0] if isinstance(chunk, pd.DataFrame) else chunk[:0]
    with pytest.raises(ValueError, match="0 sample"):
        _chunk_array(empty)


def test_epsilon_differing_between_chunks_of_a_group_raises():
    X = da.zeros((1_000, 1), chunks=(500, 1))
    epsilon = np.repeat([1.0, 2.0], 500)
    # Without trust_group every user is tcm (and the fit says so).
    with pytest.warns(EmptyGroupWarning, match="without trust_group"), pytest.raises(
            ValueError, match="one epsilon per trust group"):
        HybridMeanEstimator(bounds=(0, 1)).fit(X, epsilon=da.from_array(epsilon, chunks=500))


def test_an_lm_user_in_a_curator_estimator_names_its_global_index():
    trust = np.array(["tcm"] * 1_000)
    trust[640] = "lm"
    X = da.zeros((1_000, 1), chunks=(300, 1))
    for estimator in [MixedMeanEstimator(bounds=(0, 1)), PDPSampleEstimator(bounds=(0, 1))]:
        with pytest.raises(ValueError, match="'lm' user at index 640"):
            estimator.fit(X, trust_group=trust)


def test_importing_skhybrid_does_not_import_dask():
    code = "import sys, skhybrid; assert 'dask' not in sys.modules, 'dask imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- privacy audit of the Dask path ------------------------------------------------------

N_FITS = 5_000
EPSILON = 1.0


def _dask_releases(estimator, X, trust, seeds):
    X_dask = da.from_array(X, chunks=(7, 1))  # three chunks
    releases = np.empty(seeds.size)
    with dask.config.set(scheduler="synchronous"):
        for i, seed in enumerate(seeds):
            estimator.set_params(random_state=int(seed))
            releases[i] = estimator.fit(X_dask, trust_group=trust).mean_[0]
    return releases


def _audit_dask(estimator, seed):
    """Ten tcm and ten lm users; the neighbour replaces the first tcm user's value by 1e6."""
    X = np.linspace(0.0, 1.0, 20).reshape(-1, 1)
    trust = np.array(["tcm"] * 10 + ["lm"] * 10)
    X_prime = X.copy()
    X_prime[0, 0] = 1e6  # far outside the bounds: clipping must protect it
    seeds = np.random.default_rng(seed).integers(0, 2**32, size=(2, N_FITS))
    return audit_samples(
        _dask_releases(estimator, X, trust, seeds[0]),
        _dask_releases(estimator, X_prime, trust, seeds[1]),
        EPSILON, 0.0, n_bins=10,
    )


@pytest.mark.slow
def test_the_dask_path_passes_the_privacy_audit():
    estimator = HybridMeanEstimator("tcm_only", epsilon=EPSILON, bounds=(0.0, 1.0))
    result = _audit_dask(estimator, seed=31)
    assert result.passed, str(result)


@pytest.mark.slow
def test_the_dask_audit_fails_when_the_central_noise_is_too_small(monkeypatch):
    original = group_estimates.central_mechanism

    def weak(mechanism, *, epsilon, delta, ranges, group_size):
        return original(mechanism, epsilon=epsilon, delta=delta, ranges=ranges / 1.4,
                        group_size=group_size)

    monkeypatch.setattr(group_estimates, "central_mechanism", weak)
    estimator = HybridMeanEstimator("tcm_only", epsilon=EPSILON, bounds=(0.0, 1.0))
    result = _audit_dask(estimator, seed=32)
    assert not result.passed, str(result)
