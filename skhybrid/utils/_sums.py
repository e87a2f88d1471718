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
2. the codes are added exactly, as integers in int64 (the sums stay below 2**63 for
   fewer than 2**31 rows; numpy's path adds fewer than 2**21 codes in float64, whose
   every partial sum is then an integer of at most 2**53, exact).

Both steps run as one compiled pass over the values
(:func:`~skhybrid.utils._kernels.fixed_point_code_sums`), or, for small inputs, as numpy
passes of exactly the same float operations (:func:`_compiled`: loading numba's machine
code costs a process 0.2-0.8 s once, more than numpy's passes over a small input). The
hybrid mean's sums (:func:`fixed_point_moments`) have a third implementation, a C
extension built at install (``_skhybrid_native``, :func:`_native_moment_sums`), which
loads in a millisecond: where it is installed, every fit's moment sums are one compiled
pass, the first fit's included. All three give the same integers, bit for bit.

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
import time
from typing import NamedTuple

import numpy as np

from ._memory import remember

#: Bits of the fixed-point grid over [lower, upper] (one code step = range / 2**32); at
#: most 50, so that codes never round past the grid (see
#: :func:`~skhybrid.utils._kernels.fixed_point_code`).
FIXED_POINT_BITS = 32
_SCALE = float(2**FIXED_POINT_BITS)
#: The middle of the codes' grid, and the factor that puts a squared centred code on a
#: grid of ``2**FIXED_POINT_BITS`` steps (:func:`square_codes_of`).
_HALF_GRID = float(2 ** (FIXED_POINT_BITS - 1))
_SQUARE_STEP = float(2.0 ** (2 - FIXED_POINT_BITS))

#: numpy sums until they would have cost the process this long, about the one-time cost
#: of the compiled kernels: importing numba (0.17 s; ``import skhybrid`` does not) and
#: loading their cached machine code (0.22 s; compiling it on a cold cache, 0.55 s).
_NUMPY_SECONDS_BEFORE_COMPILED = 0.4
#: An upper estimate of numpy's seconds per value for the code passes (measured at 1e7
#: values: 1.0 ns for one feature's codes, 1.6 ns with their squares, 3.3 ns with a mask
#: and float sums, 2.6 ns at 3 features with bounds per feature, 5.9 ns with 2 groups
#: of labels).
_NUMPY_SECONDS_PER_VALUE = 6e-9
#: The version of ``_skhybrid_native``'s ``moment_sums`` this module calls (its
#: ``NATIVE_VERSION``: its arguments and results).
_NATIVE_VERSION = 1


def _native_moment_sums():
    """The C extension's ``moment_sums``, or None where it is not installed or not
    this version's.

    ``_skhybrid_native`` (``native/_skhybrid_native.c``) is built when skhybrid is
    installed, where a C compiler is found (setup.py; the install succeeds without
    one). It is a top-level module, found beside an installed skhybrid or a checkout
    run from its own directory; one of another version or of another
    ``FIXED_POINT_BITS`` is not used (the tests check that the one in use was built
    from the checkout's source). Its ``moment_sums`` takes the arguments and gives the
    results of numba's :func:`~skhybrid.utils._kernels.moment_sums`, the same integers
    bit for bit.
    """
    try:
        import _skhybrid_native
    except ImportError:
        return None
    if (getattr(_skhybrid_native, "VERSION", None) != _NATIVE_VERSION
            or getattr(_skhybrid_native, "FIXED_POINT_BITS", None) != FIXED_POINT_BITS):
        return None
    return _skhybrid_native.moment_sums


#: The C extension's moment sums (None without it): loaded with this module, in about a
#: millisecond, so that no fit waits for numba.
_NATIVE_MOMENTS = _native_moment_sums()
#: ``native``: whether :func:`fixed_point_moments` sums by the C extension (where it is
#: installed); ``compiled``: whether the other sums go to numba's kernels (see
#: :func:`_compiled`), and ``numpy_seconds`` what numpy's passes have cost so far.
_tier = {"native": _NATIVE_MOMENTS is not None, "compiled": False, "numpy_seconds": 0.0}


def _compiled(n_rows, n_features, seconds_per_value=_NUMPY_SECONDS_PER_VALUE):
    """Whether to sum ``n_rows`` rows by the compiled kernels (else by numpy's passes).

    Both give the same integers, bit for bit (the same float64 operations per value,
    exact integer sums). The first compiled call in a process imports numba and loads
    its machine code (0.4 s) or compiles it (0.75 s on a cold cache): a process that
    fits a few inputs, a CLI call or a joblib worker, never pays that. Any input goes
    to numpy while numpy's cost so far, plus this input's at ``seconds_per_value`` (an
    upper estimate), stays under about that load: a rent-or-buy rule that knows each
    job's size, at most about twice the better choice in hindsight; a first fit is
    never slower than the load (an input whose numpy passes would cost more goes to the
    kernels at once). Small inputs count as large ones do: a process of many small
    fits loads the kernels too once their passes have cost it about the load (the
    default fit of 1e3 values: 20 us of numpy's passes, about 20,000 fits, 2 s of
    fitting), and then saves most of that on every later fit (a compiled call costs
    about 2 us). Once loaded, the kernels sum every input. Where the C extension is
    installed, the hybrid mean's moment sums never come here (:func:`fixed_point_moments`
    sums them by it from the first fit).
    """
    estimate = n_rows * n_features * seconds_per_value
    if _tier["compiled"] or _tier["numpy_seconds"] + estimate >= _NUMPY_SECONDS_BEFORE_COMPILED:
        _tier["compiled"] = True
        return True
    return False


class _NumpyTimer:
    """Adds a numpy path's seconds to the process's total (see :func:`_compiled`)."""

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc_info):
        _tier["numpy_seconds"] += time.perf_counter() - self.start


