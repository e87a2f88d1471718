"""How one user's privacy losses add up over releases (composition).

A user's account holds three running totals, each of which composes exactly:

- ``epsilon``: the sum of the pure epsilons of Laplace, exponential-mechanism and
  randomized-response releases, and of the epsilon parts of (epsilon, delta) releases
  (basic sequential composition, Dwork and Roth 2014, Theorem 3.16). The sum is kept as
  a double-double ``high + low``, updated by Knuth's TwoSum (in the ledger's SQL), so
  ``high`` is the float64 rounding of the exact total: ``k`` releases of ``epsilon``
  read back as exactly ``k * epsilon``;
- ``delta``: the sum of the delta parts of (epsilon, delta) releases (same theorem);
- ``gaussian``: the sum of ``1 / r_j**2`` over the user's Gaussian releases, ``r_j`` being
  the release's noise multiplier (sigma per unit of L2 sensitivity). Gaussian releases
  compose *exactly* into one Gaussian mechanism of multiplier
  ``r = (sum_j r_j**-2) ** -1/2`` (Dong, Roth and Su 2022, Corollary 3.3: mu-GDP adds in
  squares, ``mu = 1 / r``; equivalently, Bun and Steinke 2016: rho = 1 / (2 r**2) adds),
  whose tight (epsilon, delta) curve is the analytic Gaussian one (Balle and Wang 2018,
  Theorem 8, :func:`skhybrid.mechanisms.analytic_gaussian_delta`).

The epsilon a user has spent, at their delta budget, is then
``epsilon_total + epsilon_gaussian(delta_budget - delta_total)`` (:func:`spent_epsilon`):
the Gaussian part is tight, and it is added to the pure part by basic composition.
"""

import numpy as np


def gaussian_epsilon(gaussian, delta):
    """The tight epsilon, at ``delta``, of Gaussian releases composed into one.

    Parameters
    ----------
    gaussian : ndarray of float64
        ``sum_j r_j**-2`` per user (0 for users without a Gaussian release).
    delta : ndarray of float64
        The delta available to the Gaussian part, per user.

    Returns
    -------
    epsilon : ndarray of float64
        0 without a Gaussian release, ``inf`` when ``delta <= 0``; rounded up.
    """
    gaussian = np.asarray(gaussian, dtype=np.float64)
    delta = np.broadcast_to(np.asarray(delta, dtype=np.float64), gaussian.shape)
    epsilon = np.zeros(gaussian.shape)
    charged = gaussian > 0
    epsilon[charged & (delta <= 0)] = np.inf
    solve = charged & (delta > 0)
    if not solve.any():
        return epsilon
    # Users with the same totals share one root: few distinct pairs in practice.
    pairs, inverse = np.unique(np.column_stack([gaussian[solve], delta[solve]]), axis=0,
                               return_inverse=True)
    roots = np.array([_gaussian_epsilon_one(g, d) for g, d in pairs])
    epsilon[solve] = roots[inverse.ravel()]
    return epsilon


def _gaussian_epsilon_one(gaussian, delta):
    # Imported here: a ledger without Gaussian releases never loads scipy for it.
    from ..mechanisms._calibration import analytic_gaussian_delta

    multiplier = 1.0 / np.sqrt(gaussian)
    if analytic_gaussian_delta(0.0, multiplier) <= delta:
        return 0.0

    def excess(epsilon):
        return float(analytic_gaussian_delta(epsilon, multiplier)) - delta

    high = 1.0
    while excess(high) > 0:
        high *= 2.0
        if high > 1e6:
            return np.inf
    from scipy.optimize import brentq  # scipy.optimize costs 0.4 s to import

    epsilon = brentq(excess, 0.0, high, xtol=1e-14, rtol=1e-14)
    # Round up so the stated epsilon is never below the true one.
    while excess(epsilon) > 0:
        epsilon = np.nextafter(epsilon, np.inf)
    return float(epsilon)


def spent_epsilon(epsilon_high, delta_spent, gaussian, delta_budget):
    """The epsilon a user has spent, at their delta budget (see the module docstring).

    Parameters
    ----------
    epsilon_high : ndarray
        The pure and (epsilon, delta) releases' epsilon total.
    delta_spent : ndarray
        The (epsilon, delta) releases' delta total.
    gaussian : ndarray
        ``sum_j r_j**-2`` of the Gaussian releases.
    delta_budget : ndarray

    Returns
    -------
    epsilon : ndarray
    """
    return epsilon_high + gaussian_epsilon(gaussian, np.asarray(delta_budget) - delta_spent)
