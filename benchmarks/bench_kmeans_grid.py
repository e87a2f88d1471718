"""HybridKMeans per iteration against scikit-learn's KMeans over issue 30's whole range.

``python benchmarks/bench_kmeans_grid.py``: 1e5 and 1e6 points, 2, 10 and 50 features,
3, 10 and 50 clusters, every point a tcm user (``tcm_only``) or 5% of them
(``hybrid``): 36 cases, each timed as ``run.py`` times its K-means rows (lloyd, the
same initial centres; each fit's iterations after its first, timed inside it; 7
interleaved rounds after a warm-up, each call after 20 ms of quiet; the compiled
kernels loaded). Prints each case's time per iteration, the ratio of the minima and
the median of the per-round ratios (goal: at most 1.0x), and the time per
iteration's spread over the rounds. About three minutes on the 2-core CI machine.
"""

import itertools
import os
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import (  # noqa: E402  (benchmarks/ is not a package)
    kmeans_iteration_times,
    load_kernels,
    per_iteration,
    spread,
)

SIZES = [100_000, 1_000_000]
FEATURES = [2, 10, 50]
CLUSTERS = [3, 10, 50]
SHARES = [1.0, 0.05]


def main():
    load_kernels()
    rng = np.random.default_rng(0)
    load_before = os.getloadavg()[0]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for share, n, n_features, n_clusters in itertools.product(SHARES, SIZES, FEATURES,
                                                                  CLUSTERS):
            times = kmeans_iteration_times(n, n_features, n_clusters, share, rng)
            seconds, low, median = per_iteration(times)
            ours, theirs = spread(times)
            rows.append((share, n, n_features, n_clusters, seconds, low, median, ours, theirs))
    print(f"HybridKMeans per iteration vs scikit-learn's KMeans (goal <= 1.0x); load "
          f"average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after\n")
    print("| strategy | n | features | k | ours per iteration | ratio of minima | median "
          "ratio | spread: ours, scikit-learn's |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for share, n, n_features, n_clusters, seconds, low, median, ours, theirs in rows:
        strategy = "tcm_only" if share == 1.0 else f"hybrid ({share:.0%} tcm)"
        print(f"| {strategy} | {n:,} | {n_features} | {n_clusters} | {seconds * 1e3:.2f} ms "
              f"| {low:.2f}x | {median:.2f}x | {ours:.0%}, {theirs:.0%} |")
    met = sum(row[5] <= 1.0 for row in rows)
    print(f"\n{met} of {len(rows)} cases at most 1.0x by minima")


if __name__ == "__main__":
    main()
