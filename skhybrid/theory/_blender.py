"""Closed-form pieces of BLENDER (Avent et al., USENIX Security 2017).

BLENDER estimates the probabilities of the most popular (query, URL) search
records from two kinds of users: opt-in users, who trust the curator (central
differential privacy, Figures 3 and 4 of the paper), and clients, who randomize
their own record with the two-stage randomizer LocalAlg (Figure 6) against the
opt-in users' private head list. The server denoises the client reports
(Figure 5, Observation 1) and blends the two groups' estimates with
inverse-variance weights (Figure 7, Theorem 6).

This module holds the deterministic math only: noise scales, thresholds,
randomizer probabilities, denoising, variances, blending, the simplex
projection and the paper's metrics. Noise is drawn elsewhere.

Head-list convention used by the client-side functions
------------------------------------------------------
The head list is described as the clients see it after lines 1-3 of
EstimateClientProbabilities: ``urls_per_query[i]`` is the number of URLs
``k_q`` of the i-th query, *including* the wildcard URL ``*`` that every query
receives, and the list of queries *includes* the wildcard query ``*`` (whose
only URL is ``*``, so its entry is 1). ``k = len(urls_per_query)``. Records are
flattened query-major: the records of query 0 first, then those of query 1,
and so on; :func:`record_query_index` gives the query of every flat record.
A client whose true record is not in the head list reports as if it held
``(q, *)`` when ``q`` is a head-list query and ``(*, *)`` otherwise (LocalAlg,
lines 8-11).

Throughout, ``m_C = 1`` record per client (the paper's choice in Section 4.2.1
and the setting of Theorem 5); LocalAlg with ``m_C > 1`` is the same
randomizer run with ``epsilon / m_C`` and ``delta / m_C``.

References
----------
.. [1] B. Avent, A. Korolova, D. Zeber, T. Hovden, B. Livshits, "BLENDER:
   Enabling Local Search with a Hybrid Differential Privacy Model",
   USENIX Security 2017.
.. [2] W. Wang, M. A. Carreira-Perpinan, "Projection onto the probability
   simplex: An efficient algorithm with a simple proof, and an application",
   arXiv:1309.1541, 2013 (reference [39] of [1]).
"""

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

