"""The validation layer: bad input gets the documented error, no input is mutated."""

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skhybrid.exceptions import PrivacyLeakWarning
from skhybrid.utils import (
    check_bounds,
    check_epsilon,
    check_random_state,
    check_sample_epsilon,
    check_trust_group,
    clip_to_bounds,
    resolve_bounds,
)
from skhybrid.utils._validation import resolve_variance

_names = st.sampled_from(["tcm", "lm", "TCM", "Lm", "tCm", "LM"])
_bad_trust = st.one_of(
    st.none(),
    st.just(float("nan")),
    st.integers().filter(lambda n: n not in (0, 1)),  # 1 / 0 mean tcm / lm
    st.floats(allow_nan=False),
    st.text().filter(lambda s: s.lower() not in ("tcm", "lm")),
)


@given(st.lists(_names, min_size=1, max_size=50))
def test_trust_group_strings_are_case_insensitive_and_not_mutated(names):
    original = list(names)
    as_array = np.array(names)
    before = as_array.copy()
    for value in (names, as_array, np.array(names, dtype=object)):
        mask = check_trust_group(value, len(names))
        assert mask.dtype == bool
        assert mask.tolist() == [name.lower() == "tcm" for name in original]
    assert names == original
    np.testing.assert_array_equal(as_array, before)


@given(st.lists(st.booleans(), min_size=1, max_size=50))
def test_trust_group_booleans_mean_true_is_tcm(flags):
    for value in (flags, np.array(flags), np.array(flags, dtype=object)):
        mask = check_trust_group(value, len(flags))
        assert mask.tolist() == flags
        assert mask is not value


@given(st.lists(_names, min_size=1, max_size=20), st.data())
def test_trust_group_bad_entry_is_named_with_its_index(names, data):
    index = data.draw(st.integers(0, len(names) - 1))
    bad = data.draw(_bad_trust)
    values = list(names)
    values[index] = bad
    with pytest.raises(ValueError, match=f"at index {index}"):
        check_trust_group(values, len(values))


def test_trust_group_rejects_wrong_length_and_numbers():
    with pytest.raises(ValueError, match="expected 3, got 2"):
        check_trust_group(["tcm", "lm"], 3)
    with pytest.raises(ValueError, match="got 2 at index 0"):
        check_trust_group(np.array([2, 0]), 2)
    with pytest.raises(ValueError, match="got 1.0 at index 0"):
        check_trust_group(np.array([1.0, 0.0]), 2)


def test_trust_group_integers_one_and_zero_mean_tcm_and_lm():
    # pandas often reads a boolean column as 0/1 integers.
    pd = pytest.importorskip("pandas")
    flags = [1, 0, 0, 1]
    for value in (flags, np.array(flags), np.array(flags, dtype=np.uint8),
                  pd.Series(flags), np.array(flags, dtype=object)):
        assert check_trust_group(value, 4).tolist() == [True, False, False, True]
    with pytest.raises(ValueError, match=r"got 3 at index 2$"):
        check_trust_group(pd.Series([1, 0, 3]), 3)


def test_trust_group_pandas_columns_of_every_dtype():
    pd = pytest.importorskip("pandas")
    names = ["tcm", "lm", "LM", "Tcm"]
    expected = [True, False, False, True]
    for dtype in (object, "string", "category", "str"):
        series = pd.Series(names, dtype=dtype, index=[7, 3, 5, 1])
        assert check_trust_group(series, 4).tolist() == expected
    assert check_trust_group(pd.Series([True, False]), 2).tolist() == [True, False]
    assert check_trust_group(pd.Index(["lm", "tcm"]), 2).tolist() == [False, True]
    for dtype in (object, "string", "category"):
        with pytest.raises(ValueError, match=r"at index 1$"):
            check_trust_group(pd.Series(["tcm", None, "lm"], dtype=dtype), 3)
    with pytest.raises(ValueError, match=r"got 'x' at index 2$"):
        check_trust_group(pd.Series(["tcm", "lm", "x"], dtype="category"), 3)


