"""Calibration of the Gaussian mechanism's noise to a target (epsilon, delta)."""

import numpy as np
from scipy.special import log_ndtr, ndtr

_CALIBRATIONS = ("analytic", "classic")


def analytic_gaussian_delta(epsilon, noise_multiplier):
    """The exact delta of the Gaussian mechanism at ``epsilon`` (Balle and Wang 2018, Thm 8).

    delta = Phi(1 / (2 r) - epsilon r) - exp(epsilon) Phi(-1 / (2 r) - epsilon r), with
    r = sigma / sensitivity; the second term is computed in log space.

    Parameters
    ----------
    epsilon : float
    noise_multiplier : float or ndarray
        r = sigma / L2 sensitivity.

    Returns
    -------
    delta : float or ndarray
    """
    r = np.asarray(noise_multiplier, dtype=np.float64)
    return ndtr(0.5 / r - epsilon * r) - np.exp(epsilon + log_ndtr(-0.5 / r - epsilon * r))


def _analytic_multiplier(epsilon, delta):
    # delta(r) decreases in r; bracket the root on a log scale.
    def excess(log_r):
        return analytic_gaussian_delta(epsilon, np.exp(log_r)) - delta

    high = np.log(np.sqrt(2.0 * np.log(1.25 / delta)) / epsilon) + 1.0
    while excess(high) > 0:
        high += 1.0
    low = high - 2.0
    while excess(low) < 0:
        low -= 2.0
    from scipy.optimize import brentq  # scipy.optimize costs 0.4 s to import

    log_r = brentq(excess, low, high, xtol=1e-14, rtol=1e-14)
    r = np.exp(log_r)
    # Round up so the achieved delta never exceeds the target.
    while analytic_gaussian_delta(epsilon, r) > delta:
        r = np.nextafter(r, np.inf)
    return r


def gaussian_noise_multiplier(epsilon, delta, calibration="analytic"):
    """sigma per unit of L2 sensitivity for (epsilon, delta)-DP with the Gaussian mechanism.

    Parameters
    ----------
    epsilon : float or array-like
        > 0. With ``calibration="classic"`` it must be < 1.
    delta : float
        In (0, 1).
    calibration : {"analytic", "classic"}, default="analytic"
        ``"analytic"``: the smallest sigma of the analytic Gaussian mechanism (Balle and
        Wang 2018, Alg. 1), valid for every epsilon > 0 and tighter than the classic one.
        ``"classic"``: sigma = sqrt(2 ln(1.25 / delta)) / epsilon (Dwork and Roth 2014,
        Thm A.1), the calibration used by the papers, valid only for epsilon < 1.

    Returns
    -------
    noise_multiplier : float or ndarray
        Same shape as ``epsilon``.
    """
    if calibration not in _CALIBRATIONS:
        raise ValueError(f"calibration must be one of {_CALIBRATIONS}; got {calibration!r}")
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1) for the Gaussian mechanism; got {delta!r}")
    eps = np.asarray(epsilon, dtype=np.float64)
    if calibration == "classic":
        if np.any(eps >= 1.0):
            raise ValueError(
                "the classic Gaussian calibration sqrt(2 ln(1.25/delta)) / epsilon is valid "
                f"only for epsilon < 1; got epsilon={float(np.max(eps))!r}. Use "
                "calibration='analytic', which is valid for every epsilon."
            )
        result = np.sqrt(2.0 * np.log(1.25 / delta)) / eps
    else:
        levels, inverse = np.unique(eps, return_inverse=True)
        multipliers = np.array([_analytic_multiplier(float(e), delta) for e in levels])
        result = multipliers[inverse].reshape(eps.shape)
    return float(result) if np.ndim(epsilon) == 0 else result
