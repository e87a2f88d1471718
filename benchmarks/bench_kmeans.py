"""Benchmark: HybridKMeans against scikit-learn's KMeans from the same initial centres.

Run by hand: ``python benchmarks/bench_kmeans.py``. Prints the best time per fit of
scikit-learn's ``KMeans(n_init=1, max_iter=tau, tol=0, algorithm="lloyd")`` and of each
HybridKMeans strategy (5 iterations, 1% tcm users, epsilon = 7), and their ratios.
Goal: <= 3x scikit-learn.

Cases: the paper's Figure 6 data (160,000 x 2, 4 clusters) and 1,000,000 x 10 with 8
clusters. ``tol=0`` makes scikit-learn run all ``tau`` iterations, as HybridKMeans
always does. HybridKMeans does more work per fit: it validates the trust groups, draws
floating-point-safe discrete Laplace noise for every lm user's report (the largest
single cost) and a randomized response for every lm user in every iteration.
"""

import time

import numpy as np
from sklearn.cluster import KMeans

from skhybrid.cluster import HybridKMeans

N_ITER = 5
REPEATS = 5


def best_times(functions, repeats=REPEATS):
    """Smallest wall-clock time of each function over `repeats` rounds.

    The functions run in turn within each round, so a busy machine slows them alike;
    each after 20 ms of quiet (scikit-learn's OpenMP threads spin for a few milliseconds
    after a fit, and a call timed right after one competes with them for the cores).
    """
    times = [[] for _ in functions]
    for _ in range(repeats):
        for index, function in enumerate(functions):
            time.sleep(0.02)
            start = time.perf_counter()
            function()
            times[index].append(time.perf_counter() - start)
    return [min(each) for each in times]


def make_case(n_samples, n_features, n_clusters, seed=0):
    """Spherical clusters in the unit cube, 1% tcm users, and data-independent initial centres."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(0.2, 0.8, size=(n_clusters, n_features))
    labels = rng.integers(0, n_clusters, n_samples)
    X = means[labels] + rng.normal(0, 0.028, (n_samples, n_features))
    trust = np.where(rng.random(n_samples) < 0.01, "tcm", "lm")
    init = rng.uniform(0.0, 1.0, size=(n_clusters, n_features))
    return X, trust, init


def main():
    cases = [(160_000, 2, 4), (1_000_000, 10, 8)]
    strategies = ("hybrid", "tcm_only", "full_lm")
    print(f"{'case':22s} {'sklearn':>9s} " + " ".join(f"{name:>17s}" for name in strategies))
    for n_samples, n_features, n_clusters in cases:
        X, trust, init = make_case(n_samples, n_features, n_clusters)
        lloyd = KMeans(n_clusters, init=init, n_init=1, max_iter=N_ITER, tol=0, algorithm="lloyd")
        private = {
            name: HybridKMeans(n_clusters, epsilon=7.0, n_iter=N_ITER, strategy=name,
                               bounds=(0.0, 1.0), init=init, random_state=0)
            for name in strategies
        }
        functions = [lambda: lloyd.fit(X)] + [
            lambda est=est: est.fit(X, trust_group=trust) for est in private.values()
        ]
        functions[0]()  # warm-up: thread pools and first-call costs
        sklearn_time, *times = best_times(functions)
        cells = " ".join(f"{t * 1e3:8.0f}ms ({t / sklearn_time:4.2f}x)" for t in times)
        case = f"{n_samples:,} x {n_features}, K={n_clusters}"
        print(f"{case:22s} {sklearn_time * 1e3:7.0f}ms {cells}")


if __name__ == "__main__":
    main()
