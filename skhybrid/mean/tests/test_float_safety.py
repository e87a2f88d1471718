"""Sums that keep their sensitivity in float64, whatever the bounds (issue: float-safe sums).

The first tests check the statistic before the noise: replacing one user moves it by at
most the sensitivity the noise is calibrated to, in float64, for bounds far from zero.
The slow tests audit the released estimates on the same neighbouring datasets, with a
control that puts the old, naive float sum back and must fail.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skhybrid._group_estimates as group_estimates
import skhybrid.mean._statistics as statistics_module
import skhybrid.mean._hybrid as hybrid_module
from skhybrid import ADPMEstimator, HybridMeanEstimator, MixedMeanEstimator
from skhybrid.audit import audit_mechanism, estimator_release
from skhybrid.utils._sums import (
    FIXED_POINT_BITS,
    centred_sums,
    fixed_point_moments,
    fixed_point_sums,
    rounding_slack,
)

FAR_BOUNDS = [(2.0**52, 2.0**52 + 1.0), (1e9, 1e9 + 1e-6)]


def _tailored_neighbours(lower, upper, n=10, seed=0):
    """Neighbours (one user moved across the range) whose naive float sums differ most.

    Searches random datasets for the pair where ``sum(x) / n`` computed in float64 moves
    by the most: what an attacker who knows the summation order would pick.
    """
    rng = np.random.default_rng(seed)
    best, best_gap = None, -1.0
    for _ in range(300):
        X = lower + (upper - lower) * rng.random((n, 1))
        X = np.clip(X, lower, upper)
        X_prime = X.copy()
        X_prime[0, 0] = upper if X[0, 0] - lower < upper - X[0, 0] else lower
        gap = abs(X.sum() / n - X_prime.sum() / n)
        if gap > best_gap:
            best, best_gap = (X, X_prime), gap
    return best


def _naive_fixed_point_sums(values, lower, upper, *, labels=None, n_groups=1, non_finite=None):
    """The old computation, expressed in fixed-point units: sum(clip(x)) - n * lower.

    It sums the clipped values in float64 (magnitude n * |lower|) before centring, the
    rounding the fixed-point sums avoid. Used by the controls only (whose values are
    finite: ``non_finite`` is left at 0).
    """
    clipped = np.clip(values, lower, upper)
    labels = np.zeros(values.shape[0], dtype=np.intp) if labels is None else labels
    sums = np.zeros((n_groups, values.shape[1]))
    for g in range(n_groups):
        rows = clipped[labels == g]
        sums[g] = (rows.sum(axis=0) - rows.shape[0] * lower) * 2.0**FIXED_POINT_BITS / (upper - lower)
    return sums


def _naive_group_sums(X, is_tcm, lower, upper, **kinds):
    """The hybrid mean's one-pass sums with the naive tcm sum (controls only)."""
    sums = fixed_point_moments(X, lower, upper, is_tcm, squares=kinds["squares"],
                               others=kinds["reports"], other_squares=kinds["report_squares"])
    rows = X if is_tcm is None else X[is_tcm]
    return sums._replace(codes=_naive_fixed_point_sums(rows, lower, upper)[0])


class _NoNoise:
    """A central mechanism that adds no noise and records the statistic it is given."""

    def __init__(self, seen):
        self.seen = seen

    def randomise(self, value, *, random_state=None):
        self.seen.append(np.asarray(value, dtype=np.float64))
        return np.asarray(value, dtype=np.float64)

    def variance(self, n_coordinates=1):
        return 0.0


def _reference_codes(X, lower, upper):
    """The codes by their definition, in numpy (Python integers), and their square codes."""
    codes = np.rint((np.clip(X, lower, upper) - lower) * (2.0**FIXED_POINT_BITS / (upper - lower)))
    squares = np.rint((codes - 2.0 ** (FIXED_POINT_BITS - 1)) ** 2
                      * 2.0 ** (2 - FIXED_POINT_BITS))
    return ([int(code) for code in codes[:, 0]], [int(square) for square in squares[:, 0]])


