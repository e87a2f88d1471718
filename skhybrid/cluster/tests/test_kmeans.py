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
    central_sum_weights,
    local_release_epsilon,
)
from skhybrid.cluster._k_means_lloyd import (
    CHUNK_ROWS,
    lloyd_pass,
    nearest_centre,
    openmp_threads,
    within_cluster_sum_of_squares,
)
from skhybrid.cluster._k_means_statistics import (
    _CentralClustering,
    _ClusterMeans,
    _demix_local,
    _LocalClustering,
    _merge_cluster_means,
    _release_central,
)
from skhybrid.exceptions import PrivacyLeakWarning
from skhybrid.mean import EmptyGroupWarning
from skhybrid.mechanisms import LaplaceMechanism
from skhybrid.mechanisms._randomized_response import randomized_response_widths, response_draws
from skhybrid.mechanisms.tests.test_randomized_response import respond
from skhybrid.theory._hybrid import pwh_weight
from skhybrid.utils._sums import FIXED_POINT_BITS, centred_sums

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
    # b_T = (m d + 1) tau / epsilon in the paper, for an added or removed user, on counts
    # and sums alike; here the sums are divided by range_j / 2 (central_sum_weights), so
    # a replaced user moves each of the d + 1 parts by at most 2: (2 d + 2) tau / epsilon.
    np.testing.assert_allclose(ledger.central_scales, [(2 * 2 + 2) * n_iter / epsilon] * n_iter)
    np.testing.assert_allclose(ledger.report_scales, [m_d * (n_iter + 1) / epsilon])


def _central_statistic(X, centres, lower, upper):
    """One iteration's tcm statistic, computed by the estimator's own code: what the noise is added to."""
    central = _CentralClustering(np.clip(X, lower, upper), lower, upper)
    counts, sums = central.statistics(centres)
    centred = centred_sums(sums, lower, upper, n_users=int(counts.sum()))
    return np.concatenate([counts, (centred / central_sum_weights(upper - lower)).ravel()])


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
    assert sensitivity == pytest.approx(2 * 3 + 2)  # 2 per feature and 2 for the counts
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
                                 np.array([step]), None)
        estimate = _demix_local(local.statistics(centres, rng), (lower + upper) / 2,
                                upper - lower, np.array([step]), np.array([report_variance]))
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
    from skhybrid.cluster._k_means_statistics import _LocalStatistics
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
    central = _CentralClustering(values, lower, upper)
    n_trials = 4000
    draws = [_release_central(central.statistics(centres), lower, upper, mechanism, rng)
             for _ in range(n_trials)]
    means = np.array([draw.means for draw in draws])
    stated = np.array([draw.noise_variance for draw in draws]).mean(axis=0)
    standard_error = means.std(axis=0) / np.sqrt(n_trials)
    assert np.all(np.abs(means.mean(axis=0) - truth) < 4 * standard_error)
    # To first order the error is (w Y_sum - (mean - 0.5) Y_count) / count, with w the
    # sums' weight (central_sum_weights); the stated variance bounds |mean - 0.5| by
    # half the range.
    sizes = np.bincount(nearest_centre(values, centres), minlength=3)[:, np.newaxis]
    weights = central_sum_weights(upper - lower)
    first_order = mechanism.variance(9) * (weights**2 + (truth - 0.5) ** 2) / sizes**2
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

    def recording(chunk, centres, rng):
        searched.append(centres.copy())
        return original(chunk, centres, rng)

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
    assert fitted == {"cluster_centers_", "n_iter_", "weight_", "centre_noise_", "n_tcm_",
                      "n_lm_", "n_features_in_"}
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


# -- the Lloyd pass (_k_means_lloyd.pyx) against a numpy reference -----------------------------


