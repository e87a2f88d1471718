"""ADPM's two-group closed forms (Chaudhuri and Courtade, Eq. (4), Table I / Lemma 3, Theorem 1).

A fraction ``f`` of ``n`` users at ``eps1``, the rest at ``eps2``: the saturation
ratio, the optimal weights and their mean squared error.
"""

from ._adpm_common import _check_data_range, _resolve_variance, midpoint_mse

__all__ = [
    "saturation_ratio",
    "two_group_mse",
    "two_group_weights",
]


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
    n, f, eps1, data_range, variance
        As in :func:`two_group_weights`.

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
    n, f, eps1, eps2, data_range, variance
        As in :func:`two_group_weights`.

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
