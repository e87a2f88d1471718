"""A per-user privacy ledger: budgets, atomic charges, refunds and a per-user audit trail.

The record is an append-only log of events in a store (:mod:`._stores`), each with its
users' membership as one compressed blob (:mod:`._events`). Each process keeps every
user's totals in numpy arrays indexed by a slot given to each user once (:mod:`._accounts`).
A charge replays the events other processes committed since it last looked, inside the
store's write lock, and appends its event in the same transaction: every user's new
total is checked against their budget and the release recorded, or nothing is. How the
totals compose is in :mod:`._composition`.
"""

import datetime
import json
import os
import threading
from collections.abc import Mapping
from numbers import Real

import numpy as np

from ..exceptions import BudgetExceededError
from ._accounts import _Accounts, _check_ids, _Index
from ._composition import gaussian_epsilon
from ._events import _decode, _encode, _levels, _mechanism, _pack, _unpack
from ._few_users import replay
from ._reservation import charge_within, open_reservation
from ._stores import open_store

#: The kinds of event that charge; ``refund`` gives back, ``budget`` sets budgets (and is
#: not a row of the history).
CHARGE_KINDS = ("release", "reservation")

# A reader that had to replay more than this many memberships (and more than twice the
# number of users) writes a checkpoint, so that the next process to open the ledger
# does not replay them again.
_CHECKPOINT_AFTER = 100_000
# Up to this many users, a process that has not loaded the totals answers spent,
# remaining and history from their own rows of the log (see ._few_users).
_FEW_USERS = 1000


def _check_amount(name, value, n):
    array = np.asarray(value, dtype=np.float64)
    if array.ndim > 1 or (array.ndim == 1 and array.shape[0] != n):
        raise ValueError(f"{name} must be a scalar or one value per user ({n}); "
                         f"got shape {array.shape}")
    if not (array >= 0).all():  # also refuses NaN
        bad = array[~(array >= 0)].flat[0]
        raise ValueError(f"{name} must be >= 0 for every user; got {bad}")
    return np.broadcast_to(array, (n,))


def _check_budget(budget):
    """``default_budget`` as (epsilon, delta), or None."""
    if budget is None:
        return None
    if isinstance(budget, Real):
        budget = (budget, 0.0)
    try:
        epsilon, delta = (float(value) for value in budget)
    except (TypeError, ValueError):
        raise ValueError(
            f"default_budget must be an epsilon (float >= 0) or a pair (epsilon, delta); "
            f"got {budget!r}"
        ) from None
    if not epsilon >= 0 or not 0 <= delta < 1:
        raise ValueError(
            f"default_budget needs epsilon >= 0 and delta in [0, 1); got ({epsilon}, {delta})"
        )
    return epsilon, delta


def _positive(column):
    """``column > 0``, as one bool when the column is one value broadcast to every user."""
    return column[0] > 0 if column.strides[0] == 0 and column.size else column > 0


def _distinct_rows(columns):
    """The distinct rows of per-user ``columns``: (table, each user's row or None, counts).

    Constant columns (the common case: one epsilon for everyone) cost one comparison;
    the codes are None when there is a single row.
    """
    n = columns[0].shape[0]
    if n == 0:
        return np.zeros((0, len(columns))), None, np.zeros(0, dtype=np.int64)
    varying = [column for column in columns
               if column.strides[0] != 0 and not (column == column[0]).all()]
    if not varying:
        return np.array([[column[0] for column in columns]]), None, np.array([n])
    # One integer key per distinct row (a row-wise unique sorts far more slowly).
    key = np.zeros(n, dtype=np.int64)
    for column in varying:
        values, inverse = np.unique(column, return_inverse=True)
        key = key * values.size + inverse.ravel()
    _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True,
                                          return_counts=True)
    table = np.column_stack([column[first] for column in columns])
    return table, inverse.ravel().astype(np.min_scalar_type(first.size - 1)), counts


