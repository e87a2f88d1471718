"""ADPM's convex program (Chaudhuri and Courtade, Algorithm 1) written in cvxpy.

The reference solver of :func:`~skhybrid.theory.adpm_weights` (``solver="cvxpy"``),
one variable per privacy level; :func:`~skhybrid.theory.adpm_weights`'s exact solver
is checked against it.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..exceptions import warn_user
from ._adpm_common import _privacy_levels, _total, lm_report_noise_variance

# Clarabel's default tolerances (1e-8) leave single weights off by up to ~1e-3 (relative)
# on 20,000 distinct levels; these give ~1e-7 there and ~1e-9 on small problems (worse,
# ~1e-6, only where a level sits exactly at the saturation threshold, a degenerate optimum).
_CLARABEL_OPTIONS = {
    "tol_gap_abs": 1e-12,
    "tol_gap_rel": 1e-12,
    "tol_feas": 1e-12,
    "tol_ktratio": 1e-10,
    "max_iter": 200,
}


def _solve_cvxpy(eps, local, variance, data_range, counts=None):
    """Optimal weights of the (hybrid) program solved by cvxpy, one variable per level.

    Variables are each level's per-user weight times n (1 = uniform) and the noise
    scale times n, so every quantity is O(1) and the solver's tolerances are relative.
    """
    # cvxpy takes about a second to import: only users of this solver pay it.
    import cvxpy as cp

    level_eps, level_local, sizes, inverse = _privacy_levels(eps, local, counts)
    n_users = float(sizes.sum())
    fraction = sizes / n_users
    # Variance of one value relative to data_range**2 (an lm report's includes its noise).
    noise_variance = np.zeros(level_eps.size)
    noise_variance[level_local] = lm_report_noise_variance(
        level_eps[level_local], data_range=data_range
    )
    report_variance = (variance + noise_variance) / data_range**2

    scaled_weight = cp.Variable(level_eps.size, nonneg=True)
    scaled_noise = cp.Variable(nonneg=True)
    # n / data_range**2 times the objective, summed per level.
    objective = cp.sum(cp.multiply(fraction * report_variance, cp.square(scaled_weight)))
    objective += (2.0 / n_users) * cp.square(scaled_noise)
    constraints = [fraction @ scaled_weight == 1]
    binding = ~level_local & np.isfinite(level_eps)
    if binding.any():
        constraints.append(scaled_weight[binding] <= level_eps[binding] * scaled_noise)
    problem = cp.Problem(cp.Minimize(objective), constraints)
    with warnings.catch_warnings():
        # cvxpy's own "may be inaccurate" UserWarning is replaced by the one below.
        warnings.simplefilter("ignore", UserWarning)
        problem.solve(solver=cp.CLARABEL, **_CLARABEL_OPTIONS)
    if scaled_weight.value is None:
        raise RuntimeError(
            f"cvxpy (CLARABEL) found no solution of the ADPM program; status "
            f"{problem.status!r}. Use solver='exact'."
        )
    if problem.status != cp.OPTIMAL:
        warn_user(
            f"cvxpy (CLARABEL) stopped with status {problem.status!r}; the ADPM weights "
            f"may be inaccurate (solver='exact' solves the same program exactly)",
            ConvergenceWarning,
        )
    # Back on the simplex: the interior-point solution is feasible only to tolerance.
    weights = np.maximum(scaled_weight.value, 0.0)[inverse]
    return weights / _total(weights, counts)
