"""The performance table: every estimator against its floor or a named library, in one run.

Run by hand: ``python benchmarks/run.py [n_users]`` (default 10 million); run it three
times for the spread that ``benchmarks/README.md`` reports. For each case the estimator
and its baseline run in turn within each of ``ROUNDS`` rounds (interleaved: a busy
moment slows both), after one untimed warm-up of each: the table is of warm fits (the
fixed-point sums are compiled at install, one path in every process). The first fit in
a fresh process has rows of its own, with numba's cache cold and warm. A row reports the ratio of the two minimum
times and the median of the per-round ratios, and the load average is printed before
and after.

Baselines:

- *floor*: the unavoidable numpy work of the same computation (clip plus one reduction;
  for the Sample mechanism also one coin per user);
- *hash floor*: grouping users by privacy level with a hash table (``pandas.factorize``)
  plus one ``np.bincount`` of the clipped values: what a fit with many levels must do;
- *plain read*: ``X.sum()``, one read of the values (for the fixed-point kernel);
- scikit-learn's ``KMeans`` (lloyd, same initial centres): per iteration, timed
  inside fits of 1 + m iterations from the end of the first to the end of the last,
  over m, for both (m = 10 at 1e6 points, 20 at 1e5; ``iteration_marks``): a fit's
  fixed costs are left out; from the minima over the rounds, and from the medians;
- Dask's own ``sum`` of the same Parquet columns (written once to the temporary
  directory; skipped without Dask).

Peak memory is that of a fit in a fresh subprocess after one untraced fit (tracemalloc,
which sees numpy's and numba's allocations), as a multiple of ``X.nbytes``.
"""

import os
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from contextlib import contextmanager

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans

from skhybrid import (
    ADPMEstimator,
    HybridKMeans,
    HybridMeanEstimator,
    MixedMeanEstimator,
    PDPSampleEstimator,
)
from skhybrid.utils._sums import fixed_point_sums

ROUNDS = 5
#: K-means' rounds (each a fit of scikit-learn's and one of HybridKMeans').
KMEANS_ROUNDS = 7
#: Seconds of quiet before each timed call. scikit-learn's OpenMP threads and
#: OpenBLAS's spin for a few milliseconds after their work ends, so a call timed right
#: after one competes with them for the cores (measured: our K-means pass at 1e5 x 50
#: took 24% longer right after a scikit-learn fit than after a 10 ms pause).
SETTLE_SECONDS = 0.02
#: The estimators with a privacy level per user, in the order of their timed calls.
ESTIMATORS = ["ADPMEstimator", "PDPSampleEstimator", "MixedMeanEstimator"]


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


def load_kernels():
    """Nothing to switch: the fixed-point sums have one compiled path (kept for the
    callers below)."""


def peak_memory(setup, statement, nbytes="X.nbytes"):
    """Peak memory allocated by ``statement`` after ``setup``, over the input's size.

    The statement runs once untraced first, with the kernels loaded (:func:`load_kernels`):
    loading the compiled kernels (numba's one-time work per process) is not the fit's
    memory.
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


def first_fit_seconds(n_users, cold):
    """The first fit of a fresh process (imports excluded), numba's cache cold or warm."""
    script = textwrap.dedent(f"""
        import time, warnings
        import numpy as np
        from skhybrid import HybridMeanEstimator
        warnings.simplefilter("ignore")
        X = np.random.default_rng(0).uniform(0, 1, ({n_users}, 1))
        start = time.perf_counter()
        HybridMeanEstimator("tcm_only", bounds=(0, 1)).fit(X)
        print(time.perf_counter() - start)
    """)
    environment = dict(os.environ)
    with tempfile.TemporaryDirectory() as empty:
        if cold:
            environment["NUMBA_CACHE_DIR"] = empty  # nothing compiled there yet
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=environment, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def clipped_sum(X, labels=None, n_groups=1):
    values = np.clip(X[:, 0], 0.0, 1.0)
    if labels is None:
        return values.sum()
    return np.bincount(labels, weights=values, minlength=n_groups)


def hash_floor(X, levels):
    codes, uniques = pd.factorize(levels)
    return clipped_sum(X, codes, uniques.size), np.bincount(codes, minlength=uniques.size)


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


