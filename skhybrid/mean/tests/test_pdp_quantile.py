"""PDPQuantileEstimator: Jorgensen et al.'s PE mechanism for quantiles (Ferrando's Figure 2 baseline)."""

import itertools
import pickle

import numpy as np
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

import skhybrid.mechanisms._exponential as exponential_module
from skhybrid import MixedQuantileEstimator, PDPQuantileEstimator
from skhybrid.accounting import PrivacyLedger
from skhybrid.audit import audit_mechanism, estimator_release
from skhybrid.mechanisms._exponential import personalized_quantile_costs


def _brute_force_costs(epsilon_by_value, quantile):
    """d(D, r) from its definition: the cheapest set S of users to change so that the
    number of values below r lands in [floor(q n), ceil(q n)]; on interval j the
    unchanged users below r are those of S's complement among the first j, and the
    changed ones can be put on either side."""
    n = len(epsilon_by_value)
    # q n exactly, in fractions: 0.3 * 10 must be 3, not 3.0000000000000004
    from fractions import Fraction

    target = Fraction(quantile).limit_denominator(10**6) * n
    low, high = int(np.floor(target)), int(np.ceil(target))
    costs = np.full(n + 1, np.inf)
    for j in range(n + 1):
        for size in range(n + 1):
            for moved in itertools.combinations(range(n), size):
                kept_below = sum(1 for i in range(j) if i not in moved)
                if kept_below <= high and kept_below + size >= low:
                    costs[j] = min(costs[j], sum(epsilon_by_value[i] for i in moved))
    return costs


@pytest.mark.parametrize("quantile, n", [(0.0, 7), (0.3, 7), (0.3, 10), (0.5, 7), (0.7, 10),
                                         (0.75, 8), (1.0, 7)])
@pytest.mark.parametrize("seed", range(4))
def test_interval_costs_are_the_cheapest_changes_of_the_definition(quantile, n, seed):
    rng = np.random.default_rng(seed)
    epsilon = rng.choice([0.1, 0.5, 2.0, np.inf], size=n, p=[0.3, 0.3, 0.3, 0.1])
    np.testing.assert_allclose(
        personalized_quantile_costs(epsilon, quantile), _brute_force_costs(epsilon, quantile),
        rtol=1e-12,
    )


def test_one_epsilon_reduces_to_smiths_exponential_mechanism():
    """With epsilon for all, d = epsilon |j - q n| (q n an integer): Smith's utility."""
    costs = personalized_quantile_costs(np.full(10, 0.7), 0.4)
    np.testing.assert_allclose(costs, 0.7 * np.abs(np.arange(11) - 4), rtol=1e-12)


@pytest.mark.parametrize("quantile, n, same", [
    (0.4, 10, True), (0.5, 11, True), (0.25, 10, True), (0.37, 10, False), (0.9, 7, False),
])
def test_one_epsilon_is_smiths_mechanism_exactly_when_q_n_is_whole_or_half(quantile, n, same):
    """The docstring's claim: PE's costs equal Smith's -utility epsilon |j - q n| up to
    one constant (the same distribution) only when q n is a whole or half number."""
    costs = personalized_quantile_costs(np.full(n, 0.7), quantile)
    smith = 0.7 * np.abs(np.arange(n + 1) - quantile * n)
    shift = smith - costs
    assert np.allclose(shift, shift[0], rtol=0, atol=1e-12) is same


def test_the_release_is_accurate_and_inside_the_bounds():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5001, 1))
    epsilon = np.repeat([0.5, 5.0], [2500, 2501])
    est = PDPQuantileEstimator(bounds=(-4, 4), random_state=0).fit(X, epsilon=epsilon)
    assert abs(est.quantile_[0] - np.median(X)) < 0.05
    q90 = PDPQuantileEstimator(0.9, bounds=(-4, 4), random_state=0).fit(X, epsilon=epsilon)
    assert abs(q90.quantile_[0] - np.quantile(X, 0.9)) < 0.1


