"""Grouped sums of fixed-point codes are exact integers, whichever path sums them."""

import numpy as np
import pytest

from skhybrid.utils._sums import (
    BLOCK_ROWS,
    FIXED_POINT_BITS,
    fixed_point_codes,
    fixed_point_sums,
    grouped_code_sums,
)


def _exact(codes, labels, n_groups):
    integers = codes.astype(np.int64)
    return np.array([[int(v) for v in integers[labels == g].sum(axis=0)]
                     for g in range(n_groups)], dtype=object)


@pytest.mark.parametrize("n_features, n_groups", [(1, 3), (5, 3), (3, 40)])
def test_grouped_code_sums_are_the_exact_integer_sums(n_features, n_groups):
    # More rows than one block, codes at the top of the grid: float sums of a whole
    # column would round; the blocked sums must not, by matrix product or bincount.
    rng = np.random.default_rng(0)
    n = 2 * BLOCK_ROWS + 4_097  # a whole column of top codes would pass 2**53
    codes = np.full((n, n_features), 2.0**FIXED_POINT_BITS)
    codes[::7] = np.rint(rng.uniform(0, 2.0**FIXED_POINT_BITS, (len(codes[::7]), n_features)))
    labels = rng.integers(0, n_groups + 1, n)  # label n_groups: left out
    sums = grouped_code_sums(codes, labels, n_groups)
    assert sums.dtype == np.int64
    np.testing.assert_array_equal(sums.astype(object), _exact(codes, labels, n_groups))


def test_fixed_point_sums_equal_the_grouped_sums_of_their_codes():
    rng = np.random.default_rng(1)
    values = rng.normal(0.5, 1.0, size=(10_000, 4))  # some outside the bounds
    lower, upper = np.zeros(4), np.ones(4)
    labels = rng.integers(0, 6, 10_000)
    np.testing.assert_array_equal(
        fixed_point_sums(values, lower, upper, labels=labels, n_groups=5),
        grouped_code_sums(fixed_point_codes(values, lower, upper), labels, 5),
    )
