"""The fixed-point kernels against their definitions: codes by a short numpy reference,
sums as Python integers."""

import math

import numpy as np
import pytest

from skhybrid.utils import _sums
from skhybrid.utils._sums import (
    _COPY_ROWS,
    FIXED_POINT_BITS,
    fixed_point_moments,
    fixed_point_sums,
    square_grid,
)


def _exact(codes, labels, n_groups):
    integers = codes.T.astype(np.int64)
    return np.array([[int(v) for v in integers[labels == g].sum(axis=0)]
                     for g in range(n_groups)], dtype=object)


@pytest.mark.parametrize("n_features, n_groups, label_dtype", [
    (1, 3, np.intp),
    (5, 3, np.intp),
    (3, 40, np.intp),
    (1, 1, np.int8),
    (7, 2, np.intp),
    (2, 6, np.int8),
    (2, 1, bool),
    (2, 3, np.uint16),  # converted for the kernel (uint8, int32 and int64 are read as such)
    (1, 2, np.int32),
    (1, 4, np.uint64),
])
def test_grouped_code_sums_are_the_exact_integer_sums(n_features, n_groups, label_dtype):
    # Codes at the top of the grid in more rows than float64 adds exactly (a column of
    # 2**21 codes of 2**32 passes 2**53): the sums must be the exact integers.
    rng = np.random.default_rng(0)
    n = 2**21 + 4_097
    values = np.ones((n, n_features))  # the upper bound: code 2**32
    values[::7] = rng.uniform(-0.5, 1.5, (values[::7].shape[0], n_features))
    labels = rng.integers(0, n_groups + 1, n).astype(label_dtype)  # n_groups: left out
    sums = fixed_point_sums(values, 0.0, 1.0, labels=labels, n_groups=n_groups)
    assert sums.dtype == np.int64
    codes = _numpy_codes(values, np.zeros(n_features), np.ones(n_features))
    np.testing.assert_array_equal(sums.astype(object), _exact(codes, labels, n_groups))


def _square_codes(codes):
    """The definition: a code's squared distance to the grid's middle, on a grid of
    2**B steps, rint((k - 2**(B-1))**2 * 2**(2-B))."""
    return np.rint((codes - 2.0 ** (FIXED_POINT_BITS - 1)) ** 2 * 2.0 ** (2 - FIXED_POINT_BITS))


def _numpy_codes(values, lower, upper):
    """The definition, in numpy: rint((clip(x) - lower) * (2**B / width)), feature-major."""
    scale = 2.0**FIXED_POINT_BITS / (upper - lower)
    return np.rint((np.clip(values, lower, upper) - lower) * scale).T


@pytest.mark.parametrize("order", ["C", "F", "strided"])
@pytest.mark.parametrize("n_groups", [1, 2, 4])  # two kernels' paths: <= 2 groups, more
def test_compiled_codes_and_sums_equal_numpy_on_the_definition(order, n_groups):
    """The compiled pass gives numpy's codes bit for bit (bounds far from zero, narrow
    and wide, values beyond the bounds and infinite), and their exact grouped sums;
    labels outside [0, n_groups) are left out, never written. Row-major and strided
    arrays are copied feature-major block by block: more rows than one such block."""
    rng = np.random.default_rng(5)
    n = _COPY_ROWS + 9_000  # more than one block of the kernels and of the copies
    lower = np.array([0.0, -1e9, 2.0**52, -3e-7, 1e300])
    upper = np.array([1.0, 1e9, 2.0**52 + 1, 5e-7, 1.5e300])
    width = upper - lower
    values = lower + rng.uniform(-0.2, 1.2, (n, 5)) * width
    values[::97] = np.inf
    values[::89] = -np.inf
    values[::13] = lower
    values[::11] = upper
    if order == "strided":
        values = np.repeat(values, 2, axis=0)[::2]
    else:
        values = np.asarray(values, order=order)
    expected = _numpy_codes(values, lower, upper)
    labels = rng.integers(-2, n_groups + 2, n).astype(np.int8)  # some outside [0, n_groups)
    sums = fixed_point_sums(values, lower, upper, labels=labels, n_groups=n_groups)
    integers = expected.T.astype(np.int64).astype(object)
    for group in range(n_groups):
        assert list(sums[group]) == list(integers[labels == group].sum(axis=0))
    whole = fixed_point_sums(values, lower, upper)
    assert list(whole[0]) == list(integers.sum(axis=0))


