"""HybridKMeans: Algorithm 1's budget, its mechanisms' privacy, the paper's Figure 6, sklearn."""

import pickle

import numpy as np
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

import skhybrid.cluster._k_means_budget as budget_module
import skhybrid.cluster._k_means_statistics as statistics_module
from skhybrid._group_estimates import (
    local_report_variance,
    privatize_locally,
    privatized_rows,
)
from skhybrid.audit import audit_mechanism, estimator_release
from skhybrid.cluster import HybridKMeans
from skhybrid.mechanisms._families import LAPLACE
from skhybrid.cluster._k_means_budget import (
    central_iteration_mechanism,
    central_iteration_sensitivity,
    local_release_epsilon,
)
from skhybrid.cluster._k_means_lloyd import (
    nearest_centre,
    within_cluster_sum_of_squares,
)
from skhybrid.cluster._k_means_statistics import (
    _CentralClustering,
    _ClusterMeans,
    _LocalClustering,
    _merge_cluster_means,
)
from skhybrid.exceptions import PrivacyLeakWarning
from skhybrid.mean import EmptyGroupWarning
from skhybrid.mechanisms import LaplaceMechanism
from skhybrid.theory._hybrid import pwh_weight
from skhybrid.utils._sums import centred_sums
from skhybrid.utils.tests.test_validation import _linux_cores

STRATEGIES = ["hybrid", "tcm_only", "full_lm"]
CORNERS = np.array([[0.25, 0.25], [0.25, 0.75], [0.75, 0.25], [0.75, 0.75]])
N_AUDIT = 200_000  # releases per side for the vectorised mechanism audits
WEAKER = 1.4  # the controls divide the noise scale by this


def _blobs(n=4000, tcm_fraction=0.25, seed=0, scale=0.03):
    """Four spherical clusters in the unit square; the first rows are tcm users."""
    rng = np.random.default_rng(seed)
    X = CORNERS[rng.integers(0, 4, n)] + rng.normal(0.0, scale, (n, 2))
    n_tcm = int(round(tcm_fraction * n))
    trust = np.array(["tcm"] * n_tcm + ["lm"] * (n - n_tcm))
    return X, trust


# -- the budget: every user spends exactly epsilon -----------------------------------------------


class _Ledger:
    """Records every release that touches users' data, to add up what each user spends."""

    def __init__(self, monkeypatch, is_tcm):
        self.is_tcm = is_tcm
        self.spent = np.zeros(is_tcm.shape[0])
        self.central_scales, self.report_scales = [], []
        ledger = self

        class RecordingLaplace(LaplaceMechanism):
            def randomise(self, value, *, random_state=None):
                # One iteration's counts and sums of all tcm users.
                ledger.spent[ledger.is_tcm] += self.epsilon
                ledger.central_scales.append(self.scale)
                return super().randomise(value, random_state=random_state)

        def recording_privatized_rows(values, rows, *, epsilon, lower, upper, **kwargs):
            ledger.spent[rows] += epsilon  # the reports of exactly these rows
            ledger.report_scales.append(np.sum(upper - lower) / epsilon)
            return privatized_rows(values, rows, epsilon=epsilon, lower=lower, upper=upper,
                                   **kwargs)

        original_statistics = _LocalClustering.statistics

        def recording_statistics(clustering, centres, rng, **kwargs):
            # One iteration's randomized responses: every local user at their level's
            # epsilon (the compiled pass draws one response per local user).
            n_local = clustering._reports.shape[0]
            level = np.zeros(n_local, int) if clustering._level is None else clustering._level
            for index, step in enumerate(clustering._release_epsilon):
                if np.any(level == index):
                    ledger._charge(int(np.count_nonzero(level == index)), step)
            return original_statistics(clustering, centres, rng, **kwargs)

        monkeypatch.setattr(budget_module, "LaplaceMechanism", RecordingLaplace)
        monkeypatch.setattr(statistics_module, "privatized_rows", recording_privatized_rows)
        monkeypatch.setattr(_LocalClustering, "statistics", recording_statistics)

    def _charge(self, n_rows, epsilon):
        # A local release covers the tcm users, the lm users or everyone, in row order.
        n_tcm = int(self.is_tcm.sum())
        rows = {n_tcm: self.is_tcm, self.is_tcm.size - n_tcm: ~self.is_tcm}.get(
            n_rows, np.ones_like(self.is_tcm)
        )
        assert rows.sum() == n_rows
        self.spent[rows] += epsilon


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_user_spends_exactly_their_epsilon_over_a_fit(monkeypatch, strategy):
    X, trust = _blobs(n=100, tcm_fraction=0.3)
    is_tcm = trust == "tcm"
    epsilon = np.where(is_tcm, 2.0, 0.5)
    ledger = _Ledger(monkeypatch, is_tcm)
    n_iter = 4
    HybridKMeans(4, n_iter=n_iter, strategy=strategy, bounds=(0, 1), random_state=0).fit(
        X, trust_group=trust, epsilon=epsilon
    )
    expected = epsilon.copy()
    if strategy == "tcm_only":
        expected[~is_tcm] = 0.0  # lm users' data are never touched
    np.testing.assert_allclose(ledger.spent, expected, rtol=1e-12)


def test_noise_scales_are_algorithm_1s_for_a_replaced_user(monkeypatch):
    X, trust = _blobs(n=100, tcm_fraction=0.3)
    ledger = _Ledger(monkeypatch, trust == "tcm")
    epsilon, n_iter, bounds = 3.0, 4, (0.0, [1.0, 2.0])
    km = HybridKMeans(4, epsilon=epsilon, n_iter=n_iter, bounds=bounds, random_state=0)
    km.fit(X, trust_group=trust)
    m_d = 1.0 + 2.0  # the L1 diameter of the box: m d for per-feature bounds
    # b_T = (m d + 1) tau / epsilon in the paper, for an added or removed user; a replaced
    # user moves one unit of count between two clusters, hence m d + 2.
    np.testing.assert_allclose(ledger.central_scales, [(m_d + 2) * n_iter / epsilon] * n_iter)
    np.testing.assert_allclose(ledger.report_scales, [m_d * (n_iter + 1) / epsilon])


def _central_statistic(X, centres, lower, upper):
    """One iteration's tcm statistic, computed by the estimator's own code: what the noise is added to."""
    central = _CentralClustering(np.clip(X, lower, upper), lower, upper, None)
    counts, sums = central.statistics(centres)
    centred = centred_sums(sums, lower, upper, n_users=int(counts.sum()))
    return np.concatenate([counts, centred.ravel()])


def test_central_sensitivity_bounds_every_replacement_and_is_attained():
    rng = np.random.default_rng(3)
    lower, upper = np.array([0.0, -1.0, 0.0]), np.array([1.0, 1.0, 0.5])
    X = rng.uniform(lower, upper, size=(50, 3))
    X[0] = lower  # a corner user...
    centres = rng.uniform(lower, upper, size=(4, 3))
    centres[:2] = [lower + 0.1, upper - 0.1]  # ...and the opposite corner in another cluster
    base = _central_statistic(X, centres, lower, upper)
    replacements = np.vstack([
        rng.uniform(lower, upper, size=(200, 3)),
        rng.choice([-1e6, 1e6], size=(200, 3)),  # far outside: clipped to the corners
    ])
    changes = []
    for user in range(5):
        for value in replacements:
            X_prime = X.copy()
            X_prime[user] = value
            changes.append(np.abs(_central_statistic(X_prime, centres, lower, upper) - base).sum())
    sensitivity = central_iteration_sensitivity(upper - lower)
    assert sensitivity == pytest.approx(np.sum(upper - lower) + 2)
    assert max(changes) <= sensitivity + 1e-12
    # A corner user moved to the opposite corner, into another cluster, attains it.
    assert max(changes) == pytest.approx(sensitivity)


# -- privacy audits of one iteration's mechanisms ------------------------------------------------


def _central_neighbours(replaced_by):
    """Ten 1-d tcm users, two clusters; user 0 (at 0, cluster 0) is replaced."""
    X = np.linspace(0.0, 1.0, 10).reshape(-1, 1)
    X_prime = X.copy()
    X_prime[0, 0] = replaced_by
    centres = np.array([[0.25], [0.75]])
    bounds = (np.zeros(1), np.ones(1))
    return _central_statistic(X, centres, *bounds), _central_statistic(X_prime, centres, *bounds)


def _audit_central_release(mechanism, a, b, epsilon, seed):
    """Audit the release by its Laplace log-likelihood ratio, the most powerful projection."""

    def release(statistic):
        def draw(n, rng):
            released = mechanism.randomise(np.tile(statistic, (n, 1)), random_state=rng)
            return (np.abs(released - b) - np.abs(released - a)).sum(axis=1) / mechanism.scale

        return draw

    return audit_mechanism(release(a), release(b), epsilon, n_samples=N_AUDIT, random_state=seed)


