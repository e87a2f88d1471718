"""Measurement: HybridMeanEstimator's default against the best strategy in hindsight.

Run by hand: ``python benchmarks/bench_default_strategy.py [n_trials]`` (default 40).
Prints the table of :ref:`default-strategy` (docs/user_guide/choosing.rst): for each
distribution and tcm share, every candidate's empirical RMSE against the true mean of
the data, divided by the best candidate's, and which candidate
:func:`skhybrid.mean.rank_by_expected_mse` picks from a default fit's private variance.

How it is measured: epsilon 1 for every user; the data are fixed (the bundled
salaries, or 252,540 seeded draws of the other distributions, clipped to the bounds);
each trial draws a new tcm assignment (each user tcm with the given probability) and
new noise, seeded from the trial's number (:func:`skhybrid.model_selection.compare_estimators`);
the RMSE is over the trials. Fits use the library's secure (discrete) noise.
"""

import sys
import warnings

import numpy as np

from skhybrid import HybridMeanEstimator
from skhybrid.datasets import load_salaries
from skhybrid.mean import rank_by_expected_mse
from skhybrid.model_selection import compare_estimators

SHARES = (0.001, 0.005, 0.02, 0.05, 0.3, 0.5)
N_USERS = 252_540  # as many as the salaries


def distributions():
    """Name -> (X, bounds): the salaries, a uniform, two skewed and an arcsine law."""
    rng = np.random.default_rng(12345)
    salaries = load_salaries()
    return {
        "salaries": (salaries.data, salaries.bounds),
        "uniform(0, 1)": (rng.uniform(0, 1, (N_USERS, 1)), (0.0, 1.0)),
        "lognormal(0, 1) in [0, 20]": (np.clip(rng.lognormal(0, 1, (N_USERS, 1)), 0, 20),
                                       (0.0, 20.0)),
        "exponential(1) in [0, 10]": (np.clip(rng.exponential(1, (N_USERS, 1)), 0, 10),
                                      (0.0, 10.0)),
        "beta(0.5, 0.5)": (rng.beta(0.5, 0.5, (N_USERS, 1)), (0.0, 1.0)),
    }


def candidates(bounds, variance):
    """The strategies compared: the default, KVH at the worst case and at the true
    variance (not available to a user: the best weight in expectation), and the others."""
    return {
        "default (kvh, private variance)": HybridMeanEstimator(bounds=bounds),
        "kvh, variance=None": HybridMeanEstimator("kvh", bounds=bounds, variance=None),
        "kvh, true variance": HybridMeanEstimator("kvh", bounds=bounds, variance=variance),
        "pwh": HybridMeanEstimator("pwh", bounds=bounds, variance=None),
        "naive": HybridMeanEstimator("naive", bounds=bounds, variance=None),
        "tcm_only": HybridMeanEstimator("tcm_only", bounds=bounds, variance=None),
        "full_lm": HybridMeanEstimator("full_lm", bounds=bounds, variance=None),
    }


def measure(X, bounds, share, n_trials, seed=0):
    """Each candidate's empirical RMSE, and the candidate the ranking picks.

    The ranking sees the ``variance_`` of one default fit (seeded, private) on one tcm
    assignment, and ranks the candidates a user could configure (not "kvh, true
    variance").
    """
    truth = X.mean(axis=0)

    def make_data(rng):
        trust = np.where(rng.random(X.shape[0]) < share, "tcm", "lm")
        return X, {"trust_group": trust}, truth

    named = candidates(bounds, float(X.var()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compare_estimators(named, make_data=make_data, n_trials=n_trials,
                                    random_state=seed)
        trust = make_data(np.random.default_rng(seed + 1))[1]["trust_group"]
        pilot = HybridMeanEstimator(bounds=bounds, random_state=seed).fit(X, trust_group=trust)
        usable = {name: est for name, est in named.items() if name != "kvh, true variance"}
        chosen = rank_by_expected_mse(usable, variance=pilot.variance_, trust_group=trust)[0][0]
    rmse = dict(zip(result.table["estimator"], result.table["rmse"]))
    relative_se = dict(zip(result.table["estimator"],
                           result.table["rmse_se"] / result.table["rmse"]))
    return rmse, relative_se, chosen


def main(n_trials=40):
    names = list(candidates((0.0, 1.0), 0.1))
    print("| data | tcm share | " + " | ".join(names) + " | ranking picks |")
    print("|" + " --- |" * (len(names) + 3))
    standard_errors = []
    for name, (X, bounds) in distributions().items():
        for share in SHARES:
            rmse, relative_se, chosen = measure(X, bounds, share, n_trials)
            standard_errors.extend(relative_se.values())
            best = min(rmse.values())
            cells = [f"{rmse[n] / best:.2f}" for n in names]
            print(f"| {name} | {share:.1%} | " + " | ".join(cells)
                  + f" | {chosen} ({rmse[chosen] / best:.2f}) |", flush=True)
    print(f"\nEach RMSE's relative standard error: median {np.median(standard_errors):.1%}, "
          f"largest {np.max(standard_errors):.1%} ({n_trials} trials).")


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:]))