@pytest.mark.parametrize("n_features", [1, 3])
def test_fixed_point_sums_past_2_53_are_exact(n_features):
    """Sums of codes past 2**53 (where float64 no longer holds every integer) are the
    exact integer sums, with and without labels, and in the fused pass with float sums."""
    rng = np.random.default_rng(11)
    n = 2**21 + 2**20 + 4_097
    values = rng.uniform(0.5, 1.5, (n, n_features))  # codes in [2**31, 2**32]
    lower, upper = np.zeros(n_features), np.ones(n_features)
    codes = _numpy_codes(values, lower, upper).astype(np.int64)
    assert codes.sum(axis=1).min() > 2**53
    np.testing.assert_array_equal(fixed_point_sums(values, lower, upper)[0],
                                  codes.sum(axis=1))
    labels = rng.random(n) < 0.4
    np.testing.assert_array_equal(
        fixed_point_sums(values, lower, upper, labels=labels, n_groups=2),
        [codes[:, ~labels].sum(axis=1), codes[:, labels].sum(axis=1)])
    code_sums = fixed_point_moments(values, lower, upper, labels, others=True).codes
    np.testing.assert_array_equal(code_sums, codes[:, labels].sum(axis=1))


def test_codes_stay_on_the_grid_for_any_legal_bounds():
    """Values at, near and beyond the bounds map into [0, 2**B] for bounds of every size
    and offset (including far from zero), without a final clip."""
    rng = np.random.default_rng(11)
    top = 2.0**FIXED_POINT_BITS
    for _ in range(2000):
        lower = rng.choice([-1, 1]) * 10.0 ** rng.uniform(-300, 300)
        with np.errstate(over="ignore"):
            width = 10.0 ** rng.uniform(-300, 300) * abs(lower) if rng.random() < 0.5 else (
                10.0 ** rng.uniform(-10, 10))
            upper = lower + width
        if not (np.isfinite(upper) and upper > lower):
            continue
        with np.errstate(over="ignore"):  # beyond the bounds may overflow to inf: clipped
            values = np.array([[lower], [upper], [np.nextafter(upper, -np.inf)],
                               [np.nextafter(lower, np.inf)], [upper + abs(upper)],
                               [lower - abs(lower) - 1.0], [lower / 2 + upper / 2]])
            # Each row in a group of its own: the group's sum is the row's code.
            codes = fixed_point_sums(values, np.array([lower]), np.array([upper]),
                                     labels=np.arange(7), n_groups=7)[:, 0]
        assert codes.min() >= 0 and codes.max() <= top, (lower, upper, codes)
        assert codes[0] == 0 and codes[1] == top


@pytest.mark.parametrize("n_features", [1, 3])
def test_fixed_point_moments_split_the_rows_between_codes_and_floats(n_features):
    """The coded rows' exact sums equal fixed_point_sums of those rows; the float sums
    are the other rows' values only (a huge coded value never reaches them), within the
    rounding of a float sum."""
    rng = np.random.default_rng(8)
    n = 10_000  # more than one block
    values = rng.normal(0.5, 1.0, size=(n, n_features))
    coded = rng.random(n) < 0.3
    values[np.flatnonzero(coded)[:3]] = 1e300  # raw tcm values far outside the bounds
    lower, upper = np.full(n_features, -1.0), np.full(n_features, 2.0)
    sums = fixed_point_moments(values, lower, upper, coded, others=True)
    np.testing.assert_array_equal(sums.codes, fixed_point_sums(values[coded], lower, upper)[0])
    np.testing.assert_allclose(sums.others, values[~coded].sum(axis=0), rtol=1e-12, atol=1e-9)
    with pytest.raises(ValueError, match="booleans"):
        fixed_point_moments(values, lower, upper, coded.astype(int))