@pytest.mark.parametrize(
    "replaced_by",
    [1e6, -1e6, 0.3],  # to the other cluster (via clipping), far below (same cluster), inside
)
def test_one_iterations_counts_and_sums_pass_the_audit_at_epsilon_over_tau(replaced_by):
    a, b = _central_neighbours(replaced_by)
    epsilon, n_iter = 2.0, 2
    mechanism = central_iteration_mechanism(np.ones(1), n_iter, epsilon)
    result = _audit_central_release(mechanism, a, b, epsilon / n_iter, seed=41)
    assert result.passed, str(result)


def test_counts_and_sums_audit_fails_when_the_noise_scale_is_divided_by_1_4(monkeypatch):
    original = budget_module.central_iteration_sensitivity
    monkeypatch.setattr(
        budget_module, "central_iteration_sensitivity", lambda *args: original(*args) / WEAKER
    )
    a, b = _central_neighbours(1e6)
    mechanism = central_iteration_mechanism(np.ones(1), 2, 2.0)
    result = _audit_central_release(mechanism, a, b, 1.0, seed=42)
    assert not result.passed, str(result)


def test_algorithm_1s_add_or_remove_scale_fails_the_replace_one_audit():
    # b_T = (m d + 1) tau / epsilon with m = d = 1: two thirds of the scale a moved user needs.
    a, b = _central_neighbours(1e6)
    mechanism = LaplaceMechanism(epsilon=1.0, sensitivity=1.0 * 1 + 1)
    result = _audit_central_release(mechanism, a, b, 1.0, seed=43)
    assert not result.passed, str(result)


@pytest.mark.slow
@pytest.mark.parametrize("strategy, replaced", [("tcm_only", "tcm"), ("full_lm", "lm")])
def test_fitted_centres_pass_the_audit_for_a_user_replaced_far_outside(strategy, replaced):
    # End to end, one iteration: clipping must keep the far value from showing.
    X = np.linspace(0.0, 1.0, 12).reshape(-1, 1)
    trust = np.array(["tcm"] * 6 + ["lm"] * 6)
    X_prime = X.copy()
    X_prime[0 if replaced == "tcm" else 6, 0] = 1e6
    estimator = HybridKMeans(2, epsilon=1.0, n_iter=1, strategy=strategy, bounds=(0.0, 1.0),
                             init=[[0.25], [0.75]])
    release = {"attribute": "cluster_centers_", "project": lambda centres: centres[1, 0],
               "trust_group": trust}
    result = audit_mechanism(
        estimator_release(estimator, X, **release),
        estimator_release(estimator, X_prime, **release),
        1.0, n_samples=2_000, n_bins=10, random_state=44,
    )
    assert result.passed, str(result)


# -- the two groups' cluster means and their merging --------------------------------------------


def _clustered_values(seed, n=3000):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.2, 0.2], [0.8, 0.3], [0.5, 0.9]])
    values = np.clip(centres[rng.integers(0, 3, n)] + rng.normal(0, 0.05, (n, 2)), 0, 1)
    labels = nearest_centre(values, centres)
    truth = np.array([values[labels == k].mean(axis=0) for k in range(3)])
    return rng, values, centres, truth


def _relative_variance_error(draws):
    """Standard error of the sample variance over the variance: sqrt((kurtosis - 1) / R)."""
    centred = draws - draws.mean(axis=0)
    kurtosis = np.mean(centred**4, axis=0) / np.mean(centred**2, axis=0) ** 2
    return np.sqrt((kurtosis - 1) / draws.shape[0])


def test_demixed_lm_cluster_means_are_unbiased_with_the_stated_noise_variance():
    rng, values, centres, truth = _clustered_values(5)
    lower, upper = np.zeros(2), np.ones(2)
    step = local_release_epsilon(2.0, 3)
    noise = {"mechanism": LAPLACE, "delta": 0.0, "lower": lower, "upper": upper}
    report_variance = local_report_variance(epsilon=step, **noise)  # per feature
    n_trials = 1500
    means, stated = np.empty((n_trials, 3, 2)), np.empty((n_trials, 3, 2))
    for trial in range(n_trials):
        reports = privatize_locally(values, epsilon=step, rng=rng, **noise)
        local = _LocalClustering(values, reports - (lower + upper) / 2, (lower + upper) / 2,
                                 upper - lower,
                                 np.array([step]), np.array([report_variance]), None)
        estimate = local.estimate(centres, rng)
        means[trial], stated[trial] = estimate.means, estimate.noise_variance
    standard_error = means.std(axis=0) / np.sqrt(n_trials)
    assert np.all(np.abs(means.mean(axis=0) - truth) < 4 * standard_error)
    # The stated variance puts the data's part at its worst case, range^2 = 1 against the
    # report's noise variance: a relative slack of 1 / report_variance.
    ratio = means.var(axis=0) / stated.mean(axis=0)
    slack = 1.0 / report_variance
    assert np.all(np.abs(ratio - 1) < 4 * _relative_variance_error(means) + slack)


@pytest.mark.parametrize("epsilon", [1.0, 7.0])  # 16-bit draws, then 32 (response_bits)
def test_demixing_inverts_the_probabilities_the_responses_are_drawn_with(epsilon):
    """The curator de-mixes with the probabilities of the pass's own grid of draws: fed
    the expected reported counts and sums under them (1e9 users), it gives back the
    true sizes and means to float rounding; the other grid's are 2**-16 off, which is
    1e9 x 2**-16 users here."""
    from skhybrid.cluster._k_means_statistics import _demix_local, _LocalStatistics
    from skhybrid.mechanisms._randomized_response import (
        randomized_response_drawn_probabilities,
        response_bits,
    )

    levels, k = np.array([epsilon]), 3
    bits = response_bits(levels, k)
    assert bits == (16 if epsilon == 1.0 else 32)
    keep, other = randomized_response_drawn_probabilities(levels, k, bits)
    sizes = np.array([5e8, 3e8, 2e8])
    centred_means = np.array([[-0.3, 0.1], [0.2, 0.0], [0.4, -0.2]])
    sums = sizes[:, np.newaxis] * centred_means
    n, totals = sizes.sum(), sums.sum(axis=0)
    counts = other * n + (keep - other) * sizes
    reported = other[:, np.newaxis] * totals + (keep - other)[:, np.newaxis] * sums
    statistics = _LocalStatistics(counts[np.newaxis], reported[np.newaxis],
                                  np.array([n]), totals[np.newaxis])
    midpoint = np.array([0.5, 0.5])
    estimate = _demix_local(statistics, midpoint, np.ones(2), levels,
                            np.array([[1.0, 1.0]]))
    np.testing.assert_allclose(estimate.sizes, sizes, rtol=1e-12)
    np.testing.assert_allclose(estimate.means, midpoint + centred_means, rtol=1e-12,
                               atol=1e-12)


def test_tcm_cluster_means_are_unbiased_with_the_stated_noise_variance():
    rng, values, centres, truth = _clustered_values(7)
    lower, upper = np.zeros(2), np.ones(2)
    mechanism = central_iteration_mechanism(upper - lower, 3, 2.0)
    central = _CentralClustering(values, lower, upper, mechanism)
    n_trials = 4000
    draws = [central.estimate(centres, rng) for _ in range(n_trials)]
    means = np.array([draw.means for draw in draws])
    stated = np.array([draw.noise_variance for draw in draws]).mean(axis=0)
    standard_error = means.std(axis=0) / np.sqrt(n_trials)
    assert np.all(np.abs(means.mean(axis=0) - truth) < 4 * standard_error)
    # To first order the error is (Y_sum - (mean - 0.5) Y_count) / count; the stated
    # variance bounds |mean - 0.5| by half the range.
    sizes = np.bincount(nearest_centre(values, centres), minlength=3)[:, np.newaxis]
    first_order = mechanism.variance(9) * (1 + (truth - 0.5) ** 2) / sizes**2
    tolerance = 4 * _relative_variance_error(means)
    assert np.all(np.abs(means.var(axis=0) / first_order - 1) < tolerance)
    assert np.all(stated >= first_order * (1 - tolerance))


def _means(means, sizes, variance):
    sizes = np.asarray(sizes, dtype=float)
    return _ClusterMeans(np.asarray(means, dtype=float), sizes, sizes >= 1,
                         np.asarray(variance, dtype=float))


