"""Local randomizers: the client-side API that users run on their own devices.

A real deployment calls :meth:`privatize` on each device (or on a batch of devices in a
simulation) and sends only the reports to the curator, which then fits an estimator with
``local_reports=True``.
"""

import numpy as np

from ..utils._random import check_random_state
from ..utils._sums import rounding_slack
from ..utils._validation import check_bounds, check_epsilon, clip_to_bounds, feature_wise
from ._calibration import gaussian_noise_multiplier
from ._feature_weights import (
    feature_noise_weights,
    l1_common_width,
    l2_common_width,
    scaled_ranges,
)
from ._noise import gaussian_release, gaussian_variance, laplace_release, laplace_variance


class _LocalRandomizer:
    """Shared logic: validate, clip each user's value to the bounds, add per-user noise."""

    def privatize(self, X, *, epsilon=None, random_state=None):
        """Privatize each user's value on their device.

        Parameters
        ----------
        X : array-like of shape (n_users,) or (n_users, n_features)
            Raw values, one row per user; clipped to the bounds first.
        epsilon : float or array-like of shape (n_users,), default=None
            Each user's privacy level (their total budget over all features); ``None``
            uses the randomizer's ``epsilon``.
        random_state : None, int or numpy.random.Generator, default=None
            ``None`` uses the operating system's secure randomness.

        Returns
        -------
        reports : ndarray of the shape of ``X``
            Unbiased for the clipped values.
        """
        array = np.asarray(X, dtype=np.float64)
        if array.ndim not in (1, 2):
            raise ValueError(f"X must be 1- or 2-dimensional; got shape {array.shape}")
        if not np.all(np.isfinite(array)):
            raise ValueError("X contains NaN or infinity; every user needs a finite value")
        values = array[:, np.newaxis] if array.ndim == 1 else array
        lower, upper = check_bounds(self.bounds, values.shape[1])
        eps = self._user_epsilon(epsilon, values.shape[0])
        rng = check_random_state(random_state)
        # The clipped copy is ours: the reports overwrite it.
        reports = self._release(clip_to_bounds(values, lower, upper), upper - lower, eps, rng,
                                overwrite=True)
        return reports.reshape(array.shape)

    def _privatize_owned(self, values, rng):
        """:meth:`privatize` of a finite float64 (n_users, n_features) array the caller owns
        and gives up: clipped and released in place, without copies."""
        lower, upper = check_bounds(self.bounds, values.shape[1])
        clip_to_bounds(values, lower, upper, out=values)
        return self._release(values, upper - lower, self._user_epsilon(None, values.shape[0]),
                             rng, overwrite=True)

    def noise_variance(self, n_features=1, *, epsilon=None):
        """Variance of the noise added to each coordinate of a user's report.

        Parameters
        ----------
        n_features : int, default=1
        epsilon : float or array-like, default=None
            Privacy levels; ``None`` uses the randomizer's ``epsilon``.

        Returns
        -------
        variance : float or ndarray of the shape of ``epsilon``
        """
        lower, upper = check_bounds(self.bounds, n_features)
        eps = self._user_epsilon(epsilon, None)
        return self._variance(upper - lower, eps)

    def _user_epsilon(self, epsilon, n_users):
        if epsilon is None:
            return check_epsilon(self.epsilon)
        if np.ndim(epsilon) == 0:
            return check_epsilon(epsilon)
        return check_epsilon(epsilon, n_users if n_users is not None else len(epsilon))

    # A subclass gives its norm's box width (``_width``), the common width of
    # feature_noise_weights, and its noise (``_add_noise``, ``_noise_variance``).

    def _release(self, values, ranges, eps, rng, overwrite=False):
        if ranges.shape[0] == 1:
            return self._add_noise(values, self._width(ranges), eps, rng, overwrite)
        # Several features: noise in proportion to each feature's range (see
        # feature_noise_weights), on the values divided by the weights.
        weights = feature_noise_weights(ranges, self._common_width)
        scaled = _divided(values, weights, overwrite)
        released = self._add_noise(scaled, self._scaled_sensitivity(ranges, weights), eps, rng,
                                   True)
        return _multiplied(released, weights)

    def _scaled_sensitivity(self, ranges, weights):
        """Width of the scaled box, plus the rounding of the division by the weights."""
        lower, upper = check_bounds(self.bounds, ranges.shape[0])
        magnitude = np.maximum(np.abs(lower), np.abs(upper)) / weights
        return float(self._width(scaled_ranges(ranges, weights))
                     + np.sum(rounding_slack(magnitude, 2)))

    def _variance(self, ranges, eps):
        if ranges.shape[0] == 1:
            return self._noise_variance(self._width(ranges), eps, 1)
        weights = feature_noise_weights(ranges, self._common_width)
        variance = self._noise_variance(self._scaled_sensitivity(ranges, weights), eps,
                                        ranges.shape[0])
        return np.multiply.outer(variance, weights**2)


