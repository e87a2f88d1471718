"""Fits with a privacy level per user against a hash-grouping floor.

Run by hand: ``python benchmarks/bench_levels.py [n_users]`` (default 1 million). For
2 to 1e5 distinct levels, ``ADPMEstimator``, ``PDPSampleEstimator`` and
``MixedMeanEstimator`` (``bounds=(0, 1)``, seeded) fit ``X`` of shape (n_users, 1) with
``epsilon=levels``, interleaved with the floor: ``pandas.factorize`` of the levels plus
one ``np.bincount`` of the clipped values and one of the counts, what any fit with many
levels must do. Each call runs once untimed, then ``ROUNDS`` rounds in turn; a row is
the ratio of the minima and the median of the per-round ratios (goal: at most 3x).
"""

import os
import sys
import warnings

import numpy as np
import pandas as pd

from run import interleaved  # benchmarks/ is on the path

from skhybrid import ADPMEstimator, MixedMeanEstimator, PDPSampleEstimator

ROUNDS = 7


def hash_floor(X, levels):
    codes, uniques = pd.factorize(levels)
    sums = np.bincount(codes, weights=np.clip(X[:, 0], 0.0, 1.0), minlength=uniques.size)
    return sums, np.bincount(codes, minlength=uniques.size)


def main(n_users=1_000_000):
    warnings.simplefilter("ignore")  # no ledger: the unaccounted-release warning
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(n_users, 1))
    estimators = [ADPMEstimator, PDPSampleEstimator, MixedMeanEstimator]
    print(f"{n_users:,} users; load average before {os.getloadavg()[0]:.2f}")
    print(f"{'case':<32}{'floor ms':>10}{'fit ms':>10}{'min ratio':>11}{'median':>9}")
    for n_levels in (2, 100, 10_000, 100_000):
        levels = np.round(rng.uniform(0.1, 10.0, n_levels), 6)[
            rng.integers(0, n_levels, n_users)]
        times = interleaved([lambda: hash_floor(X, levels)] + [
            lambda estimator=estimator: estimator(bounds=(0, 1), random_state=0).fit(
                X, epsilon=levels)
            for estimator in estimators
        ], ROUNDS)
        for index, estimator in enumerate(estimators, start=1):
            name = estimator.__name__.replace("Estimator", "")
            print(f"{name + f', {np.unique(levels).size:,} levels':<32}"
                  f"{times[:, 0].min() * 1e3:>10.1f}{times[:, index].min() * 1e3:>10.1f}"
                  f"{times[:, index].min() / times[:, 0].min():>10.2f}x"
                  f"{np.median(times[:, index] / times[:, 0]):>8.2f}x")
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:]))
