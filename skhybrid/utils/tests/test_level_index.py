"""Users grouped by level: the same levels, counts and labels as np.unique's."""

import numpy as np
import pytest

from skhybrid.utils._level_index import LevelIndex


def _keys(n_levels, n, seed=0):
    rng = np.random.default_rng(seed)
    levels = np.round(rng.uniform(0.1, 10.0, n_levels), 6)
    levels[:2] = [np.inf, 1e-100][:n_levels]  # public users and the smallest level
    keys = levels[rng.integers(0, n_levels, n)]
    keys[::3] *= -1  # lm levels are negated
    return keys


@pytest.mark.parametrize("n_levels", [1, 2, 3, 40, 50_000])
def test_levels_counts_and_lookups_are_np_unique_s(n_levels):
    """Sorted levels and counts as np.unique gives them; each key's entry of a per-level
    table is its own level's."""
    keys = _keys(n_levels, 200_000)
    levels, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    index = LevelIndex(keys)
    np.testing.assert_array_equal(index.levels, levels)
    np.testing.assert_array_equal(index.counts, counts)
    assert index.counts.dtype == np.int64
    np.testing.assert_array_equal(index.labels, inverse)
    np.testing.assert_array_equal(index.spread(np.arange(levels.size) * 2.0), inverse * 2.0)


def test_no_keys_and_bad_shapes():
    index = LevelIndex(np.zeros(0))
    assert index.levels.size == 0 and index.counts.size == 0
    assert index.spread(np.zeros(0)).shape == (0,)
    with pytest.raises(ValueError, match="1-d"):
        LevelIndex(np.ones((2, 2)))
