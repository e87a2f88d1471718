"""Measurement: the per-level mean estimators' defaults against their best strategy.

Run by hand: ``python benchmarks/bench_mean_variance_defaults.py [n_trials]`` (default
40; about a minute). Prints the table of :ref:`per-level-defaults`
(docs/user_guide/choosing.rst): for each data shape and privacy mix, every
:class:`~skhybrid.ADPMEstimator` and :class:`~skhybrid.MixedMeanEstimator` candidate's
empirical RMSE against the true mean of the data, divided by the best of the same
estimator's candidates, and the Spearman correlation between ADPM's strategies' mean
``expected_mse_`` and their real RMSE. Then the table of
:ref:`sample-mechanism-default` (``pdp_main``): :class:`~skhybrid.PDPSampleEstimator`'s
thresholds at each variance, about another minute.

How it is measured: fixed data (the bundled salaries, or 252,540 seeded draws of the
other shapes, clipped to the bounds); every user trusts the curator (the baselines
need it); each trial draws each user's privacy level anew from the mix and new noise
(seeded from the trial's number); the RMSE is over the trials. Fits use the library's
secure (discrete) noise.
"""

import sys
import time
import warnings

import numpy as np
from scipy.stats import spearmanr

from bench_default_strategy import distributions  # benchmarks/ is on the path

from skhybrid import ADPMEstimator, MixedMeanEstimator

#: name -> (levels, their shares): the issue's wage survey, a milder mix, a few strict.
MIXES = {
    "70% at 0.1, 25% at 1, 5% at 5": ((0.1, 1.0, 5.0), (0.70, 0.25, 0.05)),
    "50% at 0.5, 50% at 2": ((0.5, 2.0), (0.5, 0.5)),
    "10% at 0.05, 90% at 1": ((0.05, 1.0), (0.1, 0.9)),
}


def shapes():
    """Name -> (X, bounds): the salaries and three other shapes, the hybrid table's
    (bench_default_strategy.py) without its arcsine law."""
    return {name: data for name, data in distributions().items() if name != "beta(0.5, 0.5)"}


#: ADPM's strategies, each at its default (variance="private"): the ranking's candidates.
STRATEGIES = ("adpm", "uni", "propdpm", "ldpe", "stretching")


def candidates(bounds, variance):
    """ADPM's strategies at the default private variance, ADPM at the worst case and at
    the true variance (not available to a user), and MixedMeanEstimator likewise."""
    named = {strategy: ADPMEstimator(bounds=bounds, strategy=strategy)
             for strategy in STRATEGIES}
    named["adpm, variance=None"] = ADPMEstimator(bounds=bounds, variance=None)
    named["adpm, true variance"] = ADPMEstimator(bounds=bounds, variance=variance)
    named["mixed"] = MixedMeanEstimator(bounds=bounds)
    named["mixed, variance=None"] = MixedMeanEstimator(bounds=bounds, variance=None)
    named["mixed, true variance"] = MixedMeanEstimator(bounds=bounds, variance=variance)
    return named


def measure(X, bounds, mix, n_trials, named=None, level_seeds=0):
    """Each candidate's RMSE and mean expected_mse_ over the trials (ADPM's and the mixed
    mean's candidates unless ``named`` are given). The levels of trial k are drawn with
    seed ``level_seeds + k``, the noise with seed k."""
    levels, shares = mix
    truth = float(X.mean())
    if named is None:
        named = candidates(bounds, float(X.var()))
    squared = {name: [] for name in named}
    figures = {name: [] for name in named}
    for trial in range(n_trials):
        rng = np.random.default_rng(level_seeds + trial)
        epsilon = rng.choice(levels, p=shares, size=X.shape[0])
        for name, estimator in named.items():
            fitted = estimator.set_params(random_state=trial).fit(X, epsilon=epsilon)
            squared[name].append((fitted.mean_[0] - truth) ** 2)
            figures[name].append(fitted.expected_mse_[0])
    rmse = {name: float(np.sqrt(np.mean(values))) for name, values in squared.items()}
    expected = {name: float(np.mean(values)) for name, values in figures.items()}
    return rmse, expected


