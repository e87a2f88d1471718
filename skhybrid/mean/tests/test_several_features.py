"""Several features in one fit: each feature's noise in proportion to its own range.

The budget is split evenly across the features (feature_noise_weights): a feature of a
small range no longer gets the noise of the largest one. The privacy audit releases two
features of unequal ranges and checks the joint privacy loss, with a control that
forgets to split the budget.
"""

import warnings

import numpy as np
import pytest

import skhybrid._group_estimates as group_estimates
from skhybrid import (
    ADPMEstimator,
    HybridMeanEstimator,
    MixedMeanEstimator,
    PDPSampleEstimator,
)
from skhybrid.audit import audit_mechanism, estimator_release
from skhybrid.datasets import load_salaries

SALARY_AGE_BOUNDS = [(0, 200_000), (0, 120)]  # the list-of-pairs form people write


def _salary_and_age():
    """The bundled salaries (clipped at 200,000) with an age column, 5% tcm."""
    rng = np.random.default_rng(0)
    salary = np.minimum(load_salaries().data[:, 0], 200_000)
    age = np.clip(rng.normal(43.8, 12.0, salary.size), 18, 90)
    trust = np.where(rng.random(salary.size) < 0.05, "tcm", "lm")
    return np.column_stack([salary, age]), trust


def _age_rmse(make, X, trust, n_seeds=20, **fit_params):
    errors = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(n_seeds):
            fitted = make(seed).fit(X, trust_group=trust, **fit_params)
            errors.append(fitted.mean_[-1] - X[:, -1].mean())
    return float(np.sqrt(np.mean(np.square(errors))))


@pytest.mark.parametrize("make, fit_epsilon", [
    (lambda bounds, seed: HybridMeanEstimator(bounds=bounds, random_state=seed), False),
    (lambda bounds, seed: HybridMeanEstimator("pwh", bounds=bounds, variance=None,
                                              random_state=seed), False),
    (lambda bounds, seed: ADPMEstimator(bounds=bounds, random_state=seed), True),
    (lambda bounds, seed: PDPSampleEstimator(bounds=bounds, random_state=seed), True),
    (lambda bounds, seed: MixedMeanEstimator(bounds=bounds, random_state=seed), True),
], ids=["hybrid-default", "hybrid-pwh", "adpm", "pdp", "mixed"])
def test_age_next_to_salary_is_within_3x_of_age_alone(make, fit_epsilon):
    X, trust = _salary_and_age()
    if fit_epsilon:
        # The curator estimators take per-user levels; tcm users only for PDP and Mixed.
        keep = trust == "tcm"
        X, trust = X[keep], trust[keep]
        extra = {"epsilon": np.where(np.arange(X.shape[0]) % 2 == 0, 0.5, 2.0)}
    else:
        extra = {}
    together = _age_rmse(lambda seed: make(SALARY_AGE_BOUNDS, seed), X, trust, **extra)
    alone = _age_rmse(lambda seed: make((0, 120), seed), X[:, 1:], trust, **extra)
    # The even split costs age a factor 2 in noise scale; with the summed range it was
    # about 1,700 times its own noise (the RMSE 543 against 1.69).
    assert together < 3 * alone, (together, alone)


def test_kmeans_cluster_sums_get_noise_in_proportion_to_each_range():
    # Algorithm 1's tcm release of counts and centred sums, with the sums at the centre
    # of the box (centred sums 0): each cluster mean's error is then its sum's noise.
    from skhybrid.cluster._k_means_budget import central_iteration_mechanism
    from skhybrid.cluster._k_means_statistics import _CentralStatistics, _release_central

    lower, upper = np.zeros(2), np.array([200_000.0, 120.0])
    counts = np.array([10**8, 10**8])  # far above the counts' noise (scale ~200,000)
    # The code sums of values at the midpoint are 0 (codes centred on the grid's middle).
    statistics = _CentralStatistics(counts, np.zeros((2, 2), dtype=np.int64))
    mechanism = central_iteration_mechanism(upper - lower, 1, 1.0, 10**8)
    rng = np.random.default_rng(5)
    means = np.array([_release_central(statistics, lower, upper, mechanism, rng).means
                      for _ in range(4_000)])
    errors = means - (lower + upper) / 2
    # A third of the budget per feature and for the counts (central_sum_weights): the
    # sums' scales are 3 range_j, instead of Sum(ranges) + 2 for both.
    expected_sd = np.sqrt(2) * 3 * (upper - lower) / counts[0]
    np.testing.assert_allclose(errors.std(axis=0).mean(axis=0), expected_sd, rtol=0.1)


