"""Synthetic search logs: one (query, URL) click record per user.

A stand-in for the AOL and Yandex logs of Avent et al. (BLENDER, USENIX
Security 2017, Section 4): query popularity follows a truncated Zipf law and
so do the clicked URLs of every query, so that a few hundred head queries
carry most of the mass, as in the heads those logs are evaluated on.
"""

import numpy as np

__all__ = ["make_search_logs"]


def _zipf_probabilities(n_items, exponent):
    """``P(rank i) = (i + 1)^-exponent / sum_j (j + 1)^-exponent``, ranks 0 .. n_items - 1."""
    weights = np.arange(1, n_items + 1, dtype=float) ** -exponent
    return weights / weights.sum()


def _check_count(value, name):
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
    return int(value)


def _check_exponent(value, name):
    if isinstance(value, bool) or not np.isscalar(value) or not (
        np.isfinite(value) and value >= 0
    ):
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return float(value)


def make_search_logs(
    n_users,
    *,
    n_queries=10_000,
    urls_per_query=10,
    zipf_exponent=1.2,
    url_zipf_exponent=1.5,
    return_probabilities=False,
    random_state=None,
):
    """Generate a synthetic search log with Zipf-distributed queries and clicks.

    Every user holds one record (query, url) drawn independently from

    ``P(q, u) = P(q) P(u | q)``, with
    ``P(q) proportional to (q + 1)^-zipf_exponent`` for ``q < n_queries`` and
    ``P(u | q) proportional to (u + 1)^-url_zipf_exponent`` for
    ``u < urls_per_query[q]``.

    Ids are ranks: query 0 is the most popular query and URL ``u`` of a query
    is its ``u``-th most clicked URL. URL ids are therefore local to a query:
    the pair (query, url) identifies a record, and URL 0 of query 3 and URL 0
    of query 5 are different records.

    With the defaults the 50 most popular queries carry 69 % of the records
    and the 300 most popular 83 %, over a tail of 10,000 queries; the top
    URL of a query receives half of its clicks. (The paper uses the head of
    the AOL log, 50 records, and of the Yandex log, 500 records.)

    Parameters
    ----------
    n_users : int
        Number of users (rows), >= 1.
    n_queries : int, default=10_000
        Number of distinct queries, >= 1.
    urls_per_query : int or array-like of int of shape (n_queries,), default=10
        Number of distinct clicked URLs of each query, >= 1.
    zipf_exponent : float, default=1.2
        Exponent of the query popularity law, >= 0 (0 is uniform).
    url_zipf_exponent : float, default=1.5
        Exponent of every query's URL click law, >= 0.
    return_probabilities : bool, default=False
        Also return the true record probabilities.
    random_state : None, int or numpy.random.Generator, default=None
        Seed or generator, passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    X : ndarray of int64, shape (n_users, 2)
        Column 0 the query id, column 1 the URL id (its rank within the query).
    probabilities : ndarray of float, shape (n_queries, max(urls_per_query))
        Only with ``return_probabilities=True``: ``probabilities[q, u]`` is
        ``P(q, u)``; 0 where ``u >= urls_per_query[q]``. Sums to 1.

    Examples
    --------
    >>> from skhybrid.datasets import make_search_logs
    >>> X, p = make_search_logs(1000, return_probabilities=True, random_state=0)
    >>> X.shape, p.shape
    ((1000, 2), (10000, 10))
    """
    n_users = _check_count(n_users, "n_users")
    n_queries = _check_count(n_queries, "n_queries")
    zipf_exponent = _check_exponent(zipf_exponent, "zipf_exponent")
    url_zipf_exponent = _check_exponent(url_zipf_exponent, "url_zipf_exponent")
    urls = np.asarray(urls_per_query)
    if urls.ndim == 0:
        urls = np.full(n_queries, _check_count(urls_per_query, "urls_per_query"))
    elif (
        urls.shape != (n_queries,)
        or not np.issubdtype(urls.dtype, np.integer)
        or np.any(urls < 1)
    ):
        raise ValueError(
            "urls_per_query must be an integer >= 1 or an integer array of shape "
            f"(n_queries,) = ({n_queries},) with entries >= 1; got {urls_per_query!r}"
        )
    rng = np.random.default_rng(random_state)

    max_urls = int(urls.max())
    url_weights = np.arange(1, max_urls + 1, dtype=float) ** -url_zipf_exponent
    url_mask = np.arange(max_urls)[None, :] < urls[:, None]
    url_given_query = np.where(url_mask, url_weights[None, :], 0.0)
    url_given_query /= url_given_query.sum(axis=1, keepdims=True)
    probabilities = _zipf_probabilities(n_queries, zipf_exponent)[:, None] * url_given_query

    # One categorical draw over all records (inverse CDF), vectorised.
    record_query, record_url = np.nonzero(url_mask)
    cdf = np.cumsum(probabilities[record_query, record_url])
    records = np.searchsorted(cdf, rng.random(n_users) * cdf[-1], side="right")
    np.minimum(records, cdf.size - 1, out=records)  # guards the top rounding edge

    X = np.empty((n_users, 2), dtype=np.int64)
    X[:, 0] = record_query[records]
    X[:, 1] = record_url[records]
    if return_probabilities:
        return X, probabilities
    return X