def test_merge_weights_each_cluster_and_feature_by_the_pwh_weight():
    tcm = _means([[0.2, 0.2], [0.6, 0.6]], [40, 10], [[1e-3, 4e-3], [2e-2, 2e-2]])
    lm = _means([[0.3, 0.3], [0.5, 0.5]], [900, 400], [[3e-3, 1e-3], [1e-4, 1e-4]])
    centres, weight = _merge_cluster_means(tcm, lm, np.zeros((2, 2)), np.zeros(2), np.ones(2))
    n = tcm.sizes[:, None] + lm.sizes[:, None]
    expected = pwh_weight(n=n, c=tcm.sizes[:, None] / n, s_T2=tcm.noise_variance,
                          s_L2=lm.sizes[:, None] * lm.noise_variance)
    np.testing.assert_allclose(weight, expected)
    # Def. 5.3 with each group's noise variance is inverse-variance weighting.
    np.testing.assert_allclose(weight, lm.noise_variance / (lm.noise_variance + tcm.noise_variance))
    np.testing.assert_allclose(centres, weight * tcm.means + (1 - weight) * lm.means)


def test_merge_of_empty_clusters_uses_the_group_present_or_keeps_the_centre():
    nan = np.nan
    # Cluster 0: only tcm; 1: only lm (tcm noisy count 0.4 < 1); 2: neither (tcm count -3).
    tcm = _means([[0.1, 0.1], [nan, nan], [nan, nan]], [5, 0.4, -3], np.full((3, 2), 1e-3))
    lm = _means([[nan, nan], [0.7, 1.8], [nan, nan]], [0, 50, 0.2], np.full((3, 2), 1e-3))
    previous = np.array([[0.0, 0.0], [0.5, 0.5], [0.9, 0.8]])
    centres, weight = _merge_cluster_means(tcm, lm, previous, np.zeros(2), np.ones(2))
    # 1.8 is clipped to the upper bound.
    np.testing.assert_array_equal(centres, [[0.1, 0.1], [0.7, 1.0], [0.9, 0.8]])
    np.testing.assert_array_equal(weight[:2], [[1.0, 1.0], [0.0, 0.0]])
    assert np.all(np.isnan(weight[2]))


@pytest.mark.parametrize("group", ["tcm", "lm"])
def test_merge_of_one_group_takes_its_clipped_means(group):
    """One group alone (tcm_only, full_lm): its means, clipped to the bounds, weight 1 for
    tcm and 0 for lm; a cluster without its mean keeps the previous centre."""
    nan = np.nan
    means = _means([[0.2, 1.4], [-0.3, 0.6]], [40, 10], np.full((2, 2), 1e-3))
    previous = np.array([[0.5, 0.5], [0.4, 0.3]])
    pair = (means, None) if group == "tcm" else (None, means)
    centres, weight = _merge_cluster_means(*pair, previous, np.zeros(2), np.ones(2))
    np.testing.assert_array_equal(centres, [[0.2, 1.0], [0.0, 0.6]])
    np.testing.assert_array_equal(weight, np.full((2, 2), 1.0 if group == "tcm" else 0.0))
    partial = _means([[0.2, 1.4], [nan, nan]], [40, 0.5], np.full((2, 2), 1e-3))
    pair = (partial, None) if group == "tcm" else (None, partial)
    centres, weight = _merge_cluster_means(*pair, previous, np.zeros(2), np.ones(2))
    np.testing.assert_array_equal(centres, [[0.2, 1.0], [0.4, 0.3]])
    assert np.all(np.isnan(weight[1]))


@pytest.mark.parametrize("groups", ["both", "tcm", "lm"])
@pytest.mark.parametrize("n_features", [1, 3])
@pytest.mark.parametrize("n_levels", [1, 2])
def test_an_iterations_compiled_centres_are_its_release_demixing_and_merge(
        groups, n_features, n_levels):
    """_next_centres (one compiled call per iteration) gives, bit for bit, the centres
    and weights of _release_central, _demix_local and _merge_cluster_means called in
    turn, absent clusters included (a tcm cluster of one user, lm counts that de-mix
    below 1), over bounds of other widths per feature and several privacy levels."""
    from skhybrid.cluster._k_means_statistics import (
        _CentralStatistics,
        _demix_local,
        _FitPlan,
        _LocalStatistics,
        _next_centres,
        _release_central,
    )

    k, rng = 4, np.random.default_rng(n_features * 10 + n_levels)
    lower = np.linspace(-1.0, 0.3, n_features)
    upper = lower + np.linspace(0.7, 3.0, n_features)
    mechanism = central_iteration_mechanism(upper - lower, 3, 2.0)
    levels = np.array([0.4, 1.3][:n_levels])
    plan = _FitPlan(lower, upper, central=mechanism, local_groups=(False, True),
                    release_epsilon=levels, report_variance=rng.uniform(0.5, 2.0,
                                                                        (n_levels, n_features)))
    counts = np.array([900, 1, 400, 700])
    central = _CentralStatistics(counts, rng.integers(-2**40, 2**40, (k, n_features)))
    n_users = np.full(n_levels, 5000.0)
    reported = rng.uniform(2000, 2500, (n_levels, k))
    reported[:, 2] = 0.0  # de-mixes to a negative size: absent
    local = _LocalStatistics(reported, rng.normal(0, 50, (n_levels, k, n_features)), n_users,
                             rng.normal(0, 100, (n_levels, n_features)))
    central = central if groups != "lm" else None
    local = local if groups != "tcm" else None
    previous = rng.uniform(0, 1, (k, n_features))
    for seed in range(100):  # a release whose cluster of one user is absent (size < 1)
        tcm = (_release_central(central, lower, upper, mechanism, np.random.default_rng(seed))
               if central is not None else None)
        if tcm is None or not tcm.present[1]:
            break
    lm = (_demix_local(local, plan.midpoint, plan.ranges, levels, plan.report_variance)
          if local is not None else None)
    expected = _merge_cluster_means(tcm, lm, previous, lower, upper)
    centres, weight = _next_centres(plan, central, local, previous, np.random.default_rng(seed))
    np.testing.assert_array_equal(centres, expected[0])
    np.testing.assert_array_equal(weight, expected[1])
    assert tcm is None or tcm.present.tolist() == [True, False, True, True]
    assert lm is None or lm.present.tolist() == [True, True, False, True]


@pytest.mark.parametrize("sizes", [[40.0, 10.0, 3.0], [40.0, 0.5, -2.0]])
def test_cluster_means_divide_by_the_private_sizes_of_at_least_one(sizes):
    """A cluster of private size at least 1: the midpoint plus its centred sum over its
    size, with the sum's noise variance over the size squared; below 1, NaN."""
    from skhybrid.cluster._k_means_statistics import _cluster_means

    sizes = np.array(sizes)
    centred = np.array([[4.0, -2.0], [1.0, 0.5], [3.0, 3.0]])
    variance = np.array([[2.0, 1.0], [0.5, 0.5], [1.0, 1.0]])
    means = _cluster_means(np.array([0.5, 1.5]), centred, sizes, variance)
    present = sizes >= 1
    np.testing.assert_array_equal(means.present, present)
    np.testing.assert_allclose(means.means[present],
                               [0.5, 1.5] + centred[present] / sizes[present, None], rtol=1e-15)
    np.testing.assert_allclose(means.noise_variance[present],
                               variance[present] / sizes[present, None] ** 2, rtol=1e-15)
    assert np.all(np.isnan(means.means[~present])) and np.all(np.isnan(means.noise_variance[~present]))


# -- the algorithm ------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["tcm_only", "full_lm"])
def test_without_noise_each_strategy_runs_lloyds_iterations(strategy):
    X, _ = _blobs(n=3000, scale=0.08)
    init = np.array([[0.1, 0.1], [0.2, 0.9], [0.9, 0.3], [0.5, 0.5]])
    private = HybridKMeans(4, epsilon=1e9, n_iter=3, strategy=strategy, bounds=(-1, 2), init=init,
                           random_state=0).fit(X)
    lloyd = KMeans(4, init=init, n_init=1, max_iter=3, tol=0, algorithm="lloyd").fit(X)
    np.testing.assert_allclose(private.cluster_centers_, lloyd.cluster_centers_, atol=1e-6)


def test_hybrid_with_every_user_tcm_is_tcm_only():
    X, _ = _blobs(n=500)
    with pytest.warns(EmptyGroupWarning, match="without trust_group"):
        hybrid = HybridKMeans(4, bounds=(0, 1), random_state=3).fit(X)
    tcm_only = HybridKMeans(4, strategy="tcm_only", bounds=(0, 1), random_state=3).fit(X)
    np.testing.assert_array_equal(hybrid.cluster_centers_, tcm_only.cluster_centers_)
    np.testing.assert_array_equal(hybrid.weight_, tcm_only.weight_)
    # All weight on the tcm means, except a cluster whose noisy count left it without
    # an estimate in the last iteration (kept centre, NaN by the docs).
    assert np.all((hybrid.weight_ == 1.0) | np.isnan(hybrid.weight_))
    assert np.any(hybrid.weight_ == 1.0)


