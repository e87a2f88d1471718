"""Validation of per-sample privacy metadata, privacy parameters and clipping bounds.

Every estimator calls these in ``fit``; they never modify their inputs in place.
"""

import math
import numbers

import numpy as np
import pandas as pd

from ..exceptions import PrivacyLeakWarning, warn_user
from ._trust_labels import _TRUST_EXPECTED, codes_tcm_mask, labels_tcm_mask, pandas_column


def _as_1d(values, name, n_samples):
    _refuse_column_name(values, name)
    if isinstance(values, (list, tuple)):
        # Keep each entry's own type: np.asarray would turn [True, 1.0] into floats and
        # [1.0, ""] into strings, hiding which entry is bad.
        array = np.empty(len(values), dtype=object)
        array[:] = values
    else:
        array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional; got an array of shape {array.shape}")
    if n_samples is not None and array.shape[0] != n_samples:
        raise ValueError(
            f"{name} must have one entry per sample: expected {n_samples}, got {array.shape[0]}"
        )
    return array


def _refuse_column_name(values, name):
    """A string is not per-sample metadata: say so, rather than report its shape ``()``."""
    if isinstance(values, (str, bytes)):
        raise ValueError(
            f"{name} must hold one entry per sample (an array-like of shape (n_samples,)); "
            f"got the string {values!r}. A column name is not accepted: pass the column "
            f"itself, e.g. {name}=df[{values!r}] (and drop it from X)"
        )


def _first_bad(bad, array, name, expected):
    index = int(np.flatnonzero(bad)[0])
    value = array[index]
    value = value.item() if isinstance(value, np.generic) else value  # no numpy repr
    raise ValueError(f"{name} must be {expected}; got {value!r} at index {index}")


def _filled(n, value, dtype=np.float64):
    """``np.full(n, value, dtype)`` without its Python wrapper (a fit's few small arrays)."""
    array = np.empty(n, dtype)
    array.fill(value)
    return array


def check_trust_group(trust_group, n_samples):
    """Validate ``trust_group`` metadata and return a boolean mask of tcm users.

    Parameters
    ----------
    trust_group : array-like of shape (n_samples,) or None
        ``"tcm"`` / ``"lm"`` strings (case-insensitive), booleans (True = tcm) or the
        integers 1 / 0 (1 = tcm, as pandas often reads a boolean column); numpy arrays,
        lists and pandas Series of any dtype (string, object, category, bool, int).
        ``None`` means every sample is a tcm user.
    n_samples : int
        The number of samples the metadata must describe.

    Returns
    -------
    is_tcm : ndarray of shape (n_samples,), dtype=bool
        A new array; True for trusted-curator-model users.

    Raises
    ------
    ValueError
        Wrong length or shape, or an entry that is none of the above (None, NaN, other
        numbers or strings); the message names the first bad index and value.
    """
    if trust_group is None:
        return _filled(n_samples, True, bool)
    _refuse_column_name(trust_group, "trust_group")
    column = pandas_column(trust_group)
    if column is not None:
        _as_1d(np.empty(len(column)), "trust_group", n_samples)  # the length
        if isinstance(column.dtype, pd.CategoricalDtype):
            return codes_tcm_mask(np.asarray(column.cat.codes), list(column.cat.categories),
                                  column)
        if column.dtype.kind in "biu":
            missing = column.isna().to_numpy()
            if missing.any():  # pd.NA of a "boolean" or "Int64" column
                _first_bad(missing, column.to_numpy(dtype=object), "trust_group",
                           _TRUST_EXPECTED)
            trust_group = column.to_numpy(dtype=getattr(column.dtype, "numpy_dtype",
                                                        column.dtype))
        elif column.dtype != object:  # pandas' string dtypes
            return labels_tcm_mask(column)
        else:
            trust_group = column.to_numpy()
    array = _as_1d(trust_group, "trust_group", n_samples)
    if array.dtype.kind == "b":
        return array.astype(bool, copy=True)
    if array.dtype.kind in "iu":
        bad = (array != 0) & (array != 1)
        if bad.any():
            _first_bad(bad, array, "trust_group", _TRUST_EXPECTED)
        return array == 1
    if array.dtype.kind not in "OUST":
        _first_bad(np.ones(array.shape[0], dtype=bool), array, "trust_group", _TRUST_EXPECTED)
    return labels_tcm_mask(array)


