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
2. the codes are added exactly: in float64 within blocks of 4096 rows (integers below
   2**44, so every partial sum is exact), and the blocks' totals as integers in int64
   (the sums stay below 2**63 for fewer than 2**31 rows).

Both steps run as one compiled pass over the values
(:func:`~skhybrid.utils._kernels.fixed_point_code_sums`).

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

import math

import numpy as np

from ._kernels import (
    _BLOCK_ROWS,
    code_and_float_sums,
    fixed_point_code_sums,
    fixed_point_codes_into,
    grouped_code_sums_into,
)

#: Bits of the fixed-point grid over [lower, upper] (one code step = range / 2**32); at
#: most 50, so that codes never round past the grid (see
#: :func:`~skhybrid.utils._kernels.fixed_point_code`).
FIXED_POINT_BITS = 32
_SCALE = float(2**FIXED_POINT_BITS)
if _BLOCK_ROWS * 2**FIXED_POINT_BITS > 2**53:  # pragma: no cover - a change of constants
    raise AssertionError("a block's codes must sum exactly in float64 (below 2**53)")


#: Up to this many features, the bounds' widths are checked in Python floats.
_FEW_FEATURES = 16


def check_fixed_point_range(lower, upper):
    """The per-feature widths ``upper - lower``, finite and > 0, or a ValueError.

    Parameters
    ----------
    lower, upper : ndarray of shape (n_features,)

    Returns
    -------
    width : ndarray of shape (n_features,)
    """
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    if lower.shape == upper.shape and lower.ndim == 1 and lower.shape[0] <= _FEW_FEATURES:
        # The same float64 subtraction and test in Python floats (no overflow warning
        # to silence; NaN fails both comparisons): cheaper for a few features.
        widths = [high - low for low, high in zip(lower.tolist(), upper.tolist())]
        if all(0.0 < value < math.inf for value in widths):
            return np.array(widths)
    with np.errstate(over="ignore"):
        width = upper - lower
    bad = ~(np.isfinite(width) & (width > 0))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"bounds must have a finite width upper - lower > 0 for every feature; feature "
            f"{j} has lower={float(lower[j])!r} and upper={float(upper[j])!r}, whose width "
            "overflows float64 or is not positive"
        )
    return width


def _bounds_and_scale(lower, upper, n_features, width=None):
    """The bounds as float64 arrays of one entry per feature, and each grid step.

    Broadcast (scalars) and checked here: the compiled kernels read one bound per
    feature without bounds checks.
    """
    lower, upper = (per_feature(side, n_features) for side in (lower, upper))
    if width is None:
        width = check_fixed_point_range(lower, upper)
    return lower, upper, per_feature(_SCALE / width, n_features)


def per_feature(values, n_features):
    """``values`` broadcast to a contiguous float64 array of shape (n_features,)."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape == (n_features,) and values.flags.c_contiguous:
        return values  # the usual case: no broadcast to build
    broadcast = np.empty(n_features)
    broadcast[...] = values  # cheaper than broadcast_to for a scalar
    return broadcast


def _float_rows(values):
    """``values`` as a 2-d float64 array (no copy when it already is one)."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"values must be 2-d; got shape {values.shape}")
    return values


#: Rows of a row-major array copied feature-major at a time (:func:`_feature_major`).
_COPY_ROWS = 2**16


