"""HybridKMeans in the data's own units against the same fit after BoundsScaler (issue 51).

``python benchmarks/bench_kmeans_units.py [--seeds 10]``

Not a timing: the quality table of "K-means in the data's own units" in
docs/user_guide/choosing.rst. 200,000 users in three groups of (salary in dollars, age
in years), 5% tcm (``survey`` of skhybrid/cluster/tests/test_kmeans_units.py), public
bounds ``([0, 18], [500_000, 80])``. The calls are exactly::

    HybridKMeans(3, epsilon=epsilon, bounds=DOLLARS_YEARS, strategy=strategy,
                 random_state=seed).fit(X, trust_group=trust)
    HybridKMeans(3, epsilon=epsilon, bounds=(0, 1), strategy=strategy,
                 random_state=seed).fit(BoundsScaler(DOLLARS_YEARS).fit_transform(X),
                                        trust_group=trust)

for seeds 0 to ``--seeds - 1``, at epsilon 1 and 1e6 (where the noise no longer
matters). Printed: the mean over seeds of the mean squared distance to the nearest
centre, both mapped to the unit box, and a single centre at the mean for reference.
"""

import argparse
import warnings

import numpy as np

from skhybrid.cluster import HybridKMeans
from skhybrid.cluster.tests.test_kmeans_units import DOLLARS_YEARS, survey, unit_box_msd
from skhybrid.preprocessing import BoundsScaler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    seeds = range(parser.parse_args().seeds)
    warnings.simplefilter("ignore")
    X, trust = survey()
    scaler = BoundsScaler(DOLLARS_YEARS).fit(X)
    unit = scaler.transform(X)
    print(f"single centre at the mean: {unit_box_msd(X, X.mean(axis=0)):.4f}")
    print(f"{'strategy':<10}{'epsilon':>9}{'raw units':>11}{'BoundsScaler':>14}")
    for strategy in ("hybrid", "tcm_only"):
        for epsilon in (1.0, 1e6):
            raw, scaled = [], []
            for seed in seeds:
                params = {"epsilon": epsilon, "strategy": strategy, "random_state": seed}
                fitted = HybridKMeans(3, bounds=DOLLARS_YEARS, **params).fit(
                    X, trust_group=trust)
                raw.append(unit_box_msd(X, fitted.cluster_centers_))
                fitted = HybridKMeans(3, bounds=(0, 1), **params).fit(unit, trust_group=trust)
                scaled.append(unit_box_msd(X, scaler.inverse_transform(fitted.cluster_centers_)))
            print(f"{strategy:<10}{epsilon:>9g}{np.mean(raw):>11.4f}{np.mean(scaled):>14.4f}")


if __name__ == "__main__":
    main()