def check_epsilon(epsilon, n_samples=None, *, allow_inf=False, name="epsilon"):
    """Validate privacy levels: finite and > 0, or ``np.inf`` where public data is allowed.

    Parameters
    ----------
    epsilon : float or array-like of shape (n_samples,)
        One privacy level, or one per sample.
    n_samples : int or None, default=None
        When given, ``epsilon`` must be array-like with this many entries.
    allow_inf : bool, default=False
        Whether ``np.inf`` (a public user, no noise) is accepted.
    name : str, default="epsilon"
        The name used in error messages.

    Returns
    -------
    epsilon : float or ndarray of float64
        A float for a scalar input, else a read-only float64 array (a view of
        ``epsilon`` itself when it already is one).

    Raises
    ------
    ValueError
        For 0, negative, NaN, booleans, strings, ``np.inf`` where not allowed, or a
        wrong length; the message names the first bad index and value.
    """
    if type(epsilon) is float and n_samples is None and MIN_EPSILON <= epsilon <= MAX_EPSILON:
        return epsilon  # the usual case, checked as below without building the message
    expected = f"> 0, in [{MIN_EPSILON:g}, {MAX_EPSILON:g}]" + (
        " or np.inf (public data)" if allow_inf else ""
    )
    if n_samples is None and np.ndim(epsilon) == 0:
        value = epsilon.item() if isinstance(epsilon, np.generic) else epsilon
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{name} must be a real number {expected}; got {epsilon!r}")
        value = float(value)
        # The scalar form of _out_of_range (NaN fails both comparisons).
        if not (MIN_EPSILON <= value <= MAX_EPSILON or (allow_inf and value == math.inf)):
            hint = "" if allow_inf or not np.isinf(value) else (
                "; this estimator does not accept public (epsilon = inf) users"
            )
            raise ValueError(f"{name} must be {expected}; got {epsilon!r}{hint}")
        return value
    array = _as_1d(epsilon, name, n_samples)
    if array.dtype.kind == "b":
        raise ValueError(f"{name} must be numeric, not boolean; got {array[0]!r} at index 0")
    if array.dtype.kind == "O":
        not_real = np.fromiter(
            (isinstance(v, bool) or not isinstance(v, numbers.Real) for v in array.tolist()),
            dtype=bool,
            count=array.shape[0],
        )
        if not_real.any():
            _first_bad(not_real, array, name, "a real number " + expected)
    elif array.dtype.kind not in "iuf":
        _first_bad(np.ones(array.shape[0], dtype=bool), array, name, "a real number " + expected)
    # float64 input is used as it is, through a read-only view: a per-user copy would
    # be as large as X for one feature (the estimators only read the levels).
    values = array.astype(np.float64, copy=False).view()
    values.flags.writeable = False
    if not _extremes_in_range(values):  # else every level is: no per-user mask to build
        bad = _out_of_range(values, allow_inf)
        if bad.any():
            _first_bad(bad, array, name, expected)
    return values


#: The privacy levels accepted: beyond them, exp(epsilon), squared noise scales and
#: the weights' programs overflow or underflow float64. Public data is ``np.inf``.
MIN_EPSILON = 1e-100
MAX_EPSILON = 1e100


def _extremes_in_range(values):
    """Whether the smallest and largest levels are in ``[MIN_EPSILON, MAX_EPSILON]``: then
    every level is (two reductions, a third of :func:`_out_of_range`'s time at 1e7
    levels). False also for a NaN (numpy's extremes propagate it; every comparison with
    it is False), for public users' inf and for no levels: :func:`_out_of_range` decides."""
    if values.size == 0:
        return False
    return MIN_EPSILON <= float(np.min(values)) and float(np.max(values)) <= MAX_EPSILON


