"""HybridKMeans' tcm counts and sums keep their sensitivity in float64, whatever the bounds.

The fast tests check the statistic the curator adds noise to in one iteration, computed
by a real fit: replacing one user moves it by at most the L1 sensitivity the noise is
calibrated to, for bounds far from zero relative to their width. The slow tests audit the
release of that statistic on the same neighbouring datasets, with a control that puts
the old float computation back (values centred on the rounded midpoint, float sums) and
must fail.
"""

import numpy as np
import pytest

import skhybrid.cluster._k_means_statistics as statistics_module
import skhybrid.cluster._kmeans as kmeans_module
from skhybrid.cluster import HybridKMeans
from skhybrid.cluster._k_means_budget import central_iteration_sensitivity
from skhybrid.cluster._k_means_lloyd import nearest_centre
from skhybrid.cluster.tests.test_kmeans import _audit_central_release
from skhybrid.utils._sums import FIXED_POINT_BITS

FAR_BOUNDS = [(2.0**52, 2.0**52 + 1.0), (1e9, 1e9 + 1e-6)]
N_FEATURES = 2
EPSILON, N_ITER = 1.0, 1


def _naive_centred_code_sums(values, lower, upper, labels, counts):
    """The old computation, in fixed-point units: float sums of clip(x) - (lower + upper) / 2.

    The midpoint rounds (to ``lower`` for ``(2**52, 2**52 + 1)``), so a centred value can
    reach the whole range instead of half of it. Used by the controls only.
    """
    centred = np.clip(values, lower, upper) - (lower + upper) / 2.0
    sums = np.stack(
        [np.bincount(labels, weights=column, minlength=counts.shape[0]) for column in centred.T],
        axis=1,
    )
    return sums * (2.0**FIXED_POINT_BITS / (upper - lower))


def _naive_statistics(central, centres):
    """The tcm statistics of one iteration by the old float computation (the control)."""
    lower, upper = central._lower, central._upper
    midpoint = (lower + upper) / 2.0  # the estimator's own search, near zero
    labels = nearest_centre(central._values, centres - midpoint, origin=midpoint,
                            bounds=(lower, upper))
    counts = np.bincount(labels, minlength=centres.shape[0])
    return statistics_module._CentralStatistics(
        counts, _naive_centred_code_sums(central._values, lower, upper, labels, counts))


class _Recorder:
    """A central mechanism that adds no noise and records the statistic it is given."""

    def __init__(self, mechanism, seen):
        self.mechanism = mechanism
        self.seen = seen

    def randomise(self, value, *, random_state=None):
        self.seen.append(np.array(value, dtype=np.float64))
        return np.asarray(value, dtype=np.float64)

    def variance(self, n_coordinates=1):
        return 0.0


def _fit_statistics(monkeypatch, bounds, X, X_prime):
    """The tcm statistics of one iteration on X and X_prime, and the mechanism calibrated to them."""
    seen, mechanisms = [], []
    original = kmeans_module.central_iteration_mechanism

    def recording(*args, **kwargs):
        mechanisms.append(original(*args, **kwargs))
        return _Recorder(mechanisms[-1], seen)

    monkeypatch.setattr(kmeans_module, "central_iteration_mechanism", recording)
    lower, upper = bounds
    init = lower + (upper - lower) * np.array([[0.25, 0.75], [0.75, 0.25]])
    estimator = HybridKMeans(2, epsilon=EPSILON, n_iter=N_ITER, strategy="tcm_only",
                             bounds=bounds, init=init)
    for data in (X, X_prime):
        estimator.fit(data)
    monkeypatch.undo()
    assert len(seen) == 2 and mechanisms[0].sensitivity == mechanisms[1].sensitivity
    return seen[0], seen[1], mechanisms[0]