def test_tcm_only_never_reads_lm_users_data():
    X, trust = _blobs(n=400)
    X_other = X.copy()
    X_other[trust == "lm"] = 0.0
    fits = [
        HybridKMeans(4, strategy="tcm_only", bounds=(0, 1), random_state=1).fit(
            data, trust_group=trust
        )
        for data in (X, X_other)
    ]
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)


def test_random_initial_centres_are_uniform_in_the_bounds_and_ignore_the_data(monkeypatch):
    searched = []
    original = statistics_module._ChunkClustering.statistics

    def recording(chunk, centres, rng, next_rng=None):
        searched.append(centres.copy())
        return original(chunk, centres, rng, next_rng)

    monkeypatch.setattr(statistics_module._ChunkClustering, "statistics", recording)
    initial = []
    for seed in (0, 1):
        X, _ = _blobs(n=200, seed=seed)
        searched.clear()
        HybridKMeans(8, strategy="full_lm", bounds=(-1.0, [2.0, 5.0]), random_state=7).fit(X)
        initial.append(searched[0])  # full_lm first searches the initial centres
    np.testing.assert_array_equal(initial[0], initial[1])
    expected = np.random.default_rng(7).uniform([-1.0, -1.0], [2.0, 5.0], size=(8, 2))
    np.testing.assert_array_equal(initial[0], expected)


def test_an_empty_cluster_keeps_its_initial_centre():
    X, _ = _blobs(n=2000)
    init = np.vstack([CORNERS, [[0.0, 1.0]]])  # nobody is nearest to the fifth centre
    km = HybridKMeans(5, epsilon=1e9, n_iter=3, strategy="tcm_only", bounds=(-1, 2), init=init,
                      random_state=0).fit(X)
    np.testing.assert_array_equal(km.cluster_centers_[4], [0.0, 1.0])
    assert np.all(np.isnan(km.weight_[4]))


def test_one_cluster_gives_the_mean():
    X, trust = _blobs(n=20_000)
    km = HybridKMeans(1, epsilon=50.0, n_iter=2, bounds=(0, 1), random_state=0)
    km.fit(X, trust_group=trust)
    np.testing.assert_allclose(km.cluster_centers_[0], X.mean(axis=0), atol=0.01)


# -- the paper's Figure 6 ------------------------------------------------------------------------


@pytest.mark.slow
def test_figure_6_hybrid_wcss_is_about_the_better_baselines():
    """Avent et al. 2020, Fig. 6: the hybrid matches the better of TCM-only and Full-LM.

    4 clusters of 2-d Gaussians (scale 0.028, 40,000 points each) in the unit square,
    epsilon = 7, tcm fractions 0.1% and 1%, tau in {2, 5, 10}; 30 trials each (the paper
    ran 364). The three strategies share each trial's seed, hence its random initial
    centres, so they are compared on paired differences. "About" means: the hybrid's mean
    WCSS is at most 10% above the better baseline's, plus 3 standard errors of the paired
    difference (most of the spread comes from the random initial centres).
    """
    rng = np.random.default_rng(2020)
    n = 160_000
    X = np.repeat(CORNERS, 40_000, axis=0) + rng.normal(0.0, 0.028, (n, 2))
    n_trials, wcss = 30, {}

    def mean_wcss(strategy, tau, trust=None):
        values = np.empty(n_trials)
        for trial in range(n_trials):
            km = HybridKMeans(4, epsilon=7.0, n_iter=tau, strategy=strategy, bounds=(0, 1),
                              random_state=trial).fit(X, trust_group=trust)
            values[trial] = within_cluster_sum_of_squares(X, km.cluster_centers_)
        return values

    for tau in (2, 5, 10):
        full_lm = mean_wcss("full_lm", tau)  # every user local: the tcm fraction is irrelevant
        for fraction in (0.001, 0.01):
            trust = np.where(rng.permutation(n) < fraction * n, "tcm", "lm")
            runs = {"hybrid": mean_wcss("hybrid", tau, trust), "full_lm": full_lm,
                    "tcm_only": mean_wcss("tcm_only", tau, trust)}
            wcss[fraction, tau] = runs
            best = min(("tcm_only", "full_lm"), key=lambda name: runs[name].mean())
            difference = runs["hybrid"] - runs[best]
            standard_error = difference.std(ddof=1) / np.sqrt(n_trials)
            assert runs["hybrid"].mean() <= 1.1 * runs[best].mean() + 3 * standard_error, (
                fraction, tau, {name: values.mean() for name, values in runs.items()}
            )
    # The paper's point: which baseline is better is not known in advance. At tau = 10,
    # Full-LM wins with 0.1% tcm users and TCM-only with 1%.
    for fraction, winner, loser in ((0.001, "full_lm", "tcm_only"), (0.01, "tcm_only", "full_lm")):
        difference = wcss[fraction, 10][loser] - wcss[fraction, 10][winner]
        assert difference.mean() > 3 * difference.std(ddof=1) / np.sqrt(n_trials)


# -- predictions, scores and what is exposed -----------------------------------------------------


def test_predict_transform_and_score_agree_with_the_centres():
    X, trust = _blobs(n=1000)
    km = HybridKMeans(4, epsilon=5.0, bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
    distances = np.linalg.norm(X[:, None, :] - km.cluster_centers_[None], axis=2)
    np.testing.assert_allclose(km.transform(X), distances, atol=1e-12)
    np.testing.assert_array_equal(km.predict(X), distances.argmin(axis=1))
    assert km.score(X) == pytest.approx(-np.mean(distances.min(axis=1) ** 2), rel=1e-12)


def test_predict_and_transform_far_from_zero_are_the_direct_distances():
    """Data near 1e6: ``||c||^2 - 2 x . c`` computed about zero loses about 1e-4 to
    rounding and mislabels the rows near a boundary (hundreds of 50,000 here), and
    ``transform``'s distances were off by up to 0.008; centred on the centres, the
    labels and distances are those of the direct differences."""
    rng = np.random.default_rng(5)
    X = rng.normal(0.5, 0.3, size=(50_000, 10)) + 1e6
    km = HybridKMeans(10, epsilon=5.0, n_iter=3, bounds=(1e6 - 0.5, 1e6 + 1.5),
                      random_state=3).fit(X)
    direct = ((X[:, None, :] - km.cluster_centers_[None]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(km.predict(X), direct.argmin(axis=1))
    np.testing.assert_allclose(km.transform(X), np.sqrt(direct), rtol=0, atol=1e-9)


def test_fit_predict_is_a_prediction_from_the_private_centres():
    X, trust = _blobs(n=1000)
    km = HybridKMeans(4, bounds=(0, 1), random_state=2)
    labels = km.fit_predict(X, trust_group=trust)
    refit = clone(km).fit(X, trust_group=trust)
    np.testing.assert_array_equal(labels, refit.predict(X))


def test_no_non_private_statistic_of_the_training_data_is_exposed():
    X, trust = _blobs(n=500)
    km = HybridKMeans(4, bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
    fitted = {name for name in vars(km) if name.endswith("_") and not name.startswith("_")}
    assert fitted == {"cluster_centers_", "n_iter_", "weight_", "n_tcm_", "n_lm_", "n_features_in_"}
    assert km.n_iter_ == 5 and (km.n_tcm_, km.n_lm_) == (125, 375)


def test_the_estimator_is_tagged_as_a_clusterer_without_labels():
    from sklearn.base import is_clusterer

    assert is_clusterer(HybridKMeans())


# -- metadata and edge cases ---------------------------------------------------------------------


def test_epsilon_equal_within_each_group_is_accepted_and_unequal_raises():
    X, trust = _blobs(n=200)
    per_group = np.where(trust == "tcm", 2.0, 0.5)
    HybridKMeans(4, bounds=(0, 1), random_state=0).fit(X, trust_group=trust, epsilon=per_group)
    varying = per_group.copy()
    varying[-1] = 0.7
    message = r"one epsilon per trust group.*lm group has 0.5 and 0.7 \(at index 199\)"
    with pytest.raises(ValueError, match=message):
        HybridKMeans(4, bounds=(0, 1)).fit(X, trust_group=trust, epsilon=varying)


def test_tcm_only_without_tcm_users_raises_and_hybrid_warns_about_a_missing_group():
    X, _ = _blobs(n=100)
    with pytest.raises(ValueError, match="at least one tcm user"):
        HybridKMeans(4, strategy="tcm_only", bounds=(0, 1)).fit(X, trust_group=["lm"] * 100)
    with pytest.warns(EmptyGroupWarning, match="every user is lm"):
        HybridKMeans(4, bounds=(0, 1), random_state=0).fit(X, trust_group=["lm"] * 100)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"init": np.zeros((3, 2))}, r"shape \(n_clusters, n_features\) = \(4, 2\)"),
        ({"init": [[np.nan, 0.0]] * 4}, "finite"),
        ({"bounds": (1.0, 0.0)}, "lower < upper"),
    ],
)
def test_bad_parameters_raise_clear_errors(params, message):
    X, trust = _blobs(n=50)
    with pytest.raises(ValueError, match=message):
        HybridKMeans(4, **{"bounds": (0, 1), **params}).fit(X, trust_group=trust)


