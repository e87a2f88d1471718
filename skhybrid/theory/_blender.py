"""Closed-form pieces of BLENDER (Avent et al., USENIX Security 2017).

BLENDER estimates the probabilities of the most popular (query, URL) search
records from two kinds of users: opt-in users, who trust the curator (central
differential privacy, Figures 3 and 4 of the paper), and clients, who randomize
their own record with the two-stage randomizer LocalAlg (Figure 6) against the
opt-in users' private head list. The server denoises the client reports
(Figure 5, Observation 1) and blends the two groups' estimates with
inverse-variance weights (Figure 7, Theorem 6).

The deterministic math only (noise is drawn in :mod:`skhybrid.heavy_hitters`): here
the opt-in users' side (Figures 3 and 4, Theorem 4) and the blending (Figure 7,
Theorem 6) with the projection onto the simplex; the clients' side in
:mod:`skhybrid.theory._blender_local`, the paper's metrics in
:mod:`skhybrid.theory._blender_metrics`.

References
----------
.. [1] B. Avent, A. Korolova, D. Zeber, T. Hovden, B. Livshits, "BLENDER:
   Enabling Local Search with a Hybrid Differential Privacy Model",
   USENIX Security 2017.
.. [2] W. Wang, M. A. Carreira-Perpinan, "Projection onto the probability
   simplex: An efficient algorithm with a simple proof, and an application",
   arXiv:1309.1541, 2013 (reference [39] of [1]).
"""

import numpy as np

__all__ = [
    "blend_estimates",
    "blended_variance",
    "blending_weights",
    "headlist_threshold",
    "optin_count_noise_scale",
    "optin_variance",
    "optin_variance_estimate",
    "project_onto_simplex",
]


# --------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------


def _positive(value, name):
    value = np.asarray(value, dtype=float)
    bad = ~(value > 0)
    if np.any(bad):
        raise ValueError(f"{name} must be > 0; got {value[bad].flat[0].item()!r}")
    return value


def _privacy_delta(delta):
    delta = np.asarray(delta, dtype=float)
    bad = ~((delta > 0) & (delta < 1))
    if np.any(bad):
        raise ValueError(f"delta must be in (0, 1); got {delta[bad].flat[0].item()!r}")
    return delta


def _records_per_user(records_per_user):
    value = np.asarray(records_per_user)
    if value.ndim or not np.issubdtype(value.dtype, np.integer) or value < 1:
        raise ValueError(
            f"records_per_user must be an integer >= 1; got {records_per_user!r}"
        )
    return int(value)


def _scalar_or_array(value):
    """Return a Python float for 0-d results, the array otherwise."""
    return float(value) if np.ndim(value) == 0 else value


def _check_variances(variances, name):
    variances = np.asarray(variances, dtype=float)
    bad = np.isnan(variances) | (variances < 0)
    if np.any(bad):
        index = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(
            f"{name} must be >= 0 (clip negative unbiased estimates at a small "
            f"positive floor before blending); got {float(variances.ravel()[index])!r} "
            f"at index {index}"
        )
    return variances


# --------------------------------------------------------------------------
# Opt-in users (trusted curator): Figures 3 and 4, Theorem 4
# --------------------------------------------------------------------------


def optin_count_noise_scale(epsilon, *, records_per_user=1):
    """Laplace scale added to opt-in record counts: ``b = 2 m_O / epsilon``.

    The scale ``b_S`` of CreateHeadList (Figure 3, line 6) and ``b_T`` of
    EstimateOptinProbabilities (Figure 4), which share one definition:
    neighbouring databases differ in the *values* of one user's ``m_O``
    records, which moves at most ``2 m_O`` unit counts, so the L1
    sensitivity of the count vector is ``2 m_O``.

    Parameters
    ----------
    epsilon : float or array-like
        Privacy parameter, > 0.
    records_per_user : int, default=1
        ``m_O``, the number of records collected per opt-in user. The paper
        requires ``m_O = 1`` for EstimateOptinProbabilities (Section 2).

    Returns
    -------
    scale : float or ndarray
        The Laplace scale ``b``.

    Notes
    -----
    The extracted text reads ``b S = 2m O .``; the ``/ epsilon`` was lost in
    extraction and is restored from the sensitivity argument above.
    """
    epsilon = _positive(epsilon, "epsilon")
    return _scalar_or_array(2.0 * _records_per_user(records_per_user) / epsilon)