def _out_of_range(values, allow_inf):
    """Privacy levels outside ``[MIN_EPSILON, MAX_EPSILON]`` (and not an allowed inf)."""
    # In place on one boolean array: this runs over every user of every fit.
    in_range = np.asarray(values >= MIN_EPSILON)
    in_range &= values <= MAX_EPSILON
    if allow_inf:
        in_range |= values == np.inf
    return np.logical_not(in_range, out=in_range)


def check_sample_epsilon(epsilon, default, n_samples, *, allow_inf=False):
    """Per-sample privacy levels from the metadata, or the constructor's ``epsilon`` for all.

    Parameters
    ----------
    epsilon : array-like of shape (n_samples,) or None
        The ``epsilon`` metadata passed to ``fit``.
    default : float
        The estimator's ``epsilon`` parameter.
    n_samples : int
    allow_inf : bool, default=False

    Returns
    -------
    epsilon : ndarray of shape (n_samples,)
    """
    if epsilon is None:
        value = check_epsilon(default, allow_inf=allow_inf)
        return np.full(n_samples, value)
    return check_epsilon(epsilon, n_samples, allow_inf=allow_inf)


def _is_pair(value):
    return isinstance(value, (tuple, list)) and len(value) == 2


def _per_feature_pairs(bounds, n_features):
    """``bounds`` as ``(lower, upper)``, accepting a list of per-feature pairs too.

    The rule (documented in "Several features" in docs/user_guide/choosing.rst):

    - a tuple is always ``(lower, upper)``, each a scalar or one entry per feature (the
      documented form, whatever its entries look like);
    - a list (or a 2-d array) of ``n_features`` pairs, ``[(0, 200_000), (0, 120)]``, is
      one ``(lower, upper)`` pair per feature;
    - with two features a list of two pairs ``[(a, b), (c, d)]`` could also mean
      ``lower = (a, b), upper = (c, d)``: it is read the one way that has lower < upper
      for every feature, and refused when both ways do and differ (clipping every user
      to the wrong box would be silent).
    """
    if isinstance(bounds, tuple):
        return bounds
    if isinstance(bounds, np.ndarray):
        if bounds.ndim != 2 or bounds.shape != (n_features, 2):
            return bounds
        bounds = [tuple(row) for row in bounds.tolist()]
    if not (isinstance(bounds, list) and len(bounds) == n_features and n_features > 0
            and all(_is_pair(pair) for pair in bounds)):
        return bounds
    pairs = (tuple(pair[0] for pair in bounds), tuple(pair[1] for pair in bounds))
    if n_features != 2:
        return pairs
    try:
        as_pairs = np.asarray(pairs, dtype=np.float64)
        as_sides = np.asarray(bounds, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return bounds
    pairs_valid = bool(np.all(as_pairs[0] < as_pairs[1]))
    sides_valid = bool(np.all(as_sides[0] < as_sides[1]))
    if pairs_valid and sides_valid and not np.array_equal(as_pairs, as_sides):
        lower, upper = (list(map(float, side)) for side in as_pairs)
        raise ValueError(
            f"bounds={bounds!r} is ambiguous for 2 features: a list of two pairs reads as "
            f"one (lower, upper) pair per feature and as (lower, upper) arrays. Pass a "
            f"tuple (lower, upper): bounds=({lower!r}, {upper!r}) for the per-feature pairs, "
            f"bounds=({list(map(float, as_sides[0]))!r}, {list(map(float, as_sides[1]))!r}) "
            "for the other reading"
        )
    if not (pairs_valid or sides_valid):
        raise ValueError(
            f"bounds={bounds!r} has lower >= upper for some feature however it is read: "
            "pass one (lower, upper) pair per feature, e.g. [(0, 200_000), (0, 120)], or a "
            "tuple (lower, upper) of per-feature arrays, e.g. ([0, 0], [200_000, 120])"
        )
    return pairs if pairs_valid else bounds


def check_bounds(bounds, n_features):
    """Validate data-independent clipping bounds.

    Parameters
    ----------
    bounds : tuple (lower, upper) or list of per-feature (lower, upper) pairs
        Scalars or arrays of shape (n_features,); finite with lower < upper. A list of
        ``n_features`` pairs ``[(lower_0, upper_0), ...]`` is accepted too (with two
        features, see :func:`_per_feature_pairs`).
    n_features : int

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
    """
    bounds = _per_feature_pairs(bounds, n_features)
    try:
        lower, upper = bounds
    except (TypeError, ValueError):
        raise ValueError(f"bounds must be a pair (lower, upper); got {bounds!r}") from None
    if type(lower) in _SCALAR_TYPES and type(upper) in _SCALAR_TYPES:
        # The usual (0.0, 1.0): the checks below in Python floats (the same IEEE
        # arithmetic), and on any failure the general path gives its message.
        try:
            low, high = float(lower), float(upper)
        except OverflowError:  # an int beyond float64
            low = high = 0.0
        if (-MAX_BOUND_MAGNITUDE <= low < high <= MAX_BOUND_MAGNITUDE
                and high - low >= MIN_BOUND_WIDTH):
            return _filled(n_features, low), _filled(n_features, high)
    arrays = []
    for side, value in (("lower", lower), ("upper", upper)):
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"bounds {side} must be numeric; got {value!r}") from None
        except OverflowError:  # an int beyond float64
            raise ValueError(f"bounds {side} must be finite; got {value!r}") from None
        if array.ndim > 1 or (array.ndim == 1 and array.shape[0] != n_features):
            raise ValueError(
                f"bounds {side} must be a scalar or have one entry per feature "
                f"({n_features}); got shape {array.shape}"
            )
        if not np.all(np.isfinite(array)):
            raise ValueError(f"bounds {side} must be finite; got {value!r}")
        arrays.append(np.broadcast_to(array, (n_features,)).copy())
    lower, upper = arrays
    if np.any(lower >= upper):
        index = int(np.flatnonzero(lower >= upper)[0])
        raise ValueError(
            f"bounds must satisfy lower < upper; got lower={float(lower[index])!r} >= "
            f"upper={float(upper[index])!r} for feature {index} (bounds is a tuple "
            "(lower, upper) of scalars or per-feature arrays, or a list of one (lower, "
            "upper) pair per feature)"
        )
    check_bounds_scale(lower, upper)
    return lower, upper


