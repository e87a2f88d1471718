"""BLENDER: the most popular search records from opt-in users and clients (Avent et al. 2017).

Every user holds one search record, a (query, url) pair of integer ids. Opt-in users
("tcm") trust the curator, who

1. splits them at random into S and T (``headlist_fraction`` of them in S);
2. builds a candidate head list from S: the records of S whose count plus Laplace noise
   exceeds a threshold (CreateHeadList, Figure 3), and
3. estimates the candidates' probabilities from T with Laplace-noised counts, keeping
   the ``max_records`` most probable (EstimateOptinProbabilities, Figure 4).

Clients ("lm") receive that head list and randomize their own record on their device
with the two-stage randomizer LocalAlg (Figure 6), :class:`BlenderClient`. The curator
denoises their reports (Figure 5, Observation 1) and blends the two groups' estimates
with inverse-variance weights (Figure 7, Theorem 6).

Where the noise comes from, in one hop: opt-in users' noise is added by
:func:`_create_head_list` and :func:`_estimate_optin_probabilities` (the Laplace
mechanism on count vectors); clients' noise is added by :meth:`BlenderClient.privatize`.
Everything else is post-processing. Every formula is in
:mod:`skhybrid.theory._blender`.

Cells
-----
The head list as the clients see it (a :class:`_HeadListLayout`) partitions the space of
all records into *cells*: every head-list record, one wildcard cell ``(q, *)`` per
head-list query for its other URLs, and the wildcard cell ``(*, *)`` for every other
query. Reports are cells; :data:`WILDCARD` (-1) stands for ``*``.

Neighbouring relation: replace one user's record, with the group sizes public.
"""

import copy
import warnings
from functools import partial
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from ..accounting._costs import charge_dask_release, charge_release, check_user_id
from ..base import (
    RANDOM_STATE_CONSTRAINT,
    ValidatedParamsMixin,
    check_fit_metadata,
    warn_score_leak,
)
from ..exceptions import EmptyGroupWarning
from ..mechanisms import LaplaceMechanism
from ..theory._blender import (
    blend_estimates,
    blending_weights,
    client_variance_estimate,
    denoise_client_reports,
    headlist_threshold,
    list_of_lists_ndcg,
    local_alg_achieved_privacy,
    local_alg_parameters,
    local_alg_transition_matrix,
    optin_count_noise_scale,
    optin_variance,
    optin_variance_estimate,
    project_onto_simplex,
)
from ..utils._chunks import merge_chunk_summaries, summarise_chunk
from ..utils._dask import check_dask_features, chunk_generators, is_dask_collection, map_chunks
from ..utils._random import check_random_state
from ..utils._validation import check_epsilon, check_group_epsilons, check_trust_group

__all__ = ["WILDCARD", "BlenderClient", "BlenderHeavyHitters"]

#: The id standing for the wildcard ``*`` in reports and in :attr:`BlenderClient.report_records`:
#: ``(q, WILDCARD)`` is "query q with a URL outside the head list", ``(WILDCARD, WILDCARD)``
#: "a query outside the head list". Real ids are >= 0.
WILDCARD = -1

_INT64_MAX = np.iinfo(np.int64).max
_TABLE_LIMIT = 1 << 22  # id lookups use a table of at most this many int32 entries


# --------------------------------------------------------------------------
# Records: validation, distinct records, the head list as the clients see it
# --------------------------------------------------------------------------


def _as_id_pairs(values, *, name, whom, allow_wildcard=False):
    """Validate an (n, 2) numeric array of ids; return it as int64.

    ``values`` has passed :func:`sklearn.utils.check_array` (numeric, finite, 2-D).
    """
    if values.shape[1] != 2:
        raise ValueError(
            f"{name} must have two columns, the (query, url) ids of one record per row; "
            f"got n_features = {values.shape[1]}"
        )
    if values.dtype.kind == "f":
        not_integer = (values != np.floor(values)) | (np.abs(values) >= 2.0**63)
        if not_integer.any():
            row, column = np.argwhere(not_integer)[0]
            raise ValueError(
                f"{name} must hold integer ids (encode strings with "
                f"sklearn.preprocessing.OrdinalEncoder); got {float(values[row, column])!r} at "
                f"row {row}, column {column}"
            )
    ids = values.astype(np.int64, copy=False)
    lowest = WILDCARD if allow_wildcard else 0
    negative = ids < lowest
    if negative.any():
        row, column = np.argwhere(negative)[0]
        expected = f">= 0, or {WILDCARD} for the wildcard" if allow_wildcard else ">= 0"
        raise ValueError(
            f"Negative values in data passed to {whom}: {name} ids must be {expected}; "
            f"got {ids[row, column]} at row {row}, column {column}"
        )
    return ids


def _check_records(records, *, name, whom, allow_wildcard=False):
    """``records`` as an int64 array of shape (n, 2); a single pair (2,) becomes (1, 2)."""
    array = check_array(np.atleast_2d(records) if np.ndim(records) == 1 else records,
                        dtype="numeric", ensure_min_samples=0, input_name=name)
    return _as_id_pairs(array, name=name, whom=whom, allow_wildcard=allow_wildcard)


def _label_records(X):
    """``X`` as an (n, 2) object array when its records are labels (strings...), else None.

    Integer ids (numeric arrays and DataFrame columns, lists of int pairs) are not
    labels: they are used as they are.
    """
    if hasattr(X, "dtypes") and hasattr(X, "columns"):  # a DataFrame
        if all(_is_numeric(dtype) for dtype in X.dtypes):
            return None
        return np.asarray(X.to_numpy(dtype=object))
    array = np.asarray(X)
    kind = array.dtype.kind
    if kind not in "OUS":
        return None  # numeric (or invalid: left to the numeric validation)
    array = array.astype(object)
    if kind == "O" and all(
        isinstance(value, (Integral, np.integer)) and not isinstance(value, bool)
        for value in array.ravel().tolist()
    ):
        return None
    return array


def _is_numeric(dtype):
    try:
        return np.dtype(dtype).kind in "biuf"
    except TypeError:  # pandas extension dtypes (string, category)
        return False


def _check_labels(labels, *, name):
    """Labels of shape (n, 2) with no missing entry (None or NaN)."""
    if labels.ndim != 2 or labels.shape[1] != 2:
        raise ValueError(
            f"{name} must have two columns, the (query, url) of one record per row; got "
            f"an array of shape {labels.shape}"
        )
    missing = np.fromiter((value is None or value != value for value in labels.ravel().tolist()),
                          dtype=bool, count=labels.size).reshape(labels.shape)
    if missing.any():
        row, column = np.argwhere(missing)[0]
        raise ValueError(
            f"{name} must not have missing records; got {labels[row, column]!r} at row "
            f"{int(row)}, column {int(column)}"
        )
    return labels