def test_missing_bounds_warn_and_inputs_are_not_modified():
    X, trust = _blobs(n=100)
    X[0] = [7.0, -3.0]  # outside the bounds: clipped in a copy, never in X
    before, init = X.copy(), CORNERS.copy()
    HybridKMeans(4, bounds=(0, 1), init=init, random_state=0).fit(X, trust_group=trust)
    np.testing.assert_array_equal(X, before)
    np.testing.assert_array_equal(init, CORNERS)
    with pytest.warns(PrivacyLeakWarning):
        HybridKMeans(4, random_state=0).fit(X, trust_group=trust)


def test_default_randomness_differs_between_fits_and_seeds_reproduce():
    X, trust = _blobs(n=300)
    def centres(**params):
        return HybridKMeans(4, bounds=(0, 1), **params).fit(X, trust_group=trust).cluster_centers_

    unseeded = [centres() for _ in range(2)]
    assert not np.array_equal(*unseeded)
    seeded = [centres(random_state=5) for _ in range(2)]
    np.testing.assert_array_equal(*seeded)


# -- scikit-learn integration --------------------------------------------------------------------


def test_pipeline_routes_metadata_and_names_the_distance_features():
    pd = pytest.importorskip("pandas")
    X, trust = _blobs(n=500)
    frame = pd.DataFrame(X, columns=["a", "b"])
    pipe = Pipeline([
        ("scale", FunctionTransformer(lambda Z: Z * 1.0, feature_names_out="one-to-one")),
        ("km", HybridKMeans(4, bounds=(0, 1), random_state=0)),
    ])
    pipe.fit(frame, km__trust_group=trust)
    direct = HybridKMeans(4, bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
    np.testing.assert_array_equal(pipe[-1].cluster_centers_, direct.cluster_centers_)
    assert pipe[-1].feature_names_in_.tolist() == ["a", "b"]
    assert pipe.get_feature_names_out().tolist() == [f"hybridkmeans{k}" for k in range(4)]


def test_cross_validate_scores_held_out_wcss_with_routing_off():
    X, trust = _blobs(n=1200)
    cv = KFold(3, shuffle=True, random_state=0)
    result = cross_validate(HybridKMeans(4, bounds=(0, 1), random_state=0), X, cv=cv,
                            params={"trust_group": trust})
    assert np.all(result["test_score"] < 0)


@pytest.mark.parametrize("routing", [False, True])
def test_grid_search_over_strategy_with_metadata(routing):
    X, trust = _blobs(n=2000, tcm_fraction=0.3)
    epsilon = np.where(trust == "tcm", 4.0, 4.0)
    est = HybridKMeans(4, bounds=(0, 1), random_state=0)
    with config_context(enable_metadata_routing=routing):
        if routing:
            est = est.set_fit_request(trust_group=True, epsilon=True)
        cv = KFold(2, shuffle=True, random_state=0)
        grid = {"strategy": STRATEGIES, "n_iter": [2, 4]}
        search = GridSearchCV(est, grid, cv=cv, error_score="raise")
        search.fit(X, trust_group=trust, epsilon=epsilon)
    assert len(search.cv_results_["params"]) == 6


def test_clone_and_pickle_keep_parameters_and_fitted_state():
    X, trust = _blobs(n=300)
    km = HybridKMeans(4, epsilon=0.3, bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
    assert clone(km).get_params().keys() == km.get_params().keys()
    restored = pickle.loads(pickle.dumps(km))
    np.testing.assert_array_equal(restored.predict(X), km.predict(X))


@pytest.mark.parametrize("n_features", [2, 7, 30])
def test_fused_pass_gives_the_labels_and_the_exact_grouped_code_sums(n_features):
    """Large enough for the threaded path: the per-task counts and sums add up to the
    exact ones; rows are clipped to the bounds on the way, and shifted by an origin."""
    from skhybrid.cluster._k_means_lloyd import nearest_centre
    from skhybrid.utils._sums import fixed_point_sums

    rng = np.random.default_rng(12)
    X = rng.uniform(-0.5, 1.5, size=(400_000, n_features))  # some beyond the bounds
    centres = rng.uniform(0, 1, size=(5, n_features))
    lower, upper = np.zeros(n_features), np.ones(n_features)
    clipped = np.clip(X, lower, upper)
    labels, counts, sums = nearest_centre(X, centres, bounds=(lower, upper), code_sums=True)
    np.testing.assert_array_equal(labels, nearest_centre(clipped, centres))
    np.testing.assert_array_equal(counts, np.bincount(labels, minlength=5))
    np.testing.assert_array_equal(sums, fixed_point_sums(X, lower, upper, labels=labels,
                                                         n_groups=5))
    origin = np.full(n_features, 0.5)
    shifted, _, _ = nearest_centre(X, centres - origin, origin=origin, bounds=(lower, upper),
                                   code_sums=True)
    np.testing.assert_array_equal(shifted, nearest_centre(clipped - origin, centres - origin))
    with pytest.raises(ValueError, match="bounds"):
        nearest_centre(X, centres, code_sums=True)


@pytest.mark.parametrize("n_clusters", [1, 2, 3, 10, 300])
@pytest.mark.parametrize("with_sums", [False, True])
@pytest.mark.parametrize("per_feature", [False, True],
                         ids=["same bounds per feature", "bounds per feature"])
@pytest.mark.parametrize("n_features", [1, 2, 3, 5, 30])
def test_compiled_pass_is_argmin_with_ties_first_and_exact_sums(n_clusters, with_sums,
                                                                 per_feature, n_features):
    """The compiled labels equal ``argmin`` of ``||c||^2 - 2 x . c`` for the clipped rows
    (ties to the first centre: small integers make every distance exact, with many
    ties), over more rows
    than one block; the fused sums equal numpy's exact per-label sums of the codes, at
    the top of the grid too (codes of 2**32, values beyond the bounds). Both loops: the
    one for the same constants in every feature, and the one for constants per feature;
    the three searches: the transposed block's loops up to ``_COLUMN_FEATURES`` features
    (fused with the comparisons up to ``_FUSED_FEATURES``, by pairs of centres at 2;
    else pairs of centres and an odd one, groups of four features and the rest), above
    them row by row for few centres (1 to 3 of 30 features) and BLAS for more."""
    from skhybrid.utils._kernels import (
        _COLUMN_FEATURES,
        _FUSED_FEATURES,
        _ROW_FEATURES_PER_CENTRE,
        nearest_centre_sums,
    )
    from skhybrid.utils._sums import FIXED_POINT_BITS

    assert 5 <= _COLUMN_FEATURES < 30  # the three searches are tested
    assert _FUSED_FEATURES == 3  # so are the fused loops at 1, 2 and 3 features
    assert 3 * _ROW_FEATURES_PER_CENTRE <= 30 < 10 * _ROW_FEATURES_PER_CENTRE
    rng = np.random.default_rng(n_clusters)
    n = 5_001
    X = rng.integers(-2, 3, size=(n, n_features)).astype(np.float64)
    centres = rng.integers(-2, 3, size=(n_clusters, n_features)).astype(np.float64)
    lower = np.linspace(-1.0, -2.0, n_features) if per_feature else np.full(n_features, -1.0)
    upper = np.full(n_features, 1.0)
    # Rows are clipped to the bounds before their distances.
    expected = (np.einsum("kd,kd->k", centres, centres)
                - 2.0 * np.clip(X, lower, upper) @ centres.T).argmin(axis=1)
    scale = 2.0**FIXED_POINT_BITS / (upper - lower)
    labels = np.full(n + 3, -1, dtype=np.intp)
    counts = np.full(n_clusters, 3, dtype=np.int64)
    sums = np.full((n_clusters, n_features), 7, dtype=np.int64) if with_sums else None
    nearest_centre_sums(X, 0, n, np.zeros(n_features), np.ascontiguousarray(-2.0 * centres.T),
                        np.einsum("kd,kd->k", centres, centres), lower, upper, scale, labels,
                        counts, sums)
    np.testing.assert_array_equal(labels[:n], expected)
    expected_counts = 3 + (np.bincount(expected, minlength=n_clusters) if with_sums else 0)
    np.testing.assert_array_equal(counts, expected_counts)
    assert (labels[n:] == -1).all()  # rows past ``stop`` are never written
    if with_sums:
        codes = np.rint((np.clip(X, lower, upper) - lower) * scale).astype(np.int64)
        assert codes.max() == 2**FIXED_POINT_BITS
        expected_sums = np.full((n_clusters, n_features), 7, dtype=np.int64)
        np.add.at(expected_sums, expected, codes)
        np.testing.assert_array_equal(sums, expected_sums)


@pytest.mark.parametrize("n_features", [10, 30, 50])
def test_float32_search_is_exact_for_rows_too_close_to_call_in_float32(n_features):
    """The distances are float32 (BLAS's product above ``_COLUMN_FEATURES`` features,
    the compiled loops' from ``_NARROW_COLUMN_PRODUCTS`` products per row); a row
    whose two nearest centres are within the float32 error bound is searched again in
    float64. Rows a relative 1e-9 to 1e-11 off the bisector of two centres (beyond
    float32's resolution: a float32 search alone mislabels many) get the float64
    labels, as do random rows; the search is float64 where bounds are infinite."""
    from skhybrid.utils._kernels import (
        _COLUMN_FEATURES,
        _NARROW_COLUMN_PRODUCTS,
        narrow_tolerance,
        nearest_centre_sums,
    )

    k = 8
    assert n_features > _COLUMN_FEATURES or k * n_features >= _NARROW_COLUMN_PRODUCTS
    rng = np.random.default_rng(n_features)
    lower, upper = np.zeros(n_features), np.ones(n_features)
    centres = rng.uniform(0.2, 0.8, size=(k, n_features))
    first, second = centres[0], centres[1]
    n_close = 4_000
    offsets = rng.choice([-1.0, 1.0], n_close) * 10.0 ** rng.uniform(-11, -9, n_close)
    direction = (second - first) / np.linalg.norm(second - first)
    # Points on the bisector, moved a little along it, and along it only.
    along = rng.normal(size=(n_close, n_features)) * 0.05
    along -= np.outer(along @ direction, direction)
    close = (first + second) / 2 + along + offsets[:, None] * direction
    X = np.concatenate([close, rng.uniform(0, 1, size=(3_000, n_features))])
    origin = np.full(n_features, 0.5)
    shifted = centres - origin
    scaled, norms = np.ascontiguousarray(-2.0 * shifted.T), np.einsum("kd,kd->k", shifted, shifted)

    def search(lo, hi):
        labels = np.full(X.shape[0], -1, dtype=np.intp)
        nearest_centre_sums(X, 0, X.shape[0], origin, scaled, norms, lo, hi,
                            np.ones(n_features), labels, np.zeros(k, dtype=np.int64), None)
        return labels

    direct = ((X[:, None, :] - centres[None]) ** 2).sum(axis=2).argmin(axis=1)
    assert np.isfinite(narrow_tolerance(lower, upper, origin, scaled, norms))
    np.testing.assert_array_equal(search(lower, upper), direct)
    # The rows are beyond float32: a float32 search alone mislabels many of them.
    x32, c32 = (X - origin).astype(np.float32), shifted.astype(np.float32)
    alone = ((c32 * c32).sum(axis=1) - 2 * x32 @ c32.T).argmin(axis=1)
    assert np.mean(alone[:n_close] != direct[:n_close]) > 0.05
    # Infinite bounds: float64 throughout, the same labels.
    infinite = np.full(n_features, np.inf)
    assert narrow_tolerance(-infinite, infinite, origin, scaled, norms) == np.inf
    np.testing.assert_array_equal(search(-infinite, infinite), direct)


def test_float32_search_is_used_only_where_nothing_overflows_or_underflows():
    from skhybrid.utils._kernels import narrow_tolerance

    n_features = 30
    origin, centres = np.zeros(n_features), np.full((n_features, 2), -1.0)
    norms = np.full(2, n_features * 0.25)

    def tolerance(half_range, scale=1.0):
        return narrow_tolerance(np.full(n_features, -half_range), np.full(n_features, half_range),
                                origin, centres * scale, norms * scale**2)

    unit = tolerance(1.0)
    # 4 (d + 4) 2**-24 max_c B_c, with B_c = ||c||^2 + sum_f R_f |a_cf|.
    bound = n_features * 0.25 + n_features  # ||c||^2 + sum_f R_f |a_f|, R = 1, |a| = 1
    assert unit == pytest.approx(4 * (n_features + 4) * 2.0**-24 * bound)
    assert tolerance(1e20) == np.inf  # beyond 2**60
    assert tolerance(1.0, scale=1e-25) == np.inf  # B below 2**-60
    assert np.isfinite(tolerance(1e6, scale=1e6))


def _hybrid_pass_inputs(n, seed, n_features=3, k=4):
    """Rows of a hybrid chunk: a tenth central, the rest local at two privacy levels."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.2, 1.2, size=(n, n_features))  # some beyond the bounds
    centres = rng.uniform(0, 1, size=(k, n_features))
    is_local = rng.random(n) >= 0.1
    n_local = int(is_local.sum())
    # In float32, as a fit keeps them (REPORT_DTYPE).
    reports = rng.normal(0.0, 3.0, size=(n_local, n_features)).astype(np.float32)
    level = rng.integers(0, 2, n_local)
    release_epsilon = np.array([0.3, 2.0])
    return X, centres, is_local, reports, level, release_epsilon


# k clusters at 2 privacy levels: 2 k groups of reports. The last three cases sum the
# reports group by group (_reported_sums: 2 k (n_features + 1) <= _GROUPED_SUMS), the
# others report by report.
@pytest.mark.parametrize("n_features, bits, k", [(3, 32, 4), (3, 16, 4), (30, 16, 4),
                                                 (1, 32, 4), (2, 16, 3), (3, 32, 2)])
@pytest.mark.parametrize("n", [5_000, 300_000])
def test_fused_pass_responds_as_randomized_response_and_sums_by_reported_cluster(n,
                                                                              n_features,
                                                                              bits, k):
    """One pass gives the central rows' exact code sums and, for the local rows, the sums
    of their reports by privacy level and reported cluster, where each reported cluster
    is the randomized response of the row's nearest centre (from the draws of
    ``response_draws``, at once for a few users, else in chunks of tasks in row order,
    into an array a fit's passes share)."""
    from skhybrid.cluster._k_means_lloyd import (
        _DRAWN_AT_ONCE,
        LloydPasses,
        LocalResponses,
        _draw_chunks,
        lloyd_pass,
        local_task_counts,
    )
    from skhybrid.mechanisms._randomized_response import (
        randomized_response_widths,
        response_draws,
    )
    from skhybrid.utils._kernels import respond
    from skhybrid.utils._sums import fixed_point_sums

    X, centres, is_local, reports, level, release_epsilon = _hybrid_pass_inputs(
        n, n, n_features=n_features, k=k)
    lower, upper = np.zeros(n_features), np.ones(n_features)
    widths = randomized_response_widths(release_epsilon, k, bits)
    local = LocalResponses(is_local, reports, level, widths, bits=bits)
    labels, counts, sums, (reported_counts, reported_sums) = lloyd_pass(
        X, centres, bounds=(lower, upper), labels=True, code_sums=True, local=local,
        rng=np.random.default_rng(3))
    # A fit's passes set up once (their draws into one array): the same pass, twice.
    passes = LloydPasses(X, bounds=(lower, upper), code_sums=True, local=local)
    for _ in range(2):
        again = passes.run(centres, labels=True, rng=np.random.default_rng(3))
        for got, expected in zip(again[3], (reported_counts, reported_sums)):
            np.testing.assert_array_equal(got, expected)

    np.testing.assert_array_equal(labels, nearest_centre(np.clip(X, lower, upper), centres))
    central = ~is_local
    np.testing.assert_array_equal(counts, np.bincount(labels[central], minlength=k))
    np.testing.assert_array_equal(sums, fixed_point_sums(X[central], lower, upper,
                                                         labels=labels[central], n_groups=k))
    # The same draws, made as the pass makes them.
    rng = np.random.default_rng(3)
    if is_local.sum() <= _DRAWN_AT_ONCE:
        words = response_draws(rng, int(is_local.sum()), bits)
    else:
        first_local = np.cumsum([0, *local_task_counts(is_local, n, n_features)])
        words = np.concatenate([
            response_draws(rng, int(first_local[stop] - first_local[start]), bits)
            for start, stop in _draw_chunks(np.diff(first_local).tolist())])
    assert words.dtype == (np.uint16 if bits == 16 else np.uint32)
    reported = respond(labels[is_local], words, widths[level], k)
    group = level * k + reported
    np.testing.assert_array_equal(reported_counts, np.bincount(group, minlength=2 * k))
    expected = np.zeros((2 * k, n_features))
    np.add.at(expected, group, reports.astype(np.float64))
    np.testing.assert_allclose(reported_sums, expected, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("n_features, n_groups", [(1, 2), (1, 10), (2, 3), (2, 6), (3, 5)])
def test_reports_summed_group_by_group_are_their_sums_by_group(n_features, n_groups):
    """The grouped sums of the lm users' reports (a pass over the users per group) count
    each user in its group and add its report there, from the user ``first`` on and for
    ``n_users`` users only; to the counts and sums already there. The reports are
    multiples of 2**-10 below 2**10 in magnitude: their float64 sums are exact in any
    order, so they are compared exactly."""
    from skhybrid.utils._kernels import _GROUPED_FEATURES, _GROUPED_SUMS, _reported_sums

    # The cases the pass sums this way (the fused pass's test covers them in a pass).
    assert n_features <= _GROUPED_FEATURES and n_groups * (n_features + 1) <= _GROUPED_SUMS
    rng = np.random.default_rng(n_groups)
    reports = (rng.integers(-2**20, 2**20, size=(1000, n_features)) / 1024).astype(np.float32)
    groups = rng.integers(0, n_groups, size=700)  # a span's groups, longer than the users
    first, n_users = 123, 601
    counts = np.arange(n_groups, dtype=np.float64)
    sums = rng.integers(-5, 5, size=(n_groups, n_features)).astype(np.float64)
    expected_counts = counts + np.bincount(groups[:n_users], minlength=n_groups)
    expected_sums = sums.copy()
    np.add.at(expected_sums, groups[:n_users], reports[first:first + n_users])
    _reported_sums(groups, n_users, reports.reshape(-1), first, n_features, counts, sums)
    np.testing.assert_array_equal(counts, expected_counts)
    np.testing.assert_array_equal(sums, expected_sums)


@pytest.mark.parametrize("n_rows, n_features", [
    (1, 1), (5_000, 3), (60_000, 2), (100_000, 1), (100_000, 2), (100_000, 10), (200_000, 2),
    (1_000_000, 2), (1_000_000, 50), (10_000_000, 2),
])
def test_lloyd_pass_tasks_depend_on_the_shape_and_on_local_users_alone(n_rows, n_features):
    """The passes' partition: whole tasks of at least _MIN_TASK_ROWS rows (unless one), at
    most _CHUNK_ROWS; a power of two of them up to _TASKS where rows allow; with local
    users, tasks of at most _TASK_ROWS rows (up to _TASKS of them, at any number of
    values: their responses cost more than the values) and never fewer tasks than
    without."""
    from skhybrid.cluster import _k_means_lloyd as lloyd

    def n_tasks(local):
        starts, stops = lloyd._task_bounds(n_rows, n_features, local)
        assert starts[0] == 0 and stops[-1] == n_rows
        assert all(stop == start for start, stop in zip(starts[1:], stops[:-1]))
        sizes = np.subtract(stops, starts)
        if len(sizes) > 1:
            assert sizes[:-1].min() >= lloyd._MIN_TASK_ROWS
        assert sizes.max() <= max(lloyd._CHUNK_ROWS, lloyd._MIN_TASK_ROWS)
        return len(sizes), sizes.max()

    central, _ = n_tasks(False)
    local, local_rows = n_tasks(True)
    assert local >= central
    if n_rows <= lloyd._TASKS * lloyd._CHUNK_ROWS:
        for count in (central, local):
            assert count & (count - 1) == 0 and count <= lloyd._TASKS
    if local < lloyd._TASKS:
        assert local_rows <= max(lloyd._TASK_ROWS, lloyd._MIN_TASK_ROWS)
    if n_rows * n_features < 2 * lloyd._MIN_TASK_VALUES:
        assert central == 1
    if n_rows <= lloyd._TASK_ROWS:
        assert local == 1


def test_a_hybrid_pass_over_few_values_is_split_over_threads_by_its_local_users():
    """1e5 rows of 1 feature: too few values for a second thread alone, but their local
    users' responses count too (``_LOCAL_ROW_VALUES``), and their tasks are split by
    rows."""
    from skhybrid.cluster._k_means_lloyd import LloydPasses, LocalResponses
    from skhybrid.mechanisms._randomized_response import randomized_response_widths
    from skhybrid.utils._threads import available_cores

    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, size=(100_000, 1))
    is_local = rng.random(X.shape[0]) >= 0.05
    reports = rng.normal(size=(int(is_local.sum()), 1)).astype(np.float32)
    widths = randomized_response_widths(np.array([1.0]), 3, 32)
    local = LocalResponses(is_local, reports, None, widths)
    central = LloydPasses(X, bounds=(0.0, 1.0), code_sums=True)
    hybrid = LloydPasses(X, bounds=(0.0, 1.0), code_sums=True, local=local)
    assert central._workers == 1 and len(central._starts) == 1
    assert hybrid._workers == min(available_cores(), 2) and len(hybrid._starts) == 4


@pytest.mark.parametrize("n_local", [[5], [10, 10, 10], [30_000] * 32, [1_000] * 32,
                                     [0, 70_000, 0, 3], [40_000] * 5])
def test_draw_chunks_cover_the_tasks_in_order_doubling_within_the_draws_at_once(n_local):
    """The chunks of a pass's draws: every task once, in order; one task first; each
    chunk at most twice the last, and of at most _DRAWN_AT_ONCE users unless a single
    task; as large as those rules allow."""
    from skhybrid.cluster._k_means_lloyd import _DRAWN_AT_ONCE, _draw_chunks

    chunks = _draw_chunks(n_local)
    assert chunks[0] == (0, 1) and chunks[-1][1] == len(n_local)
    assert all(stop == start for (_, stop), (start, _) in zip(chunks, chunks[1:]))
    previous = 1
    for start, stop in chunks[1:]:
        users = sum(n_local[start:stop])
        assert stop - start <= 2 * previous
        assert users <= _DRAWN_AT_ONCE or stop - start == 1
        grown = stop < len(n_local) and stop - start < 2 * previous
        assert not (grown and users + n_local[stop] <= _DRAWN_AT_ONCE)  # stopped early
        previous = stop - start


def test_privatized_rows_centred_in_float64_then_stored_as_the_dtype():
    """The fit's reports: each float64 report minus the centre, then rounded to float32
    (no float64 array of them all), the same draws as the float64 reports."""
    rng = np.random.default_rng(2)
    X = rng.uniform(1e6, 1e6 + 1, size=(3_000, 3))  # far from zero: centring first matters
    rows = rng.random(3_000) < 0.9
    noise = {"mechanism": LAPLACE, "delta": 0.0, "lower": np.full(3, 1e6),
             "upper": np.full(3, 1e6 + 1), "epsilon": 1.0}
    centre = np.full(3, 1e6 + 0.5)
    plain = privatized_rows(X, rows, rng=np.random.default_rng(4), **noise)
    stored = privatized_rows(X, rows, rng=np.random.default_rng(4), centre=centre,
                             dtype=np.float32, **noise)
    assert stored.dtype == np.float32
    np.testing.assert_array_equal(stored, (plain - centre).astype(np.float32))


def test_fused_pass_reads_reports_of_another_dtype_as_float32():
    """The pass keeps its reports in float32 (REPORT_DTYPE): float64 reports give the
    sums of their float32 roundings, not of the float64 values."""
    from skhybrid.cluster._k_means_lloyd import REPORT_DTYPE, LocalResponses, lloyd_pass
    from skhybrid.mechanisms._randomized_response import randomized_response_widths

    assert REPORT_DTYPE == np.float32
    X, centres, is_local, reports, level, release_epsilon = _hybrid_pass_inputs(2_000, 5)
    precise = reports.astype(np.float64) + 1e-4  # not float32 values
    widths = randomized_response_widths(release_epsilon, centres.shape[0])

    def report_sums(given):
        local = LocalResponses(is_local, given, level, widths)
        return lloyd_pass(X, centres, bounds=(0.0, 1.0), local=local,
                          rng=np.random.default_rng(1))[3][1]

    rounded = report_sums(precise.astype(np.float32))
    np.testing.assert_array_equal(report_sums(precise), rounded)
    assert not np.array_equal(rounded, report_sums(reports))  # the 1e-4 counts


def _fused_responses(category, epsilon, k=5, bits=None):
    """Reported clusters of ``n`` users whose nearest centre is ``category``, by the fused
    pass (its counts per reported cluster, as one report per user), from draws of
    ``bits`` bits (None: as a fit chooses them, ``response_bits``)."""
    from skhybrid.cluster._k_means_lloyd import LocalResponses, lloyd_pass
    from skhybrid.mechanisms._randomized_response import (
        randomized_response_widths,
        response_bits,
    )

    centres = np.arange(k, dtype=np.float64)[:, np.newaxis]
    level = np.array([epsilon])
    bits = response_bits(level, k) if bits is None else bits

    def release(n, rng):
        X = np.full((n, 1), float(category))
        local = LocalResponses(None, np.zeros((n, 1)), None,
                               randomized_response_widths(level, k, bits), bits=bits)
        *_, (reported, _) = lloyd_pass(X, centres, local=local, rng=rng)
        return np.repeat(np.arange(k), reported.astype(np.int64))

    return release


@pytest.mark.parametrize("bits", [16, 32])
def test_fused_pass_reports_the_nearest_centre_with_randomized_responses_probabilities(bits):
    k, epsilon, n = 5, 0.8, 400_000
    reports = _fused_responses(2, epsilon, k, bits)(n, np.random.default_rng(0))
    frequencies = np.bincount(reports, minlength=k) / n
    keep = np.exp(epsilon) / (np.exp(epsilon) + k - 1)
    expected = np.where(np.arange(k) == 2, keep, (1 - keep) / (k - 1))
    standard_error = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(frequencies - expected) < 4 * standard_error)


@pytest.mark.parametrize("bits", [16, 32])
def test_fused_pass_responses_pass_the_audit_and_fail_it_at_1_4_times_the_epsilon(bits):
    # The responses of users whose nearest centres differ (0 or 2): the audit's
    # histogram of reported clusters, from the pass's counts. (A fit draws 16 bits at
    # these levels: response_bits.)
    passed = audit_mechanism(_fused_responses(0, 1.0, bits=bits),
                             _fused_responses(2, 1.0, bits=bits), 1.0,
                             n_samples=N_AUDIT, random_state=33)
    assert passed.n_bins == 5 and passed.passed, str(passed)
    failed = audit_mechanism(_fused_responses(0, 1.4, bits=bits),
                             _fused_responses(2, 1.4, bits=bits), 1.0,
                             n_samples=N_AUDIT, random_state=34)
    assert not failed.passed, str(failed)


def test_task_totals_add_the_tasks_in_order_and_zero_them():
    """The pass's totals: the tasks' integer arrays added exactly, the float ones in task
    order (as numpy's sum over the first axis), each task's row zeroed for the next."""
    from skhybrid.utils._kernels import task_totals

    rng = np.random.default_rng(0)
    rows = [rng.integers(-2**50, 2**50, (7, 8)), rng.integers(-2**40, 2**40, (7, 16)),
            rng.normal(0, 1e6, (7, 8)), rng.normal(0, 1, (7, 24))]
    sizes = [3, 9, 6, 18]
    expected = [part[:, :size].sum(axis=0) for part, size in zip(rows, sizes)]
    totals = [np.empty(size, dtype=part.dtype) for part, size in zip(rows, sizes)]
    task_totals(*rows, *totals)
    for total, want, part in zip(totals, expected, rows):
        np.testing.assert_array_equal(total, want)
        assert not part.any()
    task_totals(rows[0], None, None, None, totals[0], None, None, None)  # counts alone
    assert not totals[0].any()


def test_a_pass_after_one_that_raised_starts_from_zeroed_task_arrays(monkeypatch):
    """The task arrays are zeroed by the pass's totals: a pass that raised before them
    (its values left in the arrays) is not added into the next."""
    from skhybrid.cluster._k_means_lloyd import LloydPasses
    from skhybrid.utils import _threads

    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, (50_000, 2))
    centres = np.array([[-0.3, 0.1], [0.2, -0.1], [0.3, 0.3]])
    passes = LloydPasses(X, origin=np.full(2, 0.5), bounds=(0.0, 1.0), code_sums=True)
    _, counts, sums, _ = passes.run(centres)
    run = _threads.CompiledTasks.run

    def raising(self, prepare=None):
        run(self, prepare)  # the tasks' values are in the arrays
        raise RuntimeError("after the tasks")

    monkeypatch.setattr(_threads.CompiledTasks, "run", raising)
    with pytest.raises(RuntimeError, match="after the tasks"):
        passes.run(centres)
    monkeypatch.undo()
    _, again, again_sums, _ = passes.run(centres)
    np.testing.assert_array_equal(again, counts)
    np.testing.assert_array_equal(again_sums, sums)