def test_trust_group_arrow_strings_in_chunks_with_offsets():
    """Arrow-backed columns in chunks that start inside their buffers (offsets) keep
    their rows; nulls and other spellings get the factorization's message."""
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    chunks = pa.chunked_array([pa.array(["x", "tcm", "lm", "tcm"]).slice(1),
                               pa.array(["lm", "tcm"] * 9).slice(3, 11)])
    expected = [value == "tcm" for value in chunks.to_pylist()]
    for dtype in ("str", "string[pyarrow]", pd.ArrowDtype(pa.large_string())):
        series = pd.Series(chunks.to_pylist(), dtype=dtype)
        assert check_trust_group(series, len(expected)).tolist() == expected
    sliced = pd.Series(pd.arrays.ArrowStringArray(chunks))
    assert check_trust_group(sliced, len(expected)).tolist() == expected
    for dtype in ("str", pd.ArrowDtype(pa.string())):
        assert check_trust_group(pd.Series(["LM", "tcm"], dtype=dtype), 2).tolist() == [
            False, True]
        with pytest.raises(ValueError, match=r"at index 1$"):
            check_trust_group(pd.Series(["tcm", None, "lm"], dtype=dtype), 3)


_WORDS = ["", "t", "l", "m", "c", "x", "tc", "cm", "lm", "tcm", "tcml", "mt", "lmt", "ml",
          "tmc", "ll", "tt", "mlm", "cmt", "lmtcm", "tcmlm", "LM", "tct", "lt", "lm\x01",
          "tcn", "lmm", "\u0174cm"]


def test_string_columns_are_tcm_or_lm_exactly_in_every_arrangement():
    """Every list of up to 3 words (<U3 columns, read by their code points) or 2 (other
    kinds) from prefixes, suffixes and concatenations of "tcm" and "lm", in numpy (<U3
    or wider, strided, bytes, StringDType), object and pandas string columns: accepted
    with Python's answer when each word is one of them in any case, else refused at the
    first bad word."""
    import itertools

    pd = pytest.importorskip("pandas")
    for n_words in range(4):
        for words in itertools.product(_WORDS, repeat=n_words):
            bad = [i for i, word in enumerate(words) if word.lower() not in ("tcm", "lm")]
            strided = np.array([w for word in words for w in (word, "x")], dtype="U6")[::2]
            columns = []
            if all(len(word) <= 3 for word in words):  # as np.where(mask, "tcm", "lm")
                columns += [np.array(words, dtype="U3"), strided.astype("U3")]
            if n_words < 3:  # the other kinds' comparisons are numpy's and pandas' own
                columns += [np.array(words, dtype="U6"), strided, np.array(words, dtype=object),
                            np.array(words, dtype="T"), pd.Series(words, dtype="str"),
                            pd.Series(words, dtype="string")]
            if all(word.isascii() for word in words) and n_words < 3:
                columns.append(np.array([word.encode() for word in words], dtype="S6"))
            for column in columns:
                if bad:
                    with pytest.raises(ValueError, match=f"at index {bad[0]}$"):
                        check_trust_group(column, n_words)
                else:
                    assert check_trust_group(column, n_words).tolist() == [
                        word.lower() == "tcm" for word in words], (words, column.dtype)


def test_missing_values_of_every_pandas_dtype_are_named_not_ambiguous():
    """pd.NA (boolean, Int64, string columns, object lists), None and NaN are refused
    with the library's message, never pandas' "boolean value of NA is ambiguous"."""
    pd = pytest.importorskip("pandas")
    for column in (pd.Series([True, pd.NA, False], dtype="boolean"),
                   pd.Series([1, pd.NA, 0], dtype="Int64"),
                   pd.Series(["tcm", pd.NA, "lm"], dtype="string"),
                   pd.Series(["tcm", None, "lm"], dtype="str"),
                   pd.Series(["tcm", None, "lm"], dtype="category"),
                   ["tcm", pd.NA, "lm"], [True, pd.NA, False], [True, None, False],
                   np.array(["tcm", float("nan"), "lm"], dtype=object)):
        with pytest.raises(ValueError, match=r"^trust_group must be .* at index 1$"):
            check_trust_group(column, 3)
    assert check_trust_group(pd.Series([True, False], dtype="boolean"), 2).tolist() == [
        True, False]
    assert check_trust_group(pd.Series([0, 1], dtype="Int64"), 2).tolist() == [False, True]


