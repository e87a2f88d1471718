"""Compiled loops (numba) for the passes numpy cannot fuse.

In numpy, every step of a statistic is a pass over memory: fixed-point codes take four
(clip, shift, scale, round) and grouped sums several more (masks, one-hot matrices,
bincounts); Lloyd's assignment step takes a pass per centre for the running minimum.
Here each is one compiled pass that reads every value once: the nearest centre and its sums in
:func:`nearest_centre_sums` (scikit-learn's Lloyd iterations do the same in Cython),
with, for local users, their randomized response and their report's sum by reported
cluster.

Every kernel is compiled on its first call for the argument types it gets, with
``nogil`` (threads, ours and Dask's, run them in parallel) and ``cache`` (the machine
code is stored beside this file, or in the user's cache when that is read-only, and
reloaded by later processes). They take arrays of matching shapes from the callers in
:mod:`skhybrid.cluster._kmeans`: bounds are not
checked, and a label outside ``[0, n_groups)`` is skipped, never written.

The fixed-point kernels take values feature-major (``values.T``, no copy): each
feature's values are then contiguous for one feature or a Fortran-ordered input, and
the loops over them vectorize.

Exactness: a code is computed by exactly the float operations of the proof in
:mod:`skhybrid.utils._fixed_point_sums` (no contraction into fused multiply-adds: the product's
operand is a difference, not a sum); it is an integer of at most
``2**FIXED_POINT_BITS``, converted exactly to int64, and codes are added in int64:
integer additions are exact in any order, so these loops vectorize without fast-math
(int64 sums stay below 2**63 for the at most ``MAX_USERS`` users of one sum). Only the
lm users' already private reports are added in float64, in an order the compiler may
change (:func:`_reported_sums`) or in row order
(:func:`nearest_centre_sums`).
Labels compare distances with ``<`` only, so the first minimum is kept on ties, as
``argmin`` does; the distances' products and sums may be fused
(:func:`_column_distances`, :func:`_row_products`), which no code or sum depends on.
"""

import numba
import numpy as np

# numba's cache of a kernel is keyed on this file's source: a change to the functions of
# _compiled_tasks that lloyd_tasks inlines must come with a change here.
from ._compiled_tasks import (JOB_POSTED, MADE_SOURCE, current_pass, finish_task, next_pass,
                              publish, take_job, take_task, wait_until_above)
from ._responses import respond

#: numba's options: release the GIL, cache the machine code, no bounds checks (the
#: callers pass arrays of matching shapes).
_OPTIONS = {"nogil": True, "cache": True, "boundscheck": False}
#: Rows per block of the feature-by-feature loops: a block of a row-major input stays in
#: cache while each feature's column of it is read in turn.
_BLOCK_ROWS = 4096


@numba.njit(inline="always", **_OPTIONS)
def fixed_point_code(value, lower, upper, scale):
    """A value's integer code on the grid of ``[lower, upper]``, as a float: the
    operations of ``skhybrid/_fixed_point.pxd`` (its proof:
    :mod:`skhybrid.utils._fixed_point_sums`)."""
    value = lower if value < lower else value
    value = upper if value > upper else value
    return np.rint((value - lower) * scale)


@numba.njit(inline="always", **_OPTIONS)
def _non_finite(value):
    """1 for NaN (every comparison is False) or an infinity, else 0: a count that
    vectorizes, for the callers' finiteness checks made in their own passes."""
    return 0 if abs(value) < np.inf else 1


# numba's cache of the kernels that inline it is keyed on this file's source: a change to
# ``respond`` must come with a change here (the tests compare both paths' reports).
_respond = numba.njit(inline="always", **_OPTIONS)(respond)


#: Rows of a block of :func:`nearest_centre_sums`: the block, its distances and codes
#: stay in the first levels of cache (scikit-learn's Lloyd iterations use 256 too;
#: measured: 512 rows are 10-25% slower at 10 to 50 features).
_LLOYD_ROWS = 256
#: Up to this many features, a block's distances are computed by compiled loops over the
#: block transposed (:func:`_column_distances`), above by BLAS. A product of 256 rows by
#: a few centres is mostly BLAS's packing: measured per block, for 10 features and 3
#: centres 1.54 us by BLAS, 0.58 us by the loops; for 5 features and 100 centres a whole
#: pass 2.6x quicker; at 30 features both are even and at 50 BLAS is 1.3x quicker.
_COLUMN_FEATURES = 24
#: Above ``_COLUMN_FEATURES``, a block's distances are computed row by row
#: (:func:`_row_products`) where the features are at least this many times the centres
#: (measured: quicker up to 3 centres at 30 features and 6 at 50; even at 4 and 8).
_ROW_FEATURES_PER_CENTRE = 8
#: A transposed block's row stride: not a multiple of 4 KiB, so that its columns do not
#: compete for the same sets of the cache.
_COLUMN_STRIDE = _LLOYD_ROWS + 8
#: Rows of a span of :func:`nearest_centre_sums` (whole blocks): the local rows of a span
#: respond and add their reports together, after the span's labels. Each of their
#: streams (the trust mask, the draws, the reports) is then read in runs of a span, not
#: of a block: measured at 1e6 x 10 with 95% local rows, a pass 10-15% quicker than
#: block by block, the same from 2048 to 8192 rows and slower from 16384.
_SPAN_ROWS = 16 * _LLOYD_ROWS
#: The local users' reports are summed group by group (:func:`_reported_sums`) for
#: at most this many features, where the groups times (the features + 1) are at most
#: ``_GROUPED_SUMS`` (measured, still quicker: 8 groups of 1 feature, 6 of 2, 5 of 3;
#: not 8 of 2 nor 8 of 3).
_GROUPED_FEATURES = 3
_GROUPED_SUMS = 20
#: The transposed block's distances are float32 (where exact enough, see
#: :func:`narrow_tolerance`) from this many products per row (centres x features):
#: they halve the products' time but add a pass per block. Measured per hybrid pass at
#: 1e6 rows: 5% quicker at 10 x 10 and 3% at 6 x 10; even at 3 x 20; 5% slower at
#: 10 x 2.
_NARROW_COLUMN_PRODUCTS = 64
#: Up to this many features, the transposed block's distances (float64) are compared
#: as they are computed (:func:`_fused_nearest_columns`). Measured on one thread, 1e5
#: rows, labels alone (then a hybrid pass, 5% tcm): 1 feature, k=3, 114 to 68 us (233
#: to 204), k=10, 241 to 130 us (456 to 336); 2 features, k=3, 143 to 104 us (327 to
#: 263), k=10, 278 to 165 us (586 to 401); 3 features, k=3, 199 to 142 us (384 to
#: 326), k=10, 447 to 276 us (727 to 531).
_FUSED_FEATURES = 3