def test_a_list_of_pairs_is_one_pair_per_feature():
    X, trust = _salary_and_age()
    pairs = HybridMeanEstimator(bounds=SALARY_AGE_BOUNDS, random_state=0).fit(X, trust_group=trust)
    arrays = HybridMeanEstimator(bounds=([0, 0], [200_000, 120]), random_state=0).fit(
        X, trust_group=trust)
    np.testing.assert_array_equal(pairs.mean_, arrays.mean_)


def test_an_ambiguous_list_of_two_pairs_is_refused_with_the_accepted_forms():
    X = np.full((100, 2), 10.0)
    with pytest.raises(ValueError, match=r"ambiguous.*bounds=\(\[0\.0, 5\.0\], \[10\.0, 20\.0\]\)"):
        HybridMeanEstimator("tcm_only", bounds=[(0, 10), (5, 20)]).fit(X)


def test_an_invalid_list_of_pairs_shows_the_accepted_forms():
    X = np.full((100, 2), 10.0)
    with pytest.raises(ValueError, match=r"one \(lower, upper\) pair per feature"):
        HybridMeanEstimator("tcm_only", bounds=[(0, 0), (0, 120)]).fit(X)


# -- privacy: a two-feature release of unequal ranges ----------------------------------

N_FITS = 5_000
N_BINS = 10
EPSILON = 1.0
RANGES = np.array([1.0, 100.0])


def _two_feature_neighbours(group):
    """Ten tcm and ten lm users in [0, 1] x [0, 100]; the neighbour moves user 0 of
    ``group`` from the lower corner to far outside the upper one (clipped to it)."""
    X = np.column_stack([np.linspace(0, 1, 20), np.linspace(0, 100, 20)])
    trust = np.array(["tcm"] * 10 + ["lm"] * 10)
    index = 0 if group == "tcm" else 10
    X[index] = 0.0
    X_prime = X.copy()
    X_prime[index] = 1e6
    return X, X_prime, trust


def _privacy_loss_projection(centre_a, centre_b, scales):
    """The Laplace privacy loss of a release between the two pre-noise values: the scalar
    that carries all the difference between the two output distributions (the audit
    of a projection is valid for any projection, and this one is the most powerful)."""
    def project(released):
        released = np.ravel(released)
        return float(np.sum((np.abs(released - centre_a) - np.abs(released - centre_b)) / scales))
    return project


def _audit_two_features(strategy, group, seed):
    X, X_prime, trust = _two_feature_neighbours(group)
    rows = trust == group
    # The documented scales: epsilon / 2 per feature, range_j / n for the tcm mean, range_j
    # for one lm report (over 10 reports the mean's scale is range_j / 10 as well).
    scales = 2 * RANGES / (10 * EPSILON)
    centre_a, centre_b = X[rows].mean(axis=0), np.minimum(X_prime, [1, 100])[rows].mean(axis=0)
    project = _privacy_loss_projection(centre_a, centre_b, scales)
    estimator = HybridMeanEstimator(strategy, epsilon=EPSILON, bounds=[(0, 1), (0, 100)],
                                    variance=None)
    return audit_mechanism(
        estimator_release(estimator, X, project=project, trust_group=trust),
        estimator_release(estimator, X_prime, project=project, trust_group=trust),
        EPSILON, n_samples=N_FITS, n_bins=N_BINS, random_state=seed,
    )


@pytest.mark.slow
@pytest.mark.parametrize("strategy, group", [("tcm_only", "tcm"), ("lm_only", "lm")])
def test_two_features_of_unequal_ranges_pass_the_audit(strategy, group):
    result = _audit_two_features(strategy, group, seed=31)
    assert result.passed, str(result)


@pytest.mark.slow
def test_audit_fails_when_the_budget_is_not_split_across_features(monkeypatch):
    # Each feature's noise calibrated for its own range at the whole epsilon: twice the
    # privacy loss of the release.
    monkeypatch.setattr(group_estimates, "scaled_ranges",
                        lambda ranges, weights: ranges / weights / 2.0)
    result = _audit_two_features("tcm_only", "tcm", seed=32)
    assert not result.passed, str(result)
