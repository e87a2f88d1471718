"""The baselines ADPM is compared with (Chaudhuri and Courtade, Sec. IV-A, Appendix D).

UNI, PropDPM and LDPE weights, and the biased stretching mechanism of Example 2 with
its mean squared error. Their arguments are those of :func:`~skhybrid.theory.adpm_weights`.
"""

import numpy as np

from ._adpm_common import (
    ADPMSolution,
    _checked_levels,
    _privacy_levels,
    _resolve_variance,
    _solution,
    _total,
    affine_mse,
    laplace_noise_scale,
)
from ._mixed import group_mean_noise_scale, mixed_mean_weights

__all__ = [
    "ldpe_weights",
    "propdpm_weights",
    "stretching_mse",
    "stretching_weights",
    "uni_weights",
]


# --------------------------------------------------------------------------------------
# Baselines of Sec. IV-A
# --------------------------------------------------------------------------------------


def _central_solution(weights, eps, data_range, variance, counts):
    """The release of fixed weights on tcm users only, without Algorithm 1's fallback."""
    return _solution(
        weights, eps, np.zeros(eps.size, dtype=bool), data_range=data_range,
        variance=variance, fallback_to_midpoint=False, counts=counts,
    )


def uni_weights(epsilon, *, data_range=1.0, variance=None, counts=None):
    """UNI baseline (Sec. IV-A of Chaudhuri and Courtade): everyone gets min(epsilon).

    The sample mean with Laplace noise for ``min_i epsilon_i``-DP: ``w_i = 1/n``,
    ``eta = data_range / (n min_i epsilon_i)`` (0 when every user is public).

    Parameters
    ----------
    epsilon, data_range, variance, counts
        As in :func:`adpm_weights`.

    Returns
    -------
    solution : ADPMSolution
    """
    eps, counts, data_range = _checked_levels(epsilon, counts, data_range)
    variance = _resolve_variance(variance, data_range)
    n_users = eps.size if counts is None else counts.sum()
    weights = np.full(eps.size, 1.0 / n_users)
    return _central_solution(weights, eps, data_range, variance, counts)


def propdpm_weights(epsilon, *, data_range=1.0, variance=None, counts=None):
    """PropDPM baseline (Sec. III-A and IV-A of Chaudhuri and Courtade).

    Weights proportional to epsilon, ``w_i = epsilon_i / ||epsilon||_1``, with
    ``eta = data_range / ||epsilon||_1``. With public users this is taken in the limit
    of their epsilon to infinity: equal weights on the public users and no noise.

    Parameters
    ----------
    epsilon, data_range, variance, counts
        As in :func:`adpm_weights`.

    Returns
    -------
    solution : ADPMSolution
    """
    eps, counts, data_range = _checked_levels(epsilon, counts, data_range)
    variance = _resolve_variance(variance, data_range)
    public = np.isinf(eps)
    if public.any():
        weights = public / _total(public.astype(float), counts)
    else:
        weights = eps / _total(eps, counts)
    return _central_solution(weights, eps, data_range, variance, counts)


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
    epsilon, data_range, variance, counts
        As in :func:`adpm_weights`.

    Returns
    -------
    solution : ADPMSolution
        ``weights[i] = W_k / n_k`` for user i in level k, ``noise_scale = 0`` and
        ``level_noise_scales[k] = W_k data_range / (n_k epsilon_k)`` for the finite levels.
    """
    eps, counts, data_range = _checked_levels(epsilon, counts, data_range)
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
    epsilon, data_range, variance, counts
        As in :func:`adpm_weights`.

    Returns
    -------
    solution : ADPMSolution
        ``expected_mse`` is an upper bound on the error against the population mean: the
        exact :func:`stretching_mse` with the population mean at a bound (the largest
        bias, half a range from the centre) and the variance at its bound.
    """
    eps, counts, data_range = _checked_levels(epsilon, counts, data_range)
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
    eps, counts, data_range = _checked_levels(epsilon, counts, data_range)
    n_users = eps.size if counts is None else counts.sum()
    weights = _stretched_fraction(eps) / n_users
    noise_scale = laplace_noise_scale(weights, eps, data_range=data_range)
    spread = weights - 1.0 / n_users if empirical else weights
    bias = (1.0 - _total(weights, counts)) * mean_offset
    return affine_mse(spread, variance=variance, noise_scale=noise_scale, counts=counts) + bias**2
