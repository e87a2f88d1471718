"""A per-user privacy ledger: budgets, atomic charges and the history of releases.

The ledger is an SQLite database (the standard library's ``sqlite3``): in memory by
default, or a file that survives the process and is shared by processes (WAL mode,
``BEGIN IMMEDIATE`` transactions). One charge is one transaction: every user's new
totals are checked against their budget and written, with the release's history row,
or nothing is. How the totals compose is in :mod:`._composition`.
"""

import datetime
import json
import math
import os
import sqlite3
import threading
from collections.abc import Mapping
from contextlib import contextmanager
from numbers import Integral, Real

import numpy as np

from ..exceptions import BudgetExceededError, LedgerError
from ._composition import gaussian_epsilon

_FORMAT = "skhybrid-privacy-ledger-1"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS accounts ("
    " user_id PRIMARY KEY,"
    " budget_epsilon REAL NOT NULL, budget_delta REAL NOT NULL,"
    " epsilon_high REAL NOT NULL DEFAULT 0.0, epsilon_low REAL NOT NULL DEFAULT 0.0,"
    " delta REAL NOT NULL DEFAULT 0.0, gaussian REAL NOT NULL DEFAULT 0.0"
    ") WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS releases ("
    " id INTEGER PRIMARY KEY, time TEXT NOT NULL, estimator TEXT NOT NULL,"
    " params TEXT NOT NULL, mechanism TEXT NOT NULL, n_users INTEGER NOT NULL,"
    " levels TEXT NOT NULL, description TEXT)",
)


def id_array(user_ids):
    """User ids as a numpy array; a list or tuple keeps each id's own type.

    ``np.asarray([1, "b"])`` would turn both into strings: a list becomes an object
    array instead, so that ids of mixed types are refused rather than renamed.
    """
    if hasattr(user_ids, "to_numpy"):
        user_ids = user_ids.to_numpy()
    return np.asarray(user_ids, dtype=object if isinstance(user_ids, (list, tuple)) else None)


def _check_ids(user_ids):
    """User ids as a list of Python ints or strs, their kind, and a sortable array."""
    if user_ids is None:
        raise ValueError("user_ids must be an array-like of user ids; got None")
    if isinstance(user_ids, (str, bytes)) or np.ndim(user_ids) == 0:
        user_ids = [user_ids]
    values = id_array(user_ids)
    if values.ndim != 1:
        raise ValueError(f"user_ids must be one-dimensional; got shape {values.shape}")
    if values.dtype.kind in "iu":
        if values.dtype.kind == "u" and values.size and int(values.max()) > 2**63 - 1:
            raise ValueError("integer user ids must fit in 64 signed bits")
        return values.tolist(), "int", values.astype(np.int64)
    if values.dtype.kind == "U":
        return values.tolist(), "str", values
    if values.dtype.kind == "O":
        listed = values.tolist()
        kinds = {type(value) for value in listed}
        if kinds <= {str}:
            return listed, "str", values.astype(str)
        if all(isinstance(value, Integral) and not isinstance(value, bool) for value in listed):
            listed = [int(v) for v in listed]
            return listed, "int", np.array(listed, dtype=np.int64)
        _refuse_missing(listed)
        names = sorted({type(value).__name__ for value in listed})
        raise TypeError(
            "user ids must be all integers or all strings; got a mix of "
            + ", ".join(names)
        )
    if values.dtype.kind == "f":
        _refuse_missing(values.tolist())
    raise TypeError(
        f"user ids must be integers or strings; got {values.dtype.name} values "
        f"(for example {values.flat[0].item()!r})" if values.size else
        f"user ids must be integers or strings; got an empty {values.dtype.name} array"
    )


def _refuse_missing(listed):
    """A ValueError naming the first missing id (None, NaN, pandas' NA or NaT), if any."""
    for index, value in enumerate(listed):
        missing = value is None or type(value).__name__ in ("NAType", "NaTType") or (
            isinstance(value, float) and math.isnan(value))
        if missing:
            raise ValueError(
                f"user ids must not be missing; got {value!r} at index {index} (the ledger "
                "charges each row's user: give every row an id)"
            )


