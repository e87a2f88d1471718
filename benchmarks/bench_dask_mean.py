"""Benchmark: a private mean of 100 million users stored as Parquet chunks, fitted with Dask.

Run by hand::

    python benchmarks/bench_dask_mean.py [n_millions] [in_memory_millions ...]

(default: 100 million users on Dask; in-memory fits of 10, 30 and 100 million). It

1. writes the users as Parquet files of one million rows each (``value``: a salary-like
   float; ``tcm``: whether the user trusts the curator, 5%; lm rows are reports their
   devices privatized, so ``local_reports=True``) into a temporary directory, once;
2. fits ``HybridMeanEstimator`` from the Parquet files with ``dask.dataframe`` on an
   in-process ``distributed`` cluster (2 threads): each file is reduced where it is
   read, only the groups' counts and sums are collected;
3. fits the same estimator in memory on numpy arrays of several sizes (read from the
   same files).

Each fit runs in its own process, so the peak resident memory it reports
(``ru_maxrss``) is that fit's alone. The figures to read: the Dask fit's peak memory
against the in-memory fit's at the same size, and the time per million users.
"""

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROWS_PER_FILE = 1_000_000
BOUNDS = (0.0, 500_000.0)
EPSILON = 1.0


def _users(n_rows, seed):
    """One file's users: 5% tcm raw salaries, 95% lm locally privatized reports."""
    from skhybrid.mechanisms import LocalLaplaceRandomizer

    rng = np.random.default_rng(seed)
    salary = np.clip(rng.lognormal(11.0, 0.6, n_rows), *BOUNDS)
    tcm = rng.random(n_rows) < 0.05
    reports = LocalLaplaceRandomizer(bounds=BOUNDS, epsilon=EPSILON).privatize(
        salary[:, np.newaxis], random_state=rng
    )[:, 0]
    return np.where(tcm, salary, reports), tcm


def write_parquet(directory, n_millions):
    """Write ``n_millions`` files of a million users each (skips files already there)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    for index in range(n_millions):
        path = directory / f"part-{index:05d}.parquet"
        if not path.exists():
            value, tcm = _users(ROWS_PER_FILE, seed=index)
            pq.write_table(pa.table({"value": value, "tcm": tcm}), path)


def _peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def fit_dask(directory):
    """Fit from the Parquet files on an in-process cluster; run in a child process."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from skhybrid import HybridMeanEstimator

    with LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                      dashboard_address=None) as cluster, Client(cluster):
        frame = dd.read_parquet(str(directory))
        start = time.perf_counter()
        estimator = HybridMeanEstimator(
            "kvh", epsilon=EPSILON, bounds=BOUNDS, local_reports=True, random_state=0
        ).fit(frame[["value"]], trust_group=frame["tcm"])
        seconds = time.perf_counter() - start
    return {"n_users": estimator.n_tcm_ + estimator.n_lm_, "seconds": seconds,
            "peak_rss_mib": _peak_rss_mib(), "mean": float(estimator.mean_[0])}


def fit_in_memory(directory, n_millions):
    """Read the first ``n_millions`` files into numpy and fit; run in a child process."""
    import pyarrow.parquet as pq

    from skhybrid import HybridMeanEstimator

    paths = sorted(directory.glob("part-*.parquet"))[:n_millions]
    X = np.empty((len(paths) * ROWS_PER_FILE, 1))
    tcm = np.empty(len(paths) * ROWS_PER_FILE, dtype=bool)
    for index, path in enumerate(paths):
        table = pq.read_table(path)
        rows = slice(index * ROWS_PER_FILE, (index + 1) * ROWS_PER_FILE)
        X[rows, 0] = table["value"].to_numpy()
        tcm[rows] = table["tcm"].to_numpy()
        del table
    data_mib = (X.nbytes + tcm.nbytes) / 2**20
    start = time.perf_counter()
    estimator = HybridMeanEstimator(
        "kvh", epsilon=EPSILON, bounds=BOUNDS, local_reports=True, random_state=0
    ).fit(X, trust_group=tcm)
    seconds = time.perf_counter() - start
    return {"n_users": X.shape[0], "seconds": seconds, "peak_rss_mib": _peak_rss_mib(),
            "data_mib": data_mib, "mean": float(estimator.mean_[0])}


def _child(*args):
    # One process per fit: ru_maxrss is then that fit's peak.
    output = subprocess.run(
        [sys.executable, __file__, "--child", *map(str, args)],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def _baseline_rss_mib():
    """Peak memory of a child that only imports skhybrid, numpy, Dask and distributed."""
    code = ("import resource, skhybrid, dask.dataframe, distributed; "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    return float(subprocess.run([sys.executable, "-c", code], check=True,
                                capture_output=True, text=True).stdout)


def main(n_millions=100, in_memory_millions=(10, 30, 100)):
    directory = Path(tempfile.gettempdir()) / f"skhybrid-bench-{n_millions}m"
    start = time.perf_counter()
    write_parquet(directory, n_millions)
    print(f"Parquet: {n_millions} files of 1M users in {directory} "
          f"({time.perf_counter() - start:.0f} s to write or check)")
    print(f"imports alone: peak RSS {_baseline_rss_mib():,.0f} MiB")
    dask_result = _child("dask", directory)
    print(f"Dask, {dask_result['n_users']:,} users: {dask_result['seconds']:.1f} s "
          f"({dask_result['seconds'] / n_millions:.3f} s per million), "
          f"peak RSS {dask_result['peak_rss_mib']:,.0f} MiB")
    for size in [size for size in in_memory_millions if size <= n_millions]:
        try:
            result = _child("memory", directory, size)
        except subprocess.CalledProcessError as error:
            print(f"in memory, {size}M users: failed ({error.returncode})")
            continue
        print(f"in memory, {result['n_users']:,} users: fit {result['seconds']:.1f} s "
              f"({result['seconds'] / size:.3f} s per million), peak RSS "
              f"{result['peak_rss_mib']:,.0f} MiB (data {result['data_mib']:,.0f} MiB)")
        if size == n_millions:
            print(f"  peak memory in memory / on Dask: "
                  f"{result['peak_rss_mib'] / dask_result['peak_rss_mib']:.1f}x; "
                  f"time on Dask / in memory: {dask_result['seconds'] / result['seconds']:.1f}x; "
                  f"same release: {np.isclose(result['mean'], dask_result['mean'], rtol=1e-9)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        kind, directory = sys.argv[2], Path(sys.argv[3])
        result = fit_dask(directory) if kind == "dask" else fit_in_memory(directory, int(sys.argv[4]))
        print(json.dumps(result))
    else:
        sizes = [int(arg) for arg in sys.argv[1:]]
        main(*(sizes[:1] or [100]), *([tuple(sizes[1:])] if sizes[1:] else []))
