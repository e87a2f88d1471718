"""partial_fit of the mean estimators: statistics accumulate, the noise waits for a read."""

import pickle
import threading
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone

from skhybrid import ADPMEstimator, HybridMeanEstimator, MixedMeanEstimator
from skhybrid.exceptions import PrivacyBudgetWarning, PrivacyLeakWarning
from skhybrid.mechanisms import LocalLaplaceRandomizer

BOUNDS = (0.0, 1.0)


def _population(n_users=30_000, seed=0):
    """Users in [0, 1], 20% tcm; lm rows are reports their devices privatized (epsilon 1)."""
    rng = np.random.default_rng(seed)
    raw = rng.beta(2.0, 5.0, size=(n_users, 1))
    is_tcm = rng.random(n_users) < 0.2
    reports = LocalLaplaceRandomizer(bounds=BOUNDS, epsilon=1.0).privatize(raw, random_state=seed)
    X = np.where(is_tcm[:, np.newaxis], raw, reports)
    return X, np.where(is_tcm, "tcm", "lm")


def _chunks(n_users, n_chunks=5):
    return np.array_split(np.arange(n_users), n_chunks)


STREAMING = {
    **{
        f"hybrid-{strategy}": HybridMeanEstimator(strategy, bounds=BOUNDS, local_reports=True)
        for strategy in ["kvh", "pwh", "naive", "tcm_only", "lm_only"]
    },
    "adpm": ADPMEstimator(bounds=BOUNDS, local_reports=True),
}


@pytest.mark.parametrize("name", list(STREAMING))
def test_partial_fit_over_chunks_equals_fit_on_the_concatenation(name):
    X, trust = _population()
    fitted = clone(STREAMING[name]).set_params(random_state=11).fit(X, trust_group=trust)
    streamed = clone(STREAMING[name]).set_params(random_state=11)
    for rows in _chunks(X.shape[0]):
        streamed.partial_fit(X[rows], trust_group=trust[rows])
    # lm rows are reports, so the only noise is the curator's, drawn once from the same
    # generator: the same release, up to the order of the additions.
    np.testing.assert_allclose(streamed.mean_, fitted.mean_, rtol=1e-12)
    np.testing.assert_allclose(streamed.expected_mse_, fitted.expected_mse_, rtol=1e-12)


def test_mixed_mean_partial_fit_equals_fit_with_levels_arriving_in_any_chunk():
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, size=(20_000, 2))
    epsilon = rng.choice([0.2, 1.0, np.inf], size=20_000)
    fitted = MixedMeanEstimator(bounds=BOUNDS, random_state=3).fit(X, epsilon=epsilon)
    streamed = MixedMeanEstimator(bounds=BOUNDS, random_state=3)
    order = np.argsort(epsilon, kind="stable")  # the first chunks see one level only
    for rows in np.array_split(order, 4):
        streamed.partial_fit(X[rows], epsilon=epsilon[rows])
    np.testing.assert_allclose(streamed.mean_, fitted.mean_, rtol=1e-12)
    np.testing.assert_array_equal(streamed.group_sizes_, fitted.group_sizes_)
    np.testing.assert_allclose(streamed.group_weights_, fitted.group_weights_, rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["kvh", "full_lm"])
def test_partial_fit_has_the_fit_distribution_when_local_noise_is_simulated(strategy):
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, size=(3_000, 1))
    trust = np.where(rng.random(3_000) < 0.2, "tcm", "lm")
    estimator = HybridMeanEstimator(strategy, bounds=BOUNDS)
    fitted, streamed = [], []
    for seed in range(400):
        fitted.append(clone(estimator).set_params(random_state=seed).fit(X, trust_group=trust).mean_[0])
        stream = clone(estimator).set_params(random_state=10_000 + seed)
        for rows in _chunks(3_000, 3):
            stream.partial_fit(X[rows], trust_group=trust[rows])
        streamed.append(stream.mean_[0])
    fitted, streamed = np.array(fitted), np.array(streamed)
    standard_error = np.sqrt((fitted.var(ddof=1) + streamed.var(ddof=1)) / fitted.size)
    assert abs(fitted.mean() - streamed.mean()) < 4 * standard_error
    assert stats.ks_2samp(fitted, streamed).pvalue > 1e-3
    assert 0.75 < stats.iqr(streamed) / stats.iqr(fitted) < 1.33


def test_reading_twice_without_new_data_returns_the_same_release_and_spends_nothing():
    X, trust = _population(5_000)
    estimator = HybridMeanEstimator(bounds=BOUNDS, local_reports=True)  # secure noise
    estimator.partial_fit(X, trust_group=trust)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyBudgetWarning)
        first = estimator.mean_.copy()
        second = estimator.mean_
        prediction = estimator.predict(X[:3])
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(prediction, np.repeat(first, 3))


def test_a_read_after_new_data_releases_again_and_warns_that_the_budget_is_spent_again():
    X, trust = _population(5_000)
    estimator = ADPMEstimator(bounds=BOUNDS, local_reports=True, random_state=0)
    estimator.partial_fit(X[:2_500], trust_group=trust[:2_500])
    first = estimator.mean_.copy()
    estimator.partial_fit(X[2_500:], trust_group=trust[2_500:])
    with pytest.warns(PrivacyBudgetWarning, match="release number 2"):
        second = estimator.mean_.copy()
    assert second[0] != first[0]
    assert estimator.level_sizes_.sum() == 5_000