@numba.njit(inline="always", **_OPTIONS)
def _repeated(constants, n_rows):
    """``constants`` (one per feature) repeated for ``n_rows`` rows, flat."""
    n_features = constants.shape[0]
    repeated = np.empty(n_rows * n_features)
    for row in range(n_rows):
        for feature in range(n_features):
            repeated[row * n_features + feature] = constants[feature]
    return repeated


@numba.njit(inline="always", **_OPTIONS)
def _clip_shift(block, lowers, uppers, origins, shifted):
    """``shifted = clip(block) - origins``, in one flat, vectorized loop over a block (the
    constants repeated along it)."""
    for index in range(block.shape[0]):
        low, high = lowers[index], uppers[index]
        value = block[index]
        value = low if value < low else value
        value = high if value > high else value
        shifted[index] = value - origins[index]


@numba.njit(inline="always", **_OPTIONS)
def _clip_shift_alike(block, low, high, origin, shifted):
    """:func:`_clip_shift` with the same constants for every feature: the same float
    operations on each value, reading no arrays of constants."""
    for index in range(block.shape[0]):
        value = block[index]
        value = low if value < low else value
        value = high if value > high else value
        shifted[index] = value - origin


@numba.njit(inline="always", **_OPTIONS)
def _clip_shift_columns(block, n_block, lower, upper, origin, columns, shifted):
    """``shifted[f, :n_block] = clip(block[:, f]) - origin[f]``: the block (flat, row
    major) transposed into ``columns``, then clipped and shifted column by column into
    ``shifted`` (``columns`` itself, or float32 columns: each value rounded once, after
    the same float64 operations as :func:`_clip_shift`).

    Two passes: a plain copy's strided loads, then contiguous loops that vectorize;
    measured 35% faster than clipping on the strided loads (which compile to gathers).
    """
    n_features = columns.shape[0]
    for feature in range(n_features):
        column = columns[feature]
        for row in range(n_block):
            column[row] = block[row * n_features + feature]
    for feature in range(n_features):
        low, high, shift = lower[feature], upper[feature], origin[feature]
        column, out = columns[feature], shifted[feature]
        for row in range(n_block):
            value = column[row]
            value = low if value < low else value
            value = high if value > high else value
            out[row] = value - shift


@numba.njit(inline="always", **_OPTIONS)
def _block_codes(block, lowers, uppers, scales, codes):
    """Each value's :func:`fixed_point_code` in int64, in one flat loop over a block (the
    constants repeated along it)."""
    for index in range(block.shape[0]):
        codes[index] = np.int64(fixed_point_code(block[index], lowers[index], uppers[index],
                                                 scales[index]))


@numba.njit(inline="always", **_OPTIONS)
def _block_codes_alike(block, low, high, scale, codes):
    """:func:`_block_codes` with the same constants for every feature."""
    for index in range(block.shape[0]):
        codes[index] = np.int64(fixed_point_code(block[index], low, high, scale))


@numba.njit(fastmath={"contract"}, **_OPTIONS)
def _column_distances(columns, n_block, scaled_centres, distances):
    """``distances[c, :n_block] = columns[:, :n_block].T @ scaled_centres[:, c]``.

    Loops over the rows of a transposed block, which vectorize: two centres at a time
    (each column read once per pair), four features at a time (each distance loaded and
    stored once per four features). The sum's order differs from BLAS's (as BLAS's own
    differs between machines), and its products and sums may be fused (``contract``:
    the only fast-math flag, on this function alone, not inlined at numba's level so
    that no code is compiled with it); the labels compare these distances only.
    """
    n_features = columns.shape[0]
    n_clusters = scaled_centres.shape[1]
    for centre in range(0, n_clusters - 1, 2):
        first, second = distances[centre], distances[centre + 1]
        for row in range(n_block):
            first[row] = 0.0
            second[row] = 0.0
        feature = 0
        while feature + 4 <= n_features:
            x0, x1 = columns[feature], columns[feature + 1]
            x2, x3 = columns[feature + 2], columns[feature + 3]
            a0, a1 = scaled_centres[feature, centre], scaled_centres[feature + 1, centre]
            a2, a3 = scaled_centres[feature + 2, centre], scaled_centres[feature + 3, centre]
            b0, b1 = scaled_centres[feature, centre + 1], scaled_centres[feature + 1, centre + 1]
            b2 = scaled_centres[feature + 2, centre + 1]
            b3 = scaled_centres[feature + 3, centre + 1]
            for row in range(n_block):
                v0, v1, v2, v3 = x0[row], x1[row], x2[row], x3[row]
                first[row] += v0 * a0 + v1 * a1 + v2 * a2 + v3 * a3
                second[row] += v0 * b0 + v1 * b1 + v2 * b2 + v3 * b3
            feature += 4
        while feature < n_features:
            x0 = columns[feature]
            a0, b0 = scaled_centres[feature, centre], scaled_centres[feature, centre + 1]
            for row in range(n_block):
                first[row] += x0[row] * a0
                second[row] += x0[row] * b0
            feature += 1
    if n_clusters % 2:  # the last centre of an odd number, alone
        centre = n_clusters - 1
        first = distances[centre]
        for row in range(n_block):
            first[row] = 0.0
        feature = 0
        while feature + 4 <= n_features:
            x0, x1 = columns[feature], columns[feature + 1]
            x2, x3 = columns[feature + 2], columns[feature + 3]
            a0, a1 = scaled_centres[feature, centre], scaled_centres[feature + 1, centre]
            a2, a3 = scaled_centres[feature + 2, centre], scaled_centres[feature + 3, centre]
            for row in range(n_block):
                first[row] += x0[row] * a0 + x1[row] * a1 + x2[row] * a2 + x3[row] * a3
            feature += 4
        while feature < n_features:
            x0 = columns[feature]
            a0 = scaled_centres[feature, centre]
            for row in range(n_block):
                first[row] += x0[row] * a0
            feature += 1