def test_numbers_equal_to_accepted_ones_are_still_refused():
    """pandas counts True, 1 and 1.0 as one value: the float is refused all the same."""
    for column in ([True, 1.0], [0, 0.0], [np.True_, 1, 1.0], [1, np.float64(1.0)],
                   ["tcm", False, 0.0]):
        last = len(column) - 1
        with pytest.raises(ValueError, match=rf"got {float(column[last])} at index {last}$"):
            check_trust_group(np.array(column, dtype=object), len(column))
    mixed = np.array(["tcm", "lm", "TCM", True, 0, np.True_, "Lm"], dtype=object)
    assert check_trust_group(mixed, 7).tolist() == [True, False, True, True, False, True,
                                                    False]


def _as_tcm(value):
    return value.lower() == "tcm" if isinstance(value, str) else bool(value)


def test_trust_group_messages_show_values_not_numpy_reprs():
    with pytest.raises(ValueError) as error:
        check_trust_group(np.array(["tcm", "tmc"], dtype=object), 2)
    assert "np.str_" not in str(error.value) and "'tmc'" in str(error.value)
    with pytest.raises(ValueError) as error:
        check_trust_group(np.array([0, 5]), 2)
    assert "np.int64" not in str(error.value)


def test_trust_group_inspects_distinct_values_only(monkeypatch):
    # Millions of users must not mean millions of Python calls: only the distinct
    # entries are looked at one by one.
    from skhybrid.utils import _trust_labels

    calls = []
    original = _trust_labels._trust_value
    monkeypatch.setattr(_trust_labels, "_trust_value", lambda v: calls.append(v) or original(v))
    names = np.array(["TCM", "lm", "Lm", "tcm"] * 25_000, dtype=object)
    mask = check_trust_group(names, names.shape[0])
    assert mask.sum() == 50_000
    assert len(calls) <= 4
    with pytest.raises(ValueError, match="1-dimensional"):
        check_trust_group(np.array([["tcm"]]), 1)


def test_trust_group_none_means_everyone_is_tcm():
    assert check_trust_group(None, 4).tolist() == [True] * 4


_positive = st.floats(min_value=1e-12, max_value=1e12, allow_nan=False, allow_infinity=False)
_bad_epsilon = st.one_of(
    st.floats(max_value=0.0),
    st.just(float("nan")),
    st.just(float("inf")),
    st.booleans(),
    st.text(),
    st.none(),
)


@given(st.lists(_positive, min_size=1, max_size=50))
def test_valid_epsilon_arrays_are_returned_read_only_and_never_modify_the_input(values):
    # float64 input is not copied (a per-user copy is as large as X): the result is a
    # read-only view, so no estimator can write through it to the caller's array.
    array = np.array(values)
    before = array.copy()
    result = check_epsilon(array, len(values))
    assert result.dtype == np.float64 and not result.flags.writeable
    np.testing.assert_array_equal(result, before)
    with pytest.raises(ValueError, match="read-only"):
        result[0] = -1.0
    np.testing.assert_array_equal(array, before)
    assert array.flags.writeable  # the caller's own array is untouched


@given(st.lists(_positive, min_size=1, max_size=20), st.data())
def test_bad_epsilon_entry_is_named_with_its_index(values, data):
    index = data.draw(st.integers(0, len(values) - 1))
    bad = data.draw(_bad_epsilon)
    entries = list(values)
    entries[index] = bad
    with pytest.raises(ValueError, match=f"at index {index}"):
        check_epsilon(entries, len(entries))


@given(_bad_epsilon)
def test_bad_scalar_epsilon_is_rejected(value):
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon(value)


