"""The tcm mask of a ``trust_group`` column of labels, by vectorized comparisons: columns
of exactly ``"tcm"`` / ``"lm"`` are compared as a whole, anything else is factorized by
pandas (only the distinct values are inspected in Python)."""

import numbers

import numpy as np
import pandas as pd

_TRUST_GROUP_NAMES = {"tcm": True, "lm": False}

_TRUST_EXPECTED = "'tcm' or 'lm' (case-insensitive), a boolean or 1/0 (True/1 = tcm)"

#: A ``<U3`` row (``np.where(mask, "tcm", "lm")``) as its first two code points and its
#: third: two integer comparisons per row, 2-4x faster than numpy's string comparisons.
_U3_ROWS = np.dtype([("head", np.uint64), ("last", np.uint32)])
_TCM_U3, _LM_U3 = np.array(["tcm", "lm"], dtype="U3").view(_U3_ROWS)


def labels_tcm_mask(column):
    """The tcm mask of a 1-d column of labels: a numpy array of kind U, S, T or O, or a
    pandas Series of strings or objects."""
    is_tcm = _exact_tcm_mask(column)
    if is_tcm is not None:
        return is_tcm
    if isinstance(column, np.ndarray) and column.dtype.kind != "O":
        column = column.astype(object)  # bytes and StringDType's strings as objects
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    codes, uniques = np.asarray(codes, dtype=np.intp), list(uniques)
    if column.dtype == object and not all(isinstance(value, str) for value in uniques):
        codes, uniques = _by_type(column, codes)
    return codes_tcm_mask(codes, uniques, column)


def _exact_tcm_mask(column):
    """The tcm mask of a column of exactly ``"tcm"`` / ``"lm"``, else None."""
    if column.dtype == np.dtype("U3") and isinstance(column, np.ndarray):
        rows = column.view(_U3_ROWS)
        head, last = rows["head"], rows["last"]
        is_tcm = head == _TCM_U3["head"]
        n_tcm = int(np.count_nonzero(is_tcm))
        if n_tcm < is_tcm.size and np.count_nonzero(head == _LM_U3["head"]) != is_tcm.size - n_tcm:
            return None
        if n_tcm in (0, is_tcm.size):  # one group: one expected last code point
            valid = np.count_nonzero(last == (_TCM_U3["last"] if n_tcm else 0)) == is_tcm.size
        else:
            valid = np.array_equal(last, is_tcm * _TCM_U3["last"])  # 0 ends "lm"
        return is_tcm if valid else None
    tcm, lm = (b"tcm", b"lm") if column.dtype.kind == "S" else ("tcm", "lm")
    try:
        is_tcm = _as_mask(column == tcm)
        if is_tcm.all():
            return is_tcm
        # The other rows only: each object comparison is a Python call.
        return is_tcm if _as_mask(column[~is_tcm] == lm).all() else None
    except TypeError:  # pd.NA in an object column has no truth value
        return None


def _as_mask(compared):
    if isinstance(compared, pd.Series):
        return compared.to_numpy(dtype=bool, na_value=False)
    return np.asarray(compared, dtype=bool)


def _by_type(column, codes):
    """Codes of (value, type) pairs, and one entry of each: pandas counts equal numbers
    of different types as one value (True, 1 and 1.0), of which 1.0 is refused."""
    type_codes, types = pd.factorize(np.frompyfunc(type, 1, 1)(column))
    pairs = np.where(codes < 0, -1, codes * len(types) + type_codes)
    _, first_rows, codes = np.unique(pairs, return_index=True, return_inverse=True)
    return codes, [column[row] for row in first_rows]


def _trust_value(value):
    """True (tcm) or False (lm) for one accepted ``trust_group`` entry, else None."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (numbers.Integral, np.integer)) and value in (0, 1):
        return bool(value)
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if isinstance(value, str):
        return _TRUST_GROUP_NAMES.get(value.lower())
    return None


def codes_tcm_mask(codes, uniques, entries):
    """The tcm mask from factorized entries; codes -1 (missing) and unknown values are bad."""
    mapped = [_trust_value(value) for value in uniques]
    valid = np.array([value is not None for value in mapped] + [False])
    lookup = np.array([bool(value) for value in mapped] + [False])
    if valid[:-1].all() and np.count_nonzero(lookup) == 1 and codes.min(initial=0) >= 0:
        # Every value accepted, none missing, one means tcm (a category column): a
        # comparison instead of two gathers.
        return codes == np.flatnonzero(lookup)[0]
    bad = ~valid[codes]  # code -1 (a missing value) indexes the trailing False
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        value = entries.iloc[index] if isinstance(entries, pd.Series) else entries[index]
        shown = value.item() if isinstance(value, np.generic) else value
        raise ValueError(
            f"trust_group must be {_TRUST_EXPECTED}; got {shown!r} at index {index}"
        )
    return lookup[codes]


def pandas_column(values):
    """``values`` as a pandas Series when it is a pandas Series or Index, else None."""
    if isinstance(values, pd.Index):
        return values.to_series(index=pd.RangeIndex(len(values)))
    return values if isinstance(values, pd.Series) else None
