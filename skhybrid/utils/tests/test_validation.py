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


def test_in_parts_covers_the_rows_once_in_order(monkeypatch):
    from skhybrid.utils import _threads

    monkeypatch.setattr(_threads, "available_cores", lambda: 3)
    for n_rows, min_rows, n_parts in [(0, 1, 1), (10, 20, 1), (10, 4, 2), (100, 1, 3)]:
        parts = _threads.in_parts(lambda start, stop: (start, stop), n_rows, min_rows)
        assert len(parts) == n_parts
        assert [start for start, _ in parts][0] == 0 and parts[-1][1] == n_rows
        assert all(stop == start for (_, stop), (start, _) in zip(parts, parts[1:]))


def _compiled_worker():
    """A compiled task loop as CompiledTasks runs it: task ``t`` of a pass adds
    ``t * t + 1`` to ``out[t]`` (after waiting for ``drawn[0]`` to pass its ticket,
    where given); the task ``fail_at`` raises."""
    import numba

    from skhybrid.utils._compiled_tasks import (current_pass, finish_task, next_pass,
                                                take_task, wait_until_above)

    @numba.njit(nogil=True)
    def worker(state, linger, drawn, fail_at, out):
        current = current_pass(state)
        while current > 0:
            first_ticket = (current - 1) * out.shape[0]
            while True:
                task = take_task(state, current)
                if task < 0:
                    break
                if drawn is not None and not wait_until_above(drawn, first_ticket + task,
                                                              state):
                    break
                failed = False
                try:
                    if task == fail_at:
                        raise ValueError("task failed")
                    total = 0
                    for step in range(20_000):  # some work, so that the threads overlap
                        total += step % 7
                    out[task] += task * task + 1 + total * 0
                except Exception:  # noqa: BLE001
                    failed = True
                finish_task(state, failed)
            current = next_pass(state, current, linger)

    return worker


def _squares(n_tasks, n_passes=1):
    return n_passes * (np.arange(n_tasks) ** 2 + 1)


def _publisher(drawn, n_tasks):
    """A ``prepare`` that publishes a pass's inputs task by task, as the Lloyd pass's
    draws."""
    import time

    from skhybrid.utils._compiled_tasks import publish

    def prepare(first_task):
        for task in range(n_tasks):
            time.sleep(0.001)
            publish(drawn, first_task + task + 1)

    return prepare


@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("published", [False, True])
def test_run_compiled_tasks_runs_each_task_once(n_threads, published):
    """Every task runs once, whatever the threads; with ``prepare`` publishing the tasks'
    inputs one by one (as the Lloyd pass's draws), each waits for its own."""
    from skhybrid.utils import _threads

    out = np.zeros(12, dtype=np.int64)
    drawn = np.zeros(1, dtype=np.int64) if published else None
    _threads.run_compiled_tasks(_compiled_worker(), (drawn, -1, out), 12, n_threads,
                                _publisher(drawn, 12) if published else None)
    np.testing.assert_array_equal(out, _squares(12))


@pytest.mark.parametrize("n_threads", [2, 3])
@pytest.mark.parametrize("published", [False, True])
def test_kept_threads_run_each_task_of_every_pass_once_without_a_new_submission(
        n_threads, published, monkeypatch):
    """Inside kept_threads the pool's threads wait for the next pass: the passes run
    every task once each (the inputs published per pass, on tickets counted over the
    passes), and no pass after the first submits a thread to the pool."""
    from skhybrid.utils import _threads

    pool = _threads.shared_pool()
    submitted = []
    submit = pool.submit
    monkeypatch.setattr(pool, "submit", lambda *args: submitted.append(1) or submit(*args))
    out = np.zeros(12, dtype=np.int64)
    drawn = np.zeros(1, dtype=np.int64) if published else None
    with _threads.kept_threads():
        tasks = _threads.CompiledTasks(_compiled_worker(), (drawn, -1, out), 12, n_threads)
        for _ in range(5):
            tasks.run(_publisher(drawn, 12) if published else None)
    assert tasks.closed
    np.testing.assert_array_equal(out, _squares(12, 5))
    assert len(submitted) == n_threads - 1


