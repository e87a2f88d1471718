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

import dataclasses
import functools
import sys
import threading
from dataclasses import dataclass, field

import numpy as np
from sklearn.utils.validation import check_array

from ..accounting import charge_dask_release, charge_release, check_user_id, user_id_array
from ..base import (
    NonFiniteValues,
    check_fit_metadata,
    clamp_estimate,
    finite_float_rows,
    float_rows,
    refuse_non_finite,
    validate_fit_input,
)
from ..exceptions import PrivacyBudgetWarning, PrivacyLeakWarning, warn_user
from ..utils._dask import (
    any_dask,
    check_dask_features,
    chunk_generators,
    is_dask_collection,
    map_chunks,
    n_chunks,
    renumbered_errors,
)
from ..utils._level_index import LevelIndex
from ..utils._random import release_random_state
from ..utils._sums import centred_sums, fixed_point_sums, square_grid
from ..utils._validation import (
    check_bounds,
    check_epsilon,
    check_trust_group,
    clip_to_bounds,
    resolve_bounds,
)


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
    sums : ndarray of int64 of shape (n_levels, n_features)
        Exact fixed-point sums of the tcm levels' clipped values
        (:func:`skhybrid.utils._sums.fixed_point_sums`); 0 for lm levels.
    report_sums : ndarray of float64 of shape (n_levels, n_features)
        Sums of the lm levels' reports; 0 for tcm levels.
    groups : LevelIndex or None
        The users' levels (public metadata) as :meth:`from_users` found them, for a
        lookup per user after the fit without grouping them again; None for sums of
        several chunks (a Dask chunk's or a stream's statistics never carry it).
    square_sums : ndarray of int64 of shape (n_levels, n_features) or None
        With ``squares``: exact fixed-point sums of the tcm levels' squared distances
        to the bounds' midpoint ``(clip(x) - mid)**2``, on the grid of
        :func:`~skhybrid.utils._sums.square_grid`; 0 for lm levels.
    report_square_sums : ndarray of float64 of shape (n_levels, n_features) or None
        With ``squares``: sums of the lm levels' ``(report - mid)**2``; 0 for tcm levels.
    """

    epsilons: np.ndarray
    local: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    report_sums: np.ndarray
    groups: LevelIndex | None = field(default=None, compare=False, repr=False)
    square_sums: np.ndarray | None = None
    report_square_sums: np.ndarray | None = None

    @classmethod
    def from_users(cls, X, epsilon, local, lower=None, upper=None, reports=None,
                   check_finite=False, squares=False, groups=None):
        """Group users by level and add up their values.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Raw values (clipped to the bounds here); lm rows are ignored.
        epsilon : float or ndarray of shape (n_samples,)
        local : ndarray of bool of shape (n_samples,)
        lower, upper : ndarray of shape (n_features,)
            The bounds; may be None when ``X`` has no feature (counts only).
        reports : ndarray of shape (n_local, n_features), default=None
            The lm users' reports, in row order; None when there is no lm user.
        check_finite : bool, default=False
            Also test every value of ``X`` (of any row) in the pass that adds them
            (:func:`~skhybrid.utils._sums.fixed_point_sums`): a NaN or an infinity raises
            :class:`~skhybrid.base.NonFiniteValues`.
        squares : bool, default=False
            Also the sums of squared distances to the midpoint (``square_sums`` and
            ``report_square_sums``), for a private variance.
        groups : LevelIndex, default=None
            The users' levels already grouped (``LevelIndex(epsilon)``), when every user
            is tcm: not grouped again.

        Returns
        -------
        statistics : LevelStatistics
        """
        n_samples, n_features = X.shape
        non_finite = np.zeros(1, dtype=np.int64) if check_finite and n_features else None
        epsilon = np.asarray(epsilon, dtype=np.float64)
        any_local = bool(local.any())
        if epsilon.ndim == 0 and not any_local:
            # One level: no grouping pass over millions of equal keys.
            index = None
            levels, counts = np.array([float(epsilon)]), np.array([n_samples], dtype=np.int64)
            labels = None
        else:
            epsilon = np.broadcast_to(epsilon, local.shape)
            # epsilon > 0, so a negated level marks lm without colliding with a tcm level.
            if groups is not None and not any_local:
                index = groups
            else:
                index = LevelIndex(np.where(local, -epsilon, epsilon) if any_local else epsilon)
            levels, counts = index.levels, index.counts
            # lm rows get the label one past the last level: left out of the sums.
            labels = np.where(local, levels.size, index.labels) if any_local else index.labels
        sums = np.zeros((levels.size, n_features), dtype=np.int64)
        report_sums = np.zeros((levels.size, n_features))
        if n_features:
            sums = fixed_point_sums(X, lower, upper, labels=labels, n_groups=levels.size,
                                    non_finite=non_finite)
        if n_features and any_local:
            report_sums = np.stack([
                np.bincount(index.labels[local], weights=column, minlength=levels.size)
                for column in reports.T
            ], axis=1)
        if non_finite is not None and non_finite[0]:
            raise NonFiniteValues
        square_sums = report_square_sums = None
        if squares:
            square_sums, report_square_sums = _level_square_sums(
                X, local, lower, upper, reports, labels, index, levels.size)
        return dataclasses.replace(
            cls._ordered(levels, counts, sums, report_sums, square_sums, report_square_sums),
            groups=index)

    @classmethod
    def _ordered(cls, keys, counts, sums, report_sums, square_sums=None,
                 report_square_sums=None):
        """Statistics from sorted distinct keys (lm levels negated): tcm levels first."""
        n_local = int(np.count_nonzero(keys < 0))
        order = np.concatenate([np.arange(n_local, keys.size), np.arange(n_local)[::-1]])
        return cls(
            epsilons=np.abs(keys)[order], local=(keys < 0)[order], counts=counts[order],
            sums=sums[order], report_sums=report_sums[order],
            square_sums=None if square_sums is None else square_sums[order],
            report_square_sums=None if report_square_sums is None else report_square_sums[order],
        )

    def __add__(self, other):
        if self.sums.shape[1] != other.sums.shape[1]:
            raise ValueError(
                f"cannot add statistics of {other.sums.shape[1]} features to statistics of "
                f"{self.sums.shape[1]}"
            )
        keys = np.concatenate([
            np.where(self.local, -self.epsilons, self.epsilons),
            np.where(other.local, -other.epsilons, other.epsilons),
        ])
        levels, inverse = np.unique(keys, return_inverse=True)
        counts = np.zeros(levels.size, dtype=np.int64)
        sums = np.zeros((levels.size, self.sums.shape[1]), dtype=np.int64)
        report_sums = np.zeros((levels.size, self.sums.shape[1]))
        # Integer additions: the merged fixed-point sums stay exact.
        np.add.at(counts, inverse, np.concatenate([self.counts, other.counts]))
        np.add.at(sums, inverse, np.concatenate([self.sums, other.sums]))
        np.add.at(report_sums, inverse, np.concatenate([self.report_sums, other.report_sums]))
        square_sums = report_square_sums = None
        if self.square_sums is not None and other.square_sums is not None:
            square_sums = np.zeros_like(sums)
            report_square_sums = np.zeros_like(report_sums)
            np.add.at(square_sums, inverse, np.concatenate([self.square_sums,
                                                            other.square_sums]))
            np.add.at(report_square_sums, inverse,
                      np.concatenate([self.report_square_sums, other.report_square_sums]))
        return self._ordered(levels, counts, sums, report_sums, square_sums,
                             report_square_sums)

    def centred_sums(self, lower, upper):
        """Float sums of ``x - lower`` per tcm level (0 for lm levels)."""
        largest = int(self.counts.max()) if self.counts.size else 0
        return centred_sums(self.sums, lower, upper, n_users=largest)

    @property
    def n_users(self):
        """The number of users counted."""
        return int(self.counts.sum())


def _level_square_sums(X, local, lower, upper, reports, labels, index, n_levels):
    """Per-level sums of squared distances to the midpoint (see :class:`LevelStatistics`).

    tcm values are clipped before squaring, then added exactly in fixed point on the
    grid ``[0, ((upper - lower) / 2)**2]`` (one user moves a level's sum by at most that
    range per feature); lm reports' squares are float sums (already private).
    """
    n_features = X.shape[1]
    centre, square_range = square_grid(lower, upper)
    squared = (clip_to_bounds(X, lower, upper) - centre) ** 2
    if labels is not None and local.any():
        squared[local] = 0.0  # lm rows carry the label n_levels: left out anyway
    square_sums = fixed_point_sums(squared, np.zeros(n_features), square_range,
                                   labels=labels, n_groups=n_levels)
    report_square_sums = np.zeros((n_levels, n_features))
    if local.any():
        report_square_sums = np.stack([
            np.bincount(index.labels[local], weights=column, minlength=n_levels)
            for column in ((reports - centre) ** 2).T
        ], axis=1)
    return square_sums, report_square_sums


def level_lookup(level_epsilons, level_local, level_values, epsilon, local, groups=None):
    """Each user's entry of a per-level table (for example their level's weight).

    Parameters
    ----------
    level_epsilons, level_local, level_values : ndarray of shape (n_levels,)
        A table over the levels of a :class:`LevelStatistics`.
    epsilon : ndarray of shape (n_samples,)
    local : ndarray of bool of shape (n_samples,)
    groups : LevelIndex, default=None
        The users' levels, when already found (:attr:`LevelStatistics.groups` of the
        same users); None groups them here.

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
    # Searching the distinct keys (sorted) and spreading back by the users' groups is
    # much faster than searching a million unsorted keys.
    index = groups
    if index is None:
        index = LevelIndex(np.where(local, -epsilon, epsilon) if local.any() else epsilon)
    position = np.minimum(np.searchsorted(level_keys[order], index.levels), order.size - 1)
    if not np.array_equal(level_keys[order][position], index.levels):
        raise ValueError("a user's privacy level is not among the fitted levels")
    return index.spread(np.asarray(level_values, dtype=np.float64)[order][position])


