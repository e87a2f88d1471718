"""compare_estimators: Monte Carlo errors, their standard errors, R and r, parallel runs."""

import joblib
import numpy as np
import pytest
from sklearn.base import BaseEstimator

from skhybrid import HybridMeanEstimator, MixedQuantileEstimator
from skhybrid.model_selection import ComparisonResult, compare_estimators

N_USERS = 2000
N_TCM = 200
BOUNDS = (0.0, 1.0)
UNIFORM_VARIANCE = 1.0 / 12.0


def _trust_groups(rng, n_users=N_USERS, n_tcm=N_TCM):
    trust = np.full(n_users, "lm", dtype="<U3")
    trust[rng.choice(n_users, size=n_tcm, replace=False)] = "tcm"
    return trust


def _fixed_data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(*BOUNDS, size=(N_USERS, 1)), _trust_groups(rng)


def _hybrid(strategy):
    return HybridMeanEstimator(strategy, bounds=BOUNDS, variance=UNIFORM_VARIANCE)


def _fresh_uniform_data(rng):
    """New i.i.d. data and a new random tcm group every trial: the setting of Lemma 3.13."""
    X = rng.uniform(*BOUNDS, size=(N_USERS, 1))
    return X, {"trust_group": _trust_groups(rng)}, X.mean(axis=0)


class _NoisyCentre(BaseEstimator):
    """An estimator that does not declare its estimate attribute (no _estimate_attribute)."""

    def __init__(self, scale=0.1, random_state=None):
        self.scale = scale
        self.random_state = random_state

    def fit(self, X, y=None):
        rng = np.random.default_rng(self.random_state)
        self.centre_ = np.mean(X, axis=0) + rng.normal(0.0, self.scale, np.shape(X)[1])
        return self


# -- the errors ---------------------------------------------------------------------------


def test_full_lm_error_on_fixed_data_matches_lemma_3_4():
    # Full-LM's estimate is the mean of all reports: its error against the empirical
    # mean is pure noise, so fixed data and expected_mse_ (Lemma 3.4) agree exactly.
    X, trust = _fixed_data()
    result = compare_estimators(
        {"full_lm": _hybrid("full_lm")}, X, fit_params={"trust_group": trust},
        n_trials=400, random_state=1,
    )
    mse, se, expected = (result.table[key][0] for key in ("mse", "mse_se", "expected_mse"))
    assert abs(mse - expected) < 4 * se


@pytest.mark.parametrize("strategy", ["kvh", "tcm_only", "pwh"])
def test_error_on_fresh_data_matches_expected_mse_of_lemmas(strategy):
    # expected_mse_ includes the sampling error of i.i.d. data (the tcm group's mean
    # differs from everyone's), so the honest comparison draws new data every trial.
    result = compare_estimators(
        {strategy: _hybrid(strategy)}, make_data=_fresh_uniform_data,
        n_trials=400, random_state=2,
    )
    mse, se, expected = (result.table[key][0] for key in ("mse", "mse_se", "expected_mse"))
    assert abs(mse - expected) < 4 * se


def test_fixed_data_keeps_the_sampling_error_of_the_tcm_group_fixed():
    # With fixed data, TCM-only's error is (tcm mean - mean)^2 plus noise in every trial.
    X, trust = _fixed_data()
    result = compare_estimators(
        {"tcm_only": _hybrid("tcm_only")}, X, fit_params={"trust_group": trust},
        n_trials=200, random_state=3,
    )
    estimator = _hybrid("tcm_only").fit(X, trust_group=trust)
    bias2 = (X[trust == "tcm"].mean() - X.mean()) ** 2
    mse, se = result.table["mse"][0], result.table["mse_se"][0]
    assert abs(mse - (bias2 + estimator.noise_variance_tcm_)) < 4 * se


