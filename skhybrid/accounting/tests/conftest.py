"""Fixtures: a real PostgreSQL server, started by the test suite, and ledgers of every kind.

The server is PostgreSQL's own ``initdb`` and ``pg_ctl`` (Debian's postgresql-15 package;
``.ci/run`` installs it when missing), run in a temporary directory on a free localhost
port for the test session, as the ``postgres`` user when the tests run as root (the
server refuses to run as root). A missing server is a failure, never a skip.
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest


def _server_binaries():
    candidates = [os.path.dirname(shutil.which("pg_ctl") or ""),
                  *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for directory in candidates:
        if directory and all(os.access(os.path.join(directory, name), os.X_OK)
                             for name in ("initdb", "pg_ctl", "postgres")):
            return Path(directory)
    pytest.fail("PostgreSQL's server binaries (initdb, pg_ctl) were not found: install "
                "postgresql-15 (apt-get install -y postgresql-15; .ci/run does) to run the "
                "PostgreSQL ledger tests")


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_server_user(command):
    """``command`` run as ``postgres`` when we are root (PostgreSQL refuses root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


@pytest.fixture(scope="session")
def postgres_server():
    """The address of a PostgreSQL server that lives for the test session."""
    binaries = _server_binaries()
    directory = Path(tempfile.mkdtemp(prefix="skhybrid-pg-"))
    data, log = directory / "data", directory / "server.log"
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    port = _free_port()
    subprocess.run(_as_server_user([str(binaries / "initdb"), "-D", str(data), "-U", "postgres",
                                    "--auth=trust", "--no-sync", "-E", "UTF8"]),
                   check=True, capture_output=True)
    started = subprocess.run(_as_server_user([
        str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60",
        "-o", f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off",
        "start"]), capture_output=True, text=True)
    if started.returncode:
        server_log = log.read_text() if log.exists() else ""
        pytest.fail(f"PostgreSQL did not start: {started.stderr}\n{server_log}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run(_as_server_user([str(binaries / "pg_ctl"), "-D", str(data), "-m",
                                        "immediate", "stop"]), capture_output=True)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server):
    """A new, empty database on the session's server (one per test)."""
    import psycopg

    name = f"ledger_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{postgres_server}/postgres", autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return f"{postgres_server}/{name}"


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