@pytest.mark.parametrize("n_features", [1, 3])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_fixed_point_moments_find_every_non_finite_value_when_asked(n_features, bad):
    """check_finite tests every value of every row, coded or not (a tcm_only fit reads no
    lm row's value, yet validation must see them), in blocks past the first: one
    non-finite value anywhere gives finite=False. Finite values whose sum overflows
    (scikit-learn's quick test fails on them) are finite; the sums asked for are those
    of the same call without the check."""
    rng = np.random.default_rng(3)
    n = 3 * _COPY_ROWS // 2 + 5  # a row-major input of several features: copied in blocks
    values = rng.uniform(-1.0, 2.0, (n, n_features))
    coded = rng.random(n) < 0.5
    lower, upper = np.zeros(n_features), np.ones(n_features)
    for others in (False, True):
        plain = fixed_point_moments(values, lower, upper, coded, squares=True, others=others)
        checked = fixed_point_moments(values, lower, upper, coded, squares=True,
                                      others=others, check_finite=True)
        assert plain.finite and checked.finite
        for name in ("codes", "square_codes", "others"):
            np.testing.assert_array_equal(getattr(checked, name), getattr(plain, name))
    huge = values.copy()
    huge[: n // 2, -1] = 1e308  # finite; their float sum overflows
    assert fixed_point_moments(huge, lower, upper, coded, check_finite=True).finite
    for row in (0, n - 1, int(np.flatnonzero(~coded)[-1]), int(np.flatnonzero(coded)[-1])):
        for in_fixed_point in (coded, None):
            broken = values.copy()
            broken[row, n_features - 1] = bad
            sums = fixed_point_moments(broken, lower, upper, in_fixed_point, check_finite=True)
            assert not sums.finite
            # Without the check nothing is tested (the caller validated the input; a
            # NaN's code is meaningless, and numpy says so when it casts it).
            with np.errstate(invalid="ignore"):
                assert fixed_point_moments(broken, lower, upper, in_fixed_point).finite


@pytest.mark.parametrize("n_groups", [None, 2, 5])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_fixed_point_sums_count_non_finite_values_when_asked(n_groups, bad):
    """fixed_point_sums' non_finite counts NaN and infinities of every row, labelled out
    ones too (the caller's validation must see them), past the first block; nothing
    for finite values, whose sums are those of the call without the check."""
    rng = np.random.default_rng(5)
    n = 3 * _COPY_ROWS // 2 + 5
    values = rng.uniform(-1.0, 2.0, (n, 3))
    kwargs = {} if n_groups is None else {
        "labels": rng.integers(0, n_groups + 1, n), "n_groups": n_groups}
    count = np.zeros(1, dtype=np.int64)
    checked = fixed_point_sums(values, 0.0, 1.0, non_finite=count, **kwargs)
    assert count[0] == 0
    np.testing.assert_array_equal(checked, fixed_point_sums(values, 0.0, 1.0, **kwargs))
    rows = [n - 1] if n_groups is None else [
        n - 1, int(np.flatnonzero(kwargs["labels"] == n_groups)[-1])]  # a row left out
    for row in rows:
        broken = values.copy()
        broken[row, 2] = bad
        count[0] = 0
        with np.errstate(invalid="ignore"):  # numpy's casts of the meaningless codes
            fixed_point_sums(broken, 0.0, 1.0, non_finite=count, **kwargs)
        assert count[0] > 0


def test_bounds_are_one_per_feature_before_any_compiled_pass():
    """Scalar bounds broadcast; bounds of another length raise instead of being read
    past their end (the kernels do not check bounds)."""
    values = np.random.default_rng(2).uniform(0, 1, (100, 3))
    lower, upper = np.zeros(3), np.ones(3)
    np.testing.assert_array_equal(fixed_point_sums(values, 0.0, 1.0),
                                  fixed_point_sums(values, lower, upper))
    with pytest.raises(ValueError):
        fixed_point_sums(values, np.zeros(2), np.ones(2))
    with pytest.raises(ValueError):
        fixed_point_moments(values, np.zeros(1), np.ones(4), np.ones(100, bool))


@pytest.mark.parametrize("n_features", [1, 3, 16, 17])
def test_fixed_point_range_is_the_float64_width_or_a_named_error(n_features):
    """A few features are checked in Python floats, more with numpy: both give the
    float64 widths, and refuse a width that is not positive or overflows (without a
    numpy overflow warning), naming the first bad feature."""
    import warnings

    from skhybrid.utils._sums import check_fixed_point_range

    rng = np.random.default_rng(n_features)
    lower = rng.uniform(-1e6, 1e6, n_features) * 10.0 ** rng.integers(-200, 200, n_features)
    upper = lower + np.abs(lower) * rng.uniform(1e-15, 1.0, n_features) + 1e-300
    width = check_fixed_point_range(lower, upper)
    np.testing.assert_array_equal(width, upper - lower)
    assert width.dtype == np.float64 and width.shape == (n_features,)
    bad = n_features - 1
    for low, high in [(1.0, 1.0), (2.0, 1.0), (-1e308, 1e308), (np.nan, 1.0), (0.0, np.inf)]:
        lower[bad], upper[bad] = low, high
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match=f"feature {bad} has lower="):
                check_fixed_point_range(lower, upper)


