"""Sums of clipped values that keep their sensitivity in floating point.

A release is calibrated to a sensitivity: replacing one user's value moves the sum of
the clipped values by at most ``upper - lower`` per coordinate. In exact arithmetic it
does; in float64 it need not. With bounds far from zero relative to their width
(``(2**52, 2**52 + 1)``, ``(1e9, 1e9 + 1e-6)``), rounding in the sum moves it by more
than the width, and a sum computed by subtracting sums of unclipped values carries a
user's raw magnitude into the result. Both break the guarantee (found by audits).

Every sum that feeds a release is therefore computed here, in fixed point:

1. each value is clipped to ``[lower, upper]`` and mapped to an integer code
   ``k = rint((x - lower) * 2**FIXED_POINT_BITS / (upper - lower))``, clipped to
   ``[0, 2**FIXED_POINT_BITS]``. The map is monotone, so the code of any legal value is
   in that range whatever the rounding;
2. the codes are added exactly: float64 sums of integers are exact while every partial
   sum stays below 2**53, which holds for blocks of at most ``2**(53 - FIXED_POINT_BITS)``
   rows; each block's sums are converted to int64 and added as integers.

Replacing one user then moves an integer sum by at most ``2**FIXED_POINT_BITS`` per
coordinate, exactly. What the estimators release is computed from these integers in the
*centred* domain (the sum of ``x - lower``, of magnitude at most ``n * (upper - lower)``,
never of magnitude ``n * |lower|``), and the offset ``lower`` is added after the noise,
as post-processing. The few float operations between the exact integers and the noise
(conversion, scaling, a division by a public count, a weighted sum over a few levels)
round by a few units in the last place of a quantity bounded by the width; the
mechanisms charge that as :func:`rounding_slack` on top of the sensitivity.

Quantisation: a user's value is represented to within ``(upper - lower) / 2**(B + 1)``
with ``B = FIXED_POINT_BITS`` (about 1e-10 of the range), far below any noise.
"""

import numpy as np

#: Bits of the fixed-point grid over [lower, upper] (one code step = range / 2**32); at
#: most 50, so that codes never round past the grid (see :func:`_block_codes`).
FIXED_POINT_BITS = 32
#: Rows added per float64 block: 2**20 * 2**32 = 2**52 < 2**53, so block sums are exact.
BLOCK_ROWS = 2 ** (52 - FIXED_POINT_BITS)
#: Rows whose codes are computed at once: small enough that the passes of
#: :func:`fixed_point_codes` (clip, shift, scale, round) stay in the CPU's cache.
_CACHE_ROWS = 2**16
_SCALE = float(2**FIXED_POINT_BITS)


def check_fixed_point_range(lower, upper):
    """The per-feature widths ``upper - lower``, finite and > 0, or a ValueError.

    Parameters
    ----------
    lower, upper : ndarray of shape (n_features,)

    Returns
    -------
    width : ndarray of shape (n_features,)
    """
    with np.errstate(over="ignore"):
        width = np.asarray(upper, dtype=np.float64) - np.asarray(lower, dtype=np.float64)
    bad = ~(np.isfinite(width) & (width > 0))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"bounds must have a finite width upper - lower > 0 for every feature; feature "
            f"{j} has lower={float(lower[j])!r} and upper={float(upper[j])!r}, whose width "
            "overflows float64 or is not positive"
        )
    return width


