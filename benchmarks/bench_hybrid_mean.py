"""Benchmark: HybridMeanEstimator against plain numpy doing the same computation.

Run by hand: ``python benchmarks/bench_hybrid_mean.py [n_users]`` (default 10 million,
5% tcm). Prints the time of each and the ratio. Goals: <= 1.5x numpy for a fit that
simulates the lm users' local noise; <= 5x ``np.mean`` with ``local_reports=True``.

The numpy baseline clips, computes the two group means and adds continuous Laplace noise
(numpy's PCG64); skhybrid additionally validates the input and metadata, and draws
floating-point-safe discrete noise from the same seeded generator kind.
"""

import sys
import time

import numpy as np

from skhybrid import HybridMeanEstimator


def _best_of(function, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def plain_numpy(X, is_tcm, epsilon, rng):
    """Clip, group means, central Laplace noise on the tcm mean, local noise on lm values."""
    clipped = np.clip(X[:, 0], 0.0, 1.0)
    tcm = clipped[is_tcm]
    lm = clipped[~is_tcm]
    tcm_mean = tcm.mean() + rng.laplace(scale=1.0 / (tcm.size * epsilon))
    lm_mean = (lm + rng.laplace(scale=1.0 / epsilon, size=lm.size)).mean()
    c = tcm.size / X.shape[0]
    return c * tcm_mean + (1 - c) * lm_mean


def main(n_users=10_000_000):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(n_users, 1))
    is_tcm = rng.random(n_users) < 0.05
    trust_group = np.where(is_tcm, "tcm", "lm")

    numpy_time = _best_of(lambda: plain_numpy(X, is_tcm, 1.0, np.random.default_rng(1)))
    est = HybridMeanEstimator("kvh", bounds=(0.0, 1.0), random_state=1)
    fit_time = _best_of(lambda: est.fit(X, trust_group=trust_group))
    fit_bool_time = _best_of(lambda: est.fit(X, trust_group=is_tcm))
    secure = HybridMeanEstimator("kvh", bounds=(0.0, 1.0))
    secure_time = _best_of(lambda: secure.fit(X, trust_group=is_tcm))

    mean_time = _best_of(lambda: np.mean(X))
    reports = HybridMeanEstimator("kvh", bounds=(0.0, 1.0), local_reports=True, random_state=1)
    reports_time = _best_of(lambda: reports.fit(X, trust_group=is_tcm))

    print(f"{n_users:,} users, 5% tcm")
    print(f"plain numpy (clip, group means, Laplace noise): {numpy_time:8.3f} s")
    print(f"fit, string trust_group, seeded:                {fit_time:8.3f} s  "
          f"ratio {fit_time / numpy_time:5.2f}x")
    print(f"fit, boolean trust_group, seeded:               {fit_bool_time:8.3f} s  "
          f"ratio {fit_bool_time / numpy_time:5.2f}x")
    print(f"fit, boolean trust_group, secure randomness:    {secure_time:8.3f} s  "
          f"ratio {secure_time / numpy_time:5.2f}x")
    print(f"np.mean of the array:                           {mean_time:8.3f} s")
    print(f"fit with local_reports=True:                    {reports_time:8.3f} s  "
          f"ratio {reports_time / mean_time:5.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
