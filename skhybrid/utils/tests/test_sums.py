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
    integers = codes.T.astype(np.int64)
    return np.array([[int(v) for v in integers[labels == g].sum(axis=0)]
                     for g in range(n_groups)], dtype=object)


@pytest.mark.parametrize("n_features, n_groups, label_dtype", [
    (1, 3, np.intp),  # bincount
    (5, 3, np.intp),  # one matrix product with the one-hot groups
    (3, 40, np.intp),  # bincount
    (1, 1, np.int8),  # one masked product per group
    (7, 2, np.intp),  # one masked product per group
    (2, 6, np.int8),  # one masked product per group (few privacy levels)
])
def test_grouped_code_sums_are_the_exact_integer_sums(n_features, n_groups, label_dtype):
    # More rows than one block, codes at the top of the grid: float sums of a whole
    # column would round; the blocked sums must not, whichever path adds them.
    rng = np.random.default_rng(0)
    n = 2 * BLOCK_ROWS + 4_097  # a whole column of top codes would pass 2**53
    codes = np.full((n_features, n), 2.0**FIXED_POINT_BITS)  # feature-major
    codes[:, ::7] = np.rint(rng.uniform(0, 2.0**FIXED_POINT_BITS, (n_features, codes[0, ::7].size)))
    labels = rng.integers(0, n_groups + 1, n).astype(label_dtype)  # n_groups: left out
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


def test_codes_stay_on_the_grid_for_any_legal_bounds():
    """Values at, near and beyond the bounds map into [0, 2**B] for bounds of every size
    and offset (including far from zero), without a final clip."""
    from skhybrid.utils._sums import FIXED_POINT_BITS, fixed_point_codes

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
            codes = fixed_point_codes(values, np.array([lower]), np.array([upper]))
        assert codes.min() >= 0.0 and codes.max() <= top, (lower, upper, codes.ravel())
        assert codes[0, 0] == 0.0 and codes[0, 1] == top