def test_a_kept_thread_that_stopped_waiting_is_replaced(monkeypatch):
    # A thread of the pool waits a bounded time for the next pass, then returns to the
    # pool: the next pass submits another, and still runs each task once.
    import time

    from skhybrid.utils import _compiled_tasks, _threads

    monkeypatch.setattr(_compiled_tasks, "WAIT_SPINS", 8)
    pool = _threads.shared_pool()
    submitted = []
    submit = pool.submit
    monkeypatch.setattr(pool, "submit", lambda *args: submitted.append(1) or submit(*args))
    out = np.zeros(8, dtype=np.int64)
    with _threads.kept_threads():
        tasks = _threads.CompiledTasks(_compiled_worker(), (None, -1, out), 8, 2)
        for _ in range(4):
            tasks.run()
            time.sleep(0.05)  # far longer than 8 turns of a spin wait
            assert int(tasks._state[_compiled_tasks.LIVE]) == 0
    np.testing.assert_array_equal(out, _squares(8, 4))
    assert len(submitted) == 4


@pytest.mark.parametrize("drop", [False, True])
def test_kept_threads_stop_when_the_passes_end_or_are_dropped(drop):
    """The threads waiting for a next pass return to the pool on leaving kept_threads,
    or when their passes are dropped unclosed."""
    import gc
    import time

    from skhybrid.utils import _threads

    out = np.zeros(8, dtype=np.int64)
    with _threads.kept_threads():
        tasks = _threads.CompiledTasks(_compiled_worker(), (None, -1, out), 8, 2)
        tasks.run()
        futures = list(tasks._futures)
        assert futures and not any(future.done() for future in futures)
        if drop:
            _threads._kept[__import__("threading").get_ident()].clear()
            del tasks
            gc.collect()
            deadline = time.monotonic() + 10
            while not all(future.done() for future in futures) and time.monotonic() < deadline:
                time.sleep(0.001)
            assert all(future.done() for future in futures)
    for future in futures:
        future.result(timeout=10)


def test_take_task_takes_tickets_of_its_own_pass_only():
    """A thread late from a pass cannot take a task of the next: each ticket is taken
    within its pass (compare and swap), never skipped, never twice."""
    import numba

    from skhybrid.utils import _compiled_tasks as tasks

    take = numba.njit(lambda state, current: tasks.take_task(state, current))
    state = tasks.new_state(3)
    assert tasks.start_pass(state, 0) == 0
    assert [take(state, 1) for _ in range(4)] == [0, 1, 2, -1]
    tasks.start_pass(state, 0)
    assert take(state, 1) == -1  # late from pass 1
    assert [take(state, 2) for _ in range(4)] == [0, 1, 2, -1]
    assert int(state[tasks.NEXT_TASK]) == 6
    tasks.stop(state)
    tasks.start_pass(state, 0)
    assert take(state, 3) == -1  # stopped


def test_next_pass_leaves_or_stays_for_a_pass_published_meanwhile():
    """A thread of the pool leaves (counted off LIVE) after ``linger`` turns without a
    pass; one that sees a newer pass takes it; the caller always returns. start_pass
    asks for the threads missing from LIVE."""
    import numba

    from skhybrid.utils import _compiled_tasks as tasks

    after = numba.njit(lambda state, current, linger: tasks.next_pass(state, current, linger))
    state = tasks.new_state(4)
    assert tasks.start_pass(state, 2) == 2 and int(state[tasks.LIVE]) == 2
    assert tasks.start_pass(state, 2) == 0  # both still counted
    assert after(state, 1, tasks.CALLER) == 0 and int(state[tasks.LIVE]) == 2
    assert after(state, 1, 0) == 2 and int(state[tasks.LIVE]) == 2  # pass 2 is there
    assert after(state, 2, 16) == 0 and int(state[tasks.LIVE]) == 1  # none came: leaves
    assert tasks.start_pass(state, 2) == 1 and int(state[tasks.LIVE]) == 2
    tasks.stop(state)
    assert after(state, 3, 16) == 0 and int(state[tasks.LIVE]) == 1


