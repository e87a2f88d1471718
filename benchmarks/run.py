"""The performance table: every estimator against its floor, in one run.

Run by hand: ``python benchmarks/run.py [n_users]`` (default 10 million). For each case
it times the estimator and its *floor* (the unavoidable numpy work of the same
computation: clip plus one grouped reduction, and for the Sample mechanism one coin
per user) interleaved, minimum of ``ROUNDS`` rounds, and measures the peak extra memory
of a fit in a fresh subprocess (tracemalloc, which sees numpy's allocations), as a
multiple of the input's size. It prints a Markdown table; the goals of issue 15 are in
its last column. scikit-learn's KMeans (lloyd, same initial centres) is the baseline of
HybridKMeans, per iteration; Dask's own ``sum`` of the same Parquet columns is the
baseline of a Dask fit (written once to the temporary directory; skipped without Dask).
"""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans

from bench_kmeans import best_times  # benchmarks/ is on the path when run as a script
from skhybrid import (
    ADPMEstimator,
    HybridKMeans,
    HybridMeanEstimator,
    MixedMeanEstimator,
    PDPSampleEstimator,
)

ROUNDS = 3


def peak_memory(setup, statement):
    """Peak memory allocated by ``statement`` after ``setup``, over the input's size.

    The statement runs once untraced first: loading the compiled kernels (numba's
    one-time work per process) is not the fit's memory.
    """
    script = textwrap.dedent(f"""
        import tracemalloc, warnings
        import numpy as np
        warnings.simplefilter("ignore")
        {setup}
        {statement}
        tracemalloc.start()
        {statement}
        print(tracemalloc.get_traced_memory()[1] / X.nbytes)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    return float(out.stdout.strip()) if out.returncode == 0 else float("nan")


def grouping_floor(X, labels, n_groups):
    return np.bincount(labels, weights=np.clip(X[:, 0], 0.0, 1.0), minlength=n_groups)


def dask_parquet_times(n_files=10):
    """A Dask fit from Parquet files against Dask's own sum of the same columns.

    Both read the files (``value``, ``tcm``) on Dask's threaded scheduler with one thread
    per core; skhybrid's fit reduces each file to the groups' counts and exact sums.
    None when Dask or pyarrow is not installed.
    """
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        return None
    import tempfile
    from pathlib import Path

    from bench_dask_mean import BOUNDS, write_parquet

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
        fit_seconds, sum_seconds = best_times([fit, dask_sum], repeats=ROUNDS + 2)
    return fit_seconds, sum_seconds


def main(n_users=10_000_000):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(n_users, 1))
    is_tcm = rng.random(n_users) < 0.05
    as_strings = np.where(is_tcm, "tcm", "lm").astype(object)  # one str object per row
    # Rows sharing two str objects, as pandas' CSV reader and Python literals give them.
    as_shared = np.array(["lm", "tcm"], dtype=object)[is_tcm.view(np.int8)]
    two_levels = np.where(rng.random(n_users) < 0.5, 0.5, 2.0)
    many_levels = np.round(rng.uniform(0.1, 10.0, n_users), 4)  # ~1e5 distinct levels
    rows = []

    def row(case, seconds, baseline, baseline_name, goal, memory=None):
        rows.append((case, seconds, seconds / baseline, baseline_name, memory, goal))

    setup = (f"rng = np.random.default_rng(0); X = rng.uniform(0, 1, size=({n_users}, 1)); "
             f"is_tcm = rng.random({n_users}) < 0.05; "
             f"two = np.where(rng.random({n_users}) < 0.5, 0.5, 2.0); import skhybrid")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        floor_all, tcm_only, kvh_bool, kvh_str, kvh_shared = best_times([
            lambda: np.clip(X, 0.0, 1.0).sum(axis=0),
            lambda: HybridMeanEstimator("tcm_only", bounds=(0, 1), random_state=0).fit(X),
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=is_tcm),
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(
                X, trust_group=as_strings),
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(
                X, trust_group=as_shared),
        ], repeats=ROUNDS)
        row("HybridMean all tcm, tcm_only", tcm_only, floor_all, "floor", "<= 1.3x",
            peak_memory(setup, "skhybrid.HybridMeanEstimator('tcm_only', bounds=(0, 1))"
                               ".fit(X)"))
        row("HybridMean, object trust_group (one str per row)", kvh_str, kvh_bool, "bool fit",
            "<= 1.2x")
        row("HybridMean, object trust_group (shared strs, as read_csv)", kvh_shared, kvh_bool,
            "bool fit", "<= 1.2x")
        as_str = pd.Series(as_strings).astype("str")
        as_category = as_str.astype("category")
        kvh_bool, kvh_pd_str, kvh_category = best_times([
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=is_tcm),
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(
                X, trust_group=as_str),
            lambda: HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(
                X, trust_group=as_category),
        ], repeats=ROUNDS)
        row("HybridMean, pandas str trust_group", kvh_pd_str, kvh_bool, "bool fit", "<= 1.2x")
        row("HybridMean, pandas category trust_group", kvh_category, kvh_bool, "bool fit",
            "<= 1.2x")

        floor_groups, secure = best_times([
            lambda: grouping_floor(X, is_tcm.view(np.int8), 2),
            lambda: HybridMeanEstimator(bounds=(0, 1)).fit(X, trust_group=is_tcm),
        ], repeats=ROUNDS)
        row("HybridMean default (secure noise)", secure, floor_groups, "floor", "<= 2.5x",
            peak_memory(setup, "skhybrid.HybridMeanEstimator(bounds=(0, 1))"
                               ".fit(X, trust_group=is_tcm)"))

        floor_unique, adpm = best_times([
            lambda: grouping_floor(X, np.unique(two_levels, return_inverse=True)[1], 2),
            lambda: ADPMEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=two_levels),
        ], repeats=ROUNDS)
        row("ADPM, 2 levels", adpm, floor_unique, "grouping floor", "<= 1.5x",
            peak_memory(setup, "skhybrid.ADPMEstimator(bounds=(0, 1)).fit(X, epsilon=two)"))

        def pdp_floor():
            coins = rng.random(n_users) < 0.5
            return np.clip(X[:, 0], 0.0, 1.0)[coins].sum()

        floor_pdp, pdp = best_times([
            pdp_floor,
            lambda: PDPSampleEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=two_levels),
        ], repeats=ROUNDS)
        row("PDPSample, 2 levels", pdp, floor_pdp, "floor", "<= 2x",
            peak_memory(setup, "skhybrid.PDPSampleEstimator(bounds=(0, 1))"
                               ".fit(X, epsilon=two)"))

        n_distinct = np.unique(many_levels).size
        floor_many, mixed = best_times([
            lambda: grouping_floor(X, np.unique(many_levels, return_inverse=True)[1], n_distinct),
            lambda: MixedMeanEstimator(bounds=(0, 1), random_state=0).fit(
                X, epsilon=many_levels),
        ], repeats=1)
        row(f"MixedMean, {n_distinct:,} levels", mixed, floor_many, "grouping floor",
            "<= 3x", peak_memory(setup, "skhybrid.MixedMeanEstimator(bounds=(0, 1))"
                                        ".fit(X, epsilon=two)"))

        kmeans_n = min(n_users, 1_000_000)
        for n_features, n_clusters in [(2, 3), (10, 3), (10, 10)]:
            points = rng.uniform(0, 1, size=(kmeans_n, n_features))
            init = rng.uniform(0, 1, size=(n_clusters, n_features))
            lloyd, private = best_times([
                lambda: KMeans(n_clusters, init=init, n_init=1, max_iter=5, tol=0,
                               algorithm="lloyd").fit(points),
                lambda: HybridKMeans(n_clusters, epsilon=7.0, n_iter=5, strategy="tcm_only",
                                     bounds=(0, 1), init=init, random_state=0).fit(points),
            ], repeats=ROUNDS)
            row(f"HybridKMeans tcm_only {kmeans_n:,} x {n_features}, k={n_clusters}",
                private, lloyd, "sklearn KMeans", "<= 1.0x")

        dask_row = dask_parquet_times()
        if dask_row is not None:
            row("HybridMean from 10 Parquet files of 1e6 rows on Dask", dask_row[0],
                dask_row[1], "Dask's sum of the same columns", "<= 1.15x")

    print(f"{n_users:,} users (K-means: at most 1,000,000 points), minimum of {ROUNDS} "
          "interleaved rounds\n")
    print("| case | time | ratio | against | peak memory / input | goal |")
    print("| --- | --- | --- | --- | --- | --- |")
    for case, seconds, ratio, against, memory, goal in rows:
        memory_text = "" if memory is None else f"{memory:.1f}x"
        print(f"| {case} | {seconds:.3f} s | {ratio:.2f}x | {against} | {memory_text} | {goal} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
