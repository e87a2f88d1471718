"""Closed-form theory of hybrid-model mean estimation (Avent, Dubey and Korolova 2020).

Every formula of the paper lives here once, as a pure numpy function that broadcasts
over array arguments; the estimators, the analysis tools and the tests call these
functions instead of re-typing a formula.

Notation (the paper's Table 1): ``n`` users, a fraction ``c`` of them in the tcm group
(trusted-curator model) and ``1 - c`` in the lm group (local model); ``m`` is the width
of the data range ``[0, m]``; ``sigma_T2`` / ``sigma_L2`` and ``mu_T`` / ``mu_L`` are the
groups' data variances and means, and ``mu = c mu_T + (1 - c) mu_L`` is the mean of the
mixture; ``s_T2`` is the variance of the noise the curator adds to the tcm group's mean
(Def. 3.1's Y_T) and ``s_L2`` the variance of one lm user's local noise (Def. 3.3's
Y_{L,i}). Every MSE is measured against the non-private empirical mean of all ``n``
users (Def. 2.2).

Every argument is a float or an array-like, and the functions broadcast over them. Unless
a function says otherwise: ``n > 0``; ``c`` in (0, 1); ``m > 0``; ``epsilon > 0``;
``s_T2, s_L2, sigma_T2, sigma_L2, sigma2 >= 0`` (``sigma2``: the variance of both groups);
``mu_T, mu_L`` real, default 0 (only their difference matters); a ``weight`` w on the tcm
group's estimate is in [0, 1]. A value outside its domain raises a ValueError naming it.

The homogeneous formulas of the paper (Lemma 4.2, Lemma 5.4, Theorems 4.3 and 5.5,
Defs. 3.7, 3.9 and 5.2) are special cases of the general ones and are not re-typed:
evaluate :func:`hybrid_mse` at :func:`kvh_weight` or :func:`pwh_weight`, and pass the
result to :func:`relative_improvement` or :func:`relative_improvement_over_worst`.

References
----------
.. [ADK20] B. Avent, Y. Dubey and A. Korolova. "The Power of the Hybrid Model for Mean
   Estimation". Proceedings on Privacy Enhancing Technologies, 2020(4).
.. [DK] Y. Dubey and A. Korolova. "The Power of The Hybrid Model for Mean Estimation".
   Workshop version (Theorem 3.4 and its Corollary: R_max).
"""

import numpy as np

from ..mechanisms._calibration import gaussian_noise_multiplier
from ..mechanisms._noise import gaussian_variance, laplace_variance

__all__ = [
    "critical_values",
    "full_lm_mse",
    "gaussian_noise_variances",
    "hybrid_mse",
    "hybrid_privacy_amplification",
    "kvh_weight",
    "kvh_weight_heterogeneous",
    "laplace_critical_values",
    "laplace_noise_variances",
    "lm_only_mse",
    "max_relative_improvement",
    "naive_weight",
    "peak_fraction",
    "pwh_weight",
    "relative_improvement",
    "relative_improvement_over_worst",
    "tcm_only_mse",
]


# --------------------------------------------------------------------------------------
# Private helpers
# --------------------------------------------------------------------------------------

_POSITIVE = (0.0, np.inf, False, False)
_NON_NEGATIVE = (0.0, np.inf, True, False)
_OPEN_UNIT = (0.0, 1.0, False, False)
_CLOSED_UNIT = (0.0, 1.0, True, True)
_REAL = (-np.inf, np.inf, False, False)


def _describe(low, high, low_closed, high_closed):
    if np.isinf(high):
        if np.isinf(low):
            return "finite"
        return f"{'>=' if low_closed else '>'} {low:g} and finite"
    return f"in {'[' if low_closed else '('}{low:g}, {high:g}{']' if high_closed else ')'}"


def _check(name, value, interval):
    """``value`` as a float array, or a ValueError naming the first value outside ``interval``."""
    low, high, low_closed, high_closed = interval
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number or array; got {value!r}") from None
    above = array >= low if low_closed else array > low
    below = array <= high if high_closed else array < high
    bad = ~(np.isfinite(array) & above & below)
    if bad.any():
        expected = _describe(low, high, low_closed, high_closed)
        if array.ndim == 0:
            raise ValueError(f"{name} must be {expected}; got {array.item()!r}")
        index = np.unravel_index(int(np.flatnonzero(bad)[0]), array.shape)
        where = index[0] if array.ndim == 1 else index
        got = array[index].item()
        raise ValueError(f"{name} must be {expected}; got {got!r} at index {where}")
    return array


_DOMAINS = {
    "weight": _CLOSED_UNIT,
    "n": _POSITIVE,
    "c": _OPEN_UNIT,
    "m": _POSITIVE,
    "epsilon": _POSITIVE,
    "delta": _OPEN_UNIT,
    "mse": _POSITIVE,
    "mu_T": _REAL,
    "mu_L": _REAL,
}


