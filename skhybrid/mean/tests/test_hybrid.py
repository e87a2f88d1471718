"""HybridMeanEstimator: the paper's definitions, its edge cases and scikit-learn integration."""

import pickle
import zlib

import numpy as np
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import Pipeline

from skhybrid import ADPMEstimator, HybridMeanEstimator
from skhybrid.exceptions import PrivacyLeakWarning
from skhybrid.mean import EmptyGroupWarning

STRATEGIES = ["kvh", "pwh", "naive", "tcm_only", "full_lm", "lm_only"]


def _population(n=2000, tcm_fraction=0.1, seed=0, n_features=1):
    rng = np.random.default_rng(seed)
    X = rng.beta(2.0, 5.0, size=(n, n_features))
    n_tcm = int(round(tcm_fraction * n))
    trust = np.array(["tcm"] * n_tcm + ["lm"] * (n - n_tcm))
    return X, trust


# -- the paper's definitions ---------------------------------------------------------------


def test_kvh_weight_matches_definition_4_1_with_the_mechanisms_noise_variances():
    X, trust = _population()
    est = HybridMeanEstimator("kvh", epsilon=0.7, bounds=(0, 1), variance=0.03, random_state=0)
    est.fit(X, trust_group=trust)
    n, c = 2000, 0.1
    # Laplace: tcm mean has sensitivity 1 / (c n), a report has sensitivity 1.
    s_T2 = 2 * (1 / (c * n * 0.7)) ** 2
    s_L2 = 2 * (1 / 0.7) ** 2
    assert est.noise_variance_tcm_ == pytest.approx(s_T2, rel=1e-9)
    assert est.noise_variance_lm_ == pytest.approx(s_L2, rel=1e-9)
    w_star = c * (0.03 + s_L2) / (0.03 + c * (n * s_T2 * (1 - c) + s_L2))
    assert est.weight_[0] == pytest.approx(w_star, rel=1e-9)


