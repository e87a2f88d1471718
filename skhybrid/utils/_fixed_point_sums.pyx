"""Sums of clipped values that keep their sensitivity in floating point: the kernels.

A release is calibrated to a sensitivity: replacing one user's value moves the sum of
the clipped values by at most ``upper - lower`` per coordinate. In exact arithmetic it
does; in float64 it need not. With bounds far from zero relative to their width
(``(2**52, 2**52 + 1)``, ``(1e9, 1e9 + 1e-6)``), rounding in the sum moves it by more
than the width, and a sum computed by subtracting sums of unclipped values carries a
user's raw magnitude into the result. Both break the guarantee (found by audits).

Every sum that feeds a release is therefore computed here, in fixed point, in one pass
over the values (:func:`code_sums`, :func:`moment_sums`; called through
:mod:`skhybrid.utils._sums`):

1. each value is clipped to ``[lower, upper]`` and mapped to an integer code
   ``k = rint((x - lower) * 2**B / (upper - lower))`` (``B = FIXED_POINT_BITS``), the
   inline ``fixed_point_code`` of ``skhybrid/_fixed_point.pxd``. No code leaves
   ``[0, 2**B]``: for ``lower <= x <= upper`` rounding is monotone, so
   ``0 <= fl(x - lower) <= fl(upper - lower)``; the scale and the product each round by
   at most 2**-53 (relative), so the scaled value is at most ``2**B (1 + 2**-52)``,
   which ``rint`` brings back to ``2**B`` while ``2**B * 2**-52 < 1/2`` (B <= 50)
   (``rint`` is computed by adding 2**52, the same integer: see the .pxd).
   Infinities are clipped to the bounds and NaN to ``lower``: no NaN is ever converted
   to an integer, and a caller that asks for the count of non-finite values refuses
   the sums when it is positive;
2. the square code of a coded row, ``rint((k - 2**(B-1))**2 * 2**(2-B))``, is its
   squared distance to the midpoint on the grid of ``[0, ((upper - lower) / 2)**2]``
   in ``2**B`` steps: ``k`` is an integer in ``[0, 2**B]``, so ``k - 2**(B-1)`` is
   exact and at most ``2**(B-1)`` in magnitude, its square rounds monotonically to at
   most ``2**(2B-2)``, the product by a power of two is exact, and ``rint`` gives an
   integer in ``[0, 2**B]`` whatever the bounds;
3. the codes, integers of at most ``2**B``, are converted exactly to int64 and added in
   int64: integer additions are exact in any order, and the sums stay below 2**63 for
   the at most ``MAX_USERS = 2**(63 - B) - 1`` users of one sum
   (:func:`skhybrid.utils._sums.centred_sums` refuses more).

Replacing one user then moves an integer sum by at most ``2**B`` per coordinate,
exactly. The estimators release what they compute from these integers in the centred
domain (the sum of ``x - lower``, never of magnitude ``n * |lower|``) and add ``lower``
after the noise; the few float operations between the integers and the noise are
charged as :func:`skhybrid.utils._sums.rounding_slack`. Quantisation: a value is
represented to within ``(upper - lower) / 2**(B + 1)``, about 1e-10 of the range.

The float operations are the ones written here and in the .pxd, compiled without
contraction into fused multiply-adds and without fast-math (setup.py): the proof above
relies on each rounding. Only the lm users' already private reports are added in
float64 (:func:`moment_sums`), in a fixed order: per feature, blocks of 4096 rows, each
block's reports (0.0 for coded rows) in eight interleaved partial sums added in lane
order after the block's last ``n % 8`` rows, and the blocks' totals in row order.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from skhybrid._fixed_point cimport TWO_52, biased_code, integer_code, integer_of

cdef enum:
    # Bits of the fixed-point grid over [lower, upper] (one code step = range / 2**32);
    # at most 50, so that codes never round past the grid.
    BITS = 32
    # Rows per block of moment_sums: a block's lm reports are buffered, then summed.
    BLOCK_ROWS = 4096

FIXED_POINT_BITS = BITS
# The middle of the codes' grid, and the factor that puts a squared centred code on a
# grid of 2**B steps.
cdef double HALF_GRID = 2.0 ** (BITS - 1)
cdef double SQUARE_STEP = 2.0 ** (2 - BITS)

ctypedef fused label_t:
    uint8_t
    int32_t
    int64_t


cdef inline int64_t is_non_finite(double value) noexcept nogil:
    # 1 for NaN or an infinity (every exponent bit set), else 0: integer operations on
    # the bits, which vectorize where a float comparison's count did not.
    cdef uint64_t bits
    memcpy(&bits, &value, sizeof(double))
    return <int64_t>((((bits >> 52) & 0x7FF) + 1) >> 11)


def code_sums(const double[:, ::1] columns, const double[::1] lower,
              const double[::1] upper, const double[::1] scale, const label_t[::1] labels,
              bint labelled, int64_t[:, ::1] sums, int64_t[::1] non_finite):
    """``sums[g, j] +=`` the codes of feature ``j`` of the rows labelled ``g``, exactly.

    Parameters
    ----------
    columns : ndarray of float64 of shape (n_features, n_rows)
        The values, feature-major and C-contiguous.
    lower, upper, scale : ndarray of float64 of shape (n_features,)
    labels : ndarray of uint8, int32 or int64 of shape (n_rows,)
        Each row's group, read when ``labelled``; rows labelled outside
        ``[0, n_groups)`` are left out.
    labelled : bool
        False puts every row in group 0.
    sums : ndarray of int64 of shape (n_groups, n_features)
        Added to in place.
    non_finite : ndarray of int64 of shape (1,) or None
        Unless None, ``non_finite[0] +=`` the number of NaN or infinite values of every
        row (labelled out or not); a caller that counts any must discard the sums.
    """
    cdef Py_ssize_t n_features = columns.shape[0], n_rows = columns.shape[1]
    cdef Py_ssize_t n_groups = sums.shape[0], feature, row, group
    cdef double low, high, step, value
    cdef int64_t code, first, second, bad = 0
    with nogil:
        for feature in range(n_features):
            low, high, step = lower[feature], upper[feature], scale[feature]
            first = second = 0
            # Non-finite values are counted whether asked or not: a count that vectorizes
            # costs less than a branch in the loop.
            if not labelled:
                for row in range(n_rows):
                    value = columns[feature, row]
                    bad += is_non_finite(value)
                    first += integer_code(value, low, high, step)
            elif n_groups <= 2:
                # The common case (kept or dropped): each row's code or 0 in each group's
                # total, by an all-ones or zero mask (a branch is unpredictable, and a
                # selection of int64 by a narrower label vectorizes poorly).
                for row in range(n_rows):
                    value = columns[feature, row]
                    bad += is_non_finite(value)
                    code = integer_code(value, low, high, step)
                    first += code & -<int64_t>(labels[row] == 0)
                    second += code & -<int64_t>(labels[row] == 1)
            else:
                for row in range(n_rows):
                    value = columns[feature, row]
                    bad += is_non_finite(value)
                    group = labels[row]
                    if 0 <= group < n_groups:
                        sums[group, feature] += integer_code(value, low, high, step)
            if not labelled or n_groups <= 2:
                sums[0, feature] += first
                if n_groups == 2:
                    sums[1, feature] += second
    if non_finite is not None:
        non_finite[0] += bad


cdef inline double zero_where(int64_t mask, double value) noexcept nogil:
    # 0.0 where the mask is all ones, else ``value`` bit for bit: integer operations,
    # which vectorize where a selection of floats by a narrower mask did not.
    cdef int64_t bits
    memcpy(&bits, &value, sizeof(double))
    bits &= ~mask
    memcpy(&value, &bits, sizeof(double))
    return value


cdef struct Totals:
    int64_t codes, squares, non_finite
    double others, other_squares


cdef inline double lane_sum(const double *buffer, Py_ssize_t length) noexcept nogil:
    # Eight interleaved partial sums (they vectorize), the rows past them, then the lanes.
    cdef double lanes[8]
    cdef double total = 0.0
    cdef Py_ssize_t row = 0, lane
    for lane in range(8):
        lanes[lane] = 0.0
    while row + 8 <= length:
        for lane in range(8):
            lanes[lane] += buffer[row + lane]
        row += 8
    while row < length:
        total += buffer[row]
        row += 1
    for lane in range(8):
        total += lanes[lane]
    return total


cdef inline void moment_block(
    const double *values, const uint8_t *is_coded, Py_ssize_t n_rows, double low,
    double high, double step, double middle, double *other_buffer,
    double *other_square_buffer, Totals *totals, const bint masked, const bint squares,
    const bint others, const bint other_squares,
) noexcept nogil:
    # One block of one feature. Every caller passes the flags as constants: each
    # combination is then a loop of its own, without branches on them.
    cdef int64_t code_total = 0, square_total = 0, bad = 0, keep = -1
    # Local copies: the buffers' stores cannot alias them, so the loop vectorizes.
    cdef double value, biased, distance, offset
    cdef double half_grid = HALF_GRID, square_step = SQUARE_STEP
    cdef Py_ssize_t row
    for row in range(n_rows):
        value = values[row]
        bad += is_non_finite(value)
        biased = biased_code(value, low, high, step)
        if masked:
            keep = -<int64_t>is_coded[row]  # all ones or zero (numpy's booleans are 0 or 1)
        code_total += integer_of(biased) & keep
        if squares:
            # The square code, rint(distance**2 * 2**(2-B)), as the code: by adding 2**52.
            distance = (biased - TWO_52) - half_grid
            square_total += integer_of(distance * distance * square_step + TWO_52) & keep
        if others:
            other_buffer[row] = zero_where(keep, value)
            if other_squares:
                offset = value - middle
                other_square_buffer[row] = zero_where(keep, offset * offset)
    totals.codes += code_total
    totals.squares += square_total
    totals.non_finite += bad
    if others:
        totals.others += lane_sum(other_buffer, n_rows)
        if other_squares:
            totals.other_squares += lane_sum(other_square_buffer, n_rows)


cdef void moment_feature(
    const double *values, const uint8_t *is_coded, Py_ssize_t n_rows, double low,
    double high, double step, double middle, double *buffers, Totals *totals,
    bint squares, bint others, bint other_squares,
) noexcept nogil:
    cdef double *square_buffer = buffers + BLOCK_ROWS
    if is_coded == NULL:
        if squares:
            moment_block(values, NULL, n_rows, low, high, step, middle, buffers,
                         square_buffer, totals, False, True, False, False)
        else:
            moment_block(values, NULL, n_rows, low, high, step, middle, buffers,
                         square_buffer, totals, False, False, False, False)
    elif not others:
        if squares:
            moment_block(values, is_coded, n_rows, low, high, step, middle, buffers,
                         square_buffer, totals, True, True, False, False)
        else:
            moment_block(values, is_coded, n_rows, low, high, step, middle, buffers,
                         square_buffer, totals, True, False, False, False)
    elif not other_squares:
        if squares:
            moment_block(values, is_coded, n_rows, low, high, step, middle, buffers,
                         square_buffer, totals, True, True, True, False)
        else:
            moment_block(values, is_coded, n_rows, low, high, step, middle, buffers,
                         square_buffer, totals, True, False, True, False)
    elif squares:
        moment_block(values, is_coded, n_rows, low, high, step, middle, buffers,
                     square_buffer, totals, True, True, True, True)
    else:
        moment_block(values, is_coded, n_rows, low, high, step, middle, buffers,
                     square_buffer, totals, True, False, True, True)


def moment_sums(const double[:, ::1] columns, const double[::1] lower,
                const double[::1] upper, const double[::1] scale, const double[::1] centre,
                const uint8_t[::1] is_coded, int64_t[::1] code_sums,
                int64_t[::1] square_code_sums, double[::1] float_sums,
                double[::1] float_square_sums, int64_t[::1] non_finite):
    """The hybrid mean's sums of one chunk, in one pass over its values.

    The rows in ``is_coded`` (every row when it is None; the tcm users) add their
    clipped value's code to ``code_sums`` and, unless ``square_code_sums`` is None,
    their square code to ``square_code_sums``, both exactly. The other rows (lm users'
    reports, already private) add their value to ``float_sums`` and, unless
    ``float_square_sums`` is None, ``(x - centre)**2`` to ``float_square_sums``, in the
    order of the module docstring. No sum includes a row of the other kind.

    Parameters
    ----------
    columns : ndarray of float64 of shape (n_features, n_rows)
        The values, feature-major and C-contiguous.
    lower, upper, scale, centre : ndarray of float64 of shape (n_features,)
        ``centre`` is the midpoint, read for the other rows' squares only.
    is_coded : ndarray of uint8 of shape (n_rows,) or None
    code_sums, square_code_sums : ndarray of int64 of shape (n_features,)
        Added to in place (``square_code_sums`` may be None).
    float_sums, float_square_sums : ndarray of float64 of shape (n_features,) or None
        Added to in place; read only with ``is_coded`` (else there are no other rows).
    non_finite : ndarray of int64 of shape (1,) or None
        Unless None, ``non_finite[0] +=`` the number of NaN or infinite values (of every
        row, coded or not); a caller that counts any must discard every sum.
    """
    cdef Py_ssize_t n_features = columns.shape[0], n_rows = columns.shape[1]
    cdef Py_ssize_t feature, start, length
    cdef bint squares = square_code_sums is not None
    cdef bint others = float_sums is not None and is_coded is not None
    cdef bint other_squares = others and float_square_sums is not None
    cdef const uint8_t *mask = NULL
    cdef const uint8_t *block_mask
    cdef double *buffers = NULL
    cdef Totals totals
    cdef int64_t bad = 0
    if n_rows == 0:
        return
    if is_coded is not None:
        mask = &is_coded[0]
    if others:
        buffers = <double *>malloc(2 * BLOCK_ROWS * sizeof(double))
        if buffers == NULL:
            raise MemoryError
    with nogil:
        for feature in range(n_features):
            totals = Totals(0, 0, 0, 0.0, 0.0)
            start = 0
            while start < n_rows:
                length = min(<Py_ssize_t>BLOCK_ROWS, n_rows - start)
                block_mask = NULL
                if mask != NULL:
                    block_mask = mask + start
                moment_feature(&columns[feature, start], block_mask, length,
                               lower[feature], upper[feature], scale[feature],
                               centre[feature], buffers, &totals, squares, others,
                               other_squares)
                start += length
            code_sums[feature] += totals.codes
            if squares:
                square_code_sums[feature] += totals.squares
            if others:
                float_sums[feature] += totals.others
                if other_squares:
                    float_square_sums[feature] += totals.other_squares
            bad += totals.non_finite
    free(buffers)
    if non_finite is not None:
        non_finite[0] += bad
