"""Compiled loops (numba) for the passes numpy cannot fuse.

In numpy, every step of a statistic is a pass over memory: fixed-point codes take four
(clip, shift, scale, round) and grouped sums several more (masks, one-hot matrices,
bincounts); Lloyd's assignment step takes a pass per centre for the running minimum.
Here each is one compiled pass that reads every value once: the codes and their sums
in :func:`fixed_point_code_sums` (with the squared distances' codes and the other
group's float sums in :func:`moment_sums`), the nearest centre and its sums in
:func:`nearest_centre_sums` (scikit-learn's Lloyd iterations do the same in Cython),
with, for local users, their randomized response and their report's sum by reported
cluster.

Every kernel is compiled on its first call for the argument types it gets, with
``nogil`` (threads, ours and Dask's, run them in parallel) and ``cache`` (the machine
code is stored beside this file, or in the user's cache when that is read-only, and
reloaded by later processes). They take arrays of matching shapes from the callers in
:mod:`skhybrid.utils._sums` and :mod:`skhybrid.cluster._kmeans`: bounds are not
checked, and a label outside ``[0, n_groups)`` is skipped, never written.

The fixed-point kernels take values feature-major (``values.T``, no copy): each
feature's values are then contiguous for one feature or a Fortran-ordered input, and
the loops over them vectorize.

Exactness: a code is computed by exactly the float operations of the proof in
:func:`fixed_point_code` (no contraction into fused multiply-adds: the product's
operand is a difference, not a sum); it is an integer of at most
``2**FIXED_POINT_BITS``, converted exactly to int64, and codes are added in int64:
integer additions are exact in any order, so these loops vectorize without fast-math
(int64 sums stay below 2**63 for the at most ``MAX_USERS`` users of one sum). Only the
lm users' already private reports are added in float64, in an order the compiler may
change (:func:`_block_sum`, :func:`_reported_sums`) or in row order
(:func:`nearest_centre_sums`).
Labels compare distances with ``<`` only, so the first minimum is kept on ties, as
``argmin`` does; the distances' products and sums may be fused
(:func:`_column_distances`, :func:`_row_products`), which no code or sum depends on.
"""

import numba
import numpy as np

# Frozen into the machine code at compile time, and numba's cache is keyed on this file:
# a change of FIXED_POINT_BITS in _sums must come with a change here.
from ._sums import _HALF_GRID, _SQUARE_STEP

#: numba's options: release the GIL, cache the machine code, no bounds checks (the
#: callers pass arrays of matching shapes).
_OPTIONS = {"nogil": True, "cache": True, "boundscheck": False}
#: Rows per block of the feature-by-feature loops: a block of a row-major input stays in
#: cache while each feature's column of it is read in turn, and the lm reports of a
#: block are buffered for one vectorized float sum (:func:`_block_sum`).
_BLOCK_ROWS = 4096


@numba.njit(inline="always", **_OPTIONS)
def fixed_point_code(value, lower, upper, scale):
    """A value's integer code on the grid of ``[lower, upper]``, as a float.

    ``rint((clip(value, lower, upper) - lower) * scale)`` with ``scale = 2**B / (upper -
    lower)`` (``B = FIXED_POINT_BITS``). No code leaves ``[0, 2**B]``: for ``lower <= x
    <= upper``, rounding is monotone, so ``0 <= fl(x - lower) <= fl(upper - lower)``;
    ``scale`` and the product each round by at most 2**-53 (relative), so the scaled
    value is at most ``2**B (1 + 2**-52)``, which ``rint`` brings back to ``2**B`` while
    ``2**B * 2**-52 < 1/2`` (B <= 50). Infinite values are clipped to the bounds; NaN
    has no code (the callers' inputs are validated finite).
    """
    value = lower if value < lower else value
    value = upper if value > upper else value
    return np.rint((value - lower) * scale)


@numba.njit(fastmath={"reassoc"}, **_OPTIONS)
def _block_sum(buffer, length):
    """``buffer[:length].sum()``, in any order of additions (so that it vectorizes).

    Only for values whose rounding is not part of any guarantee (the lm users'
    reports, already private); fixed-point codes are added in int64.
    """
    total = 0.0
    for index in range(length):
        total += buffer[index]
    return total