def test_standard_error_is_the_sample_std_over_sqrt_n_trials():
    X, trust = _fixed_data()
    result = compare_estimators(
        {"kvh": _hybrid("kvh")}, X, fit_params={"trust_group": trust}, n_trials=50,
        random_state=4,
    )
    squared = result.squared_errors["kvh"]
    assert squared.shape == (50,)
    assert result.table["mse"][0] == pytest.approx(squared.mean())
    assert result.table["mse_se"][0] == pytest.approx(squared.std(ddof=1) / np.sqrt(50))
    assert result.table["rmse"][0] == pytest.approx(np.sqrt(squared.mean()))


def test_quantile_estimator_is_compared_with_the_empirical_quantile():
    # Skewed data: the median is far from the mean, so comparing quantile_ with the
    # mean would give an error of at least (median - mean)^2.
    rng = np.random.default_rng(5)
    X = rng.exponential(0.2, size=(N_USERS, 1)).clip(*BOUNDS)
    gap2 = (np.median(X) - X.mean()) ** 2
    result = compare_estimators(
        {"median": MixedQuantileEstimator(0.5, epsilon=2.0, bounds=BOUNDS)}, X,
        n_trials=20, random_state=5,
    )
    assert result.table["mse"][0] < gap2 / 10
    assert np.isnan(result.table["expected_mse"][0])


def test_explicit_attribute_for_an_estimator_without_estimate_attribute():
    X = np.zeros((10, 2))
    result = compare_estimators(
        [_NoisyCentre(scale=0.1)], X, attribute="centre_", n_trials=400, random_state=6
    )
    mse, se = result.table["mse"][0], result.table["mse_se"][0]
    assert abs(mse - 0.1**2) < 4 * se
    with pytest.raises(ValueError, match="attribute="):
        compare_estimators([_NoisyCentre()], X, n_trials=2)


# -- relative improvements ----------------------------------------------------------------


def test_relative_improvements_follow_definitions_3_5_and_5_1():
    X, trust = _fixed_data()
    estimators = {s: _hybrid(s) for s in ["kvh", "naive", "tcm_only", "full_lm"]}
    result = compare_estimators(
        estimators, X, fit_params={"trust_group": trust}, n_trials=30,
        baselines=("tcm_only", "full_lm"), random_state=7,
    )
    mse = {name: errors.mean() for name, errors in result.squared_errors.items()}
    best, worst = sorted([mse["tcm_only"], mse["full_lm"]])
    for row, name in enumerate(result.table["estimator"]):
        assert result.table["R"][row] == pytest.approx(best / mse[name])
        assert result.table["r"][row] == pytest.approx(worst / mse[name])
    assert result.baselines == ("tcm_only", "full_lm")


def test_no_relative_improvement_columns_without_baselines():
    X, trust = _fixed_data()
    result = compare_estimators(
        {"kvh": _hybrid("kvh")}, X, fit_params={"trust_group": trust}, n_trials=2,
        random_state=0,
    )
    assert "R" not in result.table and "r" not in result.table


# -- reproducibility and parallelism ------------------------------------------------------


def _table_of(n_jobs, random_state=8, backend=None):
    estimators = {s: _hybrid(s) for s in ["kvh", "full_lm"]}
    kwargs = {"make_data": _fresh_uniform_data, "n_trials": 12, "random_state": random_state,
              "n_jobs": n_jobs}
    if backend is None:
        return compare_estimators(estimators, **kwargs).table
    with joblib.parallel_backend(backend, n_jobs=2):
        return compare_estimators(estimators, **kwargs).table


def _assert_tables_equal(first, second):
    assert list(first) == list(second)
    for column in first:
        np.testing.assert_array_equal(first[column], second[column])


def test_threading_backend_gives_the_serial_table():
    _assert_tables_equal(_table_of(n_jobs=1), _table_of(n_jobs=None, backend="threading"))


@pytest.mark.slow  # starting loky worker processes takes seconds
def test_two_processes_give_the_serial_table():
    _assert_tables_equal(_table_of(n_jobs=1), _table_of(n_jobs=2))


def test_random_state_makes_the_run_reproducible():
    _assert_tables_equal(_table_of(1), _table_of(1))
    assert not np.array_equal(_table_of(1)["mse"], _table_of(1, random_state=9)["mse"])


