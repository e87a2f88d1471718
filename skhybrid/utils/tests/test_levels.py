"""unique_inverse (the Sample mechanism's few levels) against numpy's np.unique.

The fits' grouping by level is tested in test_level_index.py."""

import numpy as np
import pytest

from skhybrid.utils._validation import unique_inverse


@pytest.mark.parametrize("n_levels", [1, 2, 3, 16, 17, 200])
@pytest.mark.parametrize("seed", range(3))
def test_levels_labels_counts_and_spread_equal_numpys(n_levels, seed):
    rng = np.random.default_rng(seed)
    levels = rng.permutation(np.concatenate([[np.inf], -rng.uniform(0.1, 9, 3),
                                             rng.uniform(0.01, 10, 300)]))[:n_levels]
    keys = rng.choice(levels, size=5_000)
    unique, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.ravel()

    found, labels = unique_inverse(keys)
    np.testing.assert_array_equal(found, unique)
    np.testing.assert_array_equal(labels, inverse)
    found, labels = unique_inverse(keys, many=False)
    if unique.size <= 16:
        np.testing.assert_array_equal(labels, inverse)
    else:
        assert labels is None
    found, small = unique_inverse(keys, small=True)
    np.testing.assert_array_equal(small, inverse)
    assert small.dtype == (np.int8 if unique.size <= 16 else np.intp)


def test_empty_and_broadcast_keys():
    found, labels = unique_inverse(np.zeros(0))
    assert found.size == 0 and labels.size == 0
    found, labels = unique_inverse(np.broadcast_to(np.float64(0.5), (1000,)))
    assert found.tolist() == [0.5] and not labels.any()
