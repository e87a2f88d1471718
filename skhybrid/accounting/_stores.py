"""Where a privacy ledger keeps its record: in memory, in an SQLite file, or on PostgreSQL.

Rows only (:class:`~skhybrid.accounting.PrivacyLedger` computes the totals): the events,
occasional checkpoints of every user's totals, and the users each event adds, sorted by
id in parts of 32,768 with each part's first id (:mod:`._few_users` reads one user's).
A write transaction holds the ledger's write lock (``BEGIN IMMEDIATE`` on SQLite, an
advisory lock on PostgreSQL), so the writers of all processes and machines are
serialised; an event is appended as ``last + 1`` and visible once committed, or never.
"""

import os
import sqlite3
from contextlib import contextmanager

import numpy as np

from ..exceptions import LedgerError
from ._events import _pack, _unpack

FORMAT = "skhybrid-privacy-ledger-3"
# Format 2 kept an event's new users in its payload: this version reads those events, and
# marks the ledger as format 3 (its new events keep them in the users table, which a
# version reading format 2 would misread, so it refuses the ledger instead).
_UPGRADED = ("skhybrid-privacy-ledger-2",)

#: The columns of an event row, in order (``payload`` last: the membership blob).
EVENT_COLUMNS = ("seq", "kind", "time", "estimator", "params", "mechanism", "description",
                 "n_users", "levels", "payload")

_BLOB = {"sqlite": "BLOB", "postgresql": "BYTEA"}


def _schema(prefix, dialect):
    blob = _BLOB[dialect]
    return (
        f"CREATE TABLE IF NOT EXISTS {prefix}meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {prefix}events ("
        " seq BIGINT PRIMARY KEY, kind TEXT NOT NULL, time TEXT NOT NULL,"
        " estimator TEXT NOT NULL, params TEXT NOT NULL, mechanism TEXT NOT NULL,"
        f" description TEXT NOT NULL, n_users BIGINT NOT NULL, levels TEXT NOT NULL,"
        f" payload {blob} NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {prefix}checkpoints (seq BIGINT PRIMARY KEY,"
        f" payload {blob} NOT NULL)",
        # A payload longer than _PART bytes keeps its first part in its row and the rest
        # here: PostgreSQL's bytea and SQLite's blobs stop at 1 GB (a release of 1e8 new
        # users, a checkpoint of 1e8 totals, are larger).
        f"CREATE TABLE IF NOT EXISTS {prefix}parts (owner TEXT NOT NULL, seq BIGINT NOT NULL,"
        f" part BIGINT NOT NULL, data {blob} NOT NULL, PRIMARY KEY (owner, seq, part))",
        # The users an event adds, sorted by id in parts of _USER_PART (part 0: each
        # part's first id), so that one user's slot is found by reading two small values.
        f"CREATE TABLE IF NOT EXISTS {prefix}users (seq BIGINT NOT NULL, part BIGINT NOT NULL,"
        f" data {blob} NOT NULL, PRIMARY KEY (seq, part))",
    )


#: The largest part of a payload stored in one value (256 MiB).
_PART = 2**28
#: Users per part of an event's new users (a lookup reads one part per event).
_USER_PART = 2**15


def _split(payload):
    """``payload`` as its first part and the rest's parts (``bytes``, ``memoryview``)."""
    view = memoryview(payload)
    return view[:_PART], [view[start : start + _PART]
                          for start in range(_PART, len(view), _PART)]


class MemoryStore:
    """Rows in this process's memory (a ledger for one process)."""

    description = "the in-memory ledger"
    shareable = False

    def __init__(self):
        self._meta = {"format": FORMAT, "users": "indexed"}
        self._events = []
        self._users = {}

    @contextmanager
    def transaction(self, write=False):
        # The ledger's own lock serialises this process's threads; rows appended in a
        # failed transaction are removed so that it leaves nothing behind.
        n_events, meta, users = len(self._events), dict(self._meta), dict(self._users)
        try:
            yield self
        except BaseException:
            del self._events[n_events:]
            self._meta, self._users = meta, users
            raise

    def get_meta(self, key):
        return self._meta.get(key)

    def set_meta(self, key, value):
        self._meta[key] = value

    def events_after(self, seq, *, payload=True):
        rows = self._events[seq:] if seq >= 0 else []
        return rows if payload else [row[:-1] for row in rows]

    def append_event(self, row):
        self._events.append(tuple(row))

    def append_users(self, seq, ids, slots):
        self._users[seq] = (ids, slots)

    def new_users_after(self, seq):
        return {key: value for key, value in self._users.items() if key > seq}

    def latest_checkpoint(self):
        return None

    def close(self):
        """Nothing to close: the rows live in this process."""

    def write_checkpoint(self, seq, payload):
        """Memory needs no checkpoints: the state never leaves the process."""