def dask_bounds(bounds, extremes, n_features):
    """Validated ``bounds``, or for ``bounds=None`` the range over every chunk's raw rows.

    Parameters
    ----------
    bounds : tuple (lower, upper) or None
    extremes : list of (ndarray, ndarray) or None
        Each chunk's per-feature minimum and maximum, None for a chunk without raw rows.
    n_features : int

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
    return resolve_bounds(None, np.vstack(seen))


def _chunk_array(X, defer_finite=False):
    """``check_array(X, dtype=np.float64)``, faster for the common chunk.

    A Dask chunk is usually a pandas DataFrame of float64 columns (or a float64 array):
    ``check_array``'s dataframe handling then costs more than the chunk's statistics
    (1.4 ms for 1e6 rows of one column). Such a non-empty chunk is converted directly
    and tested for finiteness by the sum test scikit-learn uses (or, with
    ``defer_finite``, not tested: the caller's first pass tests every value); every
    other chunk, and any that fails the test, goes through ``check_array`` and its
    messages.

    Returns the array and whether its finiteness is left to the caller.
    """
    pandas = sys.modules.get("pandas")
    if (pandas is not None and isinstance(X, pandas.DataFrame)
            and all(dtype == np.float64 for dtype in X.dtypes)):
        array = X.to_numpy(dtype=np.float64)
    else:
        array = X
    if type(array) is np.ndarray:
        if defer_finite and float_rows(array):
            return array, True
        if finite_float_rows(array):
            return array, False
    return check_array(X, dtype=np.float64), False


def _validate_chunk(X, trust_group, epsilon, **validate):
    """Validate one chunk of a Dask fit as ``validate_fit_input`` validates a whole one.

    Returns ``X, is_tcm, levels``.
    """
    return _validated_chunk(X, trust_group, epsilon, **validate)[:3]


def _validated_chunk(X, trust_group, epsilon, *, default_epsilon, n_features, allow_inf,
                     offset, defer_finite=False):
    """:func:`_validate_chunk`, and whether ``X``'s finiteness is left to the caller (only
    with ``defer_finite``; see :func:`_chunk_array`)."""
    with renumbered_errors(lambda row: offset + row):
        X, unchecked = _chunk_array(X, defer_finite)
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
    return X, is_tcm, levels, unchecked


def _chunk_task(estimator, context, X, trust_group, epsilon, *, offset, rng, validate):
    """One chunk's statistics (runs where the chunk lives).

    An estimator whose first pass tests every value (``_checks_finite``) tests the
    chunk's finiteness there; a NaN or an infinity then raises ``check_array``'s error.
    """
    raw = X
    X, is_tcm, levels, unchecked = _validated_chunk(
        X, trust_group, epsilon, offset=offset, defer_finite=estimator._checks_finite(),
        **validate)
    with renumbered_errors(lambda row: offset + row):
        if not unchecked:
            return _sums_only(estimator._chunk_statistics(X, is_tcm, levels, context, rng))
        try:
            return _sums_only(estimator._chunk_statistics(X, is_tcm, levels, context, rng,
                                                          check_finite=True))
        except NonFiniteValues:
            check_array(raw, dtype=np.float64)  # raises scikit-learn's error
            raise ValueError("Input X contains NaN or infinity") from None


def _sums_only(statistics):
    """``statistics`` without the users' groups (per-user labels, which a Dask chunk's
    result and a stream never carry: only the per-level sums travel and accumulate)."""
    if getattr(statistics, "groups", None) is None:
        return statistics
    return dataclasses.replace(statistics, groups=None)


def _chunk_extremes(estimator, X, trust_group, epsilon, *, offset, rng, validate):
    """Per-feature minimum and maximum of one chunk's raw rows (for ``bounds=None``)."""
    X, is_tcm, levels = _validate_chunk(X, trust_group, epsilon, offset=offset, **validate)
    raw = X[estimator._raw_rows(is_tcm, levels)]
    if raw.shape[0] == 0:
        return None
    return raw.min(axis=0), raw.max(axis=0)


