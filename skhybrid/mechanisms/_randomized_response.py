"""k-ary randomized response: the local randomizer of a category (a user's nearest centre).

Each lm user of :class:`~skhybrid.HybridKMeans` reports the index of its nearest centre
through it in every iteration (Avent, Dubey and Korolova 2020, Algorithm 1). It is a
local mechanism, next to the value randomizers of :mod:`skhybrid.mechanisms._local`.

Below, ``epsilon`` (> 0) is a response's privacy level, ``n_categories`` the number
k >= 1 of categories and ``bits`` (32 or 16) the size of each response's uniform draw.
"""

from numbers import Integral

import numpy as np

from ..utils._responses import DRAW_BITS, SHORT_DRAW_BITS, respond
from ..utils._random import check_random_state, random_words
from ..utils._validation import check_epsilon


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
    return (n_categories - 1) * RandomizedResponse._other_probability(
        np.asarray(epsilon, dtype=np.float64), n_categories)


def randomized_response_widths(epsilon, n_categories, bits=DRAW_BITS):
    """The draws per other category of k-ary randomized response, out of ``2**32``.

    A response reads one uniform integer ``draw`` in ``[0, 2**32)`` and moves the true
    category by ``floor(draw / width) + 1`` when that slot is below ``k - 1``
    (:func:`~skhybrid.utils._responses.respond`): each other category has probability
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


class RandomizedResponse:
    """k-ary randomized response: each user's epsilon-LDP report of one of k categories.

    The true category is kept with probability ``e^eps / (e^eps + k - 1)``; otherwise
    one of the other ``k - 1`` categories is reported, uniformly. Any two inputs are
    neighbours (local DP), and every output's probability ratio between them is at most
    ``e^eps``.

    Parameters
    ----------
    n_categories : int
        k >= 1; the categories are ``0, ..., k - 1``.
    epsilon : float, default=1.0
        The default privacy level; ``privatize`` accepts one per user.

    Notes
    -----
    The outputs are categories (no low-order-bit leak). The change probability is
    rounded up on the grid of the 32-bit draws (:func:`randomized_response_widths`).

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.mechanisms._randomized_response import RandomizedResponse
    >>> response = RandomizedResponse(n_categories=4, epsilon=np.log(3.0))
    >>> response.probabilities(0).round(3).tolist()
    [0.5, 0.167, 0.167, 0.167]
    >>> response.privatize(np.array([0, 3, 3]), random_state=0).shape
    (3,)
    """

    def __init__(self, *, n_categories, epsilon=1.0):
        self.n_categories = n_categories
        self.epsilon = epsilon

    def keep_probability(self, epsilon=None):
        """Probability of reporting the true category (``epsilon=None``: the randomizer's)."""
        return randomized_response_keep_probability(self._levels(epsilon), self._categories())

    def probabilities(self, category, *, epsilon=None):
        """The output distribution for a user whose true category is ``category``.

        Returns
        -------
        probabilities : ndarray of shape (n_categories,)
        """
        k = self._categories()
        levels = self._levels(epsilon)
        keep = float(randomized_response_keep_probability(levels, k))
        probabilities = np.full(k, float(self._other_probability(levels, k)) if k > 1 else 0.0)
        probabilities[self._check_categories(np.array([category]))[0]] = keep
        return probabilities

    def privatize(self, categories, *, epsilon=None, random_state=None):
        """Randomize each user's category on their device.

        Parameters
        ----------
        categories : array-like of int, shape (n_users,)
            True categories in ``[0, n_categories)``.
        epsilon : float or array-like of shape (n_users,), default=None
            Each user's privacy level for this report; ``None`` uses ``epsilon``.
        random_state : None, int or numpy.random.Generator, default=None
            ``None`` uses the operating system's secure randomness.

        Returns
        -------
        reports : ndarray of int, shape (n_users,)
        """
        k = self._categories()
        true = self._check_categories(categories)
        levels = self._levels(epsilon, true.shape[0])
        rng = check_random_state(random_state)
        if k == 1:
            return true.astype(np.intp)
        return respond(true.astype(np.intp), response_draws(rng, true.shape[0]),
                       randomized_response_widths(levels, k), k)

    @staticmethod
    def _other_probability(levels, k):
        # 1 / (e^eps + k - 1) = e^-eps keep (see randomized_response_change_probability).
        return np.exp(-levels) * randomized_response_keep_probability(levels, k)

    def _categories(self):
        k = self.n_categories
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
            raise ValueError(f"n_categories must be an integer >= 1; got {k!r}")
        return int(k)

    def _levels(self, epsilon, n_users=None):
        if epsilon is None:
            return check_epsilon(self.epsilon)
        if np.ndim(epsilon) == 0:
            return check_epsilon(epsilon)
        return check_epsilon(epsilon, n_users)

    def _check_categories(self, categories):
        array = np.asarray(categories)
        if array.ndim != 1 or array.dtype.kind not in "iu":
            raise ValueError(
                "categories must be a 1-dimensional array of integers; got an array of "
                f"dtype {array.dtype} and shape {array.shape}"
            )
        k = self._categories()
        if array.size and (array.min() < 0 or array.max() >= k):
            index = int(np.flatnonzero((array < 0) | (array >= k))[0])
            raise ValueError(
                f"categories must be in [0, {k}); got {array[index].item()!r} at index {index}"
            )
        return array