def headlist_threshold(epsilon, delta, *, records_per_user=1):
    """Noisy-count threshold of CreateHeadList: ``tau = b_S (ln(e^(eps/2) + m_O - 1) - ln delta)``.

    A record enters the candidate head list when its opt-in count plus
    ``Laplace(b_S)`` noise exceeds ``tau`` (Figure 3, lines 7-11, after
    Korolova et al. 2009, reference [24] of the paper). It does not depend on
    the number of opt-in users ``|S|``: the comparison is on counts.

    Parameters
    ----------
    epsilon : float or array-like
        Privacy parameter, > 0.
    delta : float or array-like
        Privacy parameter, in (0, 1).
    records_per_user : int, default=1
        ``m_O``, the number of records collected per opt-in user.

    Returns
    -------
    threshold : float or ndarray
        ``tau`` on the scale of record counts; always >= 1 for ``delta < 1``
        (the paper's ``Assert tau >= 1``, line 8).

    Notes
    -----
    Re-derived, because the extracted text reads
    ``tau = bs * ln(exp( 2 ) + m O - 1) - ln(delta)`` (the epsilons are lost).
    For ``m_O = 1`` the formula is ``tau = 1 + b_S ln(1 / delta)``: a record
    held by a single user, the only one that can appear in one neighbour's
    output and not the other's, passes with probability
    ``P(1 + Laplace(b_S) > tau) = exp(-(tau - 1) / b_S) / 2 = delta / 2``.
    """
    epsilon = _positive(epsilon, "epsilon")
    delta = _privacy_delta(delta)
    m = _records_per_user(records_per_user)
    # ln(e^(eps/2) + m - 1) written to stay finite for large epsilon.
    log_term = epsilon / 2 + np.log1p((m - 1) * np.exp(-epsilon / 2))
    return _scalar_or_array(2.0 * m / epsilon * (log_term - np.log(delta)))


def optin_variance(record_probabilities, n_records, noise_scale):
    """Variance of the opt-in estimate ``(N(q,u) + Y) / |D_T|``: ``p(1-p)/n + 2 b^2 / n^2``.

    Proof of Theorem 4 (m_O = 1): the estimate is a Bernoulli mean of
    ``n = |D_T|`` reports plus ``Laplace(b_T) / n``, whose variance is
    ``2 b_T^2 / n^2``.

    Parameters
    ----------
    record_probabilities : array-like
        True record probabilities ``p_{q,u}``.
    n_records : int
        ``|D_T|``, the number of opt-in records used for estimation.
    noise_scale : float
        ``b_T``, see :func:`optin_count_noise_scale`.

    Returns
    -------
    variance : float or ndarray
    """
    p = np.asarray(record_probabilities, dtype=float)
    n = float(n_records)
    if not n >= 1:
        raise ValueError(f"n_records must be >= 1; got {n_records!r}")
    b = float(noise_scale)
    if not b >= 0:
        raise ValueError(f"noise_scale must be >= 0; got {noise_scale!r}")
    return _scalar_or_array(p * (1 - p) / n + 2 * b**2 / n**2)


def optin_variance_estimate(estimated_probabilities, n_records, noise_scale):
    """Unbiased estimate of :func:`optin_variance` from the noisy estimate (Theorem 4).

    ``sigma^2_O = n / (n - 1) * (p_hat (1 - p_hat) / n + 2 b_T^2 / n^2)``,
    the Bessel-corrected plug-in (Figure 4, line 13; Theorem 4).

    Parameters
    ----------
    estimated_probabilities : array-like
        Opt-in estimates ``p_hat_{O,q,u}`` (may lie outside [0, 1]).
    n_records : int
        ``|D_T|``, >= 2.
    noise_scale : float
        ``b_T``.

    Returns
    -------
    variance : float or ndarray
        Unbiased, so it can be negative when ``p_hat`` falls outside [0, 1];
        clip it (e.g. at ``optin_variance(0, n_records, noise_scale)``, the
        noise-only variance) before blending.

    Notes
    -----
    The extracted text prints ``2 b T |D T | 2`` (the square on ``b_T`` is
    lost); Figure 4, line 13 has ``2 b_T^2 / (|D_T| (|D_T| - 1))``, which is
    the same expression. The correction makes both terms unbiased, because
    ``E[p_hat (1 - p_hat)] = p (1 - p) (n - 1) / n - 2 b^2 / n^2``.
    """
    n = float(n_records)
    if not n >= 2:
        raise ValueError(f"n_records must be >= 2; got {n_records!r}")
    return _scalar_or_array(
        n / (n - 1) * np.asarray(optin_variance(estimated_probabilities, n, noise_scale))
    )

# --------------------------------------------------------------------------
# Blending: Figure 7, Theorem 6; projection onto the simplex
# --------------------------------------------------------------------------