@numba.njit(fastmath={"contract"}, **_OPTIONS)
def _fused_nearest_columns(columns, n_block, scaled_centres, norms, best, labels):
    """:func:`_column_distances` then :func:`_first_nearest_columns` in one loop over the
    rows per centre, for 1 to 3 features (``_FUSED_FEATURES``; each a literal in its
    loop): each row's distance to the centre is computed and compared with its best so
    far at once, not stored for a pass per centre (a row's distance written, read
    back, its best and label read and written per centre). The same distances
    (the products summed in feature order, ``contract`` as there: fused or not), the
    same first nearest centre on ties. At 2 features, two centres per loop: a row's
    best and label read and written once per pair.
    """
    n_features = columns.shape[0]
    n_clusters = scaled_centres.shape[1]
    x0 = columns[0]
    x1 = columns[1] if n_features > 1 else columns[0]
    x2 = columns[2] if n_features > 2 else columns[0]
    a0, a1, a2 = scaled_centres[0, 0], 0.0, 0.0
    if n_features > 1:
        a1 = scaled_centres[1, 0]
    if n_features > 2:
        a2 = scaled_centres[2, 0]
    norm = norms[0]
    if n_features == 1:
        for row in range(n_block):
            best[row] = x0[row] * a0 + norm
            labels[row] = 0
    elif n_features == 2:
        for row in range(n_block):
            best[row] = (x0[row] * a0 + x1[row] * a1) + norm
            labels[row] = 0
    else:
        for row in range(n_block):
            best[row] = (x0[row] * a0 + x1[row] * a1 + x2[row] * a2) + norm
            labels[row] = 0
    centre = 1
    while n_features == 2 and centre + 2 <= n_clusters:  # two centres per loop
        a0, a1, norm = scaled_centres[0, centre], scaled_centres[1, centre], norms[centre]
        b0, b1 = scaled_centres[0, centre + 1], scaled_centres[1, centre + 1]
        other_norm = norms[centre + 1]
        for row in range(n_block):
            v0, v1 = x0[row], x1[row]
            value = (v0 * a0 + v1 * a1) + norm
            other = (v0 * b0 + v1 * b1) + other_norm
            nearest, label = best[row], labels[row]
            closer = value < nearest
            nearest = value if closer else nearest
            label = centre if closer else label
            closer = other < nearest
            best[row] = other if closer else nearest
            labels[row] = centre + 1 if closer else label
        centre += 2
    for centre in range(centre, n_clusters):
        a0, norm = scaled_centres[0, centre], norms[centre]
        if n_features > 1:
            a1 = scaled_centres[1, centre]
        if n_features > 2:
            a2 = scaled_centres[2, centre]
        if n_features == 1:
            for row in range(n_block):
                value = x0[row] * a0 + norm
                closer = value < best[row]
                best[row] = value if closer else best[row]
                labels[row] = centre if closer else labels[row]
        elif n_features == 2:
            for row in range(n_block):
                value = (x0[row] * a0 + x1[row] * a1) + norm
                closer = value < best[row]
                best[row] = value if closer else best[row]
                labels[row] = centre if closer else labels[row]
        else:
            for row in range(n_block):
                value = (x0[row] * a0 + x1[row] * a1 + x2[row] * a2) + norm
                closer = value < best[row]
                best[row] = value if closer else best[row]
                labels[row] = centre if closer else labels[row]


@numba.njit(inline="always", **_OPTIONS)
def _first_nearest_columns(distances, n_block, norms, best, labels, second=None):
    """``labels[:n_block] = argmin(distances[:, :n_block] + norms[:, None], axis=0)`` (the
    first on ties), centre by centre over the rows (a loop that vectorizes); with
    ``second``, each row's second smallest distance too (equal to the smallest on a
    tie)."""
    nearest, norm = distances[0], norms[0]
    for row in range(n_block):
        best[row] = nearest[row] + norm
        labels[row] = 0
        if second is not None:
            second[row] = np.inf
    for centre in range(1, distances.shape[0]):
        candidate, norm = distances[centre], norms[centre]
        for row in range(n_block):
            value = candidate[row] + norm
            closer = value < best[row]
            if second is not None:
                # The larger of the two is out of the lead: the runner-up if below it.
                runner = best[row] if closer else value
                second[row] = runner if runner < second[row] else second[row]
            best[row] = value if closer else best[row]
            labels[row] = centre if closer else labels[row]


@numba.njit(**_OPTIONS)
def narrow_tolerance(lower, upper, origin, scaled_centres, norms):
    """How far apart two float32 distances must be for their order to be exact; inf
    where float32 cannot be used.

    :func:`nearest_centre_sums` computes the distances
    ``D_c = ||c||^2 + sum_f x_f a_cf`` (``a = -2 c``, ``x`` a clipped row minus
    ``origin``) in float32, in half the time of float64: by one BLAS product above
    ``_COLUMN_FEATURES`` features, by the transposed loops from
    ``_NARROW_COLUMN_PRODUCTS`` products per row. With
    the unit roundoff ``u = 2**-24``: rounding ``x``, ``a`` and ``||c||^2`` to float32
    errs by at most ``u`` relative each, a dot product of ``d`` terms in any order
    (fused or not, as BLAS or the loops choose) by ``d u sum |x_f a_cf|`` to first
    order, and the
    final addition by ``u |D_c|``, so ``|D~_c - D_c| <= (d + 4) u B_c`` with
    ``B_c = ||c||^2 + sum_f R_f |a_cf|`` and ``R_f`` the largest ``|x_f|`` in the
    bounds. Where the second smallest float32 distance exceeds the smallest by more
    than twice that for the largest ``B_c``, the smallest is the exact nearest centre;
    the tolerance doubles it again for the higher-order terms:
    ``4 (d + 4) u max_c B_c``. Other rows are searched again in float64.

    Float32 is used only where nothing overflows or underflows past that bound:
    ``2**-60 <= max_c B_c <= 2**100``, every ``R_f`` and ``|a_cf|`` at most ``2**60``
    (infinite bounds: inf, never).
    """
    n_features, n_clusters = scaled_centres.shape
    reach = np.empty(n_features)
    largest = 0.0
    for feature in range(n_features):
        reach[feature] = max(abs(lower[feature] - origin[feature]),
                             abs(upper[feature] - origin[feature]))
        largest = max(largest, reach[feature])
    magnitude = 0.0
    for centre in range(n_clusters):
        bound = norms[centre]
        for feature in range(n_features):
            coefficient = abs(scaled_centres[feature, centre])
            largest = max(largest, coefficient)
            bound += reach[feature] * coefficient
        magnitude = max(magnitude, bound)
    # Written so that NaN (infinite bounds) fails the test.
    if not (2.0**-60 <= magnitude <= 2.0**100 and largest <= 2.0**60):
        return np.inf
    return 4.0 * (n_features + 4) * 2.0**-24 * magnitude