def _divided(values, weights, overwrite):
    """``values / weights`` per feature: in place with ``overwrite``, else a new array.

    Every weight is 1 when every feature has the same range (bounds given as scalars):
    the division is then exact and skipped. Otherwise it runs on flat blocks
    (:func:`~skhybrid.utils._validation.feature_wise`: numpy's broadcast of one weight
    per feature over few columns runs a loop of ``n_features`` values per row). The
    result is the same, element for element, either way.
    """
    if np.all(weights == 1.0):
        return values if overwrite else values.copy()
    return feature_wise(np.divide, values, weights, out=values if overwrite else None)


def _multiplied(released, weights):
    """``released * weights`` per feature, in place (skipped when every weight is 1, as
    in :func:`_divided`)."""
    if np.all(weights == 1.0):
        return released
    return feature_wise(np.multiply, released, weights, out=released)


class LocalLaplaceRandomizer(_LocalRandomizer):
    """Local Laplace randomizer: each user's report is epsilon_i-DP for that user alone.

    A user's whole value vector is one record: neighbouring inputs are any two points of
    the box ``[lower, upper]``. For one feature the report gets Laplace noise of scale
    ``(upper - lower) / epsilon_i``. For d features each coordinate gets noise in
    proportion to its own range, ``d * (upper_j - lower_j) / epsilon_i`` (an even split
    of the user's budget over the features; docs/privacy.rst), so every feature has the
    same error relative to its range.

    Parameters
    ----------
    bounds : tuple (lower, upper)
        Scalars or per-feature arrays; values are clipped to them before noise.
    epsilon : float, default=1.0
        The default privacy level; ``privatize`` accepts one per user.
    secure : bool, default=True
        Grid-rounded discrete noise (see docs/privacy.rst); ``False`` for fast simulation.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.mechanisms import LocalLaplaceRandomizer
    >>> randomizer = LocalLaplaceRandomizer(bounds=(0.0, 1.0), epsilon=1.0)
    >>> reports = randomizer.privatize(np.array([0.2, 0.9, 3.0]), random_state=0)
    >>> reports.shape
    (3,)
    """

    def __init__(self, *, bounds, epsilon=1.0, secure=True):
        self.bounds = bounds
        self.epsilon = epsilon
        self.secure = secure

    _common_width = staticmethod(l1_common_width)
    _width = staticmethod(np.sum)  # L1

    def _add_noise(self, values, sensitivity, eps, rng, overwrite):
        return laplace_release(values, sensitivity, eps, rng, self.secure, overwrite=overwrite)

    def _noise_variance(self, sensitivity, eps, n_coordinates):
        return laplace_variance(sensitivity, eps, n_coordinates, self.secure)


class LocalGaussianRandomizer(_LocalRandomizer):
    """Local Gaussian randomizer: each user's report is (epsilon_i, delta)-DP for that user.

    Neighbouring inputs are any two points of the box ``[lower, upper]``: the L2
    sensitivity is ``sqrt(sum((upper - lower)**2))``.

    Parameters
    ----------
    bounds : tuple (lower, upper)
    epsilon : float, default=1.0
    delta : float, default=1e-6
        In (0, 1).
    calibration : {"analytic", "classic"}, default="analytic"
        See :func:`skhybrid.mechanisms.gaussian_noise_multiplier`.
    secure : bool, default=True
    """

    def __init__(self, *, bounds, epsilon=1.0, delta=1e-6, calibration="analytic", secure=True):
        self.bounds = bounds
        self.epsilon = epsilon
        self.delta = delta
        self.calibration = calibration
        self.secure = secure

    def _multiplier(self, eps):
        return gaussian_noise_multiplier(eps, self.delta, self.calibration)

    _common_width = staticmethod(l2_common_width)

    @staticmethod
    def _width(ranges):  # L2
        return np.sqrt(np.sum(ranges**2))

    def _add_noise(self, values, sensitivity, eps, rng, overwrite):
        return gaussian_release(values, sensitivity, self._multiplier(eps), rng, self.secure,
                                overwrite=overwrite)

    def _noise_variance(self, sensitivity, eps, n_coordinates):
        return gaussian_variance(sensitivity, self._multiplier(eps), n_coordinates, self.secure)