@numba.njit(inline="always", **_OPTIONS)
def _non_finite(value):
    """1 for NaN (every comparison is False) or an infinity, else 0: a count that
    vectorizes, for the callers' finiteness checks made in their own passes."""
    return 0 if abs(value) < np.inf else 1


@numba.njit(**_OPTIONS)
def fixed_point_code_sums(columns, lower, upper, scale, labels, sums, non_finite=None):
    """``sums[g, j] +=`` the codes of feature ``j`` of the rows labelled ``g``, exactly.

    Each code is an integer of at most ``2**FIXED_POINT_BITS``, converted exactly to
    int64 and added in int64: integer additions, exact in any order (so the loops
    vectorize) while the sums stay below 2**63.

    Parameters
    ----------
    columns : ndarray of float64 of shape (n_features, n_rows)
        The values, feature-major and C-contiguous.
    lower, upper, scale : ndarray of float64 of shape (n_features,)
    labels : ndarray of int of shape (n_rows,) or None
        Each row's group; rows labelled outside ``[0, n_groups)`` are left out. None
        puts every row in group 0.
    sums : ndarray of int64 of shape (n_groups, n_features)
        Added to in place.
    non_finite : ndarray of int64 of shape (1,) or None
        Unless None, ``non_finite[0] +=`` the number of NaN or infinite values of every
        row (labelled out or not); a caller that counts any must discard the sums.
    """
    n_features, n_rows = columns.shape
    n_groups = sums.shape[0]
    # With more groups, labelled rows are added to a copy with one more row, for the
    # rows left out: a selection, not a branch on the (unpredictable) label.
    scattered = np.zeros((n_groups + 1, n_features), dtype=np.int64)
    for feature in range(n_features):
        low, high, step = lower[feature], upper[feature], scale[feature]
        bad = np.int64(0)
        if labels is None:
            total = np.int64(0)
            for row in range(n_rows):
                value = columns[feature, row]
                if non_finite is not None:
                    bad += _non_finite(value)
                total += np.int64(fixed_point_code(value, low, high, step))
            sums[0, feature] += total
        elif n_groups <= 2:
            # The common case (tcm or not, kept or dropped): each row's code or 0 in each
            # group's total, by selection (the loop vectorizes).
            first = np.int64(0)
            second = np.int64(0)
            for row in range(n_rows):
                value = columns[feature, row]
                if non_finite is not None:
                    bad += _non_finite(value)
                code = np.int64(fixed_point_code(value, low, high, step))
                group = labels[row]
                first += code if group == 0 else 0
                second += code if group == 1 else 0
            sums[0, feature] += first
            if n_groups == 2:
                sums[1, feature] += second
        else:
            for row in range(n_rows):
                value = columns[feature, row]
                if non_finite is not None:
                    bad += _non_finite(value)
                group = labels[row]
                group = group if 0 <= group < n_groups else n_groups
                scattered[group, feature] += np.int64(fixed_point_code(value, low, high, step))
        if non_finite is not None:
            non_finite[0] += bad
    if labels is not None and n_groups > 2:
        sums += scattered[:n_groups]