def _checked(positive=(), **values):
    """The values checked against their domains (``_DOMAINS``, else >= 0), in order.

    Names in ``positive`` must be > 0 instead.
    """
    return tuple(
        _check(name, value, _POSITIVE if name in positive else _DOMAINS.get(name, _NON_NEGATIVE))
        for name, value in values.items()
    )


def _broadcast(*arrays):
    """The arrays broadcast to one shape; numpy scalars when that shape is ()."""
    return tuple(np.array(array)[()] for array in np.broadcast_arrays(*arrays))


def _mixture_mean(c, mu_T, mu_L):
    # Sec. 2.2: the mixture D = c D_T + (1 - c) D_L has mean mu = c mu_T + (1 - c) mu_L.
    return c * mu_T + (1.0 - c) * mu_L


def _critical_fraction(s_L2, sigma_T2, sigma_L2):
    """c_crit of Lemma 3.6: the root in (0, 1) of the numerator of n_crit (see critical_values).

    That numerator is q(c) = a c^2 + b c - sigma_T2 with a = sigma_L2 - sigma_T2 and
    b = s_L2 + 2 sigma_T2 - sigma_L2; q(0) = -sigma_T2 <= 0 < q(1) = s_L2. The paper writes it as
    (b - sqrt(D)) / (2 (sigma_T2 - sigma_L2)), with a separate branch for
    sigma_T2 = sigma_L2 where that is 0/0. Rationalising gives 2 sigma_T2 / (b + sqrt(D)),
    which equals both branches and has no cancellation when b > 0; when b <= 0 (then
    a > s_L2 > 0) the paper's form is the stable one.
    """
    a = sigma_L2 - sigma_T2
    b = s_L2 + 2.0 * sigma_T2 - sigma_L2
    root = np.sqrt((sigma_L2 - s_L2) ** 2 + 4.0 * s_L2 * sigma_T2)
    with np.errstate(divide="ignore", invalid="ignore"):
        rationalised = 2.0 * sigma_T2 / (b + root)
        direct = (root - b) / (2.0 * a)
    return np.where(b > 0, rationalised, direct)[()]


# --------------------------------------------------------------------------------------
# Noise variances of the paper's mechanisms (Sec. 2.1)
# --------------------------------------------------------------------------------------


def laplace_noise_variances(n, c, m, epsilon):
    """Noise variances (s_T2, s_L2) of epsilon-DP Laplace noise (Avent et al. 2020, Def. 3.9).

    The tcm group's mean of ``c n`` values in ``[0, m]`` has L1 sensitivity ``m / (c n)``;
    one lm user's value has sensitivity ``m``. Laplace noise of scale ``b = sensitivity /
    epsilon`` has variance ``2 b^2``, so ``s_T2 = 2 (m / (c n epsilon))^2`` and
    ``s_L2 = 2 (m / epsilon)^2``, the values Def. 3.9 and Appendix E substitute.

    Parameters
    ----------
    n : float or array-like
        Number of users, > 0.
    c : float or array-like
        Fraction of tcm users, in (0, 1).
    m : float or array-like
        Width of the data range [0, m], > 0.
    epsilon : float or array-like
        Privacy level of every user, > 0.

    Returns
    -------
    s_T2 : float or ndarray
        Variance of the noise added to the tcm group's mean.
    s_L2 : float or ndarray
        Variance of one lm user's local noise.

    Examples
    --------
    >>> from skhybrid.theory._hybrid import laplace_noise_variances
    >>> s_T2, s_L2 = laplace_noise_variances(n=1000, c=0.1, m=1.0, epsilon=1.0)
    >>> float(s_T2), float(s_L2)
    (0.0002, 2.0)
    """
    n, c, m, epsilon = _checked(n=n, c=c, m=m, epsilon=epsilon)
    s_T2 = laplace_variance(m / (c * n), epsilon, 1, secure=False)
    s_L2 = laplace_variance(m, epsilon, 1, secure=False)
    return _broadcast(s_T2, s_L2)


