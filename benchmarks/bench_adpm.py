"""Benchmark of the ADPM weight solvers (exact KKT solver against cvxpy).

Run with ``python benchmarks/bench_adpm.py``. Prints one table:

- exact vs cvxpy on 20,000 users with distinct epsilons (speed ratio, objective gap);
- exact on 1,000,000 users with distinct epsilons against ``np.sort`` of the same array;
- cvxpy on 1,000,000 users with 100 distinct epsilon levels (one variable per level).

Epsilons are log-uniform on [e^-4, e^2], Table II's high-variance draw of Chaudhuri and
Courtade. Times are the best of several repeats, after a warm-up solve (cvxpy's import
and first compilation are not counted). A weight difference well above the objective
gap comes from a user whose epsilon lies within that relative distance of the
saturation threshold, where the optimum is nearly degenerate for an interior-point
solver.
"""

import time

import numpy as np

from skhybrid.theory._adpm import adpm_weights


def best_times(functions, repeats):
    """Smallest wall-clock time of each function over `repeats` rounds, and its result.

    The functions are called in turn within each round, so a busy machine slows them
    alike and their ratio stays meaningful.
    """
    times = [[] for _ in functions]
    results = [None] * len(functions)
    for _ in range(repeats):
        for index, function in enumerate(functions):
            start = time.perf_counter()
            results[index] = function()
            times[index].append(time.perf_counter() - start)
    return [min(each) for each in times], results


def compare(exact, numeric):
    """Relative objective gap and largest relative weight difference of two solutions."""
    gap = abs(numeric.objective - exact.objective) / exact.objective
    weights = np.max(np.abs(numeric.weights - exact.weights) / exact.weights)
    return gap, weights


def main():
    rng = np.random.default_rng(0)
    distinct_20k = np.exp(rng.uniform(-4, 2, 20_000))
    distinct_1m = np.exp(rng.uniform(-4, 2, 1_000_000))
    levels = np.exp(rng.uniform(-4, 2, 100))
    levels_1m = levels[rng.integers(0, levels.size, 1_000_000)]

    # The exact solver first: cvxpy's solvers can leave worker threads that slow what follows.
    (exact_20k_time,), (exact_20k,) = best_times(
        [lambda: adpm_weights(distinct_20k, solver="exact")], repeats=300
    )
    (sort_time, exact_1m_time), _ = best_times(
        [lambda: np.sort(distinct_1m), lambda: adpm_weights(distinct_1m, solver="exact")],
        repeats=20,
    )
    (exact_levels_time,), (exact_levels,) = best_times(
        [lambda: adpm_weights(levels_1m, solver="exact")], repeats=20
    )

    adpm_weights(distinct_20k[:50], solver="cvxpy")  # warm-up: import and first compilation
    (cvxpy_20k_time,), (cvxpy_20k,) = best_times(
        [lambda: adpm_weights(distinct_20k, solver="cvxpy")], repeats=3
    )
    (cvxpy_levels_time,), (cvxpy_levels,) = best_times(
        [lambda: adpm_weights(levels_1m, solver="cvxpy")], repeats=3
    )

    gap_20k, weights_20k = compare(exact_20k, cvxpy_20k)
    gap_levels, weights_levels = compare(exact_levels, cvxpy_levels)
    rows = [
        ("exact, 20k distinct", exact_20k_time, "", ""),
        (
            "cvxpy, 20k distinct",
            cvxpy_20k_time,
            f"{cvxpy_20k_time / exact_20k_time:.0f}x exact",
            f"objective gap {gap_20k:.1e}, weights {weights_20k:.1e}",
        ),
        ("np.sort, 1M distinct", sort_time, "", ""),
        ("exact, 1M distinct", exact_1m_time, f"{exact_1m_time / sort_time:.2f}x np.sort", ""),
        ("exact, 1M users, 100 levels", exact_levels_time, "", ""),
        (
            "cvxpy, 1M users, 100 levels",
            cvxpy_levels_time,
            f"{cvxpy_levels_time / exact_levels_time:.0f}x exact",
            f"objective gap {gap_levels:.1e}, weights {weights_levels:.1e}",
        ),
    ]
    print(f"{'case':30s} {'time':>10s}  {'ratio':18s} accuracy (cvxpy vs exact)")
    for case, seconds, ratio, accuracy in rows:
        print(f"{case:30s} {seconds * 1e3:8.1f}ms  {ratio:18s} {accuracy}")


if __name__ == "__main__":
    main()