def _feature_major(values):
    """``(rows, values[rows].T)`` blocks covering ``values``, each C-contiguous.

    The kernels' loops over one feature vectorize when its values are contiguous. For
    one feature or a Fortran-ordered array, ``values.T`` already is (no copy); a
    row-major array of several features is copied ``_COPY_ROWS`` rows at a time, never
    whole.
    """
    columns = values.T
    if columns.flags.c_contiguous:
        yield slice(None), columns
        return
    for start in range(0, values.shape[0], _COPY_ROWS):
        rows = slice(start, start + _COPY_ROWS)
        yield rows, np.ascontiguousarray(values[rows].T)


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
        Integers in ``[0, 2**FIXED_POINT_BITS]`` (see
        :func:`~skhybrid.utils._kernels.fixed_point_code`); ``codes[j, i]`` is row i's
        code of feature j. Feature-major, so that each feature's codes are contiguous.
    """
    values = _float_rows(values)
    lower, upper, scale = _bounds_and_scale(lower, upper, values.shape[1], width)
    codes = np.empty((values.shape[1], values.shape[0]))
    # Read in place, even row-major: the written codes are what must be contiguous.
    fixed_point_codes_into(values.T, lower, upper, scale, codes)
    return codes


def _check_labels(labels, n_samples):
    labels = np.asarray(labels)
    if labels.dtype == bool:
        labels = labels.view(np.uint8)
    if labels.dtype.kind not in "iu" or labels.shape != (n_samples,):
        raise ValueError(
            f"labels must be integers of shape ({n_samples},); got {labels.dtype} of shape "
            f"{labels.shape}"
        )
    return labels


def fixed_point_sums(values, lower, upper, *, labels=None, n_groups=1):
    """Exact per-group sums of the fixed-point codes of clipped values.

    Parameters
    ----------
    values : ndarray of shape (n_samples, n_features)
        Raw values; clipped to the bounds here (never modified).
    lower, upper : ndarray of shape (n_features,)
    labels : ndarray of int or bool of shape (n_samples,), default=None
        Each row's group in ``[0, n_groups]``; rows labelled ``n_groups`` are left out
        (a way to skip rows without copying the others). None puts every row in group 0.
    n_groups : int, default=1

    Returns
    -------
    sums : ndarray of int64 of shape (n_groups, n_features)
        ``sums[g, j]`` is the exact sum of the codes of feature j over group g's rows.
        One user's replacement moves each entry by at most ``2**FIXED_POINT_BITS``.
    """
    values = _float_rows(values)
    lower, upper, scale = _bounds_and_scale(lower, upper, values.shape[1])
    if labels is not None:
        labels = _check_labels(labels, values.shape[0])
    sums = np.zeros((n_groups, values.shape[1]), dtype=np.int64)
    for rows, columns in _feature_major(values):
        fixed_point_code_sums(columns, lower, upper, scale,
                              None if labels is None else labels[rows], sums)
    return sums


def fixed_point_and_float_sums(values, lower, upper, in_fixed_point):
    """The exact fixed-point sums of some rows and the float sums of the others, in one pass.

    For a chunk of the hybrid mean with lm reports: the tcm users' clipped values are
    added in fixed point (as :func:`fixed_point_sums` adds them), the lm users' reports
    as floats; no sum ever includes a row of the other group (never subtracted).

    Parameters
    ----------
    values : ndarray of shape (n_samples, n_features)
    lower, upper : ndarray of shape (n_features,)
    in_fixed_point : ndarray of bool of shape (n_samples,)

    Returns
    -------
    code_sums : ndarray of int64 of shape (n_features,)
        ``fixed_point_sums(values, lower, upper, labels=~in_fixed_point)[0]``.
    float_sums : ndarray of float64 of shape (n_features,)
        The sums of the other rows' values (in an order that vectorizes: they are
        already private, their rounding is not part of any guarantee).
    """
    values = _float_rows(values)
    lower, upper, scale = _bounds_and_scale(lower, upper, values.shape[1])
    in_fixed_point = np.asarray(in_fixed_point)
    if in_fixed_point.dtype != bool or in_fixed_point.shape != (values.shape[0],):
        raise ValueError(
            f"in_fixed_point must be booleans of shape ({values.shape[0]},); got "
            f"{in_fixed_point.dtype} of shape {in_fixed_point.shape}"
        )
    code_sums = np.zeros(values.shape[1], dtype=np.int64)
    float_sums = np.zeros(values.shape[1])
    for rows, columns in _feature_major(values):
        code_and_float_sums(columns, lower, upper, scale, in_fixed_point[rows], code_sums,
                            float_sums)
    return code_sums, float_sums


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
    labels = _check_labels(labels, codes.shape[1])
    sums = np.zeros((n_groups, codes.shape[0]), dtype=np.int64)
    grouped_code_sums_into(codes, labels, sums)
    return sums


#: The most users whose codes (each at most ``2**FIXED_POINT_BITS``) one int64 sum
#: adds: a sum of their codes, or of their codes centred on the midpoint, then stays
#: below 2**63 (:func:`centred_sums` refuses more).
MAX_USERS = 2 ** (63 - FIXED_POINT_BITS) - 1


def centred_sums(sums, lower, upper, *, n_users):
    """Float sums of ``x - lower`` from exact fixed-point sums (bounded by n * width).

    Parameters
    ----------
    sums : ndarray of int64 of shape (..., n_features)
    lower, upper : ndarray of shape (n_features,)
    n_users : int
        The most users whose codes were added into one entry of ``sums`` (a group's
        size, or a bound on it).

    Returns
    -------
    centred : ndarray of float64 of shape sums.shape

    Raises
    ------
    ValueError
        With more than :data:`MAX_USERS` users (about 2.1 billion) in one sum: it
        could have wrapped around in int64, and a wrapped sum must never be released.
    """
    if n_users > MAX_USERS:
        raise ValueError(
            f"one group of a fit holds at most {MAX_USERS:,} users (the exact int64 sum of "
            f"their fixed-point codes would overflow); got {int(n_users):,}. Fit disjoint "
            "parts of the population separately"
        )
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
