"""The trust model in one place: each group's private estimate of its mean.

tcm users' values reach the curator, which clips them and adds central noise to their
mean (:func:`central_group_mean`); lm users' values are randomized on their devices by a
local randomizer (:func:`privatize_locally`) and the curator averages the reports
(:func:`reported_group_mean`). Estimators combine these estimates; none adds noise
anywhere else.

Neighbouring relation: replace one user's value, with n and the group sizes public.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .mechanisms import GaussianMechanism, LaplaceMechanism
from .mechanisms._families import LAPLACE
from .mechanisms._feature_weights import feature_noise_weights, scaled_ranges
from .mechanisms._noise import laplace_release, laplace_variance
from .utils._memory import remember
from .utils._sums import float_column_sums, per_feature, rounding_slack
from .utils._validation import masked_rows

@dataclass(frozen=True)
class GroupEstimate:
    """A group's private mean and the variance of the privacy noise in it.

    Attributes
    ----------
    mean : ndarray of shape (n_features,)
    noise_variance : ndarray of shape (n_features,)
        Variance of the noise in ``mean`` (not of the data).
    size : int
    """

    mean: np.ndarray
    noise_variance: np.ndarray
    size: int


def central_mechanism(mechanism, *, epsilon, delta, ranges, group_size):
    """The central mechanism releasing the mean of ``group_size`` clipped tcm values.

    Replacing one user moves each coordinate of the mean by at most
    ``range_j / group_size``: the noise family's sensitivity of that mean (L1 for
    Laplace, L2 for Gaussian).
    """
    return mechanism.central(epsilon=epsilon, delta=delta,
                             sensitivity=mechanism.mean_sensitivity(ranges, group_size))


def slack_ranges(ranges, size, magnitude=None):
    """``ranges`` plus the rounding slack of a centred mean, charged on the sensitivity.

    Conversion, scaling and division round by a few ulps of the centred mean (bounded
    by ``magnitude``, else ``ranges``); over ``size`` users that is ``size`` times the
    slack per coordinate. ``size`` may be one size or an array of sizes (one row each).
    """
    slack = rounding_slack(ranges if magnitude is None else magnitude)
    return ranges + np.multiply.outer(size, slack)


def central_group_mean(centred_sum, size, *, origin, mechanism, epsilon, delta, ranges, rng,
                       magnitude=None, noise=None):
    """Private mean of ``size`` clipped tcm values under the central model.

    The noise is added to the mean of the centred values (``x - origin``, from exact
    fixed-point sums) and ``origin`` added afterwards: rounding acts on a quantity
    bounded by the ranges, and its slack is charged on top of the sensitivity.

    Parameters
    ----------
    centred_sum : ndarray of shape (n_features,)
        Sum of the group's clipped values minus ``origin`` each.
    size : int or float
        Group size (public), > 0.
    origin : ndarray of shape (n_features,)
        The public centre of ``centred_sum`` (the lower bound, or the midpoint).
    mechanism : NoiseFamily
        :mod:`skhybrid.mechanisms._families`, resolved by the estimator's fit.
    epsilon : float
        The group's privacy level.
    delta : float
        Used by the Gaussian mechanism.
    ranges : ndarray of shape (n_features,)
        ``upper - lower``.
    rng : numpy.random.Generator
    magnitude : ndarray of shape (n_features,), default=None
        A public bound on ``|centred_sum| / size``; None means ``ranges`` (the centred
        mean of values centred on the lower bound).
    noise : PlannedNoise, default=None
        :func:`planned_central_noise` of the same arguments, when the caller computed
        it before the charge (a fit's plan); None computes it here.

    Returns
    -------
    estimate : GroupEstimate
    """
    n_features = centred_sum.shape[0]
    if noise is None:
        noise = planned_central_noise(size, mechanism=mechanism, epsilon=epsilon, delta=delta,
                                      ranges=ranges, n_features=n_features, magnitude=magnitude)
    # Each feature's noise in proportion to its range (feature_noise_weights): the
    # mechanism releases the mean divided by the weights, calibrated to the scaled
    # ranges (a division and a product by weights of 1 are exact).
    weights = feature_noise_weights(ranges, mechanism.common_width)
    released = noise.mechanism.randomise(centred_sum / size / weights, random_state=rng)
    return GroupEstimate(mean=released * weights + origin,
                         noise_variance=noise.variance * weights**2, size=size)


def central_group_noise(size, *, mechanism, epsilon, delta, ranges, magnitude=None):
    """The mechanism :func:`central_group_mean` adds to a group's centred mean divided
    by the features' noise weights (public quantities only)."""
    magnitude = ranges if magnitude is None else magnitude
    weights = feature_noise_weights(ranges, mechanism.common_width)
    ranges, magnitude = scaled_ranges(ranges, weights), scaled_ranges(magnitude, weights)
    return central_mechanism(mechanism, epsilon=epsilon, delta=delta,
                             ranges=slack_ranges(ranges, size, magnitude), group_size=size)


class PlannedNoise(NamedTuple):
    """A group's central mechanism and its noise variance per coordinate (public)."""

    mechanism: LaplaceMechanism | GaussianMechanism
    variance: float


#: Recent plans of :func:`planned_central_noise`, by their public arguments.
_PLANS = {}
_MAX_PLANS = 256
_PLAN_SCALARS = (int, float, np.integer, np.floating)


def planned_central_noise(size, *, mechanism, epsilon, delta, ranges, n_features,
                          magnitude=None):
    """:func:`central_group_noise` and its variance for a release of ``n_features``
    coordinates: computed before the charge (the variance refuses a noise too wide to
    draw) and passed to :func:`central_group_mean`.

    Remembered by its public arguments (a grid search plans the same release again
    and again); a plan holds no randomness, and a refused one is not remembered.
    """
    key = None
    if (isinstance(size, _PLAN_SCALARS) and isinstance(epsilon, _PLAN_SCALARS)
            and isinstance(delta, _PLAN_SCALARS)):
        ranges = np.asarray(ranges, dtype=np.float64)
        key = (size, mechanism, epsilon, delta, n_features, ranges.shape, ranges.tobytes(),
               None if magnitude is None
               else np.asarray(magnitude, dtype=np.float64).tobytes())
        plan = _PLANS.get(key)
        if plan is not None:
            return plan
    noise = central_group_noise(size, mechanism=mechanism, epsilon=epsilon, delta=delta,
                                ranges=ranges, magnitude=magnitude)
    plan = PlannedNoise(noise, noise.variance(n_features))
    if key is not None:
        remember(_PLANS, key, plan, _MAX_PLANS)
    return plan


def _scaled(values, weights):
    """``values / weights`` (``values`` itself for one feature: bit-identical releases)."""
    return values if (weights == 1.0).all() else values / weights


def _unscaled(values, weights):
    return values if (weights == 1.0).all() else values * weights


def central_group_means(centred_sums, sizes, *, origin, epsilons, ranges, rng):
    """Laplace-private means of many tcm groups at once: :func:`central_group_mean` vectorised.

    Group ``g`` gets what ``central_group_mean(centred_sums[g], sizes[g],
    mechanism=LAPLACE, epsilon=epsilons[g], ...)`` gives it, without a Python call per group.

    Parameters
    ----------
    centred_sums : ndarray of shape (n_groups, n_features)
    sizes : ndarray of shape (n_groups,)
        Public group sizes, > 0.
    origin : ndarray of shape (n_features,)
    epsilons : ndarray of shape (n_groups,)
        Finite privacy levels, > 0.
    ranges : ndarray of shape (n_features,)
    rng : numpy.random.Generator

    Returns
    -------
    means : ndarray of shape (n_groups, n_features)
    noise_variances : ndarray of shape (n_groups, n_features)
        Variance of each group's noise, per coordinate (in proportion to the squared
        ranges, :func:`~skhybrid.mechanisms._feature_weights.feature_noise_weights`).
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    epsilons = np.asarray(epsilons, dtype=np.float64)
    n_features = centred_sums.shape[1]
    weights = feature_noise_weights(ranges)
    sensitivity = _group_means_sensitivity(sizes, epsilons, ranges, weights)
    variances = laplace_variance(sensitivity, epsilons, n_features, True)
    means = _unscaled(laplace_release(_scaled(centred_sums / sizes[:, np.newaxis], weights),
                                      sensitivity, epsilons, rng, secure=True), weights) + origin
    return means, np.multiply.outer(variances, weights**2)


def central_group_means_variance(sizes, *, epsilons, ranges):
    """Per-coordinate noise variance of each group of :func:`central_group_means`."""
    sizes = np.asarray(sizes, dtype=np.float64)
    epsilons = np.asarray(epsilons, dtype=np.float64)
    weights = feature_noise_weights(ranges)
    sensitivity = _group_means_sensitivity(sizes, epsilons, ranges, weights)
    return np.multiply.outer(laplace_variance(sensitivity, epsilons, np.shape(ranges)[0], True),
                             weights**2)


def _group_means_sensitivity(sizes, epsilons, ranges, weights):
    if not np.all(np.isfinite(epsilons) & (epsilons > 0)):
        raise ValueError("every group's epsilon must be finite and > 0")
    return LAPLACE.mean_sensitivity(slack_ranges(scaled_ranges(ranges, weights), sizes), sizes)


def local_report_variance(mechanism, *, epsilon, delta, lower, upper):
    """Per-coordinate variance of one lm user's local noise, ndarray of shape (n_features,)."""
    randomizer = mechanism.local_randomizer(epsilon=epsilon, delta=delta, lower=lower, upper=upper)
    return per_feature(randomizer.noise_variance(lower.shape[0]), lower.shape[0], copy=True)


def privatize_locally(values, *, mechanism, epsilon, delta, lower, upper, rng, owned=False):
    """What lm users' devices send: their clipped values plus local noise.

    ``owned=True``: ``values`` is a finite float64 2-d array that the caller made for
    this call (for example ``X[lm_rows]``); it is clipped and noised in place.
    """
    randomizer = mechanism.local_randomizer(epsilon=epsilon, delta=delta, lower=lower, upper=upper)
    if owned:
        return randomizer._privatize_owned(values, rng)
    return randomizer.privatize(values, random_state=rng)


#: Rows of ``X`` privatized at once by :func:`privatized_sum` (their reports stay in cache).
_PRIVATIZE_ROWS = 2**16


def privatized_sum(X, rows, *, mechanism, epsilon, delta, lower, upper, rng, squares_about=None):
    """The column sums of :func:`privatize_locally` of ``X[rows]``, without the reports.

    Privatized block by block, in order (Laplace draws as one call on ``X[rows]``).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Raw values (never modified).
    rows : ndarray of bool of shape (n_samples,)
    mechanism, epsilon, delta, lower, upper, rng
        As in :func:`privatize_locally`.
    squares_about : ndarray of shape (n_features,), default=None
        Also sum the reports' squared distances to this point (post-processing of the
        reports: for a private variance estimate).

    Returns
    -------
    sums : ndarray of shape (n_features,)
    square_sums : ndarray of shape (n_features,)
        Only with ``squares_about``.
    """
    sums = np.zeros(X.shape[1])
    square_sums = np.zeros(X.shape[1])
    for reports in _privatized_blocks(X, rows, mechanism=mechanism, epsilon=epsilon,
                                      delta=delta, lower=lower, upper=upper, rng=rng):
        sums += float_column_sums(reports)
        if squares_about is not None:
            square_sums += square_sum_about(reports, squares_about)
    return sums if squares_about is None else (sums, square_sums)


def privatized_rows(X, rows, *, mechanism, epsilon, delta, lower, upper, rng, centre=None,
                    dtype=np.float64):
    """:func:`privatize_locally` of ``X[rows]``, made block by block: no clipped copy.

    With ``centre``, each report minus ``centre``, stored as ``dtype`` (post-processing).

    Returns
    -------
    reports : ndarray of dtype ``dtype`` of shape (rows.sum(), n_features)
    """
    reports = np.empty((int(np.count_nonzero(rows)), X.shape[1]), dtype=dtype)
    position = 0
    for block in _privatized_blocks(X, rows, mechanism=mechanism, epsilon=epsilon,
                                    delta=delta, lower=lower, upper=upper, rng=rng):
        if centre is not None:
            block -= centre  # the block is the randomizer's own array
        reports[position : position + block.shape[0]] = block
        position += block.shape[0]
    return reports


def _privatized_blocks(X, rows, *, mechanism, epsilon, delta, lower, upper, rng):
    """The reports of ``X[rows]``, privatized in order, ``_PRIVATIZE_ROWS`` rows of X at a time."""
    randomizer = mechanism.local_randomizer(epsilon=epsilon, delta=delta, lower=lower,
                                            upper=upper)
    for start in range(0, X.shape[0], _PRIVATIZE_ROWS):
        block = masked_rows(X[start : start + _PRIVATIZE_ROWS],
                            rows[start : start + _PRIVATIZE_ROWS])
        if block.shape[0]:
            yield randomizer._privatize_owned(block, rng)


def square_sum_about(values, centre):
    """``sum_i (values_i - centre)**2`` per column (the squared values are not kept)."""
    centred = values - centre
    np.square(centred, out=centred)
    return float_column_sums(centred)


def reported_group_mean(report_sum, size, report_variance):
    """The mean of lm users' reports; its noise variance is ``report_variance / size``."""
    return GroupEstimate(mean=report_sum / size, noise_variance=report_variance / size, size=size)