def test_pwh_and_naive_weights_match_definition_5_3_and_section_5():
    X, trust = _population()
    pwh = HybridMeanEstimator("pwh", epsilon=2.0, bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
    s_T2, s_L2 = pwh.noise_variance_tcm_, pwh.noise_variance_lm_
    assert pwh.weight_[0] == pytest.approx(s_L2 / (s_L2 + 0.9 * 2000 * s_T2), rel=1e-9)
    naive = HybridMeanEstimator("naive", bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
    assert naive.weight_[0] == pytest.approx(0.1)


def test_estimate_is_the_weighted_combination_of_the_group_estimates():
    X, trust = _population()
    kwargs = {"epsilon": 1.0, "bounds": (0, 1), "random_state": 5}
    kvh = HybridMeanEstimator("kvh", **kwargs).fit(X, trust_group=trust)
    # With a very large epsilon the noise vanishes: the estimate is w mean_T + (1 - w) mean_L.
    exact = HybridMeanEstimator("kvh", epsilon=1e9, bounds=(0, 1), random_state=5).fit(X, trust_group=trust)
    w = exact.weight_[0]
    expected = w * X[:200].mean() + (1 - w) * X[200:].mean()
    assert exact.mean_[0] == pytest.approx(expected, abs=1e-6)
    assert 0.0 <= kvh.weight_[0] <= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_expected_mse_matches_monte_carlo_within_4_standard_errors(strategy, mechanism):
    n, n_trials = 400, 5000
    # A seed per case that is the same in every process (str hashes are salted per
    # process, which made a rare failure impossible to reproduce).
    rng = np.random.default_rng(zlib.crc32(f"{strategy}-{mechanism}".encode()))
    delta = 1e-5 if mechanism == "gaussian" else 0.0
    est = HybridMeanEstimator(
        strategy, epsilon=2.0, delta=delta, mechanism=mechanism, bounds=(0, 1),
        variance=1 / 12,
    )
    trust = np.array(["tcm"] * 40 + ["lm"] * 360)
    errors = np.empty(n_trials)
    for trial in range(n_trials):
        X = rng.uniform(0, 1, size=(n, 1))  # fresh data each trial, variance 1/12
        est.set_params(random_state=int(rng.integers(2**31))).fit(X, trust_group=trust)
        errors[trial] = (est.mean_[0] - X.mean()) ** 2
    standard_error = errors.std(ddof=1) / np.sqrt(n_trials)
    assert abs(errors.mean() - est.expected_mse_[0]) < 4 * standard_error


def test_worst_case_variance_bounds_the_expected_mse():
    X, trust = _population()
    known = HybridMeanEstimator("pwh", bounds=(0, 1), variance=0.01, random_state=0).fit(X, trust_group=trust)
    worst = HybridMeanEstimator("pwh", bounds=(0, 1), variance=None,
                                random_state=0).fit(X, trust_group=trust)
    assert worst.expected_mse_[0] > known.expected_mse_[0]


def test_hybrid_beats_both_baselines_in_expected_error():
    X, trust = _population(n=100_000, tcm_fraction=0.05)
    mse = {
        s: HybridMeanEstimator(s, bounds=(0, 1), variance=0.0255, random_state=0)
        .fit(X, trust_group=trust).expected_mse_[0]
        for s in ("kvh", "tcm_only", "full_lm")
    }
    assert mse["kvh"] < min(mse["tcm_only"], mse["full_lm"])


def test_gaussian_fit_reports_privacy_amplification_below_the_nominal_epsilon():
    X, trust = _population(n=5000)
    est = HybridMeanEstimator(mechanism="gaussian", epsilon=0.5, delta=1e-6, bounds=(0, 1), random_state=0)
    est.fit(X, trust_group=trust)
    assert set(est.amplified_epsilon_) == {"tcm", "lm"}
    assert 0 < est.amplified_epsilon_["tcm"] <= 0.5
    assert 0 < est.amplified_epsilon_["lm"] < 0.5
    laplace = HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
    assert laplace.amplified_epsilon_ is None


# -- several features, heterogeneous epsilon, local reports -------------------------------


def test_several_features_split_the_budget_evenly_noise_in_proportion_to_each_range():
    X, trust = _population(n_features=3)
    est = HybridMeanEstimator("pwh", epsilon=1.0, bounds=(0.0, [1.0, 2.0, 1.0]), variance=None,
                              random_state=0)
    est.fit(X, trust_group=trust)
    assert est.mean_.shape == est.weight_.shape == est.expected_mse_.shape == (3,)
    # epsilon / 3 per feature: a report's scales are 3 * range_j / epsilon.
    np.testing.assert_allclose(est.noise_variance_lm_, 2 * (3.0 * np.array([1.0, 2.0, 1.0]))**2,
                               rtol=1e-9)
    tcm = 200  # _population's tcm users
    np.testing.assert_allclose(est.noise_variance_tcm_,
                               2 * (3.0 * np.array([1.0, 2.0, 1.0]) / tcm) ** 2, rtol=1e-6)


def test_each_group_uses_its_own_epsilon():
    X, trust = _population()
    epsilon = np.where(trust == "tcm", 0.5, 2.0)
    est = HybridMeanEstimator("pwh", bounds=(0, 1), variance=None,
                              random_state=0).fit(X, trust_group=trust, epsilon=epsilon)
    assert est.noise_variance_tcm_ == pytest.approx(2 * (1 / (200 * 0.5)) ** 2, rel=1e-9)
    assert est.noise_variance_lm_ == pytest.approx(2 * (1 / 2.0) ** 2, rel=1e-9)


def test_epsilon_varying_within_a_group_points_to_adpm():
    X, trust = _population()
    epsilon = np.linspace(0.5, 1.5, X.shape[0])
    with pytest.raises(ValueError, match="ADPMEstimator"):
        HybridMeanEstimator(bounds=(0, 1)).fit(X, trust_group=trust, epsilon=epsilon)


def test_local_reports_are_used_as_sent_and_not_clipped():
    from skhybrid.mechanisms import LocalLaplaceRandomizer

    X, trust = _population(n=3000)
    lm = trust == "lm"
    reports = X.copy()
    reports[lm] = LocalLaplaceRandomizer(bounds=(0, 1), epsilon=1.0).privatize(X[lm], random_state=1)
    assert reports[lm].max() > 1  # reports leave the bounds; clipping them would bias the mean
    est = HybridMeanEstimator("lm_only", bounds=(0, 1), local_reports=True, random_state=0)
    est.fit(reports, trust_group=trust)
    assert est.mean_[0] == pytest.approx(reports[lm].mean())


# -- edge cases -----------------------------------------------------------------------------


def test_no_lm_users_gives_the_tcm_estimate_without_sampling_error():
    X, _ = _population(n=500)
    with pytest.warns(EmptyGroupWarning, match="without trust_group"):
        est = HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X)
    assert est.n_lm_ == 0 and est.weight_[0] == 1.0
    assert est.expected_mse_[0] == pytest.approx(est.noise_variance_tcm_)
    with pytest.warns(EmptyGroupWarning, match="every user is tcm"):
        HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=["tcm"] * 500)