def main(n_trials=40):
    start = time.perf_counter()
    names = list(candidates((0.0, 1.0), 0.1))
    adpm = [name for name in names if not name.startswith("mixed")]
    mixed = [name for name in names if name.startswith("mixed")]
    print('"data", "privacy mix", ' + ", ".join(f'"{name}"' for name in names)
          + ', "Spearman (ADPM strategies)"')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape, (X, bounds) in shapes().items():
            for mix_name, mix in MIXES.items():
                rmse, expected = measure(X, bounds, mix, n_trials)
                # Each estimator's columns over its own best.
                ratios = {}
                for family in (adpm, mixed):
                    best = min(rmse[name] for name in family)
                    ratios.update({name: rmse[name] / best for name in family})
                ranks = spearmanr([expected[n] for n in STRATEGIES],
                                  [rmse[n] for n in STRATEGIES])
                print(f'"{shape}", "{mix_name}", '
                      + ", ".join(f'"{ratios[n]:.2f}"' for n in names)
                      + f', "{ranks.statistic:.2f}"', flush=True)
    print(f"# {n_trials} trials, {time.perf_counter() - start:.0f} s")




# -- PDPSampleEstimator: its thresholds at each variance -------------------------------------

#: The Sample mechanism's named thresholds; each is fit at every variance below.
THRESHOLDS = ("min", "mean", "max", "optimal")


def pdp_candidates(bounds, variance):
    """Every threshold at the private variance, the worst case and the true variance."""
    from skhybrid import PDPSampleEstimator

    return {f"{threshold}, {label}": PDPSampleEstimator(threshold=threshold, bounds=bounds,
                                                         variance=value)
            for label, value in (("private", "private"), ("None", None),
                                 ("true variance", variance))
            for threshold in THRESHOLDS}


def pdp_main(n_trials=40):
    """PDPSampleEstimator's table: RMSE over the best candidate a user can have (the true
    variance aside), and the Spearman correlation of each variance's thresholds' mean
    ``expected_mse_`` with their RMSE."""
    start = time.perf_counter()
    names = list(pdp_candidates((0.0, 1.0), 0.1))
    print('"data", "privacy mix", ' + ", ".join(f'"{name}"' for name in names)
          + ', "Spearman (private)", "Spearman (None)"')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape, (X, bounds) in shapes().items():
            for mix_name, mix in MIXES.items():
                named = pdp_candidates(bounds, float(X.var()))
                # The Sample mechanism's coins are uniforms from the fit's seed: drawn
                # from the levels' stream, they would keep users by their level's draw.
                rmse, expected = measure(X, bounds, mix, n_trials, named, level_seeds=10_000)
                best = min(rmse[n] for n in names if "true" not in n)
                ranks = [spearmanr([expected[f"{t}, {label}"] for t in THRESHOLDS],
                                   [rmse[f"{t}, {label}"] for t in THRESHOLDS]).statistic
                         for label in ("private", "None")]
                print(f'"{shape}", "{mix_name}", '
                      + ", ".join(f'"{rmse[n] / best:.2f}"' for n in names)
                      + "".join(f', "{r:.2f}"' for r in ranks), flush=True)
    print(f"# {n_trials} trials, {time.perf_counter() - start:.0f} s")



def mixed_quantile_main(n_trials=40):
    """MixedQuantileEstimator's median at the worst case (its default) and at the true
    data variance: RMSE against the data's median over the better of the two."""
    from skhybrid import MixedQuantileEstimator

    print('"data", "privacy mix", "variance=None (default)", "true variance"')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape, (X, bounds) in shapes().items():
            truth = float(np.median(X))
            for mix_name, (levels, shares) in MIXES.items():
                errors = {None: [], float(X.var()): []}
                for trial in range(n_trials):
                    epsilon = np.random.default_rng(10_000 + trial).choice(
                        levels, p=shares, size=X.shape[0])
                    for variance, squared in errors.items():
                        fitted = MixedQuantileEstimator(
                            bounds=bounds, variance=variance, random_state=trial,
                        ).fit(X, epsilon=epsilon)
                        squared.append((fitted.quantile_[0] - truth) ** 2)
                rmse = [np.sqrt(np.mean(squared)) for squared in errors.values()]
                print(f'"{shape}", "{mix_name}", '
                      + ", ".join(f'"{value / min(rmse):.2f}"' for value in rmse), flush=True)


if __name__ == "__main__":
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    main(trials)
    pdp_main(trials)
    mixed_quantile_main(trials)