def _first_duplicate(sortable):
    ordered = np.sort(sortable, kind="stable")
    same = np.flatnonzero(ordered[1:] == ordered[:-1])
    return None if same.size == 0 else ordered[same[0]].item()


def _check_amount(name, value, n):
    array = np.asarray(value, dtype=np.float64)
    if array.ndim > 1 or (array.ndim == 1 and array.shape[0] != n):
        raise ValueError(f"{name} must be a scalar or one value per user ({n}); "
                         f"got shape {array.shape}")
    if np.isnan(array).any() or (array < 0).any():
        raise ValueError(f"{name} must be >= 0 for every user")
    return np.broadcast_to(array, (n,)).astype(np.float64)


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


class PrivacyLedger:
    """Per-user privacy budgets and what every release has spent of them.

    Each user (keyed by an id: integers or strings, one kind per ledger) has a budget
    ``(epsilon, delta)`` and running totals of what the releases they took part in
    cost them. An estimator given ``ledger=`` charges each user of a release their own
    cost (see :doc:`/user_guide/accounting`) in one transaction, before any noise is drawn: if any
    user would exceed their budget, it raises
    :class:`~skhybrid.exceptions.BudgetExceededError` and nothing is charged.

    ``clone``, ``GridSearchCV`` and ``cross_validate`` share the ledger (a copy of an
    estimator holds the same ledger object). A file ledger is also shared across
    processes (pickling sends its path; each process opens its own connection); an
    in-memory ledger cannot cross processes, and pickling it raises.

    Parameters
    ----------
    path : str or os.PathLike, default=None
        An SQLite file (created if absent) for a durable ledger shared by processes;
        ``None`` keeps the ledger in memory, for this process only.
    default_budget : float or (float, float), default=None
        The budget ``epsilon`` (or ``(epsilon, delta)``) of users charged before any
        :meth:`set_budget`; stored in the file, so later openings with ``None`` use
        it. ``None`` (and none stored): charging an unknown user raises.
    timeout : float, default=30.0
        Seconds to wait for another process's transaction on the file before raising
        :class:`~skhybrid.exceptions.LedgerError`.

    See Also
    --------
    skhybrid.exceptions.BudgetExceededError

    Notes
    -----
    Composition (:mod:`skhybrid.accounting._composition`): pure epsilons and the parts
    of (epsilon, delta) releases add (basic composition); Gaussian releases compose
    exactly into one Gaussian mechanism, converted to epsilon at the user's remaining
    delta with the analytic Gaussian curve. Totals are kept exactly enough that ``k``
    releases of ``epsilon`` read back as ``k * epsilon``.

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
    """

    def __init__(self, path=None, *, default_budget=None, timeout=30.0):
        self.path = None if path is None else os.fspath(path)
        self.timeout = float(timeout)
        self._lock = threading.RLock()
        self._connection = None
        self._pid = None
        default = _check_budget(default_budget)
        with self._transaction() as connection:
            if default is not None:
                connection.execute("INSERT OR REPLACE INTO meta VALUES ('default_budget', ?)",
                                   (json.dumps(default),))

    def __repr__(self):
        return f"PrivacyLedger({self.path!r})"

    # -- sharing: never copied, a file ledger pickles as its path ------------------------

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        if self.path is None:
            raise TypeError(
                "an in-memory PrivacyLedger cannot be pickled: a copy in another process "
                "would record spends that this one never sees. Use a file ledger, "
                "PrivacyLedger('ledger.sqlite'), to share it with other processes (for "
                "example n_jobs > 1), or set ledger=None on the estimator before pickling it"
            )
        return (PrivacyLedger, (self.path,), {"timeout": self.timeout})

    def __setstate__(self, state):
        self.timeout = state["timeout"]

    # -- storage -------------------------------------------------------------------------

    def _connect(self):
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        target = ":memory:" if self.path is None else self.path
        try:
            connection = sqlite3.connect(target, timeout=self.timeout, isolation_level=None,
                                         check_same_thread=False)
            connection.execute("PRAGMA temp_store=MEMORY")
            connection.execute("PRAGMA cache_size=-262144")  # 256 MiB of pages
            if self.path is not None:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=FULL")
            self._check_format(connection)
        except sqlite3.DatabaseError as error:
            raise self._error(error) from error
        self._connection, self._pid = connection, os.getpid()
        return connection

    def _check_format(self, connection):
        connection.execute("BEGIN IMMEDIATE")
        try:
            tables = {row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "meta" not in tables:
                raise LedgerError(
                    f"{self.path} is an SQLite database but not a privacy ledger (its tables: "
                    f"{', '.join(sorted(tables))}); give a new file or an existing ledger"
                )
            for statement in _SCHEMA:
                connection.execute(statement)
            columns = {row[1] for row in connection.execute("PRAGMA table_info(releases)")}
            if "description" not in columns:  # a ledger written before descriptions
                connection.execute("ALTER TABLE releases ADD COLUMN description TEXT")
            found = connection.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            if found is None:
                connection.execute("INSERT INTO meta VALUES ('format', ?)", (_FORMAT,))
            elif found[0] != _FORMAT:
                raise LedgerError(f"{self.path} holds a ledger of format {found[0]!r}; "
                                  f"this version reads {_FORMAT!r}")
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def _error(self, error):
        where = "the in-memory ledger" if self.path is None else f"the ledger {self.path}"
        if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
            return LedgerError(
                f"{where} is locked by another process (waited {self.timeout:g} s); "
                "nothing was charged"
            )
        return LedgerError(f"{where} cannot be used: {error} (is it a privacy ledger file?)")

    @contextmanager
    def _transaction(self):
        """One ``BEGIN IMMEDIATE`` transaction: committed on success, else rolled back."""
        with self._lock:
            connection = self._connect()
            try:
                connection.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as error:
                raise self._error(error) from error
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            try:
                connection.execute("COMMIT")
            except sqlite3.DatabaseError as error:
                connection.execute("ROLLBACK")
                raise self._error(error) from error

    def _check_kind(self, connection, kind, *, record):
        found = connection.execute("SELECT value FROM meta WHERE key = 'id_kind'").fetchone()
        if found is None:
            if record:
                connection.execute("INSERT INTO meta VALUES ('id_kind', ?)", (kind,))
        elif found[0] != kind:
            raise TypeError(
                f"this ledger's user ids are {'integers' if found[0] == 'int' else 'strings'}; "
                f"got {'integers' if kind == 'int' else 'strings'}"
            )

    def _default_budget(self, connection):
        found = connection.execute(
            "SELECT value FROM meta WHERE key = 'default_budget'").fetchone()
        return None if found is None else tuple(json.loads(found[0]))

    def _fill_wanted(self, connection, ids, cost_index=None):
        """Put ``ids`` (and each one's row in the ``costs`` table) in the ``wanted`` table.

        The ids travel as one JSON array, parsed by SQLite in C: exact for 64-bit
        integers and strings, and many times faster than binding a million rows.
        """
        connection.execute(
            "CREATE TEMP TABLE IF NOT EXISTS wanted"
            " (position INTEGER PRIMARY KEY, user_id, cost INTEGER)")
        connection.execute("DELETE FROM wanted")
        connection.execute("INSERT INTO wanted SELECT key, value, 0 FROM json_each(?)",
                           (json.dumps(ids),))
        if cost_index is not None and cost_index.size and cost_index.max() > 0:
            connection.execute(
                "UPDATE wanted SET cost = j.value FROM json_each(?) j"
                " WHERE wanted.position = j.key", (json.dumps(cost_index.tolist()),))

    def _load(self, connection, ids):
        """The accounts of ``ids`` (in their order): a found mask and the columns."""
        self._fill_wanted(connection, ids)
        rows = connection.execute(
            "SELECT w.position, a.budget_epsilon, a.budget_delta, a.epsilon_high,"
            " a.epsilon_low, a.delta, a.gaussian FROM wanted w JOIN accounts a"
            " ON a.user_id = w.user_id"
        ).fetchall()
        columns = np.zeros((6, len(ids)))
        found = np.zeros(len(ids), dtype=bool)
        if rows:
            table = np.array(rows, dtype=np.float64)
            positions = table[:, 0].astype(np.intp)
            found[positions] = True
            columns[:, positions] = table[:, 1:].T
        connection.execute("DELETE FROM wanted")
        return found, columns

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
        ids, kind, _ = _check_ids(user_ids)
        epsilon = _check_amount("epsilon", epsilon, len(ids))
        delta = _check_amount("delta", delta, len(ids))
        if (delta >= 1).any():
            raise ValueError("delta must be < 1 for every user")
        with self._transaction() as connection:
            self._check_kind(connection, kind, record=True)
            connection.executemany(
                "INSERT INTO accounts (user_id, budget_epsilon, budget_delta) VALUES (?, ?, ?)"
                " ON CONFLICT (user_id) DO UPDATE SET budget_epsilon = excluded.budget_epsilon,"
                " budget_delta = excluded.budget_delta",
                zip(ids, epsilon.tolist(), delta.tolist()),
            )
        return self

    def spent(self, user_ids):
        """The epsilon each user has spent (0 for users never charged).

        With Gaussian releases, the epsilon at the user's delta budget (see Notes).

        Parameters
        ----------
        user_ids : array-like of shape (n_users,)

        Returns
        -------
        spent : ndarray of float64 of shape (n_users,)
        """
        return self._accounts(user_ids)[0]

    def remaining(self, user_ids):
        """The epsilon each user can still spend: budget minus spent, at least 0.

        Parameters
        ----------
        user_ids : array-like of shape (n_users,)

        Returns
        -------
        remaining : ndarray of float64 of shape (n_users,)
            For users not in the ledger, the default budget (an error without one).
        """
        spent, budget = self._accounts(user_ids, need_budget=True)
        return np.maximum(budget - spent, 0.0)

    def _accounts(self, user_ids, *, need_budget=False):
        ids, kind, _ = _check_ids(user_ids)
        with self._transaction() as connection:
            self._check_kind(connection, kind, record=False)
            found, (budget, budget_delta, high, _, delta, gaussian) = self._load(connection, ids)
            default = self._default_budget(connection)
        if need_budget and not found.all():
            if default is None:
                raise self._unknown(ids, found)
            budget[~found], budget_delta[~found] = default
        spent = high + gaussian_epsilon(gaussian, budget_delta - delta)
        return spent, budget

    def _unknown(self, ids, found):
        missing = np.flatnonzero(~found)
        return KeyError(
            f"{missing.size} of {len(ids)} users have no budget in the ledger (for example "
            f"user {ids[missing[0]]!r}); call set_budget for them or give the ledger a "
            "default_budget"
        )

    def charge(self, user_ids, epsilon=0.0, delta=0.0, *, noise_multiplier=None,
               release=None, description=None):
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
            A note for the history row (for example that the charge is a reservation).

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
        ids, kind, sortable = _check_ids(user_ids)
        n = len(ids)
        epsilon = _check_amount("epsilon", epsilon, n)
        delta = _check_amount("delta", delta, n)
        gaussian = np.zeros(n)
        if noise_multiplier is not None:
            multiplier = _check_amount("noise_multiplier", noise_multiplier, n)
            if (multiplier == 0).any():
                raise ValueError("noise_multiplier must be > 0 (np.inf for no release)")
            gaussian = 1.0 / multiplier**2
        duplicate = _first_duplicate(sortable)
        if duplicate is not None:
            raise ValueError(
                f"user id {duplicate!r} appears more than once in one release; a release "
                "charges each user once, so each user must be one row"
            )
        included = (epsilon > 0) | (delta > 0) | (gaussian > 0)
        if not included.all():
            keep = np.flatnonzero(included)
            ids = [ids[i] for i in keep]
            epsilon, delta, gaussian = epsilon[keep], delta[keep], gaussian[keep]
        costs, cost_index, cost_counts = _distinct_costs(epsilon, delta, gaussian)
        release = dict(release or {})
        with self._transaction() as connection:
            self._check_kind(connection, kind, record=True)
            self._add_unknown_users(connection, ids, costs, cost_index)
            self._check_charge(connection, ids)
            connection.execute(
                "UPDATE accounts SET epsilon_high = u.high, epsilon_low = u.low,"
                " delta = u.new_delta, gaussian = u.new_gaussian"
                " FROM charged u WHERE accounts.user_id = u.user_id")
            connection.execute(
                "INSERT INTO releases (time, estimator, params, mechanism, n_users, levels,"
                " description) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    _now(), str(release.get("estimator", "manual")),
                    json.dumps(release.get("params", {}), default=repr, sort_keys=True),
                    str(release.get("mechanism", _mechanism(epsilon, delta, gaussian))),
                    len(ids), json.dumps(_levels(costs, cost_counts)), description,
                ),
            )
            connection.execute("DROP TABLE charged")
            connection.execute("DELETE FROM wanted")
        return len(ids)

    def refund(self, user_ids, epsilon, delta=0.0, *, description="refund"):
        """Give budget back, atomically: each user's spent decreases by the amount.

        For budget that was charged but never used by a release (a reservation that a
        search did not use up). The history gets one row, with ``description`` and
        negative levels.

        Parameters
        ----------
        user_ids : array-like of shape (n_users,)
            Distinct ids.
        epsilon : float or array-like of shape (n_users,)
            Pure epsilon to give back, per user.
        delta : float or array-like of shape (n_users,), default=0.0
        description : str, default="refund"

        Returns
        -------
        n_refunded : int
            The number of users given something back.

        Raises
        ------
        ValueError
            If an amount is more than the user's pure-epsilon (or delta) spend; nothing
            changes.
        """
        ids, kind, sortable = _check_ids(user_ids)
        n = len(ids)
        epsilon = _check_amount("epsilon", epsilon, n)
        delta = _check_amount("delta", delta, n)
        duplicate = _first_duplicate(sortable)
        if duplicate is not None:
            raise ValueError(f"user id {duplicate!r} appears more than once in one refund")
        keep = np.flatnonzero((epsilon > 0) | (delta > 0))
        ids = [ids[i] for i in keep]
        epsilon, delta = epsilon[keep], delta[keep]
        with self._transaction() as connection:
            self._check_kind(connection, kind, record=False)
            _, (_, _, high, low, spent_delta, _) = self._load(connection, ids)
            # TwoSum of high - epsilon, then low added back: the double-double total.
            total = high - epsilon
            error = (high - (total - (total - high))) + (-epsilon - (total - high))
            low = low + error
            new_high = total + low
            new_low = low - (new_high - total)
            # Rounding slack of the charges that added up what is now given back.
            slack = 4 * np.finfo(np.float64).eps * np.maximum(high, 1.0)
            over = (new_high < -slack) | (delta > spent_delta * (1 + 1e-12))
            if over.any():
                first = int(np.flatnonzero(over)[0])
                raise ValueError(
                    f"cannot refund user {ids[first]!r} epsilon {epsilon[first]:g}, delta "
                    f"{delta[first]:g}: more than they spent (epsilon {high[first]:g}, "
                    f"delta {spent_delta[first]:g}); nothing was refunded"
                )
            negative = new_high < 0
            new_high[negative], new_low[negative] = 0.0, 0.0
            new_delta = np.maximum(spent_delta - delta, 0.0)
            connection.executemany(
                "UPDATE accounts SET epsilon_high = ?, epsilon_low = ?, delta = ?"
                " WHERE user_id = ?",
                zip(new_high.tolist(), new_low.tolist(), new_delta.tolist(), ids))
            costs, _, counts = _distinct_costs(0.0 - epsilon, 0.0 - delta, np.zeros(len(ids)))
            connection.execute(
                "INSERT INTO releases (time, estimator, params, mechanism, n_users, levels,"
                " description) VALUES (?, 'refund', '{}', 'refund', ?, ?, ?)",
                (_now(), len(ids), json.dumps(_levels(costs, counts)), description))
        return len(ids)

    def _add_unknown_users(self, connection, ids, costs, cost_index):
        """Fill ``wanted`` and ``costs``; give users new to the ledger the default budget."""
        self._fill_wanted(connection, ids, cost_index)
        connection.execute("CREATE TEMP TABLE IF NOT EXISTS costs"
                           " (id INTEGER PRIMARY KEY, epsilon REAL, delta REAL, gaussian REAL)")
        connection.execute("DELETE FROM costs")
        connection.executemany("INSERT INTO costs VALUES (?, ?, ?, ?)",
                               [(k, *map(float, row)) for k, row in enumerate(costs)])
        unknown = connection.execute(
            "SELECT count(*), min(w.position) FROM wanted w LEFT JOIN accounts a"
            " ON a.user_id = w.user_id WHERE a.user_id IS NULL").fetchone()
        if unknown[0]:
            default = self._default_budget(connection)
            if default is None:
                raise KeyError(
                    f"{unknown[0]} of {len(ids)} users have no budget in the ledger (for "
                    f"example user {ids[unknown[1]]!r}); call set_budget for them or give "
                    "the ledger a default_budget"
                )
            connection.execute(
                "INSERT INTO accounts (user_id, budget_epsilon, budget_delta)"
                " SELECT w.user_id, ?, ? FROM wanted w LEFT JOIN accounts a"
                " ON a.user_id = w.user_id WHERE a.user_id IS NULL", default)

    def _check_charge(self, connection, ids):
        """Compute every user's new totals (table ``charged``); raise if any is over budget.

        The epsilon total is a double-double ``high + low`` updated by Knuth's TwoSum,
        written in SQL (SQLite's REAL arithmetic is IEEE float64), then renormalised.
        """
        connection.execute("DROP TABLE IF EXISTS charged")
        connection.execute(
            "CREATE TEMP TABLE charged AS SELECT position, user_id, budget, budget_delta,"
            " old_high, old_delta, old_gaussian, new_delta, new_gaussian,"
            " high, low2 - (high - total) AS low FROM ("
            "  SELECT *, total + low2 AS high FROM ("
            "   SELECT *, old_low + ((old_high - (total - (total - old_high)))"
            "          + (cost - (total - old_high))) AS low2 FROM ("
            "    SELECT w.position, a.user_id, a.budget_epsilon AS budget,"
            "     a.budget_delta AS budget_delta, a.epsilon_high AS old_high,"
            "     a.epsilon_low AS old_low, a.delta AS old_delta, a.gaussian AS old_gaussian,"
            "     c.epsilon AS cost, a.epsilon_high + c.epsilon AS total,"
            "     a.delta + c.delta AS new_delta, a.gaussian + c.gaussian AS new_gaussian"
            "    FROM wanted w JOIN accounts a ON a.user_id = w.user_id"
            "    JOIN costs c ON c.id = w.cost)))"
        )
        columns = ("position, budget, budget_delta, old_high, old_delta, old_gaussian, high,"
                   " new_delta, new_gaussian")
        # Users without a Gaussian release are checked in SQL; the others need the
        # analytic Gaussian conversion, in numpy.
        rows = connection.execute(
            f"SELECT {columns} FROM charged WHERE new_gaussian = 0"
            " AND (high > budget OR new_delta > budget_delta)"
            f" UNION ALL SELECT {columns} FROM charged WHERE new_gaussian > 0"
        ).fetchall()
        if not rows:
            return
        table = np.array(rows, dtype=np.float64)
        (position, budget, budget_delta, old_high, old_delta, old_gaussian, high, new_delta,
         new_gaussian) = table.T
        total = high + gaussian_epsilon(new_gaussian, budget_delta - new_delta)
        over = (total > budget) | (new_delta > budget_delta)
        if over.any():
            spent = old_high + gaussian_epsilon(old_gaussian, budget_delta - old_delta)
            users = [ids[int(p)] for p in position]
            raise BudgetExceededError.for_users(
                users, over, n_users=len(ids), budget=budget, spent=spent,
                would_spend=total, budget_delta=budget_delta, would_spend_delta=new_delta,
            )

    def history(self):
        """The releases charged so far, oldest first.

        Returns
        -------
        history : list of dict
            Each with ``time`` (ISO 8601, UTC), ``estimator``, ``params``,
            ``mechanism``, ``n_users`` (users charged) and ``levels``: a list of
            ``{"epsilon", "delta", "noise_multiplier", "n_users"}`` (users charged per
            distinct cost), and ``description`` (None, or the note given to
            :meth:`charge`; refunds are rows of estimator ``"refund"`` with negative
            levels).
        """
        with self._transaction() as connection:
            rows = connection.execute(
                "SELECT time, estimator, params, mechanism, n_users, levels, description"
                " FROM releases ORDER BY id").fetchall()
        return [
            {"time": time, "estimator": estimator, "params": json.loads(params),
             "mechanism": mechanism, "n_users": n_users, "levels": json.loads(levels),
             "description": description}
            for time, estimator, params, mechanism, n_users, levels, description in rows
        ]

    def users(self):
        """Every user in the ledger with their budget and spends (columns of arrays).

        Returns
        -------
        users : dict of ndarray
            ``user_id``, ``budget_epsilon``, ``budget_delta``, ``spent_epsilon``,
            ``spent_delta``, ``remaining_epsilon``.
        """
        with self._transaction() as connection:
            rows = connection.execute(
                "SELECT user_id, budget_epsilon, budget_delta, epsilon_high, delta, gaussian"
                " FROM accounts ORDER BY user_id").fetchall()
        ids = [row[0] for row in rows]
        table = np.array([row[1:] for row in rows], dtype=np.float64).reshape(-1, 5)
        budget, budget_delta, high, delta, gaussian = table.T
        spent = high + gaussian_epsilon(gaussian, budget_delta - delta)
        return {
            "user_id": np.array(ids, dtype=object), "budget_epsilon": budget,
            "budget_delta": budget_delta, "spent_epsilon": spent, "spent_delta": delta,
            "remaining_epsilon": np.maximum(budget - spent, 0.0),
        }

    def to_frame(self):
        """:meth:`users` as a pandas DataFrame indexed by ``user_id``.

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
            "last_releases": history[-n_releases:],
        }


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def _distinct_costs(epsilon, delta, gaussian):
    """The distinct (epsilon, delta, gaussian) triples, each user's row, and the counts."""
    if epsilon.size == 0:
        return np.zeros((0, 3)), np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    # One integer key per distinct triple (a row-wise unique sorts far more slowly).
    key = np.zeros(epsilon.size, dtype=np.int64)
    for column in (epsilon, delta, gaussian):
        values, inverse = np.unique(column, return_inverse=True)
        key = key * values.size + inverse.ravel()
    _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True,
                                          return_counts=True)
    table = np.column_stack([epsilon[first], delta[first], gaussian[first]])
    return table, inverse.ravel(), counts


def _levels(costs, counts):
    """Users charged per distinct (epsilon, delta, noise multiplier), for the history."""
    return [
        {"epsilon": float(e), "delta": float(d),
         "noise_multiplier": None if g == 0 else float(1.0 / np.sqrt(g)), "n_users": int(c)}
        for (e, d, g), c in zip(costs, counts)
    ]


def _mechanism(epsilon, delta, gaussian):
    if (gaussian > 0).any():
        return "gaussian"
    return "approximate" if (delta > 0).any() else "pure"
