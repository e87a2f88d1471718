"""The exponential mechanism, computed in log space."""

import heapq

import numpy as np

from ..utils._random import check_random_state
from ..utils._validation import check_epsilon


class ExponentialMechanism:
    """Select a candidate with probability proportional to mu(r) exp(epsilon u(r) / (k Delta)).

    McSherry and Talwar 2007; k = 2 in general, k = 1 for utilities that are monotonic
    in the dataset. Probabilities are computed in log space (log-sum-exp), so large
    ``epsilon * u / Delta`` and tiny base measures neither overflow nor underflow.

    Neighbouring relation: datasets that differ by replacing one user's value, with n
    public; ``sensitivity`` bounds the change of every candidate's utility.

    Parameters
    ----------
    epsilon : float
        > 0.
    sensitivity : float
        Utility sensitivity Delta under the relation above.
    monotonic : bool, default=False
        Whether utilities move in the same direction for all candidates between
        neighbours (then k = 1).

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.mechanisms import ExponentialMechanism
    >>> mechanism = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    >>> mechanism.probabilities(np.array([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """

    def __init__(self, *, epsilon, sensitivity, monotonic=False):
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = float(sensitivity)
        if not (np.isfinite(self.sensitivity) and self.sensitivity > 0):
            raise ValueError(f"sensitivity must be finite and > 0; got {sensitivity!r}")
        self.monotonic = bool(monotonic)

    def log_probabilities(self, utilities, log_base_measure=None):
        """Normalised log-probabilities of the candidates.

        Parameters
        ----------
        utilities : array-like of shape (n_candidates,)
        log_base_measure : array-like of shape (n_candidates,), default=None
            log mu(r), e.g. the log-length of an interval; ``-inf`` excludes a candidate.

        Returns
        -------
        log_probabilities : ndarray of shape (n_candidates,)
        """
        utilities = np.asarray(utilities, dtype=np.float64)
        factor = 1.0 if self.monotonic else 2.0
        logits = self.epsilon * utilities / (factor * self.sensitivity)
        if log_base_measure is not None:
            logits = logits + np.asarray(log_base_measure, dtype=np.float64)
        # log-sum-exp around the largest logit (finite: some candidate has mass).
        largest = logits.max()
        return logits - (largest + np.log(np.sum(np.exp(logits - largest))))

    def probabilities(self, utilities, log_base_measure=None):
        """Selection probabilities: ``exp`` of :meth:`log_probabilities`."""
        return np.exp(self.log_probabilities(utilities, log_base_measure))

    def select(self, utilities, log_base_measure=None, *, size=None, random_state=None):
        """Draw candidate indices.

        Parameters
        ----------
        utilities, log_base_measure : see :meth:`log_probabilities`.
        size : int or None, default=None
            Number of independent draws; ``None`` returns one index.
        random_state : None, int or numpy.random.Generator, default=None

        Returns
        -------
        index : int or ndarray of int
        """
        log_p = self.log_probabilities(utilities, log_base_measure)
        cumulative = np.cumsum(np.exp(log_p - log_p.max()))
        rng = check_random_state(random_state)
        draws = rng.random(1 if size is None else size) * cumulative[-1]
        index = np.minimum(np.searchsorted(cumulative, draws, side="right"), cumulative.size - 1)
        return int(index[0]) if size is None else index