def test_remembered_widths_are_the_bounds_own_and_read_only(monkeypatch):
    """The widths of recent bounds are remembered by the bounds' bytes: the same bounds
    give the same read-only widths, other bounds (one bit apart) their own, bad bounds
    are refused every time, and the memory is emptied when full."""
    from skhybrid.utils import _sums

    monkeypatch.setattr(_sums, "_WIDTHS", {})
    monkeypatch.setattr(_sums, "_MAX_WIDTHS", 3)
    lower, upper = np.array([0.0, -2.0]), np.array([1.0, 5.0])
    width = _sums.check_fixed_point_range(lower, upper)
    assert _sums.check_fixed_point_range(lower.copy(), upper.copy()) is width
    np.testing.assert_array_equal(width, [1.0, 7.0])
    with pytest.raises(ValueError, match="read-only"):
        width[0] = 2.0
    nudged = np.array([1.0, np.nextafter(5.0, 6.0)])
    np.testing.assert_array_equal(_sums.check_fixed_point_range(lower, nudged),
                                  nudged - lower)
    for _ in range(2):
        with pytest.raises(ValueError, match="feature 1 has lower="):
            _sums.check_fixed_point_range(lower, np.array([1.0, -2.0]))
    for top in (2.0, 3.0, 4.0):
        _sums.check_fixed_point_range(lower, np.array([top, 5.0]))
    assert len(_sums._WIDTHS) <= 3
    np.testing.assert_array_equal(_sums.check_fixed_point_range(lower, upper), [1.0, 7.0])


def test_remembered_moment_grids_equal_a_fresh_computation_and_keep_their_bounds(monkeypatch):
    """fixed_point_moments' grids are remembered by the bounds' bytes and whether squares
    are asked: each equals its computation from scratch, a caller's later change of its
    bounds changes nothing remembered, bounds one bit apart get their own grid, and
    bounds whose squares overflow are refused every time they are asked for squares
    (and accepted without them)."""
    from skhybrid.utils import _sums

    def fresh(lower, upper, squares):
        lower, upper, scale = _sums._bounds_and_scale(lower, upper, lower.shape[0])
        if not squares:
            return lower, upper, scale, None
        return lower, upper, scale, _sums.square_grid(lower, upper)[0]

    def same(grid, expected):
        assert len(grid) == len(expected)
        for got, want in zip(grid, expected):
            if want is None:
                assert got is None
            else:
                np.testing.assert_array_equal(got, want)

    monkeypatch.setattr(_sums, "_GRIDS", {})
    lower, upper = np.array([0.0, -2.0]), np.array([1.0, 5.0])
    for squares in (False, True):
        first = _sums._moment_grid(lower, upper, 2, squares)
        same(first, fresh(lower, upper, squares))
        assert _sums._moment_grid(lower.copy(), upper.copy(), 2, squares) is first
    kept = _sums._moment_grid(lower, upper, 2, True)
    upper[1] = 9.0  # the caller's array, changed after the call
    same(kept, fresh(np.array([0.0, -2.0]), np.array([1.0, 5.0]), True))
    same(_sums._moment_grid(lower, upper, 2, True), fresh(lower, upper, True))
    nudged = np.array([1.0, np.nextafter(9.0, 10.0)])
    same(_sums._moment_grid(lower, nudged, 2, True), fresh(lower, nudged, True))
    huge = (np.array([-1e200]), np.array([1e200]))  # its squared half-range overflows
    same(_sums._moment_grid(*huge, 1, False), fresh(*huge, False))
    for _ in range(2):
        with pytest.raises(ValueError, match="finite width"), np.errstate(over="ignore"):
            _sums._moment_grid(*huge, 1, True)