__all__ = [
    "LocalAlgParameters",
    "blend_estimates",
    "blended_variance",
    "blending_weights",
    "client_report_probabilities",
    "client_variance",
    "client_variance_estimate",
    "denoise_client_reports",
    "headlist_threshold",
    "l1_distance",
    "list_of_lists_ndcg",
    "local_alg_achieved_privacy",
    "local_alg_keep_probability",
    "local_alg_parameters",
    "local_alg_transition_matrix",
    "local_randomizer_delta",
    "optin_count_noise_scale",
    "optin_variance",
    "optin_variance_estimate",
    "project_onto_simplex",
    "record_query_index",
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


def _check_urls_per_query(urls_per_query):
    urls = np.asarray(urls_per_query)
    if urls.ndim != 1 or urls.size < 2:
        raise ValueError(
            "urls_per_query must be a 1-D array with one entry per head-list query, "
            f"at least 2 including the wildcard query; got shape {urls.shape}"
        )
    if not np.issubdtype(urls.dtype, np.integer):
        if not np.all(np.isfinite(urls)) or np.any(urls != np.round(urls)):
            raise ValueError(f"urls_per_query must hold integers; got {urls!r}")
        urls = urls.astype(np.int64)
    if np.any(urls < 1):
        index = int(np.flatnonzero(urls < 1)[0])
        raise ValueError(
            "every query has at least its wildcard URL, so urls_per_query must be "
            f">= 1; got {urls[index]} at index {index}"
        )
    return urls.astype(np.int64)


def _check_probability(value, name):
    value = np.asarray(value, dtype=float)
    bad = ~((value >= 0) & (value <= 1))
    if np.any(bad):
        raise ValueError(f"{name} must be in [0, 1]; got {value[bad].flat[0].item()!r}")
    return value


def _randomizer(query_keep_probability, url_keep_probability, urls_per_query):
    """Validate the LocalAlg description; return (t, t_q array, k_q array)."""
    urls = _check_urls_per_query(urls_per_query)
    query_keep = _check_probability(query_keep_probability, "query_keep_probability")
    if query_keep.ndim:
        raise ValueError(
            f"query_keep_probability must be a scalar; got shape {query_keep.shape}"
        )
    url_keep = _check_probability(url_keep_probability, "url_keep_probability")
    try:
        url_keep = np.broadcast_to(url_keep, urls.shape).astype(float)
    except ValueError:
        raise ValueError(
            "url_keep_probability must be a scalar or have one entry per query "
            f"({urls.size}); got shape {np.shape(url_keep_probability)}"
        ) from None
    return float(query_keep), url_keep, urls


def _check_identifiable(query_keep, url_keep, urls):
    """Denoising divides by these gains; they vanish for uninformative reports."""
    n_queries = urls.size
    if not query_keep * n_queries > 1:
        raise ValueError(
            "query_keep_probability must exceed 1 / k for the query reports to be "
            f"informative; got {query_keep!r} with k = {n_queries}"
        )
    bad = (urls > 1) & ~(url_keep * urls > 1)
    if np.any(bad):
        index = int(np.flatnonzero(bad)[0])
        raise ValueError(
            "url_keep_probability must exceed 1 / k_q for the URL reports to be "
            f"informative; got {float(url_keep[index])!r} with k_q = {urls[index]} "
            f"at query index {index}"
        )


def _report_counts(report_counts, n_records):
    counts = np.asarray(report_counts, dtype=float)
    if counts.shape != (n_records,):
        raise ValueError(
            f"report_counts must have one entry per head-list record ({n_records}); "
            f"got shape {counts.shape}"
        )
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise ValueError("report_counts must be finite and >= 0")
    total = counts.sum()
    if total <= 0:
        raise ValueError("report_counts must contain at least one report")
    return counts, total


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
# Clients (local model): Figures 5 and 6, Theorem 3, Observation 1, Theorem 5
# --------------------------------------------------------------------------


class LocalAlgParameters(NamedTuple):
    """Resolved parameters of LocalAlg (Figure 6, lines 2-6), with ``m_C = 1``."""

    query_keep_probability: float
    """``t``: probability of reporting the true query."""
    url_keep_probability: np.ndarray
    """``t_q`` for every head-list query: probability of reporting the true URL."""
    epsilon_query: float
    """``epsilon_Q = f_C epsilon``, the budget of the query stage."""
    epsilon_url: float
    """``epsilon_U = epsilon - epsilon_Q``, the budget of the URL stage."""
    delta_query: float
    """``delta_Q = f_C delta``."""
    delta_url: float
    """``delta_U = delta - delta_Q``."""


def record_query_index(urls_per_query):
    """Query index of every flat head-list record, ``np.repeat(arange(k), k_q)``.

    Parameters
    ----------
    urls_per_query : array-like of int, shape (k,)
        ``k_q`` for each head-list query, wildcards included (see the module
        docstring).

    Returns
    -------
    query_index : ndarray of int, shape (sum(urls_per_query),)
    """
    urls = _check_urls_per_query(urls_per_query)
    return np.repeat(np.arange(urls.size), urls)


def local_alg_keep_probability(epsilon, delta, n_choices):
    """Probability that LocalAlg keeps a true value among ``n`` choices.

    ``(e^epsilon + (delta / 2)(n - 1)) / (e^epsilon + n - 1)`` (Figure 6,
    line 4 for the query, ``t``; line 6 for the URL, ``t_q``): randomized
    response over ``n`` values, with the keep probability raised so that
    inequality (1) of Theorem 3's proof holds with equality,
    ``t = e^epsilon (1 - t) / (n - 1) + delta / 2``.

    Parameters
    ----------
    epsilon : float or array-like
        Budget of this stage, >= 0.
    delta : float or array-like
        Delta of this stage, in [0, 1).
    n_choices : int or array-like of int
        ``k`` (queries) or ``k_q`` (URLs of query q), >= 1. With one choice
        the value is always kept.

    Returns
    -------
    keep_probability : float or ndarray
    """
    epsilon = np.asarray(epsilon, dtype=float)
    if np.any(~(epsilon >= 0)):
        raise ValueError(f"epsilon must be >= 0; got {epsilon!r}")
    delta = np.asarray(delta, dtype=float)
    if np.any(~((delta >= 0) & (delta < 1))):
        raise ValueError(f"delta must be in [0, 1); got {delta!r}")
    n = np.asarray(n_choices, dtype=float)
    if np.any(~(n >= 1)):
        raise ValueError(f"n_choices must be >= 1; got {n_choices!r}")
    # Divided through by e^epsilon so that large budgets do not overflow.
    others = (n - 1) * np.exp(-epsilon)
    return _scalar_or_array((1 + delta / 2 * others) / (1 + others))


def local_alg_parameters(epsilon, delta, urls_per_query, *, query_budget_fraction=0.85):
    """Keep probabilities ``t``, ``t_q`` and stage budgets of LocalAlg (Figure 6).

    The client's ``(epsilon, delta)`` is split between reporting the query
    (``epsilon_Q = f_C epsilon``, ``delta_Q = f_C delta``) and reporting the
    URL (the remainder), lines 2-6 of LocalAlg with ``m_C = 1``.

    Parameters
    ----------
    epsilon : float
        The client's privacy budget, > 0.
    delta : float
        The client's delta, in (0, 1).
    urls_per_query : array-like of int, shape (k,)
        ``k_q`` for each head-list query, wildcards included.
    query_budget_fraction : float, default=0.85
        ``f_C``, in (0, 1); 0.85 is the paper's choice (Section 4.2.1).

    Returns
    -------
    parameters : LocalAlgParameters
        ``query_keep_probability`` (``t``), ``url_keep_probability``
        (``t_q``, shape (k,)) and the four stage budgets.
    """
    epsilon = float(_positive(epsilon, "epsilon"))
    delta = float(_privacy_delta(delta))
    fraction = float(query_budget_fraction)
    if not 0 < fraction < 1:
        raise ValueError(
            "query_budget_fraction must be in (0, 1) so that both the query and the "
            f"URL reports carry information; got {query_budget_fraction!r}"
        )
    urls = _check_urls_per_query(urls_per_query)
    epsilon_query, delta_query = fraction * epsilon, fraction * delta
    epsilon_url, delta_url = epsilon - epsilon_query, delta - delta_query
    return LocalAlgParameters(
        query_keep_probability=local_alg_keep_probability(
            epsilon_query, delta_query, urls.size
        ),
        url_keep_probability=np.asarray(
            local_alg_keep_probability(epsilon_url, delta_url, urls), dtype=float
        ),
        epsilon_query=epsilon_query,
        epsilon_url=epsilon_url,
        delta_query=delta_query,
        delta_url=delta_url,
    )


def local_alg_transition_matrix(query_keep_probability, url_keep_probability, urls_per_query):
    """Probability of each report given each true record under LocalAlg (Figure 6).

    Entry ``[x, y]`` is ``P(report y | true record x)`` over the flat head-list
    records (wildcards included):

    - ``y = x``: ``t t_q`` (keep the query, keep the URL);
    - same query, other URL: ``t (1 - t_q) / (k_q - 1)`` (lines 17-19);
    - other query ``q'``: ``(1 - t) / ((k - 1) k_q')`` (lines 12-16: a
      uniform other query, then a uniform URL of it).

    Sampling a client's report is a categorical draw from row ``x``.

    Parameters
    ----------
    query_keep_probability : float
        ``t``.
    url_keep_probability : float or array-like, shape (k,)
        ``t_q`` for every query.
    urls_per_query : array-like of int, shape (k,)
        ``k_q`` for each head-list query, wildcards included.

    Returns
    -------
    transition : ndarray, shape (n_records, n_records)
        Rows sum to 1.
    """
    t, t_q, urls = _randomizer(query_keep_probability, url_keep_probability, urls_per_query)
    n_queries = urls.size
    query = np.repeat(np.arange(n_queries), urls)
    other_query = (1 - t) / ((n_queries - 1) * urls[query])
    # 0 / 0 for single-URL queries, where that branch never happens.
    other_url = np.divide(
        t * (1 - t_q), urls - 1, out=np.zeros(n_queries), where=urls > 1
    )[query]
    same_query = query[:, None] == query[None, :]
    transition = np.where(same_query, other_url[None, :], other_query[None, :])
    np.fill_diagonal(transition, t * t_q[query])
    return transition


def _keep_or_replace_slack(keep, n_choices, epsilon):
    """Largest pointwise excess ``P(y|x) - e^eps P(y|x')`` of randomized response."""
    replace = np.divide(1 - keep, n_choices - 1, out=np.zeros_like(keep), where=n_choices > 1)
    slack = np.maximum(keep - np.exp(epsilon) * replace, replace - np.exp(epsilon) * keep)
    return np.where(n_choices > 1, np.maximum(slack, 0.0), 0.0)


def local_alg_achieved_privacy(
    query_keep_probability,
    url_keep_probability,
    urls_per_query,
    *,
    epsilon_query,
    epsilon_url,
):
    """The ``(epsilon, delta)`` that Theorem 3's proof certifies for LocalAlg.

    The proof bounds each stage by inequality (1),
    ``P(L(q) = y) <= e^eps_Q P(L(q') = y) + delta_Q / 2`` for every output,
    charges ``delta_Q / 2`` to each of the two outputs in ``{q, q'}`` (so the
    query stage is ``(eps_Q, delta_Q)``-DP with ``delta_Q`` twice the largest
    pointwise excess), does the same for the URL stage of every query, and
    composes: ``(eps_Q + eps_U, delta_Q + delta_U)``.

    Parameters
    ----------
    query_keep_probability : float
        ``t``.
    url_keep_probability : float or array-like, shape (k,)
        ``t_q`` for every query.
    urls_per_query : array-like of int, shape (k,)
        ``k_q`` for each head-list query, wildcards included.
    epsilon_query, epsilon_url : float
        The stage budgets at which to evaluate the deltas.

    Returns
    -------
    epsilon : float
        ``epsilon_query + epsilon_url``.
    delta : float
        ``delta_Q + delta_U``, with ``delta_U`` the worst query's.

    See Also
    --------
    local_randomizer_delta : the exact (tight) delta of any local randomizer.
    """
    t, t_q, urls = _randomizer(query_keep_probability, url_keep_probability, urls_per_query)
    epsilon_query = float(epsilon_query)
    epsilon_url = float(epsilon_url)
    if not (epsilon_query >= 0 and epsilon_url >= 0):
        raise ValueError(
            f"stage budgets must be >= 0; got {epsilon_query!r}, {epsilon_url!r}"
        )
    delta_query = 2 * float(_keep_or_replace_slack(np.asarray(t), urls.size, epsilon_query))
    delta_url = 2 * float(np.max(_keep_or_replace_slack(t_q, urls, epsilon_url)))
    return epsilon_query + epsilon_url, delta_query + delta_url


def local_randomizer_delta(transition_matrix, epsilon):
    """Exact delta of a local randomizer at a given epsilon (hockey-stick divergence).

    ``max_{x, x'} sum_y max(0, P(y|x) - e^epsilon P(y|x'))``: the smallest
    delta for which the randomizer with this transition matrix is
    ``(epsilon, delta)``-DP in the local model (Section 1's definition, with
    the set of outputs ``Y`` chosen as the outputs where the excess is
    positive).

    Parameters
    ----------
    transition_matrix : array-like, shape (n_inputs, n_outputs)
        ``P(y | x)``, rows summing to 1.
    epsilon : float
        >= 0.

    Returns
    -------
    delta : float
    """
    transition = np.asarray(transition_matrix, dtype=float)
    if transition.ndim != 2:
        raise ValueError(f"transition_matrix must be 2-D; got shape {transition.shape}")
    factor = np.exp(float(epsilon))
    worst = 0.0
    # Chunked over x so memory stays O(chunk * n_inputs * n_outputs).
    chunk = max(1, 2**22 // max(1, transition.size))
    for start in range(0, transition.shape[0], chunk):
        rows = transition[start : start + chunk, None, :]
        excess = np.maximum(rows - factor * transition[None, :, :], 0.0).sum(axis=-1)
        worst = max(worst, float(excess.max()))
    return worst


def client_report_probabilities(
    record_probabilities, *, query_keep_probability, url_keep_probability, urls_per_query
):
    """Distribution of client reports, ``r = p @ P`` (Observation 1's forward model).

    Parameters
    ----------
    record_probabilities : array-like, shape (n_records,)
        ``p_{q,u}`` over the flat head-list records (wildcards absorbing the
        mass of records outside the head list), summing to 1.
    query_keep_probability, url_keep_probability, urls_per_query
        As in :func:`local_alg_transition_matrix`.

    Returns
    -------
    report_probabilities : ndarray, shape (n_records,)
        ``r_{C,q,u}``; the query report probabilities ``r_{C,q}`` are its
        per-query sums.
    """
    transition = local_alg_transition_matrix(
        query_keep_probability, url_keep_probability, urls_per_query
    )
    p = np.asarray(record_probabilities, dtype=float)
    if p.shape != (transition.shape[0],):
        raise ValueError(
            f"record_probabilities must have one entry per head-list record "
            f"({transition.shape[0]}); got shape {p.shape}"
        )
    return p @ transition


class _Denoiser(NamedTuple):
    """Coefficients of the affine map from report frequencies to estimates."""

    query: np.ndarray  # query index of each record
    urls: np.ndarray  # k_q per record
    query_offset: float  # P(report q | true query != q) = (1 - t) / (k - 1)
    query_gain: float  # t - (1 - t) / (k - 1) = (k t - 1) / (k - 1)
    url_offset: np.ndarray  # per record: t (1 - t_q) / (k_q - 1), 0 if k_q = 1
    record_gain: np.ndarray  # per record: t (t_q - (1 - t_q) / (k_q - 1))
    query_coefficient: np.ndarray  # per record: weight of p_hat_q in p_hat_{q,u}


def _denoiser(query_keep_probability, url_keep_probability, urls_per_query):
    t, t_q, urls = _randomizer(query_keep_probability, url_keep_probability, urls_per_query)
    _check_identifiable(t, t_q, urls)
    n_queries = urls.size
    query = np.repeat(np.arange(n_queries), urls)
    query_offset = (1 - t) / (n_queries - 1)
    url_offset = np.divide(t * (1 - t_q), urls - 1, out=np.zeros(n_queries), where=urls > 1)
    return _Denoiser(
        query=query,
        urls=urls[query],
        query_offset=query_offset,
        query_gain=t - query_offset,
        url_offset=url_offset[query],
        record_gain=(t * t_q - url_offset)[query],
        query_coefficient=query_offset / urls[query] - url_offset[query],
    )


def denoise_client_reports(
    report_counts, *, query_keep_probability, url_keep_probability, urls_per_query
):
    """Unbiased query and record probabilities from client reports (Observation 1).

    Inverts the known reporting process (Figure 5, lines 11-16):
    ``p_q = (r_q - (1-t)/(k-1)) / (t - (1-t)/(k-1))`` and
    ``p_{q,u} = (r_{q,u} - t (1-t_q) p_q / (k_q-1) - (1-t)(1-p_q) / ((k-1) k_q))
    / (t (t_q - (1-t_q)/(k_q-1)))``, with the empirical report frequencies
    in place of ``r``.

    Parameters
    ----------
    report_counts : array-like, shape (n_records,)
        Number of client reports of each flat head-list record. The query
        counts are their per-query sums (every report is a head-list record).
    query_keep_probability, url_keep_probability, urls_per_query
        As in :func:`local_alg_transition_matrix`; ``k t > 1`` and
        ``k_q t_q > 1`` (for ``k_q > 1``) are required.

    Returns
    -------
    query_probabilities : ndarray, shape (k,)
        ``p_hat_{C,q}``.
    record_probabilities : ndarray, shape (n_records,)
        ``p_hat_{C,q,u}``.

    Notes
    -----
    The record equation is re-derived, because the extracted text of
    Observation 1's proof is garbled (``r C,q,u = t * t q * p q,u + t (1 - p
    q ),``). A report ``(q, u)`` comes from the true record kept
    (``t t_q p_{q,u}``), from another URL of ``q`` whose URL was replaced
    (``t (1 - t_q) / (k_q - 1) (p_q - p_{q,u})``) or from another query
    replaced by ``q`` with ``u`` drawn uniformly
    (``(1 - t) / ((k - 1) k_q) (1 - p_q)``); solving for ``p_{q,u}`` gives
    Figure 5, line 16 as printed.
    """
    coef = _denoiser(query_keep_probability, url_keep_probability, urls_per_query)
    counts, total = _report_counts(report_counts, coef.query.size)
    record_frequency = counts / total
    query_frequency = np.bincount(coef.query, weights=record_frequency)
    query_probabilities = (query_frequency - coef.query_offset) / coef.query_gain
    p_query = query_probabilities[coef.query]
    record_probabilities = (
        record_frequency
        - coef.url_offset * p_query
        - coef.query_offset * (1 - p_query) / coef.urls
    ) / coef.record_gain
    return query_probabilities, record_probabilities


def _client_variance(record_frequency, n_effective, coef):
    """Theorem 5's variance with frequencies and sample size given.

    ``p_hat_{q,u} = (r_{q,u} + c p_hat_q - const) / g`` with
    ``p_hat_q = (r_q - const) / h``, so
    ``Var = (Var r_{q,u} + c^2 Var p_hat_q + 2 c Cov(r_{q,u}, r_q) / h) / g^2``
    with multinomial moments ``Var r = r (1 - r) / n`` and
    ``Cov(r_{q,u}, r_q) = r_{q,u} (1 - r_q) / n`` (a report of (q, u) is a
    report of q). With ``n - 1`` and empirical frequencies in place of ``n``
    and ``r`` each term is unbiased.
    """
    query_frequency = np.bincount(coef.query, weights=record_frequency)
    query_variances = query_frequency * (1 - query_frequency) / (
        n_effective * coef.query_gain**2
    )
    r_query = query_frequency[coef.query]
    c = coef.query_coefficient
    record_variances = (
        record_frequency * (1 - record_frequency) / n_effective
        + c**2 * query_variances[coef.query]
        + 2 * c * record_frequency * (1 - r_query) / (n_effective * coef.query_gain)
    ) / coef.record_gain**2
    return query_variances, record_variances


def client_variance(
    report_probabilities,
    n_reports,
    *,
    query_keep_probability,
    url_keep_probability,
    urls_per_query,
):
    """Exact variance of :func:`denoise_client_reports` for ``n`` reports (Theorem 5's proof).

    Parameters
    ----------
    report_probabilities : array-like, shape (n_records,)
        ``r_{C,q,u}``, e.g. from :func:`client_report_probabilities`.
    n_reports : int
        ``|D_C|``, the number of client reports.
    query_keep_probability, url_keep_probability, urls_per_query
        As in :func:`local_alg_transition_matrix`.

    Returns
    -------
    query_variances : ndarray, shape (k,)
        ``Var p_hat_{C,q} = r_q (1 - r_q) / (n (t - (1-t)/(k-1))^2)``.
    record_variances : ndarray, shape (n_records,)
        ``Var p_hat_{C,q,u}``, see Notes of :func:`client_variance_estimate`.
    """
    coef = _denoiser(query_keep_probability, url_keep_probability, urls_per_query)
    r = np.asarray(report_probabilities, dtype=float)
    if r.shape != coef.query.shape:
        raise ValueError(
            f"report_probabilities must have one entry per head-list record "
            f"({coef.query.size}); got shape {r.shape}"
        )
    n = float(n_reports)
    if not n >= 1:
        raise ValueError(f"n_reports must be >= 1; got {n_reports!r}")
    return _client_variance(r, n, coef)


def client_variance_estimate(
    report_counts, *, query_keep_probability, url_keep_probability, urls_per_query
):
    """Unbiased variance estimates of the client estimates (Theorem 5, corrected).

    ``sigma^2_{C,q} = r_q (1 - r_q) / ((n - 1) h^2)`` (Figure 5, line 13) and

    ``sigma^2_{C,q,u} = [r_{q,u}(1 - r_{q,u}) / (n - 1) + c^2 sigma^2_{C,q}
    + 2 c r_{q,u} (1 - r_q) / ((n - 1) h)] / g^2``

    with ``r`` the empirical report frequencies, ``n = |D_C|``,
    ``h = t - (1-t)/(k-1) = (k t - 1)/(k - 1)``,
    ``g = t (t_q - (1-t_q)/(k_q-1))`` and
    ``c = (1-t)/((k-1) k_q) - t (1-t_q)/(k_q-1)``.

    Parameters
    ----------
    report_counts : array-like, shape (n_records,)
        Number of client reports of each flat head-list record (at least 2
        reports in total).
    query_keep_probability, url_keep_probability, urls_per_query
        As in :func:`local_alg_transition_matrix`.

    Returns
    -------
    query_variances : ndarray, shape (k,)
    record_variances : ndarray, shape (n_records,)
        Unbiased, hence possibly negative; clip before blending.

    Notes
    -----
    Re-derived; it differs from Theorem 5 as printed in the covariance term.
    The paper's third term reads
    ``2 |D_C| / (|D_C| - 1) * c * (k - 2 + t) / (k t - 1) * r_{q,u}``: it
    lacks the ``1 / |D_C|`` of the other terms, and
    ``(k - 2 + t) / (k t - 1)`` is ``(k - 1)(1 - r_q) / (k t - 1)`` with
    ``r_q`` replaced by ``(1 - t)/(k - 1)``, the report frequency of a query
    nobody holds. The exact covariance of the multinomial frequencies is
    ``Cov(r_{q,u}, r_q) = r_{q,u} (1 - r_q) / n``, whose unbiased estimate
    is ``r_{q,u} (1 - r_q) / (n - 1)``, used here. For single-URL queries
    (``k_q = 1``, e.g. the wildcard query) the formula reduces to the query
    variance, as it must since then ``p_{q,u} = p_q``.
    """
    coef = _denoiser(query_keep_probability, url_keep_probability, urls_per_query)
    counts, total = _report_counts(report_counts, coef.query.size)
    if not total >= 2:
        raise ValueError(f"at least 2 reports are needed; got {total!r}")
    return _client_variance(counts / total, total - 1, coef)


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


# --------------------------------------------------------------------------
# Metrics: Section 4
# --------------------------------------------------------------------------


def _as_records(data, name):
    """(queries, urls, values) arrays from any accepted record format."""
    if isinstance(data, Mapping):
        keys = list(data.keys())
        if any(not (isinstance(key, tuple) and len(key) == 2) for key in keys):
            raise ValueError(f"{name} keys must be (query, url) tuples")
        queries = np.asarray([key[0] for key in keys])
        urls = np.asarray([key[1] for key in keys])
        values = np.asarray(list(data.values()), dtype=float)
    elif isinstance(data, tuple):
        if len(data) != 2:
            raise ValueError(
                f"{name} given as a tuple must be (records, values); got length {len(data)}"
            )
        records = np.asarray(data[0])
        values = np.asarray(data[1], dtype=float)
        if records.ndim != 2 or records.shape[1] != 2 or values.shape != (len(records),):
            raise ValueError(
                f"{name} = (records, values) needs records of shape (n, 2) and values "
                f"of shape (n,); got {records.shape} and {values.shape}"
            )
        queries, urls = records[:, 0], records[:, 1]
    else:
        dense = np.asarray(data, dtype=float)
        if dense.ndim != 2:
            raise ValueError(
                f"{name} must be a mapping {{(query, url): value}}, a tuple "
                f"(records, values) or a 2-D array indexed [query, url]; got an "
                f"array of shape {dense.shape}"
            )
        queries, urls = np.nonzero(dense)
        values = dense[queries, urls]
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} values must be finite")
    return queries, urls, values


def _as_record_dict(data, name):
    queries, urls, values = _as_records(data, name)
    result = {}
    for key, value in zip(zip(queries.tolist(), urls.tolist()), values.tolist()):
        result[key] = result.get(key, 0.0) + value
    return result


def l1_distance(estimated, true):
    """L1 distance ``sum_i |p_hat_i - p_i|`` between estimated and true probabilities (Section 4).

    Parameters
    ----------
    estimated, true : ndarray, mapping or tuple
        Two arrays of the same shape are compared entry by entry. Otherwise
        each is a record collection in a format accepted by
        :func:`list_of_lists_ndcg`, and the sum runs over the records of
        ``estimated`` (the paper's estimate vector, indexed by the head
        list), a record missing from ``true`` having probability 0.

    Returns
    -------
    distance : float
    """
    if not isinstance(estimated, Mapping | tuple) and not isinstance(true, Mapping | tuple):
        estimated = np.asarray(estimated, dtype=float)
        true = np.asarray(true, dtype=float)
        if estimated.shape != true.shape:
            raise ValueError(
                f"estimated and true arrays must have the same shape; got "
                f"{estimated.shape} and {true.shape}"
            )
        return float(np.abs(estimated - true).sum())
    estimated = _as_record_dict(estimated, "estimated")
    true = _as_record_dict(true, "true")
    return float(sum(abs(value - true.get(key, 0.0)) for key, value in estimated.items()))


def _dcg(relevances, weights=None):
    """``sum_i (2^rel_i - 1) / log2(i + 1) [* weight_i]`` over positions i = 1, 2, ..."""
    relevances = np.asarray(relevances, dtype=float)
    gains = np.exp2(relevances) - 1
    if weights is not None:
        gains = gains * weights
    return float(np.sum(gains / np.log2(np.arange(2, relevances.size + 2))))


def _ranked(values):
    """Positions sorted by decreasing value, ties kept in input order."""
    return np.argsort(-np.asarray(values, dtype=float), kind="stable")


def _ndcg(estimated_true_values, true_values, *, complete=False):
    """NDCG of a ranked list whose items have these true values.

    ``rel = n_i / sum_j n_j``, normalised over the ideal list: the
    ``len(estimated_true_values)`` largest ``true_values`` (``complete``: all of them).
    """
    k = len(true_values) if complete else len(estimated_true_values)
    ideal = np.sort(np.asarray(true_values, dtype=float))[::-1][:k]
    norm = ideal.sum()
    if norm <= 0:
        return 0.0
    return _dcg(np.asarray(estimated_true_values) / norm) / _dcg(ideal / norm)


def list_of_lists_ndcg(estimated, true, *, ideal="estimated"):
    """The paper's list-of-lists NDCG of an estimated head list (Section 4).

    The queries are ranked by their estimated probability (the sum of their
    records' estimates) and each query's URLs by their estimates. For the
    query at position ``i`` (of ``k``),

    ``DCG^Q_k = sum_i (2^rel_i - 1) / log2(i + 1) * NDCG^{q_i}``,

    where ``rel_i = n_{q_i} / sum_j n_j`` is the query's true probability
    normalised over the ideal list (the ``k`` truly most probable queries)
    and ``NDCG^{q_i}`` is the ordinary NDCG of ``q_i``'s estimated URL list
    against its true URL probabilities (same relevance and discount, ``k``
    being the length of that URL list). The result is
    ``DCG^Q_k / IDCG^Q_k``, with ``IDCG^Q_k`` the DCG of the true top-``k``
    queries in true order with perfect URL lists (every ``NDCG^q = 1``).

    Parameters
    ----------
    estimated : mapping, tuple or ndarray
        The head list with its estimated probabilities, one of

        - a mapping ``{(query, url): probability}``;
        - a tuple ``(records, values)``: records of shape (n, 2) holding
          (query, url) pairs, values of shape (n,);
        - a 2-D array ``P`` with ``P[query, url]`` the probability; only the
          nonzero entries are records.

        Only the order matters; ties keep the input order. Remove the
        wildcard records first (the paper discards them, Section 4).
        Duplicate records are not allowed.
    true : mapping, tuple or ndarray
        The true record probabilities or counts, in the same formats
        (duplicates are summed; values >= 0). A query's true probability is
        the sum over all its records in ``true``, including URLs absent from
        ``estimated``. Query and URL ids must have the same types as in
        ``estimated``.
    ideal : {"estimated", "all"}, default="estimated"
        The length of the ideal lists. ``"estimated"`` is the paper's: as many
        queries (and, per query, URLs) as the estimated lists hold, so that a
        shorter list is judged against a shorter ideal (a one-record list in the
        right place scores 1). ``"all"`` compares with every query and URL of
        ``true``: missing relevant records cost, and scores of lists of
        different lengths are comparable (what model selection needs).

    Returns
    -------
    ndcg : float
        In [0, 1]; 1 when the estimated lists are in the true order (and, with
        ``ideal="all"``, complete), 0 for an empty head list.

    Notes
    -----
    The extracted text loses the sentence introducing ``DCG^Q_k``; read
    here from the formula, the statement that the extra factor makes high
    values *harder* to reach than query-only NDCG (so the ideal uses perfect
    URL lists), and ``rel_i = n_i / sum_j n_j`` with j over the compared
    list (the paper rescales ``rel_i`` after discarding the wildcards).
    Scaling ``true`` (counts or probabilities) does not change the result.
    """
    if ideal not in ("estimated", "all"):
        raise ValueError(f"ideal must be 'estimated' or 'all'; got {ideal!r}")
    complete = ideal == "all"
    est_queries, est_urls, est_values = _as_records(estimated, "estimated")
    true_queries, true_urls, true_values = _as_records(true, "true")
    if np.any(true_values < 0):
        raise ValueError("true values must be >= 0")
    if est_queries.size == 0:
        return 0.0
    if len(set(zip(est_queries.tolist(), est_urls.tolist()))) != est_queries.size:
        raise ValueError("estimated contains duplicate (query, url) records")
    if not np.any(true_values > 0):
        raise ValueError("true must contain a record with a positive value")

    true_keys, true_group = np.unique(true_queries, return_inverse=True)
    true_totals = np.bincount(true_group, weights=true_values, minlength=true_keys.size)
    by_query = np.argsort(true_group, kind="stable")
    starts = np.searchsorted(true_group[by_query], np.arange(true_keys.size + 1))

    est_keys, first_seen, est_group = np.unique(
        est_queries, return_index=True, return_inverse=True
    )
    est_totals = np.bincount(est_group, weights=est_values, minlength=est_keys.size)
    query_order = np.lexsort((first_seen, -est_totals))

    position = np.minimum(np.searchsorted(true_keys, est_keys), true_keys.size - 1)
    found = true_keys[position] == est_keys

    url_ndcg = np.zeros(est_keys.size)
    query_true_values = np.where(found, true_totals[position], 0.0)
    for group in np.flatnonzero(found):
        members = np.flatnonzero(est_group == group)
        members = members[_ranked(est_values[members])]
        true_rows = by_query[starts[position[group]] : starts[position[group] + 1]]
        true_url_values = {}
        for url, value in zip(true_urls[true_rows].tolist(), true_values[true_rows].tolist()):
            true_url_values[url] = true_url_values.get(url, 0.0) + value
        listed = [true_url_values.get(url, 0.0) for url in est_urls[members].tolist()]
        url_ndcg[group] = _ndcg(listed, list(true_url_values.values()), complete=complete)

    k = true_keys.size if complete else est_keys.size
    ideal = np.sort(true_totals)[::-1][:k]
    norm = ideal.sum()
    dcg = _dcg(query_true_values[query_order] / norm, weights=url_ndcg[query_order])
    return dcg / _dcg(ideal / norm)
