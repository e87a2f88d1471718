"""Estimators charge the ledger: what each user pays, in model selection and streams."""

import math
import warnings

import joblib
import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skhybrid import (
    ADPMEstimator,
    BlenderHeavyHitters,
    HybridKMeans,
    HybridMeanEstimator,
    MixedMeanEstimator,
    MixedQuantileEstimator,
    PDPQuantileEstimator,
    PDPSampleEstimator,
)
from skhybrid.accounting import PrivacyLedger
from skhybrid.exceptions import BudgetExceededError, PrivacyLeakWarning, UnaccountedReleaseWarning
from skhybrid.mechanisms import gaussian_noise_multiplier

N_USERS = 400


@pytest.fixture
def users():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(N_USERS, 1))
    trust = np.where(rng.random(N_USERS) < 0.4, "tcm", "lm")
    levels = np.where(rng.random(N_USERS) < 0.5, 0.5, 2.0)
    ids = np.array([f"user-{i}" for i in rng.permutation(N_USERS)])
    return X, trust, levels, ids


def _spend(estimator, fit_kwargs, X, ids):
    ledger = PrivacyLedger(default_budget=100.0)
    estimator.set_params(ledger=ledger).fit(X, user_id=ids, **fit_kwargs)
    return ledger.spent(ids), ledger


# -- what each estimator charges (its _release_cost) -------------------------------------


@pytest.mark.parametrize("strategy", ["kvh", "pwh", "naive", "full_lm"])
def test_hybrid_mean_charges_every_user_their_epsilon(users, strategy):
    X, trust, _, ids = users
    spent, _ = _spend(HybridMeanEstimator(strategy, epsilon=0.7, bounds=(0, 1)),
                      {"trust_group": trust}, X, ids)
    np.testing.assert_array_equal(spent, np.full(N_USERS, 0.7))


@pytest.mark.parametrize("strategy, unused", [("tcm_only", "lm"), ("lm_only", "tcm")])
def test_hybrid_mean_baselines_charge_only_the_group_they_use(users, strategy, unused):
    X, trust, _, ids = users
    spent, _ = _spend(HybridMeanEstimator(strategy, epsilon=0.7, bounds=(0, 1)),
                      {"trust_group": trust}, X, ids)
    np.testing.assert_array_equal(spent, np.where(trust == unused, 0.0, 0.7))


def test_hybrid_mean_with_local_reports_charges_only_the_tcm_users(users):
    X, trust, _, ids = users
    spent, _ = _spend(HybridMeanEstimator(epsilon=0.7, bounds=(0, 1), local_reports=True),
                      {"trust_group": trust}, X, ids)
    np.testing.assert_array_equal(spent, np.where(trust == "tcm", 0.7, 0.0))


def test_hybrid_mean_gaussian_charges_one_gaussian_release_per_user(users):
    X, trust, _, ids = users
    ledger = PrivacyLedger()
    ledger.set_budget(ids, 5.0, delta=1e-5)
    HybridMeanEstimator(epsilon=0.7, delta=1e-5, mechanism="gaussian", bounds=(0, 1),
                        ledger=ledger).fit(X, trust_group=trust, user_id=ids)
    (level,) = ledger.history()[0]["levels"]
    assert level["noise_multiplier"] == gaussian_noise_multiplier(0.7, 1e-5)
    # One release read at its own delta gives back (at most) its epsilon.
    assert ledger.spent(ids[:1])[0] == pytest.approx(0.7, abs=1e-9)


@pytest.mark.parametrize("make", [ADPMEstimator, MixedMeanEstimator, MixedQuantileEstimator,
                                  PDPQuantileEstimator])
def test_personalized_estimators_charge_each_user_their_own_level(users, make):
    X, _, levels, ids = users
    spent, _ = _spend(make(bounds=(0, 1)), {"epsilon": levels}, X, ids)
    np.testing.assert_array_equal(spent, levels)


def test_public_users_are_not_charged(users):
    X, _, levels, ids = users
    levels = np.where(np.arange(N_USERS) < 50, np.inf, levels)
    spent, _ = _spend(MixedMeanEstimator(bounds=(0, 1)), {"epsilon": levels}, X, ids)
    np.testing.assert_array_equal(spent, np.where(np.isinf(levels), 0.0, levels))


