"""The privacy budget of one HybridKMeans fit (Avent, Dubey and Korolova 2020, Algorithm 1).

The sensitivity and mechanism of one iteration's tcm release, and the share of an lm
user's budget spent on each of its releases.
"""

import math

import numpy as np

from ..mechanisms import LaplaceMechanism
from ..mechanisms._feature_weights import feature_noise_weights, scaled_ranges
from ..utils._sums import rounding_slack


#: The L1 change of one iteration's counts when a user is replaced: two counts by one.
COUNT_SENSITIVITY = 2.0


def central_sum_weights(ranges):
    """Each feature's noise weight in one iteration's tcm release, relative to the counts'.

    The release has ``d + 1`` parts: the counts, which a replaced user changes by ``2``
    in L1 (:data:`COUNT_SENSITIVITY`), and each feature's centred sums, changed by at
    most ``range_j`` (:func:`central_iteration_sensitivity`). The means' rule
    (:func:`~skhybrid.mechanisms._feature_weights.feature_noise_weights`) on the ranges
    ``(range_1, ..., range_d, 2)``, divided by the counts' weight (the counts, exact
    integers, are released as they are): feature j's sums are divided by
    ``w_j = range_j / 2`` before the noise and multiplied back after it.

    **Proof that the budget is split evenly.** The scaled statistic (counts, and each
    feature's sums over ``w_j``) changes by at most ``2`` in every part, so its L1
    sensitivity is ``2 (d + 1)`` whatever the units, and one Laplace draw of scale
    ``b = 2 (d + 1) tau / epsilon`` is ``epsilon / tau``-DP for it (the Laplace
    mechanism; post-processing covers the multiplication back). Feature j's sums then
    carry noise of scale ``w_j b = range_j (d + 1) tau / epsilon`` and the counts
    ``2 (d + 1) tau / epsilon``: each part's noise is its own range at a budget of
    ``epsilon / ((d + 1) tau)``, the even split of basic composition, which minimises
    the sum of the parts' squared errors relative to their ranges (the argument of
    :func:`~skhybrid.mechanisms._feature_weights.feature_noise_weights`). A cluster
    mean's error is ``(Y_sum_j - mu_j Y_count) / count`` with ``|mu_j| <= range_j / 2``,
    so in units of ``range_j`` a count's noise weighs as a part of range ``2``: the
    split puts no feature, and not the counts, under the noise of another's units
    (Algorithm 1's one scale ``(sum(ranges) + 2) tau / epsilon`` for all parts gives
    the counts and ages noise of the order of a dollar range).

    Parameters
    ----------
    ranges : ndarray of shape (n_features,)

    Returns
    -------
    weights : ndarray of shape (n_features,)
    """
    ranges = np.asarray(ranges, dtype=np.float64)
    weights = feature_noise_weights(np.append(ranges, COUNT_SENSITIVITY))
    return weights[:-1] / weights[-1]


def central_iteration_sensitivity(ranges, n_users=1):
    """L1 sensitivity of one iteration's tcm release: all clusters' counts and scaled sums.

    Algorithm 1 (Avent et al. 2020, Appendix E, line 2) calibrates the tcm noise to
    ``m d + 1``: the L1 norm of a value in ``[0, m]^d`` plus one count, the change when a
    user is *added or removed*. skhybrid's neighbours *replace* a user. The sums are taken
    of the values minus the middle of the box, each of L1 norm at most
    ``sum(ranges) / 2``. A user who moves to another cluster changes two counts by one
    and two centred sums by at most ``range_j / 2`` each in feature j; a user who stays
    changes one centred sum by at most ``range_j``. Each feature's sums are released
    divided by their weight :func:`central_sum_weights` (``range_j / 2``), so they change
    by at most ``2`` each, as the counts do. Hence

        sensitivity = 2 d + 2,

    the same in any units (the unscaled statistic's would be ``sum(ranges) + 2``).

    In floating point: the counts are exact integers, and the centred sums are
    computed exactly in fixed point (:mod:`skhybrid.utils._sums`, centred on the middle
    of the grid in integers) and then converted to floats and divided by the weights,
    which rounds each scaled sum, of magnitude at most ``n_users * range / (2 w)``, by a
    few units in its last place. A user changes at most two sums per feature, so each
    feature's term gains twice :func:`~skhybrid.utils._sums.rounding_slack` of that
    magnitude, and the total is rounded up: the statistic the noise is added to moves by
    at most this much, in float64, for any bounds.

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
    weights = central_sum_weights(ranges)
    scaled = scaled_ranges(ranges, weights)
    n_operations = 4 if (weights == 1.0).all() else 5
    slack = 2.0 * rounding_slack(n_users * scaled / 2.0, n_operations)
    return float(np.nextafter(math.fsum([*(scaled + slack), COUNT_SENSITIVITY]), np.inf))


def central_iteration_mechanism(ranges, n_iter, epsilon, n_users=1):
    """The Laplace mechanism of one iteration's tcm counts and sums (Algorithm 1, lines 9-10).

    Each of the ``n_iter`` iterations spends ``epsilon / n_iter`` of a tcm user's budget:
    scale ``b_T = (2 d + 2) n_iter / epsilon`` on the counts and the weighted sums
    (:func:`central_sum_weights`), so feature j's sums get
    ``range_j (d + 1) n_iter / epsilon``.

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