def _tailored_neighbours(lower, upper, n=10, seed=0):
    """Neighbours (one user replaced) whose old, naive tcm statistics differ the most.

    Searches random datasets and replacements (corners of the box and random points)
    for the pair where the float statistic of the old computation moves by the most
    in L1: what an attacker who knows the computation would pick.
    """
    rng = np.random.default_rng(seed)
    lower_, upper_ = np.full(N_FEATURES, lower), np.full(N_FEATURES, upper)
    centres = lower_ + (upper_ - lower_) * np.array([[0.25, 0.75], [0.75, 0.25]])
    corners = lower_ + (upper_ - lower_) * np.array([[0, 0], [0, 1], [1, 0], [1, 1]])

    def naive(X):
        labels = nearest_centre(X - (lower_ + upper_) / 2, centres - (lower_ + upper_) / 2)
        counts = np.bincount(labels, minlength=2)
        sums = _naive_centred_code_sums(X, lower_, upper_, labels, counts)
        return np.concatenate([counts, sums.ravel() * (upper - lower) / 2.0**FIXED_POINT_BITS])

    best, best_gap = None, -1.0
    for _ in range(50):
        X = np.clip(lower_ + (upper_ - lower_) * rng.random((n, N_FEATURES)), lower_, upper_)
        X[0] = corners[rng.integers(4)]
        for replacement in np.vstack([corners, lower_ + (upper_ - lower_) * rng.random((4, 2))]):
            X_prime = X.copy()
            X_prime[0] = np.clip(replacement, lower_, upper_)
            gap = np.abs(naive(X) - naive(X_prime)).sum()
            if gap > best_gap:
                best, best_gap = (X, X_prime), gap
    return best


@pytest.mark.parametrize("bounds", FAR_BOUNDS, ids=lambda b: f"{b[0]:g}")
def test_one_iterations_statistic_moves_by_at_most_its_sensitivity(monkeypatch, bounds):
    X, X_prime = _tailored_neighbours(*bounds)
    a, b, mechanism = _fit_statistics(monkeypatch, bounds, X, X_prime)
    assert np.abs(a - b).sum() <= mechanism.sensitivity


@pytest.mark.parametrize("bounds", FAR_BOUNDS, ids=lambda b: f"{b[0]:g}")
def test_a_users_raw_magnitude_never_reaches_the_statistic(monkeypatch, bounds):
    # Replacing a clipped corner by a raw value far beyond it changes nothing.
    X, _ = _tailored_neighbours(*bounds)
    X_far = X.copy()
    X_far[0] = np.where(X[0] == bounds[1], 1e300, -1e300)
    a, b, _ = _fit_statistics(monkeypatch, bounds, X, X_far)
    np.testing.assert_array_equal(a, b)


def test_the_sensitivity_covers_the_float_conversion_of_large_sums(monkeypatch):
    # The sums' magnitude grows with the number of users; their rounding is charged.
    X, X_prime = _tailored_neighbours(*FAR_BOUNDS[0])
    _, _, mechanism = _fit_statistics(monkeypatch, FAR_BOUNDS[0], X, X_prime)
    assert mechanism.sensitivity == central_iteration_sensitivity(np.ones(N_FEATURES), len(X))
    ranges = np.array([1.0, 2.0])
    assert central_iteration_sensitivity(ranges, 1) >= 6.0
    assert central_iteration_sensitivity(ranges, 10**9) > central_iteration_sensitivity(ranges, 1)
    assert central_iteration_sensitivity(ranges, 10**9) < 6.0 * (1 + 1e-5)


# -- audits of the release on the same neighbours ---------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("bounds", FAR_BOUNDS, ids=lambda b: f"{b[0]:g}")
def test_release_passes_the_audit_with_bounds_far_from_zero(monkeypatch, bounds):
    X, X_prime = _tailored_neighbours(*bounds)
    a, b, mechanism = _fit_statistics(monkeypatch, bounds, X, X_prime)
    result = _audit_central_release(mechanism, a, b, EPSILON / N_ITER, seed=51)
    assert result.passed, str(result)


@pytest.mark.slow
def test_audit_fails_with_the_naive_float_sums(monkeypatch):
    # Control: the old computation at (2**52, 2**52 + 1) is caught by the same audit.
    bounds = FAR_BOUNDS[0]
    X, X_prime = _tailored_neighbours(*bounds)
    monkeypatch.setattr(statistics_module._CentralClustering, "statistics", _naive_statistics)
    a, b, mechanism = _fit_statistics(monkeypatch, bounds, X, X_prime)
    assert np.abs(a - b).sum() > mechanism.sensitivity
    result = _audit_central_release(mechanism, a, b, EPSILON / N_ITER, seed=52)
    assert not result.passed, str(result)