@pytest.mark.parametrize("threshold", ["min", "mean", "max", 1.0])
def test_pdp_sample_charges_the_smaller_of_the_level_and_the_threshold(users, threshold):
    X, _, levels, ids = users
    estimator = PDPSampleEstimator(threshold=threshold, bounds=(0, 1), variance=None)
    spent, _ = _spend(estimator, {"epsilon": levels}, X, ids)
    np.testing.assert_array_equal(spent, np.minimum(levels, estimator.threshold_))


@pytest.mark.parametrize("strategy", ["hybrid", "tcm_only", "full_lm"])
def test_kmeans_charges_the_total_epsilon_once(users, strategy):
    X, trust, _, ids = users
    spent, _ = _spend(HybridKMeans(2, epsilon=0.9, n_iter=3, strategy=strategy,
                                   bounds=(0, 1), random_state=0),
                      {"trust_group": trust}, X, ids)
    expected = np.full(N_USERS, 0.9)
    if strategy == "tcm_only":
        expected[trust == "lm"] = 0.0
    np.testing.assert_array_equal(spent, expected)


def test_blender_charges_epsilon_and_delta_to_everyone(users):
    _, trust, _, ids = users
    rng = np.random.default_rng(1)
    records = np.column_stack([rng.integers(0, 4, N_USERS), rng.integers(0, 3, N_USERS)])
    ledger = PrivacyLedger(default_budget=(10.0, 1e-4))
    BlenderHeavyHitters(epsilon=2.0, delta=1e-6, ledger=ledger, random_state=0).fit(
        records, trust_group=trust, user_id=ids)
    np.testing.assert_array_equal(ledger.spent(ids), np.full(N_USERS, 2.0))
    assert ledger.history()[0]["levels"] == [
        {"epsilon": 2.0, "delta": 1e-6, "noise_multiplier": None, "n_users": N_USERS}]


def test_dask_fits_charge_what_numpy_fits_charge(users):
    da = pytest.importorskip("dask.array")
    X, trust, levels, ids = users
    numpy_spent, _ = _spend(ADPMEstimator(bounds=(0, 1)), {"epsilon": levels}, X, ids)
    dask_spent, _ = _spend(
        ADPMEstimator(bounds=(0, 1)),
        {"epsilon": da.from_array(levels, chunks=100)},
        da.from_array(X, chunks=(100, 1)), da.from_array(ids, chunks=100),
    )
    np.testing.assert_array_equal(dask_spent, numpy_spent)


@pytest.mark.parametrize("kind", ["kmeans", "blender", "pdp"])
def test_dask_fits_of_the_other_estimators_charge_every_user(users, kind):
    da = pytest.importorskip("dask.array")
    X, trust, levels, ids = users
    if kind == "blender":
        rng = np.random.default_rng(2)
        X = np.column_stack([rng.integers(0, 4, N_USERS), rng.integers(0, 3, N_USERS)])
        estimator, metadata = BlenderHeavyHitters(epsilon=1.5, random_state=0), {
            "trust_group": da.from_array(trust, chunks=100)}
        expected = np.full(N_USERS, 1.5)
    elif kind == "kmeans":
        estimator = HybridKMeans(2, epsilon=1.5, bounds=(0, 1), random_state=0)
        metadata = {"trust_group": da.from_array(trust, chunks=100)}
        expected = np.full(N_USERS, 1.5)
    else:
        estimator = PDPSampleEstimator(threshold=1.0, bounds=(0, 1), variance=None,
                                       random_state=0)
        metadata = {"epsilon": da.from_array(levels, chunks=100)}
        expected = np.minimum(levels, 1.0)
    ledger = PrivacyLedger(default_budget=(10.0, 1e-3))
    estimator.set_params(ledger=ledger).fit(
        da.from_array(X, chunks=(100, X.shape[1])), user_id=da.from_array(ids, chunks=100),
        **metadata)
    np.testing.assert_array_equal(ledger.spent(ids), expected)


# -- refusals -----------------------------------------------------------------------------


def test_user_ids_of_mixed_types_in_a_list_are_refused_not_turned_into_strings(users):
    X, trust, _, _ = users
    ids = list(range(N_USERS - 1)) + ["someone"]
    ledger = PrivacyLedger(default_budget=1.0)
    with pytest.raises(TypeError, match="all integers or all strings"):
        HybridMeanEstimator(bounds=(0, 1), ledger=ledger).fit(X, trust_group=trust, user_id=ids)
    assert ledger.history() == []


def test_a_ledger_without_user_id_is_an_error(users):
    X, trust, _, _ = users
    with pytest.raises(ValueError, match="has a ledger but was fit without user_id"):
        HybridMeanEstimator(bounds=(0, 1), ledger=PrivacyLedger(default_budget=1.0)).fit(
            X, trust_group=trust)


