"""The tcm mask of a ``trust_group`` column of labels, read in compiled or vectorised passes.

:func:`~skhybrid.utils.check_trust_group` hands string, object, Arrow-string and
category columns to :func:`_from_labels` and :func:`_from_codes`: only the distinct
values are inspected in Python, and the first bad entry is named with its index.
"""

import numbers
import warnings

import numpy as np

_TRUST_GROUP_NAMES = {"tcm": True, "lm": False}

_TRUST_EXPECTED = "'tcm' or 'lm' (case-insensitive), a boolean or 1/0 (True/1 = tcm)"


def _from_labels(column):
    """The tcm mask of a string or object column (numpy array or pandas Series).

    The common cases are one compiled pass: an object column whose rows share a few
    string objects (as pandas' CSV reader and Python literals give) is numbered by
    object identity, and an Arrow string column is compared byte by byte. Otherwise,
    exactly ``"tcm"`` / ``"lm"`` is vectorised comparisons; other spellings, ints, bools
    and missing values go through a factorisation, inspecting only the distinct values
    in Python.
    """
    if isinstance(column, np.ndarray) or column.dtype == object:
        values = np.asarray(column)
        is_tcm = _tcm_mask_by_identity(values) if values.dtype == object else None
        if is_tcm is not None:
            return is_tcm
        # numpy compares object arrays faster than pandas does, but each element is a
        # Python string comparison (about 10 ns): one pass over every row for "lm" (the
        # larger group in the hybrid model), then one over the other rows only.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # elementwise comparison
            is_lm = np.asarray(values == "lm", dtype=bool)
            if is_lm.ndim == 1 and np.asarray(values[~is_lm] == "tcm", dtype=bool).all():
                return ~is_lm
    elif _arrow_strings(column.dtype):  # pandas' str and string[pyarrow] columns
        is_tcm = _arrow_tcm_mask(column.array.__arrow_array__())
        if is_tcm is not None:
            return is_tcm
    else:  # pandas' Python-backed string dtype compares in C
        is_tcm = (column == "tcm").to_numpy(dtype=bool, na_value=False)
        is_lm = (column == "lm").to_numpy(dtype=bool, na_value=False)
        if (is_tcm | is_lm).all():
            return is_tcm
    codes, uniques = _factorize(column)
    return _from_codes(codes, uniques, column)


#: The most distinct objects :func:`_tcm_mask_by_identity` numbers before it gives up.
_MAX_IDENTITIES = 16


class _Addresses:
    """The addresses of an object array's entries, as an array of uintp (no copy).

    numpy's array interface over the object array's own buffer of pointers; this holds
    the object array, so the objects (and their addresses) live as long as the view.
    The addresses are compared, never followed.
    """

    def __init__(self, objects):
        self._objects = objects
        interface = objects.__array_interface__
        self.__array_interface__ = {
            "shape": objects.shape, "strides": objects.strides, "version": 3,
            "typestr": np.dtype(np.uintp).str, "data": (interface["data"][0], True),
        }


def _tcm_mask_by_identity(values):
    """The tcm mask of a 1-d object array holding at most a few distinct objects, else None.

    Rows holding the same object hold the same value, so one compiled pass finds the
    distinct objects by address, only they are inspected (as in :func:`_from_codes`),
    and the rows are compared with the tcm objects' addresses. None when there are more
    than ``_MAX_IDENTITIES`` objects (a column of one string object per row, as
    ``astype(object)`` makes) or one of them is not an accepted value: the caller's
    comparisons and factorisation then decide.
    """
    from ._kernels import distinct_addresses

    if values.ndim != 1:
        return None
    addresses = np.asarray(_Addresses(values))
    table = np.zeros(_MAX_IDENTITIES, dtype=np.uintp)
    first_rows = np.zeros(_MAX_IDENTITIES, dtype=np.intp)
    n_distinct = distinct_addresses(addresses, table, first_rows)
    if n_distinct < 0:
        return None
    mapped = [_trust_value(values[row]) for row in first_rows[:n_distinct]]
    if None in mapped:
        return None
    tcm_addresses = table[:n_distinct][np.array(mapped, dtype=bool)]
    if tcm_addresses.size == 0:
        return np.zeros(values.shape[0], dtype=bool)
    is_tcm = addresses == tcm_addresses[0]
    for address in tcm_addresses[1:]:  # "tcm" and "TCM", say
        is_tcm |= addresses == address
    return is_tcm