def test_moving_private_users_is_cheap_and_moving_the_others_expensive():
    """60 users near 0 and 140 near 1, so the median is near 1. Moving 40 of the 140 to
    put it in the gap costs 40 * their epsilon: 2 at epsilon 0.05 (the gap, of length
    about 1, then dominates the tiny intervals near 1), 200 at epsilon 5 (never)."""
    X = (np.repeat([0.0, 1.0], [60, 140]) + np.linspace(0, 1e-3, 200)).reshape(-1, 1)

    def estimates(epsilon_near_1):
        epsilon = np.repeat([1.0, epsilon_near_1], [60, 140])
        return np.array([
            PDPQuantileEstimator(bounds=(0, 1.001), random_state=seed)
            .fit(X, epsilon=epsilon).quantile_[0] for seed in range(30)
        ])

    assert np.mean(estimates(0.05) < 0.99) > 0.8
    assert np.all(estimates(5.0) > 0.99)


def test_public_users_cannot_be_moved():
    # Public values at 0.2 (3) and 0.8 (2); private ones at 0.9: the median can only be
    # where at least ... the three public values below it leave room: never above 0.8.
    X = np.array([0.2, 0.2, 0.2, 0.8, 0.8, 0.9, 0.9]).reshape(-1, 1)
    epsilon = np.array([np.inf] * 5 + [0.01, 0.01])
    for seed in range(20):
        est = PDPQuantileEstimator(bounds=(0, 1), random_state=seed).fit(X, epsilon=epsilon)
        assert 0.2 <= est.quantile_[0] <= 0.9


def test_all_public_tied_values_return_the_quantile_value():
    est = PDPQuantileEstimator(epsilon=np.inf, bounds=(0, 1), random_state=0)
    assert est.fit(np.full((5, 1), 0.4)).quantile_[0] == 0.4


def test_the_budget_is_split_evenly_over_the_features(monkeypatch):
    seen = []
    original = exponential_module.personalized_quantile_costs

    def recording(epsilon_by_value, quantile):
        seen.append(np.unique(epsilon_by_value))
        return original(epsilon_by_value, quantile)

    monkeypatch.setattr(exponential_module, "personalized_quantile_costs", recording)
    X = np.random.default_rng(1).uniform(size=(40, 2))
    PDPQuantileEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=np.repeat([0.4, 1.0], 20))
    assert len(seen) == 2
    for levels in seen:
        np.testing.assert_allclose(levels, [0.2, 0.5])


def test_lm_users_and_bad_input_are_refused():
    X = np.linspace(0, 1, 10).reshape(-1, 1)
    with pytest.raises(ValueError, match="trusted-curator"):
        PDPQuantileEstimator(bounds=(0, 1)).fit(X, trust_group=["lm"] * 10)
    with pytest.raises(ValueError, match="epsilon"):
        PDPQuantileEstimator(bounds=(0, 1)).fit(X, epsilon=[0.0] * 10)
    with pytest.raises(ValueError, match="quantile"):
        PDPQuantileEstimator(quantile=1.5, bounds=(0, 1)).fit(X)


def test_cross_validation_routes_epsilon_and_a_ledger_charges_each_user_their_epsilon():
    X = np.random.default_rng(2).uniform(size=(60, 1))
    epsilon = np.repeat([0.5, 2.0], 30)
    result = cross_validate(PDPQuantileEstimator(bounds=(0, 1), random_state=0), X,
                            cv=KFold(3), params={"epsilon": epsilon})
    assert np.all(result["test_score"] <= 0)
    ledger = PrivacyLedger(default_budget=10.0)
    est = PDPQuantileEstimator(bounds=(0, 1), random_state=0, ledger=ledger)
    est.fit(X, epsilon=epsilon, user_id=np.arange(60))
    np.testing.assert_allclose(ledger.spent(np.arange(60)), epsilon)
    assert clone(est).ledger is ledger


