"""k-ary randomized response: Algorithm 1's keep probability, each user's own epsilon, its audit."""

import numpy as np
import pytest

from skhybrid.audit import audit_mechanism
from skhybrid.mechanisms._randomized_response import (
    DRAW_BITS,
    SHORT_DRAW_BITS,
    randomized_response_change_probability,
    randomized_response_drawn_probabilities,
    randomized_response_keep_probability,
    randomized_response_widths,
    response_bits,
    response_draws,
)

N_AUDIT = 200_000  # releases per side for the vectorised mechanism audits


def respond(category, draw, width, n_categories):
    """A numpy reference of the K-means pass's ``respond`` (``_k_means_lloyd.pyx``, which
    says why the float quotient's floor is the exact slot)."""
    slot = np.intp(np.float64(draw) / width)
    moved = category + (slot + 1) * np.intp(slot < n_categories - 1)
    return moved - n_categories * np.intp(moved >= n_categories)


def privatize(categories, epsilon, k, rng):
    """Each category through k-ary randomized response at its epsilon, as the pass draws it."""
    categories = np.asarray(categories, dtype=np.intp)
    widths = randomized_response_widths(np.broadcast_to(epsilon, categories.shape), k)
    return respond(categories, response_draws(rng, categories.size), widths, k)


def test_keep_probability_is_algorithm_1_line_7():
    # "closest cluster with prob. (e^eps - 1) / (K + e^eps - 1), a uniformly random one
    # (possibly the closest) otherwise".
    epsilon, k = np.array([0.1, 1.0, 3.5, 40.0]), 4
    closest = (np.exp(epsilon) - 1) / (k + np.exp(epsilon) - 1)
    np.testing.assert_allclose(
        randomized_response_keep_probability(epsilon, k), closest + (1 - closest) / k, rtol=1e-12
    )
    assert randomized_response_keep_probability(800.0, k) == 1.0  # no overflow


def test_randomized_response_keeps_the_truth_with_probability_e_eps_over_e_eps_plus_k_minus_1():
    k, epsilon, n = 5, 0.8, 400_000
    reports = privatize(np.full(n, 2), epsilon, k, np.random.default_rng(0))
    frequencies = np.bincount(reports, minlength=k) / n
    keep = np.exp(epsilon) / (np.exp(epsilon) + k - 1)
    expected = np.where(np.arange(k) == 2, keep, (1 - keep) / (k - 1))
    standard_error = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(frequencies - expected) < 4 * standard_error)
    np.testing.assert_allclose(randomized_response_keep_probability(epsilon, k), keep,
                               rtol=1e-12)