def test_fused_pass_over_no_rows_gives_zero_sums():
    # (A chunk of a Dask input may hold no rows.)
    from skhybrid.cluster._k_means_lloyd import LocalResponses, lloyd_pass

    local = LocalResponses(None, np.zeros((0, 2)), None, np.array([0.5]))
    labels, counts, sums, (reported, report_sums) = lloyd_pass(
        np.zeros((0, 2)), np.ones((3, 2)), bounds=(0.0, 1.0), labels=True, code_sums=True,
        local=local, rng=np.random.default_rng(0))
    assert labels.shape == (0,)
    np.testing.assert_array_equal(counts, np.zeros(3))
    np.testing.assert_array_equal(sums, np.zeros((3, 2)))
    np.testing.assert_array_equal(reported, np.zeros(3))
    np.testing.assert_array_equal(report_sums, np.zeros((3, 2)))


@pytest.mark.skipif(not _linux_cores(), reason="needs sched_getcpu and two cores (Linux)")
def test_fit_keeps_the_caller_on_its_core_for_its_iterations(monkeypatch):
    """The threads are placed once per fit (cores_apart around the iterations, not at
    every pass): the caller stays on one core through them, and its cores are given
    back after the fit."""
    import os

    from skhybrid.cluster import _kmeans

    seen = []
    next_centres = _kmeans._next_centres

    def recording(*args, **kwargs):
        seen.append(os.sched_getaffinity(0))
        return next_centres(*args, **kwargs)

    monkeypatch.setattr(_kmeans, "_next_centres", recording)
    before = os.sched_getaffinity(0)
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (200_000, 2))  # large enough for the pool's thread
    HybridKMeans(3, n_iter=3, bounds=(0.0, 1.0), random_state=0).fit(
        X, trust_group=rng.random(200_000) < 0.1)
    assert len(seen) == 3 and len({frozenset(cores) for cores in seen}) == 1
    assert len(seen[0]) == 1
    assert os.sched_getaffinity(0) == before