def _factorized_records(labels):
    """Integer ids of label records and each column's labels: ``labels[:, j] == vocab[j][ids[:, j]]``.

    The vocabularies list every distinct label of the data: secret, never kept.
    """
    ids = np.empty(labels.shape, dtype=np.int64)
    vocabularies = []
    for column in range(2):
        try:
            import pandas as pd

            codes, uniques = pd.factorize(labels[:, column])
            uniques = list(uniques)
        except ImportError:  # pragma: no cover - pandas is optional
            index = {}
            codes = np.array([index.setdefault(value, len(index))
                              for value in labels[:, column].tolist()])
            uniques = list(index)
        ids[:, column] = codes
        vocabularies.append(uniques)
    return ids, vocabularies


class _RecordCodec:
    """Integer ids for the labels of a head list's records, and back.

    Built from the (public) head list only: query and URL labels get ids in order of
    first appearance. A label outside the head list encodes to an id no head-list
    record has, so it falls in a wildcard cell; ``None`` stands for the wildcard ``*``
    in reports.
    """

    def __init__(self, head_labels):
        self.queries = list(dict.fromkeys(query for query, _ in head_labels))
        self.urls = list(dict.fromkeys(url for _, url in head_labels))
        self._query_ids = {query: i for i, query in enumerate(self.queries)}
        self._url_ids = {url: i for i, url in enumerate(self.urls)}
        self.records = self.encode(head_labels)

    def encode(self, records, *, wildcard=False):
        """(n, 2) int64 ids of label records; ``wildcard``: None is :data:`WILDCARD`."""
        def one(ids, label):
            if wildcard and label is None:
                return WILDCARD
            return ids.get(label, len(ids))

        rows = [(one(self._query_ids, query), one(self._url_ids, url))
                for query, url in records]
        return np.array(rows, dtype=np.int64).reshape(-1, 2)

    def decode(self, ids):
        """Label pairs of (n, 2) ids; :data:`WILDCARD` becomes None."""
        def one(labels, index):
            return None if index == WILDCARD else labels[index]

        return [(one(self.queries, query), one(self.urls, url)) for query, url in ids.tolist()]


def _distinct_records(records, counts=None):
    """Distinct rows of an (n, 2) array of ids >= 0 and their counts.

    Each pair is packed into one integer, ``query * (max_url + 1) + url``, so that one
    :func:`numpy.unique` on integers does the work; ids too large to pack fall back to
    the (slower) row-wise unique. With ``counts`` (one per row), a row stands for that
    many users: the counts of equal rows are added (merging chunks' record counts).
    """
    if records.shape[0] == 0:
        return records.reshape(0, 2), np.zeros(0, dtype=np.int64)
    url_base = int(records[:, 1].max()) + 1
    packable = int(records[:, 0].max()) <= (_INT64_MAX - url_base + 1) // url_base
    if counts is None:
        if packable:
            codes, counts = np.unique(records[:, 0] * url_base + records[:, 1],
                                      return_counts=True)
            return np.column_stack(np.divmod(codes, url_base)), counts
        return np.unique(records, axis=0, return_counts=True)
    if packable:
        codes, inverse = np.unique(records[:, 0] * url_base + records[:, 1],
                                   return_inverse=True)
        distinct = np.column_stack(np.divmod(codes, url_base))
    else:
        distinct, inverse = np.unique(records, axis=0, return_inverse=True)
    summed = np.zeros(distinct.shape[0], dtype=np.int64)
    np.add.at(summed, inverse.ravel(), counts)
    return distinct, summed


def _position_in(sorted_values, values):
    """Position of each of ``values`` in ``sorted_values`` and whether it is there.

    ``sorted_values`` holds distinct integers >= 0. Ids are usually small, so a lookup
    table (one gather) replaces the binary search when the largest one is below
    ``_TABLE_LIMIT``. Positions of values that are absent are arbitrary but valid.
    """
    last = int(sorted_values[-1])
    if last < _TABLE_LIMIT:
        table = np.full(last + 2, -1, dtype=np.int32)  # the last slot: out of range
        table[sorted_values] = np.arange(sorted_values.size, dtype=np.int32)
        position = table[np.clip(values, -1, last + 1)]
        found = position >= 0
        return np.maximum(position, 0), found
    position = np.minimum(np.searchsorted(sorted_values, values), sorted_values.size - 1)
    return position, sorted_values[position] == values


class _HeadListLayout:
    """The head list as the clients see it: its records and wildcards, flattened into cells.

    Queries are ordered by their first appearance in ``records``, each query's URLs in
    list order followed by its wildcard URL, and the wildcard query ``(*, *)`` is the
    last cell: the convention of :mod:`skhybrid.theory._blender` (EstimateClientProbabilities,
    lines 1-3).

    Parameters
    ----------
    records : ndarray of int64, shape (n_records, 2)
        Distinct (query, url) records, ids >= 0; at least one.
    """

    def __init__(self, records):
        self.records = records
        n_records = records.shape[0]
        queries, first_seen, query_of_record = np.unique(
            records[:, 0], return_index=True, return_inverse=True
        )
        n_queries = queries.size
        # Layout index of each sorted query: queries in order of first appearance.
        layout_query = np.empty(n_queries, dtype=np.intp)
        layout_query[np.argsort(first_seen, kind="stable")] = np.arange(n_queries)
        record_query = layout_query[query_of_record]
        # One URL per record plus the wildcard URL per query; the wildcard query has one.
        self.urls_per_query = np.append(np.bincount(record_query, minlength=n_queries) + 1, 1)
        starts = np.concatenate([[0], np.cumsum(self.urls_per_query)[:-1]])
        # Position of each record among its query's records, in list order.
        by_query = np.argsort(record_query, kind="stable")
        group_start = np.searchsorted(record_query[by_query], np.arange(n_queries))
        position = np.empty(n_records, dtype=np.intp)
        position[by_query] = np.arange(n_records) - group_start[record_query[by_query]]
        self.record_cells = starts[record_query] + position
        self.n_cells = int(self.urls_per_query.sum())
        self.query_wildcard_cells = starts[:-1] + self.urls_per_query[:-1] - 1
        self.other_cell = self.n_cells - 1

        self.cell_records = np.full((self.n_cells, 2), WILDCARD, dtype=np.int64)
        self.cell_records[self.record_cells] = records
        self.cell_records[self.query_wildcard_cells, 0] = queries[np.argsort(layout_query)]

        # Lookups: sorted query ids -> layout query; sorted URL ids -> rank; the pair
        # (layout query, URL rank) packed into one small integer -> cell.
        self._sorted_queries = queries
        self._layout_query = layout_query
        self._sorted_urls = np.unique(records[:, 1])
        url_rank = np.searchsorted(self._sorted_urls, records[:, 1])
        codes = record_query * self._sorted_urls.size + url_rank
        order = np.argsort(codes)
        self._record_codes = codes[order]
        self._code_cells = self.record_cells[order]

    def cells_of_records(self, records):
        """The cell of each true record (LocalAlg, lines 8-11).

        A head-list record is its own cell; a record of a head-list query with another
        URL falls in that query's wildcard cell; any other record in ``(*, *)``.
        Wildcard ids in ``records`` map the same way, so a cell's record maps to itself.
        """
        query_position, listed = _position_in(self._sorted_queries, records[:, 0])
        url_rank, known_url = _position_in(self._sorted_urls, records[:, 1])
        layout_query = self._layout_query[query_position]
        codes = layout_query * self._sorted_urls.size + url_rank
        code_position, is_record = _position_in(self._record_codes, codes)
        is_record &= listed & known_url
        query_cells = np.where(listed, self.query_wildcard_cells[layout_query], self.other_cell)
        return np.where(is_record, self._code_cells[code_position], query_cells)

    def cells_of_reports(self, reports):
        """The cell of each report; a report that is not a cell of this layout raises."""
        cells = self.cells_of_records(reports)
        mismatch = np.any(self.cell_records[cells] != reports, axis=1)
        if mismatch.any():
            row = int(np.flatnonzero(mismatch)[0])
            raise ValueError(
                f"reports must be head-list records or wildcards of the head list the "
                f"clients used; got {tuple(reports[row].tolist())} at row {row}"
            )
        return cells


