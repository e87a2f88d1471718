"""Searches over pipelines: metadata to every step, costs summed over steps, swapped steps."""

import warnings

import numpy as np
import pytest
from sklearn import config_context
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline

from skhybrid import ADPMEstimator, HybridKMeans, HybridMeanEstimator
from skhybrid.accounting import PrivacyLedger
from skhybrid.model_selection import PrivateGridSearchCV, search_cost
from skhybrid.preprocessing import BoundsScaler, HybridStandardScaler

BOUNDS = ([0.0, 18.0], [500_000.0, 80.0])


def _survey(n=3_000, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[30_000, 24], [100_000, 42], [250_000, 58]])
    group = rng.integers(0, 3, n)
    X = centres[group] + np.array([8_000, 3]) * rng.standard_normal((n, 2))
    trust = np.where(rng.random(n) < 0.3, "tcm", "lm")
    levels = np.where(trust == "tcm", 2.0, 1.0)  # one level per group, as K-means needs
    return X, trust, levels, np.arange(n)


def _mean_pipeline(ledger):
    return Pipeline([("est", HybridMeanEstimator(bounds=(0, 1), ledger=ledger, random_state=0))])


def _swap_grid(ledger=None):
    return {"est": [HybridMeanEstimator(bounds=(0, 1), variance=1 / 12, ledger=ledger,
                                        random_state=1),
                    ADPMEstimator(bounds=(0, 1), ledger=ledger, random_state=2)]}


@pytest.mark.parametrize("routing", [False, True])
def test_the_issues_search_swapping_the_estimator_class_of_a_step_runs(routing):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(2_000, 1))
    trust = np.where(rng.random(2_000) < 0.3, "tcm", "lm")
    ids = np.arange(2_000)
    ledger = PrivacyLedger(default_budget=20.0)
    with config_context(enable_metadata_routing=routing):
        pipe, grid = _mean_pipeline(ledger), _swap_grid()
        if routing:  # every step, and every step a grid swaps in, requests its metadata
            for est in [pipe[0], *grid["est"]]:
                est.set_fit_request(trust_group=True, user_id=True)
        search = PrivateGridSearchCV(pipe, grid, selection="exponential", cv=2,
                                     random_state=0)
        cost = search_cost(search, X, trust_group=trust, user_id=ids)
        search.fit(X, trust_group=trust, user_id=ids)
    assert type(search.best_params_["est"]) in (HybridMeanEstimator, ADPMEstimator)
    assert search.best_estimator_[0].ledger is ledger  # the refit charges the search's ledger
    spent = ledger.spent(ids)
    np.testing.assert_allclose(search.reserved_epsilon_, cost)
    assert np.all(spent <= cost + 1e-9)
    np.testing.assert_allclose(spent, search.spent_epsilon_)
    # The grid's instances are templates: the search fits clones of them.
    assert not any(hasattr(est, "mean_") for est in _swap_grid()["est"])


def _scaled_kmeans(ledger):
    return Pipeline([
        ("scale", HybridStandardScaler(epsilon=0.5, bounds=BOUNDS, ledger=ledger, random_state=0)),
        ("kmeans", HybridKMeans(3, epsilon=1.0, bounds=(-3, 3), ledger=ledger, random_state=1)),
    ])


def test_search_cost_of_a_pipeline_sums_its_steps_and_bounds_the_charges_user_by_user():
    X, trust, levels, ids = _survey()
    ledger = PrivacyLedger(default_budget=50.0)
    grid = {"scale": [HybridStandardScaler(epsilon=0.5, bounds=BOUNDS, random_state=0),
                      BoundsScaler(BOUNDS)],
            "kmeans__n_clusters": [2, 3]}
    search = PrivateGridSearchCV(_scaled_kmeans(ledger), grid, cv=KFold(2), random_state=0)
    metadata = {"trust_group": trust, "epsilon": levels, "user_id": ids}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cost = search_cost(search, X, **metadata)
        search.fit(X, **metadata)
    is_tcm = trust == "tcm"
    # Each user is in one training fold: per candidate, the scaler's (epsilon metadata
    # replaces 0.5) and K-means' levels, or K-means' alone after BoundsScaler; then the
    # selection (tcm users) and the dearest refit (scaler and K-means).
    expected = 2 * (2 * levels) + 2 * levels + is_tcm * 1.0 + 2 * levels
    np.testing.assert_allclose(cost, expected)
    spent = ledger.spent(ids)
    assert np.all(spent <= cost + 1e-9)
    chosen_scaler = type(search.best_params_["scale"])
    refit = 2 * levels if chosen_scaler is HybridStandardScaler else levels
    np.testing.assert_allclose(spent, cost - 2 * levels + refit)
    labels = search.best_estimator_.predict(X[:5])
    assert labels.shape == (5,)


def test_search_cost_of_sklearns_grid_search_over_a_pipeline_is_what_it_charges():
    X, trust, levels, ids = _survey(1_000)
    ledger = PrivacyLedger(default_budget=50.0)
    search = GridSearchCV(_scaled_kmeans(ledger), {"kmeans__n_iter": [2, 3]}, cv=KFold(2),
                          scoring=lambda est, X_, y=None: 0.0)
    metadata = {f"{step}__{key}": value for step in ("scale", "kmeans")
                for key, value in {"trust_group": trust, "user_id": ids}.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cost = search_cost(search, X, **metadata)
        search.fit(X, **metadata)
    # Two candidates on one training fold each, then a refit: 3 x (0.5 + 1) per user.
    np.testing.assert_allclose(cost, 4.5)
    np.testing.assert_allclose(ledger.spent(ids), cost)


def test_a_candidate_without_public_bounds_is_named_with_its_step():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 1))
    grid = {"est": [HybridMeanEstimator(bounds=(0, 1)), HybridMeanEstimator()]}
    search = PrivateGridSearchCV(_mean_pipeline(None), grid, random_state=0)
    with pytest.raises(ValueError, match=r"HybridMeanEstimator\(\)\}.*bounds=None \(step 'est'"):
        search.fit(X, trust_group=np.array(["tcm", "lm"] * 100))


def test_steps_charging_different_ledgers_are_refused_before_anything_runs():
    X, trust, _, ids = _survey(200)
    pipe = _scaled_kmeans(PrivacyLedger(default_budget=5.0))
    pipe.set_params(kmeans__ledger=PrivacyLedger(default_budget=5.0))
    search = PrivateGridSearchCV(pipe, {"kmeans__n_clusters": [2, 3]}, random_state=0)
    with pytest.raises(ValueError, match="one ledger"):
        search.fit(X, trust_group=trust, user_id=ids)


def test_a_pipeline_of_mean_estimators_is_ranked_by_public_expected_error():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(4_000, 1))
    trust = np.where(rng.random(4_000) < 0.3, "tcm", "lm")
    ids = np.arange(4_000)
    ledger = PrivacyLedger(default_budget=5.0)
    grid = {"est": [HybridMeanEstimator("tcm_only", bounds=(0, 1), variance=1 / 12),
                    HybridMeanEstimator("pwh", bounds=(0, 1), variance=1 / 12)]}
    search = PrivateGridSearchCV(_mean_pipeline(ledger), grid, random_state=0)
    cost = search_cost(search, X, trust_group=trust, user_id=ids)
    search.fit(X, trust_group=trust, user_id=ids)
    assert search.selection_ == "expected_mse"
    assert search.best_params_["est"].strategy == "pwh"  # both groups beat the tcm alone
    np.testing.assert_allclose(ledger.spent(ids), cost)  # one fit: the chosen one's
    np.testing.assert_allclose(cost, 1.0)
