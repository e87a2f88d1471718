"""The mean estimators' fit as sufficient statistics plus one release by the curator.

Every mean estimator here is a function of small per-group statistics: the number of
users and the sum of their values (clipped raw values of tcm users, privatized reports
of lm users), per trust group or per privacy level. :class:`StatisticsFitMixin` computes
them in one of three ways and then draws the curator's noise once:

- in memory, from numpy arrays (``fit``);
- chunk by chunk with Dask, from Dask arrays or DataFrames (``fit``), without collecting
  the data: each chunk's statistics are computed by the same numpy code where the chunk
  lives (:func:`skhybrid.utils._dask.map_chunks`), and only the statistics travel;
- over a stream (``partial_fit``): statistics accumulate over chunks, and the noise is
  drawn when the estimate is first read after new data.

Local randomness (lm users' reports simulated from raw values) happens per chunk, where
the data are, with a child generator per chunk; the curator's noise is drawn from the
estimator's own generator after every chunk is in.
"""

import functools
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import check_array

from ..base import validate_fit_input
from ..exceptions import PrivacyBudgetWarning
from ..utils._dask import (
    any_dask,
    check_dask_features,
    chunk_generators,
    is_dask_collection,
    map_chunks,
    n_chunks,
    renumbered_errors,
)
from ..utils._random import check_random_state
from ..utils._validation import check_bounds, check_epsilon, check_trust_group, resolve_bounds


@dataclass(frozen=True)
class LevelStatistics:
    """Sufficient statistics of an affine mean: user counts and value sums per level.

    A level is a (trust model, epsilon) pair; levels are sorted by epsilon, tcm first.

    Attributes
    ----------
    epsilons : ndarray of shape (n_levels,)
        The level's privacy level (``np.inf`` = public).
    local : ndarray of bool of shape (n_levels,)
        True for lm levels, whose sums are of privatized reports.
    counts : ndarray of int64 of shape (n_levels,)
    sums : ndarray of shape (n_levels, n_features)
        Sum of the level's users' values: clipped raw values for tcm levels, reports for
        lm levels.
    """

    epsilons: np.ndarray
    local: np.ndarray
    counts: np.ndarray
    sums: np.ndarray

    @classmethod
    def from_users(cls, values, epsilon, local):
        """Group users by level and add up their values.

        Parameters
        ----------
        values : ndarray of shape (n_samples, n_features)
        epsilon : float or ndarray of shape (n_samples,)
        local : ndarray of bool of shape (n_samples,)

        Returns
        -------
        statistics : LevelStatistics
        """
        epsilon = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), local.shape)
        return cls._grouped(epsilon, local, np.ones(local.shape[0], dtype=np.int64), values)

    @classmethod
    def _grouped(cls, epsilon, local, counts, sums):
        # epsilon > 0, so a negated level marks lm without colliding with a tcm level.
        key = np.where(local, -epsilon, epsilon)
        levels, inverse = np.unique(key, return_inverse=True)
        level_counts = np.bincount(inverse, weights=counts, minlength=levels.size)
        level_sums = np.stack(
            [np.bincount(inverse, weights=column, minlength=levels.size) for column in sums.T],
            axis=1,
        ) if sums.shape[1] else np.zeros((levels.size, 0))
        # tcm levels first, by epsilon (np.unique sorted the keys: lm levels came first).
        n_local = int(np.count_nonzero(levels < 0))
        order = np.concatenate([np.arange(n_local, levels.size), np.arange(n_local)[::-1]])
        return cls(
            epsilons=np.abs(levels)[order], local=(levels < 0)[order],
            counts=level_counts[order].astype(np.int64), sums=level_sums[order],
        )

    def __add__(self, other):
        if self.sums.shape[1] != other.sums.shape[1]:
            raise ValueError(
                f"cannot add statistics of {other.sums.shape[1]} features to statistics of "
                f"{self.sums.shape[1]}"
            )
        return self._grouped(
            np.concatenate([self.epsilons, other.epsilons]),
            np.concatenate([self.local, other.local]),
            np.concatenate([self.counts, other.counts]),
            np.concatenate([self.sums, other.sums]),
        )

    @property
    def n_users(self):
        """The number of users counted."""
        return int(self.counts.sum())