@pytest.mark.parametrize("routing", [False, True])
def test_grid_search_over_the_quantile_with_metadata_routing_on_and_off(routing):
    X = np.random.default_rng(3).uniform(size=(300, 1))
    epsilon = np.repeat([0.5, 2.0], 150)
    est = PDPQuantileEstimator(bounds=(0, 1), random_state=0)
    with config_context(enable_metadata_routing=routing):
        if routing:
            est = est.set_fit_request(epsilon=True, trust_group=True)
        search = GridSearchCV(est, {"quantile": [0.25, 0.5, 0.75]}, cv=KFold(3))
        search.fit(X, epsilon=epsilon, trust_group=["tcm"] * 300)
    assert len(search.cv_results_["params"]) == 3


def test_clone_pickle_and_pandas_input():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"salary": np.random.default_rng(4).uniform(size=200)})
    epsilon = pd.Series(np.repeat([0.5, 2.0], 100))
    est = PDPQuantileEstimator(0.3, bounds=(0, 1), random_state=0).fit(frame, epsilon=epsilon)
    assert est.feature_names_in_.tolist() == ["salary"]
    assert clone(est).get_params() == est.get_params()
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.quantile_, est.quantile_)


# -- privacy -----------------------------------------------------------------------------------

N_FITS = 20_000


def _audit(seed, replaced=0, audited=1.0):
    """Ten users at epsilon 1, ten at 10 and ten public on [0, 1]; the neighbour moves
    user ``replaced`` to 1e6 (clipped to 1)."""
    X = np.tile(np.linspace(0.0, 1.0, 10), 3).reshape(-1, 1)
    X_prime = X.copy()
    X_prime[replaced, 0] = 1e6
    epsilon = np.repeat([1.0, 10.0, np.inf], 10)
    estimator = PDPQuantileEstimator(bounds=(0.0, 1.0))
    return audit_mechanism(
        estimator_release(estimator, X, attribute="quantile_", epsilon=epsilon),
        estimator_release(estimator, X_prime, attribute="quantile_", epsilon=epsilon),
        audited, n_samples=N_FITS, n_bins=20, random_state=seed,
    )


@pytest.mark.slow
def test_a_replaced_user_is_protected_at_their_own_epsilon():
    result = _audit(seed=51)
    assert result.passed, str(result)


@pytest.mark.slow
def test_audit_fails_when_the_costs_are_tripled(monkeypatch):
    # Tripled costs are the PE mechanism at 3 epsilon. As for the exponential mechanism
    # on a median, the actual loss of these neighbours is about half the bound, so a
    # factor 3 is needed for a leak the audit can see.
    original = exponential_module.personalized_quantile_costs
    monkeypatch.setattr(exponential_module, "personalized_quantile_costs",
                        lambda epsilon, quantile: original(epsilon, quantile) * 3)
    result = _audit(seed=52)
    assert not result.passed, str(result)


@pytest.mark.slow
def test_figure_2_pe_and_mixed_median_are_both_accurate_at_n_1001():
    """Ferrando et al., Figure 2 (eps_H 0.1, eps_L 1.0, half the users at each): both
    medians are within 0.1 of the population median in RMSE over 200 trials."""
    rng = np.random.default_rng(53)
    epsilon = np.repeat([0.1, 1.0], [500, 501])
    errors = {"pe": [], "mixed": []}
    for _ in range(200):
        X = rng.normal(size=(1001, 1))
        seed = int(rng.integers(2**31))
        errors["pe"].append(PDPQuantileEstimator(bounds=(-4, 4), random_state=seed)
                            .fit(X, epsilon=epsilon).quantile_[0])
        errors["mixed"].append(MixedQuantileEstimator(bounds=(-4, 4), variance=1.0,
                                                      random_state=seed)
                               .fit(X, epsilon=epsilon).quantile_[0])
    for name, estimates in errors.items():
        assert np.sqrt(np.mean(np.square(estimates))) < 0.1, name