def test_no_release_of_code_sums_over_more_users_than_int64_holds():
    """Past MAX_USERS users one fit's int64 code sums could wrap around: converting them
    refuses, in every estimator's release path, instead of releasing a wrapped sum."""
    from skhybrid import HybridMeanEstimator
    from skhybrid.mean._hybrid import _GroupStatistics
    from skhybrid.utils._sums import MAX_USERS, centred_sums

    assert (MAX_USERS + 1) * 2**FIXED_POINT_BITS == 2**63
    bounds = (np.array([0.0]), np.array([1.0]))
    ok = centred_sums(np.array([[2**62]]), *bounds, n_users=MAX_USERS)
    assert ok[0, 0] == 2.0**62 / 2**FIXED_POINT_BITS
    with pytest.raises(ValueError, match="at most 2,147,483,647 users"):
        centred_sums(np.array([[5]]), *bounds, n_users=MAX_USERS + 1)
    # Fitted once (a seeded simulation), so that its mechanism is resolved.
    estimator = HybridMeanEstimator("tcm_only", bounds=(0.0, 1.0), random_state=0).fit(
        np.zeros((2, 1)))
    statistics = _GroupStatistics(n_tcm=MAX_USERS + 1, n_lm=0, epsilon_tcm=1.0,
                                  epsilon_lm=None, tcm_sum=np.array([-2**63]),
                                  lm_sum=np.zeros(1))
    context = estimator._public_context(*bounds)
    with pytest.raises(ValueError, match="at most 2,147,483,647 users"):
        estimator._release(statistics, context, {"mean": None, "second": None},
                           np.random.default_rng(0))


@pytest.mark.parametrize("n_features", [1, 3])
@pytest.mark.parametrize("coded_share", [None, 0.3])
@pytest.mark.parametrize("same_bounds", [False, True])
def test_fixed_point_moments_are_the_definitions(n_features, coded_share, same_bounds):
    """The coded rows' codes and squared distances' codes are the exact integer sums of
    their definitions (numpy, bounds far from zero included); the other rows' float sums
    are their values' and squared distances' sums; a huge raw coded value never reaches
    the float sums. Bounds per feature, and the same for every feature."""
    rng = np.random.default_rng(12)
    n = 10_000
    lower = np.array([0.0, -1e9, 2.0**52])[:n_features]
    upper = np.array([1.0, 1e9, 2.0**52 + 4])[:n_features]
    if same_bounds:
        lower, upper = np.full(n_features, 2.0**52), np.full(n_features, 2.0**52 + 4)
    values = lower + rng.uniform(-0.2, 1.2, (n, n_features)) * (upper - lower)
    coded = None if coded_share is None else rng.random(n) < coded_share
    rows = np.ones(n, bool) if coded is None else coded
    values[np.flatnonzero(rows)[:3]] = 1e300
    sums = fixed_point_moments(values, lower, upper, coded, squares=True, others=True,
                               other_squares=True)
    clipped = np.clip(values[rows], lower, upper)
    codes = np.rint((clipped - lower) * (2.0**FIXED_POINT_BITS / (upper - lower)))
    centre, square_upper = square_grid(lower, upper)
    square_codes = _square_codes(codes)
    assert sums.codes.dtype == sums.square_codes.dtype == np.int64
    assert list(sums.codes) == list(codes.astype(np.int64).astype(object).sum(axis=0))
    assert list(sums.square_codes) == list(
        square_codes.astype(np.int64).astype(object).sum(axis=0))
    # On the grid of [0, (w/2)**2]: each square code is the clipped value's squared
    # distance to the midpoint, to within the code's quantisation (w / 2**(B+1) on a
    # distance of at most w / 2: 2 steps of 2**-B (w/2)**2, plus rounding).
    decoded = square_codes * (square_upper / 2.0**FIXED_POINT_BITS)
    error = np.abs(decoded - np.square(clipped - centre))
    assert np.all(error <= 2.5 * square_upper / 2.0**FIXED_POINT_BITS)
    if coded is None:
        assert sums.others is None and sums.other_squares is None
    else:
        others = values[~coded]
        np.testing.assert_allclose(sums.others, others.sum(axis=0), rtol=1e-12)
        np.testing.assert_allclose(sums.other_squares,
                                   np.square(others - centre).sum(axis=0), rtol=1e-12)
    plain = fixed_point_moments(values, lower, upper, coded)
    np.testing.assert_array_equal(plain.codes, sums.codes)
    assert plain.square_codes is None and plain.others is None


