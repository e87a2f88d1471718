"""The hybrid mean's table: fits against their floors and a plain read, in one run.

Run by hand: ``python benchmarks/run.py [n_users]`` (default 10 million); three runs give
the spread that ``benchmarks/README.md`` reports. For each case the calls run in turn
within each of ``ROUNDS`` rounds (interleaved: a busy moment slows all of them), after
one untimed warm-up of each; a row is the ratio of the two minimum times and the median
of the per-round ratios, and the load average is printed before and after.

Baselines:

- *floor*: the unavoidable numpy work of the same computation (clip plus one reduction);
- *plain read*: ``X.sum()``, one read of the values (for the fixed-point kernel);
- Dask's own ``sum`` of the same Parquet columns (written once to the temporary
  directory; skipped without Dask).

Peak memory is that of a fit in a fresh subprocess after one untraced fit (tracemalloc),
as a multiple of ``X.nbytes``. The other goals have scripts of their own:
``bench_kmeans.py``, ``bench_levels.py``, ``bench_labels.py``, ``bench_diffprivlib.py``,
``bench_first_fit.py``.
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings

import numpy as np

from skhybrid import HybridMeanEstimator
from skhybrid.utils._sums import fixed_point_sums

ROUNDS = 5
#: Seconds of quiet before each timed call. scikit-learn's OpenMP threads and
#: OpenBLAS's spin for a few milliseconds after their work ends, so a call timed right
#: after one competes with them for the cores (measured: our K-means pass at 1e5 x 50
#: took 24% longer right after a scikit-learn fit than after a 10 ms pause).
SETTLE_SECONDS = 0.02


def interleaved(functions, rounds=ROUNDS):
    """Each function's time in each round (one untimed warm-up call of each first),
    each call after ``SETTLE_SECONDS`` of quiet."""
    for function in functions:
        function()
    times = np.empty((rounds, len(functions)))
    for round_ in range(rounds):
        for index, function in enumerate(functions):
            time.sleep(SETTLE_SECONDS)
            start = time.perf_counter()
            function()
            times[round_, index] = time.perf_counter() - start
    return times


def ratio(times, numerator, denominator):
    """(minimum over minimum, median of the per-round ratios)."""
    return (times[:, numerator].min() / times[:, denominator].min(),
            float(np.median(times[:, numerator] / times[:, denominator])))


def peak_memory(setup, statement, nbytes="X.nbytes"):
    """Peak memory allocated by ``statement`` after ``setup``, over the input's size.

    The statement runs once untraced first: a fit's memory, not the imports'.
    """
    script = textwrap.dedent(f"""
        import tracemalloc, warnings
        import numpy as np
        warnings.simplefilter("ignore")
        {setup}
        {statement}
        tracemalloc.start()
        {statement}
        print(tracemalloc.get_traced_memory()[1] / {nbytes})
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    return float(out.stdout.strip()) if out.returncode == 0 else float("nan")


def clipped_sum(X, labels=None, n_groups=1):
    values = np.clip(X[:, 0], 0.0, 1.0)
    if labels is None:
        return values.sum()
    return np.bincount(labels, weights=values, minlength=n_groups)


def dask_parquet_times(n_files=10):
    """A Dask fit from Parquet files and Dask's own sum of the same columns, per round.

    Both read the files (``value``, ``tcm``) on Dask's threaded scheduler with one thread
    per core; skhybrid's fit reduces each file to the groups' counts and exact sums.
    None when Dask or pyarrow is not installed.
    """
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        return None
    from pathlib import Path

    from bench_dask_mean import BOUNDS, write_parquet  # benchmarks/ is on the path

    directory = Path(tempfile.gettempdir()) / f"skhybrid-bench-{n_files}m"
    write_parquet(directory, n_files)

    def fit():
        frame = dd.read_parquet(str(directory))
        HybridMeanEstimator("kvh", bounds=BOUNDS, local_reports=True, random_state=0).fit(
            frame[["value"]], trust_group=frame["tcm"])

    def dask_sum():
        frame = dd.read_parquet(str(directory))
        dask.compute(frame["value"].sum(), frame["tcm"].sum())

    with dask.config.set(scheduler="threads"):
        return interleaved([fit, dask_sum])


def main(n_users=10_000_000):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(n_users, 1))
    is_tcm = rng.random(n_users) < 0.05
    labels = np.where(is_tcm, "tcm", "lm")  # the README's labels
    rows = []
    load_before = os.getloadavg()

    def row(case, times, numerator, denominator, baseline, goal, memory=None):
        low, median = ratio(times, numerator, denominator)
        rows.append((case, times[:, numerator].min(), low, median, baseline, memory, goal))

    setup = (f"rng = np.random.default_rng(0); X = rng.uniform(0, 1, size=({n_users}, 1)); "
             f"labels = np.where(rng.random({n_users}) < 0.05, 'tcm', 'lm'); import skhybrid")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        times = interleaved([
            lambda: X.sum(),
            lambda: fixed_point_sums(X, 0.0, 1.0),
            lambda: np.clip(X, 0.0, 1.0).sum(axis=0),
            lambda: HybridMeanEstimator("tcm_only", bounds=(0, 1), random_state=0).fit(X),
        ])
        row("fixed_point_sums(X, 0.0, 1.0)", times, 1, 0, "plain read", "<= 2x")
        row('HybridMeanEstimator("tcm_only", bounds=(0, 1)).fit(X)', times, 3, 2, "floor",
            "<= 1.3x", peak_memory(setup, "skhybrid.HybridMeanEstimator('tcm_only', "
                                          "bounds=(0, 1)).fit(X)"))
        times = interleaved([
            lambda: clipped_sum(X, is_tcm.view(np.int8), 2),
            lambda: HybridMeanEstimator(bounds=(0, 1)).fit(X, trust_group=labels),
        ])
        row("HybridMeanEstimator(bounds=(0, 1)).fit(X, trust_group=labels), 5% tcm",
            times, 1, 0, "floor", "<= 2.5x",
            peak_memory(setup, "skhybrid.HybridMeanEstimator(bounds=(0, 1))"
                               ".fit(X, trust_group=labels)"))
        dask_times = dask_parquet_times()
        if dask_times is not None:
            row("HybridMeanEstimator(local_reports=True) from 10 Parquet files of 1e6 rows "
                "on Dask", dask_times, 0, 1, "Dask's sum of the same columns", "<= 1.15x")

    load_after = os.getloadavg()
    print(f"{n_users:,} users; {ROUNDS} interleaved rounds after a warm-up; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after\n")
    print("| call | time (min) | ratio of minima | median ratio | against | peak memory / "
          "input | goal |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for case, seconds, low, median, against, memory, goal in rows:
        memory_text = "" if memory is None else f"{memory:.2f}x"
        print(f"| {case} | {seconds * 1e3:.1f} ms | {low:.2f}x | {median:.2f}x | {against} "
              f"| {memory_text} | {goal} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
