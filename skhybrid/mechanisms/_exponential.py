"""The exponential mechanism, computed in log space."""

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
