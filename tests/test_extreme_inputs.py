"""Extreme but well-formed parameters end in a release or in an error naming the input.

Issue 14, 1b: fuzzing found internal errors that named nothing the user passed
(``OverflowError``, ``ZeroDivisionError``, a variance "in (0, 0]" when no variance was
given, "c must be in (0, 1)"). Every public entry point validates what it would
overflow on and says which input it refuses.
"""

import itertools
import warnings

import numpy as np
import pytest

from skhybrid.accounting import PrivacyLedger
from skhybrid import (
    ADPMEstimator,
    HybridKMeans,
    HybridMeanEstimator,
    MixedMeanEstimator,
    MixedQuantileEstimator,
    PDPQuantileEstimator,
    PDPSampleEstimator,
)

RNG = np.random.default_rng(0)
UNIT = RNG.uniform(0, 1, size=(200, 1))
TRUST = np.where(RNG.random(200) < 0.5, "tcm", "lm")
LEVELS = RNG.choice([0.5, 2.0], size=200)

BOUNDS = [(0, 1), (-1e300, 1e300), (1e300, 1.5e300), (-1e308, 1e308), (0, 1e-300),
          (2.0**52, 2.0**52 + 1), (-1e-320, 1e-320)]
EPSILONS = [1.0, 1e-300, 1e300, 1e-18]

ESTIMATORS = {
    "hybrid": lambda b, e: (HybridMeanEstimator(bounds=b, epsilon=e), {"trust_group": TRUST}),
    "hybrid-gaussian": lambda b, e: (
        HybridMeanEstimator(bounds=b, epsilon=e, mechanism="gaussian", delta=1e-6),
        {"trust_group": TRUST},
    ),
    "adpm": lambda b, e: (ADPMEstimator(bounds=b, epsilon=e), {}),
    "adpm-levels": lambda b, e: (ADPMEstimator(bounds=b), {"epsilon": LEVELS * e}),
    "adpm-cvxpy": lambda b, e: (ADPMEstimator(bounds=b, solver="cvxpy"), {"epsilon": LEVELS}),
    "mixed-mean": lambda b, e: (MixedMeanEstimator(bounds=b, epsilon=e), {}),
    "mixed-quantile": lambda b, e: (MixedQuantileEstimator(bounds=b, epsilon=e), {}),
    "pdp": lambda b, e: (PDPSampleEstimator(bounds=b, epsilon=e), {}),
    "pdp-quantile": lambda b, e: (PDPQuantileEstimator(bounds=b, epsilon=e), {}),
    "adpm-stretching": lambda b, e: (ADPMEstimator(bounds=b, strategy="stretching"),
                                     {"epsilon": LEVELS * e}),
    "kmeans": lambda b, e: (HybridKMeans(2, bounds=b, epsilon=e), {"trust_group": TRUST}),
}