def _chunk_users(user_id, is_tcm, epsilon):
    """A ``partial_fit`` chunk's users (ids, is_tcm, epsilon), for later ledger charges.

    Copies: the stream charges them at a later release, and the caller's arrays (the
    validated levels are a read-only view of them) may have changed by then.
    """
    ids = user_id_array(user_id, is_tcm.shape[0])
    levels = np.array(epsilon, dtype=np.float64) if np.ndim(epsilon) else epsilon
    return ids.copy(), is_tcm, np.broadcast_to(levels, is_tcm.shape)


class StreamState:
    """The curator's secret state of a ``partial_fit`` stream.

    It holds what must never leave the curator: the exact running statistics (counts and
    fixed-point sums) and the generator the curator's noise will come from. It lives in
    the estimator's ``_stream`` attribute only between ``partial_fit`` and
    :meth:`StatisticsFitMixin.discard_stream`; pickling an estimator that holds it warns
    with :class:`~skhybrid.exceptions.PrivacyLeakWarning`. A release happens once per
    batch of new data, under ``lock``, whichever thread reads the estimate first.

    Attributes
    ----------
    statistics : object supporting ``+``
    context : dict
        The public quantities of the fit (bounds, variance).
    rng : numpy.random.Generator
    n_releases : int
        Releases made from this stream so far.
    pending : bool
        True when data arrived after the last release.
    users : list of (ids, is_tcm, epsilon)
        With a ledger, each chunk's user ids and validated metadata: every release
        charges all of the stream's users.
    """

    def __init__(self, statistics, context, rng):
        self.statistics = _sums_only(statistics)
        self.context = context
        self.rng = rng
        self.n_releases = 0
        self.pending = True
        self.users = []
        self.lock = threading.Lock()

    def all_users(self):
        """Every user of the stream so far: ids, is_tcm, epsilon."""
        return tuple(np.concatenate(column) for column in zip(*self.users))

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["lock"]  # a lock cannot be pickled; each copy gets its own
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.lock = threading.Lock()