def _reference_pass(X, centres, origin, lower, upper, scale, is_local, level, widths, draws,
                    reports, n_levels):
    """:func:`lloyd_pass` in numpy: ``||c||^2 - 2 (x - origin) . c`` by a matrix product
    as the kernel's (BLAS's rounding of a block's products and numpy's differ only for
    rows within about 1e-16 of a tie, which these data do not have), the first minimum,
    the codes of the central rows, and the local rows' responses by the mechanism's
    ``respond``."""
    k, n_features = centres.shape
    shifted = np.clip(X, lower, upper) - origin
    distances = np.einsum("kd,kd->k", centres, centres) + shifted @ (-2.0 * centres.T)
    labels = np.argmin(distances, axis=1)
    central = ~is_local
    codes = np.rint((np.clip(X, lower, upper) - lower) * scale).astype(np.int64)
    counts = np.bincount(labels[central], minlength=k)
    sums = np.zeros((k, n_features), np.int64)
    np.add.at(sums, labels[central], codes[central])
    groups = labels[is_local]
    if draws is not None:
        groups = respond(groups, draws, widths[level], k)
    groups = groups + level * k
    local_counts = np.bincount(groups, minlength=n_levels * k).astype(np.float64)
    local_sums = np.zeros((n_levels * k, n_features))
    np.add.at(local_sums, groups, reports.astype(np.float64))
    return labels, counts, sums, local_counts, local_sums


def _pass_inputs(n, n_features, k, n_levels, seed, bits=32):
    """A hybrid pass's inputs over bounds of different widths per feature, with rows
    outside them (clipped), a third of the rows central, and ``n_levels`` levels."""
    rng = np.random.default_rng(seed)
    lower = np.linspace(-1.0, 0.5, n_features)
    upper = lower + np.linspace(1.0, 3.0, n_features)
    X = rng.uniform(lower - 0.2, upper + 0.2, (n, n_features))
    origin = (lower + upper) / 2.0
    centres = rng.uniform(lower, upper, (k, n_features)) - origin
    is_local = rng.random(n) < 2 / 3
    n_local = int(is_local.sum())
    level = rng.integers(0, n_levels, n_local)
    widths = randomized_response_widths(np.array([0.5, 2.0][:n_levels]), k, bits)
    draws = response_draws(rng, n_local, bits) if k > 1 else None
    reports = rng.normal(0.0, 3.0, (n_local, n_features)).astype(np.float32)
    scale = 2.0**FIXED_POINT_BITS / (upper - lower)
    return dict(X=X, centres=centres, origin=origin, lower=lower, upper=upper, scale=scale,
                is_local=is_local, level=level, widths=widths, draws=draws, reports=reports,
                n_levels=n_levels)


