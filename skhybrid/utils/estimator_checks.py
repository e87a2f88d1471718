"""The scikit-learn estimator checks that skhybrid's estimators are known to fail, and why.

scikit-learn's generic checks (:func:`sklearn.utils.estimator_checks.check_estimator`,
:func:`~sklearn.utils.estimator_checks.parametrize_with_checks`) take a dictionary of
expected failures. skhybrid publishes its own here, so that a downstream test suite
runs the checks with the same list as skhybrid's::

    from sklearn.utils.estimator_checks import check_estimator
    from skhybrid.utils.estimator_checks import expected_failed_checks

    check_estimator(estimator, expected_failed_checks=expected_failed_checks(estimator))

Every estimator passes every check except :class:`~skhybrid.BlenderHeavyHitters`:
its ``X`` holds one (query, url) record per user, exactly two columns, and these checks
fit on generic data of 3 to 10 columns (or one sample), which it refuses with a
``ValueError`` naming the width. Reading only two of the columns would make them pass
and silently mean something else, so the refusal stays.
"""

_TWO_COLUMNS = (
    "X must have exactly two columns, (query, url); this check fits on 3 to 10 columns "
    "of generic data, which BlenderHeavyHitters refuses"
)

#: The checks BlenderHeavyHitters fails only because they fit on more than two columns.
BLENDER_WIDTH_CHECKS = (
    "check_dict_unchanged", "check_dont_overwrite_parameters", "check_dtype_object",
    "check_estimators_dtypes", "check_estimators_nan_inf", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_fit2d_1sample", "check_fit2d_predict1d",
    "check_fit_score_takes_y", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_n_features_in_after_fitting",
    "check_pipeline_consistency", "check_positive_only_tag_during_fit",
)


def expected_failed_checks(estimator):
    """The scikit-learn checks ``estimator`` is expected to fail, with the reason.

    Parameters
    ----------
    estimator : estimator instance

    Returns
    -------
    failures : dict of str to str
        ``{check_name: reason}``, as ``check_estimator`` and ``parametrize_with_checks``
        take it; empty for every estimator but :class:`~skhybrid.BlenderHeavyHitters`.
    """
    from ..heavy_hitters import BlenderHeavyHitters

    if isinstance(estimator, BlenderHeavyHitters):
        return {name: _TWO_COLUMNS for name in BLENDER_WIDTH_CHECKS}
    return {}
