"""scikit-learn's estimator checks over every skhybrid estimator."""

import warnings

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from skhybrid import ADPMEstimator, HybridMeanEstimator
from skhybrid.exceptions import PrivacyLeakWarning


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
    for strategy in ("uni", "propdpm", "ldpe"):
        yield ADPMEstimator(bounds=(-3.0, 3.0), strategy=strategy)


@parametrize_with_checks(list(_estimators()))
def test_sklearn_compatible_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)