def fixed_point_codes(values, lower, upper, width=None):
    """Each value's integer code on the fixed-point grid of ``[lower, upper]``, feature-major.

    Parameters
    ----------
    values : ndarray of shape (n_samples, n_features)
        Raw values (clipped here).
    lower, upper : ndarray of shape (n_features,)
    width : ndarray of shape (n_features,), default=None
        ``check_fixed_point_range(lower, upper)``, when already computed.

    Returns
    -------
    codes : ndarray of float64 of shape (n_features, n_samples)
        Integers in ``[0, 2**FIXED_POINT_BITS]``; ``codes[j, i]`` is row i's code of
        feature j (feature-major, see :func:`_block_codes`).
    """
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    if width is None:
        width = check_fixed_point_range(lower, upper)
    codes = np.empty((values.shape[1], values.shape[0]))
    rows = _cache_rows(values.shape[1])
    for start in range(0, values.shape[0], rows):
        block = slice(start, start + rows)
        _block_codes(values[block], lower, upper, width, out=codes[:, block])
    return codes


def _cache_rows(n_features):
    """Rows per cache-sized block of :data:`_CACHE_ROWS` values (at least one row)."""
    return max(1, _CACHE_ROWS // max(1, n_features))


def _block_codes(values, lower, upper, width, *, out=None):
    """The fixed-point codes of a block of rows, feature-major: shape (n_features, n_rows).

    Feature-major, so that every pass (clip, shift, scale, round) runs along the rows
    with one bound per feature: over a row-major ``(n, d)`` block with a bound per
    column, numpy's innermost loop has only ``d`` elements, 5 to 13 times slower for
    ``d`` from 2 to 10.

    No code leaves ``[0, 2**B]``: for ``lower <= x <= upper``, rounding is monotone, so
    ``0 <= fl(x - lower) <= fl(upper - lower) = width``; the scale factor and the product
    each round by at most 2**-53 (relative), so the scaled value is at most
    ``2**B (1 + 2**-52)``, which ``rint`` brings back to ``2**B`` while ``2**B * 2**-52 <
    1/2`` (B <= 50).
    """
    codes = np.empty((values.shape[1], values.shape[0])) if out is None else out
    np.clip(values.T, lower[:, np.newaxis], upper[:, np.newaxis], out=codes)
    codes -= lower[:, np.newaxis]
    codes *= (_SCALE / width)[:, np.newaxis]
    np.rint(codes, out=codes)
    return codes


def fixed_point_sums(values, lower, upper, *, labels=None, n_groups=1):
    """Exact per-group sums of the fixed-point codes of clipped values.

    Parameters
    ----------
    values : ndarray of shape (n_samples, n_features)
        Raw values; clipped to the bounds here (never modified).
    lower, upper : ndarray of shape (n_features,)
    labels : ndarray of int of shape (n_samples,), default=None
        Each row's group in ``[0, n_groups]``; rows labelled ``n_groups`` are left out
        (a way to skip rows without copying the others). None puts every row in group 0.
    n_groups : int, default=1

    Returns
    -------
    sums : ndarray of int64 of shape (n_groups, n_features)
        ``sums[g, j]`` is the exact sum of the codes of feature j over group g's rows.
        One user's replacement moves each entry by at most ``2**FIXED_POINT_BITS``.
    """
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    width = check_fixed_point_range(lower, upper)
    sums = np.zeros((n_groups, values.shape[1]), dtype=np.int64)
    # Cache-sized blocks (fewer rows than BLOCK_ROWS, so their float sums are exact).
    rows = min(BLOCK_ROWS, _cache_rows(values.shape[1]))
    for start in range(0, values.shape[0], rows):
        block = _block_codes(values[start : start + rows], lower, upper, width)
        _add_block_sums(sums, block, None if labels is None else labels[start : start + rows])
    return sums


def grouped_code_sums(codes, labels, n_groups):
    """:func:`fixed_point_sums` of codes computed once (:func:`fixed_point_codes`).

    K-means groups the same users again at every iteration: their codes are computed
    once and summed here under each iteration's labels, exactly as
    :func:`fixed_point_sums` would.

    Parameters
    ----------
    codes : ndarray of float64 of shape (n_features, n_samples)
        Feature-major, as :func:`fixed_point_codes` returns them (a column slice
        ``codes[:, rows]`` is fine).
    labels : ndarray of int of shape (n_samples,)
        In ``[0, n_groups]``; rows labelled ``n_groups`` are left out.
    n_groups : int

    Returns
    -------
    sums : ndarray of int64 of shape (n_groups, n_features)
    """
    sums = np.zeros((n_groups, codes.shape[0]), dtype=np.int64)
    for start in range(0, codes.shape[1], BLOCK_ROWS):
        rows = slice(start, start + BLOCK_ROWS)
        _add_block_sums(sums, codes[:, rows], labels[rows])
    return sums


#: Up to this many groups and above this many features, a block's grouped sums are one
#: matrix product (else one bincount per feature: building the one-hot matrix costs
#: more than a few bincounts).
_FEW_GROUPS = 32
_FEW_FEATURES = 4
#: Up to this many groups with int8 labels (few privacy levels, :func:`level_labels`), and
#: always up to two groups, each group's sums are one masked product (see
#: :func:`_add_block_sums`; measured on blocks of 2**16 rows).
_FEW_LEVELS = 8


def _add_block_sums(sums, block, labels):
    """Add one block's per-group code sums to ``sums``, exactly.

    ``block`` is feature-major, of shape (n_features, n_rows), each row contiguous. It
    holds at most ``BLOCK_ROWS`` codes of at most ``2**FIXED_POINT_BITS`` per group and
    feature: every float partial sum is an integer below 2**53, so exact in any order
    (matrix products included; their 0/1 weights multiply exactly).
    """
    n_groups = sums.shape[0]
    n_features = block.shape[0]
    if labels is None:
        sums[0] += block.sum(axis=1).astype(np.int64)
        return
    if n_groups <= 2 or (
        n_groups <= _FEW_LEVELS and labels.dtype.itemsize == 1 and n_features <= _FEW_FEATURES
    ):
        # One comparison and one product (0/1 weights times the codes) per group: a
        # fifth of bincount's time, which scatters and first widens int8 labels to intp.
        for group in range(n_groups):
            mask = (labels == group).view(np.uint8).astype(np.float64)
            sums[group] += (block @ mask).astype(np.int64)
        return
    if n_groups <= _FEW_GROUPS and n_features > _FEW_FEATURES:
        # One matrix product with the rows' one-hot groups (a row of 0/1 per group).
        groups = np.arange(n_groups, dtype=labels.dtype)[:, np.newaxis]
        one_hot = (labels == groups).view(np.uint8).astype(np.float64)
        sums += (block @ one_hot.T).T.astype(np.int64)
        return
    for j in range(n_features):
        sums[:, j] += np.bincount(
            labels, weights=block[j], minlength=n_groups + 1
        )[:n_groups].astype(np.int64)


def centred_sums(sums, lower, upper):
    """Float sums of ``x - lower`` from exact fixed-point sums (bounded by n * width).

    Parameters
    ----------
    sums : ndarray of int64 of shape (..., n_features)
    lower, upper : ndarray of shape (n_features,)

    Returns
    -------
    centred : ndarray of float64 of shape sums.shape
    """
    width = check_fixed_point_range(lower, upper)
    return sums.astype(np.float64) * (width / _SCALE)


def rounding_slack(magnitude, n_operations=4):
    """A bound on the rounding of a few float operations on a quantity of ``magnitude``.

    Each float64 operation rounds by at most 2**-53 of its result; ``n_operations``
    roundings of results bounded by ``magnitude`` move a value by at most
    ``n_operations * 2**-52 * magnitude`` (a factor 2 to spare). Mechanisms add this to
    the sensitivity of a statistic computed in the centred domain from exact sums.

    Parameters
    ----------
    magnitude : float or ndarray
        A bound on the absolute value of every intermediate result (for a centred mean,
        the width of the bounds).
    n_operations : int, default=4

    Returns
    -------
    slack : float or ndarray
    """
    return n_operations * 2.0**-52 * np.asarray(magnitude, dtype=np.float64)
