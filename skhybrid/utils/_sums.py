"""Exact sums of clipped values in fixed point, for every release.

Each value is clipped to its bounds and mapped to an integer code on a grid of
``2**FIXED_POINT_BITS`` steps; codes are added exactly in int64, by the compiled kernels
of :mod:`skhybrid.utils._fixed_point_sums`, whose docstring holds the exactness argument.
What the estimators release is computed from these integers in the centred domain and
charged :func:`rounding_slack` for the few float operations after them.
"""

import math
from typing import NamedTuple

import numpy as np

from ._fixed_point_sums import FIXED_POINT_BITS, code_sums, moment_sums
from ._memory import remember

#: One step of the grid is ``(upper - lower) / _SCALE``.
_SCALE = float(2**FIXED_POINT_BITS)
#: Up to this many features, the bounds' widths are checked in Python floats, and the
#: widths of recent bounds remembered (read-only arrays, by the bounds' bytes): a fit
#: reads them three or four times, a grid search in every fit.
_FEW_FEATURES = 16
_WIDTHS = {}
_MAX_WIDTHS = 256


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
        key = (lower.tobytes(), upper.tobytes())
        width = _WIDTHS.get(key)
        if width is not None:
            return width
        # The same float64 subtraction and test in Python floats (no overflow warning
        # to silence; NaN fails both comparisons): cheaper for a few features.
        widths = [high - low for low, high in zip(lower.tolist(), upper.tolist())]
        if all(0.0 < value < math.inf for value in widths):
            width = np.array(widths)
            width.flags.writeable = False  # shared by every caller of the same bounds
            remember(_WIDTHS, key, width, _MAX_WIDTHS)
            return width
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
    lower, upper = per_feature(lower, n_features), per_feature(upper, n_features)
    if width is None:
        width = check_fixed_point_range(lower, upper)
    with np.errstate(over="ignore"):
        scale = np.divide(_SCALE, width)  # width has shape (n_features,)
    if not np.isfinite(scale).all():
        # Below a width of about 2.4e-299 the grid's step is not a float64.
        j = int(np.flatnonzero(~np.isfinite(scale))[0])
        raise ValueError(
            f"bounds must be at least {_SCALE / np.finfo(np.float64).max:.3g} apart; "
            f"feature {j} has lower={float(lower[j])!r} and upper={float(upper[j])!r}")
    return lower, upper, scale