def _sample_rows(cumulative, rows, rng):
    """One categorical draw per entry of ``rows`` from the row's distribution, by inverse CDF.

    ``cumulative[x]`` is the CDF of row ``x``. Entries are grouped by row (a stable
    radix sort on small integers) so that each row needs one vectorised searchsorted.
    """
    n_rows, n_outputs = cumulative.shape
    draws = np.empty(rows.shape[0], dtype=np.intp)
    order = np.argsort(rows.astype(np.min_scalar_type(n_rows)), kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_rows))])
    uniforms = rng.random(rows.shape[0])
    for row in np.flatnonzero(np.diff(bounds)):
        members = order[bounds[row] : bounds[row + 1]]
        cdf = cumulative[row]
        draws[members] = np.searchsorted(cdf, uniforms[members] * cdf[-1], side="right")
    np.minimum(draws, n_outputs - 1, out=draws)  # guards the top rounding edge
    return draws


# --------------------------------------------------------------------------
# Opt-in users (trusted curator): CreateHeadList and EstimateOptinProbabilities
# --------------------------------------------------------------------------


def _count_mechanism(epsilon):
    """The Laplace mechanism of Figures 3 and 4: scale ``b = optin_count_noise_scale(epsilon)``.

    A vector of counts over a partition of records moves by at most one unit in two
    cells when one user's record is replaced: L1 sensitivity ``2 m_O`` with ``m_O = 1``,
    which :class:`~skhybrid.mechanisms.LaplaceMechanism` turns into the scale
    ``sensitivity / epsilon = b``. Its noise is floating-point safe.
    """
    sensitivity = optin_count_noise_scale(epsilon) * epsilon
    return LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity)


def _check_count_noise(n_optin, epsilon):
    """Refuse a count noise too wide to draw, before the ledger is charged.

    The released count vectors have at most one cell per opt-in user (their distinct
    records), so the noise of ``n_optin`` coordinates bounds every one of them.
    """
    if n_optin:
        _count_mechanism(epsilon).variance(n_optin)


def _passes_threshold(counts, *, epsilon, delta, rng):
    """CreateHeadList, lines 9-11: which noisy counts exceed ``tau``.

    ``counts`` has shape (..., n_distinct); leading axes are independent releases.
    """
    noisy = _count_mechanism(epsilon).randomise(counts, random_state=rng)
    return noisy > headlist_threshold(epsilon, delta)


def _create_head_list(records, *, epsilon, delta, rng, counts=None):
    """CreateHeadList (Figure 3) with ``m_O = 1``: the candidate head list from S.

    The candidates are the distinct records of S (the domain comes from the data)
    whose count plus ``Laplace(b_S)`` noise exceeds ``tau``: a record held by a single
    user, the one that can be in one neighbour's domain and not the other's, passes
    with probability ``delta / 2``. (epsilon, delta)-DP for the users in S.
    ``counts``, when given, says how many users of S hold each row of ``records``.

    Returns
    -------
    candidates : ndarray of int64, shape (n_candidates, 2)
        In increasing (query, url) order. The wildcard record is added by the layout.
    """
    distinct, counts = _distinct_records(records, counts)
    if distinct.shape[0] == 0:
        return distinct
    keep = _passes_threshold(counts.astype(np.float64), epsilon=epsilon, delta=delta, rng=rng)
    return distinct[keep]


def _estimate_optin_probabilities(records, candidates, *, epsilon, max_records, rng,
                                  counts=None):
    """EstimateOptinProbabilities (Figure 4) with ``m_O = 1``, on the users of T.

    The counts of T's records are released with ``Laplace(b_T)`` noise over the cells of
    the candidate head list (every candidate, one wildcard per candidate query, and
    ``(*, *)``): a partition fixed before T's data is read, so the release is
    epsilon-DP for the users in T. The ``max_records`` most probable candidates form
    the head list, and the cells of the head list the clients will see are sums of the
    released cells (post-processing).

    Returns
    -------
    layout : _HeadListLayout
        The final head list (records in decreasing opt-in estimate).
    probabilities, variances : ndarray of shape (layout.n_cells,)
        ``p_hat_O`` and Theorem 4's variance estimate per cell. A cell that sums ``m``
        released cells carries ``m`` independent ``Laplace(b_T)`` draws, whose variance
        ``2 m b_T^2`` is that of one ``Laplace(b_T sqrt(m))``: Theorem 4 is applied with
        that scale. Estimates are clipped below at the noise-only variance
        ``optin_variance(0, |D_T|, b)``, the least the true variance can be.

    ``counts``, when given, says how many users of T hold each row of ``records``.
    """
    n_users = records.shape[0] if counts is None else int(np.sum(counts))
    candidate_layout = _HeadListLayout(candidates)
    cell_counts = np.bincount(candidate_layout.cells_of_records(records), weights=counts,
                              minlength=candidate_layout.n_cells).astype(np.float64)
    noisy = _count_mechanism(epsilon).randomise(cell_counts, random_state=rng)
    candidate_estimates = noisy[candidate_layout.record_cells] / n_users
    top = np.argsort(-candidate_estimates, kind="stable")[:max_records]
    layout = _HeadListLayout(candidates[top])

    merged_into = layout.cells_of_records(candidate_layout.cell_records)
    probabilities = np.bincount(merged_into, weights=noisy, minlength=layout.n_cells) / n_users
    n_draws = np.bincount(merged_into, minlength=layout.n_cells)
    scale = optin_count_noise_scale(epsilon)
    variances = np.empty(layout.n_cells)
    for draws in np.unique(n_draws):
        cells = n_draws == draws
        draws_scale = scale * np.sqrt(draws)
        variances[cells] = np.maximum(
            optin_variance_estimate(probabilities[cells], n_users, draws_scale),
            optin_variance(0.0, n_users, draws_scale),
        )
    return layout, probabilities, variances