def gaussian_noise_variances(n, c, m, epsilon, delta):
    """Noise variances (s_T2, s_L2) of the classic Gaussian mechanism (Avent et al. 2020, Sec. 8).

    The mechanism the paper uses in Sec. 8: noise of standard deviation
    ``sqrt(2 ln(1.25 / delta)) * sensitivity / epsilon`` (valid for epsilon < 1), with
    L2 sensitivity ``m / (c n)`` for the tcm group's mean and ``m`` for one lm user.

    Parameters
    ----------
    n, c, m : float or array-like
        As in :func:`laplace_noise_variances`.
    epsilon : float or array-like
        Privacy level, in (0, 1) (the classic calibration is valid only there).
    delta : float
        In (0, 1).

    Returns
    -------
    s_T2, s_L2 : float or ndarray
        Variance of the noise on the tcm group's mean and of one lm user's noise.

    See Also
    --------
    skhybrid.mechanisms.gaussian_noise_multiplier : the calibration used here
        (``calibration="classic"``) and the tighter analytic one.
    """
    n, c, m, epsilon = _checked(n=n, c=c, m=m, epsilon=epsilon)
    multiplier = gaussian_noise_multiplier(epsilon, delta, calibration="classic")
    s_T2 = gaussian_variance(m / (c * n), multiplier, 1, secure=False)
    s_L2 = gaussian_variance(m, multiplier, 1, secure=False)
    return _broadcast(s_T2, s_L2)


# --------------------------------------------------------------------------------------
# MSE of the baselines and of the hybrid family (Sec. 3)
# --------------------------------------------------------------------------------------


def tcm_only_mse(*, n, c, s_T2, sigma_T2, sigma_L2, mu_T=0.0, mu_L=0.0):
    """MSE of the TCM-only estimator (Avent et al. 2020, Lemma 3.2).

    The curator averages the ``c n`` tcm users and adds noise of variance ``s_T2``
    (Def. 3.1); the lm users' data are not used. The error is excess sampling error
    ``(1 - c)^2 / (c n) sigma_T2 + (1 - c) / n sigma_L2``, privacy error ``s_T2`` and
    bias ``(mu_T - mu)^2``.

    Parameters
    ----------
    n, c, s_T2, sigma_T2, sigma_L2, mu_T, mu_L : float or array-like
        As in :func:`hybrid_mse`.

    Returns
    -------
    mse : float or ndarray
        E[(mu_tilde_T - mu_hat)^2].
    """
    n, c, s_T2, sigma_T2, sigma_L2, mu_T, mu_L = _checked(
        n=n, c=c, s_T2=s_T2, sigma_T2=sigma_T2, sigma_L2=sigma_L2, mu_T=mu_T, mu_L=mu_L
    )
    mu = _mixture_mean(c, mu_T, mu_L)
    return (
        (1.0 - c) ** 2 / (c * n) * sigma_T2
        + (1.0 - c) / n * sigma_L2
        + s_T2
        + (mu_T - mu) ** 2
    )


def full_lm_mse(*, n, s_L2):
    """MSE of the Full-LM estimator (Avent et al. 2020, Lemma 3.4).

    Every user, tcm or lm, reports their value with local noise of variance ``s_L2``
    (Def. 3.3) and the curator averages all ``n`` reports: only privacy error remains.

    Parameters
    ----------
    n, s_L2 : float or array-like
        As in :func:`hybrid_mse`.

    Returns
    -------
    mse : float or ndarray
        ``s_L2 / n``.
    """
    n, s_L2 = _checked(n=n, s_L2=s_L2)
    return s_L2 / n


def lm_only_mse(*, n, c, s_L2, sigma_T2, sigma_L2, mu_T=0.0, mu_L=0.0):
    """MSE of the LM-only estimator (Avent et al. 2020, Lemma 3.11).

    The curator averages the locally privatized reports of the ``(1 - c) n`` lm users
    only (Def. 3.10): excess sampling error ``c^2 / ((1 - c) n) sigma_L2 + c / n
    sigma_T2``, privacy error ``s_L2 / ((1 - c) n)`` and bias ``(mu_L - mu)^2``.

    Parameters
    ----------
    n, c, s_L2, sigma_T2, sigma_L2, mu_T, mu_L : float or array-like
        As in :func:`hybrid_mse`.

    Returns
    -------
    mse : float or ndarray
        E[(mu_tilde_L - mu_hat)^2].
    """
    n, c, s_L2, sigma_T2, sigma_L2, mu_T, mu_L = _checked(
        n=n, c=c, s_L2=s_L2, sigma_T2=sigma_T2, sigma_L2=sigma_L2, mu_T=mu_T, mu_L=mu_L
    )
    mu = _mixture_mean(c, mu_T, mu_L)
    return (
        c**2 / ((1.0 - c) * n) * sigma_L2
        + c / n * sigma_T2
        + s_L2 / ((1.0 - c) * n)
        + (mu_L - mu) ** 2
    )


