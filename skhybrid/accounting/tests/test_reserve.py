"""PrivacyLedger.reserve: any search refused up front, charges inside drawing on it."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold

from skhybrid import HybridMeanEstimator
from skhybrid.accounting import PrivacyLedger
from skhybrid.exceptions import BudgetExceededError, PrivacyLeakWarning
from skhybrid.model_selection import search_cost

N = 120


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(N, 1))
    trust = np.where(np.arange(N) % 4 == 0, "tcm", "lm")
    ids = np.array([f"u{i}" for i in range(N)])
    return X, trust, ids


def _grid_search(ledger):
    estimator = HybridMeanEstimator(bounds=(0, 1), ledger=ledger, random_state=0)
    return GridSearchCV(estimator, {"strategy": ["kvh", "pwh", "tcm_only"]}, cv=KFold(3))


def test_an_unaffordable_scikit_learn_search_inside_a_reservation_charges_nobody(data):
    X, trust, ids = data
    ledger = PrivacyLedger(default_budget=6.0)
    search = _grid_search(ledger)
    cost = search_cost(search, X, trust_group=trust, user_id=ids)
    # 3 candidates x 2 training folds each + the refit; lm users not in tcm_only's fits.
    assert cost.max() == pytest.approx(7.0) and cost.min() == pytest.approx(5.0)
    assert cost.route == "scikit-learn" and "GridSearchCV" in cost.reason
    with pytest.raises(BudgetExceededError):
        with ledger.reserve(cost):
            search.fit(X, trust_group=trust, user_id=ids)
    assert ledger.history() == []
    assert not ledger.spent(ids).any()
    assert not hasattr(search, "best_estimator_")  # refused before the first fit


def test_charges_inside_a_reservation_draw_on_it_and_the_rest_is_refunded(data):
    X, trust, ids = data
    ledger = PrivacyLedger(default_budget=10.0)
    search = _grid_search(ledger)
    cost = search_cost(search, X, trust_group=trust, user_id=ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with ledger.reserve(cost + 1.0) as reservation:
            search.fit(X, trust_group=trust, user_id=ids)
            # Inside, every user has spent the reservation: the fits drew on it.
            np.testing.assert_allclose(ledger.spent(ids), cost + 1.0, rtol=1e-12)
            np.testing.assert_allclose(reservation.epsilon_left, 1.0, rtol=1e-12)
    np.testing.assert_allclose(ledger.spent(ids), cost, rtol=1e-12)
    kinds = [row["kind"] for row in ledger.history()]
    assert kinds[0] == "reservation" and kinds[-1] == "refund"
    assert kinds.count("release") == 3 * 3 + 1  # each fit a row of its own


def test_a_release_beyond_the_reservation_is_charged_on_the_budget_or_refused(data):
    X, trust, ids = data
    ledger = PrivacyLedger(default_budget=1.5)
    estimator = HybridMeanEstimator(bounds=(0, 1), ledger=ledger, random_state=0)
    with ledger.reserve(np.full(N, 1.0), ids):
        estimator.fit(X, trust_group=trust, user_id=ids)  # the whole reservation
        with pytest.raises(BudgetExceededError):
            estimator.fit(X, trust_group=trust, user_id=ids)  # 1.0 more, 0.5 left
    np.testing.assert_allclose(ledger.spent(ids), 1.0)


def test_one_reservation_at_a_time_and_ids_needed(data):
    _, _, ids = data
    ledger = PrivacyLedger(default_budget=10.0)
    with pytest.raises(ValueError, match="user_ids"):
        ledger.reserve(np.ones(N))
    with ledger.reserve(np.ones(N), ids):
        with pytest.raises(ValueError, match="already has an open reservation"):
            ledger.reserve(np.ones(N), ids)
    assert not ledger.spent(ids).any()


@pytest.mark.parametrize("make_id", [np.str_, np.int64, np.int32])
def test_numpy_scalars_are_user_ids_everywhere(make_id):
    ledger = PrivacyLedger(default_budget=5.0)
    ids = [make_id("7" if make_id is np.str_ else 7), make_id("8" if make_id is np.str_ else 8)]
    ledger.charge(ids, 1.0)
    assert ledger.spent(ids[0])[0] == 1.0
    assert ledger.remaining(ids[0])[0] == 4.0
    assert len(ledger.history(user_id=ids[0])) == 1
    with ledger.reserve(1.0, ids[:1]):
        ledger.charge(ids[:1], 0.5)
    assert ledger.spent(ids[0])[0] == 1.5