def test_randomized_response_uses_each_users_own_epsilon():
    n = 200_000
    epsilon = np.where(np.arange(n) < n // 2, 0.1, 6.0)
    reports = privatize(np.zeros(n, dtype=int), epsilon, 3, np.random.default_rng(1))
    for members, level in ((slice(None, n // 2), 0.1), (slice(n // 2, None), 6.0)):
        kept = np.mean(reports[members] == 0)
        keep = randomized_response_keep_probability(level, 3)
        assert abs(kept - keep) < 4 * np.sqrt(keep * (1 - keep) / (n // 2))


def test_one_category_is_always_reported():
    reports = privatize(np.zeros(50, int), 0.01, 1, np.random.default_rng(0))
    assert np.all(reports == 0)


EPSILONS = [1e-9, 0.01, 0.3, 1.0, 2.5, 7.0, 15.0, 21.0, 23.0, 36.0, 60.0, 800.0]


# The grids of the draws, and the numbers of categories each is used with (16 bits only
# for k (k - 1) <= 2**16: response_bits).
GRIDS = [(DRAW_BITS, k) for k in [2, 3, 10, 50, 1000]] + [(SHORT_DRAW_BITS, k)
                                                         for k in [2, 3, 10, 50, 256]]


@pytest.mark.parametrize("bits, k", GRIDS)
def test_each_slot_of_a_width_is_exactly_its_draws(bits, k):
    """A response reports ``(true + j + 1) mod k`` for exactly the draws in
    ``[j w, (j + 1) w)``, ``j < k - 1``, and the truth for every draw from ``(k - 1) w``:
    the float quotient is monotone in the draw, so its exact value at each boundary
    proves each category's ``w`` draws of ``2**bits``."""
    rng = np.random.default_rng(k)
    grid = 2**bits
    for width in randomized_response_widths(np.array(EPSILONS), k, bits):
        w = int(width)
        draws = [0, grid - 1] + [j * w + step for j in range(1, k) for step in (-1, 0)
                                 if j * w + step < grid]
        draws = np.array(draws, dtype=np.uint16 if bits == 16 else np.uint32)
        true = rng.integers(0, k, size=draws.size)
        slot = draws.astype(np.int64) // w  # exact integer division
        moved = np.where(slot < k - 1, slot + 1, 0)
        np.testing.assert_array_equal(respond(true, draws, width, k), (true + moved) % k)


@pytest.mark.parametrize("bits, k", GRIDS)
def test_widths_are_at_least_as_random_as_the_epsilon_asks(bits, k):
    """Each other category's exact probability ``w / 2**bits`` and the truth's
    ``1 - (k - 1) w / 2**bits`` (not negative): their ratio is at most ``e^eps`` (to
    float rounding of ``e^eps``) and at most ``2**bits`` for any epsilon, and the change
    probability exceeds the asked one by at most ``(k - 1) 2**-bits``."""
    from fractions import Fraction

    grid = 2**bits
    epsilon = np.array(EPSILONS)
    widths = randomized_response_widths(epsilon, k, bits)
    change = randomized_response_change_probability(epsilon, k)
    assert np.all(widths == np.floor(widths)) and np.all(widths >= 1)
    for level, width, asked in zip(EPSILONS, widths, change):
        other = Fraction(int(width), grid)
        keep = 1 - (k - 1) * other
        assert keep >= 0
        ratio = keep / other
        assert ratio <= grid
        if asked > 0:  # else e^-eps underflows (eps > 745)
            assert float(ratio) <= np.exp(level) * (1 + 1e-12)
        assert 0 <= (k - 1) * other - Fraction(asked) <= Fraction(k - 1, grid)
        if level < 10 and bits == DRAW_BITS:  # far above the grid: the asked distribution
            assert float(other) == pytest.approx(float(asked) / (k - 1), rel=1e-6)
    assert np.all(randomized_response_widths(epsilon, 1, bits) == grid)


def test_widths_refuse_more_categories_than_the_grid_holds():
    """With 16-bit draws, 1000 categories at a small epsilon would need each other
    category's share rounded up to 66 draws, 999 x 66 > 2**16 in all: refused (as is
    a grid other than 32 or 16 bits)."""
    with pytest.raises(ValueError, match="categories"):
        randomized_response_widths(np.array([0.01]), 1000, SHORT_DRAW_BITS)
    with pytest.raises(ValueError, match="bits must be 32 or 16"):
        randomized_response_widths(np.array([1.0]), 3, 8)


def test_response_bits_are_16_only_where_every_level_keeps_256_draws_per_category():
    """16-bit draws where each level's 16-bit width is at least 2**8 (the rounding up to
    the grid adds less than 2**-8 of each other category's probability) and k (k - 1)
    fits in 2**16; else 32 bits."""
    for k in [2, 3, 10, 50, 200, 256]:
        for level in [0.01, 0.5, 1.0, 3.0, 4.0, 5.0, 5.5, 6.0, 10.0]:
            widths = randomized_response_widths(np.array([level]), k, SHORT_DRAW_BITS)
            expected = SHORT_DRAW_BITS if widths[0] >= 2**8 else DRAW_BITS
            assert response_bits(np.array([level]), k) == expected
    assert response_bits(np.array([1.0]), 3) == 16
    assert response_bits(np.array([6.0]), 3) == 32
    assert response_bits(np.array([1.0, 6.0]), 3) == 32  # one level too fine for 16 bits
    assert response_bits(np.array([0.01]), 257) == 32  # 257 x 256 > 2**16
    assert response_bits(np.array([1.0]), 1) == 32  # no draws


@pytest.mark.parametrize("bits, k", [(DRAW_BITS, 1)] + GRIDS)
def test_drawn_probabilities_are_the_slots_exact_shares(bits, k):
    """The probabilities the responses are drawn with: each other category's ``w`` draws
    of ``2**bits``, the true one's the rest, summing to 1 exactly; within
    ``(k - 1) 2**-bits`` of the asked ones, on the side of more randomness."""
    grid = 2**bits
    epsilon = np.array(EPSILONS)
    keep, other = randomized_response_drawn_probabilities(epsilon, k, bits)
    asked = randomized_response_keep_probability(epsilon, k)
    if k == 1:
        assert np.all(keep == 1.0) and np.all(other == 0.0)
        return
    np.testing.assert_array_equal(other * grid, randomized_response_widths(epsilon, k, bits))
    assert np.all(keep + (k - 1) * other == 1.0)
    # (to the rounding of the asked probability, 2**-52)
    assert np.all(keep <= asked + 2.0**-52) and np.all(asked - keep <= (k - 1) / grid)


def test_response_draws_are_two_per_word_of_the_generator():
    draws = response_draws(np.random.default_rng(5), 5)
    words = np.random.default_rng(5).bit_generator.random_raw(3)
    assert draws.dtype == np.uint32 and draws.shape == (5,)
    np.testing.assert_array_equal(draws, words.view(np.uint32)[:5])


def test_short_response_draws_are_four_per_word_of_the_generator():
    draws = response_draws(np.random.default_rng(5), 9, SHORT_DRAW_BITS)
    words = np.random.default_rng(5).bit_generator.random_raw(3)
    assert draws.dtype == np.uint16 and draws.shape == (9,)
    np.testing.assert_array_equal(draws, words.view(np.uint16)[:9])
    with pytest.raises(ValueError, match="bits must be 32 or 16"):
        response_draws(np.random.default_rng(5), 9, 64)



def _response_release(category, epsilon):
    def release(n, rng):
        return privatize(np.full(n, category), epsilon, 4, rng)

    return release


def test_randomized_response_passes_the_categorical_audit_at_its_epsilon():
    result = audit_mechanism(
        _response_release(0, 1.0), _response_release(2, 1.0), 1.0,
        n_samples=N_AUDIT, random_state=31,
    )
    assert result.n_bins == 4 and result.passed, str(result)


def test_randomized_response_audit_fails_when_run_at_1_4_times_the_epsilon():
    result = audit_mechanism(
        _response_release(0, 1.4), _response_release(2, 1.4), 1.0,
        n_samples=N_AUDIT, random_state=32,
    )
    assert not result.passed, str(result)