@pytest.mark.parametrize("n_features", [1, 2, 7])
@pytest.mark.parametrize("k", [1, 3, 10])
@pytest.mark.parametrize("n_levels", [1, 2])
def test_lloyd_pass_gives_the_references_labels_exact_sums_responses_and_report_sums(
        n_features, k, n_levels):
    """Over several chunks and a partial one: the labels, the central rows' exact code
    sums, the local rows' responses (their counts by level and reported cluster) and the
    sums of their reports (float64, in another order than the reference's)."""
    inputs = _pass_inputs(CHUNK_ROWS * 3 + 123, n_features, k, n_levels, seed=k + n_features)
    labels, counts, sums, local_counts, local_sums = lloyd_pass(
        inputs["X"], inputs["centres"], origin=inputs["origin"], lower=inputs["lower"],
        upper=inputs["upper"], scale=inputs["scale"], code_sums=True,
        is_local=inputs["is_local"], level=inputs["level"], widths=inputs["widths"],
        draws=inputs["draws"], reports=inputs["reports"], n_levels=n_levels,
        return_labels=True, n_threads=2)
    expected = _reference_pass(**inputs)
    np.testing.assert_array_equal(labels, expected[0])
    np.testing.assert_array_equal(counts, expected[1])
    np.testing.assert_array_equal(sums, expected[2])
    np.testing.assert_array_equal(local_counts, expected[3])
    np.testing.assert_allclose(local_sums, expected[4], rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("bits", [16, 32])
def test_lloyd_pass_responses_are_the_mechanisms_at_every_slot_boundary(bits):
    """Draws on both sides of every slot boundary (``j * width - 1`` and ``j * width``)
    and at the grid's ends: the kernel's float quotient gives the mechanism's
    ``respond`` exactly. Integer reports: their float sums are then exact too."""
    k, n_levels = 5, 2
    widths = randomized_response_widths(np.array([0.3, 3.0]), k, bits)
    edges = np.concatenate([np.arange(1, k) * width + offset for width in widths
                            for offset in (-1, 0)] + [[0, 2**bits - 1]])
    draws = np.repeat(edges, k).astype(np.uint16 if bits == 16 else np.uint32)
    n = draws.shape[0]
    X = np.tile(np.arange(k, dtype=np.float64), n // k)[:, np.newaxis]  # row i nearest i % k
    level = np.arange(n) % n_levels
    reports = np.arange(n, dtype=np.float32)[:, np.newaxis]
    inputs = dict(X=X, centres=np.arange(k, dtype=np.float64)[:, np.newaxis] - 2.0,
                  origin=np.array([2.0]), lower=np.array([0.0]), upper=np.array([4.0]),
                  scale=np.array([1.0]), is_local=np.ones(n, bool), level=level,
                  widths=widths, draws=draws, reports=reports, n_levels=n_levels)
    *_, local_counts, local_sums = lloyd_pass(
        X, inputs["centres"], origin=[2.0], lower=[0.0], upper=[4.0], is_local=inputs["is_local"],
        level=level, widths=widths, draws=draws, reports=reports, n_levels=n_levels)
    expected = _reference_pass(**inputs)
    np.testing.assert_array_equal(local_counts, expected[3])
    np.testing.assert_array_equal(local_sums, expected[4])


def test_lloyd_pass_breaks_ties_to_the_first_centre_and_clips_rows():
    centres = np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [5.0, 0.0]])
    X = np.array([[2.0, 0.0], [-3.0, 0.0], [0.0, 7.0], [100.0, 0.0]])
    labels, *_ = lloyd_pass(X, centres, origin=[0.0, 0.0], lower=-2.0, upper=2.0,
                            return_labels=True)
    # Row 3 is clipped to (2, 0): nearer centre 0 than centre 3 at (5, 0).
    np.testing.assert_array_equal(labels, [0, 2, 0, 0])


def test_lloyd_pass_sums_are_the_same_bits_on_any_number_of_threads():
    """Each chunk's partial sums are added in chunk order: the float sums of the
    reports do not depend on the threads (nor, then, any seeded release)."""
    inputs = _pass_inputs(CHUNK_ROWS * 7 + 5, 3, 4, 2, seed=7)
    del inputs["X"], inputs["centres"]
    X = np.random.default_rng(8).uniform(-1, 4, (CHUNK_ROWS * 7 + 5, 3))
    centres = np.random.default_rng(9).normal(0, 1, (4, 3))
    results = [lloyd_pass(X, centres, code_sums=True, return_labels=True, n_threads=threads,
                          **inputs) for threads in (1, 2, 3)]
    for result in results[1:]:
        for got, expected in zip(result, results[0]):
            assert got.tobytes() == expected.tobytes()


def test_lloyd_pass_over_no_rows_gives_zero_sums():
    empty = np.empty((0, 2))
    labels, counts, sums, local_counts, local_sums = lloyd_pass(
        empty, np.ones((3, 2)), origin=0.0, lower=0.0, upper=1.0, scale=2.0**32,
        code_sums=True, is_local=np.empty(0, bool), reports=np.empty((0, 2), np.float32),
        widths=np.ones(1), return_labels=True, n_threads=2)
    assert labels.shape == (0,)
    assert not counts.any() and not sums.any() and not local_counts.any()
    assert local_sums.shape == (3, 2) and not local_sums.any()