def test_fitted_attributes_describe_the_latest_release():
    X, trust = _population(6_000)
    estimator = HybridMeanEstimator(bounds=BOUNDS, local_reports=True, random_state=0)
    estimator.partial_fit(X[:3_000], trust_group=trust[:3_000])
    estimator.mean_
    assert estimator.n_tcm_ + estimator.n_lm_ == 3_000
    estimator.partial_fit(X[3_000:], trust_group=trust[3_000:])
    with pytest.warns(PrivacyBudgetWarning):
        estimator.mean_
    assert estimator.n_tcm_ + estimator.n_lm_ == 6_000
    assert estimator.n_tcm_ == np.count_nonzero(trust == "tcm")


def test_partial_fit_after_fit_starts_a_new_stream_since_fit_keeps_no_statistics():
    X, trust = _population(4_000)
    estimator = HybridMeanEstimator(bounds=BOUNDS, local_reports=True, random_state=0)
    estimator.fit(X[:1_000], trust_group=trust[:1_000])
    estimator.partial_fit(X[1_000:], trust_group=trust[1_000:])
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyBudgetWarning)  # other users: no re-spend
        estimator.mean_
    assert estimator.n_tcm_ + estimator.n_lm_ == 3_000
    # A new fit starts over.
    estimator.fit(X[:1_000], trust_group=trust[:1_000])
    assert estimator.n_tcm_ + estimator.n_lm_ == 1_000


def test_partial_fit_with_another_number_of_features_raises():
    estimator = MixedMeanEstimator(bounds=BOUNDS)
    estimator.partial_fit(np.zeros((10, 2)))
    with pytest.raises(ValueError, match="features"):
        estimator.partial_fit(np.zeros((10, 3)))


def test_a_group_changing_its_epsilon_between_chunks_raises_before_any_release():
    estimator = HybridMeanEstimator(bounds=BOUNDS)
    trust_group = ["tcm"] * 5 + ["lm"] * 5
    estimator.partial_fit(np.zeros((10, 1)), trust_group=trust_group, epsilon=np.full(10, 1.0))
    with pytest.raises(ValueError, match="one epsilon per trust group"):
        estimator.partial_fit(np.zeros((10, 1)), trust_group=trust_group,
                              epsilon=np.full(10, 2.0))


def test_an_empty_group_is_an_error_when_the_estimate_is_read():
    estimator = HybridMeanEstimator("tcm_only", bounds=BOUNDS)
    estimator.partial_fit(np.zeros((10, 1)), trust_group=["lm"] * 10)
    with pytest.raises(ValueError, match="needs at least one tcm user"):
        estimator.mean_
    estimator.partial_fit(np.ones((5, 1)), trust_group=["tcm"] * 5)
    assert np.isfinite(estimator.mean_[0]) and estimator.n_tcm_ == 5  # now defined


def test_a_pickled_stream_keeps_its_statistics_and_releases_once():
    X, trust = _population(4_000)
    estimator = HybridMeanEstimator(bounds=BOUNDS, local_reports=True, random_state=5)
    estimator.partial_fit(X[:2_000], trust_group=trust[:2_000])
    with pytest.warns(PrivacyLeakWarning, match="discard_stream"):
        restored = pickle.loads(pickle.dumps(estimator))
    restored.partial_fit(X[2_000:], trust_group=trust[2_000:])
    fitted = HybridMeanEstimator(bounds=BOUNDS, local_reports=True, random_state=5).fit(
        X, trust_group=trust
    )
    np.testing.assert_allclose(restored.mean_, fitted.mean_, rtol=1e-12)
    assert "_stream" not in clone(restored).__dict__


def test_an_unfitted_estimator_has_no_mean():
    estimator = HybridMeanEstimator()
    assert not hasattr(estimator, "mean_")


@pytest.mark.parametrize("make", [
    lambda: HybridMeanEstimator(bounds=BOUNDS, local_reports=True),
    lambda: ADPMEstimator(bounds=BOUNDS, local_reports=True),
    lambda: MixedMeanEstimator(bounds=BOUNDS),
], ids=["hybrid", "adpm", "mixed"])
def test_threads_reading_a_pending_release_at_once_get_one_release(make):
    X, trust = _population(2_000)
    for _ in range(30):
        estimator = make()
        if isinstance(estimator, MixedMeanEstimator):
            estimator.partial_fit(X.clip(0, 1))
        else:
            estimator.partial_fit(X, trust_group=trust)
        barrier = threading.Barrier(8)
        seen = []

        def read():
            barrier.wait()
            seen.append(estimator.mean_.copy())

        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyBudgetWarning)
            threads = [threading.Thread(target=read) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        assert len(seen) == 8
        assert all(np.array_equal(value, seen[0]) for value in seen)
        assert estimator._stream.n_releases == 1


def test_discard_stream_keeps_the_release_and_drops_the_secret_state():
    X, trust = _population(2_000)
    estimator = HybridMeanEstimator(bounds=BOUNDS, local_reports=True)
    estimator.partial_fit(X, trust_group=trust)
    released = estimator.mean_.copy()
    estimator.discard_stream()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        restored = pickle.loads(pickle.dumps(estimator))
    np.testing.assert_array_equal(restored.mean_, released)
    assert "_stream" not in restored.__dict__