def kmeans_extra_iterations(n):
    """Iterations timed per fit, after the first: enough that a fit's time per iteration
    is an average over several (each of a few milliseconds at 1e5 points)."""
    return 10 if n >= 1_000_000 else 20


@contextmanager
def iteration_marks():
    """While in it, the end of every Lloyd iteration is time-stamped in the list yielded:
    scikit-learn's (each call of ``lloyd_iter_chunked_dense`` that updates the centres:
    not the E-step it reruns after its last iteration) and HybridKMeans' (each merge of
    its groups' cluster means into new centres, ``_next_centres``, the last step of an iteration).

    Both are module globals the fits look up at each call, so the fits run unchanged;
    the stamp adds under a microsecond per iteration.
    """
    import sklearn.cluster._kmeans as theirs

    import skhybrid.cluster._kmeans as ours

    marks = []

    def marked(function, counted=lambda kwargs: True):
        def call(*args, **kwargs):
            result = function(*args, **kwargs)
            if counted(kwargs):
                marks.append(time.perf_counter())
            return result
        return call

    originals = theirs.lloyd_iter_chunked_dense, ours._next_centres
    theirs.lloyd_iter_chunked_dense = marked(
        originals[0], lambda kwargs: kwargs.get("update_centers", True))
    ours._next_centres = marked(originals[1])
    try:
        yield marks
    finally:
        theirs.lloyd_iter_chunked_dense, ours._next_centres = originals


def kmeans_iteration_times(n, n_features, n_clusters, tcm_share, rng):
    """scikit-learn's and HybridKMeans' time per Lloyd iteration, per round (columns).

    Each fit runs ``1 + kmeans_extra_iterations(n)`` iterations, and its time per
    iteration is the time from the end of its first iteration to the end of its last,
    over their number (:func:`iteration_marks`): a fit's fixed costs (validation,
    scikit-learn's copy and centring of X, the lm users' reports) are outside it.
    (Until session 34 this was the difference of a long and a one-iteration fit's
    times: on this virtual machine, the first touch of a fit's fresh memory costs from
    0.4 to 0.8 s at 1e6 x 50, and which of the two fits paid more made the difference
    meaningless, once negative.)
    """
    X = rng.uniform(0, 1, size=(n, n_features))
    init = rng.uniform(0, 1, size=(n_clusters, n_features))
    metadata = {} if tcm_share == 1.0 else {"trust_group": rng.random(n) < tcm_share}
    strategy = "tcm_only" if tcm_share == 1.0 else "hybrid"
    iterations = 1 + kmeans_extra_iterations(n)

    def lloyd():
        KMeans(n_clusters, init=init, n_init=1, max_iter=iterations, tol=0,
               algorithm="lloyd").fit(X)

    def private():
        HybridKMeans(n_clusters, epsilon=7.0, n_iter=iterations, strategy=strategy,
                     bounds=(0, 1), init=init, random_state=0).fit(X, **metadata)

    times = np.empty((KMEANS_ROUNDS, 2))
    with iteration_marks() as marks:
        lloyd()
        private()
        for round_ in range(KMEANS_ROUNDS):
            for column, fit in enumerate((lloyd, private)):
                time.sleep(SETTLE_SECONDS)
                marks.clear()
                fit()
                if len(marks) < 2:
                    raise RuntimeError(f"{len(marks)} iterations timed: scikit-learn "
                                       "converged, or a stamped function changed")
                times[round_, column] = (marks[-1] - marks[0]) / (len(marks) - 1)
    return times


def per_iteration(times):
    """(HybridKMeans' time per iteration, the ratio of the two minima, the median of the
    per-round ratios), from :func:`kmeans_iteration_times`."""
    low = times.min(axis=0)
    return low[1], low[1] / low[0], float(np.median(times[:, 1] / times[:, 0]))


def spread(times):
    """The time per iteration's spread over the rounds, HybridKMeans' and
    scikit-learn's: (slowest - quickest) / quickest."""
    columns = times[:, [1, 0]]  # HybridKMeans' first
    return tuple((columns.max(axis=0) - columns.min(axis=0)) / columns.min(axis=0))