@given(
    lower=st.floats(-1e300, 1e300, allow_nan=False),
    log_width=st.floats(-300, 300),
    values=st.lists(st.floats(-1e300, 1e300, allow_nan=False), min_size=1, max_size=40),
    replacement=st.floats(-1e300, 1e300, allow_nan=False),
)
@settings(max_examples=300, deadline=None)
def test_one_replaced_user_moves_the_fixed_point_sum_by_at_most_one_grid_range(
    lower, log_width, values, replacement
):
    """On any bounds (far from zero, of any width; too narrow for a grid step refused) and
    values up to 1e300: the kernels' code and square-code sums are the Python-integer sums of the definitions' codes, each
    code on its grid, so one replaced user moves either sum by at most one grid range."""
    with np.errstate(over="ignore"):
        upper = lower + 10.0**log_width
    if not (np.isfinite(upper - lower) and upper > lower):
        return
    lower_, upper_ = np.array([lower]), np.array([upper])
    X = np.array(values).reshape(-1, 1)
    if upper - lower < 2.0**FIXED_POINT_BITS / np.finfo(np.float64).max:
        with pytest.raises(ValueError, match="apart"):  # no float64 grid step
            fixed_point_sums(X, lower_, upper_)
        return
    X_prime = X.copy()
    X_prime[0, 0] = replacement
    moved = fixed_point_sums(X_prime, lower_, upper_) - fixed_point_sums(X, lower_, upper_)
    assert abs(int(moved[0, 0])) <= 2**FIXED_POINT_BITS
    # The squares' grid [0, (width / 2)**2] exists for widths of about 1e-154 to 1e154.
    with np.errstate(over="ignore", under="ignore"):
        square_range = np.square((upper - lower) / 2)
    squared = bool(0.0 < square_range < np.inf)
    totals = []
    for data in (X, X_prime):
        codes, squares = _reference_codes(data, lower_, upper_)
        assert all(0 <= code <= 2**FIXED_POINT_BITS for code in codes + squares)
        sums = fixed_point_moments(data, lower_, upper_, squares=squared)
        assert int(fixed_point_sums(data, lower_, upper_)[0, 0]) == sum(codes)
        assert int(sums.codes[0]) == sum(codes)
        if squared:
            assert int(sums.square_codes[0]) == sum(squares)
            totals.append(int(sums.square_codes[0]))
    if squared:
        assert abs(totals[1] - totals[0]) <= 2**FIXED_POINT_BITS


def test_fixed_point_sums_skip_rows_labelled_past_the_last_group():
    X = np.array([[0.0], [1.0], [0.5], [1e20]])
    sums = fixed_point_sums(X, np.array([0.0]), np.array([1.0]),
                            labels=np.array([0, 1, 0, 2]), n_groups=2)
    np.testing.assert_array_equal(
        centred_sums(sums, np.array([0.0]), np.array([1.0]), n_users=3), [[0.5], [1.0]]
    )


def test_bounds_whose_width_overflows_are_refused_with_their_values():
    with pytest.raises(ValueError, match="width"):
        fixed_point_sums(np.zeros((2, 1)), np.array([-1e308]), np.array([1e308]))


@pytest.mark.parametrize("bounds", FAR_BOUNDS)
def test_tcm_mean_before_noise_moves_by_at_most_its_sensitivity(monkeypatch, bounds):
    seen = []
    monkeypatch.setattr(group_estimates, "central_mechanism", lambda *a, **k: _NoNoise(seen))
    X, X_prime = _tailored_neighbours(*bounds)
    estimator = HybridMeanEstimator("tcm_only", bounds=bounds, variance=None)
    estimator.fit(X)
    estimator.fit(X_prime)
    # The statistic the noise is added to (the offset is added afterwards).
    moved = abs(seen[0][0] - seen[1][0])
    width = bounds[1] - bounds[0]
    assert moved <= width / X.shape[0] + rounding_slack(width)