def test_trials_are_independent_draws():
    X, trust = _fixed_data()
    result = compare_estimators(
        {"kvh": _hybrid("kvh")}, X, fit_params={"trust_group": trust}, n_trials=20,
        random_state=0,
    )
    assert np.unique(result.squared_errors["kvh"]).size == 20


def test_make_data_receives_a_generator_per_trial():
    seen = []

    def make_data(rng):
        assert isinstance(rng, np.random.Generator)
        X, fit_params, truth = _fresh_uniform_data(rng)
        seen.append(X[0, 0])
        return X, fit_params, truth

    compare_estimators({"kvh": _hybrid("kvh")}, make_data=make_data, n_trials=5,
                       random_state=0, n_jobs=1)
    assert len(set(seen)) == 5


def test_progress_bar_goes_to_stderr(capsys):
    X, trust = _fixed_data()
    compare_estimators({"kvh": _hybrid("kvh")}, X, fit_params={"trust_group": trust},
                       n_trials=3, random_state=0, progress=True)
    assert "compare_estimators" in capsys.readouterr().err


# -- the result object --------------------------------------------------------------------


def test_list_of_estimators_is_named_by_class_and_parameters():
    X, trust = _fixed_data()
    result = compare_estimators(
        [_hybrid("kvh"), _hybrid("pwh"), _hybrid("pwh")], X,
        fit_params={"trust_group": trust}, n_trials=2, random_state=0,
    )
    names = list(result.table["estimator"])
    assert names[0].startswith("HybridMeanEstimator(") and "kvh" not in names[0]  # default
    assert "'pwh'" in names[1] and names[2] == names[1] + " #2"


def test_table_columns_have_equal_length_and_frame_is_indexed_by_name():
    pandas = pytest.importorskip("pandas")
    X, trust = _fixed_data()
    result = compare_estimators(
        {s: _hybrid(s) for s in ["tcm_only", "full_lm"]}, X,
        fit_params={"trust_group": trust}, n_trials=3, baselines=("tcm_only", "full_lm"),
        random_state=0,
    )
    assert isinstance(result, ComparisonResult)
    assert {len(column) for column in result.table.values()} == {2}
    frame = result.to_frame()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.index) == ["tcm_only", "full_lm"]
    assert frame.loc["full_lm", "mse"] == result.table["mse"][1]


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"estimators": {}}, ValueError, "empty"),
        ({"estimators": "kvh"}, TypeError, "dict of name to estimator"),
        ({"estimators": {"a": object()}}, TypeError, "not a scikit-learn estimator"),
        ({"X": None}, ValueError, "exactly one of X"),
        ({"make_data": _fresh_uniform_data}, ValueError, "exactly one of X"),
        ({"n_trials": 1}, ValueError, "n_trials must be an int >= 2"),
        ({"n_trials": 2.5}, ValueError, "n_trials"),
        ({"baselines": ("kvh", "nope")}, ValueError, "baseline 'nope'"),
        ({"baselines": "kvh"}, ValueError, "two estimator names"),
        ({"X": np.zeros(5)}, ValueError, "2-d"),
        ({"fit_params": [1]}, TypeError, "fit_params"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_error(kwargs, error, match):
    X, trust = _fixed_data()
    arguments = {"estimators": {"kvh": _hybrid("kvh")}, "X": X, "n_trials": 2, **kwargs}
    with pytest.raises(error, match=match):
        compare_estimators(**arguments)


def test_bad_make_data_is_rejected():
    with pytest.raises(TypeError, match="callable"):
        compare_estimators({"kvh": _hybrid("kvh")}, make_data=3, n_trials=2)
    with pytest.raises(ValueError, match=r"\(X, fit_params, truth\)"):
        compare_estimators({"kvh": _hybrid("kvh")}, make_data=lambda rng: rng, n_trials=2,
                           n_jobs=1)
    with pytest.raises(ValueError, match="fit_params goes with fixed X"):
        compare_estimators({"kvh": _hybrid("kvh")}, make_data=_fresh_uniform_data,
                           fit_params={}, n_trials=2)
