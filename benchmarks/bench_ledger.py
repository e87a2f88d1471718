"""Benchmark: what a privacy ledger adds to a fit, per backend, from 1e4 to 1e7 users.

Run by hand::

    python benchmarks/bench_ledger.py [max_users] [--no-postgres]

(default 1e7). PostgreSQL is a server this script starts itself (PostgreSQL 15's
``initdb`` and ``pg_ctl``, fsync on, in a temporary directory on a free local port),
as the test suite does.

1. One release of ``n`` users, ``n`` = 1e4 ... ``max_users``, ids in random order (as
   real ids arrive): the fit alone (HybridMeanEstimator, 10% tcm, default secure noise)
   against the same fit charging an in-memory ledger, an SQLite file (WAL, fsync on
   commit) and PostgreSQL. Every ledger already knows every user (the second and later
   charges of a real workload); the first charge, which adds the users, is timed too.
   Interleaved rounds, minimum of 3. Also: the same at 1e6 with string ids.
2. A 5-fold x 4-candidate GridSearchCV on 1e5 users (21 fits, 21 charges), without a
   ledger and with each backend, interleaved, minimum of 3.
3. The storage: bytes per release of 1e6 users (one epsilon; two epsilons).
4. One user's questions at ``max_users`` users and 20 releases (all users; half the
   users at two epsilons; 1% of them), on SQLite and PostgreSQL: a fresh process's
   ``spent``, ``remaining`` and ``history(user_id=...)`` (seconds after the import and
   the kernels' first call, and the process's peak resident MB: VmHWM), and the command
   ``skhybrid ledger TARGET user ID`` (wall seconds, interpreter start and imports
   included, and its peak MB). Minimum (and maximum) of 3 fresh processes.

Only part 4: ``python benchmarks/bench_ledger.py 1e7 --one-user``.

Prints Markdown tables of seconds and ratios measured in the same run.
"""

import os
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import GridSearchCV, KFold

from skhybrid import HybridMeanEstimator
from skhybrid.accounting import PrivacyLedger
from skhybrid.accounting.tests import _server
from skhybrid.exceptions import PrivacyLeakWarning

ROUNDS = 3


def _timed(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def _users(n_users, seed=0, strings=False):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 100, size=(n_users, 1))
    trust_group = np.where(rng.random(n_users) < 0.1, "tcm", "lm")
    ids = rng.permutation(n_users) * 7 + 1_000_003
    if strings:
        ids = np.char.add("user-", ids.astype(str))
    return X, trust_group, ids


def _targets(postgres_url):
    directory = Path(tempfile.mkdtemp())
    targets = {"memory": lambda: None,
               "SQLite": lambda: str(directory / f"{uuid.uuid4().hex}.sqlite")}
    if postgres_url:
        targets["PostgreSQL"] = lambda: _server.new_database(
            postgres_url, f"bench_{uuid.uuid4().hex[:12]}")
    return targets


def one_release(n_users, targets, strings=False):
    X, trust_group, ids = _users(n_users, strings=strings)
    ledgers, first = {}, {}
    for name, make in targets.items():
        ledgers[name] = PrivacyLedger(make(), default_budget=np.inf)
        first[name] = _timed(lambda: ledgers[name].charge(ids, 1e-3))
    times = {"fit alone": [], **{name: [] for name in ledgers}}
    for _ in range(ROUNDS):
        times["fit alone"].append(_timed(lambda: HybridMeanEstimator(bounds=(0, 100)).fit(
            X, trust_group=trust_group)))
        for name, ledger in ledgers.items():
            estimator = HybridMeanEstimator(bounds=(0, 100), ledger=ledger)
            times[name].append(_timed(lambda: estimator.fit(
                X, trust_group=trust_group, user_id=ids)))
    best = {name: min(values) for name, values in times.items()}
    fit = best["fit alone"]
    kind = "string" if strings else "integer"
    row = [f"{n_users:.0e} ({kind} ids)", f"{fit:.4f} s"]
    for name in ledgers:
        row.append(f"{best[name]:.4f} s ({best[name] / fit:.2f}x); first {first[name]:.3f} s")
    print("| " + " | ".join(row) + " |", flush=True)


def grid_search(n_users, targets):
    X, trust_group, ids = _users(n_users, seed=1)
    grid = {"epsilon": [0.25, 0.5], "strategy": ["kvh", "pwh"]}
    cv = KFold(5, shuffle=True, random_state=0)

    def search(ledger):
        estimator = HybridMeanEstimator(bounds=(0, 100), ledger=ledger)
        fit = {"trust_group": trust_group}
        if ledger is not None:
            fit["user_id"] = ids
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            GridSearchCV(estimator, grid, cv=cv, error_score="raise").fit(X, **fit)

    ledgers = {name: PrivacyLedger(make(), default_budget=np.inf)
               for name, make in targets.items()}
    times = {"no ledger": [], **{name: [] for name in ledgers}}
    for _ in range(ROUNDS):
        times["no ledger"].append(_timed(lambda: search(None)))
        for name, ledger in ledgers.items():
            times[name].append(_timed(lambda: search(ledger)))
    best = {name: min(values) for name, values in times.items()}
    row = [f"{n_users:.0e}", f"{best['no ledger']:.3f} s"]
    for name in ledgers:
        row.append(f"{best[name]:.3f} s ({best[name] / best['no ledger']:.2f}x)")
    print("| " + " | ".join(row) + " |", flush=True)


