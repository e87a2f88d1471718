"""Weights and noise of the Affine Differentially Private Mean (ADPM) and its baselines.

ADPM (Chaudhuri and Courtade, "Mean Estimation Under Heterogeneous Privacy: Some Privacy
Can Be Free", arXiv:2305.09668, Algorithm 1) releases ``sum_i w_i x_i + Laplace(eta)``
for data clipped to ``[lower, upper]`` and per-user privacy levels ``epsilon_i``. This
module computes the weights ``w`` and the noise scale ``eta`` (it draws no noise):
:func:`adpm_weights` solves the convex program of Algorithm 1, either exactly (a sort
and prefix sums, from the KKT conditions; see ``docs/adpm_solver.rst``) or with cvxpy,
optionally with local-model ("lm") users whose values arrive with their own Laplace
noise (the hybrid extension, derived in ``docs/adpm_solver.rst``; it is in no paper).

Everything is in the data's units: with ``D = upper - lower`` the weights depend only on
``variance / D**2`` and the noise scale and the squared errors scale with ``D`` and
``D**2``. ``epsilon = np.inf`` marks a public user.

Every function takes one entry per user, or, with ``counts``, one entry per privacy
level with the number of its users: equal users get equal weights in every estimator
here, so the level form gives the same weights (per user) and errors in the time of
the levels, not of the users.

The cvxpy program is in :mod:`skhybrid.theory._adpm_cvxpy`, the solution type and the
shared formulas in :mod:`skhybrid.theory._adpm_common`, the two-group closed forms
(Eq. (4), Table I / Lemma 3, Theorem 1) in :mod:`skhybrid.theory._adpm_two_groups` and
the baselines UNI, PropDPM, LDPE (Sec. IV-A) and stretching (Example 2, Appendix D) in
:mod:`skhybrid.theory._adpm_baselines`.
"""

import numpy as np

from ._adpm_common import (
    _check_counts,
    _check_data_range,
    _check_epsilon,
    _check_local,
    _resolve_variance,
    _solution,
    _total,
    lm_report_noise_variance,
)
from ._adpm_cvxpy import _solve_cvxpy

__all__ = [
    "adpm_weights",
    "saturation_threshold",
]


# --------------------------------------------------------------------------------------
# ADPM: the exact solver
# --------------------------------------------------------------------------------------


def _threshold_root(eps_central, target, counts=None):
    """Root tau of ``sum_i eps_i (tau - eps_i)_+ = target`` over finite tcm epsilons.

    The left side is continuous, piecewise linear and nondecreasing in tau, equal to
    ``tau * A_k - B_k`` between the k-th and (k+1)-th smallest level (A, B: prefix sums
    of eps and eps**2 over the users), so one sort of the levels, prefix sums and a
    binary search find it. ``counts`` gives the users per entry; without it each entry
    is one user (equal entries are grouped first). Returns inf when there is no finite
    tcm epsilon.
    """
    if eps_central.size == 0:
        return np.inf
    if counts is None:
        eps_central, counts = np.unique(eps_central, return_counts=True)
    order = np.argsort(eps_central, kind="stable")
    eps_sorted, weight = eps_central[order], np.asarray(counts, dtype=np.float64)[order]
    prefix_sum = np.cumsum(weight * eps_sorted)
    prefix_sum_sq = np.cumsum(weight * eps_sorted * eps_sorted)
    # Last breakpoint at or below target (the value is 0 at the smallest level). Should
    # rounding break the monotonicity, the search still ends between two neighbours that
    # bracket target, which is all we need.
    k = np.searchsorted(eps_sorted * prefix_sum - prefix_sum_sq, target, side="right") - 1
    k = max(int(k), 0)
    return float((target + prefix_sum_sq[k]) / prefix_sum[k])


def saturation_threshold(epsilon, *, data_range=1.0, variance=None, local=None, counts=None):
    """Privacy level above which ADPM's weights saturate (the general Eq. (4)).

    The KKT conditions of Algorithm 1's program (derived in ``docs/adpm_solver.rst``)
    give weights proportional to ``min(epsilon_i, tau)`` for tcm users, where tau solves
    ``sum_{tcm i} epsilon_i (tau - epsilon_i)_+ = 2 data_range**2 / variance``; for two
    groups, ``tau = R * epsilon_1`` with R of :func:`saturation_ratio` when
    ``epsilon_2 >= R * epsilon_1``. A tau above every epsilon means no user saturates.
    lm users do not enter it.

    Parameters
    ----------
    epsilon, data_range, variance, local, counts
        As in :func:`adpm_weights`.

    Returns
    -------
    tau : float
        inf when no tcm user has a finite epsilon.
    """
    eps = _check_epsilon(epsilon)
    local = _check_local(local, eps.size)
    counts = _check_counts(counts, eps.size)
    data_range = _check_data_range(data_range)
    variance = _resolve_variance(variance, data_range)
    return _tcm_threshold(eps, local, variance, data_range, counts)


def _tcm_threshold(eps, local, variance, data_range, counts=None):
    """tau of the KKT conditions: the root over the finite tcm epsilons, target 2 D^2 / s2."""
    central = ~local & np.isfinite(eps) if local.any() else np.isfinite(eps)
    target = 2.0 * data_range**2 / variance
    if central.all():
        return _threshold_root(eps, target, counts)
    return _threshold_root(eps[central], target, None if counts is None else counts[central])