@numba.njit(fastmath={"reassoc", "contract"}, **_OPTIONS)
def _row_products(block, n_block, lower, upper, origin, centre_rows, alike, row, products):
    """``products[c, i] = (clip(x_i) - origin) . (-2 c)`` for the block's rows, row by
    row: each row clipped and shifted once (into ``row``, of ``n_features`` values),
    then its products with each centre summed in a loop over the features that
    vectorizes (``reassoc``: in lanes; ``contract``: fused multiply-adds).
    ``alike``: every feature has the first one's bounds and origin (read once, not per
    feature: 20% quicker). The caller takes the nearest centres and the runners-up
    (:func:`_first_nearest_columns`; the two tracked here made the loop twice as
    slow); summed in another order than :func:`_search_close_rows`' (the other
    searches' float64 distances), a row whose two nearest centres are closer than the
    sums' error bound is searched again by it, so that every search gives the same
    labels, ties to the first centre included.

    For many features and few centres (``_ROW_FEATURES_PER_CENTRE``), where BLAS's
    product of a block by a few centres is mostly its packing. Measured per pass of
    1e5 rows on one thread, against the block's float32 product by BLAS: at 50
    features 1.44/1.71/2.53/3.58 ms for 2/3/5/8 centres against 3.19/3.59/3.62/3.68;
    at 30 features 1.11/1.47/1.78/2.12 ms for 2/3/4/5 against 1.82/1.99/1.83/1.99.
    """
    n_features, n_clusters = centre_rows.shape[1], centre_rows.shape[0]
    low, high, shift = lower[0], upper[0], origin[0]
    for index in range(n_block):
        values = block[index * n_features:(index + 1) * n_features]
        if alike:
            for feature in range(n_features):
                value = values[feature]
                value = low if value < low else value
                value = high if value > high else value
                row[feature] = value - shift
        else:
            for feature in range(n_features):
                value = values[feature]
                value = lower[feature] if value < lower[feature] else value
                value = upper[feature] if value > upper[feature] else value
                row[feature] = value - origin[feature]
        for centre in range(n_clusters):
            total = 0.0
            for feature in range(n_features):
                total += row[feature] * centre_rows[centre, feature]
            products[centre, index] = total


@numba.njit(inline="always", **_OPTIONS)
def _search_close_rows(block, n_block, lower, upper, origin, centre_rows, norms, best, second,
                       tolerance, labels):
    """Each row whose two smallest float32 distances (or float64 ones summed in any
    order, :func:`_row_products`) are within ``tolerance`` (:func:`narrow_tolerance`;
    NaN included) gets its label from float64 distances summed in feature order:
    ``||c||^2 + (clip(x) - origin) . (-2 c)``, the first smallest."""
    n_features = centre_rows.shape[1]
    for row in range(n_block):
        # Exact: the difference of two float32 numbers is a float64 one.
        if np.float64(second[row]) - np.float64(best[row]) > tolerance:
            continue
        nearest, label = np.inf, 0
        for centre in range(centre_rows.shape[0]):
            total = 0.0
            for feature in range(n_features):
                value = block[row * n_features + feature]
                value = lower[feature] if value < lower[feature] else value
                value = upper[feature] if value > upper[feature] else value
                total += (value - origin[feature]) * centre_rows[centre, feature]
            total += norms[centre]
            if total < nearest:
                nearest, label = total, centre
        labels[row] = label


@numba.njit(inline="always", **_OPTIONS)
def _add_row(flat_totals, group, flat_rows, row, n_features):
    """``totals[group] += rows[row]``, given the flat views of the C-contiguous
    ``totals`` and ``rows`` (of ``n_features`` columns).

    By unsigned indices: numba then has no wrap-around of negative indices to test
    (a signed index read from an array could be negative), and the loop of a row's
    adds was 18% quicker at 10 features, 12% at 50 (the same adds in the same order).
    """
    width = np.uint64(n_features)
    target = np.uint64(group) * width
    source = np.uint64(row) * width
    for feature in range(n_features):
        offset = np.uint64(feature)
        flat_totals[target + offset] += flat_rows[source + offset]


