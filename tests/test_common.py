"""scikit-learn's estimator checks over every skhybrid estimator."""

import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

from skhybrid import (
    ADPMEstimator,
    BlenderHeavyHitters,
    HybridKMeans,
    HybridMeanEstimator,
    MixedMeanEstimator,
    MixedQuantileEstimator,
    PDPSampleEstimator,
)
from skhybrid.exceptions import EmptyGroupWarning, PrivacyLeakWarning


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
    for cls in (PDPSampleEstimator, MixedMeanEstimator, MixedQuantileEstimator):
        yield cls()
        yield cls(bounds=(-3.0, 3.0))
    for threshold in ("min", "mean", "optimal", 0.5):
        yield PDPSampleEstimator(threshold=threshold, bounds=(-3.0, 3.0))
    yield MixedQuantileEstimator(0.1, bounds=(-3.0, 3.0), variance=1.0)
    yield MixedMeanEstimator(bounds=(-3.0, 3.0), variance=1.0, epsilon=float("inf"))
    yield HybridKMeans()
    yield HybridKMeans(bounds=(-3.0, 3.0))
    for strategy in ("tcm_only", "full_lm"):
        yield HybridKMeans(strategy=strategy, bounds=(-3.0, 3.0))
    yield BlenderHeavyHitters()
    yield BlenderHeavyHitters(project_to_simplex=False, epsilon=1.0)


# BlenderHeavyHitters' X is a (query, url) pair per user: exactly two integer columns.
# These checks fit on 3 to 10 columns and get a ValueError naming n_features; with the
# estimator reading only the first two columns every one of them passes.
_TWO_COLUMNS = "X must have exactly two columns, (query, url); this check fits on 3 to 10"
_BLENDER_WIDTH_CHECKS = [
    "check_dict_unchanged", "check_dont_overwrite_parameters", "check_dtype_object",
    "check_estimators_dtypes", "check_estimators_nan_inf", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_fit2d_1sample", "check_fit2d_predict1d",
    "check_fit_score_takes_y", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_n_features_in_after_fitting",
    "check_pipeline_consistency", "check_positive_only_tag_during_fit",
]


def _expected_failed_checks(estimator):
    if isinstance(estimator, BlenderHeavyHitters):
        return {name: _TWO_COLUMNS for name in _BLENDER_WIDTH_CHECKS}
    return {}


@parametrize_with_checks(list(_estimators()), expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        # The generic checks cannot pass trust_group: a hybrid fit without it warns.
        warnings.filterwarnings("ignore", "(?s).*without trust_group", EmptyGroupWarning)
        check(estimator)