@pytest.mark.parametrize("strategy", ["hybrid", "tcm_only"])
def test_fit_keeps_its_pass_threads_between_iterations(strategy, monkeypatch):
    """A fit's passes share the pool's thread (kept_threads around the iterations): one
    submission to the pool per fit, not one per pass, and the thread returns to the
    pool when the fit ends."""
    import time

    from skhybrid.utils import _threads

    if _threads.available_cores() < 2:
        pytest.skip("needs two cores")
    pool = _threads.shared_pool()
    submitted = []
    submit = pool.submit
    monkeypatch.setattr(pool, "submit",
                        lambda *args: submitted.append(submit(*args)) or submitted[-1])
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (200_000, 2))  # large enough for the pool's thread
    trust_group = rng.random(200_000) < 0.1 if strategy == "hybrid" else None  # all tcm
    HybridKMeans(3, n_iter=4, strategy=strategy, bounds=(0.0, 1.0), random_state=0).fit(
        X, trust_group=trust_group)
    assert len(submitted) == 1
    deadline = time.monotonic() + 10
    while not submitted[0].done() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert submitted[0].done() and submitted[0].exception() is None


@pytest.mark.parametrize("epsilon", [7.0, 40.0])  # 16-bit draws, then 32-bit (response_bits)
def test_draws_made_ahead_by_the_kept_thread_are_those_the_caller_makes(epsilon,
                                                                        monkeypatch):
    """A fit's next pass's draws, made by the pool's thread kept between the passes (a
    job posted at the end of a pass), are the caller's own, chunk for chunk: the same
    fit, bit for bit, as with the caller making every pass's draws."""
    import time

    from skhybrid.cluster._k_means_lloyd import LloydPasses
    from skhybrid.utils import _compiled_tasks, _threads

    if _threads.available_cores() < 2:
        pytest.skip("needs two cores")
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (200_000, 2))  # 180,000 lm users: draws in chunks of tasks
    trust_group = rng.random(200_000) < 0.1
    taken = []
    take_back = _threads.CompiledTasks.take_back_job

    def after_the_thread_took_it(tasks):
        # Wait until the kept thread has taken the job (or left): deterministic.
        deadline = time.monotonic() + 10
        while (tasks._state[_compiled_tasks.JOB] > 0 and tasks._state[_compiled_tasks.LIVE]
               and time.monotonic() < deadline):
            time.sleep(1e-4)
        caller_draws = take_back(tasks)
        taken.append(not caller_draws)
        return caller_draws

    monkeypatch.setattr(_threads.CompiledTasks, "take_back_job", after_the_thread_took_it)
    ahead = HybridKMeans(3, epsilon=epsilon, n_iter=5, bounds=(0.0, 1.0),
                         random_state=0).fit(X, trust_group=trust_group)
    assert taken == [True] * 4  # every pass after the first
    monkeypatch.setattr(LloydPasses, "_post_draws", lambda *args: None)
    taken.clear()
    alone = HybridKMeans(3, epsilon=epsilon, n_iter=5, bounds=(0.0, 1.0),
                         random_state=0).fit(X, trust_group=trust_group)
    assert not any(taken)
    np.testing.assert_array_equal(ahead.cluster_centers_, alone.cluster_centers_)
    np.testing.assert_array_equal(ahead.weight_, alone.weight_)