#: Scalar bounds checked without arrays by :func:`check_bounds` (not bool, a subclass of int).
_SCALAR_TYPES = frozenset({int, float, np.float64, np.float32, np.int64, np.int32})
#: Largest magnitude of a bound, and smallest width ``upper - lower``: squares of widths,
#: noise variances and sums over many users then stay far inside float64's range.
MAX_BOUND_MAGNITUDE = 1e100
MIN_BOUND_WIDTH = 1e-100


def check_bounds_scale(lower, upper):
    """Refuse bounds whose arithmetic would overflow or underflow float64.

    The estimators square widths (variances), divide them by tiny epsilons and counts,
    and sum them over millions of users: bounds beyond ``MAX_BOUND_MAGNITUDE`` or widths
    below ``MIN_BOUND_WIDTH`` would make those overflow to infinity or underflow to zero,
    and end in an internal error or a meaningless release. Rescale the data instead (a
    change of units is post-processing-free: scale the estimate back).

    Parameters
    ----------
    lower, upper : ndarray of shape (n_features,)
    """
    for side, values in (("lower", lower), ("upper", upper)):
        big = np.abs(values) > MAX_BOUND_MAGNITUDE
        if big.any():
            j = int(np.flatnonzero(big)[0])
            raise ValueError(
                f"bounds {side}={float(values[j])!r} (feature {j}) is beyond the supported "
                f"magnitude {MAX_BOUND_MAGNITUDE:g}; rescale the data (change its units)"
            )
    narrow = (upper - lower) < MIN_BOUND_WIDTH
    if narrow.any():
        j = int(np.flatnonzero(narrow)[0])
        raise ValueError(
            f"bounds ({float(lower[j])!r}, {float(upper[j])!r}) of feature {j} are narrower "
            f"than the supported width {MIN_BOUND_WIDTH:g}; rescale the data (change its units)"
        )