def hybrid_mse(weight, *, n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T=0.0, mu_L=0.0):
    """MSE of the hybrid estimator with weight w (Avent et al. 2020, Lemma 3.13).

    The hybrid estimator ``w mu_tilde_T + (1 - w) mu_tilde_L`` (Def. 3.12) combines the
    independent TCM-only and LM-only estimates; weighting them other than by the group
    sizes (w = c) costs excess sampling error, and each group contributes its privacy
    error. Lemma 4.2 (KVH), Lemma 5.4 (PWH) and the baselines of Lemmas 3.2 (w = 1) and
    3.11 (w = 0) are special cases.

    Parameters
    ----------
    weight : float or array-like
        Weight w on the tcm group's estimate, in [0, 1].
    n : float or array-like
        Number of users, > 0.
    c : float or array-like
        Fraction of tcm users, in (0, 1).
    s_T2 : float or array-like
        Variance of the noise added to the tcm group's mean, >= 0.
    s_L2 : float or array-like
        Variance of one lm user's local noise, >= 0.
    sigma_T2, sigma_L2 : float or array-like
        Data variances of the tcm and lm groups, >= 0.
    mu_T, mu_L : float or array-like, default=0.0
        Data means of the tcm and lm groups (only their difference matters).

    Returns
    -------
    mse : float or ndarray
        E[(mu_tilde_H(w) - mu_hat)^2].

    Examples
    --------
    Weighting by the group sizes with no noise reproduces the empirical mean exactly:

    >>> from skhybrid.theory._hybrid import hybrid_mse
    >>> float(hybrid_mse(0.1, n=100, c=0.1, s_T2=0.0, s_L2=0.0, sigma_T2=1.0, sigma_L2=2.0))
    0.0
    """
    weight, n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T, mu_L = _checked(
        weight=weight, n=n, c=c, s_T2=s_T2, s_L2=s_L2,
        sigma_T2=sigma_T2, sigma_L2=sigma_L2, mu_T=mu_T, mu_L=mu_L,
    )
    mu = _mixture_mean(c, mu_T, mu_L)
    return (
        (weight - c) ** 2 / (c * n) * sigma_T2
        + (weight - c) ** 2 / ((1.0 - c) * n) * sigma_L2
        + weight**2 * s_T2
        + (1.0 - weight) ** 2 / ((1.0 - c) * n) * s_L2
        + (weight * mu_T + (1.0 - weight) * mu_L - mu) ** 2
    )


# --------------------------------------------------------------------------------------
# Relative improvement and critical values (Sec. 3.2, Sec. 5)
# --------------------------------------------------------------------------------------


def _baseline_mses(n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T, mu_L):
    tcm = tcm_only_mse(
        n=n, c=c, s_T2=s_T2, sigma_T2=sigma_T2, sigma_L2=sigma_L2, mu_T=mu_T, mu_L=mu_L
    )
    return tcm, full_lm_mse(n=n, s_L2=s_L2)


def relative_improvement(mse, *, n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T=0.0, mu_L=0.0):
    """Relative improvement R over the better baseline (Avent et al. 2020, Def. 3.5).

    ``R(E) = min(E_T, E_F) / E``: how many times smaller the estimator's MSE ``E`` is
    than that of the better of the TCM-only (Lemma 3.2) and Full-LM (Lemma 3.4)
    estimators on the same problem. R > 1 means the estimator beats both. Defs. 3.7 and
    3.9 and Theorems 4.3 and 5.5 are this definition with the minimum resolved by the
    critical values.

    Parameters
    ----------
    mse : float or array-like
        The estimator's MSE E, > 0 (e.g. :func:`hybrid_mse` at :func:`kvh_weight`).
    n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T, mu_L
        The problem, as in :func:`hybrid_mse`; they define the baselines' MSEs.

    Returns
    -------
    R : float or ndarray

    Notes
    -----
    Def. 3.7 prints E_L (LM-only) in its "otherwise" branch; the baseline is E_F
    (Full-LM), as in Def. 3.5. Theorem 4.3 prints ``R(E_KVH) = gamma * {...}`` with a
    gamma that equals E_KVH itself (checked symbolically), so the printed product should
    read ``{...} / gamma``; Theorem 5.5's gamma is 1 / E_PWH, as expected.
    """
    mse = _check("mse", mse, _POSITIVE)
    tcm, full_lm = _baseline_mses(n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T, mu_L)
    return np.minimum(tcm, full_lm) / mse


def relative_improvement_over_worst(
    mse, *, n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T=0.0, mu_L=0.0
):
    """Relative improvement r over the worse baseline (Avent et al. 2020, Def. 5.1).

    ``r(E) = max(E_T, E_F) / E``: the weaker guarantee used in the unknown-variance
    setting of Sec. 5; r > 1 means the estimator never does worse than both baselines.
    Def. 5.2 is the same with the maximum resolved by the critical values.

    Parameters
    ----------
    mse : float or array-like
        The estimator's MSE E, > 0 (e.g. :func:`hybrid_mse` at :func:`pwh_weight`).
    n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T, mu_L
        The problem, as in :func:`hybrid_mse`; they define the baselines' MSEs.

    Returns
    -------
    r : float or ndarray
    """
    mse = _check("mse", mse, _POSITIVE)
    tcm, full_lm = _baseline_mses(n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T, mu_L)
    return np.maximum(tcm, full_lm) / mse


