"""BLENDER's records: validation, distinct records, the head list as the clients see it.

The head list as the clients see it (a :class:`_HeadListLayout`) partitions the space of
all records into *cells*: every head-list record, one wildcard cell ``(q, *)`` per
head-list query for its other URLs, and ``(*, *)`` for every other query.
"""

from numbers import Integral

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_array

#: The id standing for the wildcard ``*`` in reports and in :attr:`BlenderClient.report_records`:
#: ``(q, WILDCARD)`` is "query q with a URL outside the head list", ``(WILDCARD, WILDCARD)``
#: "a query outside the head list". Real ids are >= 0.
WILDCARD = -1

_INT64_MAX = np.iinfo(np.int64).max


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
        codes, uniques = pd.factorize(labels[:, column])
        ids[:, column] = codes
        vocabularies.append(list(uniques))
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
    if int(records[:, 0].max()) <= (_INT64_MAX - url_base + 1) // url_base:
        codes, inverse = np.unique(records[:, 0] * url_base + records[:, 1],
                                   return_inverse=True)
        distinct = np.column_stack(np.divmod(codes, url_base))
    else:
        distinct, inverse = np.unique(records, axis=0, return_inverse=True)
    summed = np.bincount(inverse.ravel(), weights=counts, minlength=distinct.shape[0])
    return distinct, summed.astype(np.int64)


def _position_in(sorted_values, values):
    """Position of each of ``values`` in ``sorted_values`` and whether it is there
    (positions of absent values are arbitrary but valid)."""
    position = np.minimum(np.searchsorted(sorted_values, values), sorted_values.size - 1)
    return position, sorted_values[position] == values


class _HeadListLayout:
    """The head list as the clients see it: its records and wildcards, flattened into cells.

    Queries are ordered by their first appearance in ``records``, each query's URLs in
    list order followed by its wildcard URL, and the wildcard query ``(*, *)`` is the
    last cell: the convention of :mod:`skhybrid.theory._blender_local`
    (EstimateClientProbabilities, lines 1-3).

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
