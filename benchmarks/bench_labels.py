"""A default fit with string trust labels against the same fit with a boolean mask.

Run by hand: ``python benchmarks/bench_labels.py [n_users]`` (default 1 million). Every
user is tcm; ``HybridMeanEstimator(epsilon=1.0, bounds=(0, 1)).fit(X, trust_group=g)``
with ``g`` the boolean mask, then the README's ``np.where(mask, "tcm", "lm")`` (a
``<U3`` array), a pandas ``str`` column, an object column of one ``str`` per row
(``.astype(object)``) and one sharing two objects (as CSV readers give), a
``category`` column, and the check of the labels alone
(``skhybrid.utils.check_trust_group``). Each call runs once untimed, then ``ROUNDS``
rounds in turn; a row is the ratio of the minima to the boolean fit's and the median
of the per-round ratios (goal for the ``<U3`` labels: at most 3x).
"""

import os
import sys
import warnings

import numpy as np
import pandas as pd

from run import interleaved  # benchmarks/ is on the path

from skhybrid import HybridMeanEstimator
from skhybrid.utils import check_trust_group

ROUNDS = 15


def main(n_users=1_000_000):
    warnings.simplefilter("ignore")  # no ledger: the unaccounted-release warning
    X = np.random.default_rng(0).uniform(0, 1, size=(n_users, 1))
    mask = np.ones(n_users, dtype=bool)
    strings = np.where(mask, "tcm", "lm")
    labels = {
        "boolean mask": mask,
        "np.where(mask, 'tcm', 'lm')": strings,
        "pandas str": pd.Series(strings, dtype="str"),
        "object, a str per row": strings.astype(object),
        "object, shared str": np.array(["lm", "tcm"], dtype=object)[mask.view(np.int8)],
        "category": pd.Series(strings, dtype="category"),
    }
    calls = [lambda g=g: HybridMeanEstimator(epsilon=1.0, bounds=(0, 1)).fit(X, trust_group=g)
             for g in labels.values()]
    calls += [lambda g=g: check_trust_group(g, n_users) for g in labels.values()]
    print(f"{n_users:,} users, all tcm; load average before {os.getloadavg()[0]:.2f}")
    times = interleaved(calls, ROUNDS)
    print(f"{'trust_group':<30}{'fit ms':>9}{'ratio':>8}{'median':>8}{'labels ms':>11}")
    for index, name in enumerate(labels):
        check = times[:, len(labels) + index].min()
        print(f"{name:<30}{times[:, index].min() * 1e3:>9.2f}"
              f"{times[:, index].min() / times[:, 0].min():>7.2f}x"
              f"{np.median(times[:, index] / times[:, 0]):>7.2f}x{check * 1e3:>11.2f}")
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:]))
