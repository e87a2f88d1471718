"""The noise families behind the estimators' ``mechanism`` parameter."""

import numpy as np
import pytest

from skhybrid import HybridMeanEstimator
from skhybrid.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    LocalGaussianRandomizer,
    LocalLaplaceRandomizer,
    gaussian_noise_multiplier,
)
from skhybrid.mechanisms._families import GAUSSIAN, LAPLACE, NOISE_FAMILIES, get_noise_family

RANGES = np.array([2.0, 0.5, 1.0])


def test_an_unknown_mechanism_name_raises_instead_of_falling_back():
    with pytest.raises(ValueError, match=r"mechanism must be one of \['gaussian', 'laplace'\]"):
        get_noise_family("staircase")
    assert get_noise_family("laplace") is LAPLACE and get_noise_family("gaussian") is GAUSSIAN


def test_the_estimators_parameter_accepts_exactly_the_families():
    constraint = HybridMeanEstimator._parameter_constraints["mechanism"][0]
    assert constraint.options == set(NOISE_FAMILIES)


def test_laplace_calibrates_to_the_l1_sensitivity_of_a_mean():
    sensitivity = LAPLACE.mean_sensitivity(RANGES, 100)
    assert sensitivity == pytest.approx(3.5 / 100)
    central = LAPLACE.central(epsilon=0.5, delta=0.0, sensitivity=sensitivity)
    assert isinstance(central, LaplaceMechanism) and central.scale == pytest.approx(0.07)
    assert central.variance(1) == pytest.approx(2 * 0.07**2, rel=1e-3)
    randomizer = LAPLACE.local_randomizer(epsilon=0.5, delta=0.0, lower=np.zeros(3),
                                          upper=RANGES)
    assert isinstance(randomizer, LocalLaplaceRandomizer) and randomizer.epsilon == 0.5


def test_gaussian_calibrates_to_the_l2_sensitivity_of_a_mean():
    sensitivity = GAUSSIAN.mean_sensitivity(RANGES, 100)
    assert sensitivity == pytest.approx(np.sqrt(5.25) / 100)
    central = GAUSSIAN.central(epsilon=0.5, delta=1e-6, sensitivity=sensitivity)
    assert isinstance(central, GaussianMechanism)
    assert central.sigma == pytest.approx(sensitivity * gaussian_noise_multiplier(0.5, 1e-6))
    randomizer = GAUSSIAN.local_randomizer(epsilon=0.5, delta=1e-6, lower=np.zeros(3),
                                           upper=RANGES)
    assert isinstance(randomizer, LocalGaussianRandomizer) and randomizer.delta == 1e-6


def test_the_common_width_keeps_the_family_sensitivity_norm():
    for family, norm in ((LAPLACE, 1), (GAUSSIAN, 2)):
        width = family.common_width(RANGES)
        assert np.full(3, width) @ np.full(3, width) ** (norm - 1) == pytest.approx(
            np.sum(RANGES**norm))


def test_costs_charge_each_used_users_level_and_skip_public_and_unused_users():
    levels = np.array([0.5, 1.0, np.inf, 2.0])
    charged = np.array([True, True, True, False])
    laplace = LAPLACE.release_cost(levels, delta=0.0, n_users=4, charged=charged)
    np.testing.assert_array_equal(laplace.epsilon, [0.5, 1.0, 0.0, 0.0])
    assert laplace.mechanism == "laplace" and laplace.noise_multiplier is None
    assert LAPLACE.release_cost(0.7, delta=0.0, n_users=4).epsilon == 0.7
    gaussian = GAUSSIAN.release_cost(levels, delta=1e-6, n_users=4, charged=charged)
    np.testing.assert_array_equal(gaussian.epsilon, np.zeros(4))
    np.testing.assert_array_equal(
        gaussian.noise_multiplier,
        [gaussian_noise_multiplier(0.5, 1e-6), gaussian_noise_multiplier(1.0, 1e-6),
         np.inf, np.inf])
    assert gaussian.mechanism == "gaussian"


@pytest.mark.parametrize("family, delta, message", [(LAPLACE, 1e-6, "leave delta=0"),
                                                    (GAUSSIAN, 0.0, "delta in")])
def test_a_delta_the_family_cannot_use_is_refused(family, delta, message):
    with pytest.raises(ValueError, match=message):
        family.check_delta(delta)
