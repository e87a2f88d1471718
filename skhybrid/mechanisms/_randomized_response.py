"""k-ary randomized response: the local randomizer of a category (a user's nearest centre).

Each lm user of :class:`~skhybrid.HybridKMeans` reports the index of its nearest centre
through it in every iteration (Avent, Dubey and Korolova 2020, Algorithm 1); the
responses are drawn in the K-means pass (``respond`` of
``skhybrid/cluster/_k_means_lloyd.pyx``) from the widths and draws defined here.

Below, ``epsilon`` (> 0) is a response's privacy level, ``n_categories`` the number
k >= 1 of categories and ``bits`` (32 or 16) the size of each response's uniform draw.
"""

import numpy as np

from ..utils._random import random_words

#: Bits of one response's draw: a uniform integer in ``[0, 2**32)``, two per 64-bit word.
#: The grid caps the achieved level at ``32 ln 2`` (see :func:`randomized_response_widths`).
DRAW_BITS = 32
#: HybridKMeans' responses draw 16 bits where that grid is fine enough (four draws per
#: word; :func:`response_bits`).
SHORT_DRAW_BITS = 16


def randomized_response_keep_probability(epsilon, n_categories):
    """Probability that k-ary randomized response reports the true category.

    ``e^eps / (e^eps + k - 1)``; each other category has probability
    ``1 / (e^eps + k - 1)``, so any output is at most ``e^eps`` times likelier under one
    input than under another (Kairouz, Oh and Viswanath 2016). Algorithm 1, line 7 of
    Avent et al. 2020 states the same distribution as "the closest cluster with
    probability ``(e^eps - 1) / (K + e^eps - 1)``, a uniformly random one otherwise".
    Computed as ``1 / (1 + (k - 1) e^-eps)``, which does not overflow.

    """
    return 1.0 / (1.0 + (n_categories - 1) * np.exp(-np.asarray(epsilon, dtype=np.float64)))


def randomized_response_change_probability(epsilon, n_categories):
    """Probability that k-ary randomized response reports another category than the true one.

    ``(k - 1) / (e^eps + k - 1)``, computed as ``(k - 1) e^-eps keep`` (see
    :func:`randomized_response_keep_probability`), accurate even where ``keep`` rounds
    to 1, so that a change never becomes impossible.

    """
    levels = np.asarray(epsilon, dtype=np.float64)
    # 1 / (e^eps + k - 1) = e^-eps keep
    return (n_categories - 1) * (np.exp(-levels) * randomized_response_keep_probability(
        levels, n_categories))


def randomized_response_widths(epsilon, n_categories, bits=DRAW_BITS):
    """The draws per other category of k-ary randomized response, out of ``2**32``.

    A response reads one uniform integer ``draw`` in ``[0, 2**32)`` and moves the true
    category by ``floor(draw / width) + 1`` when that slot is below ``k - 1`` (``respond``
    of ``skhybrid/cluster/_k_means_lloyd.pyx``): each other category has probability
    exactly ``width / 2**32`` and the true one ``1 - (k - 1) width / 2**32``. The width
    is the change probability ``c`` (:func:`randomized_response_change_probability`)
    on that grid, rounded up: ``ceil(ceil(c 2**32) / (k - 1))``, in integers, and at
    least 1. The response is then at least as random as ``c`` asks, so every
    probability ratio is at most ``e^eps``: the change probability exceeds ``c`` by at
    most ``(k - 1) 2**-32``. Whatever the epsilon, the ratio is at most ``2**32``: the
    achieved level is at most ``32 ln 2`` (about 22.2), never unbounded. (An epsilon
    above that would change fewer than one report in four billion; it gets that many.)
    With ``bits=16`` the same on the grid of ``2**16`` draws. One category: ``2**bits``.

    Returns
    -------
    width : ndarray of float64, of the shape of ``epsilon``
        Integers in ``[1, 2**bits]``, exact in float64.
    """
    _check_bits(bits)
    levels = np.asarray(epsilon, dtype=np.float64)
    grid = 2.0**bits
    if n_categories == 1:
        return np.full(levels.shape, grid)
    # c 2**bits is exact (a power of two), and so is its ceiling, an integer.
    change_draws = np.ceil(randomized_response_change_probability(levels, n_categories)
                           * grid).astype(np.int64)
    width = np.maximum(-(-change_draws // (n_categories - 1)), 1)  # ceiling division
    if np.any((n_categories - 1) * width > 2**bits):  # the true category's share < 0
        raise ValueError(f"{n_categories} categories are too many for draws of {bits} "
                         f"bits at epsilon {levels.min()}")
    return width.astype(np.float64)


def _check_bits(bits):
    if bits not in (DRAW_BITS, SHORT_DRAW_BITS):
        raise ValueError(f"bits must be {DRAW_BITS} or {SHORT_DRAW_BITS}; got {bits!r}")


def randomized_response_drawn_probabilities(epsilon, n_categories, bits=DRAW_BITS):
    """The probabilities k-ary randomized response is drawn with, exactly: the true
    category's and each other one's, on the grid of :func:`randomized_response_widths`.

    ``w / 2**bits`` for each other category and ``1 - (k - 1) w / 2**bits`` for the true
    one (exact in float64): an estimator that inverts the response is unbiased only with
    these, not with :func:`randomized_response_keep_probability`'s.

    Returns
    -------
    keep, other : ndarray of float64, of the shape of ``epsilon``
    """
    other = randomized_response_widths(epsilon, n_categories, bits) / 2.0**bits
    if n_categories == 1:
        return np.ones_like(other), np.zeros_like(other)
    return 1.0 - (n_categories - 1) * other, other


def response_draws(rng, n_users, bits=DRAW_BITS):
    """One uniform ``bits``-bit draw per user's randomized response, from ``rng``'s
    64-bit words (two or four draws per word).

    Parameters
    ----------
    rng : numpy.random.Generator
    n_users : int
    bits : {32, 16}, default=32

    Returns
    -------
    draws : ndarray of uint32 (uint16 with ``bits=16``) of shape (n_users,)
    """
    _check_bits(bits)
    per_word = 64 // bits
    words = random_words(rng, -(-n_users // per_word))
    return words.view(np.uint16 if bits == SHORT_DRAW_BITS else np.uint32)[:n_users]


#: A 16-bit width must be at least this many draws for :func:`response_bits` to choose
#: 16-bit draws: the rounding of each other category's probability up to the grid then
#: adds less than ``2**-8`` of it.
_SHORT_MIN_WIDTH = 2**8


def response_bits(epsilon, n_categories):
    """The bits of each draw of HybridKMeans' randomized responses: 16 where that grid is
    fine enough for every privacy level, else 32.

    A 64-bit word gives four 16-bit draws, or two of 32 bits. On either grid each other
    category's probability is rounded up (:func:`randomized_response_widths`), so the
    epsilon holds on both. 16 bits are used where every level's 16-bit width is at
    least ``2**8`` draws (the rounding then adds less than ``2**-8``; the de-mixing
    uses the drawn probabilities): ``e^eps + k - 1`` below about 257.

    Returns
    -------
    bits : int
        16 or 32.
    """
    if n_categories < 2 or n_categories * (n_categories - 1) > 2**SHORT_DRAW_BITS:
        return DRAW_BITS
    widths = randomized_response_widths(epsilon, n_categories, SHORT_DRAW_BITS)
    return SHORT_DRAW_BITS if widths.min() >= _SHORT_MIN_WIDTH else DRAW_BITS