def _fit_problem(fit, names):
    """What is wrong with ``fit()``'s outcome, or None.

    A fit must release finite values or raise a ValueError that names one of ``names``
    (the inputs the user gave); any other exception is an internal error.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator = fit()
    except ValueError as error:
        return None if any(name in str(error) for name in names) else str(error)
    except Exception as error:  # noqa: BLE001 - any other exception is the bug
        return f"{type(error).__name__}: {error}"
    for attribute in ("mean_", "quantile_", "cluster_centers_"):
        if hasattr(estimator, attribute):
            release = getattr(estimator, attribute)
            return None if np.all(np.isfinite(release)) else "non-finite release"
    return "no release"


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_extreme_parameters_release_or_name_the_input(name):
    internal = []
    for bounds, epsilon in itertools.product(BOUNDS, EPSILONS):
        estimator, metadata = ESTIMATORS[name](bounds, epsilon)
        estimator.set_params(random_state=0)
        width = bounds[1] - bounds[0]
        X = UNIT * width + bounds[0] if np.isfinite(width) else UNIT
        # The message must name the input the user gave: the bounds or the epsilon.
        problem = _fit_problem(lambda: estimator.fit(X, **metadata), ("bounds", "epsilon"))
        if problem:
            internal.append((bounds, epsilon, problem))
    assert internal == []


@pytest.mark.parametrize("bounds", [(-1e300, 1e300), (0, 1e-300)])
def test_bounds_out_of_scale_are_refused_by_name(bounds):
    with pytest.raises(ValueError, match=r"bounds .*rescale the data"):
        ADPMEstimator(bounds=bounds).fit(UNIT)


@pytest.mark.parametrize("epsilon", [1e300, 1e-300])
def test_epsilon_out_of_range_is_refused_by_name(epsilon):
    with pytest.raises(ValueError, match=r"epsilon must be > 0, in \[1e-100, 1e\+100\]"):
        ADPMEstimator(bounds=(0, 1)).fit(UNIT, epsilon=np.full(200, epsilon))


VALUES = [0, -1, 1e-300, 1e300, np.nan, np.inf, 1, 0.5, 1e-12, 2, 10**6]
PARAMETER_GRIDS = {
    HybridMeanEstimator: {"epsilon": VALUES, "delta": VALUES,
                          "variance": VALUES + [[1, 2], [-1, 1]]},
    ADPMEstimator: {"epsilon": VALUES, "variance": VALUES},
    PDPSampleEstimator: {"epsilon": VALUES, "threshold": VALUES, "variance": VALUES},
    MixedMeanEstimator: {"epsilon": VALUES, "variance": VALUES},
    MixedQuantileEstimator: {"epsilon": VALUES, "quantile": VALUES, "variance": VALUES},
    HybridKMeans: {"epsilon": VALUES, "n_clusters": [1, 2, 59, 60, 61, 1000],
                   "n_iter": [0, 1, 5]},
}


@pytest.mark.parametrize("Estimator", list(PARAMETER_GRIDS), ids=lambda cls: cls.__name__)
def test_bad_parameters_are_refused_by_name(Estimator):
    X = RNG.uniform(0, 1, size=(60, 2))
    vague = []
    for name, values in PARAMETER_GRIDS[Estimator].items():
        for value in values:
            params = {"bounds": (0, 1), name: value, "random_state": 0}
            if Estimator is HybridKMeans and name != "n_clusters":
                params["n_clusters"] = 2
            if Estimator is HybridMeanEstimator and name == "delta":
                params["mechanism"] = "gaussian"
            metadata = {"trust_group": TRUST[:60]} if Estimator is HybridMeanEstimator else {}
            problem = _fit_problem(lambda: Estimator(**params).fit(X, **metadata), (name,))
            if problem:
                vague.append((name, value, problem))
    assert vague == []


def _charged_only_if_released(fit, ledger, ids):
    """What is wrong with the ledger after ``fit()``, or None.

    A fit that raises must leave no charge and no history row; one that releases must
    have charged (so that this check can tell a charge from none).
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit()
    except Exception:  # noqa: BLE001 - every refusal, whatever its class
        if ledger.history() or np.any(ledger.spent(ids) > 0):
            return "a refused fit charged the ledger"
        return None
    return None if len(ledger.history()) == 1 else "a release charged nothing"


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_refused_extreme_fit_charges_nobody(name):
    """Issue 25, 2: every check that can refuse a fit runs before the ledger's charge."""
    ids = np.arange(UNIT.shape[0])
    wrong = []
    for bounds, epsilon in itertools.product(BOUNDS, EPSILONS):
        ledger = PrivacyLedger(default_budget=np.inf)
        estimator, metadata = ESTIMATORS[name](bounds, epsilon)
        estimator.set_params(random_state=0, ledger=ledger)
        width = bounds[1] - bounds[0]
        X = UNIT * width + bounds[0] if np.isfinite(width) else UNIT
        problem = _charged_only_if_released(
            lambda: estimator.fit(X, user_id=ids, **metadata), ledger, ids
        )
        if problem:
            wrong.append((bounds, epsilon, problem))
    assert wrong == []


@pytest.mark.parametrize("Estimator", list(PARAMETER_GRIDS), ids=lambda cls: cls.__name__)
def test_a_fit_refusing_a_parameter_charges_nobody(Estimator):
    X = RNG.uniform(0, 1, size=(60, 2))
    ids = np.arange(60)
    wrong = []
    for name, values in PARAMETER_GRIDS[Estimator].items():
        for value in values:
            ledger = PrivacyLedger(default_budget=np.inf)
            params = {"bounds": (0, 1), name: value, "random_state": 0, "ledger": ledger}
            if Estimator is HybridKMeans and name != "n_clusters":
                params["n_clusters"] = 2
            if Estimator is HybridMeanEstimator and name == "delta":
                params["mechanism"] = "gaussian"
            metadata = {"trust_group": TRUST[:60]} if Estimator is HybridMeanEstimator else {}
            problem = _charged_only_if_released(
                lambda: Estimator(**params).fit(X, user_id=ids, **metadata), ledger, ids
            )
            if problem:
                wrong.append((name, value, problem))
    assert wrong == []


@pytest.mark.parametrize("name", ["hybrid", "adpm", "pdp-quantile", "kmeans"])
@pytest.mark.parametrize("kind", ["datetime64", "timedelta64", "frame-datetime"])
def test_dates_and_durations_are_refused_not_averaged_as_day_numbers(name, kind):
    pd = pytest.importorskip("pandas")
    days = np.arange(200).reshape(-1, 1)
    X = {"datetime64": days.astype("datetime64[D]"),
         "timedelta64": days.astype("timedelta64[D]"),
         "frame-datetime": pd.DataFrame({"hired": pd.to_datetime(days.ravel(), unit="D")})}[kind]
    estimator, metadata = ESTIMATORS[name]((0, 20000), 1.0)
    with pytest.raises(ValueError, match=r"(datetime64|timedelta64)\S* values.* are not "
                                         "numbers to average"):
        estimator.fit(X, **metadata)