@numba.njit(**_OPTIONS)
def nearest_centre_sums(X, start, stop, origin, scaled_centres, norms, lower, upper, scale,
                        labels, counts, sums, is_local=None, level=None, widths=None,
                        draws=None, reports=None, local_counts=None, local_sums=None):
    """Each row's nearest centre; the central rows' codes and the local rows' responses.

    For the rows ``start:stop`` of ``X``, block by block: the block, clipped to
    ``[lower, upper]`` (infinite bounds leave it as it is), minus ``origin``
    times ``scaled_centres`` plus ``norms`` gives each row's
    ``||c||^2 - 2 (x - origin) . c`` for every centre ``c`` (in the coordinates of
    ``x - origin``): by compiled loops over the block transposed for up to
    ``_COLUMN_FEATURES`` features (:func:`_column_distances`), else row by row for
    few centres (:func:`_row_products`) or by one matrix product (BLAS); the first
    smallest is the row's label (ties to the first centre, as ``argmin``). The
    distances (but row by row) are float32 where that is exact enough
    (:func:`narrow_tolerance`; rows too close to call are searched again in float64),
    so the labels are float64's. Then, while the block is in cache (with ``reports``:
    for the ``_SPAN_ROWS`` rows of a span of blocks, after their labels):

    - a central row (unless ``sums`` is None) is counted in its label's ``counts`` and
      its :func:`fixed_point_code` of every feature is added to its label's sums in
      int64, exactly;
    - a local row (only with ``reports``) sends its label through k-ary randomized
      response (:func:`~skhybrid.utils._responses.respond`, from the draws of
      :func:`~skhybrid.mechanisms._randomized_response.response_draws`), and
      its fixed report is added to the sums of its privacy
      level's reported cluster (``level * n_clusters + reported``), in float64: in
      row order, or for few groups of few features group by group
      (:func:`_reported_sums`; the reports are already private).

    Parameters
    ----------
    X : ndarray of float64 of shape (n_rows, n_features), C-contiguous
    start, stop : int
    origin : ndarray of float64 of shape (n_features,)
    scaled_centres : ndarray of float64 of shape (n_features, n_clusters), C-contiguous
        ``-2 * centres.T`` (centres relative to ``origin``).
    norms : ndarray of float64 of shape (n_clusters,)
        ``||c||^2`` of each (relative) centre.
    lower, upper, scale : ndarray of float64 of shape (n_features,)
        The clipping bounds and the fixed-point grid (``scale`` read only with ``sums``).
    labels : ndarray of intp of shape (n_rows,) or None
        Rows ``start:stop`` written in place (None: not kept).
    counts : ndarray of int64 of shape (n_clusters,)
        Added to in place (only with ``sums``).
    sums : ndarray of int64 of shape (n_clusters, n_features) or None
        The central rows' code sums, added to in place (None: no central rows).
    is_local : ndarray of bool of shape (n_rows,) or None
        Which rows are local (None: every row, with ``reports``; none without).
    level : ndarray of int of shape (n_local,) or None
        Each local user's privacy level (None: one level).
    widths : ndarray of float64 of shape (n_levels,)
        Each level's randomized-response width
        (:func:`~skhybrid.mechanisms._randomized_response.randomized_response_widths`).
    draws : ndarray of uint32 or uint16 of shape (n_task_local,) or None
        The draws of the local users of rows ``start:stop``, one each, in row order
        (None: one cluster, no draws).
    reports : ndarray of float32 of shape (n_local, n_features) or None
        The local users' fixed reports; the first local row of ``start:stop`` is
        ``reports[0]`` of this view (the caller slices it). Each is added to the sums
        in float64 (exactly converted).
    local_counts : ndarray of float64 of shape (n_levels * n_clusters,)
    local_sums : ndarray of float64 of shape (n_levels * n_clusters, n_features)
        Added to in place.
    """
    n_features = X.shape[1]
    n_clusters = scaled_centres.shape[1]
    size = _LLOYD_ROWS * n_features
    # Few features: the block transposed, and its distances by compiled loops (an
    # empty row-major block); else the block row-major, and its distances by BLAS.
    by_columns = n_features <= _COLUMN_FEATURES
    # Many features, few centres: the distances row by row, in float64 (no BLAS).
    by_rows = (not by_columns
               and n_clusters * _ROW_FEATURES_PER_CENTRE <= n_features)
    centre_rows = np.ascontiguousarray(scaled_centres.T)  # (n_clusters, n_features)
    # The distances in float32 where exact enough (rows too close to call are searched
    # again in float64): BLAS's float32 product takes half the time, and so do the
    # compiled loops' from _NARROW_COLUMN_PRODUCTS products per row.
    tolerance = np.inf
    if not by_columns or n_clusters * n_features >= _NARROW_COLUMN_PRODUCTS:
        tolerance = narrow_tolerance(lower, upper, origin, scaled_centres, norms)
    # Row by row, float64 distances summed in any order: their error bound is the
    # float32 one's with float64's unit roundoff (2**-53 for 2**-24), in the same range
    # (else by BLAS, in float64).
    by_rows = by_rows and tolerance < np.inf
    row_tolerance = tolerance * 2.0**-29
    if by_rows:
        tolerance = np.inf
    narrow = tolerance < np.inf
    stride = _COLUMN_STRIDE if by_columns else 0
    narrow_stride = stride if narrow else 0
    columns = np.empty((n_features, stride))
    column_distances = np.empty((n_clusters, stride - narrow_stride))
    narrow_columns = np.empty((n_features, narrow_stride), dtype=np.float32)
    narrow_distances = np.empty((n_clusters, narrow_stride), dtype=np.float32)
    best = np.empty(_LLOYD_ROWS)
    # The row-major block (BLAS's product), in float64 or float32.
    shifted = np.empty((0 if by_columns or by_rows or narrow else _LLOYD_ROWS,
                        n_features))
    shifted_row = np.empty(n_features if by_rows else 0)
    row_products = np.empty((n_clusters, _LLOYD_ROWS if by_rows else 0))
    row_second = np.empty(_LLOYD_ROWS if by_rows else 0)
    flat_shifted = shifted.reshape(shifted.size)
    narrow_shifted = np.empty((0 if by_columns or not narrow else _LLOYD_ROWS, n_features),
                              dtype=np.float32)
    flat_narrow = narrow_shifted.reshape(narrow_shifted.size)
    # BLAS's products of a whole block, written in place (a new array per block costs
    # an allocation each).
    products = np.empty((n_clusters, _LLOYD_ROWS if shifted.shape[0] else 0))
    narrow_products = np.empty((n_clusters, _LLOYD_ROWS if narrow_shifted.shape[0] else 0),
                               dtype=np.float32)
    narrow_scaled = scaled_centres.astype(np.float32)
    narrow_rows = centre_rows.astype(np.float32)
    narrow_norms = norms.astype(np.float32)
    narrow_best = np.empty(_LLOYD_ROWS, dtype=np.float32)
    narrow_second = np.empty(_LLOYD_ROWS, dtype=np.float32)
    span_labels = np.empty(_SPAN_ROWS, dtype=np.intp)
    local_labels = np.empty(_SPAN_ROWS, dtype=np.intp)
    local_groups = np.empty(_SPAN_ROWS, dtype=np.intp)
    central_rows = np.empty(_SPAN_ROWS, dtype=np.intp)
    codes = np.empty((_LLOYD_ROWS, n_features), dtype=np.int64)
    flat_codes = codes.reshape(size)
    # Blocks are slices of the flat rows: a block of X's rows reshaped flat costs a
    # layout check per block (measured: 0.3 ns a row at 2 features).
    flat_X = X.reshape(X.size)
    flat_reports = (reports.reshape(reports.size) if reports is not None
                    else np.empty(0, dtype=np.float32))
    flat_sums = sums.reshape(sums.size) if sums is not None else np.empty(0, np.int64)
    flat_local_sums = (local_sums.reshape(local_sums.size) if local_sums is not None
                       else np.empty(0))
    # The same constants for every feature (bounds given as scalars, the usual case):
    # the block's loops then read no arrays of constants.
    alike = True
    for feature in range(1, n_features):
        if (origin[feature] != origin[0] or lower[feature] != lower[0]
                or upper[feature] != upper[0] or scale[feature] != scale[0]):
            alike = False
    # Else the per-feature constants repeated along a block, so that the block is
    # processed as one flat, vectorized loop.
    repeats = 0 if alike else _LLOYD_ROWS
    origins = _repeated(origin, 0 if by_columns else repeats)
    lowers = _repeated(lower, repeats)
    uppers = _repeated(upper, repeats)
    scales = _repeated(scale, repeats)
    # Every row central: the block's codes in one flat loop (else a central row's
    # codes are computed with its sums, below).
    block_codes = sums is not None and reports is None
    # The local users' reports summed group by group (else report by report into its
    # group's sums: see _reported_sums).
    by_group = (reports is not None and n_features <= _GROUPED_FEATURES
                and local_counts.shape[0] * (n_features + 1) <= _GROUPED_SUMS)
    position = 0  # the next local user of this part
    for span_first in range(start, stop, _SPAN_ROWS):
        n_span = min(_SPAN_ROWS, stop - span_first)
        for offset in range(0, n_span, _LLOYD_ROWS):
            first = span_first + offset
            n_block = min(_LLOYD_ROWS, n_span - offset)
            block = flat_X[first * n_features:(first + n_block) * n_features]
            block_labels = span_labels[offset:offset + n_block]
            if by_columns and narrow:
                _clip_shift_columns(block, n_block, lower, upper, origin, columns,
                                    narrow_columns)
                _column_distances(narrow_columns, n_block, narrow_scaled, narrow_distances)
                _first_nearest_columns(narrow_distances, n_block, narrow_norms, narrow_best,
                                       block_labels, narrow_second)
                _search_close_rows(block, n_block, lower, upper, origin, centre_rows, norms,
                                   narrow_best, narrow_second, tolerance, block_labels)
            elif by_columns:
                _clip_shift_columns(block, n_block, lower, upper, origin, columns, columns)
                if n_features <= _FUSED_FEATURES:
                    _fused_nearest_columns(columns, n_block, scaled_centres, norms, best,
                                           block_labels)
                else:
                    _column_distances(columns, n_block, scaled_centres, column_distances)
                    _first_nearest_columns(column_distances, n_block, norms, best,
                                           block_labels)
            elif by_rows:
                _row_products(block, n_block, lower, upper, origin, centre_rows, alike,
                              shifted_row, row_products)
                _first_nearest_columns(row_products, n_block, norms, best, block_labels,
                                       row_second)
                _search_close_rows(block, n_block, lower, upper, origin, centre_rows, norms,
                                   best, row_second, row_tolerance, block_labels)
            elif narrow:  # rounded to float32 as they are stored
                if alike:
                    _clip_shift_alike(block, lower[0], upper[0], origin[0], flat_narrow)
                else:
                    _clip_shift(block, lowers, uppers, origins, flat_narrow)
                if n_block == _LLOYD_ROWS:  # into the block's own array: no allocation
                    distances = np.dot(narrow_rows, narrow_shifted.T, narrow_products)
                else:
                    distances = np.dot(narrow_rows, narrow_shifted[:n_block].T)
                _first_nearest_columns(distances, n_block, narrow_norms, narrow_best,
                                       block_labels, narrow_second)
                _search_close_rows(block, n_block, lower, upper, origin, centre_rows, norms,
                                   narrow_best, narrow_second, tolerance, block_labels)
            else:
                if alike:
                    _clip_shift_alike(block, lower[0], upper[0], origin[0], flat_shifted)
                else:
                    _clip_shift(block, lowers, uppers, origins, flat_shifted)
                # Centre by centre over the rows (transposed): the minimum vectorizes.
                if n_block == _LLOYD_ROWS:
                    distances = np.dot(centre_rows, shifted.T, products)
                else:
                    distances = np.dot(centre_rows, shifted[:n_block].T)
                _first_nearest_columns(distances, n_block, norms, best, block_labels)
            if labels is not None:
                for row in range(n_block):
                    labels[first + row] = block_labels[row]
            if block_codes:  # every row central: the block's codes, in one flat loop
                if alike:
                    _block_codes_alike(block, lower[0], upper[0], scale[0], flat_codes)
                else:
                    _block_codes(block, lowers, uppers, scales, flat_codes)
                for row in range(n_block):
                    label = block_labels[row]
                    counts[label] += 1
                    _add_row(flat_sums, label, flat_codes, row, n_features)
        if reports is None:
            continue
        # Local and central rows apart, without branches on which is which (a branch on
        # a random mix mispredicts): the local rows' labels, and the central rows'.
        n_local, n_central = 0, 0
        for row in range(n_span):
            is_local_row = True if is_local is None else is_local[span_first + row]
            local_labels[n_local] = span_labels[row]
            central_rows[n_central] = row
            n_local += np.intp(is_local_row)
            n_central += 1 - np.intp(is_local_row)
        # Each local user's randomized response, in a loop without branches either
        # (whether a report changes is random), which vectorizes: one level's width is
        # read before it (a load in it could alias the stores).
        only_width = widths[0]
        for user in range(n_local):
            group = local_labels[user]
            if draws is not None:
                width = only_width if level is None else widths[level[position + user]]
                group = _respond(group, draws[position + user], width, n_clusters)
            if level is not None:
                group += level[position + user] * n_clusters
            local_groups[user] = group
        if by_group:  # few groups of few features: a vectorized pass per group
            _reported_sums(local_groups, n_local, flat_reports, position, n_features,
                           local_counts, local_sums)
        else:
            for user in range(n_local):
                group = local_groups[user]
                local_counts[group] += 1.0
                _add_row(flat_local_sums, group, flat_reports, position + user, n_features)
        position += n_local
        if sums is not None:  # a few central rows among local ones: their codes only
            for index in range(n_central):
                row = central_rows[index]
                label = span_labels[row]
                counts[label] += 1
                for feature in range(n_features):
                    sums[label, feature] += np.int64(fixed_point_code(
                        X[span_first + row, feature], lower[feature], upper[feature],
                        scale[feature]))