def main(n_users=10_000_000):
    load_kernels()
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(n_users, 1))
    is_tcm = rng.random(n_users) < 0.05
    as_strings = np.where(is_tcm, "tcm", "lm").astype(object)  # one str object per row
    # Rows sharing two str objects, as pandas' CSV reader and Python literals give them.
    as_shared = np.array(["lm", "tcm"], dtype=object)[is_tcm.view(np.int8)]
    two_levels = np.where(rng.random(n_users) < 0.5, 0.5, 2.0)
    rows = []
    spreads = []  # K-means: the time per iteration's spread over the rounds
    load_before = os.getloadavg()

    def row(case, times, numerator, denominator, baseline, goal, memory=None):
        low, median = ratio(times, numerator, denominator)
        rows.append((case, times[:, numerator].min(), low, median, baseline, memory, goal))

    setup = (f"rng = np.random.default_rng(0); X = rng.uniform(0, 1, size=({n_users}, 1)); "
             f"is_tcm = rng.random({n_users}) < 0.05; "
             f"two = np.where(rng.random({n_users}) < 0.5, 0.5, 2.0); import skhybrid")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        times = interleaved([
            lambda: X.sum(),
            lambda: fixed_point_sums(X, 0.0, 1.0),
            lambda: np.clip(X, 0.0, 1.0).sum(axis=0),
            lambda: HybridMeanEstimator("tcm_only", bounds=(0, 1), random_state=0).fit(X),
        ])
        row("fixed-point sum kernel", times, 1, 0, "plain read", "<= 2x")
        row("HybridMean all tcm, tcm_only (private variance)", times, 3, 2, "floor", "<= 1.3x",
            peak_memory(setup, "skhybrid.HybridMeanEstimator('tcm_only', bounds=(0, 1))"
                               ".fit(X)"))

        times = interleaved([
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=is_tcm),
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(
                X, trust_group=as_strings),
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(
                X, trust_group=as_shared),
        ])
        row("HybridMean, object trust_group (one str per row)", times, 1, 0, "bool fit",
            "<= 1.2x")
        row("HybridMean, object trust_group (shared strs, as read_csv)", times, 2, 0,
            "bool fit", "<= 1.2x")
        as_str = pd.Series(as_strings).astype("str")
        as_category = as_str.astype("category")
        times = interleaved([
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=is_tcm),
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=as_str),
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(
                X, trust_group=as_category),
        ])
        row("HybridMean, pandas str trust_group", times, 1, 0, "bool fit", "<= 1.2x")
        row("HybridMean, pandas category trust_group", times, 2, 0, "bool fit", "<= 1.2x")

        times = interleaved([
            lambda: clipped_sum(X, is_tcm.view(np.int8), 2),
            lambda: HybridMeanEstimator(bounds=(0, 1)).fit(X, trust_group=is_tcm),
        ])
        row("HybridMean default (secure noise)", times, 1, 0, "floor", "<= 2.5x",
            peak_memory(setup, "skhybrid.HybridMeanEstimator(bounds=(0, 1))"
                               ".fit(X, trust_group=is_tcm)"))

        times = interleaved([
            lambda: hash_floor(X, two_levels),
            lambda: ADPMEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=two_levels),
            lambda: PDPSampleEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=two_levels),
            lambda: MixedMeanEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=two_levels),
        ])
        for index, name in enumerate(ESTIMATORS, start=1):
            row(f"{name.replace('Estimator', '')}, 2 levels", times, index, 0, "hash floor",
                "<= 1.5x", peak_memory(setup, f"skhybrid.{name}(bounds=(0, 1))"
                                              ".fit(X, epsilon=two)"))

        for n_levels in (100, 10_000, 100_000):
            levels = np.round(rng.uniform(0.1, 10.0, n_levels), 6)[
                rng.integers(0, n_levels, n_users)]
            n_distinct = np.unique(levels).size
            times = interleaved([
                lambda: hash_floor(X, levels),
                lambda: ADPMEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=levels),
                lambda: PDPSampleEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=levels),
                lambda: MixedMeanEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=levels),
            ])
            level_setup = (setup + f"; levels = np.round(rng.uniform(0.1, 10.0, {n_levels}), "
                           f"6)[rng.integers(0, {n_levels}, {n_users})]")
            for index, name in enumerate(ESTIMATORS, start=1):
                memory = None
                if n_levels == 100_000:
                    memory = peak_memory(level_setup, f"skhybrid.{name}(bounds=(0, 1))"
                                                      ".fit(X, epsilon=levels)")
                row(f"{name.replace('Estimator', '')}, {n_distinct:,} levels", times, index, 0,
                    "hash floor", "<= 1.5x", memory)

        for n, n_features, n_clusters, share in [
            (1_000_000, 2, 3, 1.0), (1_000_000, 10, 3, 1.0), (1_000_000, 10, 10, 1.0),
            (100_000, 50, 50, 1.0), (1_000_000, 10, 10, 0.05), (100_000, 50, 50, 0.05),
        ]:
            n = min(n, n_users)
            times = kmeans_iteration_times(n, n_features, n_clusters, share, rng)
            seconds, low, median = per_iteration(times)
            strategy = "tcm_only" if share == 1.0 else f"hybrid ({share:.0%} tcm)"
            case = f"HybridKMeans {strategy}, per iteration, {n:,} x {n_features}, k={n_clusters}"
            rows.append((case, seconds, low, median, "sklearn KMeans", None, "<= 1.0x"))
            spreads.append((case, *spread(times)))
        kmeans_setup = ("rng = np.random.default_rng(0); X = rng.uniform(0, 1, size=(1_000_000, "
                        "10)); init = rng.uniform(0, 1, size=(10, 10)); "
                        "tcm = rng.random(1_000_000) < 0.05; import skhybrid")
        for strategy, metadata in [("tcm_only", ""), ("hybrid", "trust_group=tcm")]:
            memory = peak_memory(kmeans_setup, f"skhybrid.HybridKMeans(10, epsilon=7.0, "
                                               f"n_iter=3, strategy={strategy!r}, bounds=(0, 1), "
                                               f"init=init).fit(X, {metadata})")
            rows.append((f"HybridKMeans {strategy}, 1,000,000 x 10, k=10: peak memory",
                         np.nan, np.nan, np.nan, "", memory, "<= 1.5x"))

        dask_times = dask_parquet_times()
        if dask_times is not None:
            row("HybridMean from 10 Parquet files of 1e6 rows on Dask", dask_times, 0, 1,
                "Dask's sum of the same columns", "<= 1.15x")

    first_sizes = [size for size in (1_000, 100_000, 1_000_000, 10_000_000) if size <= n_users]
    first = {(n, cold): first_fit_seconds(n, cold) for n in first_sizes
             for cold in (True, False)}
    load_after = os.getloadavg()
    print(f"{n_users:,} users (K-means: at most 1,000,000 points); {ROUNDS} interleaved "
          f"rounds after a warm-up; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after\n")
    print("| case | time (min) | ratio of minima | median ratio | against | peak memory / "
          "input | goal |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for case, seconds, low, median, against, memory, goal in rows:
        memory_text = "" if memory is None else f"{memory:.2f}x"
        timing = "" if np.isnan(seconds) else f"{seconds * 1e3:.1f} ms"
        ratios = ("", "") if np.isnan(low) else (f"{low:.2f}x", f"{median:.2f}x")
        print(f"| {case} | {timing} | {ratios[0]} | {ratios[1]} | {against} | {memory_text} "
              f"| {goal} |")
    print(f"\nK-means: the time per iteration's spread over the {KMEANS_ROUNDS} rounds, "
          "(slowest - quickest) / quickest:\n")
    print("| case | HybridKMeans | sklearn KMeans |")
    print("| --- | --- | --- |")
    for case, ours, theirs in spreads:
        print(f"| {case} | {ours:.0%} | {theirs:.0%} |")
    print("\nFirst fit of HybridMeanEstimator('tcm_only') in a fresh process (goal < 0.2 s):\n")
    print("| n | numba cache cold | numba cache warm |")
    print("| --- | --- | --- |")
    for n in first_sizes:
        print(f"| {n:,} | {first[n, True]:.3f} s | {first[n, False]:.3f} s |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