def test_infinite_epsilon_only_where_public_data_is_accepted():
    assert check_epsilon(np.inf, allow_inf=True) == math.inf
    with pytest.raises(ValueError, match="public"):
        check_epsilon(np.inf)
    result = check_epsilon([1.0, np.inf], 2, allow_inf=True)
    assert result.tolist() == [1.0, math.inf]
    with pytest.raises(ValueError, match=re.escape("got inf at index 1")):
        check_epsilon([1.0, np.inf], 2)


@pytest.mark.parametrize("bad", [1e-101, 1e101, np.nan, 0.0])
@pytest.mark.parametrize("allow_inf", [False, True])
def test_levels_beyond_the_accepted_range_are_named_whatever_the_extremes(bad, allow_inf):
    """Levels are checked by their extremes first, element by element only when those
    fail: an out-of-range level (or a NaN, which numpy's extremes propagate) is named
    at its index, also beside public users' inf, which send the check element by
    element; in-range levels at the limits pass."""
    from skhybrid.utils._validation import MAX_EPSILON, MIN_EPSILON

    levels = np.array([MIN_EPSILON, 1.0, MAX_EPSILON, 2.0] + ([np.inf] if allow_inf else []))
    np.testing.assert_array_equal(check_epsilon(levels, levels.size, allow_inf=allow_inf),
                                  levels)
    broken = levels.copy()
    broken[3] = bad
    with pytest.raises(ValueError, match="at index 3"):
        check_epsilon(broken, broken.size, allow_inf=allow_inf)


def test_boolean_epsilon_array_is_rejected():
    with pytest.raises(ValueError, match="boolean"):
        check_epsilon(np.array([True, False]), 2)