class PrivacyLedger:
    """Per-user privacy budgets, what every release has spent of them, and who took part.

    Each user (keyed by an id: integers or strings, one kind per ledger) has a budget
    ``(epsilon, delta)`` and running totals of what the releases they took part in
    cost them. An estimator given ``ledger=`` charges each user of a release their own
    cost (see docs/user_guide/accounting.rst) in one transaction, before any noise is drawn: if any
    user would exceed their budget, it raises
    ``skhybrid.exceptions.BudgetExceededError`` and nothing is charged.

    ``clone``, ``GridSearchCV`` and ``cross_validate`` share the ledger (a copy of an
    estimator holds the same ledger object). A file or PostgreSQL ledger is also shared
    across processes and machines (pickling sends its address; each process opens its
    own connection); an in-memory ledger cannot cross processes, and pickling it raises.

    Parameters
    ----------
    path : str, os.PathLike or psycopg.Connection, default=None
        Where the ledger lives: ``None`` keeps it in memory, for this process only; a
        path is an SQLite file (created if absent), durable and shared by the processes
        of one machine; a ``"postgresql://user:password@host/db"`` URL (or an open
        psycopg 3 connection) keeps it on a PostgreSQL server (tables
        ``skhybrid_ledger_*``), shared by every machine that reaches it.
    default_budget : float or (float, float), default=None
        The budget ``epsilon`` (or ``(epsilon, delta)``) of users charged before any
        ``set_budget``; stored in the ledger, so later openings with ``None`` use
        it. ``None`` (and none stored): charging an unknown user raises.
    timeout : float, default=30.0
        Seconds to wait for another process's transaction before raising
        ``skhybrid.exceptions.LedgerError``.

    Attributes
    ----------
    path : str or None
        The SQLite file or the PostgreSQL address (without its password).

    See Also
    --------
    skhybrid.exceptions.BudgetExceededError

    Notes
    -----
    Composition (``skhybrid.accounting._composition``): pure epsilons and the parts
    of (epsilon, delta) releases add (basic composition); Gaussian releases compose
    exactly into one Gaussian mechanism, converted to epsilon at the user's remaining
    delta with the analytic Gaussian curve. Totals are kept exactly enough that ``k``
    releases of ``epsilon`` read back as ``k * epsilon``.

    Every charge and refund is one event of an append-only log with its users'
    membership compressed (about one bit per user of the ledger for large releases),
    from which ``history`` answers which releases a user took part in.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid import HybridMeanEstimator
    >>> from skhybrid.accounting import PrivacyLedger
    >>> ledger = PrivacyLedger(default_budget=2.0)
    >>> X = np.random.default_rng(0).uniform(size=(100, 1))
    >>> est = HybridMeanEstimator("tcm_only", epsilon=0.5, bounds=(0, 1), ledger=ledger)
    >>> est = est.fit(X, user_id=np.arange(100))
    >>> ledger.spent([0, 1]).tolist(), ledger.remaining([0]).tolist()
    ([0.5, 0.5], [1.5])
    >>> [(row["estimator"], row["epsilon"]) for row in ledger.history(user_id=7)]
    [('HybridMeanEstimator', 0.5)]
    """

    def __init__(self, path=None, *, default_budget=None, timeout=30.0):
        self.timeout = float(timeout)
        self._store = open_store(path, self.timeout)
        self.path = getattr(self._store, "public_target", None)
        self._lock = threading.RLock()
        self._index = _Index()
        self._accounts = _Accounts()
        self._seq = 0
        self._loaded = False
        self._few = None  # the last few users' answer read without loading (see _read)
        self._reservation = None  # this process's open reserve(), if any
        default = _check_budget(default_budget)
        if default is not None:
            with self._store.transaction(write=True) as store:
                store.set_meta("default_budget", json.dumps(default))

    def __repr__(self):
        return f"PrivacyLedger({self.path!r})"

    # -- sharing: never copied, a file or server ledger pickles as its address ------------

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        if not self._store.shareable:
            raise TypeError(
                "an in-memory PrivacyLedger cannot be pickled, so it cannot reach another "
                "process (joblib's worker processes with n_jobs > 1, Dask workers): a copy "
                "there would record spends that this one never sees. Give the estimator a "
                "ledger that processes share, a file, PrivacyLedger('ledger.sqlite'), or "
                "PostgreSQL, PrivacyLedger('postgresql://...'); or run the workers as "
                "threads (joblib.parallel_backend('threading')); or set ledger=None on the "
                "estimator before pickling it"
            )
        return (_reopen, (self._store.pickle_args(), self.timeout))

    # -- the state: replayed from the log ------------------------------------------------

    def _load(self):
        """Read the latest checkpoint and replay the events after it (once, on first use:
        a copy unpickled by a worker that never charges costs nothing)."""
        if self._loaded:
            return
        with self._lock, self._store.transaction() as store:
            if self._loaded:
                return
            self._index, self._accounts, self._seq = _Index(), _Accounts(), 0
            found = store.latest_checkpoint()
            if found is not None:
                self._restore(*found)
            replayed = self._sync(store)
            self._loaded = True
        if replayed > max(_CHECKPOINT_AFTER, 2 * self._accounts.n) and self._store.shareable:
            self._checkpoint()

    def _sync(self, store):
        """Apply the events committed since this process last looked; memberships replayed."""
        replayed = 0
        added = store.new_users_after(self._seq)
        for row in store.events_after(self._seq):
            seq, kind, payload = row[0], row[1], row[-1]
            new_ids, by_id, new_budget, slots, codes, table = _decode(payload)
            if seq in added:  # the users table holds them, sorted by id, with their slots
                ids, new_slots = added[seq]
                by_id = new_slots - self._accounts.n
                new_ids = np.empty_like(ids)
                new_ids[by_id] = ids
            self._add_users(new_ids, new_budget, by_id)
            self._accounts.apply(slots, self._accounts.after(kind, slots, table, codes)[0])
            self._seq = seq
            replayed += slots.size
        return replayed

    def _add_users(self, new_ids, budget, by_id=None):
        self._accounts.stage(new_ids.size, budget)
        self._accounts.n += new_ids.size
        self._index.add(new_ids, by_id)

    def _checkpoint(self):
        accounts = self._accounts
        blob = _pack({"ids": self._index.ids,
                      **{name: accounts.columns[name][:accounts.n] for name in accounts.COLUMNS}})
        with self._store.transaction(write=True) as store:
            store.write_checkpoint(self._seq, blob)

    def _restore(self, seq, payload):
        arrays = _unpack(payload)
        ids = arrays["ids"]
        self._add_users(ids, (0.0, 0.0))
        for name in _Accounts.COLUMNS:
            self._accounts.columns[name][:ids.size] = arrays[name]
        self._accounts.any_delta = bool(self._accounts.delta.any())
        self._accounts.any_gaussian = bool(self._accounts.gaussian.any())
        self._seq = seq

    def _default_budget(self, store):
        found = store.get_meta("default_budget")
        return None if found is None else tuple(json.loads(found))

    def _read(self, user_ids, trail=False):
        """Synchronise and map ``user_ids`` to slots (-1 for users not in the ledger) in
        the totals returned; with ``trail``, also their charges (see ._few_users)."""
        values, kind = _check_ids(user_ids)
        if not self._loaded and values.size <= _FEW_USERS:
            with self._lock, self._store.transaction() as store:
                if store.get_meta("users") == "indexed" and hasattr(store, "user_slots"):
                    # The same users asked again (spent, then remaining, then history)
                    # of an unchanged ledger: the same answer.
                    key = (values.dtype.str, values.tobytes(), store.last_seq())
                    if self._few is None or self._few[0] != key:
                        slots, dtype = store.user_slots(values)
                        if dtype is not None:
                            index = _Index()
                            index.kind = "int" if dtype.kind == "i" else "str"
                            index.check_kind(kind)
                        self._few = key, (slots >= 0, *replay(store.events_after(0), slots))
                    known, accounts, taken = self._few[1]
                    positions = np.where(known, np.arange(values.size), -1)
                    return values, positions, self._default_budget(store), accounts, taken
        self._load()
        with self._lock:
            with self._store.transaction() as store:
                self._sync(store)
                default = self._default_budget(store)
                rows = store.events_after(0) if trail else []
            self._index.check_kind(kind)
            slots, duplicate, _ = self._index.positions(values)
            if (slots >= 0).all():
                self._index.remember(values, slots, duplicate)
            taken = replay(rows, slots)[1] if trail else None
        return values, slots, default, self._accounts, taken

    # -- writing: one event per transaction ----------------------------------------------

    def _record(self, kind, user_ids, columns, *, release=None, description=""):
        """Append one event for ``user_ids`` (with per-user ``columns``); all or nothing."""
        values, id_kind = _check_ids(user_ids)
        columns = [_check_amount(name, value, values.size) for name, value in columns]
        if kind != "budget":
            # Users with a zero cost are left out of a charge (and of its membership).
            included = False
            for column in columns:
                included = included | _positive(column)
            if not np.all(included):
                keep = np.broadcast_to(included, values.shape)
                values, columns = values[keep], [column[keep] for column in columns]
        release = dict(release or {})
        self._load()
        with self._lock:
            with self._store.transaction(write=True) as store:
                self._sync(store)
                self._index.check_kind(id_kind)
                slots, duplicate, unknown_by_id = self._index.positions(values)
                if duplicate is not None:
                    raise ValueError(
                        f"user id {duplicate!r} appears more than once in one "
                        f"{'set_budget' if kind == 'budget' else kind}; each user must be one "
                        "row (a release charges each user once)"
                    )
                new_budget = self._budget_of_new_users(store, kind, values, unknown_by_id)
                # New users take slots in the order they come: the same rows charged
                # again then read and write the totals in order, not at random.
                unknown, by_id = np.sort(unknown_by_id), unknown_by_id
                n_before = self._accounts.n
                if unknown.size:
                    rank = np.empty(values.size, dtype=np.int64)
                    rank[unknown] = np.arange(unknown.size)
                    by_id = rank[unknown_by_id]
                    slots = slots.copy()
                    slots[unknown] = np.arange(n_before, n_before + unknown.size)
                self._accounts.stage(unknown.size, new_budget)
                if unknown.size:
                    store.append_users(self._seq + 1, values[unknown_by_id],
                                       slots[unknown_by_id])
                table, codes, counts = _distinct_rows(columns)
                changed, n_over = self._accounts.after(kind, slots, table, codes)
                if kind in CHARGE_KINDS and changed:
                    self._check_budget(values, slots, changed, n_over)
                elif kind == "refund" and changed:
                    self._check_refund(values, slots, changed, columns)
                seq = self._seq + 1
                store.append_event((
                    seq, kind,
                    datetime.datetime.now(datetime.timezone.utc).isoformat(
                        timespec="milliseconds"),
                    str(release.get("estimator", "manual")),
                    json.dumps(release.get("params", {}), default=repr, sort_keys=True),
                    str(release.get("mechanism", "budget" if kind == "budget" else
                                    _mechanism(table))),
                    str(description or ""), int(values.size),
                    json.dumps(_levels(kind, table, counts)),
                    _encode(values[:0], by_id[:0], new_budget, slots, codes, table,
                            n_before + unknown.size),
                ))
            # Committed: the same event, applied to this process's totals.
            self._accounts.n += unknown.size
            self._index.add(values[unknown], by_id)
            self._accounts.apply(slots, changed)
            self._seq = seq
            self._index.remember(values, slots, None)
        return int(values.size)

    def _budget_of_new_users(self, store, kind, values, unknown):
        if unknown.size == 0 or kind == "budget":
            return (0.0, 0.0)
        if kind == "refund":
            raise ValueError(
                f"{unknown.size} of {values.size} users of this refund were never charged "
                f"(for example user {values[unknown[0]].item()!r}); a refund gives back "
                "only what was charged"
            )
        default = self._default_budget(store)
        if default is None:
            raise KeyError(
                f"{unknown.size} of {values.size} users have no budget in the ledger (for "
                f"example user {values[unknown[0]].item()!r}); call set_budget for them or "
                "give the ledger a default_budget"
            )
        return default

    def _check_budget(self, values, slots, changed, n_over):
        """Raise BudgetExceededError if any user's new totals exceed their budget.

        ``n_over`` users are over their epsilon budget by the pure part alone (counted
        while adding); delta and Gaussian totals, when any, are checked here.
        """
        accounts = self._accounts
        any_delta = accounts.any_delta or "delta" in changed
        any_gaussian = accounts.any_gaussian or "gaussian" in changed
        if n_over == 0 and not (any_delta or any_gaussian):
            return
        high = changed["high"]
        budget = accounts.budget_epsilon[slots]
        over = high > budget
        budget_delta = accounts.budget_delta[slots] if any_delta or any_gaussian else None
        new_delta = changed.get("delta")
        if any_delta:
            new_delta = accounts.delta[slots] if new_delta is None else new_delta
            over |= new_delta > budget_delta
        total = high
        if any_gaussian:
            new_gaussian = changed.get("gaussian", accounts.gaussian[slots])
            new_delta = accounts.delta[slots] if new_delta is None else new_delta
            total = high + gaussian_epsilon(new_gaussian, budget_delta - new_delta)
            over |= total > budget
        if not over.any():
            return
        which = np.flatnonzero(over)
        budget_delta = accounts.budget_delta[slots[which]]
        raise BudgetExceededError.for_users(
            values[which].tolist(), np.ones(which.size, dtype=bool), n_users=values.size,
            budget=budget[which], spent=accounts.spent(slots[which]),
            would_spend=np.broadcast_to(total, high.shape)[which], budget_delta=budget_delta,
            would_spend_delta=(accounts.delta[slots[which]] if new_delta is None
                               else np.broadcast_to(new_delta, high.shape)[which]),
        )

    def _check_refund(self, values, slots, changed, columns):
        """Raise ValueError if a refund would take any user's totals below zero."""
        high, low = changed["high"], changed["low"]
        below = (high < 0) | ((high == 0) & (low < 0))
        if "delta" in changed:
            below |= changed["delta"] < 0
        if below.any():
            first = int(np.flatnonzero(below)[0])
            slot = slots[first]
            raise ValueError(
                f"a refund of epsilon {columns[0][first]:g}, delta {columns[1][first]:g} to user "
                f"{values[first].item()!r} is more than they were charged (epsilon "
                f"{self._accounts.high[slot]:g}, delta {self._accounts.delta[slot]:g}); "
                f"{np.count_nonzero(below)} of {values.size} users would go below zero; "
                "nothing was refunded"
            )

    # -- public API ----------------------------------------------------------------------

    def set_budget(self, user_ids, epsilon=None, delta=0.0):
        """Set the budget of users (new or known; what they spent is kept).

        Parameters
        ----------
        user_ids : array-like of shape (n_users,) or mapping
            Integers or strings; or a mapping ``{user_id: epsilon}`` (then leave
            ``epsilon`` out).
        epsilon : float or array-like of shape (n_users,)
            >= 0; ``np.inf`` for no limit.
        delta : float or array-like of shape (n_users,), default=0.0
            In [0, 1): what (epsilon, delta) and Gaussian releases may spend.

        Returns
        -------
        self : PrivacyLedger
        """
        if isinstance(user_ids, Mapping):
            if epsilon is not None:
                raise TypeError("give the budgets either as a mapping or as epsilon, not both")
            user_ids, epsilon = list(user_ids), list(user_ids.values())
        elif epsilon is None:
            raise TypeError("set_budget needs epsilon (or a mapping {user_id: epsilon})")
        delta_array = np.asarray(delta, dtype=np.float64)
        if (delta_array >= 1).any():
            raise ValueError(f"delta must be < 1 for every user; got {delta_array.max()}")
        self._record("budget", user_ids, [("epsilon", epsilon), ("delta", delta)])
        return self

    def spent(self, user_ids, *, with_delta=False):
        """What each user has spent (0 for users never charged).

        With Gaussian releases, the epsilon at the user's delta budget (see Notes).

        Parameters
        ----------
        user_ids : array-like of shape (n_users,)
        with_delta : bool, default=False
            Also return the delta spent by (epsilon, delta) releases.

        Returns
        -------
        spent : ndarray of float64 of shape (n_users,)
            The epsilon spent; ``(epsilon, delta)``, two such arrays, with ``with_delta``.
        """
        _, slots, _, accounts, _ = self._read(user_ids)
        known = slots >= 0
        epsilon, delta = np.zeros(slots.size), np.zeros(slots.size)
        epsilon[known] = accounts.spent(slots[known])
        delta[known] = accounts.delta[slots[known]]
        return (epsilon, delta) if with_delta else epsilon

    def remaining(self, user_ids, *, with_delta=False):
        """What each user can still spend: budget minus spent, at least 0.

        Parameters
        ----------
        user_ids : array-like of shape (n_users,)
        with_delta : bool, default=False
            Also return the delta left for (epsilon, delta) and Gaussian releases.

        Returns
        -------
        remaining : ndarray of float64 of shape (n_users,)
            The epsilon left (``(epsilon, delta)`` with ``with_delta``). For users not
            in the ledger, the default budget (an error without one).
        """
        values, slots, default, accounts, _ = self._read(user_ids)
        known = slots >= 0
        if not known.all() and default is None:
            missing = np.flatnonzero(~known)
            raise KeyError(
                f"{missing.size} of {values.size} users have no budget in the ledger (for "
                f"example user {values[missing[0]].item()!r}); call set_budget for them or "
                "give the ledger a default_budget"
            )
        budget = np.full(slots.size, np.nan if default is None else default[0])
        budget_delta = np.full(slots.size, np.nan if default is None else default[1])
        spent, spent_delta = np.zeros(slots.size), np.zeros(slots.size)
        budget[known] = accounts.budget_epsilon[slots[known]]
        budget_delta[known] = accounts.budget_delta[slots[known]]
        spent[known] = accounts.spent(slots[known])
        spent_delta[known] = accounts.delta[slots[known]]
        epsilon = np.maximum(budget - spent, 0.0)
        return (epsilon, np.maximum(budget_delta - spent_delta, 0.0)) if with_delta else epsilon

    def charge(self, user_ids, epsilon=0.0, delta=0.0, *, noise_multiplier=None,
               release=None, description=None, kind="release"):
        """Charge users for one release, atomically: all of them or none.

        Estimators with ``ledger=`` call this before drawing any noise; call it
        yourself for releases made elsewhere (for example lm users' reports collected
        from their devices, which estimators with ``local_reports=True`` reuse
        without charging).

        Parameters
        ----------
        user_ids : array-like of shape (n_users,)
            Distinct ids (one row per user in a release).
        epsilon : float or array-like of shape (n_users,), default=0.0
            Pure epsilon (or the epsilon of an (epsilon, delta) guarantee) per user.
        delta : float or array-like of shape (n_users,), default=0.0
        noise_multiplier : float or array-like of shape (n_users,), default=None
            For a Gaussian release: sigma per unit of L2 sensitivity, per user
            (``np.inf`` for users not in the release). Composed exactly, not by
            ``epsilon`` and ``delta``.
        release : dict, default=None
            What the history records: ``estimator`` (a name), ``params`` (a dict) and
            ``mechanism``.
        description : str, default=None
            A note stored with the history row (for example
            ``"PrivateGridSearchCV reservation"``).
        kind : {"release", "reservation"}, default="release"
            The history row's kind: a release, or budget set aside ahead of releases
            (given back, if unused, with ``refund``).

        Returns
        -------
        n_charged : int
            The number of users with a nonzero cost.

        Raises
        ------
        BudgetExceededError
            If any user would exceed their budget; nothing is charged.
        KeyError
            If a user is not in the ledger and it has no default budget.
        """
        if kind not in CHARGE_KINDS:
            raise ValueError(f"kind must be one of {CHARGE_KINDS}; got {kind!r}")
        if getattr(self, "_reservation", None) is not None and kind == "release" and (
                noise_multiplier is None):
            return charge_within(self, user_ids, epsilon, delta, release, description)
        gaussian = 0.0
        if noise_multiplier is not None:
            multiplier = np.asarray(noise_multiplier, dtype=np.float64)
            if (multiplier <= 0).any() or np.isnan(multiplier).any():
                raise ValueError("noise_multiplier must be > 0 for every user (np.inf for "
                                 f"users not in the release); got {multiplier.min()}")
            gaussian = 1.0 / multiplier**2
        return self._record(kind, user_ids, [("epsilon", epsilon), ("delta", delta),
                                             ("noise_multiplier", gaussian)],
                            release=release, description=description)

    def reserve(self, epsilon, user_ids=None, *, delta=0.0, release=None, description=None):
        """Set budget aside for a run of releases: ``with ledger.reserve(cost): ...``.

        Charged at once (a history row of kind ``"reservation"``): if a user cannot
        afford it, ``BudgetExceededError`` is raised before
        anything runs and nobody is charged. Inside the ``with`` block, every charge on
        this ledger (in this process) draws on the reservation: its draw is refunded
        and the release charged as usual (its own history row). On exit, what is left
        is refunded. Any search runs inside one, scikit-learn's ``GridSearchCV``
        included (with ``n_jobs=None``: worker processes do not see the reservation).

        Parameters
        ----------
        epsilon : float or array-like of shape (n_users,)
            Each user's reservation, for example ``search_cost``'s answer (it carries
            its ``user_ids`` and ``reason``).
        user_ids : array-like of shape (n_users,), default=None
            Who reserves; ``None`` takes ``epsilon.user_ids``.
        delta : float or array-like of shape (n_users,), default=0.0
        release, description
            As in ``charge``, for the reservation's history row.

        Returns
        -------
        reservation : Reservation
            A context manager (see skhybrid/accounting/_reservation.py).
        """
        return open_reservation(self, epsilon, user_ids, delta, release, description)

    def refund(self, user_ids, epsilon, delta=0.0, *, description="refund"):
        """Give back budget charged before (for example an unused reservation), atomically.

        Each user's spent epsilon (and delta) decreases by the amount given; it can
        never go below zero, i.e. below what the user was charged.

        Parameters
        ----------
        user_ids : array-like of shape (n_users,)
            Distinct ids.
        epsilon : float or array-like of shape (n_users,)
        delta : float or array-like of shape (n_users,), default=0.0
        description : str, default="refund"
            A note stored with the history row (of kind ``"refund"``).

        Returns
        -------
        n_refunded : int
            The number of users with a nonzero refund.

        Raises
        ------
        ValueError
            If a refund is larger than what a user has spent; nothing is refunded.
        """
        return self._record("refund", user_ids, [("epsilon", epsilon), ("delta", delta)],
                            description=description)

    def history(self, user_id=None, *, as_frame=False):
        """The releases charged so far, oldest first; or one user's (or several) audit trail.

        Parameters
        ----------
        user_id : int, str or array-like, default=None
            ``None``: every release. Otherwise the releases these users took part in,
            one row per user and release, with what it cost that user.
        as_frame : bool, default=False
            Return a pandas DataFrame (one row per release, or per user and release;
            ``to_csv`` exports it).

        Returns
        -------
        history : list of dict or pandas.DataFrame
            Each release has ``seq`` (its number in the ledger), ``kind``
            (``"release"``, ``"reservation"`` or ``"refund"``), ``time`` (ISO 8601, UTC),
            ``estimator``, ``params``, ``mechanism``, ``description``, ``n_users``
            (users charged) and ``levels``: a list of ``{"epsilon", "delta",
            "noise_multiplier", "n_users"}`` (users charged per distinct cost). With
            ``user_id``: ``user_id``, the release's fields but ``levels``, and the
            user's ``epsilon``, ``delta`` and ``noise_multiplier`` (a refund's amounts
            are negative, so a user's rows add up to what they have spent).
        """
        if user_id is None:
            with self._lock, self._store.transaction() as store:
                rows = store.events_after(0, payload=False)
            records = [_release_record(row) for row in rows if row[1] != "budget"]
        else:
            records = self._audit_trail(user_id)
        if not as_frame:
            return records
        import pandas as pd

        frame = pd.DataFrame.from_records(records, columns=list(
            _AUDIT_COLUMNS if user_id is not None else _RELEASE_COLUMNS))
        for column in ("params", "levels"):
            if column in frame:
                frame[column] = frame[column].map(lambda value: json.dumps(value, sort_keys=True))
        return frame

    def _audit_trail(self, user_id):
        values, slots, _, _, taken = self._read(user_id, trail=True)
        records = []
        for position, row, cost in taken:
            release = _release_record(row[:-1])
            del release["levels"]
            sign = -1.0 if row[1] == "refund" else 1.0
            records.append({
                "user_id": values[position].item(), **release,
                "epsilon": sign * float(cost[0]) + 0.0, "delta": sign * float(cost[1]) + 0.0,
                "noise_multiplier": (None if len(cost) < 3 or cost[2] == 0
                                     else float(1 / np.sqrt(cost[2]))),
            })
        order = {value: i for i, value in enumerate(values.tolist())}
        records.sort(key=lambda record: (order[record["user_id"]], record["seq"]))
        return records

    def users(self):
        """Every user in the ledger with their budget and spends (columns of arrays).

        Returns
        -------
        users : dict of ndarray
            ``user_id``, ``budget_epsilon``, ``budget_delta``, ``spent_epsilon``,
            ``spent_delta``, ``remaining_epsilon``, sorted by ``user_id``.
        """
        self._load()
        with self._lock:
            with self._store.transaction() as store:
                self._sync(store)
            slots = self._index.sorted_slots().copy()
            ids = (self._index.ids[slots] if self._index.ids is not None
                   else np.zeros(0, dtype=np.int64))
            accounts = self._accounts
            budget = accounts.budget_epsilon[slots]
            spent = accounts.spent(slots)
            return {
                "user_id": np.array(ids.tolist(), dtype=object), "budget_epsilon": budget,
                "budget_delta": accounts.budget_delta[slots], "spent_epsilon": spent,
                "spent_delta": accounts.delta[slots],
                "remaining_epsilon": np.maximum(budget - spent, 0.0),
            }

    def close(self):
        """Close this process's connection to the file or server (a no-op in memory).

        The totals read so far stay; the ledger reconnects if it is used again.
        """
        with self._lock:
            self._store.close()

    def to_frame(self):
        """``users()`` as a pandas DataFrame indexed by ``user_id``.

        Returns
        -------
        frame : pandas.DataFrame
        """
        import pandas as pd

        return pd.DataFrame(self.users()).set_index("user_id")

    def summary(self, n_releases=5):
        """A short account of the ledger: users, spent quantiles, exhausted, last releases.

        Parameters
        ----------
        n_releases : int, default=5
            How many of the latest releases to list.

        Returns
        -------
        summary : dict
        """
        users = self.users()
        spent = users["spent_epsilon"]
        history = self.history()
        quantiles = (0.0, 0.5, 0.9, 1.0)
        return {
            "path": self.path,
            "n_users": int(spent.size),
            "spent_quantiles": dict(zip(
                quantiles, np.quantile(spent, quantiles).tolist() if spent.size else
                [0.0] * len(quantiles))),
            "n_exhausted": int(np.count_nonzero(users["remaining_epsilon"] <= 0)),
            "n_releases": len(history),
            "last_releases": history[-n_releases:] if n_releases else [],
        }


_RELEASE_COLUMNS = ("seq", "kind", "time", "estimator", "params", "mechanism", "description",
                    "n_users", "levels")
_AUDIT_COLUMNS = ("user_id", *_RELEASE_COLUMNS[:-1], "epsilon", "delta", "noise_multiplier")


def _release_record(row):
    record = dict(zip(_RELEASE_COLUMNS, row))
    record["params"] = json.loads(record["params"])
    record["levels"] = json.loads(record["levels"])
    return record


# The ledgers unpickled in this process, by address: every task a worker runs (Dask
# pickles the estimator into each) shares one connection and one copy of the totals.
_unpickled = {}
_unpickled_lock = threading.Lock()


def _reopen(target, timeout):
    key = (os.getpid(), target)
    with _unpickled_lock:
        if key not in _unpickled:
            _unpickled[key] = PrivacyLedger(target, timeout=timeout)
        return _unpickled[key]