def critical_values(*, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T=0.0, mu_L=0.0):
    """Critical values (c_crit, n_crit) of the baselines (Avent et al. 2020, Lemma 3.6).

    For a generic noise mechanism whose variances ``s_T2`` and ``s_L2`` are held fixed,
    the TCM-only estimator is at least as accurate as the Full-LM one (E_T <= E_F)
    if and only if ``c > c_crit`` and ``n <= n_crit``.

    Parameters
    ----------
    c, s_T2, sigma_T2, sigma_L2, mu_T, mu_L : float or array-like
        As in :func:`hybrid_mse`.
    s_L2 : float or array-like
        Variance of one lm user's local noise, > 0.

    Returns
    -------
    c_crit : float or ndarray
        In [0, 1); does not depend on ``c``, ``s_T2`` or the means.
    n_crit : float or ndarray
        ``(c s_L2 - (1 - c)((1 - c) sigma_T2 + c sigma_L2)) / (c ((mu_T - mu)^2 + s_T2))``;
        <= 0 exactly when ``c <= c_crit`` (no n satisfies n <= n_crit there), and
        ``inf`` when the tcm estimate has neither noise nor bias.

    Notes
    -----
    The paper prints the numerator of n_crit as ``c s_L2 + (1 - c)((1 - c) sigma_T2 -
    c sigma_L2)``. Solving E_T <= E_F with Lemmas 3.2 and 3.4 gives
    ``c s_L2 - (1 - c)((1 - c) sigma_T2 + c sigma_L2)`` instead, and only the latter
    vanishes at the paper's own c_crit (its root in c), so it is used here.

    With a real mechanism ``s_T2`` shrinks with n (Laplace: ``s_T2 ~ 1 / n^2``), and
    the inequality flips to ``n >= n_crit`` once ``s_T2(n)`` is substituted: see
    :func:`laplace_critical_values` (Lemma 3.8).
    """
    c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T, mu_L = _checked(
        positive=("s_L2",), c=c, s_T2=s_T2, s_L2=s_L2,
        sigma_T2=sigma_T2, sigma_L2=sigma_L2, mu_T=mu_T, mu_L=mu_L,
    )
    mu = _mixture_mean(c, mu_T, mu_L)
    # Re-derived (see Notes): n E_T <= n E_F  <=>
    #   n c (bias^2 + s_T2) <= c s_L2 - (1 - c)((1 - c) sigma_T2 + c sigma_L2).
    numerator = c * s_L2 - (1.0 - c) * ((1.0 - c) * sigma_T2 + c * sigma_L2)
    denominator = c * ((mu_T - mu) ** 2 + s_T2)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_crit = numerator / denominator
    return _broadcast(_critical_fraction(s_L2, sigma_T2, sigma_L2), n_crit)


def laplace_critical_values(*, c, m, epsilon, sigma2):
    """Critical values (c_crit, n_crit) with Laplace noise (Avent et al. 2020, Lemma 3.8).

    In the homogeneous setting (both groups have variance ``sigma2``) with epsilon-DP
    Laplace noise, the TCM-only estimator is at least as accurate as the Full-LM one
    if and only if ``c > c_crit`` and ``n >= n_crit``: once enough users opt in, the
    tcm group's noise (which shrinks like 1 / n^2) beats the local noise.

    Parameters
    ----------
    c, m, epsilon : float or array-like
        As in :func:`laplace_noise_variances`.
    sigma2 : float or array-like
        Data variance of both groups, >= 0.

    Returns
    -------
    c_crit : float or ndarray
        ``epsilon^2 sigma2 / (2 m^2 + epsilon^2 sigma2)``: Lemma 3.6's c_crit with
        ``s_L2 = 2 m^2 / epsilon^2``.
    n_crit : float or ndarray
        ``2 m^2 / (c (2 c m^2 - (1 - c) epsilon^2 sigma2))``; meaningful only where
        ``c > c_crit`` (negative below it, ``inf`` at it).
    """
    c, m, epsilon, sigma2 = _checked(c=c, m=m, epsilon=epsilon, sigma2=sigma2)
    s_L2 = laplace_variance(m, epsilon, 1, secure=False)
    c_crit = _critical_fraction(s_L2, sigma2, sigma2)
    with np.errstate(divide="ignore"):
        n_crit = 2.0 * m**2 / (c * (2.0 * c * m**2 - (1.0 - c) * epsilon**2 * sigma2))
    return _broadcast(c_crit, n_crit)


