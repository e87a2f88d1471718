"""The per-level mean estimators' defaults against their best strategy in hindsight.

Issue 50's Done-when 2 for ADPMEstimator and MixedMeanEstimator (the hybrid mean's is
in skhybrid/model_selection/tests/test_variance_ranking_slow.py): on the shapes of the
choosing guide (the bundled salaries, uniform, lognormal, exponential) and three
privacy mixes, each default (``variance="private"``) is within 1.2x of the best of its
strategies, and ADPM's strategies' ``expected_mse_`` ranks them as their real RMSE
does. Each run draws every user's privacy level anew from the mix, and new noise; the
RMSE is over the runs. benchmarks/bench_mean_variance_defaults.py prints the table.

Why 200 runs, paired: with 70% of users at epsilon 0.1 (and with half at 0.5, half at
2), adpm, uni and ldpe are within 0.3-2% of each other in RMSE. Their figures were
checked against the Monte Carlo error (mean ``expected_mse_`` against the mean squared
error): over 400 runs on uniform and lognormal data with the wages mix, adpm's, uni's,
propdpm's and ldpe's are within 0.3-0.9 standard errors of it. Over this test's first
200 runs every figure of adpm and uni is 1.32-1.34 times the error in every cell alike:
the strategies of a run draw from the same seed, so their standardized noise is the
same draw, and these 200 draws are small ones. The figures are right and the
strategies tie: at 40 runs (11% standard error each) their order was the runs' noise
(Spearman 0.6-0.7). At 200 runs on the same epsilon draw and the same noise stream per
run, the order the test compares is the measured one. Stretching's figure was biased
(its bias at the worst case, the mean at a bound: 1e5 times its error on uniform data)
and is now read from its release (``ADPMEstimator._stretching_offsets``); where the
mean is within its noise of the centre (uniform data) it is still 1.3-2.7 times high.
"""

import warnings

import numpy as np
import pytest
from scipy.stats import spearmanr

from skhybrid import ADPMEstimator, MixedMeanEstimator
from skhybrid.datasets import load_salaries

N_RUNS = 200
N = 50_000
STRATEGIES = ["adpm", "uni", "propdpm", "ldpe", "stretching"]
MIXES = {
    "wages": ((0.1, 1.0, 5.0), (0.70, 0.25, 0.05)),
    "two": ((0.5, 2.0), (0.5, 0.5)),
    "few strict": ((0.05, 1.0), (0.1, 0.9)),
}


def _shape(name):
    rng = np.random.default_rng(7)
    if name == "salaries":
        salaries = load_salaries()
        return salaries.data, salaries.bounds
    if name == "uniform":
        return rng.uniform(size=(N, 1)), (0.0, 1.0)
    if name == "lognormal":
        return np.clip(rng.lognormal(0, 1, (N, 1)), 0, 20), (0.0, 20.0)
    return np.clip(rng.exponential(1.0, (N, 1)), 0, 10), (0.0, 10.0)


def _measure(named, X, mix):
    truth = float(X.mean())
    squared = {name: [] for name in named}
    figures = {name: [] for name in named}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for run in range(N_RUNS):
            # Seeds apart from the data's (seed 7): the same stream would tie the levels
            # to the values.
            epsilon = np.random.default_rng(10_000 + run).choice(mix[0], p=mix[1],
                                                                 size=X.shape[0])
            for name, estimator in named.items():
                fitted = estimator.set_params(random_state=run).fit(X, epsilon=epsilon)
                squared[name].append((fitted.mean_[0] - truth) ** 2)
                figures[name].append(fitted.expected_mse_[0])
    rmse = {name: float(np.sqrt(np.mean(values))) for name, values in squared.items()}
    expected = {name: float(np.mean(values)) for name, values in figures.items()}
    return rmse, expected


CELLS = [(shape, mix) for shape in ("salaries", "uniform", "lognormal", "exponential")
         for mix in MIXES]


@pytest.mark.slow
@pytest.mark.parametrize("shape, mix", CELLS)
def test_adpm_default_is_within_1_2_and_expected_mse_ranks_the_strategies(shape, mix):
    X, bounds = _shape(shape)
    named = {strategy: ADPMEstimator(bounds=bounds, strategy=strategy)
             for strategy in STRATEGIES}
    named["variance=None"] = ADPMEstimator(bounds=bounds, variance=None)
    rmse, expected = _measure(named, X, MIXES[mix])
    assert rmse["adpm"] <= 1.2 * min(rmse.values()), rmse
    ranks = spearmanr([expected[s] for s in STRATEGIES], [rmse[s] for s in STRATEGIES])
    assert ranks.statistic >= 0.8 - 1e-9, (expected, rmse)  # 0.8 computes as 0.7999...


@pytest.mark.slow
@pytest.mark.parametrize("shape, mix", CELLS)
def test_mixed_mean_default_is_within_1_2_of_its_best_variance(shape, mix):
    # MixedMeanEstimator has one weighting; its choices are the variance it weights at.
    X, bounds = _shape(shape)
    named = {"default": MixedMeanEstimator(bounds=bounds),
             "variance=None": MixedMeanEstimator(bounds=bounds, variance=None)}
    rmse, _ = _measure(named, X, MIXES[mix])
    assert rmse["default"] <= 1.2 * min(rmse.values()), rmse
