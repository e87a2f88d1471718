"""An in-memory ledger served to joblib's worker processes by the process that owns it.

An in-memory :class:`~skhybrid.accounting.PrivacyLedger` refuses to be pickled (a copy
would record spends its owner never sees). Sent to loky's workers (joblib's default
backend, used by ``GridSearchCV(n_jobs=2)`` and ``cross_validate``), it travels instead as
a :class:`RemoteLedger`: an address and a random key of a small server, started once in
the owning process, that runs each call on the real ledger (under its lock). So the
workers' charges land in the one ledger, exactly as with ``n_jobs=1``.

The server listens on the loopback interface only and authenticates every connection
with the key (``multiprocessing.connection``'s HMAC challenge); it lives as long as the
owning process.
"""

import os
import threading
from multiprocessing.connection import Client, Listener

#: What a worker may call on the served ledger.
METHODS = ("charge", "refund", "set_budget", "spent", "remaining", "history", "users",
           "summary")

_servers = {}
_servers_lock = threading.Lock()


def serve(ledger):
    """The (address, key) of the server of ``ledger`` in this process, started if needed."""
    with _servers_lock:
        found = _servers.get(id(ledger))
        if found is not None and found[0] is ledger:
            return found[1]
        key = os.urandom(32)
        listener = Listener(("127.0.0.1", 0), authkey=key)
        threading.Thread(target=_accept, args=(ledger, listener), daemon=True,
                         name="skhybrid-ledger-server").start()
        _servers[id(ledger)] = (ledger, (listener.address, key))
        return listener.address, key


def _accept(ledger, listener):
    while True:
        try:
            connection = listener.accept()
        except Exception:  # a client that failed authentication: keep serving the others
            continue
        threading.Thread(target=_answer, args=(ledger, connection), daemon=True).start()


def _answer(ledger, connection):
    with connection:
        while True:
            try:
                name, args, kwargs = connection.recv()
            except (EOFError, OSError):
                return
            try:
                if name not in METHODS:
                    raise AttributeError(f"a served ledger has no method {name!r}")
                result = getattr(ledger, name)(*args, **kwargs)
                connection.send((True, None if result is ledger else result))
            except Exception as error:
                connection.send((False, (type(error), error.args, vars(error))))


class RemoteLedger:
    """A worker's handle on a ledger served by its owner: the same methods, one call each.

    Parameters
    ----------
    address : (str, int)
    key : bytes
    """

    def __init__(self, address, key):
        self.address = address
        self.key = key
        self.path = None
        self._connection = None
        self._pid = None
        self._lock = threading.Lock()

    def __repr__(self):
        return f"RemoteLedger(served from {self.address[0]}:{self.address[1]})"

    def __reduce__(self):
        return RemoteLedger, (self.address, self.key)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def _call(self, name, *args, **kwargs):
        with self._lock:
            if self._connection is None or self._pid != os.getpid():
                self._connection, self._pid = Client(self.address, authkey=self.key), os.getpid()
            self._connection.send((name, args, kwargs))
            succeeded, value = self._connection.recv()
        if succeeded:
            return value
        cls, args, attributes = value
        error = cls.__new__(cls)
        error.args = args
        error.__dict__.update(attributes)
        raise error

    def charge(self, *args, **kwargs):
        return self._call("charge", *args, **kwargs)

    def refund(self, *args, **kwargs):
        return self._call("refund", *args, **kwargs)

    def set_budget(self, *args, **kwargs):
        self._call("set_budget", *args, **kwargs)
        return self

    def spent(self, *args, **kwargs):
        return self._call("spent", *args, **kwargs)

    def remaining(self, *args, **kwargs):
        return self._call("remaining", *args, **kwargs)

    def history(self, *args, **kwargs):
        return self._call("history", *args, **kwargs)

    def users(self):
        return self._call("users")

    def summary(self, *args, **kwargs):
        return self._call("summary", *args, **kwargs)
