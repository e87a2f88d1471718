"""What every ADPM-family estimator shares: the solution, validation and the affine MSE.

Chaudhuri and Courtade, "Mean Estimation Under Heterogeneous Privacy: Some Privacy
Can Be Free" (arXiv:2305.09668): an affine estimator ``sum_i w_i x_i + Laplace(eta)``
has the noise scale of Lemma 1 and the expected squared error of its weights; every
solver and baseline in :mod:`skhybrid.theory` returns an :class:`ADPMSolution`.
"""

from dataclasses import dataclass, field

import numpy as np

from ..mechanisms._noise import laplace_variance
from ..utils._validation import check_epsilon

__all__ = [
    "ADPMSolution",
    "affine_mse",
    "laplace_noise_scale",
    "lm_report_noise_variance",
    "midpoint_mse",
    "worst_case_variance",
]


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


def _checked_levels(epsilon, counts, data_range):
    """The validated ``(epsilon, counts, data_range)`` a baseline's weights start from."""
    eps = _check_epsilon(epsilon)
    return eps, _check_counts(counts, eps.size), _check_data_range(data_range)


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