def test_a_job_for_the_next_pass_is_taken_by_one_thread_or_taken_back():
    """A job the caller posts for the next pass: a waiting thread of the pool is told
    (JOB_POSTED), one thread takes it, and the caller then cannot take it back; a job
    no thread took is taken back, and no thread takes it after."""
    import numba

    from skhybrid.utils import _compiled_tasks as tasks

    after = numba.njit(lambda state, current, linger: tasks.next_pass(state, current, linger))
    take = numba.njit(lambda state, upcoming: tasks.take_job(state, upcoming))
    state = tasks.new_state(2)
    assert tasks.start_pass(state, 1) == 1  # pass 1, and one thread of the pool
    assert after(state, 1, 4) == 0 and int(state[tasks.LIVE]) == 0  # nothing posted
    state[tasks.LIVE] = 1  # a thread waiting after pass 1 again
    tasks.post_job(state, 2)
    assert after(state, 1, 4) == tasks.JOB_POSTED and int(state[tasks.LIVE]) == 1
    assert take(state, 2) and not take(state, 2)
    assert not tasks.withdraw_job(state, 2)  # taken: the caller leaves it to the thread
    assert after(state, 1, 0) == 0  # taken: no longer posted
    tasks.start_pass(state, 0)
    tasks.post_job(state, 3)
    assert tasks.withdraw_job(state, 3)  # no thread took it: the caller does it
    assert not take(state, 3)
    assert tasks.withdraw_job(state, 4)  # none posted: the caller does it too


def test_run_compiled_tasks_raises_when_a_task_raised_after_every_task_ended():
    from skhybrid.utils import _threads

    out = np.zeros(8, dtype=np.int64)
    with pytest.raises(RuntimeError, match="a task of a compiled pass raised"):
        _threads.run_compiled_tasks(_compiled_worker(), (None, 3, out), 8, 2)
    expected = _squares(8)
    expected[3] = 0
    np.testing.assert_array_equal(out, expected)


def test_run_compiled_tasks_stops_the_threads_when_prepare_raises():
    # The pool's thread waits for inputs that never come: the caller's error stops it
    # (else it would wait forever), and the error is raised once it has stopped.
    import threading

    from skhybrid.utils import _threads

    out = np.zeros(8, dtype=np.int64)
    drawn = np.zeros(1, dtype=np.int64)
    errors = []

    def prepare(first_task):
        raise KeyError("no draws")

    def call():
        try:
            _threads.run_compiled_tasks(_compiled_worker(), (drawn, -1, out), 8, 2, prepare)
        except KeyError as error:
            errors.append(error)

    thread = threading.Thread(target=call)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive() and len(errors) == 1
    assert (out == 0).all()
    # The pool is free again.
    _threads.run_compiled_tasks(_compiled_worker(), (None, -1, out), 8, 2)
    np.testing.assert_array_equal(out, _squares(8))


def _linux_cores():
    import os

    from skhybrid.utils import _threads

    return hasattr(os, "sched_setaffinity") and _threads._current_cpu() is not None and len(
        os.sched_getaffinity(0)) >= 2