def blending_weights(optin_variances, client_variances):
    """Weight of the opt-in estimate, ``w = sigma^2_C / (sigma^2_O + sigma^2_C)`` (Theorem 6).

    The inverse-variance weight: the convex combination
    ``w p_O + (1 - w) p_C`` of two independent unbiased estimates has
    variance ``w^2 sigma^2_O + (1 - w)^2 sigma^2_C``, minimised at this ``w``
    (Figure 7, line 3).

    Parameters
    ----------
    optin_variances, client_variances : array-like
        Variances (or their estimates) of the two estimates, >= 0, ``inf``
        allowed for a missing estimate. Broadcast against each other.

    Returns
    -------
    weights : float or ndarray
        In [0, 1]. Two zero (or two infinite) variances give 1/2; an infinite
        variance gives its estimate weight 0.
    """
    optin = _check_variances(optin_variances, "optin_variances")
    client = _check_variances(client_variances, "client_variances")
    optin, client = np.broadcast_arrays(optin, client)
    with np.errstate(invalid="ignore"):
        weights = client / (optin + client)
    weights = np.where(np.isinf(client) & ~np.isinf(optin), 1.0, weights)
    weights = np.where(np.isnan(weights), 0.5, weights)  # 0/0 and inf/inf
    return _scalar_or_array(weights)


def blended_variance(weights, optin_variances, client_variances):
    """Variance of ``w p_O + (1 - w) p_C``: ``w^2 sigma^2_O + (1 - w)^2 sigma^2_C``.

    For independent opt-in and client estimates (proof of Theorem 6).

    Parameters
    ----------
    weights : array-like
        Weight ``w`` of the opt-in estimate.
    optin_variances, client_variances : array-like
        Variances of the two estimates.

    Returns
    -------
    variance : float or ndarray
    """
    w = np.asarray(weights, dtype=float)
    optin = np.asarray(optin_variances, dtype=float)
    client = np.asarray(client_variances, dtype=float)
    # A zero weight on an infinite variance contributes nothing, not nan.
    with np.errstate(invalid="ignore"):
        optin_term = np.where(w == 0, 0.0, w**2 * optin)
        client_term = np.where(w == 1, 0.0, (1 - w) ** 2 * client)
    return _scalar_or_array(optin_term + client_term)


def blend_estimates(optin_estimates, optin_variances, client_estimates, client_variances):
    """Inverse-variance blend of the opt-in and client estimates (Figure 7, Theorem 6).

    Parameters
    ----------
    optin_estimates, optin_variances : array-like
        ``p_hat_O`` and ``sigma^2_O`` per record.
    client_estimates, client_variances : array-like
        ``p_hat_C`` and ``sigma^2_C`` per record.

    Returns
    -------
    estimates : ndarray
        ``w p_hat_O + (1 - w) p_hat_C`` with ``w`` from :func:`blending_weights`
        (not projected; see :func:`project_onto_simplex`, Figure 7, line 5).
    variances : ndarray
        :func:`blended_variance` at that ``w``.
    """
    weights = np.asarray(blending_weights(optin_variances, client_variances))
    optin = np.asarray(optin_estimates, dtype=float)
    client = np.asarray(client_estimates, dtype=float)
    # Select rather than multiply where a weight is 0 or 1, so that a missing
    # (nan, infinite-variance) estimate does not turn the blend into nan.
    with np.errstate(invalid="ignore"):
        mixed = weights * optin + (1 - weights) * client
    estimates = np.where(weights == 0, client, np.where(weights == 1, optin, mixed))
    return estimates, np.asarray(
        blended_variance(weights, optin_variances, client_variances)
    )


def project_onto_simplex(values, *, total=1.0):
    """Euclidean projection onto ``{x : x >= 0, sum(x) = total}`` along the last axis.

    The optional step of BlendProbabilities (Figure 7, line 5), with the
    sort-based algorithm of Wang and Carreira-Perpinan (2013, the paper's
    reference [39]; also Duchi et al. 2008): ``x = max(v - theta, 0)`` with
    ``theta`` chosen so that ``x`` sums to ``total``.

    Parameters
    ----------
    values : array-like, shape (..., n)
        Points to project, one per row.
    total : float, default=1.0
        The simplex scale, > 0.

    Returns
    -------
    projection : ndarray, shape (..., n)
    """
    v = np.asarray(values, dtype=float)
    if v.ndim == 0 or v.shape[-1] == 0:
        raise ValueError(f"values must have a non-empty last axis; got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    total = float(total)
    if not total > 0:
        raise ValueError(f"total must be > 0; got {total!r}")
    descending = -np.sort(-v, axis=-1)
    excess = np.cumsum(descending, axis=-1) - total
    ranks = np.arange(1, v.shape[-1] + 1)
    # The support size: the condition holds for a prefix of the sorted values.
    support = np.count_nonzero(descending - excess / ranks > 0, axis=-1)
    theta = np.take_along_axis(excess, support[..., None] - 1, axis=-1) / support[..., None]
    return np.maximum(v - theta, 0.0)
