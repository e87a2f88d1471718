"""Metadata whose absence or presence would silently change what a fit means (issue 14, §2)."""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, cross_validate

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
from skhybrid.exceptions import EmptyGroupWarning, MetadataOverrideWarning

RNG = np.random.default_rng(0)
X = RNG.uniform(0, 100, size=(400, 1))
TRUST = np.where(RNG.random(400) < 0.5, "tcm", "lm")
EPSILON = np.where(np.arange(400) % 2 == 0, 0.5, 2.0)


@pytest.mark.parametrize("Estimator", [HybridMeanEstimator, ADPMEstimator])
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_local_reports_without_trust_group_raises(Estimator, method):
    # Every row would be read as a tcm user's raw value: the lm users' reports would be
    # clipped as values (a 37.9 estimate for a true 20.0 before this check).
    estimator = Estimator(bounds=(0, 100), local_reports=True, random_state=0)
    with pytest.raises(ValueError, match="local_reports=True.*needs trust_group"):
        getattr(estimator, method)(X)


@pytest.mark.parametrize("strategy", ["kvh", "pwh", "naive"])
def test_hybrid_strategy_without_trust_group_warns_at_the_callers_line(strategy):
    estimator = HybridMeanEstimator(strategy, bounds=(0, 100), random_state=0)
    with pytest.warns(EmptyGroupWarning, match="without trust_group") as record:
        estimator.fit(X)
    assert record[0].filename == __file__
    with pytest.warns(EmptyGroupWarning, match="without trust_group"):
        estimator.partial_fit(X)


@pytest.mark.parametrize(
    "estimator",
    [
        HybridMeanEstimator("tcm_only", bounds=(0, 100), random_state=0),
        ADPMEstimator(bounds=(0, 100), random_state=0),
        MixedMeanEstimator(bounds=(0, 100), random_state=0),
        PDPSampleEstimator(bounds=(0, 100), random_state=0),
        HybridKMeans(2, strategy="tcm_only", bounds=(0, 100), random_state=0),
    ],
    ids=lambda est: type(est).__name__,
)
def test_no_warning_when_no_trust_group_is_expected(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyGroupWarning)
        estimator.fit(X)


def test_hybrid_kmeans_and_blender_without_trust_group_warn():
    with pytest.warns(EmptyGroupWarning, match="without trust_group") as record:
        HybridKMeans(2, bounds=(0, 100), random_state=0).fit(X)
    assert record[0].filename == __file__
    records = np.column_stack([RNG.integers(0, 5, 300), RNG.integers(0, 3, 300)])
    with pytest.warns(EmptyGroupWarning, match="without trust_group"):
        BlenderHeavyHitters(random_state=0).fit(records)


def test_routing_with_requested_but_missing_trust_group_warns():
    # Metadata routing passes nothing when the metadata was requested but not given:
    # every fold would silently be fit as all tcm.
    with sklearn.config_context(enable_metadata_routing=True):
        estimator = HybridMeanEstimator(bounds=(0, 100), random_state=0).set_fit_request(
            trust_group=True
        )
        with pytest.warns(EmptyGroupWarning, match="without trust_group"):
            cross_validate(estimator, X, cv=3)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            results = cross_validate(estimator, X, cv=3, params={"trust_group": TRUST})
        assert not [w for w in record if "without trust_group" in str(w.message)]
        assert np.all(np.isfinite(results["test_score"]))


def _fit_with_epsilon(estimator):
    if isinstance(estimator, HybridMeanEstimator):
        return estimator.fit(X, trust_group=TRUST, epsilon=np.where(TRUST == "tcm", 1.0, 3.0))
    if isinstance(estimator, HybridKMeans):
        return estimator.fit(X, trust_group=TRUST, epsilon=np.full(400, 2.0))
    return estimator.fit(X, epsilon=EPSILON)


@pytest.mark.parametrize(
    "make",
    [
        lambda eps: HybridMeanEstimator(epsilon=eps, bounds=(0, 100), random_state=0),
        lambda eps: ADPMEstimator(epsilon=eps, bounds=(0, 100), random_state=0),
        lambda eps: MixedMeanEstimator(epsilon=eps, bounds=(0, 100), random_state=0),
        lambda eps: MixedQuantileEstimator(epsilon=eps, bounds=(0, 100), random_state=0),
        lambda eps: PDPSampleEstimator(epsilon=eps, bounds=(0, 100), random_state=0),
        lambda eps: PDPQuantileEstimator(epsilon=eps, bounds=(0, 100), random_state=0),
        lambda eps: HybridKMeans(2, epsilon=eps, bounds=(0, 100), random_state=0),
    ],
    ids=["hybrid", "adpm", "mixed-mean", "mixed-quantile", "pdp", "pdp-quantile", "kmeans"],
)
def test_epsilon_metadata_over_a_non_default_parameter_warns(make):
    with pytest.warns(MetadataOverrideWarning, match=r"epsilon=5\.0") as record:
        _fit_with_epsilon(make(5.0))
    assert record[0].filename == __file__
    default = make(5.0)
    default.set_params(epsilon=type(default)().epsilon)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MetadataOverrideWarning)
        _fit_with_epsilon(default)


