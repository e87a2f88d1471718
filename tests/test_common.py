"""scikit-learn's estimator checks over every skhybrid estimator."""

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

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
from skhybrid.exceptions import EmptyGroupWarning, PrivacyLeakWarning
from skhybrid.preprocessing import BoundsScaler, HybridStandardScaler
from skhybrid.utils.estimator_checks import expected_failed_checks


def _estimators():
    # Default parameters (bounds derived from the data, with a PrivacyLeakWarning) and
    # data-independent bounds: both must satisfy scikit-learn's contract.
    yield HybridMeanEstimator()
    yield HybridMeanEstimator(bounds=(-3.0, 3.0))
    for strategy in ("pwh", "naive", "tcm_only", "full_lm"):
        yield HybridMeanEstimator(strategy, bounds=(-3.0, 3.0))
    yield HybridMeanEstimator(mechanism="gaussian", delta=1e-5, bounds=(-3.0, 3.0))
    yield ADPMEstimator()
    yield ADPMEstimator(bounds=(-3.0, 3.0), solver="cvxpy")
    for strategy in ("uni", "propdpm", "ldpe", "stretching"):
        yield ADPMEstimator(bounds=(-3.0, 3.0), strategy=strategy)
    for cls in (PDPSampleEstimator, MixedMeanEstimator, MixedQuantileEstimator,
                PDPQuantileEstimator):
        yield cls()
        yield cls(bounds=(-3.0, 3.0))
    for threshold in ("min", "mean", "optimal", 0.5):
        yield PDPSampleEstimator(threshold=threshold, bounds=(-3.0, 3.0))
    yield MixedQuantileEstimator(0.1, bounds=(-3.0, 3.0), variance=1.0)
    yield PDPQuantileEstimator(0.9, bounds=(-3.0, 3.0))
    yield MixedMeanEstimator(bounds=(-3.0, 3.0), variance=1.0, epsilon=float("inf"))
    yield HybridKMeans()
    yield HybridKMeans(bounds=(-3.0, 3.0))
    for strategy in ("tcm_only", "full_lm"):
        yield HybridKMeans(strategy=strategy, bounds=(-3.0, 3.0))
    yield BlenderHeavyHitters()
    yield BlenderHeavyHitters(project_to_simplex=False, epsilon=1.0)
    yield HybridStandardScaler()
    yield HybridStandardScaler(bounds=(-3.0, 3.0), clip=2.0)
    yield BoundsScaler((-3.0, 3.0))


@parametrize_with_checks(list(_estimators()), expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        # The generic checks cannot pass trust_group: a hybrid fit without it warns.
        warnings.filterwarnings("ignore", "(?s).*without trust_group", EmptyGroupWarning)
        check(estimator)


def test_published_expected_failures_are_exactly_the_failures():
    # The published list is the truth, not a convenience: each listed check fails, and
    # no other does (on the default BlenderHeavyHitters).
    from sklearn.utils.estimator_checks import check_estimator

    estimator = BlenderHeavyHitters()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None)
    failed = {result["check_name"] for result in results if result["status"] == "failed"}
    assert failed == set(expected_failed_checks(estimator))
    assert expected_failed_checks(HybridKMeans()) == {}


@pytest.mark.parametrize("X", [
    np.array([[0.5], [np.nan]]),
    np.array([[0.5, np.inf], [0.1, 0.2]]),
    np.array([[1e308, 1e308]] * 3),  # finite, but the sum test overflows: validate_data
    np.empty((0, 2)),
    np.empty((3, 0)),
    np.array([0.1, 0.2]),
])
def test_the_array_fast_path_validates_like_validate_data(X):
    """Fits on plain float64 arrays skip scikit-learn's validate_data; every input it
    does not take must get the slow path's answer (the same error, or acceptance): the
    library's validate_values, which is validate_data with its own advice on NaN."""
    from skhybrid.base import _validate_X, validate_values

    expected_error = None
    try:
        validate_values(HybridMeanEstimator(), X, reset=True)
    except ValueError as error:
        expected_error = str(error)
    if expected_error is None:
        np.testing.assert_array_equal(_validate_X(HybridMeanEstimator(), X, reset=True), X)
    else:
        with pytest.raises(ValueError) as raised:
            _validate_X(HybridMeanEstimator(), X, reset=True)
        assert str(raised.value) == expected_error


_DEFERRED_FINITENESS = {
    "adpm, two levels": (lambda: ADPMEstimator(bounds=(0, 1)), "levels", 2),
    "adpm, 40 levels": (lambda: ADPMEstimator(bounds=(0, 1)), "levels", 40),
    "adpm, one level": (lambda: ADPMEstimator(bounds=(0, 1)), "none", 1),
    "adpm, simulated lm users": (lambda: ADPMEstimator(bounds=(0, 1)), "hybrid", 3),
    "adpm, lm reports": (lambda: ADPMEstimator(bounds=(0, 1), local_reports=True),
                         "hybrid", 3),
    "mixed, 40 levels": (lambda: MixedMeanEstimator(bounds=(0, 1)), "levels", 40),
    "mixed, one level": (lambda: MixedMeanEstimator(bounds=(0, 1)), "none", 1),
}