class _NumpyCodes:
    """numpy's passes for the fixed-point codes of blocks of rows, with their column sums.

    Each value's :func:`~skhybrid.utils._kernels.fixed_point_code` (and, with
    ``squares``, its squared distance's code, :func:`square_codes_of`) by the same
    float64 operations as the compiled kernels (clip, subtract, multiply, round half to
    even; for squares, from the codes: subtract, square, multiply, round), on one flat
    scratch array per block. A block of rows is processed flat, against the
    per-feature constants repeated along it (or scalars when every feature has the
    same ones): numpy then runs each pass as one contiguous loop, where broadcasting
    one constant per feature over rows runs a loop of ``n_features`` values per row
    (10x slower at 3 features). A block's column sums are float64 sums: the codes are
    integers and every partial sum stays below 2**53 (at most 2**16 codes of at most
    2**32), so they are exact in any order; :meth:`code_sums` returns them as int64,
    and the callers add blocks in int64.

    Parameters
    ----------
    n_rows : int
        The rows to be coded (blocks have at most :attr:`rows` of them).
    lower, upper, scale : ndarray of shape (n_features,)
    centre : ndarray of shape (n_features,) or None
        The midpoint, for squared distances of other rows to it (:meth:`centred_squares`).
    squares : bool, default=False
        Whether blocks will be asked for their square codes.
    """

    def __init__(self, n_rows, lower, upper, scale, centre=None, squares=False):
        n_features = lower.shape[0]
        # Half the block with square codes: both scratch arrays are then in use.
        block_values = _NUMPY_BLOCK_VALUES // (2 if squares else 1)
        self.rows = max(1, min(n_rows, block_values // n_features))
        constants = (lower, upper, scale) + (() if centre is None else (centre,))
        alike = n_features == 1 or all(float(values.min()) == float(values.max())
                                       for values in constants)
        size = self.rows * n_features
        # Scalars when every feature has the same constants (bounds given as scalars).
        repeated = [float(values[0]) if alike else np.tile(values, self.rows)
                    for values in constants]
        self._constants = repeated[:3]
        self._centre = repeated[3] if centre is not None else None
        self._scratch = np.empty(size)
        self._square_scratch = np.empty(size) if squares else None
        self._alike = alike
        # Every lower bound 0.0 (counts, amounts, salaries): no subtraction pass.
        self._from_zero = alike and repeated[0] == 0.0

    def blocks(self, n_rows):
        """Row slices of at most :attr:`rows` rows."""
        return [slice(start, start + self.rows) for start in range(0, n_rows, self.rows)]

    def _cut(self, constants, size):
        return constants if self._alike else [values[:size] for values in constants]

    def codes(self, block, squares=False):
        """The codes of a block of at most :attr:`rows` rows, shape (rows, n_features)
        (a view of the scratch array, overwritten by the next block), and with
        ``squares`` the square codes (another; else None)."""
        n_rows, n_features = block.shape
        size = n_rows * n_features
        flat = np.ravel(block)  # no copy for rows of a C-contiguous array
        codes = self._scratch[:size]
        lower, upper, scale = self._cut(self._constants, size)
        flat.clip(lower, upper, out=codes)  # np.clip's own checks cost more at 1e3 values
        if not self._from_zero:  # x - 0.0 is x: the pass is skipped, the codes the same
            codes -= lower
        codes *= scale
        np.rint(codes, out=codes)
        square_codes = None
        if squares:
            square_codes = square_codes_of(codes, out=self._square_scratch[:size])
            square_codes = square_codes.reshape(n_rows, n_features)
        return codes.reshape(n_rows, n_features), square_codes

    def column_sums(self, rows):
        """Each column's sum of a block's rows, in float64: exact for codes."""
        return float_column_sums(rows)

    def code_sums(self, codes):
        """Each column's exact sum of a block's codes, as int64.

        One column by ``einsum`` (a vectorized loop of its own: 3.6 us for 2**15 codes,
        numpy's pairwise sum 5.3 us, BLAS's dot 22 us once it wakes its threads for so
        long a vector between numpy's passes): codes are integers whose every partial
        sum stays below 2**53, exact in any order.
        """
        if codes.shape[1] == 1:
            sums = np.einsum("ij->j", codes)
        else:
            sums = self.column_sums(codes)
        return sums.astype(np.int64)

    def centred_squares(self, rows):
        """``(rows - centre)**2`` in place, for a block's other rows (C-contiguous)."""
        size = rows.size
        flat = rows.reshape(size)
        flat -= self._centre if self._alike else self._centre[:size]
        return np.square(rows, out=rows)


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
    return lower, upper, np.divide(_SCALE, width)  # width has shape (n_features,)


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
    (already private reports), or for integers whose partial sums stay below 2**53
    (a block of fixed-point codes, :class:`_NumpyCodes`: exact in any order). One column
    is contiguous and keeps numpy's own (pairwise) sum.

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
    return labels


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
    if not _compiled(*values.shape):
        with _NumpyTimer():
            # Each block's float sums are exact (see _NumpyCodes); blocks add in int64.
            coder = _NumpyCodes(values.shape[0], lower, upper, scale)
            block_check = _numpy_block_check(values, non_finite is not None)
            if block_check is None:
                non_finite[0] += 1
                return sums
            for rows in coder.blocks(values.shape[0]):
                if block_check and not all_finite(values[rows]):
                    non_finite[0] += 1
                    return sums
                codes, _ = coder.codes(values[rows])
                if labels is None:
                    sums[0] += coder.code_sums(codes)
                    continue
                block_labels = labels[rows]
                kept = block_labels < n_groups
                if block_labels.dtype.kind == "i":
                    kept &= block_labels >= 0
                for feature in range(values.shape[1]):
                    sums[:, feature] += np.bincount(block_labels[kept],
                                                    weights=codes[kept, feature],
                                                    minlength=n_groups).astype(np.int64)
        return sums
    from ._kernels import fixed_point_code_sums  # numba: imported at first use

    for rows, columns in _feature_major(values):
        fixed_point_code_sums(columns, lower, upper, scale,
                              None if labels is None else labels[rows], sums, non_finite)
    return sums


def _numpy_block_check(values, check):
    """How numpy's passes test ``values``' finiteness (``check``): None when the whole
    input, tested at once, is not finite; else whether to test each block before its
    codes (above :data:`_WHOLE_CHECK_VALUES`: the block is then in cache for them)."""
    if not check:
        return False
    if values.size > _WHOLE_CHECK_VALUES:
        return True
    return False if all_finite(values) else None


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
    :func:`fixed_point_moments`' square codes is ``[0, ((upper - lower) / 2)**2]``
    (:func:`square_codes_of`).
    """
    return (lower + upper) / 2.0, ((upper - lower) / 2.0) ** 2


def square_codes_of(codes, out=None):
    """The codes of squared distances to the midpoint, from the values' codes.

    ``rint((k - 2**(B-1))**2 * 2**(2-B))`` for a value's code ``k``
    (:func:`~skhybrid.utils._kernels.fixed_point_code`, ``B = FIXED_POINT_BITS``): with
    ``k ~ (clip(x) - lower) * 2**B / w`` (``w = upper - lower``), ``k - 2**(B-1) ~
    (clip(x) - mid) * 2**B / w``, so the result is ``(clip(x) - mid)**2`` on the grid
    of ``[0, (w / 2)**2]`` in ``2**B`` steps (:func:`square_grid`), for the clipped
    value as its code represents it (to within ``w / 2**(B+1)``).

    Every result is an integer in ``[0, 2**B]``, whatever the bounds: ``k`` is an
    integer in ``[0, 2**B]``, so ``k - 2**(B-1)`` is exact and at most ``2**(B-1)`` in
    magnitude; its square rounds monotonically, hence to at most ``2**(2B-2)``
    (a float); the product by a power of two is exact. One user then moves a sum of
    these codes by at most ``2**B``, exactly, as for the values' codes, and the
    compiled kernels compute the same floats (the same operations,
    :func:`~skhybrid.utils._kernels._moment_block`).

    Parameters
    ----------
    codes : ndarray of float64
        Values' codes (integers in ``[0, 2**B]``).
    out : ndarray of float64, default=None
        Where to write the result (may be ``codes`` itself); a new array when None.

    Returns
    -------
    square_codes : ndarray of float64 of the shape of ``codes``
    """
    out = np.subtract(codes, _HALF_GRID, out=out)
    np.square(out, out=out)
    out *= _SQUARE_STEP
    return np.rint(out, out=out)


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
    (:func:`square_grid`; from their codes, :func:`square_codes_of`), and the lm users'
    reports as floats. No sum ever includes a row of the other group (never
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
        Also whether every value (of every row) is finite, element by element. The
        compiled kernel tests each value in the pass that codes it, which spares a
        caller's validation its own pass over the input (:func:`finite_float_rows`'s
        sum: more than half of a fit's time at 1e7 values); numpy's passes test it
        by scikit-learn's sum test (of the whole input, or of each block before its
        codes: :func:`_numpy_block_check`), then value by value if a sum is not finite.

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
    if _tier["native"]:
        kernel = _NATIVE_MOMENTS
    elif not _compiled(*values.shape):
        with _NumpyTimer():
            return _numpy_moments(values, lower, upper, scale, centre, in_fixed_point,
                                  squares, others, other_squares, check_finite)
    else:
        from ._kernels import moment_sums as kernel  # numba: imported at first use
    if centre is None:  # unread without squares; the kernel's types stay the same
        centre = lower
    code_sums = np.zeros(n_features, dtype=np.int64)
    square_code_sums = np.zeros(n_features, dtype=np.int64) if squares else None
    float_sums = np.zeros(n_features) if others else None
    float_square_sums = np.zeros(n_features) if other_squares else None
    non_finite = np.zeros(1, dtype=np.int64) if check_finite else None
    for rows, columns in _feature_major(values):
        kernel(columns, lower, upper, scale, centre,
               None if in_fixed_point is None else in_fixed_point[rows],
               code_sums, square_code_sums, float_sums, float_square_sums, non_finite)
    return MomentSums(code_sums, square_code_sums, float_sums, float_square_sums,
                      non_finite is None or int(non_finite[0]) == 0)


def _numpy_moments(values, lower, upper, scale, centre, in_fixed_point, squares, others,
                   other_squares, check_finite=False):
    """:func:`fixed_point_moments` by numpy passes (the same float64 operations).

    Block by block (:class:`_NumpyCodes`): each block's float sums of codes are exact,
    and the blocks' are added in int64. ``check_finite`` tests every row before any
    code (no NaN is ever cast; :func:`_numpy_block_check`).
    """
    n_features = values.shape[1]
    code_sums = np.zeros(n_features, dtype=np.int64)
    square_code_sums = np.zeros(n_features, dtype=np.int64) if squares else None
    float_sums = np.zeros(n_features) if others else None
    float_square_sums = np.zeros(n_features) if other_squares else None
    block_check = _numpy_block_check(values, check_finite)
    if block_check is None:
        return MomentSums(code_sums, square_code_sums, float_sums, float_square_sums,
                          finite=False)
    # The midpoint only for the other rows' squares (the square codes need none).
    coder = _NumpyCodes(values.shape[0], lower, upper, scale,
                        centre if other_squares else None, squares)
    for rows in coder.blocks(values.shape[0]):
        block = values[rows]
        if block_check and not all_finite(block):
            return MomentSums(code_sums, square_code_sums, float_sums, float_square_sums,
                              finite=False)
        mask = None if in_fixed_point is None else in_fixed_point[rows]
        # np.compress: the rows of a mask, 2.5-6x quicker than boolean indexing.
        coded = block if mask is None else np.compress(mask, block, axis=0)
        codes, square_codes = coder.codes(coded, squares)
        code_sums += coder.code_sums(codes)
        if squares:
            square_code_sums += coder.code_sums(square_codes)
        if others:
            reports = np.compress(~mask, block, axis=0)  # a copy: centred in place below
            float_sums += coder.column_sums(reports)
            if other_squares:
                float_square_sums += coder.column_sums(coder.centred_squares(reports))
    return MomentSums(code_sums, square_code_sums, float_sums, float_square_sums)


#: Values per block of numpy's passes (:class:`_NumpyCodes`; half that with square
#: codes): a block and its scratch stay in a core's 1 MiB of L2 between the passes.
#: Measured on one feature, against 2**15: the mean alone 5-12% quicker at 1e5 to 1e7
#: values; with the square codes, a whole block of 2**16 was 35% slower at 1e6.
_NUMPY_BLOCK_VALUES = 2**16


#: Up to this many values, numpy's passes test the finiteness of the whole input in one
#: sum (:func:`all_finite`); above, block by block, each before its codes, while it is
#: in cache for them: one read of the input from memory, not two. Measured with one
#: feature: at 1e6 values (in this machine's 32 MiB L3) the blocks' sums were 6% slower
#: than one; at 1e7 values (80 MB, read from memory) the fit 17% quicker by blocks
#: (12.9 to 10.7 ms).
_WHOLE_CHECK_VALUES = 2**21


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
