"""Benchmark: a Dask fit of millions of users (Parquet) charging a PostgreSQL ledger.

Run by hand::

    python benchmarks/bench_dask_ledger.py [n_millions]

(default 10). It writes ``n_millions`` Parquet files of one million users each
(``value``, ``tcm``: 5%, ``id``: distinct integers in random order) into a temporary
directory, starts a PostgreSQL server (PostgreSQL 15's ``initdb`` and ``pg_ctl``, fsync
on, as the test suite does), and fits ``HybridMeanEstimator`` from the files with
``dask.dataframe`` on an in-process ``distributed`` cluster (2 threads):

1. without a ledger;
2. with the PostgreSQL ledger, first release (every user new to the ledger);
3. the same again (every user known).

It then checks that every user was charged exactly once per release (their spent
epsilon, read back from a new connection, is exactly 1 then 2 times the release's) and
prints the times and their ratios to the fit without a ledger.

The ids are computed as one numpy int64 array on the client (8 bytes per user, never a
Python list) and charged in one transaction.
"""

import gc
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from skhybrid.accounting.tests import _server

ROWS_PER_FILE = 1_000_000
BOUNDS = (0.0, 500_000.0)
EPSILON = 1.0


def write_parquet(directory, n_millions):
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    for index in range(n_millions):
        path = directory / f"part-{index:05d}.parquet"
        if path.exists():
            continue
        rng = np.random.default_rng(index)
        value = np.clip(rng.lognormal(11.0, 0.6, ROWS_PER_FILE), *BOUNDS)
        tcm = rng.random(ROWS_PER_FILE) < 0.05
        ids = index * ROWS_PER_FILE + rng.permutation(ROWS_PER_FILE)
        pq.write_table(pa.table({"value": value, "tcm": tcm, "id": ids}), path)


def main(n_millions=10):
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from skhybrid import HybridMeanEstimator, PrivacyLedger

    directory = Path(tempfile.gettempdir()) / f"skhybrid-bench-ledger-{n_millions}m"
    write_parquet(directory, n_millions)
    url, handle = _server.start(fsync=True)
    try:
        target = _server.new_database(url, f"bench_{uuid.uuid4().hex[:12]}")
        ledger = PrivacyLedger(target, default_budget=np.inf)
        with LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                          dashboard_address=None) as cluster, Client(cluster):
            frame = dd.read_parquet(str(directory))

            def fit(with_ledger):
                estimator = HybridMeanEstimator(
                    "kvh", epsilon=EPSILON, bounds=BOUNDS, random_state=0,
                    ledger=ledger if with_ledger else None)
                metadata = {"trust_group": frame["tcm"]}
                if with_ledger:
                    metadata["user_id"] = frame["id"]
                start = time.perf_counter()
                estimator.fit(frame[["value"]], **metadata)
                return time.perf_counter() - start

            alone = fit(False)
            first = fit(True)
            again = fit(True)
            alone = min(alone, fit(False))
        n_users = n_millions * ROWS_PER_FILE
        # Read back from a new connection, once this one's state (GBs at 1e8) is freed.
        ledger.close()
        del ledger
        gc.collect()
        spent = PrivacyLedger(target).spent(np.arange(n_users))
        exact = bool((spent == 2 * EPSILON).all())
        print(f"Dask fit of {n_users:,} users from Parquet (2 threads), PostgreSQL ledger:")
        print(f"  without a ledger            {alone:8.2f} s")
        print(f"  first release (new users)   {first:8.2f} s   {first / alone:5.2f}x")
        print(f"  second release (known)      {again:8.2f} s   {again / alone:5.2f}x")
        print(f"  every user charged exactly once per release: {exact}")
    finally:
        _server.stop(handle)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