def personalized_quantile_costs(epsilon_by_value, quantile):
    """Cheapest privacy cost of making each interval hold the quantile (the PE mechanism).

    Jorgensen, Yu and Cormode's personalized exponential mechanism (PE, ICDE 2015,
    Sec. V) outputs ``r`` with probability proportional to ``exp(-d(D, r) / 2)``, where
    ``d(D, r)`` is the smallest total epsilon of the users whose records must change
    for ``r`` to become the answer. For the q-quantile of n sorted values ``v`` with
    the bounds as outer ends, we take "r is a q-quantile" to mean that the number of
    values below r lies in ``[floor(q n), ceil(q n)]`` (for the median of an odd n = 2k + 1,
    k or k + 1 values below: r lies between the middle value's neighbours, on either
    side of it). On the interval ``(v[j-1], v[j]]`` exactly j values are below r, so

    - ``j > ceil(q n)``: ``j - ceil(q n)`` of the j values below must move above r,
      and the cheapest are the ``j - ceil(q n)`` smallest epsilons among ``v[:j]``;
    - ``j < floor(q n)``: ``floor(q n) - j`` of the values from ``v[j:]`` move below,
      the cheapest being the smallest epsilons among them;
    - otherwise the cost is 0.

    Each is a running sum of "push the next user, pop the smallest": adding one user
    and one move extends the cheapest set by the smallest of the unused epsilons and the
    new one. ``O(n log n)``. With one epsilon for all, ``d = epsilon dist(j, [floor(q n),
    ceil(q n)])``: Smith's (2011) utility ``-epsilon |j - q n|`` up to a constant when
    ``q n`` is a whole or half number (not otherwise). Public users (``epsilon = inf``)
    can never move: an interval that needs them costs ``inf`` (probability 0).

    Derivation of the guarantee (the paper's Theorem, restated for our replace-one
    relation with public epsilons): if D and D' differ only in user u's record, any
    set S of users whose change makes r the answer for D gives the set ``S + {u}`` for
    D', so ``|d(D, r) - d(D', r)| <= epsilon_u`` for every r. The density
    ``exp(-d / 2) / Z`` then changes by at most ``exp(epsilon_u / 2)`` in the numerator
    and in Z: user u has ``epsilon_u``-DP.

    Parameters
    ----------
    epsilon_by_value : ndarray of shape (n_values,)
        The users' epsilons, ordered by their values (ties in any order).
    quantile : float
        q in [0, 1].

    Returns
    -------
    costs : ndarray of shape (n_values + 1,)
        ``d`` on each interval ``(v[j-1], v[j]]``, j = 0..n (with ``v[-1]`` the lower
        and ``v[n]`` the upper bound).
    """
    epsilon_by_value = np.asarray(epsilon_by_value, dtype=np.float64)
    n = epsilon_by_value.size
    low, high = _target_ranks(quantile, n)
    costs = np.zeros(n + 1)
    values = epsilon_by_value.tolist()
    # j = high + 1 .. n: move j - high of the values below up.
    unused = values[:high]
    heapq.heapify(unused)
    total, above = 0.0, []
    for epsilon in values[high:]:
        total += heapq.heappushpop(unused, epsilon)
        above.append(total)
    costs[high + 1:] = above
    # j = low - 1 .. 0: move low - j of the values above down.
    unused = values[low:]
    heapq.heapify(unused)
    total, below = 0.0, []
    for epsilon in reversed(values[:low]):
        total += heapq.heappushpop(unused, epsilon)
        below.append(total)
    costs[:low] = below[::-1]
    return costs


def _target_ranks(quantile, n):
    """``floor(q n)`` and ``ceil(q n)``, with ``q n`` snapped to an integer within rounding
    (0.3 * 10 is 3.0000000000000004 in float64, whose ceiling would be 4)."""
    target = quantile * n
    nearest = round(target)
    if abs(target - nearest) <= 8 * np.finfo(np.float64).eps * max(1.0, target):
        return int(nearest), int(nearest)
    return int(np.floor(target)), int(np.ceil(target))


def personalized_exponential_quantile(values, epsilon, quantile, lower, upper, rng):
    """One draw of Jorgensen et al.'s PE mechanism for a quantile on ``[lower, upper]``.

    The output density is proportional to ``exp(-d(r) / 2)`` on ``[lower, upper]`` with
    ``d`` from :func:`personalized_quantile_costs`: an interval is chosen with
    probability proportional to its length times ``exp(-d / 2)`` (log space), then a
    uniform point in it. When no interval of finite cost has a positive length (public
    users tied at the quantile), the density is a point mass at the quantile value
    ``v[floor(q n)]`` (clamped to the data), which is returned.

    Parameters
    ----------
    values : ndarray of shape (n_values,)
        Values clipped to the bounds.
    epsilon : ndarray of shape (n_values,)
        Each user's epsilon for this draw (np.inf = public).
    quantile : float
    lower, upper : float
    rng : numpy.random.Generator

    Returns
    -------
    estimate : float
    """
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    costs = personalized_quantile_costs(epsilon[order], quantile)
    edges = np.concatenate([[lower], ordered, [upper]])
    lengths = np.diff(edges)
    with np.errstate(divide="ignore"):
        log_lengths = np.log(lengths)
    if not np.isfinite(np.max(log_lengths - costs)):
        return float(ordered[min(_target_ranks(quantile, values.size)[0], values.size - 1)])
    # Utility -d in units of epsilon (already each user's own), so epsilon 1 and
    # sensitivity 1 give the density exp(-d / 2) times the interval's length.
    mechanism = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    chosen = mechanism.select(-costs, log_lengths, random_state=rng)
    return float(edges[chosen] + lengths[chosen] * rng.random())
