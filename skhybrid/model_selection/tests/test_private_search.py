"""PrivateGridSearchCV and search_cost: private choice, exact pre-flight cost, reservation."""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, KFold, RandomizedSearchCV

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
from skhybrid.exceptions import (
    BudgetExceededError,
    EmptyGroupWarning,
    MetadataOverrideWarning,
    PrivacyLeakWarning,
    UnaccountedReleaseWarning,
)
from skhybrid.model_selection import PrivateGridSearchCV, search_cost
from skhybrid.model_selection import _search

N_USERS = 300


@pytest.fixture
def users():
    rng = np.random.default_rng(0)
    X = rng.beta(2, 5, size=(N_USERS, 1))
    trust = np.where(rng.random(N_USERS) < 0.4, "tcm", "lm")
    levels = np.where(trust == "tcm", 0.5, 2.0)  # the hybrid mean needs one per group
    ids = np.array([f"user-{i}" for i in rng.permutation(N_USERS)])
    return X, trust, levels, ids


def _mean_search(ledger, grid, **kwargs):
    estimator = HybridMeanEstimator(bounds=(0, 1), ledger=ledger, random_state=0)
    kwargs.setdefault("selection", "exponential")
    return PrivateGridSearchCV(estimator, grid, cv=KFold(4), random_state=0, **kwargs)


# -- the cost before the run equals the charges ------------------------------------------


def test_private_search_charges_exactly_its_preflight_cost_user_by_user(users):
    X, trust, levels, ids = users
    ledger = PrivacyLedger(default_budget=100.0)
    search = _mean_search(ledger, {"strategy": ["kvh", "pwh", "naive"]})
    metadata = {"trust_group": trust, "epsilon": levels, "user_id": ids}
    cost = search_cost(search, X, **metadata)
    # 3 candidates x 3 training folds each, the refit, and the selection for tcm users.
    np.testing.assert_allclose(cost, levels * (3 * 3 + 1) + np.where(trust == "tcm", 1.0, 0.0))
    search.fit(X, **metadata)
    np.testing.assert_allclose(ledger.spent(ids), cost, rtol=1e-13)
    # The fold fits drew on the reservation without charging the ledger; the refit
    # charged it (its draw given back first), a history row naming the chosen candidate.
    reservation, draw, refit = ledger.history()
    assert reservation["description"].startswith("reservation of PrivateGridSearchCV")
    assert (draw["kind"], refit["kind"]) == ("refund", "release")
    assert refit["params"]["strategy"] == search.best_params_["strategy"]