class StatisticsFitMixin:
    """``fit`` and ``partial_fit`` from sufficient statistics and one release.

    ``fit`` keeps only the release and public metadata: its statistics and generator are
    dropped once the noise is drawn. ``partial_fit`` keeps them in a :class:`StreamState`
    until :meth:`discard_stream`.

    Subclasses define:

    - ``_allow_inf``: whether public users (epsilon = inf) are accepted;
    - ``_raw_rows(is_tcm, epsilon)``: the rows holding raw values (``bounds=None`` is
      derived from them; privatized reports are never looked at);
    - ``_public_context(lower, upper)``: the resolved public quantities of a fit;
    - ``_chunk_statistics(X, is_tcm, epsilon, context, rng)``: a chunk's statistics, an
      object supporting ``+``; ``rng`` simulates the lm users' devices;
    - ``_plan_release(statistics, context, fit_warnings)``: the public plan of the
      release (or None), raising for every refusal before the ledger is charged
      (``fit_warnings``: whether ``fit`` was given ``trust_group``, for warnings about
      an empty group);
    - ``_release(statistics, context, plan, rng)``: draws the curator's noise, sets the
      fitted attributes and returns the estimate.
    """

    _allow_inf = False

    def _checks_finite(self):
        """Whether ``_chunk_statistics(..., check_finite=True)`` tests every value of ``X``
        in its first pass over them, raising :class:`~skhybrid.base.NonFiniteValues`
        before it draws anything: the validation then leaves the test to it (one pass
        over the input fewer)."""
        return False

    def _is_hybrid_fit(self):
        """Whether the fit combines a tcm and an lm group (then trust_group is expected)."""
        return False

    @property
    def mean_(self):
        """The private estimate; after ``partial_fit``, released on first read."""
        stream = self.__dict__.get("_stream")
        if stream is not None and stream.pending:
            with stream.lock:
                if stream.pending:  # another thread may have released meanwhile
                    self._release_stream(stream)
        if "_estimate" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute 'mean_'")
        return self.__dict__["_estimate"]

    def discard_stream(self):
        """Drop the secret state of a ``partial_fit`` stream, keeping the last release.

        After ``partial_fit`` the estimator holds the stream's exact running statistics
        and noise generator (see docs/privacy.rst), so that later chunks can be added.
        Call this before shipping the estimator (pickling, ``joblib.dump``); a pending
        release (data added since the last read of ``mean_``) is dropped unreleased,
        and the next ``partial_fit`` starts a new stream.

        Returns
        -------
        self : estimator
        """
        self.__dict__.pop("_stream", None)
        return self

    def __getstate__(self):
        if "_stream" in self.__dict__:
            warn_user(
                f"pickling a {type(self).__name__} that holds a partial_fit stream's secret "
                "state (exact running sums and the noise generator); call discard_stream() "
                "before shipping the estimator",
                PrivacyLeakWarning,
            )
        return super().__getstate__()

    def _fit_statistics(self, X, trust_group, epsilon, user_id=None):
        """The body of ``fit``: statistics of every row, then one release; nothing kept.

        Returns the validated ``(is_tcm, levels)`` of numpy input (None for Dask input)
        and the statistics released (never to be kept).

        With a ledger, the users are charged after every check that can refuse the fit
        (the input, every chunk of a Dask input, :meth:`_plan_release`) and before the
        curator's noise: a refused fit charges nobody. The lm users' simulated reports
        (what their devices would send) are made earlier, with the statistics; a fit
        refused later releases nothing of them.
        """
        check_fit_metadata(self, trust_group, epsilon, hybrid=self._is_hybrid_fit())
        check_user_id(self, user_id)
        self.discard_stream()
        rng = release_random_state(self.random_state)
        validated = []  # numpy input's (is_tcm, levels), kept for the charge
        statistics, context = self._statistics(
            X, trust_group, epsilon, rng, reset=True,
            users=(lambda *metadata: validated.extend(metadata), None),
        )
        plan = self._plan_release(statistics, context, trust_group is not None)
        if validated:
            charge_release(self, user_id, *validated)
        else:  # Dask input: its (small) metadata are computed for the charge
            charge_dask_release(self, user_id, trust_group, epsilon, allow_inf=self._allow_inf)
        estimate = self._release(statistics, context, plan, rng)
        self._estimate = clamp_estimate(self, estimate, context["lower"], context["upper"])
        return (validated or None), statistics

    def _plan_release(self, statistics, context, fit_warnings):
        """What the release needs from public quantities, checked before the charge.

        Everything that can refuse a release (an empty group, a noise too wide to draw)
        raises here, before the ledger is charged; the returned plan (None by default)
        is passed to :meth:`_release`.
        """
        return None

    def _partial_fit_statistics(self, X, trust_group, epsilon, user_id=None):
        """The body of ``partial_fit``: add a chunk's statistics; the release waits.

        With a ledger, the chunk's users are remembered and each release charges every
        user of the stream so far.
        """
        check_fit_metadata(self, trust_group, epsilon, hybrid=self._is_hybrid_fit())
        check_user_id(self, user_id)
        if self.ledger is not None and any_dask(X, trust_group, epsilon, user_id):
            raise TypeError("partial_fit with a ledger takes numpy chunks, not Dask collections")
        chunk_users = []

        def remember(is_tcm, levels):
            if self.ledger is not None:
                chunk_users.append(_chunk_users(user_id, is_tcm, levels))

        users = (remember, None)
        stream = self.__dict__.get("_stream")
        if stream is None:
            # bounds=None takes the first chunk's range (with a PrivacyLeakWarning) and
            # clips later chunks to it.
            rng = release_random_state(self.random_state)
            statistics, context = self._statistics(X, trust_group, epsilon, rng, reset=True,
                                                   users=users)
            stream = StreamState(statistics, context, rng)
            stream.users.extend(chunk_users)
            self._stream = stream
            return self
        statistics, _ = self._statistics(X, trust_group, epsilon, stream.rng, reset=False,
                                         context=stream.context, users=users)
        with stream.lock:
            stream.statistics = stream.statistics + statistics
            stream.users.extend(chunk_users)
            stream.pending = True
        return self

    def _release_stream(self, stream):
        if stream.n_releases:
            warn_user(
                f"{type(self).__name__} releases a new estimate after partial_fit: every "
                "user in an earlier release takes part again and spends their epsilon "
                f"again (release number {stream.n_releases + 1}).",
                PrivacyBudgetWarning,
            )
        plan = self._plan_release(stream.statistics, stream.context, False)
        if stream.users:
            charge_release(self, *stream.all_users())
        estimate = self._release(stream.statistics, stream.context, plan, stream.rng)
        self._estimate = clamp_estimate(self, estimate, stream.context["lower"],
                                        stream.context["upper"])
        stream.n_releases += 1
        stream.pending = False

    def _statistics(self, X, trust_group, epsilon, rng, *, reset, context=None, users):
        """Statistics of ``X`` (numpy or Dask) and the public context of the fit.

        ``context`` is the stream's, when ``reset`` is False. ``users`` is a pair of
        callbacks run after validation and before any randomness: the first gets the
        validated ``(is_tcm, levels)`` of numpy input, the second (no argument) is run
        for Dask input.
        """
        if any_dask(X, trust_group, epsilon):
            return self._dask_statistics(X, trust_group, epsilon, rng, reset=reset,
                                         context=context, users=users[1])
        # A float64 array's finiteness is tested in the statistics' first pass (given
        # bounds: bounds=None reads the values first).
        unchecked = (reset and self.bounds is not None and type(X) is np.ndarray
                     and float_rows(X) and self._checks_finite())
        X, is_tcm, levels = validate_fit_input(
            self, X, trust_group, epsilon, allow_inf=self._allow_inf, reset=reset,
            defer_finite=unchecked,
        )
        if reset:
            # Only bounds=None reads the raw rows; given bounds need no copy of them.
            raw = X[self._raw_rows(is_tcm, levels)] if self.bounds is None else X
            if raw.shape[0] == 0:
                raise ValueError(
                    "bounds=None cannot be derived from privatized reports alone; pass bounds"
                )
            lower, upper = resolve_bounds(self.bounds, raw)
            context = self._public_context(lower, upper)
        users[0](is_tcm, levels)
        if not unchecked:
            return self._chunk_statistics(X, is_tcm, levels, context, rng), context
        try:
            return self._chunk_statistics(X, is_tcm, levels, context, rng,
                                          check_finite=True), context
        except NonFiniteValues:
            refuse_non_finite(self, X, reset=reset)

    def _dask_statistics(self, X, trust_group, epsilon, rng, *, reset, context=None, users):
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
        if reset:
            extremes = None
            if self.bounds is None:
                extremes = map_chunks(
                    functools.partial(_chunk_extremes, self, validate=validate), X, **metadata
                )
            lower, upper = dask_bounds(self.bounds, extremes, self.n_features_in_)
            context = self._public_context(lower, upper)
        if users is not None:
            users()
        task = functools.partial(_chunk_task, self, context, validate=validate)
        parts = map_chunks(task, X, generators=chunk_generators(rng, n_chunks(X)), **metadata)
        return functools.reduce(lambda total, part: total + part, parts), context
