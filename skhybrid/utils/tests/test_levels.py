"""Grouping users by privacy level: the few-levels paths against numpy's np.unique."""

import numpy as np
import pytest

from skhybrid.utils._validation import level_counts, level_labels, spread_levels, unique_inverse


@pytest.mark.parametrize("n_levels", [1, 2, 3, 16, 17, 200])
@pytest.mark.parametrize("seed", range(3))
def test_levels_labels_counts_and_spread_equal_numpys(n_levels, seed):
    rng = np.random.default_rng(seed)
    levels = rng.permutation(np.concatenate([[np.inf], -rng.uniform(0.1, 9, 3),
                                             rng.uniform(0.01, 10, 300)]))[:n_levels]
    keys = rng.choice(levels, size=5_000)
    unique, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()

    found, labels = unique_inverse(keys)
    np.testing.assert_array_equal(found, unique)
    np.testing.assert_array_equal(labels, inverse)
    found, small, small_counts = level_labels(keys)
    np.testing.assert_array_equal(found, unique)
    np.testing.assert_array_equal(small, inverse)
    np.testing.assert_array_equal(small_counts, counts)
    assert small.dtype == (np.int8 if unique.size <= 16 else np.intp)
    found, only_counts = level_counts(keys)
    np.testing.assert_array_equal(found, unique)
    np.testing.assert_array_equal(only_counts, counts)
    values = rng.normal(size=unique.size)
    np.testing.assert_array_equal(spread_levels(keys, unique, values), values[inverse])


def test_empty_and_broadcast_keys():
    found, labels = unique_inverse(np.zeros(0))
    assert found.size == 0 and labels.size == 0
    keys = np.broadcast_to(np.float64(0.5), (1000,))
    found, counts = level_counts(keys)
    assert found.tolist() == [0.5] and counts.tolist() == [1000]
    np.testing.assert_array_equal(spread_levels(keys, found, np.array([0.25])), 0.25)
