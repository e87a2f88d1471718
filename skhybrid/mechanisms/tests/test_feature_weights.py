"""The rule that shares a release's noise among its features."""

import numpy as np
import pytest

from skhybrid.mechanisms._feature_weights import (
    feature_noise_weights,
    l2_common_width,
    noise_ranges,
    scaled_ranges,
)

RANGES = np.array([200_000.0, 120.0, 1.0])


def test_one_feature_has_weight_one_exactly():
    assert feature_noise_weights(np.array([2_349_033.0]))[0] == 1.0
    assert feature_noise_weights(np.array([0.3]), l2_common_width)[0] == 1.0
    ranges = np.array([7.0])
    assert scaled_ranges(ranges, feature_noise_weights(ranges)) is ranges


def test_laplace_weights_keep_the_l1_sensitivity_and_equalise_the_scaled_ranges():
    weights = feature_noise_weights(RANGES)
    scaled = RANGES / weights
    np.testing.assert_allclose(scaled, RANGES.sum() / 3)
    np.testing.assert_allclose(scaled.sum(), RANGES.sum())
    # Feature j's noise is that of a one-feature release at epsilon / d: scale d range_j.
    np.testing.assert_allclose(noise_ranges(RANGES), 3 * RANGES)


def test_gaussian_weights_keep_the_l2_sensitivity():
    weights = feature_noise_weights(RANGES, l2_common_width)
    scaled = RANGES / weights
    np.testing.assert_allclose(np.sqrt(np.sum(scaled**2)), np.sqrt(np.sum(RANGES**2)))
    np.testing.assert_allclose(scaled, scaled[0])


def test_scaled_ranges_round_up():
    weights = feature_noise_weights(RANGES)
    assert np.all(scaled_ranges(RANGES, weights) >= RANGES / weights)


def test_private_variance_estimate_is_the_lowered_second_moment_minus_the_squared_mean():
    from skhybrid.mean._hybrid import PRIVATE_VARIANCE_LOWER_Z, private_variance_estimate

    ranges = np.array([1.0])
    # The tcm group alone: E[(x - mid)^2] = 0.1, E[x - mid] = 0.2, so 0.1 - 0.04 = 0.06,
    # lowered by one standard error of its noise (1e-4 + 4 * 0.2**2 * 1e-6).
    tcm_only = private_variance_estimate(
        ranges=ranges, tcm_first=np.array([0.2]), tcm_first_variance=np.array([1e-6]),
        tcm_second=np.array([0.1]), tcm_second_variance=np.array([1e-4]),
        report_first=None, report_second=None, n_reports=0, report_noise_variance=None)
    assert tcm_only[0] == pytest.approx(0.06 - PRIVATE_VARIANCE_LOWER_Z * np.sqrt(1.0016e-4))
    # Reports alone: their second moment minus their noise variance s2.
    reports = private_variance_estimate(
        ranges=ranges, tcm_first=None, tcm_first_variance=None, tcm_second=None,
        tcm_second_variance=None, report_first=np.array([0.0]),
        report_second=np.array([2.1]), n_reports=10**12, report_noise_variance=np.array([2.0]))
    assert reports[0] == pytest.approx(0.1, abs=1e-5)
    # Never above Popoviciu's bound, never below 0.
    high = private_variance_estimate(
        ranges=ranges, tcm_first=np.array([0.0]), tcm_first_variance=np.array([1e-9]),
        tcm_second=np.array([5.0]), tcm_second_variance=np.array([1e-9]),
        report_first=None, report_second=None, n_reports=0, report_noise_variance=None)
    assert high[0] == 0.25


@pytest.mark.parametrize("groups", ["tcm", "reports", "both"])
def test_private_variance_estimate_of_numpy_scalars_is_its_arrays_bit_for_bit(groups):
    # One feature's fit passes numpy float64 scalars (a tenth of the cost): the same
    # value as the 1-element arrays, clipped at 0 and at Popoviciu's bound alike.
    from skhybrid.mean._hybrid import private_variance_estimate

    rng = np.random.default_rng(7)
    for _ in range(300):
        ranges = rng.uniform(0.1, 1e3, 1)
        moments = {"tcm_first": None, "tcm_first_variance": None, "tcm_second": None,
                   "tcm_second_variance": None, "report_first": None,
                   "report_second": None, "n_reports": 0, "report_noise_variance": None}
        if groups != "reports":
            moments.update(tcm_first=rng.normal(0, ranges / 4, 1),
                           tcm_first_variance=rng.uniform(0, 1e-2, 1) * ranges**2,
                           tcm_second=rng.uniform(-0.1, 0.4, 1) * ranges**2,
                           tcm_second_variance=rng.uniform(0, 1e-2, 1) * ranges**4)
        if groups != "tcm":
            moments.update(report_first=rng.normal(0, ranges, 1),
                           report_second=rng.uniform(0, 3, 1) * ranges**2,
                           n_reports=int(rng.integers(1, 10**6)),
                           report_noise_variance=rng.uniform(0, 2, 1) * ranges**2)
        arrays = private_variance_estimate(ranges=ranges, **moments)
        scalars = private_variance_estimate(
            ranges=ranges[0], **{name: value[0] if isinstance(value, np.ndarray) else value
                                 for name, value in moments.items()})
        assert isinstance(scalars, np.float64) and arrays.shape == (1,)
        assert scalars == arrays[0]


@pytest.mark.parametrize("weights", [np.ones(3), feature_noise_weights(RANGES)],
                         ids=["every weight 1", "weights per feature"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_local_release_scales_by_the_weights_as_broadcasting(weights, overwrite):
    """The local randomizers divide by the weights before the noise and multiply after:
    element for element numpy's broadcast (skipped when every weight is 1, where both
    are exact), in place only with ``overwrite``; more rows than one flat block."""
    from skhybrid.mechanisms._local import _divided, _multiplied

    values = np.random.default_rng(0).uniform(-5.0, 5.0, size=(70_001, 3))
    original = values.copy()
    divided = _divided(values, weights, overwrite)
    np.testing.assert_array_equal(divided, original / weights)
    assert np.shares_memory(divided, values) == overwrite
    if not overwrite:
        np.testing.assert_array_equal(values, original)
    multiplied = _multiplied(divided, weights)
    assert multiplied is divided
    np.testing.assert_array_equal(multiplied, (original / weights) * weights)
