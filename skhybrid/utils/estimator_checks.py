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

Each estimator class declares the checks it fails by design, with the reason, in its
``_expected_failed_checks`` attribute (``{check_name: reason}``), next to the code that
makes them fail; this module reads it, and so imports no estimator.
"""


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

    Examples
    --------
    >>> from skhybrid import BlenderHeavyHitters, HybridMeanEstimator
    >>> from skhybrid.utils.estimator_checks import expected_failed_checks
    >>> expected_failed_checks(HybridMeanEstimator())
    {}
    >>> "check_fit2d_1sample" in expected_failed_checks(BlenderHeavyHitters())
    True
    """
    return dict(getattr(type(estimator), "_expected_failed_checks", {}))
