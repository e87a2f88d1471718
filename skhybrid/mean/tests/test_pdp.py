"""PDPSampleEstimator: the Sample mechanism's definition, its privacy, edge cases, scikit-learn."""

import pickle

import numpy as np
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import Pipeline

import skhybrid._group_estimates as group_estimates
import skhybrid.mean._pdp as pdp_module
from skhybrid.audit import audit_mechanism, estimator_release
from skhybrid.exceptions import PrivacyLeakWarning
from skhybrid.mean._pdp import PDPSampleEstimator

# Ferrando et al. Figure 1: group sizes [n, 100, 500, 1000, 5000, 10000] and epsilons.
FIGURE_1_EPSILON = np.array([10.0, 0.05, 0.1, 0.01, 0.25, 0.15])
from skhybrid.utils._sums import FIXED_POINT_BITS

#: Values are added on a fixed-point grid: each is represented to within half a step.
FIXED_POINT_RESOLUTION = 1.0 / 2 ** (FIXED_POINT_BITS + 1)


def _two_levels(n=2000, seed=0, n_features=1, low=0.5, high=2.0):
    """Uniform data on [0, 1]; the first half of the users at epsilon ``low``, the rest ``high``."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, n_features))
    epsilon = np.repeat([low, high], [n // 2, n - n // 2])
    return X, epsilon


# -- the Sample mechanism's definition --------------------------------------------------------


def test_keep_probability_is_jorgensens_min_of_1_and_the_expm1_ratio():
    rng = np.random.default_rng(1)
    epsilon = rng.uniform(0.05, 3.0, size=300)
    X = rng.uniform(size=(300, 1))
    est = PDPSampleEstimator(threshold=1.3, bounds=(0, 1), variance=None,
                             random_state=0).fit(X, epsilon=epsilon)
    definition = np.minimum(1.0, (np.exp(epsilon) - 1) / (np.exp(1.3) - 1))
    np.testing.assert_allclose(est.sampling_probability_, definition, rtol=1e-12)
    assert est.threshold_ == 1.3


@pytest.mark.parametrize("name, expected", [("min", 0.01), ("mean", 1.76), ("max", 10.0)])
def test_named_thresholds_are_figure_1s_minimum_average_and_maximum(name, expected):
    # Figure 1's caption: t_min = 0.01, t_average = 1.76, t_max = 10.0 (the unweighted
    # mean of the six groups' epsilons).
    sizes = [100, 100, 500, 1000, 5000, 10000]
    epsilon = np.repeat(FIGURE_1_EPSILON, sizes)
    X = np.zeros((epsilon.size, 1))
    est = PDPSampleEstimator(threshold=name, bounds=(-15, 15), variance=None, random_state=0)
    est.fit(X, epsilon=epsilon)
    assert est.threshold_ == pytest.approx(expected, rel=1e-12)


def test_optimal_threshold_has_the_smallest_expected_error():
    sizes = [1000, 100, 500, 1000, 5000, 10000]
    epsilon = np.repeat(FIGURE_1_EPSILON, sizes)
    X = np.zeros((epsilon.size, 1))
    kwargs = {"bounds": (-15, 15), "variance": 25.0, "random_state": 0}
    best = PDPSampleEstimator(threshold="optimal", **kwargs).fit(X, epsilon=epsilon)
    others = ["min", "mean", "max", *np.geomspace(0.005, 20.0, 60)]
    for threshold in others:
        other = PDPSampleEstimator(threshold=threshold, **kwargs).fit(X, epsilon=epsilon)
        assert best.expected_mse_[0] <= other.expected_mse_[0] * (1 + 1e-9), threshold


def test_users_at_or_above_the_threshold_and_public_users_are_always_kept():
    X, _ = _two_levels(n=8)
    epsilon = np.array([0.2, 0.5, 0.9, 1.0, 1.5, 3.0, np.inf, np.inf])
    est = PDPSampleEstimator(threshold=1.0, bounds=(0, 1), variance=None,
                             random_state=0).fit(X, epsilon=epsilon)
    assert np.all(est.sampling_probability_[3:] == 1.0)
    assert np.all((0 < est.sampling_probability_[:3]) & (est.sampling_probability_[:3] < 1))


def test_max_threshold_with_public_users_releases_the_public_mean_without_noise():
    # Chaudhuri and Courtade's SM: t = max = inf keeps the public users only.
    X, _ = _two_levels(n=300)
    epsilon = np.where(np.arange(300) < 200, 0.5, np.inf)
    est = PDPSampleEstimator(threshold="max", bounds=(0, 1), random_state=0)
    est = est.fit(X, epsilon=epsilon)
    assert est.threshold_ == np.inf
    np.testing.assert_array_equal(est.sampling_probability_, epsilon == np.inf)
    assert est.mean_[0] == pytest.approx(X[200:].mean(), abs=FIXED_POINT_RESOLUTION)
    X_other = X.copy()
    X_other[:200] = 1.0  # the private users' values play no part
    other = PDPSampleEstimator(threshold="max", bounds=(0, 1), random_state=0)
    other = other.fit(X_other, epsilon=epsilon)
    assert other.mean_[0] == est.mean_[0]


def test_n_sampled_is_the_public_expected_kept_count_not_the_realised_one():
    X, epsilon = _two_levels(n=400)
    fits = [
        PDPSampleEstimator(threshold="max", bounds=(0, 1), variance=None,
                           random_state=seed).fit(X, epsilon=epsilon)
        for seed in range(3)
    ]
    expected = 200 * (np.exp(0.5) - 1) / (np.exp(2.0) - 1) + 200
    for est in fits:
        assert est.n_sampled_ == pytest.approx(expected, rel=1e-12)
        assert est.n_sampled_ == pytest.approx(est.sampling_probability_.sum(), rel=1e-12)
    assert len({est.mean_[0] for est in fits}) == 3  # the coins and noise did change


def test_noise_scale_is_calibrated_to_the_expected_kept_count():
    # Every value at the centre of the bounds: the kept sum is 0 whatever the coins, so
    # mean_ - centre is the noise alone, Laplace of scale range / (t * n_sampled_).
    n_fits = 2000
    X = np.full((40, 1), 0.5)
    epsilon = np.repeat([0.3, 1.0], 20)
    est = PDPSampleEstimator(bounds=(0, 1))
    noise = np.array([
        est.set_params(random_state=seed).fit(X, epsilon=epsilon).mean_[0] - 0.5
        for seed in range(n_fits)
    ])
    scale = 1.0 / (1.0 * est.n_sampled_)
    squared = noise**2
    standard_error = squared.std(ddof=1) / np.sqrt(n_fits)
    assert abs(squared.mean() - 2 * scale**2) < 4 * standard_error


def test_everyone_kept_gives_the_laplace_mean_of_all_users():
    X, epsilon = _two_levels(n=1000)
    est = PDPSampleEstimator(threshold="min", bounds=(0, 1), random_state=0).fit(X, epsilon=epsilon)
    assert np.all(est.sampling_probability_ == 1.0) and est.n_sampled_ == 1000
    # Only Laplace noise of scale 1 / (1000 * 0.5) remains: far below 0.05.
    assert abs(est.mean_[0] - X.mean()) < 0.05


def _monte_carlo_errors(est, epsilon, draw, n_trials, seed):
    """Squared errors of mean_ against the empirical mean, fresh data and noise each trial."""
    rng = np.random.default_rng(seed)
    errors = np.empty(n_trials)
    for trial in range(n_trials):
        X = draw(rng)
        est.set_params(random_state=int(rng.integers(2**31))).fit(X, epsilon=epsilon)
        errors[trial] = (est.mean_[0] - X.mean()) ** 2
    return errors, errors.std(ddof=1) / np.sqrt(n_trials)


@pytest.mark.slow
@pytest.mark.parametrize("threshold", ["max", 0.4])
def test_expected_mse_matches_monte_carlo_for_data_centred_in_the_bounds(threshold):
    # Uniform data on [0, 1] has its mean at the centre: the formula without the count
    # term is then exact, and expected_mse_ (the count term at the largest offset the
    # variance allows) an upper bound. Both thresholds subsample: "max" = 2 the users at
    # 0.2 and 0.6, t = 0.4 those at 0.2.
    from skhybrid.theory import mse_about_empirical_mean, sample_mechanism_mse

    epsilon = np.repeat([0.2, 0.6, 2.0], [60, 60, 80])
    est = PDPSampleEstimator(threshold=threshold, bounds=(0, 1), variance=1 / 12)
    errors, standard_error = _monte_carlo_errors(
        est, epsilon, lambda rng: rng.uniform(size=(200, 1)), n_trials=3000, seed=11
    )
    centred = mse_about_empirical_mean(
        sample_mechanism_mse(epsilon, est.threshold_, data_range=1.0, variance=1 / 12),
        n_samples=200, variance=1 / 12)
    assert abs(errors.mean() - centred) < 4 * standard_error
    assert errors.mean() < est.expected_mse_[0]


@pytest.mark.slow
def test_off_centre_data_add_the_count_term_and_stay_below_expected_mse():
    # Beta(2, 5) has mean 2/7, off the centre 1/2 of [0, 1]: the estimate then also
    # varies with the number of kept users, by (mu - c)^2 sum p(1 - p) / D^2, which
    # expected_mse_ bounds at the largest |mu - c| the variance allows.
    from skhybrid.theory import mse_about_empirical_mean, sample_mechanism_mse

    epsilon = np.repeat([0.2, 2.0], [150, 50])
    mean, variance = 2 / 7, 10 / 392
    est = PDPSampleEstimator(bounds=(0, 1), variance=variance)
    errors, standard_error = _monte_carlo_errors(
        est, epsilon, lambda rng: rng.beta(2.0, 5.0, size=(200, 1)), n_trials=3000, seed=12
    )
    exact = mse_about_empirical_mean(
        sample_mechanism_mse(epsilon, est.threshold_, data_range=1.0, variance=variance,
                             mean_offset=0.5 - mean), n_samples=200, variance=variance)
    assert abs(errors.mean() - exact) < 4 * standard_error
    assert errors.mean() < est.expected_mse_[0]
    # At a bound the figure is exact: the count term is most of the error here.
    at_bound = mse_about_empirical_mean(
        sample_mechanism_mse(epsilon, est.threshold_, data_range=1.0, variance=variance,
                             mean_offset=np.sqrt(0.25 - variance)), n_samples=200,
        variance=variance)
    assert est.expected_mse_[0] == pytest.approx(at_bound, rel=1e-12)
    worst = clone(est).set_params(variance=None).fit(np.zeros((200, 1)), epsilon=epsilon)
    assert errors.mean() < worst.expected_mse_[0]


# -- variance="private" ------------------------------------------------------------------


def _salary_like(n=20_000, seed=3):
    """Data near the lower bound (as salaries are) and three privacy levels."""
    rng = np.random.default_rng(seed)
    X = rng.beta(1.5, 20.0, size=(n, 1))
    epsilon = np.random.default_rng(seed + 100).choice([0.1, 1.0, 5.0], p=[0.7, 0.25, 0.05],
                                                       size=n)
    return X, epsilon


def test_private_variance_chooses_the_threshold_at_the_estimate_with_the_rest_of_epsilon():
    from skhybrid.mean._hybrid import PRIVATE_VARIANCE_SHARE

    X, epsilon = _salary_like()
    est = PDPSampleEstimator(threshold="optimal", variance="private", bounds=(0, 1),
                             random_state=0).fit(X, epsilon=epsilon)
    assert 0.0 < est.variance_[0] < 0.025  # a noisy estimate, far below the worst case
    known = PDPSampleEstimator(threshold="optimal", variance=est.variance_, bounds=(0, 1),
                               random_state=0).fit(X, epsilon=epsilon * (1 - PRIVATE_VARIANCE_SHARE))
    assert est.threshold_ == known.threshold_
    np.testing.assert_allclose(est.expected_mse_, known.expected_mse_, rtol=1e-12)
    np.testing.assert_array_equal(est.level_epsilons_, [0.1, 1.0, 5.0])


@pytest.mark.parametrize("threshold", ["optimal", "max", "min", 0.5])
def test_private_variance_charges_the_share_plus_the_rest_capped_at_the_largest_threshold(
        threshold):
    from skhybrid.accounting import PrivacyLedger
    from skhybrid.mean._hybrid import PRIVATE_VARIANCE_SHARE as share

    X, epsilon = _salary_like(n=5_000)
    ids = np.arange(5_000)
    ledger = PrivacyLedger(default_budget=10.0)
    est = PDPSampleEstimator(threshold=threshold, variance="private", bounds=(0, 1),
                             ledger=ledger, random_state=0).fit(X, epsilon=epsilon, user_id=ids)
    bound = est.threshold_
    if threshold == "optimal":
        # The threshold at variance 0 bounds every threshold the release can choose.
        bound = PDPSampleEstimator(threshold="optimal", variance=0.0, bounds=(0, 1)).fit(
            X, epsilon=epsilon * (1 - share)).threshold_
        assert est.threshold_ <= bound
        assert bound < 5.0  # users at 5 pay less than their level
    expected = np.where((1 - share) * epsilon <= bound, epsilon, share * epsilon + bound)
    np.testing.assert_allclose(ledger.spent(ids), expected, rtol=1e-12)
    assert np.all(ledger.spent(ids) <= epsilon * (1 + 1e-12))


def test_private_variance_charges_one_level_for_everyone_with_the_epsilon_parameter():
    from skhybrid.accounting import PrivacyLedger

    X, _ = _salary_like(n=1_000)
    ids = np.arange(1_000)
    ledger = PrivacyLedger(default_budget=10.0)
    PDPSampleEstimator(threshold="optimal", epsilon=2.0, bounds=(0, 1), ledger=ledger,
                       random_state=0).fit(X, user_id=ids)
    np.testing.assert_array_equal(ledger.spent(ids), np.full(1_000, 2.0))


def test_private_optimal_threshold_is_capped_at_the_planned_bound(monkeypatch):
    # Whatever the released variance, the threshold never exceeds what was charged.
    X, epsilon = _salary_like(n=5_000)
    monkeypatch.setattr(pdp_module, "_private_variance_of_levels",
                        lambda statistics, lower, upper, rng: np.zeros(1))
    est = PDPSampleEstimator(threshold="optimal", variance="private", bounds=(0, 1),
                             random_state=0).fit(X, epsilon=epsilon)
    bound = PDPSampleEstimator(threshold="optimal", variance=0.0, bounds=(0, 1)).fit(
        X, epsilon=epsilon * 0.95).threshold_
    assert est.threshold_ == bound


def test_the_threshold_at_variance_0_is_the_largest_optimal_threshold():
    # The planned bound (Notes): t_opt does not grow with the variance.
    X, epsilon = _salary_like(n=5_000)
    thresholds = [PDPSampleEstimator(threshold="optimal", variance=v, bounds=(0, 1)).fit(
        X, epsilon=epsilon).threshold_ for v in (0.0, 1e-4, 1e-3, 0.01, 0.05, 0.25)]
    assert thresholds == sorted(thresholds, reverse=True)


def test_private_variance_with_dask_matches_numpy():
    da = pytest.importorskip("dask.array")
    X, epsilon = _salary_like(n=4_000)
    whole = PDPSampleEstimator(threshold="optimal", variance="private", bounds=(0, 1),
                               random_state=0).fit(X, epsilon=epsilon)
    lazy = PDPSampleEstimator(threshold="optimal", variance="private", bounds=(0, 1),
                              random_state=0).fit(da.from_array(X, chunks=1_000),
                                                  epsilon=da.from_array(epsilon, chunks=1_000))
    # The same moments' release (exact sums, the same generator): the same threshold.
    np.testing.assert_array_equal(lazy.variance_, whole.variance_)
    assert lazy.threshold_ == whole.threshold_
    assert abs(lazy.mean_[0] - X.mean()) < 0.02


def test_private_variance_search_ranks_the_thresholds_for_one_fit():
    from skhybrid.accounting import PrivacyLedger
    from skhybrid.model_selection import PrivateGridSearchCV, search_cost

    X, epsilon = _salary_like(n=20_000)
    ids = np.arange(20_000)
    ledger = PrivacyLedger(default_budget=10.0)
    search = PrivateGridSearchCV(
        PDPSampleEstimator(variance="private", bounds=(0, 1), ledger=ledger),
        {"threshold": ["min", "mean", "max", "optimal"]})
    cost = search_cost(search, X, epsilon=epsilon, user_id=ids)
    assert cost.route == "private_variance"
    search.fit(X, epsilon=epsilon, user_id=ids)
    assert search.selection_ == "expected_mse"
    spent = ledger.spent(ids)
    assert np.all(spent <= cost * (1 + 1e-12)) and np.all(spent <= 1.1 * epsilon)
    # Data near a bound: subsampling is expensive, keeping everyone is best.
    assert search.best_params_["threshold"] in ("min", "optimal")


def test_several_features_split_the_budget_evenly():
    X, _ = _two_levels(n=500, n_features=3)
    est = PDPSampleEstimator(epsilon=0.5, bounds=(0.0, [1.0, 2.0, 1.0]), variance=0.05)
    est.fit(X)
    # One privacy level: everyone is kept, and coordinate j gets Laplace noise of scale
    # 3 range_j / (500 * 0.5) (a third of the budget each); the sampling terms cancel
    # against the data mean.
    assert est.mean_.shape == est.expected_mse_.shape == (3,)
    np.testing.assert_allclose(est.expected_mse_,
                               2 * (3.0 * np.array([1.0, 2.0, 1.0]) / (500 * 0.5)) ** 2,
                               rtol=1e-12)


# -- privacy ----------------------------------------------------------------------------------

N_FITS = 5_000
N_BINS = 10


def _audit(index, epsilon_audited, seed):
    """Ten users at epsilon 0.25 (kept with probability 0.165 at t = max = 1) and ten at 1.

    The neighbour replaces user ``index``'s value 0 by 1e6, clipped to the upper bound.
    """
    X = np.linspace(0.0, 1.0, 20).reshape(-1, 1)
    X[index, 0] = 0.0
    X_prime = X.copy()
    X_prime[index, 0] = 1e6
    epsilon = np.repeat([0.25, 1.0], 10)
    estimator = PDPSampleEstimator(bounds=(0.0, 1.0))
    return audit_mechanism(
        estimator_release(estimator, X, epsilon=epsilon),
        estimator_release(estimator, X_prime, epsilon=epsilon),
        epsilon_audited, n_samples=N_FITS, n_bins=N_BINS, random_state=seed,
    )


@pytest.mark.slow
def test_subsampled_user_is_protected_at_their_own_epsilon():
    result = _audit(index=0, epsilon_audited=0.25, seed=31)
    assert result.passed, str(result)


@pytest.mark.slow
def test_user_at_the_threshold_is_protected_at_their_own_epsilon():
    result = _audit(index=10, epsilon_audited=1.0, seed=32)
    assert result.passed, str(result)


@pytest.mark.slow
def test_audit_fails_when_the_noise_is_divided_by_1_4(monkeypatch):
    original = group_estimates.central_mechanism

    def weak(mechanism, *, epsilon, delta, ranges, group_size):
        return original(mechanism, epsilon=epsilon, delta=delta, ranges=ranges / 1.4,
                        group_size=group_size)

    monkeypatch.setattr(group_estimates, "central_mechanism", weak)
    result = _audit(index=10, epsilon_audited=1.0, seed=33)
    assert not result.passed, str(result)


@pytest.mark.slow
def test_audit_fails_when_the_subsampled_user_is_always_kept(monkeypatch):
    # Without the sampling the epsilon = 0.25 user gets only the threshold's t = 1.
    monkeypatch.setattr(
        pdp_module, "sample_mechanism_probabilities",
        lambda epsilon, threshold: np.ones(np.shape(epsilon)),
    )
    result = _audit(index=0, epsilon_audited=0.25, seed=34)
    assert not result.passed, str(result)


def _audit_private(seed, attribute):
    """``variance="private"`` and ``threshold="optimal"`` (the threshold depends on the
    released variance). ``mean_``: :func:`_audit`'s users, the subsampled user at 0.25
    moving from the midpoint to 1e6. ``variance_``: as ADPM's audit, 1,000 users at 1
    and 2 (fewer would clip the noisy moments' difference to the bounds and hide a
    leak), the one at the midpoint moving to 1e6, audited at their epsilon 1."""
    if attribute == "mean_":
        X, index, epsilon = np.linspace(0.0, 1.0, 20), 0, np.repeat([0.25, 1.0], 10)
    else:
        X, index, epsilon = np.linspace(0.0, 1.0, 1000), 250, np.repeat([1.0, 2.0], 500)
    X = X.reshape(-1, 1)
    X[index, 0] = 0.5
    X_prime = X.copy()
    X_prime[index, 0] = 1e6
    estimator = PDPSampleEstimator(threshold="optimal", variance="private", bounds=(0.0, 1.0))
    return audit_mechanism(
        estimator_release(estimator, X, attribute=attribute, epsilon=epsilon),
        estimator_release(estimator, X_prime, attribute=attribute, epsilon=epsilon),
        float(epsilon[index]), n_samples=N_FITS, n_bins=N_BINS, random_state=seed,
    )


@pytest.mark.slow
@pytest.mark.parametrize("attribute", ["variance_", "mean_"])
def test_private_variance_and_the_mean_at_it_pass_the_audit(attribute):
    result = _audit_private(seed=35, attribute=attribute)
    assert result.passed, str(result)


# -- edge cases -------------------------------------------------------------------------------


def test_one_user_is_supported():
    est = PDPSampleEstimator(bounds=(0, 1), random_state=0).fit([[0.3]])
    assert est.mean_.shape == (1,) and np.isfinite(est.mean_[0])
    # The Sample mechanism at the rest of the level (variance="private"): t = 0.95.
    assert est.n_sampled_ == 1.0 and est.threshold_ == pytest.approx(0.95, rel=1e-12)


@pytest.mark.parametrize("threshold", ["min", "mean", "max", "optimal"])
def test_all_public_users_give_the_exact_clipped_mean(threshold):
    X, _ = _two_levels(n=50)
    X[0, 0] = 5.0  # clipped to 1
    est = PDPSampleEstimator(threshold=threshold, epsilon=np.inf, bounds=(0, 1), random_state=0)
    est.fit(X)
    assert est.threshold_ == np.inf
    assert est.mean_[0] == pytest.approx(np.clip(X, 0, 1).mean(), abs=FIXED_POINT_RESOLUTION)
    assert est.expected_mse_[0] == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("threshold", ["min", "mean", "max", "optimal"])
def test_a_single_privacy_level_keeps_everyone_at_that_level(threshold):
    X, _ = _two_levels(n=200)
    est = PDPSampleEstimator(threshold=threshold, epsilon=0.7, bounds=(0, 1), variance=0.05)
    est.set_params(random_state=0).fit(X)
    assert est.threshold_ == pytest.approx(0.7, rel=1e-9)
    assert np.all(est.sampling_probability_ == 1.0)


@pytest.mark.parametrize("threshold", [0.0, -1.0, np.inf, np.nan, "median", None])
def test_bad_thresholds_raise(threshold):
    X, epsilon = _two_levels(n=20)
    with pytest.raises(ValueError, match="threshold"):
        PDPSampleEstimator(threshold=threshold, bounds=(0, 1)).fit(X, epsilon=epsilon)


def test_local_model_users_are_rejected_with_a_pointer_to_the_hybrid_estimators():
    X, epsilon = _two_levels(n=20)
    trust = ["tcm"] * 19 + ["lm"]
    with pytest.raises(ValueError, match="'lm' user at index 19.*HybridMeanEstimator.*ADPM"):
        PDPSampleEstimator(bounds=(0, 1)).fit(X, trust_group=trust, epsilon=epsilon)
    est = PDPSampleEstimator(bounds=(0, 1), random_state=0)
    est.fit(X, trust_group=["TCM"] * 20, epsilon=epsilon)  # tcm users are fine
    est.fit(X, trust_group=np.ones(20, dtype=bool), epsilon=epsilon)


def test_nan_in_X_and_bad_epsilon_raise_and_inputs_are_not_modified():
    X, epsilon = _two_levels(n=20)
    X[0, 0] = 7.0  # outside the bounds: clipped in a copy, never in X
    before = X.copy()
    PDPSampleEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=epsilon)
    np.testing.assert_array_equal(X, before)
    X[1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PDPSampleEstimator(bounds=(0, 1)).fit(X, epsilon=epsilon)
    epsilon[3] = 0.0
    with pytest.raises(ValueError, match="epsilon must be > 0.*index 3"):
        PDPSampleEstimator(bounds=(0, 1)).fit(before, epsilon=epsilon)


def test_missing_bounds_warn_about_the_privacy_leak():
    X, epsilon = _two_levels(n=20)
    with pytest.warns(PrivacyLeakWarning):
        PDPSampleEstimator(random_state=0).fit(X, epsilon=epsilon)


def test_default_randomness_differs_between_fits_and_seeds_reproduce():
    X, epsilon = _two_levels(n=100)
    unseeded = [
        PDPSampleEstimator(bounds=(0, 1)).fit(X, epsilon=epsilon).mean_[0] for _ in range(2)
    ]
    assert unseeded[0] != unseeded[1]
    seeded = [
        PDPSampleEstimator(bounds=(0, 1), random_state=3).fit(X, epsilon=epsilon).mean_[0]
        for _ in range(2)
    ]
    assert seeded[0] == seeded[1]


# -- scikit-learn integration -----------------------------------------------------------------


def test_pandas_input_records_feature_names_and_scores():
    pd = pytest.importorskip("pandas")
    X, epsilon = _two_levels(n=200, n_features=2)
    frame = pd.DataFrame(X, columns=["a", "b"])
    est = PDPSampleEstimator(bounds=(0, 1), random_state=0).fit(frame, epsilon=pd.Series(epsilon))
    assert est.feature_names_in_.tolist() == ["a", "b"]
    assert est.predict(frame).shape == (200, 2)
    assert est.score(frame) <= 0


def test_pipeline_routes_epsilon_by_step_name():
    X, epsilon = _two_levels(n=300)
    pipe = Pipeline([("mean", PDPSampleEstimator(bounds=(0, 1), random_state=0))])
    pipe.fit(X, mean__epsilon=epsilon)
    direct = PDPSampleEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=epsilon)
    np.testing.assert_array_equal(pipe[-1].mean_, direct.mean_)


@pytest.mark.parametrize("routing", [False, True])
def test_grid_search_over_threshold_with_metadata(routing):
    X, epsilon = _two_levels(n=3000)
    est = PDPSampleEstimator(bounds=(0, 1), variance=1 / 12, random_state=0)
    with config_context(enable_metadata_routing=routing):
        if routing:
            est = est.set_fit_request(epsilon=True, trust_group=True)
        search = GridSearchCV(est, {"threshold": ["min", "max", "optimal", 1.0]}, cv=KFold(3))
        search.fit(X, epsilon=epsilon, trust_group=["tcm"] * 3000)
        result = cross_validate(est, X, cv=KFold(2), params={"epsilon": epsilon})
    assert len(search.cv_results_["params"]) == 4
    assert np.all(result["test_score"] <= 0)


def test_clone_and_pickle_keep_parameters_and_fitted_state():
    X, epsilon = _two_levels(n=300)
    est = PDPSampleEstimator(threshold="optimal", bounds=(0, 1), random_state=0)
    est.fit(X, epsilon=epsilon)
    assert clone(est).get_params() == est.get_params()
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.mean_, est.mean_)
    np.testing.assert_array_equal(restored.sampling_probability_, est.sampling_probability_)
    np.testing.assert_array_equal(restored.predict(X[:5]), est.predict(X[:5]))
