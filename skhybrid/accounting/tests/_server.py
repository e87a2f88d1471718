"""A throwaway PostgreSQL server: PostgreSQL's own initdb and pg_ctl, on a free local port.

Used by the test suite (``conftest.py``) and by ``benchmarks/bench_ledger.py``. The
server runs in a new temporary directory, as the ``postgres`` user when we are root (the
server refuses to run as root), and is stopped and deleted by :func:`stop`.
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


class ServerError(RuntimeError):
    """PostgreSQL's binaries are missing, or the server did not start."""


def server_binaries():
    """The directory of ``initdb``, ``pg_ctl`` and ``postgres``."""
    candidates = [os.path.dirname(shutil.which("pg_ctl") or ""),
                  *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for directory in candidates:
        if directory and all(os.access(os.path.join(directory, name), os.X_OK)
                             for name in ("initdb", "pg_ctl", "postgres")):
            return Path(directory)
    raise ServerError("PostgreSQL's server binaries (initdb, pg_ctl) were not found: install "
                      "postgresql-15 (apt-get install -y postgresql-15; .ci/run does)")


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_server_user(command):
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


def start(*, fsync=False):
    """Start a server; returns ``(url, handle)`` (the handle is for :func:`stop`)."""
    binaries = server_binaries()
    directory = Path(tempfile.mkdtemp(prefix="skhybrid-pg-"))
    data, log = directory / "data", directory / "server.log"
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    port = _free_port()
    made = subprocess.run(_as_server_user([str(binaries / "initdb"), "-D", str(data), "-U",
                                           "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]),
                          capture_output=True, text=True)
    options = f"-p {port} -k {directory} -c listen_addresses=127.0.0.1"
    if not fsync:
        options += " -c fsync=off"
    started = made.returncode == 0 and subprocess.run(_as_server_user([
        str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60",
        "-o", options, "start"]), capture_output=True, text=True)
    if not started or started.returncode:
        detail = made.stderr + (started.stderr if started else "")
        detail += log.read_text() if log.exists() else ""
        shutil.rmtree(directory, ignore_errors=True)
        raise ServerError(f"PostgreSQL did not start: {detail}")
    return f"postgresql://postgres@127.0.0.1:{port}", (binaries, directory)


def stop(handle):
    binaries, directory = handle
    subprocess.run(_as_server_user([str(binaries / "pg_ctl"), "-D", str(directory / "data"),
                                    "-m", "immediate", "stop"]), capture_output=True)
    shutil.rmtree(directory, ignore_errors=True)


def new_database(url, name):
    """Create the empty database ``name`` on the server at ``url``; its URL."""
    import psycopg

    with psycopg.connect(f"{url}/postgres", autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return f"{url}/{name}"