@pytest.mark.parametrize("kind", ["grid", "randomized"])
def test_scikit_learn_searches_charge_exactly_the_preflight_cost(users, kind):
    X, trust, levels, ids = users
    ledger = PrivacyLedger(default_budget=100.0)
    estimator = HybridMeanEstimator(bounds=(0, 1), ledger=ledger, random_state=0)
    grid = {"strategy": ["kvh", "pwh", "full_lm"], "clamp": [True, False]}
    search = (GridSearchCV(estimator, grid, cv=KFold(3)) if kind == "grid" else
              RandomizedSearchCV(estimator, grid, n_iter=4, cv=KFold(3), random_state=1))
    metadata = {"trust_group": trust, "epsilon": levels, "user_id": ids}
    cost = search_cost(search, X, **metadata)
    n_fits = (6 if kind == "grid" else 4) * 2 + 1
    np.testing.assert_allclose(cost, levels * n_fits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search.fit(X, **metadata)
    np.testing.assert_allclose(ledger.spent(ids), cost, rtol=1e-13)


def test_search_cost_with_metadata_routing_follows_the_requests(users):
    X, trust, levels, ids = users
    ledger = PrivacyLedger(default_budget=100.0)
    with sklearn.config_context(enable_metadata_routing=True):
        search = _mean_search(ledger, {"strategy": ["kvh", "pwh"]})
        search.estimator.set_fit_request(trust_group=True, user_id=True, epsilon=True)
        metadata = {"trust_group": trust, "epsilon": levels, "user_id": ids}
        cost = search_cost(search, X, **metadata)
        search.fit(X, **metadata)
    np.testing.assert_allclose(ledger.spent(ids), cost, rtol=1e-13)
    np.testing.assert_allclose(cost, levels * (2 * 3 + 1) + np.where(trust == "tcm", 1.0, 0.0))


def test_a_cheaper_refit_than_reserved_is_refunded_with_a_history_row(users):
    X, trust, _, ids = users
    ledger = PrivacyLedger(default_budget=100.0)
    # tcm_only does not charge lm users: the reservation counts the dearest refit.
    search = _mean_search(ledger, {"strategy": ["tcm_only", "pwh"]}, selection_epsilon=50.0)
    cost = search_cost(search, X, trust_group=trust, user_id=ids)
    search.fit(X, trust_group=trust, user_id=ids)
    refit = 1.0 if search.best_params_["strategy"] == "pwh" else np.where(trust == "tcm", 1, 0)
    expected = cost - 1.0 + refit
    np.testing.assert_allclose(ledger.spent(ids), expected, rtol=1e-13)
    np.testing.assert_allclose(search.spent_epsilon_, expected, rtol=1e-13)
    if search.best_params_["strategy"] == "tcm_only":
        assert ledger.history()[-1]["description"].startswith("refund of PrivateGridSearchCV")


# -- refusal and giving back -------------------------------------------------------------


def test_an_unaffordable_search_charges_nobody_and_releases_nothing(users, monkeypatch):
    X, trust, _, ids = users
    ledger = PrivacyLedger(default_budget=100.0)
    search = _mean_search(ledger, {"strategy": ["kvh", "pwh"]})
    cost = search_cost(search, X, trust_group=trust, user_id=ids)
    ledger.set_budget(ids, cost)
    ledger.set_budget(ids[:1], cost[0] - 0.01)

    def no_release(*args):
        raise AssertionError("a candidate was fit after a refused reservation")

    monkeypatch.setattr(_search, "_fit_candidate", no_release)
    with pytest.raises(BudgetExceededError, match="nothing was charged"):
        search.fit(X, trust_group=trust, user_id=ids)
    assert ledger.history() == []
    assert not ledger.spent(ids).any()
    assert not hasattr(search, "best_estimator_")


def test_an_exception_before_a_fits_noise_stops_the_search_and_refunds_the_rest(
        users, monkeypatch):
    X, trust, _, ids = users
    ledger = PrivacyLedger(default_budget=100.0)
    search = _mean_search(ledger, {"strategy": ["kvh", "pwh"]})
    real_fit = _search._fit_candidate
    calls = []

    def fail_third(*args):
        calls.append(None)
        if len(calls) == 3:  # raised before the fit (and so before its noise)
            return None, None, RuntimeError("disk full"), []
        return real_fit(*args)

    monkeypatch.setattr(_search, "_fit_candidate", fail_third)
    with pytest.raises(RuntimeError, match="disk full"):
        search.fit(X, trust_group=trust, user_id=ids)
    assert len(calls) == 3  # n_jobs=1 stops at the first failure
    folds = list(KFold(4).split(X))
    expected = np.zeros(N_USERS)
    for train, _ in folds[:2]:  # the two fits that ran, each charging every user 1.0
        expected[train] += 1.0
    np.testing.assert_allclose(ledger.spent(ids), expected, atol=1e-12)
    refund = ledger.history()[-1]
    assert refund["kind"] == "refund" and "stopped by RuntimeError" in refund["description"]


class _Interrupt(BaseException):
    """Like KeyboardInterrupt: not an Exception, so nothing on the way catches it."""


def test_an_interrupt_after_a_fits_noise_keeps_that_fit_charged(users, monkeypatch):
    X, trust, _, ids = users
    ledger = PrivacyLedger(default_budget=100.0)
    search = _mean_search(ledger, {"strategy": ["kvh", "pwh"]})
    real_fit = _search._fit_candidate
    calls = []

    def interrupt_second(*args):
        calls.append(None)
        result = real_fit(*args)  # charged its allotment and drew its noise
        if len(calls) == 2:
            raise _Interrupt
        return result

    monkeypatch.setattr(_search, "_fit_candidate", interrupt_second)
    with pytest.raises(_Interrupt):
        search.fit(X, trust_group=trust, user_id=ids)
    expected = np.zeros(N_USERS)
    for train, _ in list(KFold(4).split(X))[:2]:  # both fits released: both stay charged
        expected[train] += 1.0
    np.testing.assert_allclose(ledger.spent(ids), expected, atol=1e-12)


def test_cv_results_hold_no_scores_and_search_cost_needs_known_candidates(users):
    X, trust, _, ids = users
    search = _mean_search(None, {"strategy": ["kvh", "pwh"]}).fit(X, trust_group=trust)
    assert set(search.cv_results_) == {"params", "param_strategy", "selected"}
    assert search.cv_results_["selected"].sum() == 1
    estimator = HybridMeanEstimator(bounds=(0, 1))
    with pytest.raises(ValueError, match="random_state=<int>"):
        search_cost(RandomizedSearchCV(estimator, {"strategy": ["kvh"]}, n_iter=1), X)
    with pytest.raises(TypeError, match="accepts PrivateGridSearchCV"):
        search_cost(estimator, X)


# -- every estimator ---------------------------------------------------------------------


def _blender_data(rng):
    records = np.column_stack([rng.integers(0, 3, 600), rng.integers(0, 2, 600)])
    trust = np.where(rng.random(600) < 0.5, "tcm", "lm")
    return records, trust


@pytest.mark.parametrize("make, grid, data", [
    (lambda ledger: HybridKMeans(bounds=(0, 1), ledger=ledger, random_state=0),
     {"n_clusters": [2, 3], "n_iter": [2, 4]}, "points"),
    (lambda ledger: MixedQuantileEstimator(bounds=(0, 1), ledger=ledger, random_state=0),
     {"quantile": [0.5]}, "curator"),
    (lambda ledger: PDPQuantileEstimator(bounds=(0, 1), ledger=ledger, random_state=0),
     {"epsilon": [0.5, 1.0]}, "curator"),
    (lambda ledger: PDPSampleEstimator(bounds=(0, 1), ledger=ledger, random_state=0),
     {"threshold": ["min", "max"]}, "curator"),
    (lambda ledger: ADPMEstimator(bounds=(0, 1), ledger=ledger, random_state=0),
     {"epsilon": [0.5, 1.0]}, "points"),
    (lambda ledger: MixedMeanEstimator(bounds=(0, 1), ledger=ledger, random_state=0),
     {"epsilon": [0.5, 1.0]}, "curator"),
    (lambda ledger: BlenderHeavyHitters(ledger=ledger, random_state=0),
     {"headlist_fraction": [0.5, 0.95]}, "records"),
])
def test_every_estimator_can_be_selected_privately_and_charges_its_cost(make, grid, data):
    rng = np.random.default_rng(3)
    if data != "records":
        X = rng.uniform(size=(400, 2))
        # Curator estimators take tcm users only (trust_group=None: everyone is tcm).
        trust = None if data == "curator" else np.where(rng.random(400) < 0.5, "tcm", "lm")
    else:
        X, trust = _blender_data(rng)
    ids = np.arange(X.shape[0])
    ledger = PrivacyLedger(default_budget=(200.0, 1e-3))
    search = PrivateGridSearchCV(make(ledger), grid, selection="exponential", cv=3,
                                 random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cost = search_cost(search, X, trust_group=trust, user_id=ids)
        search.fit(X, trust_group=trust, user_id=ids)
    assert search.best_params_ in list(search.cv_results_["params"])
    assert search.best_estimator_.ledger is ledger
    assert search.selection_ == "exponential"
    np.testing.assert_allclose(ledger.spent(ids), cost, rtol=1e-12)


def test_kmeans_selection_finds_the_number_of_clusters_of_separated_data():
    rng = np.random.default_rng(5)
    centres = np.array([[0.15, 0.15], [0.85, 0.2], [0.5, 0.85]])
    X = np.clip(centres[rng.integers(0, 3, 3000)] + rng.normal(0, 0.04, (3000, 2)), 0, 1)
    trust = np.where(rng.random(3000) < 0.5, "tcm", "lm")
    estimator = HybridKMeans(bounds=(0, 1), epsilon=4.0, n_iter=4, random_state=0)
    search = PrivateGridSearchCV(estimator, {"n_clusters": [1, 3]}, cv=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, trust_group=trust)
    # The utilities differ by about 1500 tcm users x 0.1 (the drop of WCSS per user)
    # against a sensitivity of 2: the chance of choosing 1 cluster is about exp(-35).
    assert search.best_params_ == {"n_clusters": 3}


def test_lm_users_are_never_scored_or_charged_for_the_selection(users):
    X, trust, _, ids = users
    ledger = PrivacyLedger(default_budget=100.0)
    search = _mean_search(ledger, {"strategy": ["pwh"]}, refit=False, selection_epsilon=0.25)
    cost = search_cost(search, X, trust_group=trust, user_id=ids)
    np.testing.assert_allclose(cost, 3.0 + np.where(trust == "tcm", 0.25, 0.0))


def test_private_selection_needs_bounds(users):
    X, trust, _, ids = users
    search = PrivateGridSearchCV(HybridKMeans(), {"n_clusters": [2, 3]})
    with pytest.raises(ValueError, match="bounds=None"):
        search.fit(X, trust_group=trust)


# -- selection without spending ----------------------------------------------------------


def test_expected_mse_selection_fits_only_the_chosen_candidate_once(users):
    X, trust, levels, ids = users
    ledger = PrivacyLedger(default_budget=100.0)
    grid = {"strategy": ["kvh", "pwh", "tcm_only"]}
    estimator = HybridMeanEstimator(bounds=(0, 1), variance=0.03, ledger=ledger, random_state=0)
    search = PrivateGridSearchCV(estimator, grid)  # "auto": a mean estimator ranks publicly
    metadata = {"trust_group": trust, "epsilon": levels, "user_id": ids}
    cost = search_cost(search, X, **metadata)
    search.fit(X, **metadata)
    assert search.selection_ == "expected_mse" and search.n_splits_ == 0
    # Each candidate's figure is the one its fit on the real data reports.
    figures = [np.mean(HybridMeanEstimator(strategy=s, bounds=(0, 1), variance=0.03,
                                           random_state=0)
                       .fit(X, trust_group=trust, epsilon=levels).expected_mse_)
               for s in grid["strategy"]]
    np.testing.assert_allclose(search.cv_results_["expected_mse"], figures, rtol=1e-9)
    assert search.best_index_ == int(np.argmin(figures))
    # One release: the chosen candidate's fit, drawing on the reservation.
    reservation, _, only = ledger.history()
    np.testing.assert_allclose(ledger.spent(ids), cost)
    np.testing.assert_allclose(cost, levels)
    assert reservation["description"].startswith("reservation")
    assert only["kind"] == "release" and only["params"]["strategy"] == search.best_params_["strategy"]


class _DataDependentError(HybridMeanEstimator):
    """An estimator whose expected_mse_ reads the data (as a private variance would)."""

    def fit(self, X, y=None, **metadata):
        super().fit(X, y, **metadata)
        self.expected_mse_ = self.expected_mse_ + np.var(np.asarray(X))
        return self


def test_an_expected_error_that_reads_the_data_is_refused_or_replaced(users):
    X, trust, _, ids = users
    # A public variance: the search would rank at it, if the figure did not read the data.
    estimator = _DataDependentError(bounds=(0, 1), variance=0.05, random_state=0)
    grid = {"strategy": ["kvh", "pwh"]}
    with pytest.raises(ValueError, match="depends on the data"):
        PrivateGridSearchCV(estimator, grid, selection="expected_mse").fit(
            X, trust_group=trust)
    search = PrivateGridSearchCV(estimator, grid, cv=3, random_state=0).fit(X, trust_group=trust)
    assert search.selection_ == "exponential"


# -- warnings ----------------------------------------------------------------------------


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_4_by_5_search_warns_at_most_once_of_each_kind(users, n_jobs):
    X, _, _, ids = users
    estimator = HybridMeanEstimator(bounds=(0, 1), random_state=0)
    search = PrivateGridSearchCV(estimator, {"epsilon": [0.5, 2.0, 3.0, 4.0]}, cv=5,
                                 selection="exponential", n_jobs=n_jobs, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # No trust_group (EmptyGroupWarning) and epsilon metadata over a grid of the
        # epsilon parameter (MetadataOverrideWarning): every fit warns both, in the workers.
        search.fit(X, epsilon=np.full(N_USERS, 0.5), user_id=ids)
    kinds = [warning.category for warning in caught]
    assert set(kinds) == {EmptyGroupWarning, MetadataOverrideWarning}
    assert len(kinds) == 2
    assert "21 of its fits warned" in str(caught[0].message)  # 20 fold fits and the refit


def test_a_secure_search_without_a_ledger_says_once_what_it_spent(users, monkeypatch):
    X, trust, _, _ = users
    monkeypatch.setattr("skhybrid.accounting._costs._UNACCOUNTED", {"warned": False})
    estimator = HybridKMeans(n_clusters=2, bounds=(0, 1))
    search = PrivateGridSearchCV(estimator, {"n_iter": [2, 3]}, cv=3)
    # tcm users: 2 candidates x 2 training folds, the selection and the refit.
    with pytest.warns(UnaccountedReleaseWarning, match="spent up to epsilon 6 of each"):
        search.fit(X, trust_group=trust)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnaccountedReleaseWarning)
        search.fit(X, trust_group=trust)
        HybridKMeans(n_clusters=2, bounds=(0, 1)).fit(X, trust_group=trust)


def test_workers_draw_on_the_reservation_of_an_in_memory_ledger(users):
    X, trust, levels, ids = users
    ledger = PrivacyLedger(default_budget=100.0)  # not picklable: the clones carry allotments
    search = _mean_search(ledger, {"strategy": ["kvh", "pwh"]}, n_jobs=2)
    metadata = {"trust_group": trust, "epsilon": levels, "user_id": ids}
    cost = search_cost(search, X, **metadata)
    search.fit(X, **metadata)
    np.testing.assert_allclose(ledger.spent(ids), cost, rtol=1e-13)
    assert [row["kind"] for row in ledger.history()] == ["reservation", "refund", "release"]