def test_grid_search_over_epsilon_with_epsilon_metadata_says_so():
    # Both candidates fit on the metadata's levels, so they score the same: the search
    # must not pass silently.
    search = GridSearchCV(
        ADPMEstimator(bounds=(0, 100), random_state=0), {"epsilon": [0.1, 10.0]}, cv=2
    )
    with pytest.warns(MetadataOverrideWarning):
        search.fit(X, epsilon=EPSILON)


@pytest.mark.filterwarnings("ignore::skhybrid.exceptions.EmptyGroupWarning")
@pytest.mark.parametrize(
    "Estimator",
    [HybridMeanEstimator, ADPMEstimator, MixedMeanEstimator, PDPSampleEstimator],
)
def test_bounds_accept_array_likes(Estimator):
    as_tuple = Estimator(bounds=(0, 100), random_state=0).fit(X, trust_group=np.full(400, True))
    for bounds in (np.array([0, 100]), np.array([[0], [100]]), [0.0, 100.0]):
        estimator = Estimator(bounds=bounds, random_state=0)
        estimator.fit(X, trust_group=np.full(400, True))
        np.testing.assert_array_equal(estimator.mean_, as_tuple.mean_)


def test_kmeans_bounds_accept_an_array():
    as_tuple = HybridKMeans(2, strategy="tcm_only", bounds=(0, 100), random_state=0).fit(X)
    as_array = HybridKMeans(2, strategy="tcm_only", bounds=np.array([0, 100]), random_state=0)
    np.testing.assert_array_equal(as_array.fit(X).cluster_centers_, as_tuple.cluster_centers_)


def test_empty_group_warning_points_at_the_callers_line():
    estimator = HybridMeanEstimator(bounds=(0, 100), random_state=0)
    with pytest.warns(EmptyGroupWarning, match="every user is tcm") as record:
        estimator.fit(X, trust_group=np.full(400, "tcm"))
    assert record[0].filename == __file__


def _count_calls(monkeypatch, name):
    """Count the calls of ``skhybrid.utils._validation.<name>`` on one value per user,
    from every skhybrid module that imported it."""
    import sys

    from skhybrid.utils import _validation

    original = getattr(_validation, name)
    calls = []

    def counted(values, *args, **kwargs):
        if np.ndim(values) > 0 and len(values) == X.shape[0]:
            calls.append(1)
        return original(values, *args, **kwargs)

    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("skhybrid") and getattr(module, name, None) is original:
            monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("kind", ["numpy", "list", "pandas"])
@pytest.mark.parametrize(
    "make, metadata",
    [
        (lambda: HybridMeanEstimator(bounds=(0, 100), random_state=0), ("trust_group",)),
        (lambda: ADPMEstimator(bounds=(0, 100), random_state=0), ("trust_group", "epsilon")),
        (lambda: PDPSampleEstimator(bounds=(0, 100), random_state=0), ("epsilon",)),
        (lambda: MixedMeanEstimator(bounds=(0, 100), random_state=0), ("epsilon",)),
        (lambda: HybridKMeans(2, bounds=(0, 100), random_state=0), ("trust_group",)),
    ],
)
def test_metadata_is_validated_once_per_fit(monkeypatch, make, metadata, kind):
    import pandas as pd

    from skhybrid.accounting import PrivacyLedger

    given = {"trust_group": TRUST, "epsilon": EPSILON, "user_id": np.arange(400)}
    convert = {"numpy": np.asarray, "list": list, "pandas": pd.Series}[kind]
    fit_params = {key: convert(given[key]) for key in (*metadata, "user_id")}
    estimator = make().set_params(ledger=PrivacyLedger(default_budget=100.0))
    counts = {name: _count_calls(monkeypatch, name)
              for name in ("check_trust_group", "check_epsilon")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X, **fit_params)
    for name, key in (("check_trust_group", "trust_group"), ("check_epsilon", "epsilon")):
        assert len(counts[name]) == (key in metadata), name