def test_local_reports_sum_never_sees_a_tcm_users_raw_value():
    # A tcm user's raw value 1e20 (clipped to 1) must not change the lm reports' sum.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.random((5, 1)), rng.normal(0.5, 2.0, size=(200, 1))])
    trust = np.array(["tcm"] * 5 + ["lm"] * 200)
    X_prime = X.copy()
    X[0, 0], X_prime[0, 0] = 0.5, 1e20
    estimator = HybridMeanEstimator("lm_only", bounds=(0.0, 1.0), local_reports=True)
    first = estimator.fit(X, trust_group=trust).mean_[0]
    second = estimator.fit(X_prime, trust_group=trust).mean_[0]
    assert first == second


# -- audits of the released estimates -------------------------------------------------

N_FITS = 2_000
N_BINS = 10


def _audit(estimator, X, X_prime, seed, **fit_params):
    return audit_mechanism(
        estimator_release(estimator, X, **fit_params),
        estimator_release(estimator, X_prime, **fit_params),
        1.0, 0.0, n_samples=N_FITS, n_bins=N_BINS, random_state=seed,
    )


def _far_bound_cases():
    for bounds in FAR_BOUNDS:
        for name, estimator in [
            ("tcm_only", HybridMeanEstimator("tcm_only", bounds=bounds)),
            ("mixed", MixedMeanEstimator(bounds=bounds)),
            ("adpm", ADPMEstimator(bounds=bounds)),
        ]:
            yield pytest.param(estimator, bounds, id=f"{name}-{bounds[0]:g}")


@pytest.mark.slow
@pytest.mark.parametrize("estimator, bounds", list(_far_bound_cases()))
def test_release_passes_the_audit_with_bounds_far_from_zero(estimator, bounds):
    X, X_prime = _tailored_neighbours(*bounds)
    result = _audit(estimator, X, X_prime, seed=31)
    assert result.passed, str(result)


@pytest.mark.slow
@pytest.mark.parametrize("estimator, bounds", list(_far_bound_cases())[:3])
def test_audit_fails_with_the_naive_float_sum(monkeypatch, estimator, bounds):
    # Control: the same release from sums of uncentred clipped values is caught.
    monkeypatch.setattr(hybrid_module, "_group_sums", _naive_group_sums)
    monkeypatch.setattr(statistics_module, "fixed_point_sums", _naive_fixed_point_sums)
    X, X_prime = _tailored_neighbours(*bounds)
    result = _audit(estimator, X, X_prime, seed=32)
    assert not result.passed, str(result)


def _local_reports_neighbours():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.random((5, 1)), rng.laplace(0.5, 1.0, size=(200, 1))])
    trust = np.array(["tcm"] * 5 + ["lm"] * 200)
    X_prime = X.copy()
    X[0, 0], X_prime[0, 0] = 0.5, 1e20
    return X, X_prime, trust


@pytest.mark.slow
def test_local_reports_release_passes_the_audit_for_a_huge_raw_tcm_value():
    X, X_prime, trust = _local_reports_neighbours()
    estimator = HybridMeanEstimator(bounds=(0.0, 1.0), local_reports=True)
    result = _audit(estimator, X, X_prime, seed=33, trust_group=trust)
    assert result.passed, str(result)


@pytest.mark.slow
def test_audit_fails_when_the_lm_sum_subtracts_unclipped_tcm_rows(monkeypatch):
    # Control: the old lm sum, all rows' sum minus the unclipped tcm rows' sum.
    def subtracting(X, is_tcm, lower, upper, **kinds):
        sums = fixed_point_moments(X, lower, upper, is_tcm, squares=kinds["squares"],
                                   others=kinds["reports"],
                                   other_squares=kinds["report_squares"])
        return sums._replace(others=X.sum(axis=0) - X[is_tcm].sum(axis=0))

    monkeypatch.setattr(hybrid_module, "_group_sums", subtracting)
    X, X_prime, trust = _local_reports_neighbours()
    estimator = HybridMeanEstimator(bounds=(0.0, 1.0), local_reports=True)
    result = _audit(estimator, X, X_prime, seed=34, trust_group=trust)
    assert not result.passed, str(result)