def test_square_codes_stay_on_their_grid_at_its_ends():
    """The codes 0 and 2**B (the bounds) give the square code 2**B, the middle code 0,
    its neighbours 4 / 2**B rounded to 0; every code in [0, 2**B] gives an integer in
    [0, 2**B] (so one user moves a sum by at most 2**B); the kernel's square codes of
    one value each (a row per value, bounds (0, 2**B): each value its own code) are
    the reference's."""
    top = 2.0**FIXED_POINT_BITS
    half = top / 2
    codes = np.array([0.0, 1.0, half - 1, half, half + 1, top - 1, top])
    squares = _square_codes(codes)
    assert squares[0] == squares[-1] == top
    assert squares[3] == 0.0 and squares[2] == squares[4] == 0.0
    assert squares[1] == squares[-2] == np.rint((half - 1) ** 2 / (top / 4))
    rng = np.random.default_rng(5)
    many = np.concatenate([np.rint(rng.uniform(0, top, 100_000)), codes])
    many_squares = _square_codes(many)
    assert many_squares.min() >= 0.0 and many_squares.max() <= top
    np.testing.assert_array_equal(many_squares, np.rint(many_squares))
    for value, square in zip(codes, squares):
        sums = fixed_point_moments(np.array([[value]]), 0.0, top, squares=True)
        assert sums.square_codes[0] == square


def test_moment_sums_are_the_definitions_in_exact_arithmetic_on_the_whole_grid():
    """With bounds (0, 2**B) a value k of the grid is its own code: random codes and the
    grid's ends, masked and not, give the code sums and square-code sums of the
    definitions computed in Python's integers (the square ``d * d`` rounded to float64
    once, as the float operations round it, then divided by 2**(B-2) and rounded half
    to even)."""
    top = 2**FIXED_POINT_BITS
    half = top // 2
    rng = np.random.default_rng(7)
    ends = [0, 1, 2, half - 3, half - 1, half, half + 1, half + 2**20, top - 1, top]
    codes = np.concatenate([rng.integers(0, top + 1, 20_000), ends])
    values = codes.astype(np.float64).reshape(-1, 1)
    square_codes = np.array([round(float((int(k) - half) ** 2) / 2 ** (FIXED_POINT_BITS - 2))
                             for k in codes], dtype=object)
    assert max(square_codes) == top and min(square_codes) == 0
    for mask in (None, rng.random(codes.shape[0]) < 0.5):
        rows = np.ones(codes.shape[0], bool) if mask is None else mask
        sums = fixed_point_moments(values, 0.0, float(top), mask, squares=True,
                                   others=mask is not None)
        assert int(sums.codes[0]) == sum(int(k) for k in codes[rows])
        assert int(sums.square_codes[0]) == square_codes[rows].sum()


def test_fixed_point_moments_refuse_a_mask_that_is_not_one_bool_per_row():
    values = np.zeros((10, 1))
    for mask in (np.ones(10, dtype=int), np.ones(9, dtype=bool)):
        with pytest.raises(ValueError, match="booleans of shape"):
            fixed_point_moments(values, 0.0, 1.0, mask)


@pytest.mark.parametrize("shape", [(0, 3), (5, 2), (2**16 + 3, 3), (3 * 2**16, 10)])
def test_float_column_sums_are_the_column_sums(shape):
    """Blocks of rows times ones (more rows than one block too): the column sums, to
    float64 rounding; one column is numpy's own sum, bit for bit."""
    from skhybrid.utils._sums import float_column_sums

    rng = np.random.default_rng(shape[0])
    values = rng.normal(3.0, 2.0, size=shape)
    sums = float_column_sums(values)
    assert sums.shape == (shape[1],) and sums.dtype == np.float64
    exact = np.array([math.fsum(column) for column in values.T])
    np.testing.assert_allclose(sums, exact, rtol=1e-12, atol=1e-9)
    column = values[:, :1]
    np.testing.assert_array_equal(float_column_sums(column), column.sum(axis=0))