def level_lookup(level_epsilons, level_local, level_values, epsilon, local):
    """Each user's entry of a per-level table (for example their level's weight).

    Parameters
    ----------
    level_epsilons, level_local, level_values : ndarray of shape (n_levels,)
        A table over the levels of a :class:`LevelStatistics`.
    epsilon : ndarray of shape (n_samples,)
    local : ndarray of bool of shape (n_samples,)

    Returns
    -------
    values : ndarray of shape (n_samples,)
    """
    level_keys = np.where(level_local, -level_epsilons, level_epsilons)
    # Levels come tcm first by increasing epsilon, then lm by increasing epsilon: sorted
    # keys are the lm levels reversed, then the tcm levels.
    n_local = int(np.count_nonzero(level_local))
    n_central = level_keys.size - n_local
    order = np.concatenate([np.arange(level_keys.size - 1, n_central - 1, -1), np.arange(n_central)])
    # Searching the distinct keys (sorted) and spreading back is much faster than
    # searching a million unsorted keys.
    keys, inverse = np.unique(np.where(local, -epsilon, epsilon), return_inverse=True)
    position = np.minimum(np.searchsorted(level_keys[order], keys), order.size - 1)
    if not np.array_equal(level_keys[order][position], keys):
        raise ValueError("a user's privacy level is not among the fitted levels")
    return np.asarray(level_values, dtype=np.float64)[order][position][inverse]


def dask_bounds(bounds, extremes, n_features, *, stacklevel):
    """Validated ``bounds``, or for ``bounds=None`` the range over every chunk's raw rows.

    Parameters
    ----------
    bounds : tuple (lower, upper) or None
    extremes : list of (ndarray, ndarray) or None
        Each chunk's per-feature minimum and maximum, None for a chunk without raw rows.
    n_features : int
    stacklevel : int
        Of the :class:`~skhybrid.exceptions.PrivacyLeakWarning`.

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
    """
    if bounds is not None:
        return check_bounds(bounds, n_features)
    seen = [np.vstack(part) for part in extremes if part is not None]
    if not seen:
        raise ValueError(
            "bounds=None cannot be derived from privatized reports alone; pass bounds"
        )
    return resolve_bounds(None, np.vstack(seen), stacklevel=stacklevel)


def _validate_chunk(X, trust_group, epsilon, *, default_epsilon, n_features, allow_inf, offset):
    """Validate one chunk of a Dask fit as ``validate_fit_input`` validates a whole one."""
    with renumbered_errors(lambda row: offset + row):
        X = check_array(X, dtype=np.float64)
        if X.shape[1] != n_features:
            raise ValueError(
                f"X has {X.shape[1]} features in one chunk, but {n_features} in the first"
            )
        is_tcm = check_trust_group(trust_group, X.shape[0])
        if epsilon is None or np.ndim(epsilon) == 0:
            levels = check_epsilon(
                default_epsilon if epsilon is None else epsilon, allow_inf=allow_inf
            )
        else:
            levels = check_epsilon(np.asarray(epsilon), X.shape[0], allow_inf=allow_inf)
    return X, is_tcm, levels


def _chunk_task(estimator, context, X, trust_group, epsilon, *, offset, rng, validate):
    """One chunk's statistics (runs where the chunk lives)."""
    X, is_tcm, levels = _validate_chunk(X, trust_group, epsilon, offset=offset, **validate)
    with renumbered_errors(lambda row: offset + row):
        return estimator._chunk_statistics(X, is_tcm, levels, context, rng)


def _chunk_extremes(estimator, X, trust_group, epsilon, *, offset, rng, validate):
    """Per-feature minimum and maximum of one chunk's raw rows (for ``bounds=None``)."""
    X, is_tcm, levels = _validate_chunk(X, trust_group, epsilon, offset=offset, **validate)
    raw = X[estimator._raw_rows(is_tcm, levels)]
    if raw.shape[0] == 0:
        return None
    return raw.min(axis=0), raw.max(axis=0)


