"""The metrics of BLENDER's evaluation (Avent et al. 2017, Section 4).

The L1 distance between estimated and true record probabilities and the paper's
list-of-lists NDCG of a head list. The paper is cited in full in
:mod:`skhybrid.theory._blender`.
"""

from collections.abc import Mapping

import numpy as np

__all__ = [
    "l1_distance",
    "list_of_lists_ndcg",
]


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
