"""Benchmark: the CPU cost of a fresh process's first fits, one of each public estimator.

Run by hand: ``python benchmarks/bench_first_fit.py [runs]`` (default 3). Each run starts
a new Python process that imports skhybrid and makes its data (not timed), then fits each
public estimator once on 300,000 users (5% tcm, README's string labels; per-user epsilons
in 3 levels for the per-user-epsilon estimators; K-means with 3 clusters on 2 features;
BLENDER on integer (query, url) records) and prints each fit's CPU seconds
(``time.process_time``: all threads of the process, import excluded). Nothing is compiled
at run time (the kernels are Cython, compiled at install), so there is no cache to empty:
the first run on a fresh install is the same as any other. The goal (issue 49): at most
6 s in all on a fresh install, at most 1 s with warm caches.
"""

import subprocess
import sys

SCRIPT = r"""
import time, warnings
import numpy as np
import skhybrid
from skhybrid import (ADPMEstimator, BlenderHeavyHitters, HybridKMeans, HybridMeanEstimator,
                      MixedMeanEstimator, MixedQuantileEstimator, PDPQuantileEstimator,
                      PDPSampleEstimator)
from skhybrid.datasets import make_search_logs

warnings.simplefilter("ignore")
n = 300_000
rng = np.random.default_rng(0)
X = rng.normal(50.0, 10.0, size=(n, 1))
X2 = rng.normal(50.0, 10.0, size=(n, 2))
labels = np.where(rng.random(n) < 0.05, "tcm", "lm")
levels = rng.choice([0.5, 1.0, 2.0], size=n)
records = make_search_logs(n, random_state=0)
bounds = (0.0, 100.0)
fits = [
    ("HybridMeanEstimator", lambda: HybridMeanEstimator(bounds=bounds, random_state=0)
        .fit(X, trust_group=labels)),
    ("ADPMEstimator", lambda: ADPMEstimator(bounds=bounds, random_state=0)
        .fit(X, epsilon=levels)),
    ("PDPSampleEstimator", lambda: PDPSampleEstimator(bounds=bounds, random_state=0)
        .fit(X, epsilon=levels)),
    ("PDPQuantileEstimator", lambda: PDPQuantileEstimator(bounds=bounds, random_state=0)
        .fit(X, epsilon=levels)),
    ("MixedMeanEstimator", lambda: MixedMeanEstimator(bounds=bounds, random_state=0)
        .fit(X, epsilon=levels)),
    ("MixedQuantileEstimator", lambda: MixedQuantileEstimator(bounds=bounds, random_state=0)
        .fit(X, epsilon=levels)),
    ("HybridKMeans", lambda: HybridKMeans(3, bounds=bounds, random_state=0)
        .fit(X2, trust_group=labels)),
    ("BlenderHeavyHitters", lambda: BlenderHeavyHitters(random_state=0)
        .fit(records, trust_group=labels)),
]
total = 0.0
for name, fit in fits:
    start = time.process_time()
    fit()
    seconds = time.process_time() - start
    total += seconds
    print(f"{name} {seconds:.3f}")
print(f"total {total:.3f}")
"""


def main(runs=3):
    results = []
    for _ in range(runs):
        output = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True,
                                text=True, check=True).stdout
        results.append(dict(line.split() for line in output.splitlines()))
    names = list(results[0])
    print(f"CPU seconds of a fresh process's first fits, 300,000 users, {runs} runs "
          "(min / median / max):")
    for name in names:
        values = sorted(float(result[name]) for result in results)
        print(f"  {name:<24}{values[0]:7.3f} {values[len(values) // 2]:7.3f} "
              f"{values[-1]:7.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