class StatisticsFitMixin:
    """``fit`` and ``partial_fit`` from sufficient statistics and one release.

    Subclasses define:

    - ``_allow_inf``: whether public users (epsilon = inf) are accepted;
    - ``_raw_rows(is_tcm, epsilon)``: the rows holding raw values (``bounds=None`` is
      derived from them; privatized reports are never looked at);
    - ``_public_context(lower, upper)``: the resolved public quantities of a fit;
    - ``_chunk_statistics(X, is_tcm, epsilon, context, rng)``: a chunk's statistics, an
      object supporting ``+``; ``rng`` simulates the lm users' devices;
    - ``_release(statistics, context, rng, fit_warnings)``: draws the curator's noise,
      sets the fitted attributes and returns the estimate (``fit_warnings``: whether
      ``fit`` was given ``trust_group``, for warnings about an empty group).
    """

    _allow_inf = False

    @property
    def mean_(self):
        """The private estimate; after ``partial_fit``, released on first read."""
        state = self.__dict__
        if state.get("_release_pending"):
            self._release_pending_estimate()
        if "_estimate" not in state:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute 'mean_'")
        return state["_estimate"]

    def _fit_statistics(self, X, trust_group, epsilon):
        """The body of ``fit``: statistics of every row, then one release."""
        rng = check_random_state(self.random_state)
        statistics, context = self._statistics(X, trust_group, epsilon, rng, reset=True)
        self._rng = rng
        self._statistics_ = statistics
        self._context = context
        self._n_releases = 0
        self._release_pending_estimate(fit_warnings=trust_group is not None)
        return self

    def _partial_fit_statistics(self, X, trust_group, epsilon):
        """The body of ``partial_fit``: add a chunk's statistics; the release waits."""
        first = "_statistics_" not in self.__dict__
        if first:
            # bounds=None takes the first chunk's range (with a PrivacyLeakWarning) and
            # clips later chunks to it.
            self._rng = check_random_state(self.random_state)
            self._n_releases = 0
        statistics, context = self._statistics(X, trust_group, epsilon, self._rng, reset=first)
        self._statistics_ = statistics if first else self._statistics_ + statistics
        self._context = context
        self._release_pending = True
        return self

    def _release_pending_estimate(self, fit_warnings=False):
        if self._n_releases:
            warnings.warn(
                f"{type(self).__name__} releases a new estimate after partial_fit: every "
                "user in an earlier release takes part again and spends their epsilon "
                f"again (release number {self._n_releases + 1}).",
                PrivacyBudgetWarning,
                stacklevel=3,
            )
        estimate = self._release(self._statistics_, self._context, self._rng, fit_warnings)
        self._estimate = np.asarray(estimate, dtype=np.float64)
        self._n_releases += 1
        self._release_pending = False

    def _statistics(self, X, trust_group, epsilon, rng, *, reset):
        """Statistics of ``X`` (numpy or Dask) and the public context of the fit."""
        if any_dask(X, trust_group, epsilon):
            return self._dask_statistics(X, trust_group, epsilon, rng, reset=reset)
        X, is_tcm, levels = validate_fit_input(
            self, X, trust_group, epsilon, allow_inf=self._allow_inf, reset=reset
        )
        if reset:
            # Only bounds=None reads the raw rows; given bounds need no copy of them.
            raw = X[self._raw_rows(is_tcm, levels)] if self.bounds is None else X
            if raw.shape[0] == 0:
                raise ValueError(
                    "bounds=None cannot be derived from privatized reports alone; pass bounds"
                )
            lower, upper = resolve_bounds(self.bounds, raw, stacklevel=6)
            context = self._public_context(lower, upper)
        else:
            context = self._context
        return self._chunk_statistics(X, is_tcm, levels, context, rng), context

    def _dask_statistics(self, X, trust_group, epsilon, rng, *, reset):
        if not is_dask_collection(X):
            raise TypeError(
                "X must be a Dask array or DataFrame when the metadata are Dask collections; "
                f"got {type(X).__name__}"
            )
        check_dask_features(self, X, reset=reset)
        validate = {
            "default_epsilon": self.epsilon, "n_features": self.n_features_in_,
            "allow_inf": self._allow_inf,
        }
        metadata = {"trust_group": trust_group, "epsilon": epsilon}
        if not reset:
            context = self._context
        else:
            extremes = None
            if self.bounds is None:
                extremes = map_chunks(
                    functools.partial(_chunk_extremes, self, validate=validate), X, **metadata
                )
            lower, upper = dask_bounds(self.bounds, extremes, self.n_features_in_, stacklevel=8)
            context = self._public_context(lower, upper)
        task = functools.partial(_chunk_task, self, context, validate=validate)
        parts = map_chunks(task, X, generators=chunk_generators(rng, n_chunks(X)), **metadata)
        return functools.reduce(lambda total, part: total + part, parts), context