@numba.njit(**_OPTIONS)
def moment_sums(columns, lower, upper, scale, centre, is_coded, code_sums, square_code_sums,
                float_sums, float_square_sums, non_finite):
    """The hybrid mean's sums of one chunk, in one pass over its values.

    The rows in ``is_coded`` (every row when it is None; the tcm users) add their
    clipped value's code (:func:`fixed_point_code`) to ``code_sums`` and, unless
    ``square_code_sums`` is None, the code of their squared distance to the midpoint
    (:func:`~skhybrid.utils._sums.square_codes_of`, from their code) to
    ``square_code_sums``; both in int64, exactly. The other rows (lm users' reports,
    already private) add their value to ``float_sums`` and, unless
    ``float_square_sums`` is None, ``(x - centre)**2`` to ``float_square_sums``, in an
    order that vectorizes (:func:`_block_sum`). No sum includes a row of the other kind.

    A square code is computed from the value's code by the float operations of
    :func:`~skhybrid.utils._sums.square_codes_of` (numpy's passes make the same): a
    function of the user's own clipped value, an integer in ``[0, 2**B]`` whatever the
    bounds, so one user moves the square sum by at most one grid range.

    Where the C extension ``_skhybrid_native`` is installed, its ``moment_sums`` (the
    same arguments, the same integers) runs instead, from a process's first fit
    (:func:`~skhybrid.utils._sums._native_moment_sums`).

    Parameters
    ----------
    columns : ndarray of float64 of shape (n_features, n_rows)
        The values, feature-major and C-contiguous.
    lower, upper, scale : ndarray of float64 of shape (n_features,)
    centre : ndarray of float64 of shape (n_features,)
        The midpoint, for the other rows' ``(x - centre)**2``.
    is_coded : ndarray of bool of shape (n_rows,) or None
    code_sums, square_code_sums : ndarray of int64 of shape (n_features,)
        Added to in place (``square_code_sums`` may be None).
    float_sums, float_square_sums : ndarray of float64 of shape (n_features,) or None
        Added to in place; None when there are no other rows to add.
    non_finite : ndarray of int64 of shape (1,) or None
        Unless None, ``non_finite[0] +=`` the number of values (of every row, coded or
        not) that are NaN or infinite: the caller's finiteness check, made in this pass
        instead of a pass of its own. Such a value's code is meaningless (NaN converts
        to no integer), so a caller that counts any must discard every sum.
    """
    n_features, n_rows = columns.shape
    other_block = np.empty(_BLOCK_ROWS)
    other_square_block = np.empty(_BLOCK_ROWS)
    for feature in range(n_features):
        constants = (lower[feature], upper[feature], scale[feature], centre[feature])
        for start in range(0, n_rows, _BLOCK_ROWS):
            stop = min(start + _BLOCK_ROWS, n_rows)
            # Slices, read from index 0 (see _moment_block).
            block = columns[feature, start:stop]
            if is_coded is None:
                total, square_total, bad = _moment_block(
                    block, None, constants, square_code_sums, float_sums, float_square_sums,
                    other_block, other_square_block, non_finite)
            else:
                total, square_total, bad = _moment_block(
                    block, is_coded[start:stop], constants, square_code_sums, float_sums,
                    float_square_sums, other_block, other_square_block, non_finite)
            code_sums[feature] += total
            if non_finite is not None:
                non_finite[0] += bad
            if square_code_sums is not None:
                square_code_sums[feature] += square_total
            if float_sums is not None:
                float_sums[feature] += _block_sum(other_block, stop - start)
                if float_square_sums is not None:
                    float_square_sums[feature] += _block_sum(other_square_block, stop - start)


@numba.njit(inline="always", **_OPTIONS)
def _moment_block(block, coded_rows, constants, square_code_sums, float_sums,
                  float_square_sums, other_block, other_square_block, non_finite):
    """One block of :func:`moment_sums`: the code and square-code totals of its coded rows
    (every row when ``coded_rows`` is None) and, unless ``non_finite`` is None, the count
    of its NaN or infinite values; its other rows' values (and squares) into
    ``other_block`` (and ``other_square_block``). The optional arrays only say which.

    The block is a slice read from index 0: numba's wrap-around of negative indices is
    then provably never taken and the loop reads the block contiguously (indexing
    ``columns[feature, row]`` from ``start``, LLVM gathered the values, 6x slower on
    AMD Zen 5).
    """
    low, high, step, middle = constants
    total = np.int64(0)
    square_total = np.int64(0)
    bad = np.int64(0)
    for row in range(block.shape[0]):
        value = block[row]
        if non_finite is not None:
            bad += _non_finite(value)
        clipped = low if value < low else value
        clipped = high if clipped > high else clipped
        code_value = np.rint((clipped - low) * step)
        code = np.int64(code_value)
        if coded_rows is None:
            coded = True
        else:
            coded = coded_rows[row]
        total += code if coded else 0
        if square_code_sums is not None:
            # square_codes_of: the same operations on the code (a float integer).
            distance = code_value - _HALF_GRID
            square_code = np.int64(np.rint(distance * distance * _SQUARE_STEP))
            square_total += square_code if coded else 0
        if float_sums is not None:
            other_block[row] = 0.0 if coded else value
            if float_square_sums is not None:
                offset = value - middle
                other_square_block[row] = 0.0 if coded else offset * offset
    return total, square_total, bad