# --------------------------------------------------------------------------
# Clients (local model): LocalAlg and EstimateClientProbabilities
# --------------------------------------------------------------------------


class BlenderClient:
    """LocalAlg (Figure 6 of BLENDER): a client privatizes its own record against the head list.

    Runs on each client's device, or on many at once in a simulation. The client keeps
    its query with probability ``t`` and otherwise reports a uniformly random other
    head-list query with a uniformly random URL of it; having kept the query, it keeps
    its URL with probability ``t_q`` and otherwise reports another URL of that query. A
    record outside the head list is first replaced by its wildcard: ``(q, *)`` when
    ``q`` is a head-list query, ``(*, *)`` otherwise. The report is one categorical draw
    from the row of :attr:`transition_matrix` of the client's cell.

    The budget is split between the two stages, ``epsilon_Q = query_budget_fraction *
    epsilon`` for the query and the rest for the URL (and ``delta`` likewise); by
    Theorem 3 each report is (epsilon, delta)-differentially private for its client in
    the local model, whatever the other clients or the curator do.

    Parameters
    ----------
    head_list : array-like of shape (n_records, 2) or list of (query, url) tuples
        The head list published by the curator (``BlenderHeavyHitters.head_list_``):
        distinct records, at least one: integer ids >= 0, or labels (strings or any
        hashable values). Only the set of records matters to the reports'
        distribution. With labels, records and reports are labels too, and ``None``
        stands for the wildcard ``*`` in reports.
    epsilon : float
        The client's privacy level, > 0.
    delta : float
        In (0, 1).
    query_budget_fraction : float, default=0.85
        ``f_C``, the share of the budget spent on the query, in (0, 1) (the paper's
        0.85, Section 4.2.1).

    Attributes
    ----------
    head_list : list of tuple
        The head list's records as (query, url) tuples of ints.
    report_records : ndarray of int64, shape (n_cells, 2)
        Every possible report: the head-list records and the wildcards (:data:`WILDCARD`
        for ``*``), query by query, the wildcard query last.
    urls_per_query : ndarray of int64, shape (n_queries + 1,)
        ``k_q`` per head-list query, wildcard URL included, and 1 for the wildcard query.
    parameters : LocalAlgParameters
        The keep probabilities ``t``, ``t_q`` and the stage budgets.

    See Also
    --------
    BlenderHeavyHitters : the curator's side; ``fit_reports`` consumes these reports.

    Examples
    --------
    >>> from skhybrid.heavy_hitters import BlenderClient
    >>> client = BlenderClient([(0, 0), (0, 1), (3, 0)], epsilon=4.0, delta=1e-5)
    >>> reports = client.privatize([[0, 1], [3, 7], [9, 9]], random_state=0)
    >>> reports.shape
    (3, 2)
    >>> client.report_records.tolist()
    [[0, 0], [0, 1], [0, -1], [3, 0], [3, -1], [-1, -1]]
    """

    def __init__(self, head_list, *, epsilon, delta, query_budget_fraction=0.85):
        if len(head_list) == 0:
            raise ValueError("head_list must hold at least one (query, url) record; got none")
        labels = _label_records(head_list)
        self._codec = None
        if labels is not None:
            self._codec = _RecordCodec(_check_labels(labels, name="head_list").tolist())
            records = self._codec.records
        else:
            records = _check_records(head_list, name="head_list", whom="BlenderClient")
        distinct, counts = _distinct_records(records)
        if np.any(counts > 1):
            raise ValueError(
                f"head_list records must be distinct; {tuple(distinct[counts > 1][0].tolist())} "
                "appears more than once"
            )
        self.epsilon = check_epsilon(epsilon)
        self.delta = float(delta)
        self.query_budget_fraction = float(query_budget_fraction)
        self._layout = _HeadListLayout(records)
        self.head_list = self._labels(records)
        self.report_records = self._layout.cell_records.copy()
        if self._codec is not None:
            self.report_records = np.array(self._labels(self.report_records) or [],
                                           dtype=object).reshape(-1, 2)
        self.urls_per_query = self._layout.urls_per_query.copy()
        self.parameters = local_alg_parameters(
            self.epsilon, self.delta, self.urls_per_query,
            query_budget_fraction=self.query_budget_fraction,
        )
        self._cumulative = np.cumsum(self.transition_matrix, axis=1)

    @property
    def transition_matrix(self):
        """``P(report y | true cell x)`` over :attr:`report_records`, shape (n_cells, n_cells)."""
        return local_alg_transition_matrix(
            self.parameters.query_keep_probability,
            self.parameters.url_keep_probability,
            self.urls_per_query,
        )

    def achieved_privacy(self):
        """The (epsilon, delta) that Theorem 3's proof certifies for these keep probabilities.

        Returns
        -------
        epsilon, delta : float
        """
        return local_alg_achieved_privacy(
            self.parameters.query_keep_probability,
            self.parameters.url_keep_probability,
            self.urls_per_query,
            epsilon_query=self.parameters.epsilon_query,
            epsilon_url=self.parameters.epsilon_url,
        )

    def privatize(self, records, *, random_state=None):
        """Privatize each client's record: the report its device sends.

        Parameters
        ----------
        records : array-like of shape (n_clients, 2) or (2,)
            Each client's true (query, url) record, integer ids >= 0.
        random_state : None, int or numpy.random.Generator, default=None
            ``None`` uses the operating system's secure randomness (for real devices);
            an int gives reproducible reports (simulations only).

        Returns
        -------
        reports : ndarray of int64, shape (n_clients, 2) or (2,)
            Rows of :attr:`report_records`; :data:`WILDCARD` marks ``*``.
        """
        true_records = self._ids(records, name="records", whom="BlenderClient.privatize")
        cells = self._privatize_cells(self._layout.cells_of_records(true_records),
                                      check_random_state(random_state))
        reports = self.report_records[cells]
        return reports[0] if np.ndim(records) == 1 else reports

    def _labels(self, ids):
        """Records as the user's tuples: labels (None for ``*``) or ints."""
        if self._codec is None:
            return [tuple(pair) for pair in ids.tolist()]
        return self._codec.decode(ids)

    def _ids(self, records, *, name, whom, wildcard=False):
        """Records (labels or ids) as int64 ids of this client's head list."""
        if self._codec is None:
            return _check_records(records, name=name, whom=whom, allow_wildcard=wildcard)
        labels = np.empty((1, 2), dtype=object) if np.ndim(records) == 1 else None
        if labels is not None:
            labels[0] = list(records)
        else:
            labels = np.asarray(records, dtype=object)
            if labels.ndim != 2:
                labels = labels.reshape(-1, 2) if labels.size % 2 == 0 else labels
        if not wildcard:
            _check_labels(labels, name=name)
        return self._codec.encode(labels.tolist(), wildcard=wildcard)

    def _privatize_cells(self, cells, rng):
        """LocalAlg on cells: a categorical draw from each client's transition row."""
        return _sample_rows(self._cumulative, cells, rng)