def per_feature(values, n_features, *, copy=False):
    """``values`` broadcast to a contiguous float64 array of shape (n_features,).

    ``copy=True`` always returns a new array (never ``values`` itself): a fitted
    attribute that nothing else holds.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.shape == (n_features,) and values.flags.c_contiguous:
        return values.copy() if copy else values  # the usual case: no broadcast to build
    broadcast = np.empty(n_features)
    broadcast[...] = values  # cheaper than broadcast_to for a scalar
    return broadcast


#: Rows per matrix-vector product of :func:`float_column_sums` (and its ones, read only).
_COLUMN_SUM_ROWS = 2**16
_COLUMN_SUM_ONES = np.ones(_COLUMN_SUM_ROWS)
_COLUMN_SUM_ONES.flags.writeable = False


def float_column_sums(values):
    """Each column's float64 sum of a 2-d array: products of blocks of rows with ones (BLAS).

    numpy's ``values.sum(axis=0)`` adds a row-major array of a few columns row by row, in
    a loop of ``n_features`` values: 25x slower than this product at 3 features (56,250
    rows: 606 us against 24 us). For values whose rounding is part of no guarantee
    (already private reports). One column is contiguous and keeps numpy's own
    (pairwise) sum.

    Parameters
    ----------
    values : ndarray of shape (n_rows, n_features)

    Returns
    -------
    sums : ndarray of float64 of shape (n_features,)
    """
    if values.shape[1] == 1:
        return values.sum(axis=0, dtype=np.float64)
    sums = np.zeros(values.shape[1])
    for start in range(0, values.shape[0], _COLUMN_SUM_ROWS):
        block = values[start:start + _COLUMN_SUM_ROWS]
        sums += _COLUMN_SUM_ONES[:block.shape[0]] @ block
    return sums


#: From this many values :func:`finite_sum` adds by ``einsum`` (1.7x quicker than
#: ``np.add.reduce`` at 2**15 to 1e5 values, and slower below a few thousand).
_EINSUM_VALUES = 4096


def finite_sum(values):
    """scikit-learn's quick finiteness test: whether the float sum of every value is
    finite (True proves every value finite; False may only be an overflow)."""
    with np.errstate(over="ignore"):
        if values.ndim == 2 and values.size >= _EINSUM_VALUES:
            return math.isfinite(np.einsum("ij->", values))
        return math.isfinite(np.add.reduce(values, axis=None))


def all_finite(values):
    """Whether every value of a float array is finite: :func:`finite_sum`, then value by
    value when the sum is not finite."""
    return finite_sum(values) or bool(np.isfinite(values).all())


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


def _check_labels(labels, n_samples):
    labels = np.asarray(labels)
    if labels.dtype == bool:
        labels = labels.view(np.uint8)
    if labels.dtype.kind not in "iu" or labels.shape != (n_samples,):
        raise ValueError(
            f"labels must be integers of shape ({n_samples},); got {labels.dtype} of shape "
            f"{labels.shape}"
        )
    if labels.dtype not in _KERNEL_LABELS:
        # The kernel reads uint8, int32 and int64: a uint64 label past 2**63 becomes
        # negative, left out as it was.
        labels = labels.astype(np.int64)
    return labels


_KERNEL_LABELS = (np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.int64))
#: The kernel's labels when there are none (read only with ``labelled``).
_NO_LABELS = np.zeros(0, dtype=np.uint8)


def fixed_point_sums(values, lower, upper, *, labels=None, n_groups=1, non_finite=None):
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
    non_finite : ndarray of int64 of shape (1,), default=None
        Unless None, a finiteness check of every value (of every row, labelled out or
        not) made in the pass that codes them: ``non_finite[0]`` is then made positive
        if any is NaN or infinite, and the sums mean nothing (see
        :func:`fixed_point_moments`' ``check_finite``).

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
        code_sums(columns, lower, upper, scale,
                  _NO_LABELS if labels is None else labels[rows], labels is not None,
                  sums, non_finite)
    return sums


class MomentSums(NamedTuple):
    """The sums of :func:`fixed_point_moments` (None where not asked for)."""

    codes: np.ndarray
    square_codes: np.ndarray | None
    others: np.ndarray | None
    other_squares: np.ndarray | None
    #: False when ``check_finite`` found a NaN or an infinity (then no sum means anything).
    finite: bool = True


def square_grid(lower, upper):
    """The midpoint of the bounds and the range of a squared distance to it, per feature.

    ``(clip(x) - mid)**2`` is at most ``((upper - lower) / 2)**2``: the grid of
    :func:`fixed_point_moments`' square codes is ``[0, ((upper - lower) / 2)**2]``.
    """
    return (lower + upper) / 2.0, ((upper - lower) / 2.0) ** 2


#: The grids of recent bounds (:func:`_moment_grid`), by the bounds' bytes.
_GRIDS = {}


def _moment_grid(lower, upper, n_features, squares):
    """:func:`fixed_point_moments`' grids: ``(lower, upper, scale)`` of the values
    (:func:`_bounds_and_scale`) and, with ``squares``, the midpoint ``centre`` of the
    squared distances (else None), whose range :func:`square_grid` must be a grid
    (:func:`check_fixed_point_range` refuses it otherwise).

    Remembered by the bounds' bytes for up to ``_FEW_FEATURES`` features, as
    :func:`check_fixed_point_range` remembers widths: a fit computes them once, a
    grid search in every fit (about 3 us of a 70 us fit). The arrays returned are
    shared by every later call with the same bounds: read them, never write them
    (they stay writeable so that the compiled kernels keep one signature). Bounds a
    grid refuses raise every time (nothing is remembered for them).
    """
    key = None
    if n_features <= _FEW_FEATURES:
        lower, upper = per_feature(lower, n_features), per_feature(upper, n_features)
        key = (lower.tobytes(), upper.tobytes(), squares)
        grid = _GRIDS.get(key)
        if grid is not None:
            return grid
    lower, upper, scale = _bounds_and_scale(lower, upper, n_features)
    centre = None
    if squares:
        centre, square_upper = square_grid(lower, upper)
        check_fixed_point_range(np.zeros(n_features), square_upper)  # decoded on it
    grid = (lower, upper, scale, centre)
    if key is not None:
        # Copies: the caller's own bounds may change after this call.
        grid = tuple(None if values is None else values.copy() for values in grid)
        remember(_GRIDS, key, grid, _MAX_WIDTHS)
    return grid


def fixed_point_moments(values, lower, upper, in_fixed_point=None, *, squares=False,
                        others=False, other_squares=False, check_finite=False):
    """Exact sums of some rows' codes and squared distances, float sums of the others.

    One pass for a chunk of the hybrid mean: the tcm users' clipped values in fixed
    point (as :func:`fixed_point_sums` adds them), their squared distances to the
    midpoint ``(clip(x) - mid)**2`` on the grid of ``[0, ((upper - lower) / 2)**2]``
    (:func:`square_grid`), and the lm users' reports as floats (in the kernel's fixed
    order, :mod:`skhybrid.utils._fixed_point_sums`). No sum ever includes a row of the other group (never
    subtracted).

    Parameters
    ----------
    values : ndarray of shape (n_samples, n_features)
    lower, upper : ndarray of shape (n_features,)
    in_fixed_point : ndarray of bool of shape (n_samples,), default=None
        The rows added in fixed point; None for every row.
    squares : bool, default=False
        Also the exact sums of those rows' squared distances' codes.
    others, other_squares : bool, default=False
        Also the float sums of the other rows' values, and of their ``(x - mid)**2``
        (already private reports: their rounding is not part of any guarantee).
    check_finite : bool, default=False
        Also whether every value (of every row) is finite, element by element, tested
        in the pass that codes it: a caller's validation then needs no pass of its own.

    Returns
    -------
    sums : MomentSums
        ``codes`` (int64, ``fixed_point_sums(values[in_fixed_point], lower, upper)[0]``),
        ``square_codes`` (int64), ``others`` and ``other_squares`` (float64), each of
        shape (n_features,) or None; ``finite``, False only when ``check_finite`` found
        a NaN or an infinity, and then none of the sums means anything.
    """
    values = _float_rows(values)
    n_features = values.shape[1]
    lower, upper, scale, centre = _moment_grid(lower, upper, n_features,
                                               squares or other_squares)
    if in_fixed_point is not None:
        in_fixed_point = np.asarray(in_fixed_point)
        if in_fixed_point.dtype != bool or in_fixed_point.shape != (values.shape[0],):
            raise ValueError(
                f"in_fixed_point must be booleans of shape ({values.shape[0]},); got "
                f"{in_fixed_point.dtype} of shape {in_fixed_point.shape}"
            )
    others = others and in_fixed_point is not None
    other_squares = other_squares and others
    if centre is None:  # read for the other rows' squares only
        centre = lower
    if in_fixed_point is not None:
        in_fixed_point = in_fixed_point.view(np.uint8)
    sums = MomentSums(np.zeros(n_features, dtype=np.int64),
                      np.zeros(n_features, dtype=np.int64) if squares else None,
                      np.zeros(n_features) if others else None,
                      np.zeros(n_features) if other_squares else None)
    non_finite = np.zeros(1, dtype=np.int64) if check_finite else None
    for rows, columns in _feature_major(values):
        moment_sums(columns, lower, upper, scale, centre,
                    None if in_fixed_point is None else in_fixed_point[rows], *sums[:4],
                    non_finite)
    return sums if non_finite is None or non_finite[0] == 0 else sums._replace(finite=False)


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