def storage(n_users):
    path = Path(tempfile.mkdtemp()) / "ledger.sqlite"
    ledger = PrivacyLedger(path, default_budget=np.inf)
    ids = np.random.default_rng(0).permutation(n_users)
    ledger.charge(ids, 1.0)
    ledger.charge(ids, 0.5)
    ledger.charge(ids, np.where(ids % 2 == 0, 0.5, 1.0))
    ledger.charge(ids[: n_users // 100], 0.5)
    import sqlite3

    connection = sqlite3.connect(path)
    sizes = [row[0] for row in connection.execute(
        "SELECT length(payload) FROM events ORDER BY seq")]
    connection.close()
    print(f"storage at {n_users:.0e} users: first charge (adds the ids) {sizes[0]:,} B; "
          f"a release of all, one epsilon {sizes[1]:,} B; two epsilons {sizes[2]:,} B; "
          f"1% of the users {sizes[3]:,} B")


# A fresh process's peak is its VmHWM: ru_maxrss survives exec, so a child of this
# (large) process would report the parent's peak.
_PEAK = "[line for line in open('/proc/self/status') if line.startswith('VmHWM')][0].split()[1]"
_ONE_USER = f"""
import sys, time
start = time.perf_counter()
import numpy as np
from skhybrid.accounting import PrivacyLedger
imported = time.perf_counter()
ledger = PrivacyLedger(sys.argv[1])
user = [int(sys.argv[2])]
spent, remaining, trail = ledger.spent(user), ledger.remaining(user), ledger.history(user_id=user)
assert len(trail) >= 10, trail
print(time.perf_counter() - imported, int({_PEAK}) / 1024, imported - start)
"""
_CLI = f"""
import atexit, sys
from skhybrid._cli import main
atexit.register(lambda: print(int({_PEAK}) / 1024, file=sys.stderr))
sys.exit(main(sys.argv[1:]))
"""


def _child(arguments):
    import subprocess

    start = time.perf_counter()
    result = subprocess.run([sys.executable, *arguments], capture_output=True, text=True,
                            check=True, cwd=Path(__file__).parent.parent)
    return time.perf_counter() - start, result.stdout, result.stderr


def one_user(n_users, targets):
    """One user's spent, remaining and history, and the CLI's ``user``, in fresh processes."""
    rng = np.random.default_rng(3)
    ids = rng.permutation(n_users) * 7 + 1_000_003
    print("\n| backend | build (20 releases) | import | spent + remaining + "
          "history | peak MB | `skhybrid ledger T user ID` (wall) | peak MB |")
    print("|" + " --- |" * 7)
    for name, make in targets.items():
        if name == "memory":
            continue
        target = make()
        ledger = PrivacyLedger(target, default_budget=np.inf)
        start = time.perf_counter()
        for k in range(20):
            if k % 3 == 1:
                ledger.charge(ids, np.where(ids % 2 == 0, 0.5, 0.25))
            elif k % 3 == 2:
                ledger.charge(ids[k * 1000: k * 1000 + n_users // 100], 0.5)
            else:
                ledger.charge(ids, 0.1)
        build = time.perf_counter() - start
        ledger.close()
        del ledger
        user = str(ids[n_users // 2 + 17])
        api = [_child(["-c", _ONE_USER, target, user])[1].split() for _ in range(ROUNDS)]
        cli = [_child(["-c", _CLI, "ledger", target, "user", user]) for _ in range(ROUNDS)]
        seconds = [float(out[0]) for out in api]
        print(f"| {name} | {build:.1f} s | {min(float(out[2]) for out in api):.2f} s | "
              f"{min(seconds):.3f} s (max {max(seconds):.3f}) | "
              f"{max(float(out[1]) for out in api):.0f} | "
              f"{min(wall for wall, _, _ in cli):.2f} s (max {max(w for w, _, _ in cli):.2f}) | "
              f"{max(float(err.split()[-1]) for _, _, err in cli):.0f} |", flush=True)


def main(max_users=10_000_000, postgres=True, only_one_user=False):
    print(f"load average before: {os.getloadavg()}; cores: {os.cpu_count()}")
    handle = None
    postgres_url = None
    if postgres:
        postgres_url, handle = _server.start(fsync=True)
    try:
        targets = _targets(postgres_url)
        if only_one_user:
            one_user(max_users, targets)
            return
        names = list(targets)
        print("\n| users | fit alone | " + " | ".join(names) + " |")
        print("|" + " --- |" * (2 + len(names)))
        n = 10_000
        while n <= max_users:
            one_release(n, targets)
            n *= 10
        one_release(1_000_000, targets, strings=True)
        print("\n| grid search users | no ledger | " + " | ".join(names) + " |")
        print("|" + " --- |" * (2 + len(names)))
        grid_search(100_000, targets)
        print()
        storage(1_000_000)
        one_user(max_users, targets)
    finally:
        if handle is not None:
            _server.stop(handle)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(float(arguments[0])) if arguments else 10_000_000,
         postgres="--no-postgres" not in sys.argv, only_one_user="--one-user" in sys.argv)