@pytest.mark.skipif(not _linux_cores(), reason="needs sched_getcpu and two cores (Linux)")
def test_run_compiled_tasks_keeps_the_pools_threads_off_the_callers_core():
    # Linux can wake a helper on the caller's core, where it waits while another core
    # idles (wake_affine): for the call, the caller stays on its core and the pool's
    # threads are kept on the others; the caller's own set of cores is given back.
    import os

    from skhybrid.utils import _threads

    before = os.sched_getaffinity(0)
    out = np.zeros(8, dtype=np.int64)
    for _ in range(3):
        seen = []

        def prepare(first_task):
            seen.append((_threads._current_cpu(), os.sched_getaffinity(0)))

        _threads.run_compiled_tasks(_compiled_worker(), (None, -1, out), 8, 2, prepare)
        (cpu, cores), = seen
        assert cores == {cpu}
        helpers = _threads._pool["threads"]
        assert helpers and all(placed == before - {cpu} for placed in helpers.values())
        for native_id in helpers:
            assert os.sched_getaffinity(native_id) == before - {cpu}
        assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(not _linux_cores(), reason="needs sched_getcpu and two cores (Linux)")
def test_cores_are_counted_before_the_caller_is_kept_on_one():
    # HybridKMeans keeps its caller on one core for a fit: a first count made inside
    # (kept for the process) would have made every later pass single-threaded.
    import os

    from skhybrid.utils import _threads

    before = len(os.sched_getaffinity(0))
    _threads.available_cores.cache_clear()
    try:
        with _threads.cores_apart():
            assert len(os.sched_getaffinity(0)) == 1
            assert _threads.available_cores() == before
    finally:
        _threads.available_cores.cache_clear()


@pytest.mark.skipif(not _linux_cores(), reason="needs sched_getcpu and two cores (Linux)")
def test_a_pool_started_inside_cores_apart_places_its_threads(monkeypatch):
    import os

    from skhybrid.utils import _threads

    before = os.sched_getaffinity(0)
    monkeypatch.setattr(_threads, "_pool", {})  # a new pool, started below
    out = np.zeros(8, dtype=np.int64)
    try:
        with _threads.cores_apart():
            cpu = _threads._current_cpu()
            _threads.run_compiled_tasks(_compiled_worker(), (None, -1, out), 8, 2)
            threads = dict(_threads._pool["threads"])
        assert threads and all(os.sched_getaffinity(native_id) == before - {cpu}
                               for native_id in threads)
    finally:
        _threads._pool["pool"].shutdown(wait=True)
    np.testing.assert_array_equal(out, _squares(8))


@pytest.mark.skipif(not _linux_cores(), reason="needs sched_getcpu and two cores (Linux)")
def test_a_second_concurrent_caller_is_left_where_it_is():
    # Two callers kept on the cores they were on could share one core to their end.
    import os
    import threading

    from skhybrid.utils import _threads

    before = os.sched_getaffinity(0)
    inside, release = threading.Event(), threading.Event()

    def first():
        with _threads.cores_apart():
            assert len(os.sched_getaffinity(0)) == 1
            with _threads.cores_apart():  # nested in the same thread: no new placement
                assert len(os.sched_getaffinity(0)) == 1
            inside.set()  # the first call still counts after the nested one ended
            release.wait(timeout=10)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert inside.wait(timeout=10)
        with _threads.cores_apart():
            assert os.sched_getaffinity(0) == before
    finally:
        release.set()
        thread.join()
    with _threads.cores_apart():  # alone again: kept on its core
        assert len(os.sched_getaffinity(0)) == 1
    assert os.sched_getaffinity(0) == before


def test_run_compiled_tasks_called_from_the_pools_threads_finishes():
    # Helpers that cannot start (the pool's threads all busy in the calls) are not
    # waited for: the calling threads take every task.
    from skhybrid.utils import _threads

    worker = _compiled_worker()

    def outer():
        out = np.zeros(6, dtype=np.int64)
        _threads.run_compiled_tasks(worker, (None, -1, out), 6, 2)
        return out.tolist()

    outer()  # compiled once, before the threads call it
    pool = _threads.shared_pool()
    calls = [pool.submit(outer) for _ in range(4)]
    assert all(call.result(timeout=60) == _squares(6).tolist() for call in calls)


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