def _arrow_strings(dtype):
    """Whether a pandas dtype stores its strings in Arrow (then compared by Arrow)."""
    if getattr(dtype, "storage", None) == "pyarrow":  # StringDtype: str, string[pyarrow]
        return True
    arrow_type = getattr(dtype, "pyarrow_dtype", None)  # pd.ArrowDtype
    if arrow_type is None:
        return False
    import pyarrow as pa

    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def _arrow_tcm_mask(strings):
    """The tcm mask of an Arrow string column of exactly ``"tcm"`` / ``"lm"``, else None.

    Each chunk's offsets and bytes are read in place by one compiled pass
    (:func:`~skhybrid.utils._kernels.tcm_lm_strings`). Nulls and other spellings give None: the caller's
    factorisation handles them and names the first bad entry.
    """
    import pyarrow as pa  # present: pandas' Arrow-backed strings need it

    from ._kernels import tcm_lm_strings

    chunks = getattr(strings, "chunks", [strings])
    is_tcm = np.empty(len(strings), dtype=bool)
    start = 0
    for chunk in chunks:
        if chunk.null_count or not (pa.types.is_string(chunk.type)
                                    or pa.types.is_large_string(chunk.type)):
            return None
        offsets, data = _string_buffers(chunk)
        mask = is_tcm[start : start + len(chunk)]

        if not tcm_lm_strings(offsets, data, mask):
            return None
        start += len(chunk)
    return is_tcm


def _string_buffers(strings):
    """An Arrow (large) string array's offsets and bytes as numpy views, from its offset.

    The array may start inside its buffers (``offset``, as a slice does): its ``n``
    strings are delimited by ``n + 1`` offsets from there, into the whole bytes buffer
    (at least 2 bytes, which :func:`~skhybrid.utils._kernels.tcm_lm_strings` reads).
    """
    import pyarrow as pa

    offset_type = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    _, offsets, data = strings.buffers()
    offsets = np.frombuffer(offsets, dtype=offset_type)
    offsets = offsets[strings.offset : strings.offset + len(strings) + 1]
    data = np.zeros(0, dtype=np.uint8) if data is None else np.frombuffer(data, np.uint8)
    if data.shape[0] < 2:  # the compiled pass reads 2 bytes even of shorter strings
        data = np.concatenate([data, np.zeros(2, dtype=np.uint8)])
    return offsets, data


def _trust_value(value):
    """True (tcm) or False (lm) for one accepted ``trust_group`` entry, else None."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (numbers.Integral, np.integer)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return _TRUST_GROUP_NAMES.get(value.lower())
    return None


def _from_codes(codes, uniques, entries):
    """The tcm mask from factorised entries; codes -1 (missing) and unknown values are bad."""
    mapped = [_trust_value(value) for value in uniques]
    valid = np.array([value is not None for value in mapped] + [False])
    lookup = np.array([bool(value) for value in mapped] + [False])
    tcm_codes = np.flatnonzero(lookup)
    if valid[:-1].all() and tcm_codes.size == 1 and (codes.size == 0 or codes.min() >= 0):
        # Every distinct value is accepted, none is missing, one of them means tcm
        # (the usual category column): two comparison passes, no gather of the codes.
        return codes == tcm_codes[0]
    bad = ~valid[codes]  # code -1 (a missing value) indexes the trailing False
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        value = np.asarray(entries, dtype=object)[index]
        shown = value.item() if isinstance(value, np.generic) else value
        raise ValueError(
            f"trust_group must be {_TRUST_EXPECTED}; got {shown!r} at index {index}"
        )
    return lookup[codes]


def _pandas_column(values):
    """``values`` as a pandas Series when it is a pandas Series or Index, else None."""
    if not type(values).__module__.startswith("pandas"):
        return None
    import pandas as pd

    if isinstance(values, pd.Index):
        return values.to_series(index=pd.RangeIndex(len(values)))
    return values if isinstance(values, pd.Series) else None


def _factorize(values):
    """Integer codes and distinct values of a 1-d column (-1 for missing values)."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is optional
        pd = None
    if pd is not None:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        return np.asarray(codes, dtype=np.intp), list(uniques)
    # Without pandas: a dict of the distinct values (a Python loop, for plain lists).
    index, codes = {}, np.empty(len(values), dtype=np.intp)
    for row, value in enumerate(values.tolist()):
        key = (type(value), value)
        codes[row] = index.setdefault(key, len(index))
    return codes, [value for _, value in index]