def test_a_fit_over_budget_raises_releases_nothing_and_charges_nothing(users, tmp_path):
    X, _, levels, ids = users
    ledger = PrivacyLedger(tmp_path / "l.sqlite", default_budget=3.0)
    ledger.set_budget(ids[:3], [0.6, 1.0, 1.9])  # heterogeneous budgets
    estimator = ADPMEstimator(bounds=(0, 1), ledger=ledger)
    estimator.fit(X, epsilon=np.full(N_USERS, 0.5), user_id=ids)
    before = ledger.to_frame(), ledger.history()
    fresh = clone(estimator)
    with pytest.raises(BudgetExceededError, match=f"1 of {N_USERS} users.*{ids[0]}"):
        fresh.fit(X, epsilon=np.full(N_USERS, 0.5), user_id=ids)
    after = ledger.to_frame(), ledger.history()
    assert after[0].equals(before[0]) and after[1] == before[1]
    assert "_estimate" not in fresh.__dict__  # the refused fit released nothing


def test_each_stream_release_charges_every_user_so_far_and_a_refused_one_nothing(users):
    X, trust, _, ids = users
    ledger = PrivacyLedger(default_budget=1.0)
    estimator = HybridMeanEstimator(epsilon=0.5, bounds=(0, 1), ledger=ledger)
    estimator.partial_fit(X[:200], trust_group=trust[:200], user_id=ids[:200])
    estimator.mean_
    np.testing.assert_array_equal(ledger.spent(ids), np.where(np.arange(N_USERS) < 200, 0.5, 0))
    estimator.partial_fit(X[200:], trust_group=trust[200:], user_id=ids[200:])
    with pytest.warns(Warning):
        estimator.mean_
    np.testing.assert_array_equal(ledger.spent(ids), np.where(np.arange(N_USERS) < 200, 1, 0.5))
    estimator.partial_fit(X[:1] * 0, trust_group=trust[:1], user_id=["newcomer"])
    with pytest.raises(BudgetExceededError, match=f"200 of {N_USERS + 1} users"), \
            pytest.warns(Warning):
        estimator.mean_
    assert len(ledger.history()) == 2


def test_a_stream_charges_the_ids_and_levels_given_at_partial_fit(users):
    """The stream keeps its own copies: changing the caller's arrays after partial_fit
    (before the release) changes neither who is charged nor how much."""
    X, _, levels, ids = users
    ledger = PrivacyLedger(default_budget=10.0)
    estimator = ADPMEstimator(bounds=(0, 1), ledger=ledger)
    given_levels, given_ids = levels.copy(), ids.copy()
    estimator.partial_fit(X, epsilon=given_levels, user_id=given_ids)
    given_levels[:] = 9.0
    given_ids[:] = "someone-else"
    estimator.mean_
    np.testing.assert_array_equal(ledger.spent(ids), levels)
    assert set(ledger.users()["user_id"]) == set(ids)