@numba.njit(**_OPTIONS)
def distinct_addresses(addresses, table, first_rows):
    """The distinct addresses of an object array's entries, up to ``len(table)`` of them.

    Equal addresses are the same object, so a column whose rows share a few objects
    has a few distinct values, found here in one pass. The addresses are compared,
    never followed.

    Parameters
    ----------
    addresses : ndarray of uintp of shape (n_rows,)
        The address of each row's object.
    table, first_rows : ndarray of uintp and intp of shape (max_distinct,)
        Written in place: each distinct address, in order of first appearance, and the
        first row holding it.

    Returns
    -------
    n_distinct : int
        The number of distinct addresses, or -1 when there are more than ``len(table)``.
    """
    n_rows = addresses.shape[0]
    if n_rows == 0:
        return 0
    first = second = table[0] = addresses[0]
    first_rows[0] = 0
    n_distinct = 1
    for start in range(0, n_rows, _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, n_rows)
        # The usual block holds only the first two objects ("tcm" and "lm"): a count of
        # the other rows, without branches (the loop vectorizes).
        others = 0
        block = addresses[start:stop]  # indices from 0: contiguous reads (see moment_sums)
        for row in range(stop - start):
            address = block[row]
            others += (address != first) & (address != second)
        if others == 0:
            continue
        for row in range(start, stop):
            address = addresses[row]
            known = False
            for index in range(n_distinct):
                known = known or table[index] == address
            if not known:
                if n_distinct == table.shape[0]:
                    return -1
                table[n_distinct] = address
                first_rows[n_distinct] = row
                n_distinct += 1
        second = table[1]
    return n_distinct


@numba.njit(**_OPTIONS)
def tcm_lm_strings(offsets, data, is_tcm):
    """``is_tcm[i]``: whether Arrow string ``i`` is ``"tcm"``, if every string is "tcm"/"lm".

    An Arrow string array stores its strings' UTF-8 bytes end to end in ``data``; string
    ``i`` is ``data[offsets[i]:offsets[i + 1]]``. Three passes:

    1. each string's length test (3 bytes: ``"tcm"`` if the column is valid), a
       contiguous loop over the offsets that vectorizes;
    2. each string has 2 or 3 bytes and starts with ``t`` (3 bytes) or ``l`` (2): one
       byte read per string, without branches;
    3. the strings' bytes, ``data[offsets[0]:offsets[n]]``, read as one run: each byte
       and the next are one of the pairs ``tc``, ``cm``, ``lm``, ``mt``, ``ml`` (a
       contiguous loop over bytes that vectorizes).

    Together these say that every string is ``"tcm"`` or ``"lm"``: a 3-byte string
    starting with ``t`` is ``tcm`` (``t`` is followed by ``c``, ``c`` by ``m``), a
    2-byte string starting with ``l`` is ``lm``. (Checking the three bytes of each
    string in pass 2 took 1.6x as long: three reads per string at addresses from the
    offsets, against one, and one contiguous pass over the bytes.)

    Parameters
    ----------
    offsets : ndarray of int32 or int64 of shape (n_rows + 1,)
    data : ndarray of uint8 of at least 2 bytes
    is_tcm : ndarray of bool of shape (n_rows,)
        Written in place (meaningful only when the result is True).

    Returns
    -------
    valid : bool
        Whether every string is ``"tcm"`` or ``"lm"``.
    """
    n_rows = is_tcm.shape[0]
    for row in range(n_rows):
        is_tcm[row] = offsets[row + 1] - offsets[row] == 3
    others = 0
    for row in range(n_rows):
        start = offsets[row]
        length = offsets[row + 1] - start
        three = length == 3
        two = length == 2
        base = start if two | three else 0  # a string of another length reads byte 0
        first = data[base]
        others += not ((three & (first == 116)) | (two & (first == 108)))  # b"t", b"l"
    if others:
        return False
    run = data[offsets[0]:offsets[n_rows]] if n_rows else data[:0]
    valid = True
    for index in range(run.shape[0] - 1):
        this, after = run[index], run[index + 1]
        valid &= (((this == 116) & (after == 99)) | ((this == 99) & (after == 109))
                  | ((this == 108) & (after == 109))
                  | ((this == 109) & ((after == 116) | (after == 108))))
    return valid


#: Fibonacci hashing's multiplier (2**64 / the golden ratio, odd): a key's bits times it,
#: shifted right, spread nearby keys over the whole table.
_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(inline="always", **_OPTIONS)
def _slot_of(bits, shift):
    return (bits * _FIBONACCI) >> shift