@numba.njit(fastmath={"reassoc"}, **_OPTIONS)
def _reported_sums(groups, n_users, reports, first, n_features, counts, sums):
    """The reports of ``n_users`` local users (``reports``, flat, row-major, from user
    ``first``) added to the sums of their ``groups`` (level and reported cluster), and
    the users counted, one vectorized pass over the users per group.

    :func:`nearest_centre_sums`' other way, each report added to its group's sums in
    turn, waits on the previous addition to the same group's sums whenever two reports
    in a row share a group (a store then a load of the same address: most of the time
    with 3 groups). Here each group's count and sums are running totals in registers
    over all the users, each report added or not by a comparison of its group (``+ 0``
    otherwise), with ``n_features`` a literal (1, 2 or 3: each feature's values are
    then loads of a known stride, which vectorize). Its cost grows with the groups and
    the features, the other way's does not: measured per user at 50,000 users, 2
    features, 0.34/0.51/0.84/1.33 ns at 2/3/5/8 groups against 1.69/1.49/1.34/1.29 ns;
    1 feature, 0.30 ns at 3 groups and 0.77 at 8 against 1.32 and 1.10; 3 features, 0.62
    and 1.22 ns at 3 and 6 groups against 1.62 and 1.49. Hence ``_GROUPED_SUMS``.

    The reports are already private: their float64 sums may be taken in any order
    (``reassoc``, which lets the loops vectorize); their float32 values, converted
    exactly, mostly add up exactly in float64 anyway. A report is added as its product
    with 0 or 1 (a select did not vectorize): an infinite one (a noise scale beyond
    float32's 3.4e38) would make every group's sums NaN, not only its own's infinite;
    either way the fit's centres are lost.
    """
    n_groups = counts.shape[0]
    users = reports[first * n_features:(first + n_users) * n_features]
    for group in range(n_groups):
        count = 0
        if n_features == 1:
            total = 0.0
            for user in range(n_users):
                hit = groups[user] == group
                count += hit
                total += np.float64(users[user]) * hit
            sums[group, 0] += total
        elif n_features == 2:
            first_total, second_total = 0.0, 0.0
            for user in range(n_users):
                hit = groups[user] == group
                count += hit
                first_total += np.float64(users[2 * user]) * hit
                second_total += np.float64(users[2 * user + 1]) * hit
            sums[group, 0] += first_total
            sums[group, 1] += second_total
        else:
            first_total, second_total, third_total = 0.0, 0.0, 0.0
            for user in range(n_users):
                hit = groups[user] == group
                count += hit
                first_total += np.float64(users[3 * user]) * hit
                second_total += np.float64(users[3 * user + 1]) * hit
                third_total += np.float64(users[3 * user + 2]) * hit
            sums[group, 0] += first_total
            sums[group, 1] += second_total
            sums[group, 2] += third_total
        counts[group] += count