def resolve_bounds(bounds, X):
    """Validated bounds, or bounds derived from ``X`` with a :class:`PrivacyLeakWarning`.

    Deriving the bounds from the data makes them a non-private statistic of it; this
    is offered for exploration only.

    Parameters
    ----------
    bounds : tuple (lower, upper) or None
    X : ndarray of shape (n_samples, n_features)

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
    """
    n_features = X.shape[1]
    if bounds is not None:
        return check_bounds(bounds, n_features)
    warn_user(
        "bounds=None: the clipping bounds are taken from the data's minimum and maximum, "
        "which leaks information about the data and voids the privacy guarantee. Pass "
        "data-independent bounds=(lower, upper) to fit privately.",
        PrivacyLeakWarning,
    )
    lower = X.min(axis=0).astype(np.float64)
    upper = X.max(axis=0).astype(np.float64)
    # A constant feature still needs a range of positive width.
    upper = np.where(upper > lower, upper, lower + 1.0)
    check_bounds_scale(lower, upper)
    return lower, upper


def clip_to_bounds(X, lower, upper, *, out=None):
    """Clip raw values to the bounds; a new array (or ``out``), never modifies ``X`` itself
    unless ``out is X``."""
    return feature_wise(np.clip, X, lower, upper, out=out)


def masked_rows(X, rows):
    """``X[rows]`` for a boolean row mask, without numpy's n-long index array (one
    feature: a 1-d selection; several: block by block).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    rows : ndarray of bool of shape (n_samples,)

    Returns
    -------
    selected : ndarray of shape (rows.sum(), n_features)
        A new array.
    """
    if rows.dtype != bool:
        raise TypeError(f"masked_rows takes a boolean mask; got dtype {rows.dtype}")
    if X.ndim != 2:
        return X[rows]
    if X.shape[1] == 1:
        return X[:, 0][rows][:, np.newaxis]
    selected = np.empty((int(np.count_nonzero(rows)), X.shape[1]), dtype=X.dtype)
    position = 0
    step = max(1, _FEATURE_WISE_BLOCK // X.shape[1])
    for start in range(0, X.shape[0], step):
        mask = rows[start : start + step]
        count = int(np.count_nonzero(mask))
        # np.compress: 4x quicker than boolean indexing (65,536 rows of 3 features).
        np.compress(mask, X[start : start + step], axis=0,
                    out=selected[position : position + count])
        position += count
    return selected


#: Values per block of :func:`feature_wise` (512 KiB of float64: in the L2 cache).
_FEATURE_WISE_BLOCK = 2**16


def feature_wise(function, X, *parameters, out=None):
    """``function(X, *parameters, out=out)`` with one parameter value per feature.

    numpy's broadcast over a row-major ``(n, n_features)`` array runs an innermost loop
    of ``n_features`` elements (2 to 5 times slower for 2 to 5 features); here each
    cache-sized block is processed flat against the tiled parameters. Same result.

    Parameters
    ----------
    function : callable
        An elementwise numpy function taking ``out=`` (``np.clip``, ``np.subtract``).
    X : ndarray of shape (n_samples, n_features)
    *parameters : float or ndarray of shape (n_features,)
        Anything else is passed to ``function`` as it is.
    out : ndarray of shape (n_samples, n_features), default=None
        May be ``X`` itself.

    Returns
    -------
    result : ndarray of shape (n_samples, n_features)
    """
    X = np.asarray(X)
    parameters = [np.asarray(p) for p in parameters]
    n_features = X.shape[1] if X.ndim == 2 else 1
    if out is None:
        out = np.empty(X.shape, dtype=np.result_type(X, *parameters))
    per_feature = all(p.ndim <= 1 and p.size in (1, n_features) for p in parameters)
    if not (per_feature and 1 < n_features < _FEATURE_WISE_BLOCK and X.flags.c_contiguous
            and out.flags.c_contiguous and X.dtype == out.dtype):
        return function(X, *parameters, out=out)
    rows = _FEATURE_WISE_BLOCK // n_features
    tiled = [np.tile(np.broadcast_to(p.astype(out.dtype), (n_features,)), rows)
             for p in parameters]
    flat_X, flat_out = X.reshape(-1), out.reshape(-1)
    step = rows * n_features
    for start in range(0, flat_X.size, step):
        stop = min(start + step, flat_X.size)
        function(flat_X[start:stop], *(p[: stop - start] for p in tiled),
                 out=flat_out[start:stop])
    return out


def resolve_variance(variance, lower, upper, *, allow_zero=True):
    """The data variance per feature: given, or the worst case for the bounds.

    A variable in [lower, upper] has variance at most (upper - lower)**2 / 4
    (Popoviciu's inequality): that is the default, and no given value may exceed it.

    Parameters
    ----------
    variance : float, array-like of shape (n_features,) or None
    lower, upper : ndarray of shape (n_features,)
    allow_zero : bool, default=True
        Whether a zero variance (constant data) is accepted.

    Returns
    -------
    variance : ndarray of shape (n_features,)
    """
    worst = (upper - lower) ** 2 / 4.0
    if variance is None:
        return worst
    if (type(variance) is float and (0.0 <= variance if allow_zero else 0.0 < variance)
            and variance <= worst.min()):
        # The usual given variance, checked as below in Python floats (NaN fails).
        return _filled(lower.shape[0], variance)
    values = np.asarray(variance, dtype=np.float64)
    if values.ndim > 1 or (values.ndim == 1 and values.shape[0] != lower.shape[0]):
        raise ValueError(
            f"variance must be a scalar or have one entry per feature ({lower.shape[0]}); "
            f"got shape {values.shape}"
        )
    # A copy: the caller's array is never returned (nor a view of it).
    values = values.copy() if values.ndim else np.full(lower.shape, values)
    too_small = values < 0 if allow_zero else values <= 0
    if (~np.isfinite(values) | too_small | (values > worst)).any():
        low = "[0" if allow_zero else "(0"
        raise ValueError(
            f"variance must be in {low}, (upper - lower)**2 / 4] for every feature (no "
            f"variable within the bounds has more); got {variance!r}"
        )
    return values


def check_group_epsilons(epsilon, is_tcm, estimator_name, *, hint=""):
    """The one privacy level of each trust group, for estimators calibrated per group.

    Parameters
    ----------
    epsilon : float or ndarray of shape (n_samples,)
        Validated levels (a float means every user has it).
    is_tcm : ndarray of bool
    estimator_name : str
        Named in the error message.
    hint : str, default=""
        Appended to the error message (e.g. which estimator handles per-user levels).

    Returns
    -------
    epsilon_tcm, epsilon_lm : float or None
        None for an empty group.

    Raises
    ------
    ValueError
        When the levels differ within a group; names both values and the index.
    """
    if np.ndim(epsilon) == 0:
        return epsilon, epsilon
    levels = []
    for name, members in (("tcm", is_tcm), ("lm", ~is_tcm)):
        values = epsilon[members]
        different = np.flatnonzero(values != values[0]) if values.size else []
        if len(different):
            index = int(np.flatnonzero(members)[different[0]])
            raise ValueError(
                f"{estimator_name} needs one epsilon per trust group, but the {name} group "
                f"has {float(values[0])!r} and {float(epsilon[index])!r} (at index {index}); "
                f"the two groups may differ{hint}"
            )
        levels.append(float(values[0]) if values.size else None)
    return tuple(levels)