@numba.njit(inline="always", **_OPTIONS)
def _table_shift(capacity):
    """The shift of :func:`_slot_of` for a table of ``capacity`` (a power of two) slots."""
    return np.uint64(64) - np.uint64(np.log2(capacity) + 0.5)


@numba.njit(inline="always", **_OPTIONS)
def _probe(table, index, key, shift, mask):
    """The slot holding ``key``, else the first free slot of its probe sequence."""
    slot = _slot_of(key, shift)
    while index[slot] >= 0 and table[slot] != key:
        slot = (slot + np.uint64(1)) & mask
    return slot


#: Tables of up to this many slots (4 MiB with their groups) are kept at most an eighth
#: full, larger ones at most half: nearly every key is then found at its first slot, so
#: the probing loop's branch is predicted. Measured at 1e7 keys: grouping and looking up
#: 100 to 1,000 levels 2.2x faster, 10,000 levels 1.4x, 100,000 levels 1.3x.
_SPARSE_SLOTS = 2**18


@numba.njit(inline="always", **_OPTIONS)
def _table_limit(capacity):
    """The most groups a table of ``capacity`` slots holds (see ``_SPARSE_SLOTS``)."""
    return capacity // 8 if capacity <= _SPARSE_SLOTS else capacity // 2


@numba.njit(**_OPTIONS)
def _group_rows(bits, start, stop, table, index, distinct, counts, n_distinct, labels,
                offset):
    """Group ``bits[start:stop]`` until the table would be fuller than its limit
    (:func:`_table_limit`).

    Each row's key is found in (or added to) the table, its group's count goes up by
    one and its group is written to ``labels[row - offset]``. Returns the row reached
    and the number of groups. (No array is reassigned in this loop: numba then keeps
    the arrays' pointers in registers.)
    """
    shift = _table_shift(table.shape[0])
    mask = np.uint64(table.shape[0] - 1)
    limit = _table_limit(table.shape[0])
    for row in range(start, stop):
        key = bits[row]
        slot = _probe(table, index, key, shift, mask)
        found = index[slot]
        if found < 0:
            if n_distinct == limit:
                return row, n_distinct
            table[slot] = key
            index[slot] = n_distinct
            distinct[n_distinct] = key
            found = n_distinct
            n_distinct += 1
        counts[found] += 1
        labels[row - offset] = found
    return stop, n_distinct


#: Rows grouped at a time by :func:`hash_groups` before their codes are added: the
#: block's labels stay in cache, and no n-long label array is needed.
_GROUP_BLOCK = 2**14