@pytest.mark.parametrize("case", list(_DEFERRED_FINITENESS))
def test_finiteness_left_to_the_statistics_pass_refuses_as_validation_does(monkeypatch, case):
    """ADPM and the mixed mean (as HybridMeanEstimator, see its tests) leave a float64
    array's finiteness to the pass that adds its codes, with given bounds: no pass of
    validation's own, and a NaN or an infinity in any row (first or last, tcm or lm)
    refused with validation's message, nobody charged."""
    from skhybrid import PrivacyLedger, base

    make, metadata, n_levels = _DEFERRED_FINITENESS[case]
    calls = []
    original = base.finite_float_rows
    monkeypatch.setattr(base, "finite_float_rows",
                        lambda X: calls.append(X.shape) or original(X))
    rng = np.random.default_rng(0)
    n = 4_000
    X = rng.uniform(-0.5, 1.5, (n, 2))
    user_id = np.arange(n)
    kwargs = {"user_id": user_id}
    if metadata != "none":
        kwargs["epsilon"] = rng.choice(np.linspace(0.5, 3.0, n_levels), n)
    if metadata == "hybrid":
        kwargs["trust_group"] = np.arange(n) % 4 == 0
    ledger = PrivacyLedger(default_budget=100.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make().set_params(ledger=ledger).fit(X, **kwargs)
    spent = ledger.spent(user_id)
    assert spent.max() > 0 and calls == []
    for row in (0, n - 1):  # an lm user in the hybrid cases
        for bad in (np.nan, -np.inf):
            broken = X.copy()
            broken[row, 1] = bad
            with pytest.raises(ValueError) as expected:
                base.validate_values(make(), broken, reset=True)
            with pytest.raises(ValueError) as raised:
                make().set_params(ledger=ledger).fit(broken, **kwargs)
            assert str(raised.value) == str(expected.value)
            np.testing.assert_array_equal(ledger.spent(user_id), spent)


def test_an_array_fit_forgets_the_feature_names_of_an_earlier_frame_fit():
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(0).uniform(0, 1, size=(50, 2))
    estimator = HybridMeanEstimator("tcm_only", bounds=(0, 1), random_state=0)
    estimator.fit(pd.DataFrame(X, columns=["a", "b"]))
    np.testing.assert_array_equal(estimator.feature_names_in_, ["a", "b"])
    estimator.fit(X)
    assert not hasattr(estimator, "feature_names_in_") and estimator.n_features_in_ == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "fitted without feature names" warning
        estimator.predict(X)


def _all_estimator_classes():
    return sorted({type(estimator) for estimator in _estimators()}, key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", _all_estimator_classes(), ids=lambda cls: cls.__name__)
def test_no_estimator_overrides_scikit_learns_private_parameter_methods(cls):
    from sklearn.base import BaseEstimator

    for name in ("_get_param_names", "_validate_params"):
        assert getattr(cls, name).__qualname__ == getattr(BaseEstimator, name).__qualname__


def test_the_ledger_is_importable_from_the_package():
    import skhybrid
    from skhybrid import PrivacyLedger
    from skhybrid.accounting import PrivacyLedger as FromAccounting

    assert PrivacyLedger is FromAccounting
    assert "PrivacyLedger" in skhybrid.__all__ and "accounting" in skhybrid.__all__


def _charging_classes():
    import inspect

    import skhybrid
    from sklearn.base import BaseEstimator

    classes = [getattr(skhybrid, name) for name in skhybrid.__all__]
    classes += [getattr(skhybrid.preprocessing, name) for name in skhybrid.preprocessing.__all__]
    return [cls for cls in classes if inspect.isclass(cls) and issubclass(cls, BaseEstimator)
            and "ledger" in inspect.signature(cls).parameters]


def test_every_estimator_with_a_ledger_is_found():
    names = {cls.__name__ for cls in _charging_classes()}
    # BoundsScaler reads no data: it has no ledger and charges nothing.
    assert {type(estimator).__name__ for estimator in _estimators()} - {"BoundsScaler"} <= names


@pytest.mark.parametrize("cls", _charging_classes(), ids=lambda cls: cls.__name__)
def test_every_estimator_with_a_ledger_declares_the_cost_of_its_release(cls):
    from skhybrid.accounting import ReleaseCost

    declared = getattr(cls, "_release_cost", None)
    assert callable(declared), f"{cls.__name__} declares no _release_cost"
    assert "_release_cost" in {name for klass in cls.__mro__ if klass.__module__.startswith(
        "skhybrid") for name in vars(klass)}
    estimator = cls()
    estimator._mechanism = getattr(estimator, "_resolve_mechanism", lambda: None)()
    is_tcm = np.array([True, False, True])
    cost = estimator._release_cost(is_tcm, np.array([0.5, 1.0, 2.0]), threshold=1.0)
    assert isinstance(cost, ReleaseCost)


def test_an_estimator_without_a_declared_cost_is_refused_before_any_release():
    from sklearn.base import BaseEstimator

    from skhybrid.accounting import PrivacyLedger, charge_release

    class Undeclared(BaseEstimator):
        def __init__(self, ledger=None):
            self.ledger = ledger

    with pytest.raises(TypeError, match="Undeclared declares no privacy cost"):
        charge_release(Undeclared(PrivacyLedger(default_budget=1.0)), np.arange(3),
                       np.ones(3, dtype=bool), 0.5)