def test_sample_epsilon_defaults_to_the_parameter():
    np.testing.assert_array_equal(check_sample_epsilon(None, 0.5, 3), [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="expected 3, got 2"):
        check_sample_epsilon([1.0, 2.0], 0.5, 3)


@given(
    st.floats(-1e6, 1e6),
    st.floats(1e-3, 1e6),
    st.integers(1, 5),
)
def test_bounds_broadcast_scalars_to_features(lower, width, n_features):
    low, high = check_bounds((lower, lower + width), n_features)
    assert low.shape == high.shape == (n_features,)
    assert np.all(low < high)


@pytest.mark.parametrize(
    "bounds, message",
    [
        ((1.0, 1.0), "lower < upper"),
        ((2.0, 1.0), "lower < upper"),
        ((0.0, np.inf), "finite"),
        ((np.nan, 1.0), "finite"),
        (([0.0, 0.0, 0.0], 1.0), "one entry per feature"),
        ((0.0,), "pair"),
        (None, "pair"),
        (("a", 1.0), "numeric"),
    ],
)
def test_bad_bounds_are_rejected(bounds, message):
    with pytest.raises(ValueError, match=message):
        check_bounds(bounds, 2)


def test_missing_bounds_are_taken_from_data_with_a_privacy_leak_warning():
    X = np.array([[0.0, 5.0], [2.0, 5.0]])
    with pytest.warns(PrivacyLeakWarning, match="bounds=None"):
        lower, upper = resolve_bounds(None, X)
    assert lower.tolist() == [0.0, 5.0]
    assert upper[0] == 2.0 and upper[1] > 5.0


@given(st.lists(st.floats(-1e9, 1e9), min_size=1, max_size=30))
def test_clipping_returns_a_new_array_within_bounds(values):
    X = np.array(values).reshape(-1, 1)
    before = X.copy()
    clipped = clip_to_bounds(X, np.array([-1.0]), np.array([1.0]))
    assert np.all((clipped >= -1.0) & (clipped <= 1.0))
    np.testing.assert_array_equal(X, before)


def test_default_randomness_is_secure_and_seeds_reproduce():
    from randomgen import AESCounter, ChaCha

    first, second = check_random_state(None), check_random_state(None)
    # AES-CTR on the CPU's AES instructions, else ChaCha20: both keyed from the OS.
    hardware_aes = AESCounter(key=1).use_aesni
    assert isinstance(first.bit_generator, AESCounter if hardware_aes else ChaCha)
    assert first.random() != second.random()
    assert check_random_state(3).random() == check_random_state(3).random()
    with pytest.raises(ValueError, match="random_state"):
        check_random_state("seed")


@pytest.mark.parametrize("shape", [(50_000,), (50_000, 1), (150_001, 3), (10, 20_000), (0, 2)])
@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("order", ["C", "F"])
def test_masked_rows_selects_the_same_rows_as_boolean_indexing(shape, share, order):
    from skhybrid.utils._validation import masked_rows

    rng = np.random.default_rng(len(shape) + shape[0])
    X = np.asarray(rng.normal(size=shape), order=order)
    rows = rng.random(shape[0]) < share
    selected = masked_rows(X, rows)
    np.testing.assert_array_equal(selected, X[rows])
    assert selected.shape == X[rows].shape and not np.shares_memory(selected, X)


@pytest.mark.parametrize("n_features", [1, 2, 3, 7])
def test_feature_wise_equals_numpy_broadcasting(n_features):
    from skhybrid.utils._validation import _FEATURE_WISE_BLOCK, feature_wise

    rng = np.random.default_rng(n_features)
    X = rng.normal(size=(_FEATURE_WISE_BLOCK // n_features * 2 + 5, n_features))
    lower, upper = rng.normal(size=n_features) - 1.0, rng.normal(size=n_features) + 1.0
    np.testing.assert_array_equal(feature_wise(np.clip, X, lower, upper),
                                  np.clip(X, lower, upper))
    np.testing.assert_array_equal(feature_wise(np.subtract, X, lower), X - lower)
    inplace = X.copy()
    assert feature_wise(np.clip, inplace, lower, upper, out=inplace) is inplace
    np.testing.assert_array_equal(inplace, np.clip(X, lower, upper))
    # Scalar and one-element bounds broadcast as numpy's do.
    np.testing.assert_array_equal(feature_wise(np.clip, X, 0.0, np.array([0.5])),
                                  np.clip(X, 0.0, np.array([0.5])))


_bound = st.one_of(st.floats(), st.integers(-10**400, 10**400), st.sampled_from(
    [0.0, -0.0, 1e-100, 1e100, -1e100, 1e100 * (1 + 2**-52), 5e-101]))


@given(_bound, _bound, st.integers(1, 3))
def test_scalar_bounds_fast_path_agrees_with_the_array_checks(lower, upper, n_features):
    """Python scalars are checked without arrays; 0-d arrays take the general path: both
    must accept the same bounds with the same result, and refuse with the same message
    (up to the value shown, whose repr the 0-d array changes)."""
    def outcome(bounds):
        try:
            return check_bounds(bounds, n_features)
        except ValueError as error:
            return str(error).split("; got")[0]

    fast = outcome((lower, upper))
    general = outcome((np.asarray(lower, dtype=object), np.asarray(upper, dtype=object)))
    if isinstance(general, str):
        assert fast == general
    else:
        np.testing.assert_array_equal(fast[0], general[0])
        np.testing.assert_array_equal(fast[1], general[1])




@pytest.mark.parametrize("name", ["trust_group", "epsilon"])
def test_a_column_name_as_metadata_says_to_pass_the_column(name):
    """The CLI takes column names; the Python API takes the columns. The message says so
    instead of reporting the string's shape ()."""
    import pandas as pd

    from skhybrid import HybridMeanEstimator

    frame = pd.DataFrame({"salary": [1.0, 2.0, 3.0], "trust": ["tcm", "lm", "lm"]})
    with pytest.raises(ValueError, match=re.escape(f"{name}=df['trust']")) as error:
        HybridMeanEstimator(bounds=(0, 5)).fit(frame[["salary"]], **{name: "trust"},
                                               **({} if name == "trust_group" else
                                                  {"trust_group": frame["trust"]}))
    assert "column name is not accepted" in str(error.value)
    assert "shape ()" not in str(error.value)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("as_frame", [False, True])
def test_nan_in_X_gives_this_librarys_advice_not_scikit_learns(bad, as_frame):
    import pandas as pd

    from skhybrid import ADPMEstimator, HybridMeanEstimator

    X = np.array([[1.0], [bad], [3.0]])
    X = pd.DataFrame(X, columns=["salary"]) if as_frame else X
    for estimator in (HybridMeanEstimator(bounds=(0, 5)), ADPMEstimator(bounds=(0, 5))):
        with pytest.raises(ValueError) as error:
            estimator.fit(X, trust_group=["tcm", "lm", "lm"])
        message = str(error.value)
        assert "HistGradientBoosting" not in message
        assert "finite values" in message and "drop the rows" in message
        assert ("NaN" if np.isnan(bad) else "infinity") in message
    fitted = HybridMeanEstimator(bounds=(0, 5), random_state=0).fit(
        np.ones((3, 1)), trust_group=["tcm", "lm", "lm"])
    with pytest.raises(ValueError, match="finite values"):
        fitted.predict(np.array([[1.0], [bad], [3.0]]))


# -- per-feature pairs ---------------------------------------------------------------------


def test_a_list_of_pairs_gives_one_pair_per_feature():
    from skhybrid.utils._validation import check_bounds

    lower, upper = check_bounds([(0, 200_000), (0, 120), (-1, 1)], 3)
    np.testing.assert_array_equal(lower, [0, 0, -1])
    np.testing.assert_array_equal(upper, [200_000, 120, 1])
    lower, upper = check_bounds(np.array([[0, 1], [2, 3], [4, 5]]), 3)
    np.testing.assert_array_equal(upper, [1, 3, 5])


def test_a_tuple_is_always_lower_and_upper():
    from skhybrid.utils._validation import check_bounds

    # Both readings of these two pairs are valid; a tuple is never read as pairs.
    lower, upper = check_bounds((np.array([-4.0, -2.8]), np.array([13.0, 14.0])), 2)
    np.testing.assert_array_equal(lower, [-4.0, -2.8])
    lower, upper = check_bounds(([0, 0], [200_000, 120]), 2)
    np.testing.assert_array_equal(upper, [200_000, 120])


def test_two_pairs_take_the_one_valid_reading_or_are_refused():
    from skhybrid.utils._validation import check_bounds

    lower, upper = check_bounds([(0, 200_000), (0, 120)], 2)  # only valid as pairs
    np.testing.assert_array_equal(upper, [200_000, 120])
    lower, upper = check_bounds([[0, 0], [1, 1]], 2)  # only valid as (lower, upper)
    np.testing.assert_array_equal(upper, [1, 1])
    with pytest.raises(ValueError, match="ambiguous"):
        check_bounds([(0, 10), (5, 20)], 2)
    with pytest.raises(ValueError, match="however it is read"):
        check_bounds([(0, 0), (0, 120)], 2)


@pytest.mark.parametrize("variance", [0.0, 0.01, 0.25, 1 / 12, 0, np.float64(0.1), [0.1, 0.2],
                                      np.array([0.1, 0.2])])
def test_a_variance_within_popovicius_range_is_returned_as_a_new_array(variance):
    lower, upper = np.zeros(2), np.ones(2)
    given = np.array(variance, dtype=np.float64)
    resolved = resolve_variance(variance, lower, upper)
    np.testing.assert_array_equal(resolved, np.broadcast_to(given, (2,)))
    assert resolved.dtype == np.float64 and resolved.shape == (2,)
    resolved[:] = 7.0  # never the caller's array, nor the bounds
    np.testing.assert_array_equal(np.asarray(variance, dtype=np.float64), given)
    np.testing.assert_array_equal(upper, np.ones(2))


@pytest.mark.parametrize("variance", [-0.01, 0.2500001, math.nan, math.inf, -math.inf])
def test_a_variance_outside_popovicius_range_is_refused(variance):
    with pytest.raises(ValueError, match="variance must be in"):
        resolve_variance(variance, np.zeros(2), np.ones(2))


def test_a_zero_variance_is_refused_where_constant_data_is_not_allowed():
    with pytest.raises(ValueError, match=r"variance must be in \(0"):
        resolve_variance(0.0, np.zeros(1), np.ones(1), allow_zero=False)
