"""Compiled loops (numba) of a charge: each user's totals read, updated and checked once.

In numpy, the double-double update of the epsilon totals is a dozen passes over memory
(a gather per column, the TwoSum's temporaries, the comparison with the budget); here it
is one pass, with the same float operations in the same order (no fast-math: TwoSum
needs every rounding as IEEE specifies it). Options as in :mod:`skhybrid.utils._kernels`.
"""

import numba
import numpy as np

_OPTIONS = {"nogil": True, "cache": True, "boundscheck": False}


@numba.njit(**_OPTIONS)
def epsilon_totals(high, low, budget, slots, costs, codes, sign, new_high, new_low):
    """``high + low`` of ``slots`` plus ``sign`` times their cost, by Knuth's TwoSum.

    ``costs[codes[i]]`` is user ``i``'s cost (``costs[0]`` when ``codes`` is empty).
    Writes the renormalised totals to ``new_high`` and ``new_low``: ``new_high`` stays
    the float64 rounding of the exact sum of the costs, so ``k`` charges of ``epsilon``
    read back as exactly ``k * epsilon`` (see :mod:`skhybrid.accounting._composition`).
    Returns how many users end above ``budget``.
    """
    n_over = 0
    single = codes.size == 0
    for i in range(slots.size):
        slot = slots[i]
        cost = sign * (costs[0] if single else costs[codes[i]])
        old_high = high[slot]
        total = old_high + cost
        back = total - old_high
        error = low[slot] + ((old_high - (total - back)) + (cost - back))
        renormalised = total + error
        new_high[i] = renormalised
        new_low[i] = error - (renormalised - total)
        if renormalised > budget[slot]:
            n_over += 1
    return n_over


@numba.njit(**_OPTIONS)
def scatter_pair(first, second, slots, first_values, second_values):
    """``first[slots] = first_values`` and the same for ``second``, in one pass."""
    for i in range(slots.size):
        first[slots[i]] = first_values[i]
        second[slots[i]] = second_values[i]


def no_codes():
    """The empty codes array that means "one cost for everyone"."""
    return np.zeros(0, dtype=np.uint8)