class _SQLStore:
    """The SQL shared by the SQLite and PostgreSQL stores (``?`` or ``%s`` placeholders)."""

    prefix = ""
    placeholder = "?"
    # Blobs go as binary parameters where the driver can say so (psycopg's %b): a
    # text-escaped bytea is twice the size and parsed by the server.
    blob_placeholder = "?"
    shareable = True
    #: Whether ``_connection`` was opened by this store: a connection the caller gave
    #: stays the caller's to close.
    _owned = True

    def __del__(self):
        # A connection this store opened is closed with it (psycopg warns of one that is
        # collected open); one from another process (after a fork) is left alone.
        connection = getattr(self, "_connection", None)
        if connection is not None and self._owned and self._pid == os.getpid():
            try:
                connection.close()
            except Exception:  # at interpreter exit the driver may be half torn down
                pass

    def _sql(self, statement):
        return (statement.replace("?", self.placeholder).replace("{p}", self.prefix)
                .replace("{blob}", self.blob_placeholder))

    def get_meta(self, key):
        row = self._execute("SELECT value FROM {p}meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key, value):
        self._execute("INSERT INTO {p}meta (key, value) VALUES (?, ?) ON CONFLICT (key)"
                      " DO UPDATE SET value = excluded.value", (key, value))

    def events_after(self, seq, *, payload=True):
        columns = ", ".join(EVENT_COLUMNS if payload else EVENT_COLUMNS[:-1])
        rows = self._execute(f"SELECT {columns} FROM {{p}}events WHERE seq > ? ORDER BY seq",
                             (seq,)).fetchall()
        if not payload:
            return [tuple(row) for row in rows]
        rest = self._parts("event", seq)
        return [tuple(row[:-1]) + (self._joined(row[-1], rest.get(row[0])),) for row in rows]

    def append_event(self, row):
        first, rest = _split(row[-1])
        marks = ", ".join(["?"] * (len(EVENT_COLUMNS) - 1) + ["{blob}"])
        self._execute(f"INSERT INTO {{p}}events ({', '.join(EVENT_COLUMNS)}) VALUES ({marks})",
                      tuple(row[:-1]) + (bytes(first),))
        self._write_parts("event", row[0], rest)

    def last_seq(self):
        return self._execute("SELECT COALESCE(MAX(seq), 0) FROM {p}events").fetchone()[0]

    def append_users(self, seq, ids, slots):
        """Record the users event ``seq`` adds: ``ids`` sorted, with their ``slots``."""
        starts = range(0, ids.size, _USER_PART)
        parts = [_pack({"ids": ids[::_USER_PART]})] + [_pack({"ids": ids[start:start + _USER_PART],
                         "slots": slots[start:start + _USER_PART]}) for start in starts]
        for part, data in enumerate(parts):
            self._execute("INSERT INTO {p}users (seq, part, data) VALUES (?, ?, {blob})",
                          (seq, part, data))

    def new_users_after(self, seq):
        """{seq: (ids sorted, their slots)} of the events after ``seq`` that add users."""
        found = {}
        for event, data in self._execute("SELECT seq, data FROM {p}users WHERE seq > ? AND"
                                         " part > 0 ORDER BY seq, part", (seq,)).fetchall():
            found.setdefault(event, []).append(_unpack(bytes(data)))
        return {event: tuple(np.concatenate([part[name] for part in parts])
                             for name in ("ids", "slots")) for event, parts in found.items()}

    def user_slots(self, values):
        """The slot of each id of ``values`` (-1 if unknown) and the ids' dtype (or None),
        from the parts that can hold them (part 0 of each event says which)."""
        slots = np.full(values.size, -1, dtype=np.int64)
        dtype = None
        for seq, data in self._execute("SELECT seq, data FROM {p}users WHERE part = 0",
                                       ()).fetchall():
            firsts = _unpack(bytes(data))["ids"]
            dtype = firsts.dtype if dtype is None else dtype
            if firsts.dtype.kind != values.dtype.kind or not firsts.size:
                continue
            where = np.searchsorted(firsts, values, side="right")
            for part in np.unique(where[(where > 0) & (slots < 0)]).tolist():
                row = self._execute("SELECT data FROM {p}users WHERE seq = ? AND part = ?",
                                    (seq, part)).fetchone()
                arrays = _unpack(bytes(row[0]))
                asked = np.flatnonzero((where == part) & (slots < 0))
                at = np.minimum(np.searchsorted(arrays["ids"], values[asked]),
                                arrays["ids"].size - 1)
                hit = arrays["ids"][at] == values[asked]
                slots[asked[hit]] = arrays["slots"][at[hit]]
        return slots, dtype

    def latest_checkpoint(self):
        row = self._execute("SELECT seq, payload FROM {p}checkpoints ORDER BY seq DESC"
                            " LIMIT 1").fetchone()
        if row is None:
            return None
        return row[0], self._joined(row[1], self._parts("checkpoint", row[0] - 1).get(row[0]))

    def write_checkpoint(self, seq, payload):
        self._execute("DELETE FROM {p}checkpoints WHERE seq <> ?", (seq,))
        self._execute("DELETE FROM {p}parts WHERE owner = 'checkpoint' AND seq <> ?", (seq,))
        first, rest = _split(payload)
        # Another process may have written the same checkpoint: the same bytes.
        self._execute("INSERT INTO {p}checkpoints (seq, payload) VALUES (?, {blob})"
                      " ON CONFLICT (seq) DO NOTHING", (seq, bytes(first)))
        self._write_parts("checkpoint", seq, rest)

    def _write_parts(self, owner, seq, parts):
        for index, part in enumerate(parts, start=1):
            self._execute("INSERT INTO {p}parts (owner, seq, part, data) VALUES (?, ?, ?, {blob})"
                          " ON CONFLICT (owner, seq, part) DO NOTHING",
                          (owner, seq, index, bytes(part)))

    def _parts(self, owner, after):
        """The further parts of the ``owner``'s payloads with seq > ``after``, by seq."""
        found = {}
        for seq, data in self._execute(
                "SELECT seq, data FROM {p}parts WHERE owner = ? AND seq > ? ORDER BY seq, part",
                (owner, after)).fetchall():
            found.setdefault(seq, []).append(bytes(data))
        return found

    @staticmethod
    def _joined(first, rest):
        return bytes(first) if not rest else b"".join([bytes(first), *rest])

    def close(self):
        """Close this process's connection (the next transaction opens a new one)."""
        if self._connection is not None and self._pid == os.getpid():
            self._connection.close()
        self._connection = None

    def _create(self, existing_tables):
        """Create the tables (under the write lock) and check the format."""
        ours = {f"{self.prefix}meta", f"{self.prefix}events", f"{self.prefix}checkpoints",
                f"{self.prefix}parts", f"{self.prefix}users"}
        if self.dialect == "sqlite" and existing_tables and "meta" not in existing_tables:
            raise LedgerError(
                f"{self.target} is an SQLite database but not a privacy ledger (its tables: "
                f"{', '.join(sorted(existing_tables))}); give a new file or an existing ledger"
            )
        if not ours <= set(existing_tables):
            for statement in _schema(self.prefix, self.dialect):
                self._execute(statement)
        found = self.get_meta("format")
        if found is None:
            self.set_meta("format", FORMAT)
            # Every event of a ledger created here records its new users in the users
            # table (an older ledger's first events keep them in their payloads).
            self.set_meta("users", "indexed")
        elif found in _UPGRADED:
            self.set_meta("format", FORMAT)
        elif found != FORMAT:
            raise LedgerError(f"{self.target} holds a ledger of format {found!r}; "
                              f"this version reads {FORMAT!r}")


class SQLiteStore(_SQLStore):
    """An SQLite file: WAL mode, ``BEGIN IMMEDIATE`` write transactions, fsync on commit."""

    dialect = "sqlite"

    def __init__(self, path, timeout):
        self.target = self.public_target = path
        self.description = f"the ledger {path}"
        self.timeout = timeout
        self._connection = None
        self._pid = None
        with self.transaction(write=True):
            tables = [row[0] for row in self._execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]
            self._create(tables)

    def pickle_args(self):
        return self.target

    def _connect(self):
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        try:
            connection = sqlite3.connect(self.target, timeout=self.timeout,
                                         isolation_level=None, check_same_thread=False)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
        except sqlite3.DatabaseError as error:
            raise self._error(error) from error
        self._connection, self._pid = connection, os.getpid()
        return connection

    def _execute(self, statement, parameters=()):
        return self._connect().execute(self._sql(statement), parameters)

    def _error(self, error):
        if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
            return LedgerError(
                f"{self.description} is locked by another process (waited {self.timeout:g} s);"
                " nothing was charged"
            )
        message = str(error)
        if "full" in message:
            return LedgerError(f"{self.description}: the disk is full ({message}); nothing "
                               "was charged")
        if "readonly" in message:
            return LedgerError(f"{self.description} is read-only ({message}): it can be "
                               "read, but not charged; nothing was charged")
        hint = " (is it a privacy ledger file?)" if "not a database" in message else ""
        return LedgerError(f"{self.description} cannot be used: {message}{hint}")

    @contextmanager
    def transaction(self, write=False):
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.DatabaseError as error:
            raise self._error(error) from error
        try:
            yield self
        except sqlite3.DatabaseError as error:
            self._rollback(connection)
            raise self._error(error) from error
        except BaseException:
            self._rollback(connection)
            raise
        try:
            connection.execute("COMMIT")
        except sqlite3.DatabaseError as error:
            self._rollback(connection)
            raise self._error(error) from error

    @staticmethod
    def _rollback(connection):
        # SQLite has already rolled back after some errors (a full disk): a second
        # ROLLBACK would raise "no transaction is active" and hide the real error.
        if connection.in_transaction:
            connection.execute("ROLLBACK")


class PostgresStore(_SQLStore):
    """A PostgreSQL database through psycopg 3; tables ``skhybrid_ledger_*``.

    Writers take a transaction-level advisory lock (released by the commit, the rollback,
    or the server when a client dies), so charges from every machine are serialised and
    each sees the totals the previous one committed.
    """

    dialect = "postgresql"
    prefix = "skhybrid_ledger_"
    placeholder = "%s"
    blob_placeholder = "%b"
    # An arbitrary 64-bit key naming the ledger's write lock (pg_advisory_xact_lock).
    _LOCK_KEY = 0x736B_6879_6272_6964 - 2**63

    def __init__(self, target, timeout):
        psycopg = _psycopg()
        if isinstance(target, psycopg.Connection):
            info = target.info
            secret = {} if info.password is None else {"password": info.password}
            self.target = Conninfo(psycopg.conninfo.make_conninfo(info.dsn, **secret))
            self._connection, self._pid = target, os.getpid()
            self._owned = False
            target.autocommit = True
        else:
            self.target = str(target)
            self._connection, self._pid = None, None
        self.timeout = timeout
        self.public_target = self._safe_target()
        self.description = f"the PostgreSQL ledger {self.public_target}"
        with self.transaction(write=True):
            tables = [row[0] for row in self._execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
            self._create(tables)

    def pickle_args(self):
        return self.target

    def _safe_target(self):
        psycopg = _psycopg()
        try:
            parts = psycopg.conninfo.conninfo_to_dict(self.target)
        except psycopg.ProgrammingError:
            return "(unreadable connection string)"
        parts.pop("password", None)
        return " ".join(f"{key}={value}" for key, value in sorted(parts.items()))

    def _connect(self):
        if self._connection is not None and self._pid == os.getpid() \
                and not self._connection.closed:
            return self._connection
        psycopg = _psycopg()
        try:
            connection = psycopg.connect(self.target, autocommit=True,
                                         connect_timeout=max(1, round(self.timeout)))
        except psycopg.Error as error:
            raise LedgerError(f"{self.description} cannot be reached: {error}") from error
        self._connection, self._pid, self._owned = connection, os.getpid(), True
        return connection

    def _execute(self, statement, parameters=None):
        return self._connect().execute(self._sql(statement), parameters or None)

    @contextmanager
    def transaction(self, write=False):
        psycopg = _psycopg()
        connection = self._connect()
        try:
            with connection.transaction():
                if write:
                    connection.execute(f"SET LOCAL lock_timeout = {int(self.timeout * 1000)}")
                    try:
                        connection.execute("SELECT pg_advisory_xact_lock(%s)", (self._LOCK_KEY,))
                    except psycopg.errors.LockNotAvailable as error:
                        raise LedgerError(
                            f"{self.description} is locked by another writer (waited "
                            f"{self.timeout:g} s); nothing was charged") from error
                else:
                    connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                yield self
        except psycopg.Error as error:
            raise LedgerError(f"{self.description} cannot be used: {error}") from error


def _psycopg():
    try:
        import psycopg
        import psycopg.conninfo
    except ImportError:
        raise ImportError(
            "a PostgreSQL ledger needs psycopg 3: pip install 'skhybrid[postgres]' "
            "(or pip install 'psycopg[binary]')"
        ) from None
    return psycopg


class Conninfo(str):
    """A libpq connection string (``"dbname=... host=..."``) known to name a server."""


def is_postgres(target):
    """Whether ``target`` names a PostgreSQL ledger (a URL, a :class:`Conninfo` or a
    psycopg connection); any other string or path is an SQLite file."""
    if isinstance(target, Conninfo):
        return True
    if isinstance(target, (str, os.PathLike)):
        return str(target).startswith(("postgresql://", "postgres://"))
    return type(target).__module__.startswith("psycopg")


def open_store(target, timeout):
    """The store for ``PrivacyLedger(target)``: None, a path, a URL or a connection."""
    if target is None:
        return MemoryStore()
    if is_postgres(target):
        return PostgresStore(target, timeout)
    # An absolute path: a copy sent to another process (a joblib worker started in
    # another directory) must open the same file.
    return SQLiteStore(os.path.abspath(os.fspath(target)), timeout)
