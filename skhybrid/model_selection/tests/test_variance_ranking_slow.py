"""The search over the default HybridMeanEstimator's strategies on the bundled salaries.

50 seeded runs per tcm share, each with its own draw of who trusts the curator (the
expected errors are expectations over that draw and the noise). Each strategy is fit
once per run, alone, at the whole epsilon: its RMSE over the runs is its real error,
and the best of them the best in hindsight.
"""

import warnings

import numpy as np
import pytest
from scipy.stats import spearmanr

from skhybrid import HybridMeanEstimator
from skhybrid.accounting import PrivacyLedger
from skhybrid.datasets import load_salaries
from skhybrid.model_selection import PrivateGridSearchCV, search_cost

STRATEGIES = ["kvh", "pwh", "naive", "tcm_only", "full_lm", "lm_only"]
LOCAL_ONLY = {"full_lm", "lm_only"}
N_RUNS = 50


@pytest.mark.slow
@pytest.mark.parametrize("tcm_share", [0.005, 0.02, 0.10])
def test_the_search_picks_within_1_2_of_the_best_in_hindsight_for_one_fit(tcm_share):
    salaries = load_salaries()
    X, bounds = salaries.data, salaries.bounds
    n = X.shape[0]
    truth = X.mean()
    ids = np.arange(n)
    squared = {strategy: [] for strategy in STRATEGIES}
    search_squared, picks = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for run in range(N_RUNS):
            trust = np.where(np.random.default_rng(run).random(n) < tcm_share, "tcm", "lm")
            for strategy in STRATEGIES:
                fitted = HybridMeanEstimator(strategy, bounds=bounds, random_state=run).fit(
                    X, trust_group=trust)
                squared[strategy].append((fitted.mean_[0] - truth) ** 2)
            ledger = PrivacyLedger(default_budget=1.1) if run < 3 else None
            search = PrivateGridSearchCV(
                HybridMeanEstimator(bounds=bounds, ledger=ledger, random_state=run),
                {"strategy": STRATEGIES}, random_state=run)
            if ledger is not None:  # at most 1.1 times one fit's epsilon, per user
                cost = search_cost(search, X, trust_group=trust, user_id=ids)
                assert cost.max() <= 1.1
                search.fit(X, trust_group=trust, user_id=ids)
                assert ledger.spent(ids).max() <= 1.1
            else:
                search.fit(X, trust_group=trust)
            picks.append(search.best_params_["strategy"])
            search_squared.append((search.best_estimator_.mean_[0] - truth) ** 2)
    rmse = {strategy: np.sqrt(np.mean(values)) for strategy, values in squared.items()}
    best = min(rmse.values())
    within = np.mean([rmse[pick] <= 1.2 * best for pick in picks])
    assert within >= 0.9, (rmse, picks)
    if rmse["tcm_only"] < min(rmse[strategy] for strategy in LOCAL_ONLY):
        assert not LOCAL_ONLY & set(picks)
    # The search's own answer (its chosen candidate at the rest of the epsilon).
    assert np.sqrt(np.mean(search_squared)) <= 1.2 * best


@pytest.mark.slow
@pytest.mark.parametrize("shape", [
    # Measured gaps of the current default (issue 50, item 2, not done): at 10% tcm the
    # figures at a near-zero private variance rank kvh, pwh and tcm_only out of order
    # on the salaries; on uniform data at 2% tcm the default is 1.9x naive's error.
    pytest.param("salaries", marks=pytest.mark.xfail(strict=True, reason="Spearman < 0.8")),
    pytest.param("uniform", marks=pytest.mark.xfail(strict=True, reason="default 1.9x")),
    "lognormal", "exponential"])
def test_the_default_is_within_1_2_and_expected_mse_ranks_the_strategies(shape):
    rng = np.random.default_rng(7)
    if shape == "salaries":
        salaries = load_salaries()
        X, bounds = salaries.data, salaries.bounds
    elif shape == "uniform":
        X, bounds = rng.uniform(size=(50_000, 1)), (0.0, 1.0)
    elif shape == "lognormal":
        X, bounds = np.clip(rng.lognormal(0, 1, (50_000, 1)), 0, 20), (0.0, 20.0)
    else:
        X, bounds = np.clip(rng.exponential(1.0, (50_000, 1)), 0, 10), (0.0, 10.0)
    n = X.shape[0]
    truth = X.mean()
    for tcm_share in (0.02, 0.10):
        squared = {strategy: [] for strategy in STRATEGIES}
        figures = {strategy: [] for strategy in STRATEGIES}
        default = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for run in range(N_RUNS):
                trust = np.where(np.random.default_rng(run).random(n) < tcm_share, "tcm", "lm")
                for strategy in STRATEGIES:
                    fitted = HybridMeanEstimator(strategy, bounds=bounds,
                                                 random_state=run).fit(X, trust_group=trust)
                    squared[strategy].append((fitted.mean_[0] - truth) ** 2)
                    figures[strategy].append(fitted.expected_mse_[0])
                fitted = HybridMeanEstimator(bounds=bounds, random_state=run).fit(
                    X, trust_group=trust)
                default.append((fitted.mean_[0] - truth) ** 2)
        rmse = [np.sqrt(np.mean(squared[strategy])) for strategy in STRATEGIES]
        assert np.sqrt(np.mean(default)) <= 1.2 * min(rmse), (shape, tcm_share, rmse)
        expected = [np.sqrt(np.mean(figures[strategy])) for strategy in STRATEGIES]
        assert spearmanr(expected, rmse).statistic >= 0.8, (shape, tcm_share, expected, rmse)