def test_score_warns_once_per_class_and_process_with_a_ledger(users, monkeypatch):
    X, trust, _, ids = users
    monkeypatch.setattr("skhybrid.base._SCORE_WARNED", set())
    estimator = HybridMeanEstimator(bounds=(0, 1), ledger=PrivacyLedger(default_budget=9.0))
    estimator.fit(X, trust_group=trust, user_id=ids)
    with pytest.warns(PrivacyLeakWarning,
                      match="not differentially private.*PrivateGridSearchCV"):
        estimator.score(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        estimator.score(X)
        clone(estimator).fit(X, trust_group=trust, user_id=ids).score(X)  # a search's clone


def test_score_of_a_secure_noise_fit_warns_once_without_a_ledger(users, monkeypatch):
    """A real release (secure noise) scored on raw data: not private, ledger or not; a
    seeded simulation's score stays quiet."""
    X, trust, _, _ = users
    monkeypatch.setattr("skhybrid.base._SCORE_WARNED", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=trust).score(X)
    estimator = HybridMeanEstimator(bounds=(0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnaccountedReleaseWarning)
        estimator.fit(X, trust_group=trust)
    with pytest.warns(PrivacyLeakWarning, match="not differentially private"):
        estimator.score(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        estimator.score(X)  # once per process


# -- model selection ----------------------------------------------------------------------


def _expected_grid_spend(search, ids, folds, grid, n_users):
    """Each user's spend from the fold indices: one charge per fit that included them."""
    position = {user: i for i, user in enumerate(ids)}
    charges = [[] for _ in range(n_users)]
    for train, _ in folds:
        for candidate in grid:
            for user in ids[train]:
                charges[position[user]].append(candidate["epsilon"])
    for user in ids:
        charges[position[user]].append(search.best_params_["epsilon"])  # the refit
    return np.array([math.fsum(c) for c in charges])


GRID = {"epsilon": [0.3, 0.7], "strategy": ["kvh", "pwh"]}


def _search(ledger, n_jobs):
    cv = KFold(5, shuffle=True, random_state=3)
    estimator = HybridMeanEstimator(bounds=(0, 1), ledger=ledger, random_state=0)
    return GridSearchCV(estimator, GRID, cv=cv, n_jobs=n_jobs), cv


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_charges_each_user_each_fit_that_included_them(users, tmp_path, n_jobs):
    X, trust, _, ids = users
    ledger = PrivacyLedger(tmp_path / "l.sqlite" if n_jobs > 1 else None, default_budget=50.0)
    search, cv = _search(ledger, n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search.fit(X, trust_group=trust, user_id=ids)
    expected = _expected_grid_spend(search, ids, list(cv.split(X)),
                                    list(search.cv_results_["params"]), N_USERS)
    np.testing.assert_array_equal(ledger.spent(ids), expected)
    assert len(ledger.history()) == 5 * 4 + 1
    assert 0.3 * 17 <= expected.min() and expected.max() <= 0.7 * 17  # 4 x 4 folds + refit


def test_grid_search_with_metadata_routing_charges_the_same(users):
    X, trust, _, ids = users
    ledger = PrivacyLedger(default_budget=50.0)
    with sklearn.config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search, cv = _search(ledger, 1)
        search.estimator.set_fit_request(trust_group=True, user_id=True)
        search.fit(X, trust_group=trust, user_id=ids)
    expected = _expected_grid_spend(search, ids, list(cv.split(X)),
                                    list(search.cv_results_["params"]), N_USERS)
    np.testing.assert_array_equal(ledger.spent(ids), expected)


def test_cross_validate_charges_k_minus_one_times(users):
    X, trust, _, ids = users
    ledger = PrivacyLedger(default_budget=50.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        cross_validate(HybridMeanEstimator(epsilon=0.5, bounds=(0, 1), ledger=ledger), X,
                       cv=KFold(5), params={"trust_group": trust, "user_id": ids})
    np.testing.assert_array_equal(ledger.spent(ids), np.full(N_USERS, 4 * 0.5))


def _raised_text(error):
    """The messages of ``error`` and the errors chained to it (loky wraps a pickling error)."""
    texts = []
    while error is not None:
        texts.append(str(error))
        error = error.__cause__ or error.__context__
    return "\n".join(texts)


@pytest.mark.parametrize("run", ["grid_search", "cross_validate"])
def test_an_in_memory_ledger_refuses_worker_processes_and_names_the_shared_ledgers(users, run):
    X, trust, _, ids = users
    ledger = PrivacyLedger(default_budget=50.0)
    with pytest.raises(Exception) as raised, warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        if run == "grid_search":
            _search(ledger, n_jobs=2)[0].fit(X, trust_group=trust, user_id=ids)
        else:
            cross_validate(HybridMeanEstimator(bounds=(0, 1), ledger=ledger), X, cv=3,
                           n_jobs=2, params={"trust_group": trust, "user_id": ids})
    text = _raised_text(raised.value)
    assert "in-memory PrivacyLedger cannot be pickled" in text
    assert "PrivacyLedger('ledger.sqlite')" in text and "postgresql://" in text
    assert len(ledger.history()) == 0


def test_an_in_memory_ledger_with_two_threads_charges_as_one_thread(users):
    X, trust, _, ids = users
    ledger = PrivacyLedger(default_budget=50.0)
    search, cv = _search(ledger, n_jobs=2)
    with joblib.parallel_backend("threading", n_jobs=2), warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search.fit(X, trust_group=trust, user_id=ids)
    expected = _expected_grid_spend(search, ids, list(cv.split(X)),
                                    list(search.cv_results_["params"]), N_USERS)
    np.testing.assert_array_equal(ledger.spent(ids), expected)
    assert len(ledger.history()) == 5 * 4 + 1


def test_a_refusal_in_a_thread_reaches_the_caller_as_the_ledgers_own_error(users):
    X, trust, _, ids = users
    ledger = PrivacyLedger(default_budget=1.0)
    search, _ = _search(ledger, n_jobs=2)
    search.set_params(error_score="raise")
    with pytest.raises(BudgetExceededError, match="would exceed the privacy budget"):
        with joblib.parallel_backend("threading", n_jobs=2), warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            search.fit(X, trust_group=trust, user_id=ids)
    assert ledger.spent(ids).max() <= 1.0


# -- a refused fit charges nobody (issue 25, 2) ----------------------------------------

_ALL_LM = np.array(["lm"] * N_USERS)
_ALL_TCM = np.array(["tcm"] * N_USERS)
_REFUSED_FITS = {
    "tcm_only without tcm users": (HybridMeanEstimator("tcm_only", bounds=(0, 1)),
                                   {"trust_group": _ALL_LM}),
    "lm_only without lm users": (HybridMeanEstimator("lm_only", bounds=(0, 1)),
                                 {"trust_group": _ALL_TCM}),
    "two epsilons in one trust group": (HybridMeanEstimator(bounds=(0, 1)),
                                        {"trust_group": "trust", "epsilon": "levels"}),
    "mixed mean with lm users": (MixedMeanEstimator(bounds=(0, 1)), {"trust_group": "trust"}),
    "uni with lm users": (ADPMEstimator(strategy="uni", bounds=(0, 1)),
                          {"trust_group": "trust"}),
    "hybrid epsilon too small to sample": (HybridMeanEstimator(bounds=(0, 1), epsilon=1e-18),
                                           {"trust_group": "trust"}),
    "pdp epsilon too small to sample": (PDPSampleEstimator(bounds=(0, 1), epsilon=1e-18), {}),
    "kmeans epsilon too small to sample": (HybridKMeans(2, bounds=(0, 1), epsilon=1e-18),
                                           {"trust_group": "trust"}),
    "mixed epsilon too small to sample": (MixedMeanEstimator(bounds=(0, 1), epsilon=1e-18), {}),
    "stretching epsilon too small to sample": (
        ADPMEstimator(strategy="stretching", bounds=(0, 1)), {"epsilon": "tiny levels"}),
    "ldpe epsilon too small to sample": (
        ADPMEstimator(strategy="ldpe", bounds=(0, 1)), {"epsilon": "tiny levels"}),
    "pdp with lm users": (PDPSampleEstimator(bounds=(0, 1)), {"trust_group": "trust"}),
    "kmeans tcm_only without tcm users": (HybridKMeans(2, strategy="tcm_only", bounds=(0, 1)),
                                          {"trust_group": _ALL_LM}),
}


@pytest.mark.parametrize("case", list(_REFUSED_FITS))
@pytest.mark.parametrize("dask_input", [False, True], ids=["numpy", "dask"])
def test_a_refused_fit_charges_nobody_and_writes_no_history(users, case, dask_input):
    X, trust, levels, ids = users
    estimator, metadata = _REFUSED_FITS[case]
    named = {"trust": trust, "levels": levels, "tiny levels": levels * 1e-18}
    metadata = {key: named[value] if isinstance(value, str) else value
                for key, value in metadata.items()}
    if dask_input:
        da = pytest.importorskip("dask.array")
        X = da.from_array(X, chunks=(150, 1))
        metadata = {key: da.from_array(value, chunks=150) for key, value in metadata.items()}
    ledger = PrivacyLedger(default_budget=100.0)
    estimator = clone(estimator).set_params(ledger=ledger, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError):
            estimator.fit(X, user_id=ids, **metadata)
    assert ledger.history() == []
    np.testing.assert_array_equal(ledger.spent(ids), np.zeros(N_USERS))


@pytest.mark.parametrize("dask_input", [False, True], ids=["numpy", "dask"])
def test_a_blender_fit_refused_for_its_noise_charges_nobody(dask_input):
    from skhybrid.datasets import make_search_logs

    records = make_search_logs(2_000, n_queries=20, random_state=0)
    optin = np.random.default_rng(1).random(records.shape[0]) < 0.3
    ids = np.arange(records.shape[0])
    if dask_input:
        da = pytest.importorskip("dask.array")
        records, optin = da.from_array(records, chunks=(700, 2)), da.from_array(optin, 700)
    ledger = PrivacyLedger()
    ledger.set_budget(ids, 1e300, 0.5)
    with pytest.raises(ValueError, match="too small to draw the noise"):
        BlenderHeavyHitters(epsilon=1e-18, ledger=ledger, random_state=0).fit(
            records, trust_group=optin, user_id=ids)
    assert ledger.history() == []
    np.testing.assert_array_equal(ledger.spent(ids), np.zeros(ids.size))
