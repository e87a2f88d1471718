"""Fixtures: a real PostgreSQL server, started by the test suite, and ledgers of every kind.

The server is PostgreSQL's own ``initdb`` and ``pg_ctl`` (Debian's postgresql-15 package;
``.ci/run`` installs it when missing), run in a temporary directory on a free localhost
port for the test session, as the ``postgres`` user when the tests run as root (the
server refuses to run as root). A missing server is a failure, never a skip.
"""

import uuid

import pytest

from . import _server


@pytest.fixture(scope="session")
def postgres_server():
    """The address of a PostgreSQL server that lives for the test session."""
    try:
        url, handle = _server.start()
    except _server.ServerError as error:
        pytest.fail(str(error))
    try:
        yield url
    finally:
        _server.stop(handle)


@pytest.fixture
def postgres_url(postgres_server):
    """A new, empty database on the session's server (one per test)."""
    return _server.new_database(postgres_server, f"ledger_{uuid.uuid4().hex[:12]}")


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def backend(request, tmp_path):
    """Where a conformance test's ledger lives: ``(name, target)`` for PrivacyLedger."""
    if request.param == "memory":
        return "memory", None
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "ledger.sqlite")
    return "postgresql", request.getfixturevalue("postgres_url")


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_backend(request, tmp_path):
    """A ledger that processes share: ``(name, target)``."""
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "ledger.sqlite")
    return "postgresql", request.getfixturevalue("postgres_url")