def test_no_tcm_users_falls_back_to_full_lm_with_a_warning():
    X, _ = _population(n=500)
    with pytest.warns(EmptyGroupWarning, match="every user is lm"):
        est = HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=["lm"] * 500)
    assert est.weight_[0] == 0.0
    assert est.expected_mse_[0] == pytest.approx(est.noise_variance_lm_ / 500)


@pytest.mark.parametrize("strategy, group", [("tcm_only", "tcm"), ("lm_only", "lm")])
def test_baseline_that_needs_an_empty_group_raises(strategy, group):
    X, _ = _population(n=50)
    other = "lm" if group == "tcm" else "tcm"
    with pytest.raises(ValueError, match=f"at least one {group} user"):
        HybridMeanEstimator(strategy, bounds=(0, 1)).fit(X, trust_group=[other] * 50)


def test_one_user_is_supported():
    with pytest.warns(EmptyGroupWarning, match="every user is tcm"):  # one user: one group
        est = HybridMeanEstimator(bounds=(0, 1), random_state=0).fit([[0.3]],
                                                                     trust_group=["tcm"])
    assert est.mean_.shape == (1,) and np.isfinite(est.mean_[0])


@pytest.mark.parametrize(
    "params, message",
    [
        ({"mechanism": "gaussian"}, "delta in"),
        ({"delta": 1e-5}, "only used by mechanism='gaussian'"),
        ({"variance": [1.0, 2.0], "bounds": (0, 1)}, "one entry per feature"),
        ({"variance": 5.0, "bounds": (0, 1)}, "variance must be in"),
        ({"bounds": (1.0, 0.0)}, "lower < upper"),
    ],
)
def test_bad_parameters_raise_clear_errors(params, message):
    X, trust = _population(n=100)
    with pytest.raises(ValueError, match=message):
        HybridMeanEstimator(**params).fit(X, trust_group=trust)


