"""The scikit-learn estimator checks that skhybrid's estimators are known to fail, and why.

For a downstream test suite::

    from sklearn.utils.estimator_checks import check_estimator
    from skhybrid.utils.estimator_checks import expected_failed_checks

    check_estimator(estimator, expected_failed_checks=expected_failed_checks(estimator))

Only :class:`~skhybrid.BlenderHeavyHitters` fails some: its ``X`` holds exactly two
columns, (query, url), and those checks fit on 3 to 10 columns (or one sample). Each
class declares its failures in ``_expected_failed_checks`` (``{check_name: reason}``).
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
