"""Central (trusted-curator) noise mechanisms for a vector statistic."""

import numpy as np

from ..utils._random import check_random_state
from ..utils._validation import check_epsilon
from ._calibration import gaussian_noise_multiplier
from ._noise import gaussian_release, gaussian_variance, laplace_release, laplace_variance


def _check_sensitivity(sensitivity):
    value = float(sensitivity)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"sensitivity must be finite and > 0; got {sensitivity!r}")
    return value


class _CentralMechanism:
    """Shared release logic: ``randomise`` keeps the value's shape."""

    def randomise(self, value, *, random_state=None):
        """Release ``value`` with noise.

        Parameters
        ----------
        value : float or array-like of shape (..., d)
            The statistic; a scalar is one coordinate. Leading axes hold independent
            releases of the same mechanism (useful for simulations and audits).
        random_state : None, int or numpy.random.Generator, default=None
            ``None`` uses the operating system's secure randomness.

        Returns
        -------
        released : float or ndarray of the shape of ``value``
        """
        array = np.asarray(value, dtype=np.float64)
        vector = np.atleast_1d(array)
        rng = check_random_state(random_state)
        released = self._release(vector, rng)
        return float(released[0]) if array.ndim == 0 else released


class LaplaceMechanism(_CentralMechanism):
    """The Laplace mechanism: pure epsilon-DP release of a statistic of given L1 sensitivity.

    Neighbouring relation: datasets that differ by replacing one user's value, with the
    number of users and the group sizes public. ``sensitivity`` must bound the L1
    distance between the statistic on any two such datasets.

    Parameters
    ----------
    epsilon : float
        Privacy level, > 0.
    sensitivity : float
        L1 sensitivity of the statistic under the relation above.
    secure : bool, default=True
        Round to a power-of-two grid and add discrete Laplace noise, which protects
        against floating-point attacks (see docs/privacy.rst). ``False`` adds numpy's
        continuous Laplace noise: a fast path for simulations only.

    Attributes
    ----------
    scale : float
        The nominal Laplace scale, sensitivity / epsilon.

    Examples
    --------
    >>> from skhybrid.mechanisms import LaplaceMechanism
    >>> mechanism = LaplaceMechanism(epsilon=1.0, sensitivity=0.01)
    >>> released = mechanism.randomise(0.5, random_state=0)
    >>> abs(released - 0.5) < 1
    True
    """

    def __init__(self, *, epsilon, sensitivity, secure=True):
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = _check_sensitivity(sensitivity)
        self.secure = bool(secure)

    @property
    def scale(self):
        return self.sensitivity / self.epsilon

    def variance(self, n_coordinates=1):
        """Variance of the noise added to each coordinate of a ``n_coordinates``-vector."""
        return float(laplace_variance(self.sensitivity, self.epsilon, n_coordinates, self.secure))

    def _release(self, vector, rng):
        return laplace_release(vector, self.sensitivity, self.epsilon, rng, self.secure)


class GaussianMechanism(_CentralMechanism):
    """The Gaussian mechanism: (epsilon, delta)-DP release of a statistic of given L2 sensitivity.

    Neighbouring relation: datasets that differ by replacing one user's value, with the
    number of users and the group sizes public. ``sensitivity`` must bound the L2
    distance between the statistic on any two such datasets.

    Parameters
    ----------
    epsilon : float
        > 0; < 1 with ``calibration="classic"``.
    delta : float
        In (0, 1).
    sensitivity : float
        L2 sensitivity under the relation above.
    calibration : {"analytic", "classic"}, default="analytic"
        See :func:`gaussian_noise_multiplier`. The papers use ``"classic"``,
        sigma = sqrt(2 ln(1.25/delta)) * sensitivity / epsilon (valid for epsilon < 1);
        ``"analytic"`` (Balle and Wang 2018) is tighter and valid for every epsilon.
    secure : bool, default=True
        Round to a power-of-two grid and add discrete Gaussian noise; ``False`` adds
        numpy's continuous noise (simulations only).

    Attributes
    ----------
    sigma : float
        The noise standard deviation for the nominal sensitivity.
    """

    def __init__(self, *, epsilon, delta, sensitivity, calibration="analytic", secure=True):
        self.epsilon = check_epsilon(epsilon)
        self.delta = float(delta)
        self.sensitivity = _check_sensitivity(sensitivity)
        self.calibration = calibration
        self.secure = bool(secure)
        self._noise_multiplier = gaussian_noise_multiplier(self.epsilon, self.delta, calibration)

    @property
    def sigma(self):
        return self.sensitivity * self._noise_multiplier

    def variance(self, n_coordinates=1):
        """Variance of the noise added to each coordinate of a ``n_coordinates``-vector."""
        return float(
            gaussian_variance(self.sensitivity, self._noise_multiplier, n_coordinates, self.secure)
        )

    def _release(self, vector, rng):
        return gaussian_release(vector, self.sensitivity, self._noise_multiplier, rng, self.secure)
