"""The privacy budget of one HybridKMeans fit (Avent, Dubey and Korolova 2020, Algorithm 1).

The sensitivity and mechanism of one iteration's tcm release, and the share of an lm
user's budget spent on each of its releases.
"""

import math

import numpy as np

from ..mechanisms import LaplaceMechanism
from ..mechanisms._feature_weights import feature_noise_weights, scaled_ranges
from ..utils._sums import rounding_slack


def central_iteration_sensitivity(ranges, n_users=1):
    """L1 sensitivity of one iteration's tcm release: all clusters' counts and centred sums.

    Algorithm 1 (Avent et al. 2020, Appendix E, line 2) calibrates the tcm noise to
    ``m d + 1``: the L1 norm of a value in ``[0, m]^d`` plus one count, the change when a
    user is *added or removed*. skhybrid's neighbours *replace* a user. The sums are taken
    of the values minus the middle of the box, each of L1 norm at most
    ``sum(ranges) / 2``. A user who moves to another cluster changes two counts by one
    and two centred sums by at most ``sum(ranges) / 2`` each; a user who stays changes
    one centred sum by at most ``sum(ranges)``. Hence

        sensitivity = sum(upper - lower) + 2,

    where ``sum(upper - lower)`` (the L1 diameter of the box) is the paper's ``m d`` for
    per-feature bounds.

    Several features: the sums are released divided by each feature's noise weight
    (:func:`~skhybrid.mechanisms._feature_weights.feature_noise_weights`), so that each
    feature's noise is in proportion to its range; the scaled ranges have the same L1
    sum, and the division's rounding is one more operation in the slack.

    In floating point: the counts are exact integers, and the centred sums are
    computed exactly in fixed point (:mod:`skhybrid.utils._sums`, centred on the middle
    of the grid in integers) and then converted to floats, which rounds each sum, of
    magnitude at most ``n_users * range / 2``, by a few units in its last place. A user
    changes at most two sums per feature, so each feature's term gains twice
    :func:`~skhybrid.utils._sums.rounding_slack` of that magnitude, and the total is
    rounded up: the statistic the noise is added to moves by at most this much, in
    float64, for any bounds.

    Parameters
    ----------
    ranges : ndarray of shape (n_features,)
        ``upper - lower``.
    n_users : int, default=1
        The number of users in the release (public): bounds the sums' magnitude.

    Returns
    -------
    sensitivity : float
    """
    ranges = np.asarray(ranges, dtype=np.float64)
    weights = feature_noise_weights(ranges)
    scaled = scaled_ranges(ranges, weights)
    n_operations = 4 if ranges.shape[0] == 1 else 5
    slack = 2.0 * rounding_slack(n_users * scaled / 2.0, n_operations)
    return float(np.nextafter(math.fsum([*(scaled + slack), 2.0]), np.inf))


def central_iteration_mechanism(ranges, n_iter, epsilon, n_users=1):
    """The Laplace mechanism of one iteration's tcm counts and sums (Algorithm 1, lines 9-10).

    Each of the ``n_iter`` iterations spends ``epsilon / n_iter`` of a tcm user's budget,
    so the Laplace scale is ``b_T = (sum(ranges) + 2) n_iter / epsilon``: Algorithm 1's
    ``(m d + 1) tau / epsilon`` under replacement (see
    :func:`central_iteration_sensitivity`). Counts and sums share the scale, as in the
    paper.

    Parameters
    ----------
    ranges : ndarray of shape (n_features,)
    n_iter : int
    epsilon : float
        The tcm users' total budget.
    n_users : int, default=1
        The number of tcm users (public; see :func:`central_iteration_sensitivity`).

    Returns
    -------
    mechanism : skhybrid.mechanisms.LaplaceMechanism
    """
    sensitivity = central_iteration_sensitivity(ranges, n_users)
    return LaplaceMechanism(epsilon=epsilon / n_iter, sensitivity=sensitivity)


def local_release_epsilon(epsilon, n_iter):
    """An lm user's budget for each local release: ``epsilon / (tau + 1)`` (Algorithm 1).

    The user spends it once on their Laplace-noised report (line 4: scale
    ``b_L = m d (tau + 1) / epsilon``, with ``m d = sum(upper - lower)``) and once per
    iteration on the randomized response of their nearest centre (line 7).

    Parameters
    ----------
    epsilon : float or ndarray
        The users' total budget.
    n_iter : int

    Returns
    -------
    epsilon : float or ndarray
    """
    return epsilon / (n_iter + 1)
