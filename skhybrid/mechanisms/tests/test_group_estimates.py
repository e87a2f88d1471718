"""The vectorised central release of many groups is the per-group release, group by group."""

import numpy as np
import pytest

from skhybrid._group_estimates import (
    central_group_mean,
    central_group_means,
    planned_central_noise,
)
from skhybrid.mechanisms import LaplaceMechanism
from skhybrid.mechanisms._families import GAUSSIAN, LAPLACE
from skhybrid.mechanisms._feature_weights import feature_noise_weights, scaled_ranges
from skhybrid.mechanisms._noise import grid_step
from skhybrid.utils._sums import rounding_slack


@pytest.fixture
def groups():
    rng = np.random.default_rng(0)
    sizes = np.array([1, 7, 300, 12_345])
    ranges = np.array([2.0, 0.5])
    centred = rng.uniform(0, 1, size=(4, 2)) * sizes[:, np.newaxis] * ranges
    return centred, sizes, np.array([0.1, 1.0, 3.0, 0.5]), ranges


def test_each_group_gets_the_per_group_noise_variance(groups):
    centred, sizes, epsilons, ranges = groups
    origin = np.array([-1.0, 10.0])
    _, variances = central_group_means(centred, sizes, origin=origin, epsilons=epsilons,
                                       ranges=ranges, rng=np.random.default_rng(1))
    for g in range(len(sizes)):
        single = central_group_mean(centred[g], int(sizes[g]), origin=origin,
                                    mechanism=LAPLACE, epsilon=float(epsilons[g]),
                                    delta=0.0, ranges=ranges, rng=np.random.default_rng(1))
        np.testing.assert_array_equal(variances[g], single.noise_variance)


def test_each_group_is_released_on_its_own_grid_around_its_mean(groups):
    centred, sizes, epsilons, ranges = groups
    origin = np.zeros(2)
    draws = np.stack([
        central_group_means(centred, sizes, origin=origin, epsilons=epsilons, ranges=ranges,
                            rng=np.random.default_rng(seed))[0]
        for seed in range(4000)
    ])
    means = centred / sizes[:, np.newaxis]
    _, variances = central_group_means(centred, sizes, origin=origin, epsilons=epsilons,
                                       ranges=ranges, rng=np.random.default_rng(0))
    # Unbiased, with the stated variance: z-scores from the standard error.
    standard_error = np.sqrt(variances / draws.shape[0])
    assert np.all(np.abs(draws.mean(axis=0) - means) < 5 * standard_error)
    np.testing.assert_allclose(draws.var(axis=0), variances, rtol=0.15)
    # Each feature's noise is in proportion to its range: the variances are in the ratio
    # of the squared ranges.
    np.testing.assert_allclose(variances[:, 0] / variances[:, 1], (ranges[0] / ranges[1]) ** 2)
    # Each group's releases sit on the grid of its own Laplace mechanism (secure noise),
    # in the scaled units, times each feature's weight.
    weights = feature_noise_weights(ranges)
    scaled = scaled_ranges(ranges, weights)
    slack = rounding_slack(scaled)
    for g in range(len(sizes)):
        scale = LaplaceMechanism(epsilon=epsilons[g],
                                 sensitivity=(scaled + sizes[g] * slack).sum() / sizes[g]).scale
        units = draws[:, g, :] / (grid_step(scale) * weights)
        np.testing.assert_allclose(units, np.round(units), rtol=1e-15, atol=1e-3)


def test_a_non_positive_or_infinite_epsilon_is_refused(groups):
    centred, sizes, _, ranges = groups
    with pytest.raises(ValueError, match="finite and > 0"):
        central_group_means(centred, sizes, origin=np.zeros(2), epsilons=np.array(
            [1.0, np.inf, 1.0, 1.0]), ranges=ranges, rng=np.random.default_rng(0))


@pytest.mark.parametrize("ranges", [np.array([2.0]), np.array([2.0, 0.5, 7.0])])
def test_a_planned_noise_releases_what_the_unplanned_release_would(ranges):
    # A fit plans its noise before the charge and releases with the plan: the same
    # mechanism, variance and draws as a release that computes them itself.
    centred = np.linspace(0.1, 0.9, ranges.shape[0]) * 500 * ranges
    arguments = {"mechanism": LAPLACE, "epsilon": 0.7, "delta": 0.0, "ranges": ranges}
    plan = planned_central_noise(500, n_features=ranges.shape[0], **arguments)
    assert plan.variance == plan.mechanism.variance(ranges.shape[0])
    planned = central_group_mean(centred, 500, origin=np.ones_like(ranges), noise=plan,
                                 rng=np.random.default_rng(3), **arguments)
    unplanned = central_group_mean(centred, 500, origin=np.ones_like(ranges),
                                   rng=np.random.default_rng(3), **arguments)
    np.testing.assert_array_equal(planned.mean, unplanned.mean)
    np.testing.assert_array_equal(planned.noise_variance, unplanned.noise_variance)
    # Each feature's noise variance in proportion to its squared range.
    np.testing.assert_allclose(planned.noise_variance / ranges**2,
                               planned.noise_variance[0] / ranges[0] ** 2)


def test_a_plan_is_remembered_by_all_its_public_arguments(monkeypatch):
    # planned_central_noise remembers recent plans: the same arguments give the same
    # plan (the one a fresh computation gives), any other argument its own, a refused
    # plan is refused again, and the memory is emptied when full.
    from skhybrid import _group_estimates

    monkeypatch.setattr(_group_estimates, "_PLANS", {})
    monkeypatch.setattr(_group_estimates, "_MAX_PLANS", 4)
    ranges = np.array([2.0, 0.5])
    arguments = {"mechanism": LAPLACE, "epsilon": 0.7, "delta": 0.0, "ranges": ranges,
                 "n_features": 2}
    plan = planned_central_noise(500, **arguments)
    assert planned_central_noise(500, **{**arguments, "ranges": ranges.copy()}) is plan
    fresh = _group_estimates.central_group_noise(500, mechanism=LAPLACE, epsilon=0.7,
                                                 delta=0.0, ranges=ranges)
    assert plan.mechanism.sensitivity == fresh.sensitivity
    assert plan.variance == fresh.variance(2)
    variants = [
        {"size": 501},
        {"epsilon": 0.8},
        {"ranges": np.array([2.0, 0.25])},
        {"n_features": 3},
        {"magnitude": ranges / 2.0},
        {"mechanism": GAUSSIAN, "delta": 1e-6},
    ]
    for variant in variants:
        given = {"size": 500, **arguments, **variant}
        other = planned_central_noise(given.pop("size"), **given)
        assert other is not plan
        n_features = given.pop("n_features")
        expected = _group_estimates.central_group_noise(**{"size": variant.get("size", 500),
                                                           **given})
        assert type(other.mechanism) is type(expected)
        assert other.mechanism.sensitivity == expected.sensitivity
        assert other.mechanism.epsilon == expected.epsilon
        assert other.variance == expected.variance(n_features)
    assert len(_group_estimates._PLANS) <= 4
    for _ in range(2):
        with pytest.raises(ValueError, match="too small to draw"):
            planned_central_noise(500, **{**arguments, "epsilon": 1e-20})
    assert all(key[2] != 1e-20 for key in _group_estimates._PLANS)
