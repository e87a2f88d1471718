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


