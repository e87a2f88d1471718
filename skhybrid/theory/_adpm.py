"""Weights and noise of the Affine Differentially Private Mean (ADPM) and its baselines.

ADPM (Chaudhuri and Courtade, "Mean Estimation Under Heterogeneous Privacy: Some Privacy
Can Be Free", arXiv:2305.09668, Algorithm 1) releases ``sum_i w_i x_i + Laplace(eta)``
for data clipped to ``[lower, upper]`` and per-user privacy levels ``epsilon_i``. This
module computes the weights ``w`` and the noise scale ``eta`` (it draws no noise):

- :func:`adpm_weights` solves the convex program of Algorithm 1, either exactly (a sort
  and prefix sums, from the KKT conditions; see ``docs/adpm_solver.rst``) or with cvxpy,
  optionally with local-model ("lm") users whose values arrive with their own Laplace
  noise (the hybrid extension, derived in ``docs/adpm_solver.rst``; it is in no paper);
- :func:`saturation_ratio`, :func:`two_group_weights` and :func:`two_group_mse` are the
  two-group closed forms (Eq. (4), Table I / Lemma 3 and Theorem 1);
- :func:`uni_weights`, :func:`propdpm_weights` and :func:`ldpe_weights` are the baselines
  UNI, PropDPM and LDPE of Sec. IV-A; :func:`stretching_weights` and
  :func:`stretching_mse` are the biased stretching mechanism of Example 2 (Appendix D).

Everything is in the data's units: with ``D = upper - lower`` the weights depend only on
``variance / D**2`` and the noise scale and the squared errors scale with ``D`` and
``D**2``. ``epsilon = np.inf`` marks a public user.

Every function takes one entry per user, or, with ``counts``, one entry per privacy
level with the number of its users: equal users get equal weights in every estimator
here, so the level form gives the same weights (per user) and errors in the time of
the levels, not of the users.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..mechanisms._noise import laplace_variance
from ..utils._validation import check_epsilon
from ._mixed import group_mean_noise_scale, mixed_mean_weights

__all__ = [
    "ADPMSolution",
    "adpm_weights",
    "affine_mse",
    "laplace_noise_scale",
    "ldpe_weights",
    "lm_report_noise_variance",
    "midpoint_mse",
    "propdpm_weights",
    "saturation_ratio",
    "saturation_threshold",
    "stretching_mse",
    "stretching_weights",
    "two_group_mse",
    "two_group_weights",
    "uni_weights",
    "worst_case_variance",
]

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


@dataclass(frozen=True, eq=False)
class ADPMSolution:
    """Weights and noise of an affine private mean estimator.

    The estimator releases ``weights @ x + Laplace(noise_scale)``, plus one independent
    ``Laplace(s)`` term per entry ``s`` of `level_noise_scales` (LDPE only), for values
    ``x`` clipped to ``[lower, upper]``; lm users' entries of ``x`` are their locally
    randomized reports. When `trivial` is True it releases the midpoint
    ``(lower + upper) / 2`` instead (Algorithm 1's ``return 0``).

    Attributes
    ----------
    weights : ndarray of shape (n_users,)
        Weight of each user's value; sums to 1, or all 0 when `trivial`.
    noise_scale : float
        Laplace scale of the central noise added to the weighted sum, in the data's
        units; the smallest scale that keeps every tcm user epsilon_i-DP (Lemma 1).
    expected_mse : float
        Worst-case expected squared error of the release against the population mean:
        `objective`, or ``data_range**2 / 4`` when `trivial`.
    objective : float
        Value of the weight program at `weights` (variance term plus noise variance).
    trivial : bool
        True when `objective` exceeds the midpoint's worst-case error ``data_range**2 /
        4``, so Algorithm 1 releases the midpoint.
    level_noise_scales : ndarray of shape (n_levels,)
        Laplace scales of further independent noise terms, one per privacy level
        (LDPE adds its noise to each level's mean); empty for the other estimators.
    """

    weights: np.ndarray
    noise_scale: float
    expected_mse: float
    objective: float
    trivial: bool
    level_noise_scales: np.ndarray = field(default_factory=lambda: np.zeros(0))


# --------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------


def _check_epsilon(epsilon):
    """Per-user privacy levels as a non-empty 1-d float array (np.inf = public user)."""
    if np.ndim(epsilon) != 1 or np.shape(epsilon)[0] == 0:
        raise ValueError(
            f"epsilon must be a non-empty 1-d array with one privacy level per user; "
            f"got shape {np.shape(epsilon)}"
        )
    return check_epsilon(epsilon, allow_inf=True)


def _check_counts(counts, n_entries):
    """Users per entry as a float array of shape (n_entries,); None = one user each."""
    if counts is None:
        return None
    counts = np.asarray(counts, dtype=np.float64)
    if counts.shape != (n_entries,) or not np.all(counts >= 1) or not np.all(
        np.isfinite(counts)
    ):
        raise ValueError(
            f"counts must hold one number of users >= 1 per entry of epsilon (shape "
            f"({n_entries},)); got shape {counts.shape}"
        )
    return counts


def _total(values, counts):
    """``sum_i values_i`` over users: each entry counted ``counts`` times."""
    return float(np.sum(values)) if counts is None else float(values @ counts)


def _check_local(local, n_users):
    """Return the lm mask as a boolean array of shape (n_users,); None = all tcm."""
    if local is None:
        return np.zeros(n_users, dtype=bool)
    mask = np.asarray(local)
    if mask.shape != (n_users,) or mask.dtype != bool:
        raise ValueError(
            f"local must be a boolean mask of shape ({n_users},) (True = lm user); "
            f"got dtype {mask.dtype} and shape {mask.shape}"
        )
    return mask


def _check_data_range(data_range):
    """Return data_range as a float after checking it is finite and > 0."""
    data_range = float(data_range)
    if not (np.isfinite(data_range) and data_range > 0):
        raise ValueError(f"data_range must be finite and > 0; got {data_range!r}")
    return data_range


def _resolve_variance(variance, data_range):
    """Return the variance bound used by the program; None is the worst case D**2/4."""
    worst = worst_case_variance(data_range)
    if variance is None:
        return worst
    variance = float(variance)
    if not (0 < variance <= worst * (1 + 1e-12)):
        raise ValueError(
            f"variance must be in (0, data_range**2 / 4] = (0, {float(worst)!r}] (Popoviciu's "
            f"bound for data in an interval of length {float(data_range)!r}); got {variance!r}"
        )
    return min(variance, worst)


# --------------------------------------------------------------------------------------
# Formulas shared by every estimator
# --------------------------------------------------------------------------------------


def worst_case_variance(data_range):
    """Largest variance of a distribution on an interval of length `data_range`.

    Popoviciu's inequality, ``data_range**2 / 4``: the bound Algorithm 1 of Chaudhuri
    and Courtade uses for ``Var(P)`` (Appendix B, ``Var(P) <= 1/4`` on [-0.5, 0.5]).

    Parameters
    ----------
    data_range : float
        ``upper - lower``.

    Returns
    -------
    variance : float
    """
    return data_range**2 / 4


def midpoint_mse(data_range):
    """Worst-case squared error of releasing the interval's midpoint.

    ``data_range**2 / 4``, attained by a point mass at an end of the interval; Algorithm 1
    of Chaudhuri and Courtade releases the midpoint when its program's optimum exceeds
    this (``1/4`` on [-0.5, 0.5]). The bound holds for any variance bound, since a
    point mass has variance 0.

    Parameters
    ----------
    data_range : float
        ``upper - lower``.

    Returns
    -------
    mse : float
    """
    return data_range**2 / 4


def lm_report_noise_variance(epsilon, *, data_range=1.0):
    """Variance of the local noise in an lm user's report.

    The report is ``x_i + Laplace(data_range / epsilon_i)``, the Laplace mechanism with
    sensitivity ``data_range`` run on the user's device (continuous noise; the library's
    secure randomizer rounds to a grid and adds slightly more). The formula lives in
    :func:`skhybrid.mechanisms._noise.laplace_variance`: ``2 (data_range / epsilon_i)^2``.

    Parameters
    ----------
    epsilon : ndarray of shape (n_lm_users,)
        The lm users' privacy levels, > 0; np.inf gives 0.
    data_range : float, default=1.0
        ``upper - lower``.

    Returns
    -------
    noise_variance : ndarray of shape (n_lm_users,)
    """
    return laplace_variance(data_range, epsilon, n_coordinates=1, secure=False)


def laplace_noise_scale(weights, epsilon, *, data_range=1.0, local=None):
    """Smallest central Laplace scale keeping ``weights @ x + Laplace`` epsilon-DP.

    Lemma 1 of Chaudhuri and Courtade: ``<w, x> + Laplace(eta)`` is
    ``(data_range * w / eta)``-DP, so ``eta = data_range * max_i w_i / epsilon_i`` over the
    tcm users (public users, epsilon_i = inf, and lm users, protected by their own local
    noise, bind nothing).

    Parameters
    ----------
    weights : ndarray of shape (n_users,)
    epsilon : ndarray of shape (n_users,)
    data_range : float, default=1.0
    local : ndarray of bool of shape (n_users,), default=None
        True for lm users; None means every user is tcm.

    Returns
    -------
    noise_scale : float
    """
    weights, epsilon = np.asarray(weights, dtype=float), np.asarray(epsilon, dtype=float)
    ratio = weights / epsilon  # 0 for public users
    if local is not None and np.any(local):
        ratio[local] = 0.0
    return float(data_range * np.max(ratio))


def affine_mse(
    weights, *, variance, noise_scale=0.0, report_noise_variance=None, level_noise_scales=None,
    counts=None,
):
    """Expected squared error of an unbiased affine estimator against the population mean.

    For ``sum_i w_i (x_i + e_i) + Laplace(eta) + sum_j Laplace(s_j)`` with
    ``sum_i w_i = 1``, x_i i.i.d. with variance ``variance``, independent zero-mean noise
    e_i of variance r_i (an lm user's local noise) and Laplace(b) of variance ``2 b^2``:
    ``variance ||w||^2 + sum_i w_i^2 r_i + 2 eta^2 + 2 sum_j s_j^2``. With the worst-case
    variance and no lm users this is the objective of Algorithm 1 of Chaudhuri and
    Courtade (Appendix B: ``Var(P) ||w||^2 + 2 eta^2 <= ||w||^2 / 4 + 2 eta^2``). About
    the empirical mean of the same data the error is smaller by ``variance / n_users``
    (:func:`skhybrid.theory._mixed.mse_about_empirical_mean`).

    Parameters
    ----------
    weights : ndarray of shape (n_users,)
    variance : float
        Variance of one user's value (or a bound on it).
    noise_scale : float, default=0.0
        Laplace scale of the central noise.
    report_noise_variance : ndarray of shape (n_users,), default=None
        Variance of the local noise in each user's value, 0 for tcm users (see
        :func:`lm_report_noise_variance`); None means none.
    level_noise_scales : ndarray, default=None
        Laplace scales of further independent noise terms (LDPE).
    counts : ndarray of shape (n_users,), default=None
        Users per entry (the level form, see the module's docstring); None: one each.

    Returns
    -------
    mse : float
    """
    weights = np.asarray(weights, dtype=float)
    squared = weights * weights
    # numpy arithmetic: a huge scale (a tiny epsilon) gives inf, not an OverflowError.
    with np.errstate(over="ignore"):
        mse = variance * _total(squared, counts) + 2.0 * float(np.square(np.float64(noise_scale)))
    if report_noise_variance is not None:
        mse += _total(squared * report_noise_variance, counts)
    if level_noise_scales is not None:
        mse += 2.0 * float(np.sum(np.square(level_noise_scales)))
    return mse


def _solution(weights, epsilon, local, *, data_range, variance, fallback_to_midpoint,
              counts=None):
    """Assemble an ADPMSolution for central weights (noise from Lemma 1, Algorithm 1's test)."""
    noise_scale = laplace_noise_scale(weights, epsilon, data_range=data_range, local=local)
    report_noise_variance = None
    if local.any():
        report_noise_variance = np.zeros_like(weights)
        report_noise_variance[local] = lm_report_noise_variance(
            epsilon[local], data_range=data_range
        )
    objective = affine_mse(
        weights,
        variance=variance,
        noise_scale=noise_scale,
        report_noise_variance=report_noise_variance,
        counts=counts,
    )
    if fallback_to_midpoint and objective > midpoint_mse(data_range):
        return ADPMSolution(
            weights=np.zeros_like(weights),
            noise_scale=0.0,
            expected_mse=midpoint_mse(data_range),
            objective=objective,
            trivial=True,
        )
    return ADPMSolution(
        weights=weights,
        noise_scale=noise_scale,
        expected_mse=objective,
        objective=objective,
        trivial=False,
    )


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
    epsilon : array-like of shape (n_users,)
        Per-user privacy levels, > 0; np.inf = public.
    data_range : float, default=1.0
        ``upper - lower``.
    variance : float, default=None
        Bound on the data's variance; None is the worst case ``data_range**2 / 4``.
    local : array-like of bool of shape (n_users,), default=None
        True for lm users; None means every user is tcm.
    counts : array-like of shape (n_users,), default=None
        Users per entry (the level form); None: one each.

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


# --------------------------------------------------------------------------------------
# ADPM: the cvxpy solver
# --------------------------------------------------------------------------------------


def _privacy_levels(eps, local, counts=None):
    """Group users by (trust model, epsilon): equal users get equal optimal weights.

    Returns each level's epsilon, lm flag and size, and each entry's level index.
    """
    # epsilon > 0, so a negated epsilon marks an lm level without colliding with tcm ones.
    key = np.where(local, -eps, eps)
    levels, inverse, sizes = np.unique(key, return_inverse=True, return_counts=True)
    if counts is not None:
        sizes = np.bincount(inverse, weights=counts, minlength=levels.size)
    return np.abs(levels), levels < 0, sizes, inverse


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
        warnings.warn(
            f"cvxpy (CLARABEL) stopped with status {problem.status!r}; the ADPM weights "
            f"may be inaccurate (solver='exact' solves the same program exactly)",
            ConvergenceWarning,
            stacklevel=3,
        )
    # Back on the simplex: the interior-point solution is feasible only to tolerance.
    weights = np.maximum(scaled_weight.value, 0.0)[inverse]
    return weights / _total(weights, counts)


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


# --------------------------------------------------------------------------------------
# Two groups: Eq. (4), Table I / Lemma 3, Theorem 1
# --------------------------------------------------------------------------------------


def _check_two_groups(n, f, eps1, eps2):
    """Check the two-group parameters of Sec. II (f is the fraction at eps1 <= eps2)."""
    if not n > 0:
        raise ValueError(f"n must be > 0; got {n!r}")
    if not 0 < f <= 1:
        raise ValueError(f"f (fraction of users at eps1) must be in (0, 1]; got {f!r}")
    if not 0 < eps1 <= eps2:
        raise ValueError(
            f"need 0 < eps1 <= eps2 (eps1 is the more private group); got eps1={eps1!r}, "
            f"eps2={eps2!r}"
        )


def saturation_ratio(n, f, eps1, *, data_range=1.0, variance=None):
    """Saturation ratio R of two groups (Eq. (4) of Chaudhuri and Courtade).

    ``R = 1 + 8 / (n f eps1^2)``: once ``eps2 >= R * eps1`` the optimal weights and the
    error stop improving (Theorems 1 and 2). Here ``f`` is the fraction of the n users in
    the more private group (privacy level ``eps1 <= eps2``). With a variance bound it
    generalises to ``1 + 2 data_range^2 / (variance n f eps1^2)``.

    Parameters
    ----------
    n : int
        Number of users.
    f : float
        Fraction of users with privacy level eps1, in (0, 1].
    eps1 : float
        Privacy level of the more private group, > 0.
    data_range : float, default=1.0
    variance : float, default=None
        Bound on the data's variance; None is the worst case ``data_range**2 / 4``.

    Returns
    -------
    R : float
    """
    _check_two_groups(n, f, eps1, eps1)
    data_range = _check_data_range(data_range)
    variance = _resolve_variance(variance, data_range)
    return 1.0 + 2.0 * data_range**2 / (variance * n * f * eps1**2)


def two_group_weights(n, f, eps1, eps2, *, data_range=1.0, variance=None):
    """Per-user ADPM weights for two groups (Table I / Lemma 3 of Chaudhuri and Courtade).

    If ``eps2 <= R eps1``: ``w_k = eps_k / (n eps_bar)`` with ``eps_bar = f eps1 +
    (1 - f) eps2`` (weights proportional to epsilon); otherwise the weights saturate at
    ``w1 = 1 / (n [f + (1 - f) R])``, ``w2 = R w1``.

    Parameters
    ----------
    n : int
        Number of users.
    f : float
        Fraction of users with privacy level eps1, in (0, 1].
    eps1, eps2 : float
        Privacy levels, ``0 < eps1 <= eps2``; ``eps2 = np.inf`` is a public group.
    data_range : float, default=1.0
    variance : float, default=None
        Bound on the data's variance; None is the worst case ``data_range**2 / 4``.

    Returns
    -------
    w1, w2 : float
        Weight of each user of the first and of the second group.
    """
    _check_two_groups(n, f, eps1, eps2)
    ratio = saturation_ratio(n, f, eps1, data_range=data_range, variance=variance)
    if eps2 <= ratio * eps1:
        eps_bar = f * eps1 + (1 - f) * eps2
        return eps1 / (n * eps_bar), eps2 / (n * eps_bar)
    w1 = 1.0 / (n * (f + (1 - f) * ratio))
    return w1, ratio * w1


def two_group_mse(n, f, eps1, eps2, *, data_range=1.0, variance=None):
    """ADPM's worst-case MSE for two groups (Theorem 1 of Chaudhuri and Courtade).

    (A) ``eps2 <= R eps1``: ``mean(eps^2) / (4 n mean(eps)^2) + 2 / (n mean(eps))^2``
    (Eq. (5); the means are over users, e.g. ``mean(eps) = f eps1 + (1 - f) eps2``);
    (B) otherwise ``R / (4 n [f + (1 - f) R])`` (Eq. (7)); both capped at the midpoint's
    ``1/4``. In the data's units, with a variance bound, the ``1/4`` of the variance term
    becomes ``variance``, the noise term gains ``data_range^2`` and the cap is
    ``data_range^2 / 4``.

    Parameters
    ----------
    n : int
    f : float
        Fraction of users with privacy level eps1, in (0, 1].
    eps1, eps2 : float
        Privacy levels, ``0 < eps1 <= eps2``; ``eps2 = np.inf`` is a public group.
    data_range : float, default=1.0
    variance : float, default=None
        Bound on the data's variance; None is the worst case ``data_range**2 / 4``.

    Returns
    -------
    mse : float
    """
    _check_two_groups(n, f, eps1, eps2)
    data_range = _check_data_range(data_range)
    variance = _resolve_variance(variance, data_range)
    ratio = saturation_ratio(n, f, eps1, data_range=data_range, variance=variance)
    if eps2 <= ratio * eps1:
        eps_bar = f * eps1 + (1 - f) * eps2
        eps_sq_bar = f * eps1**2 + (1 - f) * eps2**2
        mse = variance * eps_sq_bar / (n * eps_bar**2) + 2 * data_range**2 / (n * eps_bar) ** 2
    else:
        mse = variance * ratio / (n * (f + (1 - f) * ratio))
    return min(mse, midpoint_mse(data_range))


# --------------------------------------------------------------------------------------
# Baselines of Sec. IV-A
# --------------------------------------------------------------------------------------


def uni_weights(epsilon, *, data_range=1.0, variance=None, counts=None):
    """UNI baseline (Sec. IV-A of Chaudhuri and Courtade): everyone gets min(epsilon).

    The sample mean with Laplace noise for ``min_i epsilon_i``-DP: ``w_i = 1/n``,
    ``eta = data_range / (n min_i epsilon_i)`` (0 when every user is public).

    Parameters
    ----------
    epsilon : array-like of shape (n_users,)
        Per-user privacy levels, > 0; np.inf = public.
    data_range : float, default=1.0
    variance : float, default=None
        Variance bound for ``expected_mse``; None is the worst case ``data_range**2 / 4``.
    counts : array-like of shape (n_users,), default=None
        Users per entry (the level form); None: one each.

    Returns
    -------
    solution : ADPMSolution
    """
    eps = _check_epsilon(epsilon)
    counts = _check_counts(counts, eps.size)
    data_range = _check_data_range(data_range)
    variance = _resolve_variance(variance, data_range)
    n_users = eps.size if counts is None else counts.sum()
    weights = np.full(eps.size, 1.0 / n_users)
    return _solution(
        weights,
        eps,
        np.zeros(eps.size, dtype=bool),
        data_range=data_range,
        variance=variance,
        fallback_to_midpoint=False,
        counts=counts,
    )


def propdpm_weights(epsilon, *, data_range=1.0, variance=None, counts=None):
    """PropDPM baseline (Sec. III-A and IV-A of Chaudhuri and Courtade).

    Weights proportional to epsilon, ``w_i = epsilon_i / ||epsilon||_1``, with
    ``eta = data_range / ||epsilon||_1``. With public users this is taken in the limit
    of their epsilon to infinity: equal weights on the public users and no noise.

    Parameters
    ----------
    epsilon : array-like of shape (n_users,)
        Per-user privacy levels, > 0; np.inf = public.
    data_range : float, default=1.0
    variance : float, default=None
        Variance bound for ``expected_mse``; None is the worst case ``data_range**2 / 4``.
    counts : array-like of shape (n_users,), default=None
        Users per entry (the level form); None: one each.

    Returns
    -------
    solution : ADPMSolution
    """
    eps = _check_epsilon(epsilon)
    counts = _check_counts(counts, eps.size)
    data_range = _check_data_range(data_range)
    variance = _resolve_variance(variance, data_range)
    public = np.isinf(eps)
    if public.any():
        weights = public / _total(public.astype(float), counts)
    else:
        weights = eps / _total(eps, counts)
    return _solution(
        weights,
        eps,
        np.zeros(eps.size, dtype=bool),
        data_range=data_range,
        variance=variance,
        fallback_to_midpoint=False,
        counts=counts,
    )


def ldpe_weights(epsilon, *, data_range=1.0, variance=None, counts=None):
    """LDPE baseline (Sec. IV-A of Chaudhuri and Courtade; Ferrando et al. 2021).

    Users are grouped by privacy level; level k's sample mean gets its own noise
    ``Laplace(data_range / (n_k epsilon_k))``, so its variance is
    ``V_k = variance / n_k + 2 (data_range / (n_k epsilon_k))^2``; the level means are
    combined with inverse-variance weights ``W_k ∝ 1 / V_k`` using the variance bound
    (the worst case as a proxy, as the paper does). These are Ferrando et al.'s mixed
    mean (:func:`skhybrid.theory._mixed.mixed_mean_weights` and
    :func:`~skhybrid.theory._mixed.group_mean_noise_scale`), here as per-user weights.
    The paper defines LDPE for two groups; one group per distinct epsilon is our reading
    for general epsilon. With one user per level it is local-model Laplace plus
    inverse-variance weighting.

    Parameters
    ----------
    epsilon : array-like of shape (n_users,)
        Per-user privacy levels, > 0; np.inf = public (its level gets no noise).
    data_range : float, default=1.0
    variance : float, default=None
        Variance bound; None is the worst case ``data_range**2 / 4``.
    counts : array-like of shape (n_users,), default=None
        Users per entry (the level form); None: one each.

    Returns
    -------
    solution : ADPMSolution
        ``weights[i] = W_k / n_k`` for user i in level k, ``noise_scale = 0`` and
        ``level_noise_scales[k] = W_k data_range / (n_k epsilon_k)`` for the finite levels.
    """
    eps = _check_epsilon(epsilon)
    counts = _check_counts(counts, eps.size)
    data_range = _check_data_range(data_range)
    variance = _resolve_variance(variance, data_range)
    level_eps, _, sizes, inverse = _privacy_levels(eps, np.zeros(eps.size, dtype=bool), counts)
    level_weight = mixed_mean_weights(sizes, level_eps, data_range=data_range, variance=variance)
    weights = (level_weight / sizes)[inverse]
    level_noise = group_mean_noise_scale(sizes, level_eps, data_range)
    level_noise_scales = (level_weight * level_noise)[np.isfinite(level_eps)]
    mse = affine_mse(weights, variance=variance, level_noise_scales=level_noise_scales,
                     counts=counts)
    return ADPMSolution(
        weights=weights,
        noise_scale=0.0,
        expected_mse=mse,
        objective=mse,
        trivial=False,
        level_noise_scales=level_noise_scales,
    )


def stretching_weights(epsilon, *, data_range=1.0, variance=None, counts=None):
    """Stretching mechanism (Alaggan, Gambs and Kermarrec 2017; Example 2 of Chaudhuri and
    Courtade, Appendix D).

    Each value is shrunk to ``(epsilon_i / epsilon_max) x_i`` and a homogeneous
    ``epsilon_max``-DP mean is released: ``w_i = epsilon_i / (n epsilon_max)`` and
    ``eta = data_range / (n epsilon_max)``. Replacing user i moves the weighted sum by at
    most ``w_i data_range = epsilon_i data_range / (n epsilon_max)``, so the Laplace
    noise gives them exactly ``epsilon_i`` (Lemma 1). The weights sum to
    ``mean(epsilon) / epsilon_max < 1`` unless all levels are equal: the estimate is
    biased towards the value the data are shrunk to, the middle of the bounds (0 in the
    paper's domain [-0.5, 0.5]; Example 2 scales ``x_i`` to ``epsilon_i x_i /
    epsilon_max``, and on any interval the rule shrinks ``x_i - centre``). With public
    users (epsilon = inf) epsilon_max is infinite: the public users keep their values
    and every finite-epsilon user is shrunk to the centre.

    Parameters
    ----------
    epsilon : array-like of shape (n_users,)
        Per-user privacy levels, > 0; np.inf = public.
    data_range : float, default=1.0
    variance : float, default=None
        Variance bound; None is the worst case ``data_range**2 / 4``.
    counts : array-like of shape (n_users,), default=None
        Users per entry (the level form); None: one each.

    Returns
    -------
    solution : ADPMSolution
        ``expected_mse`` is an upper bound on the error against the population mean: the
        exact :func:`stretching_mse` with the population mean at a bound (the largest
        bias, half a range from the centre) and the variance at its bound.
    """
    eps = _check_epsilon(epsilon)
    counts = _check_counts(counts, eps.size)
    data_range = _check_data_range(data_range)
    variance = _resolve_variance(variance, data_range)
    n_users = eps.size if counts is None else counts.sum()
    weights = _stretched_fraction(eps) / n_users
    noise_scale = laplace_noise_scale(weights, eps, data_range=data_range)
    mse = stretching_mse(eps, mean_offset=data_range / 2.0, variance=variance,
                         data_range=data_range, counts=counts)
    return ADPMSolution(
        weights=weights, noise_scale=noise_scale, expected_mse=mse, objective=mse, trivial=False
    )


def _stretched_fraction(eps):
    """``epsilon_i / epsilon_max``, 1 for public users (they are the maximum)."""
    eps_max = eps.max()
    if np.isinf(eps_max):
        return np.isinf(eps).astype(float)
    return eps / eps_max


def stretching_mse(epsilon, *, mean_offset, variance, data_range=1.0, empirical=False,
                   counts=None):
    """Expected squared error of the stretching mechanism (Example 2 of Chaudhuri and Courtade).

    With ``w`` and ``eta`` of :func:`stretching_weights` and i.i.d. values whose mean lies
    ``mean_offset`` above the centre of the bounds, with variance ``variance``, the
    release ``centre + <w, x - centre> + Laplace(eta)`` has error ``<w, x - mu> -
    (1 - sum(w)) mean_offset + Laplace(eta)`` about the population mean ``mu``, so

    ``MSE = variance ||w||^2 + ((1 - sum(w)) mean_offset)^2 + 2 eta^2``.

    About the empirical mean of the same data (``empirical=True``) ``w`` becomes
    ``w - 1/n`` in the variance term. Example 2 (the domain [-0.5, 0.5], a point mass at
    0.5, eps1 = 0.01, eps2 = 0.1, f = 0.5: ``mean_offset = 0.5``) gives
    ``0.050625 + 200 / n^2``, the paper's ``0.05 + 200 / n^2``: the bias does not vanish
    as n grows.

    Parameters
    ----------
    epsilon : array-like of shape (n_users,)
    mean_offset : float
        Population mean minus the centre of the bounds, in
        ``[-data_range / 2, data_range / 2]``.
    variance : float
        Variance of one user's value.
    data_range : float, default=1.0
    empirical : bool, default=False
        Measure the error against the empirical mean of the same data.
    counts : array-like of shape (n_users,), default=None
        Users per entry (the level form); None: one each.

    Returns
    -------
    mse : float
    """
    eps = _check_epsilon(epsilon)
    counts = _check_counts(counts, eps.size)
    data_range = _check_data_range(data_range)
    n_users = eps.size if counts is None else counts.sum()
    weights = _stretched_fraction(eps) / n_users
    noise_scale = laplace_noise_scale(weights, eps, data_range=data_range)
    spread = weights - 1.0 / n_users if empirical else weights
    bias = (1.0 - _total(weights, counts)) * mean_offset
    return affine_mse(spread, variance=variance, noise_scale=noise_scale, counts=counts) + bias**2
