"""k-ary randomized response: the local randomizer of a category (a user's nearest centre).

Each lm user of :class:`~skhybrid.HybridKMeans` reports the index of its nearest centre
through it in every iteration (Avent, Dubey and Korolova 2020, Algorithm 1). It is a
local mechanism, next to the value randomizers of :mod:`skhybrid.mechanisms._local`.
"""

from numbers import Integral

import numpy as np

from ..utils._responses import respond
from ..utils._random import check_random_state
from ..utils._validation import check_epsilon


def randomized_response_keep_probability(epsilon, n_categories):
    """Probability that k-ary randomized response reports the true category.

    ``e^eps / (e^eps + k - 1)``; each other category has probability
    ``1 / (e^eps + k - 1)``, so any output is at most ``e^eps`` times likelier under one
    input than under another (Kairouz, Oh and Viswanath 2016). Algorithm 1, line 7 of
    Avent et al. 2020 states the same distribution as "the closest cluster with
    probability ``(e^eps - 1) / (K + e^eps - 1)``, a uniformly random one otherwise".
    Computed as ``1 / (1 + (k - 1) e^-eps)``, which does not overflow.

    Parameters
    ----------
    epsilon : float or ndarray
        > 0.
    n_categories : int
        k >= 1.

    Returns
    -------
    probability : float or ndarray
    """
    return 1.0 / (1.0 + (n_categories - 1) * np.exp(-np.asarray(epsilon, dtype=np.float64)))


def randomized_response_change_probability(epsilon, n_categories):
    """Probability that k-ary randomized response reports another category than the true one.

    ``(k - 1) / (e^eps + k - 1)``, computed as ``(k - 1) e^-eps keep`` (see
    :func:`randomized_response_keep_probability`), accurate even where ``keep`` rounds
    to 1, so that a change never becomes impossible.

    Parameters
    ----------
    epsilon : float or ndarray
        > 0.
    n_categories : int
        k >= 1.

    Returns
    -------
    probability : float or ndarray
    """
    return (n_categories - 1) * RandomizedResponse._other_probability(
        np.asarray(epsilon, dtype=np.float64), n_categories)


def response_draws(rng, n_users, n_categories):
    """The randomness of ``n_users`` users' k-ary randomized responses, from ``rng``.

    Each user's uniform in [0, 1) (a multiple of 2**-53: the report changes when it is
    below the change probability) and shift, uniform in ``1 .. k - 1``: the category
    ``(true + shift) mod k`` is then uniform over the other ``k - 1`` categories
    (:func:`~skhybrid.utils._responses.respond`). Drawn as two arrays, the uniforms first.

    Parameters
    ----------
    rng : numpy.random.Generator
    n_users : int
    n_categories : int
        k >= 2.

    Returns
    -------
    uniforms : ndarray of float64 of shape (n_users,)
    shifts : ndarray of intp of shape (n_users,)
    """
    uniforms = rng.random(n_users)
    return uniforms, rng.integers(1, n_categories, size=n_users, dtype=np.intp)


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
    The outputs are categories, not floating-point values, so there is no low-order-bit
    leak. A report changes when a uniform double (a multiple of 2**-53) is below the
    change probability ``(k - 1) / (e^eps + k - 1)``, so the probabilities are exact up to
    that grid; for an epsilon so large that the change probability is below 2**-53, the
    achieved level is about ``53 ln 2 + ln(k - 1)`` (about 37), never unbounded.

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
        uniforms, shifts = response_draws(rng, true.shape[0], k)
        return respond(true.astype(np.intp), uniforms, shifts,
                       randomized_response_change_probability(levels, k), k)

    @staticmethod
    def _other_probability(levels, k):
        # 1 / (e^eps + k - 1) = e^-eps keep, accurate even where keep rounds to 1 (so a
        # change never becomes impossible).
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
