"""Benchmark: what a privacy ledger adds to a fit and to a grid search.

Run by hand: ``python benchmarks/bench_ledger.py [n_users]`` (default 1 million).

1. One release of ``n_users`` users: the fit alone (HybridMeanEstimator, 10% tcm,
   default secure noise) against the same fit charging an in-memory ledger and a file
   ledger (SQLite, WAL). The ledger starts with every user known (the second and later
   charges of a real workload), interleaved rounds, minimum of 3.
2. A 5-fold x 4-candidate GridSearchCV on ``n_users / 10`` users, without a ledger and
   with a file ledger.

Prints seconds and ratios measured in the same run.
"""

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import GridSearchCV, KFold

from skhybrid import HybridMeanEstimator
from skhybrid.accounting import PrivacyLedger
from skhybrid.exceptions import PrivacyLeakWarning


def _timed(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def _users(n_users, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 100, size=(n_users, 1))
    trust_group = np.where(rng.random(n_users) < 0.1, "tcm", "lm")
    return X, trust_group, np.arange(n_users)


def one_release(n_users, rounds=3):
    X, trust_group, ids = _users(n_users)
    directory = Path(tempfile.mkdtemp())
    ledgers = {
        "in memory": PrivacyLedger(default_budget=np.inf),
        "SQLite file": PrivacyLedger(directory / "ledger.sqlite", default_budget=np.inf),
    }
    for ledger in ledgers.values():
        ledger.charge(ids, 1e-3)  # every user known, as after the first release
    times = {"fit alone": [], **{name: [] for name in ledgers}}
    for _ in range(rounds):
        times["fit alone"].append(_timed(lambda: HybridMeanEstimator(bounds=(0, 100)).fit(
            X, trust_group=trust_group)))
        for name, ledger in ledgers.items():
            estimator = HybridMeanEstimator(bounds=(0, 100), ledger=ledger)
            times[name].append(_timed(lambda: estimator.fit(
                X, trust_group=trust_group, user_id=ids)))
    best = {name: min(values) for name, values in times.items()}
    print(f"one release of {n_users:,} users (minimum of {rounds} interleaved rounds)")
    for name, seconds in best.items():
        ratio = seconds / best["fit alone"]
        print(f"  {name:<24} {seconds:8.3f} s   {ratio:6.1f}x the fit alone")


def grid_search(n_users):
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

    path = Path(tempfile.mkdtemp()) / "ledger.sqlite"
    without = _timed(lambda: search(None))
    with_ledger = _timed(lambda: search(PrivacyLedger(path, default_budget=np.inf)))
    print(f"5-fold x 4-candidate grid search on {n_users:,} users (21 fits)")
    print(f"  {'without a ledger':<24} {without:8.3f} s")
    print(f"  {'with a file ledger':<24} {with_ledger:8.3f} s   "
          f"{with_ledger / without:6.1f}x without")


def main(n_users=1_000_000):
    one_release(n_users)
    grid_search(n_users // 10)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