def _estimate_client_probabilities(report_counts, client):
    """EstimateClientProbabilities (Figure 5): the curator denoises the clients' reports.

    Observation 1's unbiased estimates and Theorem 5's (corrected) variance estimates
    per cell of ``client``'s head list. The variance estimates are never negative (each
    is the plug-in variance of a linear function of multinomial frequencies); the clip
    only absorbs rounding.
    """
    randomizer = {
        "query_keep_probability": client.parameters.query_keep_probability,
        "url_keep_probability": client.parameters.url_keep_probability,
        "urls_per_query": client.urls_per_query,
    }
    _, probabilities = denoise_client_reports(report_counts, **randomizer)
    _, variances = client_variance_estimate(report_counts, **randomizer)
    return probabilities, np.maximum(variances, 0.0)


# --------------------------------------------------------------------------
# One fit as reductions over chunks of users
# --------------------------------------------------------------------------

#: Opt-in users are split into S and T in blocks of this many (by their rank among the
#: opt-in users), so that any chunk can find its members of S without the others.
_SPLIT_BLOCK = 1 << 16


class _HeadListSplit:
    """The curator's uniformly random split of the opt-in users into S and T.

    S is a uniformly random subset of ``n_headlist`` of the ``n_optin`` opt-in users,
    drawn in two steps: how many of S fall in each block of :data:`_SPLIT_BLOCK`
    consecutive opt-in users (a multivariate hypergeometric draw), then which ones
    within each block (a uniform subset, from the block's own generator). A chunk of
    rows only regenerates the blocks it overlaps, so the split does not depend on how
    the data are chunked: an in-memory fit and a Dask fit with the same seed split alike.
    """

    def __init__(self, n_optin, n_headlist, rng):
        starts = np.arange(0, n_optin, _SPLIT_BLOCK)
        self._starts = starts
        self._sizes = np.diff(np.append(starts, n_optin))
        self._selected = (
            rng.multivariate_hypergeometric(self._sizes, n_headlist) if starts.size
            else np.zeros(0, dtype=np.int64)
        )
        self._generators = chunk_generators(rng, starts.size)

    def part(self, start, stop):
        """What a chunk holding the opt-in users of ranks ``[start, stop)`` needs to know."""
        first = start // _SPLIT_BLOCK
        last = -(-stop // _SPLIT_BLOCK)
        blocks = list(zip(self._starts[first:last], self._sizes[first:last],
                          self._selected[first:last], self._generators[first:last]))
        return _SplitPart(start, stop, blocks)


class _SplitPart(NamedTuple):
    """One chunk's share of a :class:`_HeadListSplit`."""

    start: int
    stop: int
    blocks: list

    def in_headlist(self):
        """Whether each opt-in user of ranks ``[start, stop)`` is in S."""
        mask = np.zeros(self.stop - self.start, dtype=bool)
        for block_start, size, selected, generator in self.blocks:
            members = np.zeros(size, dtype=bool)
            # A copy: every chunk overlapping the block draws the same subset.
            members[copy.deepcopy(generator).permutation(size)[:selected]] = True
            low, high = max(self.start, block_start), min(self.stop, block_start + size)
            mask[low - self.start : high - self.start] = members[
                low - block_start : high - block_start
            ]
        return mask


def _records(X_block):
    """One chunk's records as int64 ids (the checks of :func:`_as_id_pairs`)."""
    values = check_array(X_block, dtype="numeric", ensure_all_finite=False,
                         ensure_min_samples=0, input_name="X")
    return _as_id_pairs(values, name="X", whom="BlenderHeavyHitters")


def _optin_statistics(X_block, trust_block, *, offset, rng):
    """The record counts of one chunk's opt-in users in S and in T.

    ``rng`` is the chunk's :class:`_SplitPart` of the curator's split. Returns
    ``(S records, S counts, T records, T counts)``, distinct records only.
    """
    records = _records(X_block)
    optin = records[check_trust_group(trust_block, records.shape[0])]
    in_headlist = rng.in_headlist()
    return (*_distinct_records(optin[in_headlist]), *_distinct_records(optin[~in_headlist]))


def _client_statistics(X_block, trust_block, *, offset, rng, client):
    """One chunk's clients run LocalAlg on their devices (``rng``); the counts of their reports."""
    records = _records(X_block)
    clients = records[~check_trust_group(trust_block, records.shape[0])]
    if clients.shape[0] == 0:
        return np.zeros(client._layout.n_cells, dtype=np.int64)
    reports = client._privatize_cells(client._layout.cells_of_records(clients), rng)
    return np.bincount(reports, minlength=client._layout.n_cells)


def _merged_records(parts):
    """The distinct records and counts of all chunks, from each chunk's (records, counts)."""
    records = np.concatenate([part[0] for part in parts]).reshape(-1, 2)
    counts = np.concatenate([part[1] for part in parts]).astype(np.int64)
    return _distinct_records(records, counts)


# --------------------------------------------------------------------------
# The curator
# --------------------------------------------------------------------------


def _headlist_group_size(n_optin, headlist_fraction):
    """``|S| = round(headlist_fraction |O|)``, leaving at least two users in T.

    Theorem 4's variance estimate needs ``|D_T| >= 2``.
    """
    return max(0, min(int(round(headlist_fraction * n_optin)), n_optin - 2))


class BlenderHeavyHitters(ValidatedParamsMixin, BaseEstimator):
    """The most popular search records and their probabilities under the hybrid model (BLENDER).

    Every user holds one (query, url) record. Opt-in users ("tcm") trust the curator,
    which builds a private head list of popular records from some of them and
    estimates the records' probabilities from the others; clients ("lm") privatize
    their record against that head list on their devices (:class:`BlenderClient`).
    The two groups' estimates are blended per record with inverse-variance weights.

    Read more in docs/privacy.rst about the guarantee and its neighbouring relation.

    Parameters
    ----------
    epsilon : float, default=4.0
        Every user's privacy level when no ``epsilon`` metadata is passed (the paper's
        choice, Section 4.2.1).
    delta : float, default=1e-5
        Every user's delta, in (0, 1): spent by the head-list threshold for opt-in
        users and by LocalAlg for clients. Take it well below ``1 / n_users``.
    max_records : int, default=50
        ``M``, the largest number of records in the head list.
    headlist_fraction : float, default=0.95
        ``f_O``, the share of opt-in users (S) that builds the candidate head list; the
        others (T) estimate the candidates' probabilities. At least two opt-in users
        are always left in T.
    query_budget_fraction : float, default=0.85
        ``f_C``, the share of each client's budget spent on reporting the query; the
        rest is spent on the URL.
    project_to_simplex : bool, default=True
        Project the blended estimates of all cells (head-list records and wildcards)
        onto the probability simplex, so that they are non-negative and sum to 1
        (BlendProbabilities, line 5, which the paper's experiments use).
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` draws noise from the operating system's secure randomness; an int
        gives reproducible noise (simulations only). Also drives the split of the
        opt-in users and, in ``fit``, the simulated clients' randomizer.

    ledger : PrivacyLedger, default=None
        Charge every release to this :class:`~skhybrid.accounting.PrivacyLedger`:
        each user pays their own privacy cost (docs/user_guide/accounting.rst) before
        any noise is drawn, or the fit raises
        :class:`~skhybrid.exceptions.BudgetExceededError` and releases nothing. Needs
        ``user_id`` in ``fit``. Shared, never copied, by ``clone`` and model selection.

    Attributes
    ----------
    head_list_ : list of tuple
        The head list: (query, url) tuples, most probable first, in the ids or labels
        of ``X``. The clients randomize against this set of records.
    probabilities_ : ndarray of shape (n_records,)
        The blended probability estimate of each record of ``head_list_`` (projected
        when ``project_to_simplex``).
    variances_ : ndarray of shape (n_records,)
        The variance of the blended (unprojected) estimates, ``w^2 sigma^2_O + (1 - w)^2
        sigma^2_C`` (Theorem 6) with the groups' variance estimates.
    weights_ : ndarray of shape (n_records,)
        ``w``, the weight of the opt-in estimate in each blend.
    optin_probabilities_, optin_variances_ : ndarray of shape (n_records,)
        The opt-in users' estimates (from T) and Theorem 4's variance estimates.
    client_probabilities_, client_variances_ : ndarray of shape (n_records,)
        The clients' denoised estimates (Observation 1) and Theorem 5's variance
        estimates; NaN and inf when fewer than two clients reported.
    other_probability_ : float
        The blended probability of all records outside the head list (the wildcard
        cells).
    n_candidates_ : int
        The size of the candidate head list built from S, before keeping the
        ``max_records`` most probable.
    n_headlist_users_, n_estimation_users_, n_clients_ : int
        ``|S|``, ``|T|`` and the number of clients (public group sizes).
    n_features_in_ : int
        Always 2.
    feature_names_in_ : ndarray of shape (2,)
        Defined when ``X`` has string feature names.

    See Also
    --------
    BlenderClient : LocalAlg, the client-side randomizer.
    skhybrid.theory.list_of_lists_ndcg : the metric of :meth:`score`.

    Notes
    -----
    *Privacy.* Each opt-in user is in S or in T, never both. CreateHeadList is
    (epsilon, delta)-DP for S: it counts the records S holds (the domain comes from
    the data) and keeps those whose count plus ``Laplace(2 / epsilon)`` noise exceeds
    ``tau = 1 + (2 / epsilon) ln(1 / delta)``, so a record held by one user alone
    surfaces with probability ``delta / 2``. EstimateOptinProbabilities is epsilon-DP
    for T (Laplace noise on a count vector over a partition fixed by S's output).
    LocalAlg is (epsilon, delta)-DP for each client in the local model (Theorem 3).
    Denoising, blending and the projection are post-processing. Group membership and
    the sizes of S, T and the clients are public.

    *Two phases.* In a deployment the clients need the head list before they can
    report. Fit the opt-in users alone (``trust_group=None``), publish ``head_list_``,
    let each device run ``make_client().privatize(record)``, then call
    :meth:`fit_reports` with the collected reports: it blends them with the opt-in
    estimates of the first fit and spends no further budget. ``fit`` with clients in
    ``X`` simulates all of this in one call.

    *Records.* ``X`` has exactly two columns, (query, url): integer ids >= 0
    (integer-valued floats are accepted), or labels, such as strings or any hashable
    values (object or string arrays, pandas columns of any dtype). With labels,
    ``head_list_``, :meth:`make_client`'s client and :meth:`fit_reports` speak in
    those labels (``None`` is the wildcard in reports); the fit encodes them once and
    keeps only the head list's own labels, never the set of all labels it saw (that
    would be a non-private statistic). URL ids may be local to a query: the pair
    identifies a record. Dask inputs must hold integer ids.

    *scikit-learn's generic checks.* Those that fit on generic data of 3 to 10 columns
    fail by design (the record has two); the list, with the reason, is published by
    :func:`skhybrid.utils.estimator_checks.expected_failed_checks` for
    ``check_estimator(..., expected_failed_checks=...)``.

    *Empty head list.* With no opt-in user (every user a client), there is nothing
    to build the head list from: the fit warns with
    :class:`~skhybrid.exceptions.EmptyGroupWarning` and the head list is empty. An
    empty head list can also be the private outcome of the threshold (no record is
    popular enough); then clients have nothing to report.

    *Head list.* The head list is the ``max_records`` candidates with the highest
    opt-in estimates from T (Figure 4), so those estimates are biased upwards near
    the cut-off (a selection effect the paper shares); the clients' estimates are not.

    *Dask inputs.* ``X`` (and the metadata) may be a Dask array of shape (n_users, 2)
    or a Dask DataFrame of two columns. The fit is two reductions over the chunks: the
    record counts of S and of T (the curator's split is drawn in blocks of opt-in
    users, so it does not depend on the chunking), then, against the head list built
    from them, the counts of the clients' reports, each chunk's clients randomizing
    with that chunk's own generator. Only distinct records and counts travel; ``X`` is
    never collected. With opt-in users only, the fit equals the in-memory one for the
    same seed.

    References
    ----------
    B. Avent, A. Korolova, D. Zeber, T. Hovden and B. Livshits. "BLENDER: Enabling
    Local Search with a Hybrid Differential Privacy Model". USENIX Security 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.datasets import make_search_logs
    >>> from skhybrid.heavy_hitters import BlenderHeavyHitters
    >>> X = make_search_logs(200_000, random_state=0)
    >>> trust = np.where(np.random.default_rng(1).random(200_000) < 0.1, "tcm", "lm")
    >>> est = BlenderHeavyHitters(max_records=10, random_state=0)
    >>> est = est.fit(X, trust_group=trust)
    >>> len(est.head_list_), est.head_list_[0]
    (10, (0, 0))
    >>> bool(0 < est.score(X) <= 1)
    True

    Records may be labels; the head list is then in those labels:

    >>> queries = np.array(["weather", "news", "maps"], dtype=object)
    >>> labelled = np.column_stack([queries[X[:, 0] % 3], X[:, 1].astype(str)])
    >>> est = BlenderHeavyHitters(max_records=3, random_state=0)
    >>> est = est.fit(labelled, trust_group=trust)
    >>> est.head_list_[0][0] in {"weather", "news", "maps"}
    True
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "max_records": [Interval(Integral, 1, None, closed="left")],
        "headlist_fraction": [Interval(Real, 0, 1, closed="neither")],
        "query_budget_fraction": [Interval(Real, 0, 1, closed="neither")],
        "project_to_simplex": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "ledger": [HasMethods(["charge"]), None],
    }

    def __init__(
        self,
        *,
        epsilon=4.0,
        delta=1e-5,
        max_records=50,
        headlist_fraction=0.95,
        query_budget_fraction=0.85,
        project_to_simplex=True,
        random_state=None,
        ledger=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.max_records = max_records
        self.headlist_fraction = headlist_fraction
        self.query_budget_fraction = query_budget_fraction
        self.project_to_simplex = project_to_simplex
        self.random_state = random_state
        self.ledger = ledger

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, trust_group=None, epsilon=None, user_id=None):
        """Build the private head list and estimate its records' probabilities.

        Parameters
        ----------
        X : array-like of shape (n_users, 2), or Dask array or DataFrame
            One (query, url) record of integer ids >= 0 per user. Clients' rows are
            their true records: their randomizer is simulated here with
            :class:`BlenderClient`. A Dask input is read chunk by chunk (see Notes).
        y : ignored
        trust_group : array-like of shape (n_users,), default=None
            ``"tcm"`` (opt-in) / ``"lm"`` (client), case-insensitive, or booleans
            (True = opt-in); ``None`` means every user opts in.
        epsilon : array-like of shape (n_users,), default=None
            Per-user privacy levels, one value for the opt-in users and one for the
            clients. ``None`` uses the ``epsilon`` parameter.

        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        Returns
        -------
        self : BlenderHeavyHitters
        """
        check_fit_metadata(self, trust_group, epsilon, hybrid=True, stacklevel=4)
        check_user_id(self, user_id)
        self.__dict__.pop("_head_labels", None)
        vocabularies = None  # each column's labels, when the records are labels (secret)
        # Two reductions over chunks of users (an in-memory X is one chunk): the record
        # counts of S and T, from which the curator builds the head list; then the
        # counts of the clients' reports against it. A Dask X is never collected.
        if is_dask_collection(X):
            n_optin_per_chunk, n_clients, epsilon_optin, epsilon_client = (
                self._summarise_dask_input(X, trust_group, epsilon)
            )
            _check_count_noise(sum(n_optin_per_chunk), epsilon_optin)
            charge_dask_release(self, user_id, trust_group, epsilon, allow_inf=False)

            def reduce(function, generators):
                return map_chunks(function, X, generators=generators, trust_group=trust_group)
        else:
            X, vocabularies = self._validate_records(X, reset=True)
            is_optin = check_trust_group(trust_group, X.shape[0])
            user_epsilon = check_epsilon(self.epsilon if epsilon is None else epsilon,
                                         None if epsilon is None else X.shape[0])
            epsilon_optin, epsilon_client = check_group_epsilons(
                user_epsilon, is_optin, "BlenderHeavyHitters"
            )
            n_optin_per_chunk = [int(np.count_nonzero(is_optin))]
            n_clients = X.shape[0] - n_optin_per_chunk[0]
            _check_count_noise(n_optin_per_chunk[0], epsilon_optin)
            charge_release(self, user_id, is_optin, user_epsilon)

            def reduce(function, generators):
                return [function(X, is_optin, offset=0, rng=generators[0])]

        rng = check_random_state(self.random_state)
        n_optin = sum(n_optin_per_chunk)
        if n_optin == 0:
            warnings.warn(
                "every user is a client (lm): the head list is built from opt-in (tcm) "
                "users, so it is empty and no record is estimated",
                EmptyGroupWarning,
                stacklevel=3,
            )
        n_headlist = _headlist_group_size(n_optin, self.headlist_fraction)
        split = _HeadListSplit(n_optin, n_headlist, rng)
        rank_starts = np.concatenate([[0], np.cumsum(n_optin_per_chunk)])
        parts = reduce(_optin_statistics, [
            split.part(int(start), int(stop))
            for start, stop in zip(rank_starts[:-1], rank_starts[1:])
        ])
        headlist_records, headlist_counts = _merged_records([part[:2] for part in parts])
        estimation_records, estimation_counts = _merged_records([part[2:] for part in parts])

        candidates = np.zeros((0, 2), dtype=np.int64)
        if n_headlist:
            candidates = _create_head_list(
                headlist_records, counts=headlist_counts, epsilon=epsilon_optin,
                delta=self.delta, rng=rng,
            )
        self.n_headlist_users_ = n_headlist
        self.n_estimation_users_ = n_optin - n_headlist
        self.n_candidates_ = candidates.shape[0]
        if candidates.shape[0] == 0:
            self._set_empty_head_list(n_clients)
            return self
        layout, optin_estimates, optin_variances = _estimate_optin_probabilities(
            estimation_records, candidates, counts=estimation_counts, epsilon=epsilon_optin,
            max_records=self.max_records, rng=rng,
        )
        self._head_records = layout.records
        self._optin_cells = (optin_estimates, optin_variances)

        client = None
        report_counts = None
        if n_clients:
            # The clients' devices randomize their records: each chunk's own generator.
            client = self._client(epsilon_client)
            device_rngs = chunk_generators(rng, len(n_optin_per_chunk))
            report_counts = sum(reduce(partial(_client_statistics, client=client), device_rngs))
        self._blend(layout, client, report_counts)
        if vocabularies is not None:
            self._publish_labels(*vocabularies)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_reports(self, reports, *, epsilon=None):
        """Replace the clients' part of the fit by reports privatized on their devices.

        The second phase of a deployment (see Notes of the class): the opt-in users'
        estimates of the last ``fit`` are blended with these reports' denoised
        estimates. No data other than the reports is read and no noise is drawn.

        Parameters
        ----------
        reports : array-like of shape (n_clients, 2)
            The clients' reports, from :meth:`BlenderClient.privatize` with
            :meth:`make_client`'s head list and privacy parameters.
        epsilon : float, default=None
            The clients' privacy level; ``None`` uses the ``epsilon`` parameter.

        Returns
        -------
        self : BlenderHeavyHitters
        """
        check_is_fitted(self)
        if not hasattr(self, "_head_records"):
            raise ValueError(
                "the fitted head list is empty, so clients have nothing to report; fit "
                "on more opt-in users or with a larger epsilon or delta"
            )
        client = self._client(self.epsilon if epsilon is None else epsilon)
        reports = client._ids(reports, name="reports", whom="fit_reports", wildcard=True)
        cells = client._layout.cells_of_reports(reports)
        report_counts = np.bincount(cells, minlength=client._layout.n_cells)
        self._blend(client._layout, client, report_counts if cells.size else None)
        return self

    def make_client(self, epsilon=None):
        """The client-side randomizer for the fitted head list (LocalAlg).

        Parameters
        ----------
        epsilon : float, default=None
            The clients' privacy level; ``None`` uses the ``epsilon`` parameter.

        Returns
        -------
        client : BlenderClient
        """
        check_is_fitted(self)
        if not hasattr(self, "_head_records"):
            raise ValueError("the fitted head list is empty; there is nothing to report")
        return self._client(self.epsilon if epsilon is None else epsilon)

    def score(self, X, y=None):
        """The list-of-lists NDCG of the head list against every record in ``X``.

        Queries are ranked by the sum of their records' ``probabilities_`` and each
        query's URLs by their probabilities, and compared with the frequencies of the
        records in ``X`` (:func:`skhybrid.theory.list_of_lists_ndcg`, Section 4), with
        ideal lists holding *every* query and URL of ``X`` (``ideal="all"``): a
        shorter list never scores higher for being short, so scores of different
        ``max_records`` are comparable in model selection. The paper's own figures
        use the ideal of the head list's length (``ideal="estimated"``).

        For simulations only: with real data the score is not private (it reads ``X``
        exactly) and no ledger charges it, so selecting a model by it publishes a
        non-private choice. To select on real data use
        :class:`~skhybrid.model_selection.PrivateGridSearchCV`
        (docs/user_guide/private_selection.rst).

        Parameters
        ----------
        X : array-like of shape (n_users, 2)
            (query, url) records: integer ids >= 0, or labels as in :meth:`fit`.
        y : ignored

        Returns
        -------
        score : float
            In [0, 1], higher is better; 0 for an empty head list. Not private: it
            reads ``X`` exactly.
        """
        check_is_fitted(self)
        warn_score_leak(self)
        X, vocabularies = self._validate_records(X, reset=False)
        if not self.head_list_:
            return 0.0
        if vocabularies is None and "_head_labels" not in self.__dict__:
            head = np.array(self.head_list_, dtype=np.int64)
        else:  # labels: one encoding of the head list and X's records together
            records = X if vocabularies is None else np.column_stack(
                [np.asarray(vocabularies[j], dtype=object)[X[:, j]] for j in range(2)]
            )
            head = np.empty((len(self.head_list_), 2), dtype=object)
            head[:] = self.head_list_
            ids, _ = _factorized_records(np.concatenate([head, records.astype(object)]))
            head, X = ids[: head.shape[0]], ids[head.shape[0]:]
        distinct, counts = _distinct_records(X)
        return list_of_lists_ndcg((head, self.probabilities_), (distinct, counts), ideal="all")

    # -- private helpers ------------------------------------------------------------------

    def _validate_records(self, X, *, reset):
        """Records as int64 ids, and for label records each column's labels (else None)."""
        labels = _label_records(X)
        if labels is None:
            X = validate_data(self, X, reset=reset, dtype="numeric")
            return _as_id_pairs(X, name="X", whom=type(self).__name__), None
        validate_data(self, X, reset=reset, dtype=None, ensure_all_finite=False)
        return _factorized_records(_check_labels(labels, name="X"))

    def _publish_labels(self, queries, urls):
        """Report the head list in the user's labels; keep only the head list's own labels.

        ``queries`` and ``urls`` list every label of the data (secret): only those of
        head-list records survive, and the clients' ids come from the head list alone.
        """
        def labelled(pairs):
            return [(queries[query], urls[url]) for query, url in pairs]

        self.head_list_ = labelled(self.head_list_)
        self._head_labels = labelled(self._head_records.tolist())
        self._head_records = _RecordCodec(self._head_labels).records

    def _summarise_dask_input(self, X, trust_group, epsilon):
        """Validate a Dask input chunk by chunk (one reduction).

        Returns
        -------
        n_optin_per_chunk : list of int
        n_clients : int
        epsilon_optin, epsilon_client : float or None
        """
        check_dask_features(self, X, reset=True)
        if self.n_features_in_ != 2:
            _as_id_pairs(np.zeros((0, self.n_features_in_)), name="X",
                         whom=type(self).__name__)
        default_epsilon = check_epsilon(self.epsilon) if epsilon is None else None
        summaries = map_chunks(
            partial(summarise_chunk, default_epsilon=default_epsilon,
                    estimator_name=type(self).__name__, check_values=_records),
            X, trust_group=trust_group, epsilon=epsilon,
        )
        if sum(summary.n_tcm + summary.n_lm for summary in summaries) == 0:
            raise ValueError("X has 0 samples; BlenderHeavyHitters needs at least one")
        users = merge_chunk_summaries(summaries, type(self).__name__)
        n_optin_per_chunk = [summary.n_tcm for summary in summaries]
        return n_optin_per_chunk, users.n_lm, users.epsilon_tcm, users.epsilon_lm

    def _client(self, epsilon):
        head = self.__dict__.get("_head_labels", self._head_records)
        return BlenderClient(head, epsilon=epsilon, delta=self.delta,
                             query_budget_fraction=self.query_budget_fraction)

    def _blend(self, layout, client, report_counts):
        """BlendProbabilities (Figure 7) over the layout's cells; sets the fitted attributes."""
        optin_estimates, optin_variances = self._optin_cells
        n_reports = 0 if report_counts is None else int(report_counts.sum())
        if n_reports >= 2:
            client_estimates, client_variances = _estimate_client_probabilities(
                report_counts, client
            )
        else:  # no client estimate: the blend takes the opt-in estimate (weight 1)
            client_estimates = np.full(layout.n_cells, np.nan)
            client_variances = np.full(layout.n_cells, np.inf)
        estimates, variances = blend_estimates(
            optin_estimates, optin_variances, client_estimates, client_variances
        )
        released = project_onto_simplex(estimates) if self.project_to_simplex else estimates

        cells = layout.record_cells
        # Most probable first; the unprojected blend breaks the projection's ties at 0.
        order = cells[np.argsort(-estimates[cells], kind="stable")]
        wildcards = np.ones(layout.n_cells, dtype=bool)
        wildcards[cells] = False
        ordered = layout.cell_records[order]
        labels = self.__dict__.get("_head_labels")  # after a fit on labels
        self.head_list_ = (_RecordCodec(labels).decode(ordered) if labels is not None
                           else [tuple(pair) for pair in ordered.tolist()])
        self.probabilities_ = released[order]
        self.variances_ = variances[order]
        self.weights_ = np.asarray(blending_weights(optin_variances, client_variances))[order]
        self.optin_probabilities_ = optin_estimates[order]
        self.optin_variances_ = optin_variances[order]
        self.client_probabilities_ = client_estimates[order]
        self.client_variances_ = client_variances[order]
        self.other_probability_ = float(released[wildcards].sum())
        self.n_clients_ = n_reports

    def _set_empty_head_list(self, n_clients):
        """No candidate passed the threshold: nothing is estimated, clients have nothing to say."""
        for name in ("_head_records", "_optin_cells"):
            self.__dict__.pop(name, None)
        self.head_list_ = []
        for name in ("probabilities_", "variances_", "weights_", "optin_probabilities_",
                     "optin_variances_", "client_probabilities_", "client_variances_"):
            setattr(self, name, np.zeros(0))
        self.other_probability_ = 1.0
        self.n_clients_ = n_clients

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        tags.input_tags.allow_nan = False
        # Records are non-negative integer ids: scikit-learn's checks then feed such data.
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        return tags