@numba.njit(**_OPTIONS)
def hash_groups(bits, labels, columns, lower, upper, scale, with_sums, non_finite=None):
    """Each key's group among the distinct keys (in order of first appearance), by hashing.

    One pass over the keys, each looked up in an open-addressing table (Fibonacci
    hashing, linear probing, at most an eighth or half full, :func:`_table_limit`:
    doubled and refilled when it would be fuller): the grouping pandas' ``factorize``
    does, without sorting the keys. Block by block, the rows' fixed-point codes can
    then be added to their group's exact sums (:func:`fixed_point_code`, in int64)
    while the block's groups are in cache.

    Parameters
    ----------
    bits : ndarray of uint64 of shape (n,)
        The keys' bit patterns (float64 keys viewed as uint64: equal floats have equal
        bits but for 0.0 and -0.0 and NaNs, which the callers never pass).
    labels : ndarray of int32 of shape (n,) or None
        Written in place: each row's group (None: not kept).
    columns : ndarray of float64 of shape (n_features, n)
        The rows' values (feature-major, any strides); read only ``with_sums``.
    lower, upper, scale : ndarray of float64 of shape (n_features,)
    with_sums : bool
    non_finite : ndarray of int64 of shape (1,) or None
        With ``with_sums``, unless None: ``non_finite[0] +=`` the number of NaN or
        infinite values (see :func:`fixed_point_code_sums`).

    Returns
    -------
    table, index : ndarray of uint64 and int64 of shape (capacity,)
        The hash table (for :func:`hash_lookup`): a slot's key and its group (-1: empty).
    distinct : ndarray of uint64 of shape (n_groups,)
        The groups' keys, in order of first appearance.
    counts : ndarray of int64 of shape (n_groups,)
    sums : ndarray of int64 of shape (n_groups, n_features)
        Each group's exact sums of codes (zeros without ``with_sums``).
    """
    n_rows = bits.shape[0]
    n_features = columns.shape[0] if with_sums else 0
    capacity = 16
    table = np.empty(capacity, dtype=np.uint64)
    index = np.full(capacity, -1, dtype=np.int64)
    distinct = np.empty(capacity // 2, dtype=np.uint64)
    counts = np.zeros(capacity // 2, dtype=np.int64)
    sums = np.zeros((capacity // 2, n_features), dtype=np.int64)
    block = np.empty(_GROUP_BLOCK if labels is None else 0, dtype=np.int32)
    n_distinct = 0
    for start in range(0, n_rows, _GROUP_BLOCK):
        stop = min(start + _GROUP_BLOCK, n_rows)
        row = start
        while True:
            if labels is None:
                row, n_distinct = _group_rows(bits, row, stop, table, index, distinct, counts,
                                              n_distinct, block, start)
            else:
                row, n_distinct = _group_rows(bits, row, stop, table, index, distinct, counts,
                                              n_distinct, labels, 0)
            if row == stop:
                break
            # Double the table; the known keys keep their groups.
            capacity *= 2
            table = np.empty(capacity, dtype=np.uint64)
            index = np.full(capacity, -1, dtype=np.int64)
            shift = _table_shift(capacity)
            mask = np.uint64(capacity - 1)
            for known in range(n_distinct):  # distinct keys: each probe ends at a free slot
                slot = _probe(table, index, distinct[known], shift, mask)
                table[slot] = distinct[known]
                index[slot] = known
            grown_distinct = np.empty(capacity // 2, dtype=np.uint64)
            grown_distinct[:n_distinct] = distinct[:n_distinct]
            grown_counts = np.zeros(capacity // 2, dtype=np.int64)
            grown_counts[:n_distinct] = counts[:n_distinct]
            grown_sums = np.zeros((capacity // 2, n_features), dtype=np.int64)
            grown_sums[:n_distinct] = sums[:n_distinct]
            distinct, counts, sums = grown_distinct, grown_counts, grown_sums
        if with_sums:
            if labels is None:
                _add_block_codes(columns, start, stop, block, lower, upper, scale, sums,
                                 non_finite)
            else:
                _add_block_codes(columns, start, stop, labels[start:stop], lower, upper, scale,
                                 sums, non_finite)
    return (table, index, distinct[:n_distinct].copy(), counts[:n_distinct].copy(),
            sums[:n_distinct].copy())


@numba.njit(**_OPTIONS)
def _add_block_codes(columns, start, stop, block_labels, lower, upper, scale, sums,
                     non_finite):
    """``sums[block_labels[i - start], j] +=`` the code of ``columns[j, i]``, i in [start, stop)
    (and, unless ``non_finite`` is None, the count of NaN or infinite values added to it)."""
    for feature in range(columns.shape[0]):
        low, high, step = lower[feature], upper[feature], scale[feature]
        block = columns[feature, start:stop]  # indices from 0 (see moment_sums)
        if non_finite is not None:
            bad = np.int64(0)
            for row in range(stop - start):
                bad += _non_finite(block[row])
            non_finite[0] += bad
        for row in range(stop - start):
            sums[block_labels[row], feature] += np.int64(
                fixed_point_code(block[row], low, high, step))


@numba.njit(**_OPTIONS)
def gather_table(table, labels, out):
    """``out[i] = table[labels[i]]`` (labels within the table: the callers' groups)."""
    for row in range(labels.shape[0]):
        out[row] = table[labels[row]]


@numba.njit(**_OPTIONS)
def hash_lookup(bits, table, index, values, out):
    """``out[i] = values[group of bits[i]]``, by the table of :func:`hash_groups`.

    Returns False (``out`` incomplete) when a key is not in the table.
    """
    shift = _table_shift(table.shape[0])
    mask = np.uint64(table.shape[0] - 1)
    for row in range(bits.shape[0]):
        found = index[_probe(table, index, bits[row], shift, mask)]
        if found < 0:
            return False
        out[row] = values[found]
    return True