@numba.njit(inline="always", **_OPTIONS)
def _draw_words(next_word, generator, draws, first, last):
    """``draws[first:last]`` from the generator's 64-bit words (``next_word(generator)``:
    its ``bit_generator.ctypes``), written in place: the draws of
    :func:`~skhybrid.mechanisms._randomized_response.response_draws` (each word gives
    ``64 / bits`` draws, its low bits first, as the little-endian view of its words;
    the last word's unused draws are dropped)."""
    # Unsigned indices: numba then tests no wrap-around of negative ones (measured: the
    # loop 1.6x quicker, as quick as the generator's own random_raw).
    index, end = np.uint64(first), np.uint64(last)
    one, two, three, four = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    if draws.itemsize == 2:  # whole words, by literal shifts
        while index + four <= end:
            word = next_word(generator)
            draws[index] = word  # its low bits (a cast to the draws' unsigned type)
            draws[index + one] = word >> np.uint64(16)
            draws[index + two] = word >> np.uint64(32)
            draws[index + three] = word >> np.uint64(48)
            index += four
    else:
        while index + two <= end:
            word = next_word(generator)
            draws[index] = word
            draws[index + one] = word >> np.uint64(32)
            index += two
    if index < end:  # the last word's first draws
        word = next_word(generator)
        width = np.uint64(8 * draws.itemsize)
        while index < end:
            draws[index] = word
            word >>= width
            index += one


@numba.njit(inline="always", **_OPTIONS)
def _draw_pass(drawn, first_ticket, chunk_stops, first_local, next_word, draws):
    """A pass's draws, chunk after chunk in task order, each published when made (the
    tickets of its tasks, from ``first_ticket``): the chunks and draws of
    :meth:`~skhybrid.cluster._k_means_lloyd.LloydPasses._draw`, from the generator
    whose state's address is ``drawn[MADE_SOURCE]``."""
    start, n_tasks = 0, chunk_stops.shape[0]
    while start < n_tasks:
        stop = chunk_stops[start]
        if first_local[stop] > first_local[start]:
            _draw_words(next_word, drawn[MADE_SOURCE], draws, first_local[start],
                        first_local[stop])
        publish(drawn, first_ticket + stop)
        start = stop