def test_nan_in_X_raises_and_inputs_are_not_modified():
    X, trust = _population(n=100)
    X[0, 0] = 7.0  # outside the bounds: clipped in a copy, never in X
    before, trust_before = X.copy(), trust.copy()
    HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
    np.testing.assert_array_equal(X, before)
    np.testing.assert_array_equal(trust, trust_before)
    X[1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        HybridMeanEstimator(bounds=(0, 1)).fit(X, trust_group=trust)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_finiteness_tested_in_the_statistics_pass_refuses_as_validation_does(
        monkeypatch, strategy, bad):
    """With given bounds, a float64 array's finiteness is not tested by validation's own
    pass but by the pass that codes the values: every value of every row (a tcm_only fit
    never reads an lm user's value, yet one NaN there is refused), before anything is
    drawn or charged, with validation's own message."""
    from skhybrid import PrivacyLedger
    from skhybrid import base
    from skhybrid.base import validate_values

    calls = []
    original = base.finite_float_rows
    monkeypatch.setattr(base, "finite_float_rows",
                        lambda X: calls.append(X.shape) or original(X))
    X, trust = _population(n=3000)
    user_id = np.arange(X.shape[0])
    ledger = PrivacyLedger(default_budget=10.0)
    fitted = HybridMeanEstimator(strategy, bounds=(0, 1), ledger=ledger, random_state=0)
    fitted.fit(X, trust_group=trust, user_id=user_id)
    spent = ledger.spent(user_id)
    assert spent.max() > 0
    assert calls == ([] if strategy != "full_lm" else [X.shape])  # no pass of its own
    for row in (0, 2999):  # a tcm user's value, an lm user's
        broken = X.copy()
        broken[row, 0] = bad
        with pytest.raises(ValueError) as expected:
            validate_values(HybridMeanEstimator(), broken, reset=True)
        estimator = HybridMeanEstimator(strategy, bounds=(0, 1), ledger=ledger)
        with pytest.raises(ValueError) as raised:
            estimator.fit(broken, trust_group=trust, user_id=user_id)
        assert str(raised.value) == str(expected.value)
        np.testing.assert_array_equal(ledger.spent(user_id), spent)  # nobody charged
        assert not hasattr(estimator, "mean_")


def test_missing_bounds_warn_about_the_privacy_leak():
    X, trust = _population(n=100)
    with pytest.warns(PrivacyLeakWarning):
        HybridMeanEstimator(random_state=0).fit(X, trust_group=trust)


def test_default_randomness_differs_between_fits_and_seeds_reproduce():
    X, trust = _population(n=100)
    unseeded = [HybridMeanEstimator(bounds=(0, 1)).fit(X, trust_group=trust).mean_[0] for _ in range(2)]
    assert unseeded[0] != unseeded[1]
    seeded = [HybridMeanEstimator(bounds=(0, 1), random_state=3).fit(X, trust_group=trust).mean_[0] for _ in range(2)]
    assert seeded[0] == seeded[1]
    generator = np.random.default_rng(2**40)
    from_generator = HybridMeanEstimator(bounds=(0, 1), random_state=generator).fit(X, trust_group=trust)
    assert np.isfinite(from_generator.mean_[0])


# -- scikit-learn integration ----------------------------------------------------------------


def test_pipeline_with_a_column_transformer_routes_metadata_by_step_name():
    pd = pytest.importorskip("pandas")
    X, trust = _population(n=500)
    frame = pd.DataFrame({"salary": X[:, 0], "age": np.arange(500)})
    pipe = Pipeline([
        ("pick", ColumnTransformer([("value", "passthrough", ["salary"])])),
        ("mean", HybridMeanEstimator(bounds=(0, 1), random_state=0)),
    ])
    pipe.fit(frame, mean__trust_group=trust)
    direct = HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
    np.testing.assert_array_equal(pipe[-1].mean_, direct.mean_)
    assert pipe.predict(frame).shape == (500,)


def test_pandas_input_records_feature_names():
    pd = pytest.importorskip("pandas")
    X, trust = _population(n=200, n_features=2)
    frame = pd.DataFrame(X, columns=["a", "b"])
    est = HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(frame, trust_group=pd.Series(trust))
    assert est.feature_names_in_.tolist() == ["a", "b"]
    assert est.score(frame) <= 0


def test_cross_validate_passes_metadata_with_routing_off():
    X, trust = _population(n=1000)
    result = cross_validate(
        HybridMeanEstimator(bounds=(0, 1), random_state=0), X, cv=KFold(3, shuffle=True, random_state=0),
        params={"trust_group": trust},
    )
    assert np.all(result["test_score"] <= 0)


@pytest.mark.parametrize("routing", [False, True])
def test_grid_search_over_strategy_and_epsilon(routing):
    X, trust = _population(n=3000, tcm_fraction=0.2)
    epsilon = np.where(trust == "tcm", 1.0, 1.0)
    est = HybridMeanEstimator(bounds=(0, 1), random_state=0)
    grid = {"strategy": ["kvh", "pwh", "tcm_only", "full_lm"], "epsilon": [0.5, 4.0]}
    with config_context(enable_metadata_routing=routing):
        if routing:
            est = est.set_fit_request(trust_group=True)
        search = GridSearchCV(est, grid, cv=KFold(3, shuffle=True, random_state=0), error_score="raise")
        search.fit(X, trust_group=trust)
    assert len(search.cv_results_["params"]) == 8
    # A larger epsilon scores better on average over the strategies: Full-LM's local
    # noise at 0.5 (variance 8 / 2000) dwarfs every other term, so this cannot flip with
    # the seed, while the single best cell can.
    results = search.cv_results_
    scores = {eps: np.mean([score for params, score in zip(results["params"],
                                                           results["mean_test_score"])
                            if params["epsilon"] == eps]) for eps in (0.5, 4.0)}
    assert scores[4.0] > scores[0.5]
    with config_context(enable_metadata_routing=routing):
        if routing:
            est2 = HybridMeanEstimator(bounds=(0, 1), random_state=0).set_fit_request(
                trust_group=True, epsilon=True
            )
            cv = KFold(2, shuffle=True, random_state=0)
            result = cross_validate(est2, X, cv=cv, params={"trust_group": trust, "epsilon": epsilon})
            assert len(result["test_score"]) == 2


def test_clone_and_pickle_keep_parameters_and_fitted_state():
    X, trust = _population(n=300)
    est = HybridMeanEstimator("pwh", epsilon=0.3, bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
    assert clone(est).get_params() == est.get_params()
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.mean_, est.mean_)
    np.testing.assert_array_equal(restored.predict(X[:5]), est.predict(X[:5]))


@pytest.mark.parametrize("Estimator", [HybridMeanEstimator, ADPMEstimator])
def test_expected_mse_is_documented_as_an_expectation_over_the_assignment(Estimator):
    """A newcomer's one split can miss by several expected RMSEs: the docs must say that
    expected_mse_ averages over which users are in which group, not only the noise."""
    entry = Estimator.__doc__.split("expected_mse_ :")[1].split("\n    n_features_in_")[0]
    assert "expectation over the noise and over which" in " ".join(entry.split())
