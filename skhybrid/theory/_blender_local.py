"""BLENDER's clients in the local model: LocalAlg and its denoising (Avent et al. 2017).

Figures 5 and 6, Theorem 3, Observation 1 and Theorem 5 of [1]: the two-stage
randomizer's keep probabilities, transition matrix and achieved privacy, the
server's unbiased denoising of the reports and the client variances.

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

[1] is the BLENDER paper (Avent et al., USENIX Security 2017), cited in full in
:mod:`skhybrid.theory._blender`.
"""

from typing import NamedTuple

import numpy as np

from ._blender import _positive, _privacy_delta, _scalar_or_array

__all__ = [
    "LocalAlgParameters",
    "client_report_probabilities",
    "client_variance",
    "client_variance_estimate",
    "denoise_client_reports",
    "local_alg_achieved_privacy",
    "local_alg_keep_probability",
    "local_alg_parameters",
    "local_alg_transition_matrix",
    "local_randomizer_delta",
    "record_query_index",
]


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
        ``k_q`` for each head-list query, wildcards included (module docstring).

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
    query_keep_probability, url_keep_probability, urls_per_query
        As in :func:`local_alg_transition_matrix`.
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
