"""How a release of several features shares its noise among them.

The rule is in :func:`feature_noise_weights`; the central mechanisms
(:mod:`skhybrid._group_estimates`) and the local randomizers apply it.
"""

import numpy as np


def l1_common_width(ranges):
    """``sum(ranges) / d``: scaled to it, the features keep their summed (L1) width."""
    return np.sum(ranges) / ranges.shape[-1]


def l2_common_width(ranges):
    """``sqrt(sum(ranges**2) / d)``: scaled to it, the features keep their L2 width."""
    return np.sqrt(np.sum(ranges**2) / ranges.shape[-1])


def feature_noise_weights(ranges, common_width=l1_common_width):
    """Each feature's share of the noise: ``w_j`` with ``ranges / w`` equal across features.

    A release of several features adds noise to ``statistic / w`` with a mechanism
    calibrated to the scaled ranges ``ranges / w`` (all equal to a common width ``a``)
    and multiplies the result back by ``w``: feature j's noise is then in proportion to
    its own range, and every feature gets the same error relative to its range.

    For Laplace (:func:`l1_common_width`), ``a = sum(ranges) / d``: the scaled statistic
    has the same L1 sensitivity as the unscaled one, and feature j's noise scale is
    ``d * range_j / (n epsilon)``, the scale of a one-feature release at
    ``epsilon / d`` (an even split of the budget, basic composition). For Gaussian
    (:func:`l2_common_width`), ``a = sqrt(sum(ranges**2) / d)`` keeps the L2
    sensitivity, and feature j's noise is ``sqrt(d) * range_j`` times the one-feature
    multiplier. One feature: ``w = 1`` exactly, and nothing changes.

    The even split minimises the sum over features of the squared error relative to
    the range (minimise ``sum_j 1 / epsilon_j**2`` subject to ``sum_j epsilon_j =
    epsilon``).

    Parameters
    ----------
    ranges : ndarray of shape (n_features,)
    common_width : callable, default=l1_common_width
        The mechanism's common width (its noise family's ``common_width``).

    Returns
    -------
    weights : ndarray of shape (n_features,)
    """
    ranges = np.asarray(ranges, dtype=np.float64)
    if ranges.shape[-1] == 1:
        return np.ones_like(ranges)
    return ranges / common_width(ranges)


def scaled_ranges(ranges, weights):
    """``ranges / weights``, rounded up: the scaled statistic's ranges, for its sensitivity.

    The division rounds by at most half an ulp; a relative ``2**-50`` covers it (and
    the division of the statistic by ``weights``, which the rounding slack covers too).
    """
    if (weights == 1.0).all():
        return ranges
    return ranges / weights * (1.0 + 2.0**-50)


def noise_ranges(ranges):
    """The range each feature's Laplace noise is calibrated to: ``sum(ranges) * w_j``.

    Equal to ``d * range_j``: a one-feature formula for the error of a Laplace release
    (an expected MSE, mixing weights) evaluated at this range gives feature j's error
    in a release of all ``d`` features. One feature: its range.

    Parameters
    ----------
    ranges : ndarray of shape (n_features,)

    Returns
    -------
    noise_ranges : ndarray of shape (n_features,)
    """
    ranges = np.asarray(ranges, dtype=np.float64)
    return np.sum(ranges) * feature_noise_weights(ranges)