def max_relative_improvement(*, c, m, epsilon, sigma2):
    """Largest relative improvement of KVH over n, and where (Dubey and Korolova, R_max).

    R_max is the Corollary to Theorem 3.4 of Dubey and Korolova's workshop paper. With
    Laplace noise in the homogeneous setting, ``R(E_KVH)`` (Def. 3.5 of Avent et
    al. 2020) first grows with n while Full-LM is the better baseline and peaks where
    the baselines cross, ``n = n_crit`` of Lemma 3.8, at
    ``R_max = 2 (2 - c) m^2 / ((c - 1) epsilon^2 sigma2 + 2 m^2)``. This is also the
    bound in Avent et al.'s proof of Corollary 4.4 (Appendix B), which gives its 16/7.

    Parameters
    ----------
    c, m, epsilon : float or array-like
        As in :func:`laplace_noise_variances`.
    sigma2 : float or array-like
        Data variance of both groups, >= 0.

    Returns
    -------
    r_max : float or ndarray
        sup over n > 0 of R(E_KVH).
    n_argmax : float or ndarray
        The n where it is reached: n_crit, or ``inf`` where R only approaches its
        supremum as n grows (see Notes).

    Notes
    -----
    Dubey and Korolova's R_max is the supremum only for ``c > c_crit`` and not too large
    c. Two cases are derived here (not in the papers), from the n -> infinity limits of
    Lemmas 3.2, 3.4 and 4.2 (``n s_T2 -> 0``):

    - ``c <= c_crit``: Full-LM is the better baseline for every n and R increases with
      n towards ``(c s_L2 + sigma2) / ((1 - c) sigma2)``; n_crit does not exist.
    - ``c > c_crit``: past n_crit, R = E_T / E_KVH tends to ``1 + sigma2 / (c s_L2)``,
      which exceeds R_max for large c (e.g. c >= 0.876 with epsilon = 1, sigma2 = m^2/4,
      and from c ~ 0.53 with epsilon = 3); the supremum is then that limit.

    Here ``s_L2 = 2 m^2 / epsilon^2``. For Dubey and Korolova's setting (c = 0.01,
    epsilon = 0.1, sigma = m / 6) the result is their R_max at their n_critical.
    """
    c, m, epsilon, sigma2 = _checked(c=c, m=m, epsilon=epsilon, sigma2=sigma2)
    c_crit, n_crit = laplace_critical_values(c=c, m=m, epsilon=epsilon, sigma2=sigma2)
    s_L2 = laplace_variance(m, epsilon, 1, secure=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        r_peak = 2.0 * (2.0 - c) * m**2 / ((c - 1.0) * epsilon**2 * sigma2 + 2.0 * m**2)
        r_limit_tcm = 1.0 + sigma2 / (c * s_L2)
        r_limit_full_lm = (c * s_L2 + sigma2) / ((1.0 - c) * sigma2)
    above = c > c_crit
    peak_wins = above & (r_peak >= r_limit_tcm)
    r_max = np.where(above, np.maximum(r_peak, r_limit_tcm), r_limit_full_lm)
    n_argmax = np.where(peak_wins, n_crit, np.inf)
    return _broadcast(r_max, n_argmax)


def peak_fraction(*, n, m, epsilon, sigma2):
    """The tcm fraction where R(E_KVH) peaks for n users, Laplace noise (Lemma 3.8).

    At fixed n, R(E_KVH) grows with c while Full-LM is the better baseline and falls
    once TCM-only is (Dubey and Korolova: R peaks where the baselines cross). The
    baselines cross where Lemma 3.8's ``n_crit(c)`` equals n, for a c above ``c_crit``;
    this is that c, found as a root (``n_crit`` falls from +inf just above ``c_crit`` to
    about 1 near c = 1).

    Parameters
    ----------
    n, m, epsilon : float
        As in :func:`laplace_noise_variances`.
    sigma2 : float
        Data variance of both groups, > 0.

    Returns
    -------
    c : float
        In (c_crit, 1).
    """
    from scipy import optimize

    c_crit, _ = laplace_critical_values(c=0.5, m=m, epsilon=epsilon, sigma2=sigma2)

    def gap(c):
        return np.log(laplace_critical_values(c=c, m=m, epsilon=epsilon, sigma2=sigma2)[1] / n)

    return float(optimize.brentq(gap, c_crit * (1 + 1e-9) + 1e-12, 1 - 1e-9, xtol=1e-14))


# --------------------------------------------------------------------------------------
# Weights of the hybrid estimators (Secs. 4, 5 and 6)
# --------------------------------------------------------------------------------------


def kvh_weight(*, n, c, s_T2, s_L2, sigma2):
    """Weight of the known-variance hybrid (KVH) estimator (Avent et al. 2020, Def. 4.1).

    ``w* = c (sigma2 + s_L2) / (sigma2 + c (n s_T2 (1 - c) + s_L2))`` minimizes
    :func:`hybrid_mse` in the homogeneous setting (both groups share mean and variance
    ``sigma2``): it balances excess sampling error against the groups' privacy errors.

    Parameters
    ----------
    n, c, s_T2, s_L2 : float or array-like
        As in :func:`hybrid_mse`.
    sigma2 : float or array-like
        Data variance of both groups, >= 0.

    Returns
    -------
    weight : float or ndarray
        In [0, 1]; the weight on the tcm group's estimate.
    """
    n, c, s_T2, s_L2, sigma2 = _checked(n=n, c=c, s_T2=s_T2, s_L2=s_L2, sigma2=sigma2)
    return c * (sigma2 + s_L2) / (sigma2 + c * (n * s_T2 * (1.0 - c) + s_L2))


def kvh_weight_heterogeneous(*, n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T=0.0, mu_L=0.0):
    """Weight of the KVH estimator for groups with different data (Avent et al. 2020, Def. 6.1).

    The minimizer of :func:`hybrid_mse` over w for any group means and variances:
    ``w* = c (s_L2 + c sigma_L2 + (1 - c)(n (mu_L - mu)(mu_L - mu_T) + sigma_T2))
    / (c s_L2 + (1 - c) c n ((mu_L - mu_T)^2 + s_T2) + c sigma_L2 + (1 - c) sigma_T2)``.
    It reduces to Def. 4.1 when the groups share mean and variance.

    Parameters
    ----------
    n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T, mu_L : float or array-like
        As in :func:`hybrid_mse` (a curator rarely knows the means; Sec. 6).

    Returns
    -------
    weight : float or ndarray
        In [0, 1]; the weight on the tcm group's estimate.
    """
    n, c, s_T2, s_L2, sigma_T2, sigma_L2, mu_T, mu_L = _checked(
        n=n, c=c, s_T2=s_T2, s_L2=s_L2, sigma_T2=sigma_T2, sigma_L2=sigma_L2, mu_T=mu_T, mu_L=mu_L
    )
    mu = _mixture_mean(c, mu_T, mu_L)
    numerator = c * (
        s_L2 + c * sigma_L2 + (1.0 - c) * (n * (mu_L - mu) * (mu_L - mu_T) + sigma_T2)
    )
    denominator = (
        c * s_L2
        + (1.0 - c) * c * n * ((mu_L - mu_T) ** 2 + s_T2)
        + c * sigma_L2
        + (1.0 - c) * sigma_T2
    )
    return numerator / denominator


def pwh_weight(*, n, c, s_T2, s_L2):
    """Weight of the privacy-weighted hybrid (PWH) estimator (Avent et al. 2020, Def. 5.3).

    ``w = s_L2 / (s_L2 + (1 - c) n s_T2)`` minimizes the privacy error alone,
    ``w^2 s_T2 + (1 - w)^2 s_L2 / ((1 - c) n)``, so it needs no knowledge of the data
    variance (the unknown-variance setting of Sec. 5).

    Parameters
    ----------
    n, c, s_T2, s_L2 : float or array-like
        As in :func:`hybrid_mse`; ``s_T2 + s_L2`` must be > 0.

    Returns
    -------
    weight : float or ndarray
        In [0, 1]; the weight on the tcm group's estimate.
    """
    n, c, s_T2, s_L2 = _checked(n=n, c=c, s_T2=s_T2, s_L2=s_L2)
    _check("s_L2 + (1 - c) n s_T2", _pwh_denominator(n, c, s_T2, s_L2), _POSITIVE)
    return pwh_weight_unchecked(n, c, s_T2, s_L2)


def _pwh_denominator(n, c, s_T2, s_L2):
    return s_L2 + (1.0 - c) * n * s_T2


def pwh_weight_unchecked(n, c, s_T2, s_L2):
    """:func:`pwh_weight` (Def. 5.3) of arrays the caller has already checked.

    For a loop that computes the weight of values in range by construction (HybridKMeans'
    cluster sizes of at least 1, its noise variances): the five checks of
    :func:`pwh_weight` cost half of an iteration's merge.
    """
    return s_L2 / _pwh_denominator(n, c, s_T2, s_L2)


def naive_weight(c):
    """Weight of the naive hybrid estimator, w = c (Avent et al. 2020, Sec. 5, "naive weighting").

    Weights the groups' estimates by their sizes, as the non-private empirical mean
    (Def. 2.1) does; the paper found it typically inferior to PWH.

    Parameters
    ----------
    c : float or array-like
        Fraction of tcm users, in (0, 1).

    Returns
    -------
    weight : float or ndarray
        Equal to ``c``.
    """
    return _check("c", c, _OPEN_UNIT)[()]


# --------------------------------------------------------------------------------------
# Privacy amplification (Sec. 8, Appendix D)
# --------------------------------------------------------------------------------------


def hybrid_privacy_amplification(*, weight, n, c, m, s_T2, s_L2, delta, n_adversarial=0):
    """Amplified epsilon of each group against output viewers (Avent et al. 2020, Theorem 8.1).

    The hybrid estimator releases ``w mu_tilde_T + (1 - w) mu_tilde_L`` once, so an
    adversary who sees only that output faces the joint Gaussian noise
    ``w Y_T + (1 - w) / ((1 - c) n) sum_{i in L \\ A} Y_{L,i}`` of variance
    ``s'^2 = w^2 s_T2 + ((1 - w) / ((1 - c) n))^2 |L \\ A| s_L2``, where A is the largest
    coalition of lm users who share their own noise. Solving the classic Gaussian
    calibration ``s' = sqrt(2 ln(1.25 / delta)) * sensitivity / epsilon'`` for epsilon'
    gives each group's amplified guarantee, at the same delta.

    Parameters
    ----------
    weight : float or array-like
        Weight w on the tcm group's estimate, in [0, 1].
    n, c, m : float or array-like
        As in :func:`laplace_noise_variances`.
    s_T2 : float or array-like
        Variance of the Gaussian noise on the tcm group's mean, > 0 (e.g. from
        :func:`gaussian_noise_variances`).
    s_L2 : float or array-like
        Variance of one lm user's Gaussian noise, > 0.
    delta : float or array-like
        The delta of the guarantee, in (0, 1); it is not amplified.
    n_adversarial : float or array-like, default=0
        ``|A|``, the number of lm users in the largest coalition whose noise is known to the
        adversary; between 0 and ``(1 - c) n``.

    Returns
    -------
    epsilon_tcm : float or ndarray
        The (epsilon', delta)-DP level of every tcm user against output-viewing
        adversaries (sensitivity ``w m / (c n)``).
    epsilon_lm : float or ndarray
        The same for every lm user outside the coalition (sensitivity
        ``(1 - w) m / ((1 - c) n)``). Every user also keeps their nominal guarantee
        (post-processing, Appendix D), so each value is capped at it:
        ``sqrt(2 ln(1.25/delta)) m / (c n sqrt(s_T2))`` for tcm users and
        ``sqrt(2 ln(1.25/delta)) m / sqrt(s_L2)`` for lm users. The cap binds only when
        the coalition holds every lm user.

    Notes
    -----
    Theorem 8.1 states one epsilon' for all users, taking the sensitivity to be
    ``w m / (c n)`` if ``w <= c`` and ``(1 - w) m / ((1 - c) n)`` otherwise. But
    ``w / c <= (1 - w) / (1 - c)`` exactly when ``w <= c``, so that is the *smaller* of the
    two per-user sensitivities, and the theorem's epsilon' equals
    ``min(epsilon_tcm, epsilon_lm)`` here: the guarantee of the better-protected group.
    The sensitivity of the whole release is the larger one, so a guarantee that covers
    every user is ``max(epsilon_tcm, epsilon_lm)``. Reporting each group's value
    separately is exact for both.

    The classic calibration is proven for epsilon < 1; like the paper, the formula is
    applied as is.
    """
    weight, n, c, m, s_T2, s_L2, delta, n_adversarial = _checked(
        positive=("s_T2", "s_L2"), weight=weight, n=n, c=c, m=m,
        s_T2=s_T2, s_L2=s_L2, delta=delta, n_adversarial=n_adversarial,
    )
    n_lm = (1.0 - c) * n
    n_adversarial, n_lm = np.broadcast_arrays(n_adversarial, n_lm)
    too_many = n_adversarial > n_lm * (1.0 + 1e-12)  # tolerate rounding in (1 - c) n
    if too_many.any():
        index = np.unravel_index(int(np.flatnonzero(too_many)[0]), too_many.shape)
        raise ValueError(
            "n_adversarial must be at most the number of lm users (1 - c) n; got "
            f"{n_adversarial[index].item()!r} with (1 - c) n = {n_lm[index].item()!r}"
        )
    honest_lm = np.maximum(n_lm - n_adversarial, 0.0)
    joint_std = np.sqrt(weight**2 * s_T2 + ((1.0 - weight) / n_lm) ** 2 * honest_lm * s_L2)
    calibration = np.sqrt(2.0 * np.log(1.25 / delta))  # Theorem 8.1's sqrt(2 ln(1.25/delta))

    def amplified(sensitivity, nominal_sensitivity, nominal_std):
        nominal = calibration * nominal_sensitivity / nominal_std
        with np.errstate(divide="ignore", invalid="ignore"):
            joint = np.where(sensitivity > 0, calibration * sensitivity / joint_std, 0.0)
        return np.minimum(joint, nominal)[()]

    epsilon_tcm = amplified(weight * m / (c * n), m / (c * n), np.sqrt(s_T2))
    epsilon_lm = amplified((1.0 - weight) * m / n_lm, m, np.sqrt(s_L2))
    return epsilon_tcm, epsilon_lm