@numba.njit(**_OPTIONS)
def lloyd_tasks(state, linger, starts, stops, first_local, drawn, chunk_stops, next_word, X,
                origin, scaled_centres, norms, lower, upper, scale, labels, counts, sums,
                is_local, level, widths, draws, reports, local_counts, local_sums):
    """One thread's share of passes of :func:`nearest_centre_sums`: tasks taken in turn.

    Each thread of a pass runs this call; it takes the next task of the current pass
    from ``state`` (:mod:`skhybrid.utils._compiled_tasks`) until none is left, runs
    :func:`nearest_centre_sums` over the task's rows into the task's own arrays and
    counts it done; then a thread of the pool waits up to ``linger`` turns for the
    next pass (the caller, ``linger`` = ``CALLER``, returns), and makes the next pass's
    draws meanwhile if the caller posts them as a job (they would cost the caller that
    time at the pass's start, while the pool's threads wait for them). A task's local
    users wait for their draws to be published (``drawn``), by that thread or by the
    caller while the pass runs. The arguments are those of :func:`nearest_centre_sums`
    (the same arrays in every pass: the caller writes each pass's centres before it,
    and :func:`task_totals` zeroes the task arrays after it), and:

    Parameters
    ----------
    state : ndarray of int64
        The shared state (:func:`~skhybrid.utils._compiled_tasks.new_state`).
    linger : int
        See :func:`~skhybrid.utils._compiled_tasks.next_pass`.
    starts, stops : ndarray of int64 of shape (n_tasks,)
        Each task's rows.
    first_local : ndarray of int64 of shape (n_tasks + 1,)
        The first local user of each task (and their number, last).
    drawn : ndarray of int64 or None
        The tickets of the tasks whose draws are made (the pass's first task's plus
        their number, in task order), raised as they are made (None: all were made
        before the pass); and the generator's state's address for a job
        (:func:`~skhybrid.utils._compiled_tasks.new_made_counter`).
    chunk_stops : ndarray of int64 of shape (n_tasks,)
        The task after the chunk of draws that starts at each task (read by a job).
    next_word : ctypes function or None
        The generators' ``next_uint64`` (their ``bit_generator.ctypes``), for a job of
        draws (None: no job is posted).
    counts, sums, local_counts, local_sums : ndarray of shape (n_tasks, stride)
        Each task's arrays of :func:`nearest_centre_sums`, flat in one row (padded:
        :class:`~skhybrid.cluster._k_means_lloyd._TaskArrays`); ``sums`` and the local
        ones may be None.
    """
    n_tasks = starts.shape[0]
    n_features = X.shape[1]
    n_clusters = scaled_centres.shape[1]
    current = current_pass(state)
    while current > 0:
        first_ticket = (current - 1) * n_tasks
        while True:
            task = take_task(state, current)
            if task < 0:
                break
            first, last = first_local[task], first_local[task + 1]
            if (drawn is not None and last > first
                    and not wait_until_above(drawn, first_ticket + task, state)):
                break
            failed = False
            try:
                task_counts = counts[task, :n_clusters]
                task_sums = (None if sums is None else
                             sums[task, :n_clusters * n_features].reshape((n_clusters,
                                                                           n_features)))
                if reports is None:
                    nearest_centre_sums(X, starts[task], stops[task], origin, scaled_centres,
                                        norms, lower, upper, scale, labels, task_counts,
                                        task_sums)
                else:
                    n_groups = n_clusters * widths.shape[0]
                    nearest_centre_sums(
                        X, starts[task], stops[task], origin, scaled_centres, norms, lower,
                        upper, scale, labels, task_counts, task_sums, is_local,
                        None if level is None else level[first:], widths,
                        None if draws is None else draws[first:last], reports[first:],
                        local_counts[task, :n_groups],
                        local_sums[task, :n_groups * n_features].reshape((n_groups,
                                                                          n_features)))
            except Exception:  # noqa: BLE001 (the caller raises; the task counts as done)
                failed = True
            finish_task(state, failed)
        following = next_pass(state, current, linger)
        while following == JOB_POSTED:  # the next pass's draws, unless taken back
            if next_word is not None and take_job(state, current + 1):
                _draw_pass(drawn, current * n_tasks, chunk_stops, first_local, next_word,
                           draws)
            following = next_pass(state, current, linger)
        current = following


@numba.njit(inline="always", **_OPTIONS)
def _total_and_zero(rows, total):
    """``total`` (flat) = the sum of the first ``total.size`` values of ``rows``' rows, in
    row order; the rows zeroed."""
    size = total.shape[0]
    for index in range(size):
        total[index] = rows[0, index]
    for row in range(1, rows.shape[0]):
        for index in range(size):
            total[index] += rows[row, index]
    rows[:, :] = 0


@numba.njit(**_OPTIONS)
def task_totals(counts_rows, sums_rows, local_counts_rows, local_sums_rows, counts, sums,
                local_counts, local_sums):
    """A pass's totals of its tasks' arrays (:func:`lloyd_tasks`), into ``counts``,
    ``sums``, ``local_counts`` and ``local_sums`` (flat), the tasks' arrays zeroed for
    the next pass: one call for the four (measured: 8-10 us of numpy's sums and fills
    per pass at 1e5 x 2). The tasks are added in task order: the integer totals are
    exact, and the float ones the same whatever the threads (numpy's ``sum(axis=0)``
    adds the rows in the same order, but for a single column, which it adds pairwise).
    An array and its rows may be None together."""
    _total_and_zero(counts_rows, counts)
    if sums is not None:
        _total_and_zero(sums_rows, sums)
    if local_counts is not None:
        _total_and_zero(local_counts_rows, local_counts)
        _total_and_zero(local_sums_rows, local_sums)


@numba.njit(**_OPTIONS)
def grouped_row_sums(values, origin, labels, counts, sums):
    """``counts[g] += 1`` and ``sums[g] += values[i] - origin`` for each row ``i`` of group ``g``.

    One pass over row-major values (already private reports: their float sums may be
    added in any order).

    Parameters
    ----------
    values : ndarray of float32 or float64 of shape (n_rows, n_features)
    origin : ndarray of float64 of shape (n_features,)
    labels : ndarray of int of shape (n_rows,)
        In ``[0, n_groups)``.
    counts : ndarray of float64 of shape (n_groups,)
    sums : ndarray of float64 of shape (n_groups, n_features)
        Added to in place.
    """
    for row in range(values.shape[0]):
        group = labels[row]
        counts[group] += 1.0
        for feature in range(values.shape[1]):
            sums[group, feature] += values[row, feature] - origin[feature]


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