def _solve_exact(eps, local, variance, data_range, counts=None):
    """Optimal weights of the (hybrid) program from its KKT conditions, O(n log n).

    tcm users get ``min(eps_i, tau)``, lm users ``tau * variance / (variance + r_i)``
    (r_i: their local noise variance; the factor is the share of their report's variance
    that is data), normalised to sum 1; see ``docs/adpm_solver.rst``.
    """
    tau = _tcm_threshold(eps, local, variance, data_range, counts)
    if np.isfinite(tau):
        unnormalised = np.minimum(eps, tau)
    else:
        # No central noise: inverse-variance weights (tcm users here are all public).
        unnormalised, tau = np.ones_like(eps), 1.0
    if local.any():
        noise_variance = lm_report_noise_variance(eps[local], data_range=data_range)
        unnormalised[local] = tau * variance / (variance + noise_variance)
    unnormalised /= _total(unnormalised, counts)
    return unnormalised


_SOLVERS = {"exact": _solve_exact, "cvxpy": _solve_cvxpy}


def adpm_weights(
    epsilon,
    *,
    data_range=1.0,
    variance=None,
    local=None,
    solver="exact",
    fallback_to_midpoint=True,
    counts=None,
):
    """Weights and noise scale of ADPM (Algorithm 1 of Chaudhuri and Courtade).

    Solves ``min_w variance ||w||^2 + 2 eta^2`` over ``w >= 0, sum(w) = 1`` with
    ``eta = data_range * max_i w_i / epsilon_i`` (Lemma 1), the worst-case MSE of the
    unbiased affine estimator ``<w, x> + Laplace(eta)`` (Algorithm 1; Appendix B). With
    the default ``variance = data_range**2 / 4`` this is the paper's program scaled by
    ``data_range**2``. If the optimum exceeds the midpoint's worst-case error
    ``data_range**2 / 4``, Algorithm 1 releases the midpoint instead (``trivial``).

    Hybrid extension (not in the paper; derived in ``docs/adpm_solver.rst``): an lm user
    (``local[i]`` True) reports ``x_i + Laplace(data_range / epsilon_i)``; its weight
    enters the objective with variance ``variance + 2 (data_range / epsilon_i)^2`` and
    does not bind eta.

    Parameters
    ----------
    epsilon : array-like of shape (n_users,)
        Per-user privacy levels, > 0; np.inf = public user (binds no noise).
    data_range : float, default=1.0
        ``upper - lower`` of the interval the data are clipped to.
    variance : float, default=None
        Bound on the variance of one user's value, in (0, data_range**2 / 4]; None is
        the paper's worst case ``data_range**2 / 4``. A known variance makes the
        objective the exact MSE (Appendix B's equality before the bound).
    local : array-like of bool of shape (n_users,), default=None
        True for lm users; None means every user is tcm (the paper's setting).
    solver : {"exact", "cvxpy"}, default="exact"
        ``"exact"``: closed form from the KKT conditions (weights proportional to
        ``min(epsilon_i, tau)``), O(n log n). ``"cvxpy"``: the program in cvxpy with
        one variable per distinct (trust model, epsilon) level, solved by CLARABEL; emits
        ``ConvergenceWarning`` when the solver does not report an optimum.
    fallback_to_midpoint : bool, default=True
        Apply Algorithm 1's test and return the midpoint solution when the optimum
        exceeds ``data_range**2 / 4``; False always returns the program's weights.
    counts : array-like of shape (n_users,), default=None
        Users per entry: ``epsilon`` (and ``local``) then list privacy levels and the
        weights are each level's per-user weight, summing to 1 over the users.

    Returns
    -------
    solution : ADPMSolution
        ``noise_scale`` is recomputed from the returned weights by Lemma 1, so the release
        is epsilon-DP even when a numerical solver's eta is off by its tolerance.

    See Also
    --------
    saturation_threshold : The level tau where the weights saturate.
    two_group_weights : Closed form for two groups (Table I).

    Notes
    -----
    With ``r = epsilon_2 / epsilon_1`` and two groups this reproduces Table I / Lemma 3;
    the expected MSE is Theorem 1's upper bound (:func:`two_group_mse`). The squared error
    against the empirical mean of the same data is ``expected_mse - variance / n_users``
    (for non-trivial solutions).

    References
    ----------
    S. Chaudhuri and T. A. Courtade, "Mean Estimation Under Heterogeneous Privacy: Some
    Privacy Can Be Free", arXiv:2305.09668, 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.theory._adpm import adpm_weights
    >>> solution = adpm_weights(np.array([0.1, 0.1, 1.0, np.inf]), data_range=1.0)
    >>> bool(np.isclose(solution.weights.sum(), 1.0))
    True
    """
    eps = _check_epsilon(epsilon)
    local = _check_local(local, eps.size)
    counts = _check_counts(counts, eps.size)
    data_range = _check_data_range(data_range)
    variance = _resolve_variance(variance, data_range)
    if solver not in _SOLVERS:
        raise ValueError(f"solver must be one of {sorted(_SOLVERS)}; got {solver!r}")
    weights = _SOLVERS[solver](eps, local, variance, data_range, counts)
    return _solution(
        weights,
        eps,
        local,
        data_range=data_range,
        variance=variance,
        fallback_to_midpoint=fallback_to_midpoint,
        counts=counts,
    )
