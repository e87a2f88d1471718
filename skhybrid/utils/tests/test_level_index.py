"""Users grouped by level: the groups are np.unique's."""

import numpy as np
import pytest

from skhybrid.utils._level_index import LevelIndex
from skhybrid.utils._sums import fixed_point_sums


def _keys(n_levels, n, seed=0):
    rng = np.random.default_rng(seed)
    levels = np.round(rng.uniform(0.1, 10.0, n_levels), 6)
    levels[:2] = [np.inf, 1e-100][:n_levels]  # public users and the smallest level
    return levels[rng.integers(0, n_levels, n)]


@pytest.mark.parametrize("n_levels", [1, 2, 3, 40, 5_000, 50_000])
def test_levels_counts_and_lookups_are_np_unique_s(n_levels):
    """Sorted levels and counts as np.unique gives them; each key's entry of a per-level
    table is its own level's; the code sums per level equal fixed_point_sums under
    np.unique's labels. 5,000 levels grow the table several times; 50,000 past the
    sparse tables (an eighth full) to the ones half full."""
    from skhybrid.utils._kernels import _SPARSE_SLOTS

    n = 200_000
    keys = _keys(n_levels, n)
    values = np.random.default_rng(1).uniform(-0.5, 1.5, (n, 2))
    levels, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    if n_levels == 50_000:
        assert _SPARSE_SLOTS // 8 < levels.size < _SPARSE_SLOTS // 2
    for index, sums in [(LevelIndex.of(keys), None),
                        (LevelIndex.of(keys, with_labels=True), None),
                        LevelIndex.with_code_sums(keys, values, 0.0, 1.0)]:
        np.testing.assert_array_equal(index.levels, levels)
        np.testing.assert_array_equal(index.counts, counts)
        assert index.counts.dtype == np.int64
        np.testing.assert_array_equal(index.spread(np.arange(levels.size) * 2.0), inverse * 2.0)
        if sums is not None:
            np.testing.assert_array_equal(
                sums, fixed_point_sums(values, 0.0, 1.0, labels=inverse, n_groups=levels.size))
    labelled = LevelIndex.of(keys, with_labels=True)
    np.testing.assert_array_equal(labelled.position[labelled.labels], inverse)
    np.testing.assert_array_equal(labelled.sorted(labelled.per_group(levels)), levels)


@pytest.mark.parametrize("levels", [[1.0, 2.0], [1.0, 2.0, 3.0], [0.5], [0.5, 0.5, 0.7]])
def test_grouped_keys_whose_first_thousands_hold_fewer_levels(levels):
    """Keys grouped by level (sorted, as a file of users per level may be): the first
    4096 keys hold one level, later ones the others; the index is still np.unique's."""
    from skhybrid.utils._level_index import _HEAD_KEYS

    keys = np.repeat(np.array(levels), 3 * _HEAD_KEYS)
    expected, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    for index in (LevelIndex.of(keys), LevelIndex.of(keys, with_labels=True)):
        np.testing.assert_array_equal(index.levels, expected)
        np.testing.assert_array_equal(index.counts, counts)
        np.testing.assert_array_equal(index.spread(np.arange(expected.size) * 2.0),
                                      inverse * 2.0)


@pytest.mark.parametrize("n_levels", [1, 2, 40])
@pytest.mark.parametrize("bad", [np.nan, -np.inf])
def test_code_sums_count_non_finite_values_when_asked(n_levels, bad):
    """with_code_sums' finiteness check sees every value (the hash kernel's blocks, the
    sort's labelled sums): none counted for finite values, whose sums are unchanged;
    a NaN or an infinity in the last row counted."""
    n = 100_000
    keys = _keys(n_levels, n)
    values = np.random.default_rng(2).uniform(-0.5, 1.5, (n, 2))
    count = np.zeros(1, dtype=np.int64)
    _, checked = LevelIndex.with_code_sums(keys, values, 0.0, 1.0, count)
    assert count[0] == 0
    np.testing.assert_array_equal(checked, LevelIndex.with_code_sums(keys, values, 0.0, 1.0)[1])
    values[-1, 1] = bad
    with np.errstate(invalid="ignore"):  # numpy's casts of the meaningless codes
        LevelIndex.with_code_sums(keys, values, 0.0, 1.0, count)
    assert count[0] > 0


def test_no_keys_and_bad_shapes():
    index, sums = LevelIndex.with_code_sums(np.zeros(0), np.zeros((0, 3)), 0.0, 1.0)
    assert index.levels.size == 0 and sums.shape == (0, 3)
    assert index.spread(np.zeros(0)).shape == (0,)
    with pytest.raises(ValueError, match="1-d"):
        LevelIndex.of(np.ones((2, 2)))