def test_nearest_centre_of_far_data_is_the_direct_argmin():
    rng = np.random.default_rng(3)
    X = 1e6 + rng.random((5_000, 3))
    centres = 1e6 + rng.random((6, 3))
    direct = np.argmin(((X[:, np.newaxis, :] - centres) ** 2).sum(axis=2), axis=1)
    np.testing.assert_array_equal(nearest_centre(X, centres, n_threads=2), direct)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_n_jobs_1_and_2_give_byte_identical_releases(strategy):
    rng = np.random.default_rng(11)
    n = 5 * CHUNK_ROWS + 17
    X = rng.normal(0.5, 0.2, (n, 3))
    trust = np.where(rng.random(n) < 0.3, "tcm", "lm")
    epsilon = np.where(trust == "tcm", 3.0, 2.0) if strategy == "full_lm" else None
    fits = [HybridKMeans(4, strategy=strategy, bounds=(0, 1), n_jobs=n_jobs,
                         random_state=5).fit(X, trust_group=trust, epsilon=epsilon)
            for n_jobs in (1, 2)]
    assert fits[0].cluster_centers_.tobytes() == fits[1].cluster_centers_.tobytes()
    assert fits[0].weight_.tobytes() == fits[1].weight_.tobytes()


def test_the_passes_threads_are_openmps_and_threadpoolctl_limits_them():
    """n_jobs=None is OpenMP's maximum, which threadpoolctl (as scikit-learn's own
    OpenMP loops) limits; an explicit n_jobs is taken as it is."""
    from threadpoolctl import threadpool_info, threadpool_limits

    assert any(info["user_api"] == "openmp" for info in threadpool_info())
    with threadpool_limits(limits=1, user_api="openmp"):
        assert openmp_threads(None) == 1
        assert openmp_threads(-1) == 1
        assert openmp_threads(2) == 2
    with threadpool_limits(limits=3, user_api="openmp"):
        assert openmp_threads(None) == 3 and openmp_threads(-2) == 2


@pytest.mark.parametrize("n_jobs", [0, 1.5, "2"])
def test_n_jobs_must_be_a_nonzero_integer_or_none(n_jobs):
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="n_jobs"):
        HybridKMeans(2, bounds=(0, 1), n_jobs=n_jobs).fit(np.zeros((10, 2)))


def test_a_fits_response_draws_are_made_at_once_per_iteration(monkeypatch):
    """All of an iteration's local users' draws by one call of response_draws, from
    that iteration's generator: the draw stream does not depend on chunks or threads."""
    calls = []
    original = statistics_module.response_draws

    def recording(rng, n_users, bits):
        calls.append(n_users)
        return original(rng, n_users, bits)

    monkeypatch.setattr(statistics_module, "response_draws", recording)
    X, trust = _blobs(n=3 * CHUNK_ROWS)
    HybridKMeans(4, n_iter=3, bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
    assert calls == [int(np.sum(trust == "lm"))] * 3


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



def _fused_responses(category, epsilon, k=5, bits=None):
    """Reported clusters of ``n`` users whose nearest centre is ``category``, by the
    pass (its counts per reported cluster, as one report per user), from draws of
    ``bits`` bits (None: as a fit chooses them, ``response_bits``)."""
    from skhybrid.mechanisms._randomized_response import response_bits

    centres = np.arange(k, dtype=np.float64)[:, np.newaxis]
    level = np.array([epsilon])
    bits = response_bits(level, k) if bits is None else bits

    def release(n, rng):
        X = np.full((n, 1), float(category))
        *_, reported, _ = lloyd_pass(
            X, centres, origin=0.0, lower=-np.inf, upper=np.inf, is_local=np.ones(n, bool),
            widths=randomized_response_widths(level, k, bits),
            draws=response_draws(rng, n, bits), reports=np.zeros((n, 1), np.float32))
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

