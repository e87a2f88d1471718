"""Shared pieces of skhybrid's estimators: fit-input validation, prediction and scoring."""

import inspect
from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from .exceptions import EmptyGroupWarning, MetadataOverrideWarning, PrivacyLeakWarning, warn_user
from .utils._sums import finite_sum
from .utils._validation import check_epsilon, check_trust_group


#: ``random_state`` accepts None (secure randomness), any non-negative int seed, and numpy
#: Generators and RandomStates (scikit-learn's own "random_state" constraint has no Generator).
RANDOM_STATE_CONSTRAINT = [
    None,
    Interval(Integral, 0, None, closed="left"),
    np.random.Generator,
    np.random.RandomState,
]


def check_fit_metadata(estimator, trust_group, epsilon, *, hybrid):
    """Refuse or flag fit metadata whose absence or presence changes what a fit means.

    - ``local_reports=True`` without ``trust_group`` raises: every row would be read as
      a tcm user's raw value and the lm users' reports clipped as such.
    - A hybrid fit (``hybrid=True``) without ``trust_group`` warns with
      :class:`~skhybrid.exceptions.EmptyGroupWarning`: everyone is then tcm (this is
      also what metadata routing passes when the metadata was requested but not given).
    - ``epsilon`` metadata with a non-default ``epsilon`` parameter warns with
      :class:`~skhybrid.exceptions.MetadataOverrideWarning`: the metadata wins, so the
      parameter has no effect (a grid search over it compares identical fits).

    Parameters
    ----------
    estimator : estimator instance
    trust_group, epsilon : array-like, Dask collection or None
        The metadata passed to ``fit`` or ``partial_fit``.
    hybrid : bool
        Whether the fit combines a tcm and an lm group.
    """
    name = type(estimator).__name__
    if trust_group is None and getattr(estimator, "local_reports", False):
        raise ValueError(
            f"{name}(local_reports=True) needs trust_group to tell the lm users' privatized "
            "reports from the tcm users' raw values; got trust_group=None (with metadata "
            "routing on, call set_fit_request(trust_group=True) and pass it to fit)"
        )
    if trust_group is None and hybrid:
        warn_user(
            f"{name} combines tcm and lm users but was fit without trust_group, so every "
            "user is treated as tcm; pass trust_group (with metadata routing on, call "
            "set_fit_request(trust_group=True) and pass it to fit)",
            EmptyGroupWarning,
        )
    if epsilon is not None:
        default = inspect.signature(type(estimator).__init__).parameters["epsilon"].default
        if estimator.epsilon != default:
            warn_user(
                f"{name} was given per-user epsilon metadata, which replaces its epsilon "
                f"parameter (epsilon={float(estimator.epsilon)}): the parameter has no "
                "effect on this fit; leave it at its default "
                f"({float(default)}) when passing per-user levels",
                MetadataOverrideWarning,
            )


def clamp_estimate(estimator, estimate, lower, upper):
    """The estimate projected onto ``[lower, upper]`` when ``estimator.clamp``, else as is.

    Post-processing of a released value: the estimators' ``clamp`` parameter.
    """
    estimate = np.asarray(estimate, dtype=np.float64)
    if getattr(estimator, "clamp", False):
        return np.clip(estimate, lower, upper)
    return estimate


#: Classes whose ``score`` has warned in this process (a grid search scores many clones).
_SCORE_WARNED = set()


def warn_score_leak(estimator):
    """Warn, once per estimator class and process, that ``score`` of a private release
    (secure noise, or a ledger) is not private; a seeded simulation's stays quiet."""
    name = type(estimator).__name__
    simulation = getattr(estimator, "random_state", None) is not None
    if (simulation and getattr(estimator, "ledger", None) is None) or name in _SCORE_WARNED:
        return
    _SCORE_WARNED.add(name)
    warn_user(
        f"{name}.score reads the held-out data exactly: the score is not differentially "
        "private and no ledger charges it (this is said once per process). Use "
        "score for simulations only; to select on real data use "
        "skhybrid.model_selection.PrivateGridSearchCV, which chooses privately and "
        "charges the choice (see the private selection guide)",
        PrivacyLeakWarning,
    )


def finite_float_rows(X):
    """Whether ``X`` is a non-empty 2-d float64 array that scikit-learn would accept as is
    (finite by scikit-learn's own first test, a finite sum)."""
    return float_rows(X) and finite_sum(X)  # an overflowing sum only sends X the slow way


def float_rows(X):
    """Whether ``X`` is a non-empty 2-d float64 array (finite or not)."""
    return X.dtype == np.float64 and X.ndim == 2 and X.size > 0


def _validate_X(estimator, X, *, reset, defer_finite=False):
    """``validate_data(estimator, X, dtype=np.float64, reset=reset)``, faster for arrays.

    A finite, non-empty 2-d float64 array, which ``validate_data`` would accept
    unchanged, only sets ``n_features_in_`` and forgets earlier feature names; any
    other input goes through ``validate_data`` and its messages. ``defer_finite=True``
    skips the sum test: the caller tests every value before using any, and calls
    :func:`refuse_non_finite` on a failure.
    """
    if reset and type(X) is np.ndarray and (float_rows(X) if defer_finite
                                            else finite_float_rows(X)):
        estimator.__dict__.pop("feature_names_in_", None)
        estimator.n_features_in_ = X.shape[1]
        return X
    return validate_values(estimator, X, reset=reset)


class NonFiniteValues(Exception):
    """A deferred finiteness check found a NaN or an infinity (internal: the caller
    answers with :func:`refuse_non_finite`)."""


def refuse_non_finite(estimator, X, *, reset=True):
    """Raise the error :func:`validate_values` gives for ``X``, which holds a NaN or an
    infinity (found after a deferred check, ``validate_fit_input(defer_finite=True)``)."""
    validate_values(estimator, X, reset=reset)
    raise ValueError("Input X contains NaN or infinity")  # validate_values raised first


def _refuse_times(X):
    """Refuse datetime64 and timedelta64 values: numpy would read dates as day (or
    nanosecond) counts, clip them to the bounds and average them without a word."""
    dtypes = getattr(X, "dtypes", None)
    named = (list(zip(X.columns, dtypes)) if dtypes is not None and hasattr(X, "columns")
             else [(None, getattr(X, "dtype", None))])
    for column, dtype in named:
        if getattr(dtype, "kind", None) in ("m", "M"):
            where = "" if column is None else f" (column {column!r})"
            raise ValueError(
                f"X holds {dtype} values{where}; {'dates' if dtype.kind == 'M' else 'durations'}"
                " are not numbers to average: convert them to numbers in a unit you choose, "
                "for example (X - origin) / np.timedelta64(1, 'D') for days since a public "
                "origin, and give the bounds in that unit"
            )


def validate_values(estimator, X, *, reset):
    """``validate_data(estimator, X, dtype=np.float64)`` with this library's advice on NaN
    (scikit-learn's recommends estimators that accept missing values)."""
    _refuse_times(X)
    try:
        return validate_data(estimator, X, dtype=np.float64, reset=reset)
    except ValueError as error:
        text = str(error)
        if "contains NaN" not in text and "contains infinity" not in text:
            raise
        found = "NaN" if "contains NaN" in text else "infinity"
        raise ValueError(
            f"Input X contains {found}. {type(estimator).__name__} expects finite values "
            "(values outside its public bounds are clipped to them): drop the rows with "
            "missing values, with their trust_group, epsilon and user_id, or fill them "
            "with a constant chosen without looking at the data (an imputer fitted on the "
            "private data, such as SimpleImputer(strategy='mean'), is a release that no "
            "privacy guarantee covers)"
        ) from None


def validate_fit_input(estimator, X, trust_group, epsilon, *, allow_inf=False, reset=True,
                       defer_finite=False):
    """Validate ``X`` and the per-sample metadata of one ``fit`` call.

    Parameters
    ----------
    estimator : estimator instance
        Its ``epsilon`` parameter is the default privacy level.
    X : array-like of shape (n_samples, n_features)
        NaN or infinity raise a ValueError.
    trust_group, epsilon : array-like of shape (n_samples,) or None
        See :func:`skhybrid.utils.check_trust_group` and
        :func:`skhybrid.utils.check_sample_epsilon`.
    allow_inf : bool, default=False
        Whether public users (epsilon = inf) are accepted.
    reset : bool, default=True
        False checks ``X`` against the features seen before (``partial_fit``).
    defer_finite : bool, default=False
        Leave the finiteness of a float64 array to the caller (see :func:`_validate_X`),
        which must then test every value before using any.

    Returns
    -------
    X : ndarray of float64
        Not a view to be written to: callers never modify it.
    is_tcm : ndarray of bool
    epsilon : ndarray of float64 or float
        The per-sample levels, or the validated ``epsilon`` parameter (a float) when no
        metadata was passed, so that millions of equal levels are never materialised.
    """
    X = _validate_X(estimator, X, reset=reset, defer_finite=defer_finite)
    n_samples = X.shape[0]
    is_tcm = check_trust_group(trust_group, n_samples)
    if epsilon is None:
        epsilon = check_epsilon(estimator.epsilon, allow_inf=allow_inf)
    else:
        epsilon = check_epsilon(epsilon, n_samples, allow_inf=allow_inf)
    return X, is_tcm, epsilon


class MeanEstimatorMixin:
    """``predict`` and ``score`` of an estimator that releases one private statistic.

    The statistic is the fitted attribute named by ``_estimate_attribute`` (``mean_`` by
    default); ``score`` compares it with ``_empirical_statistic`` of the given data.
    """

    _estimate_attribute = "mean_"

    def _empirical_statistic(self, X):
        return X.mean(axis=0)

    def predict(self, X):
        """The private estimate, repeated for each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,) for one feature, else (n_samples, n_features)
        """
        check_is_fitted(self)
        X = validate_values(self, X, reset=False)
        estimate = np.tile(getattr(self, self._estimate_attribute), (X.shape[0], 1))
        return estimate[:, 0] if self.n_features_in_ == 1 else estimate

    def score(self, X, y=None):
        """Minus the mean over features of the squared error of the estimate against ``X``.

        For a mean estimator, the estimate is compared with ``X``'s column means.

        Not private (it reads ``X`` exactly, and no ledger charges it): for simulations.
        Select on real data with :class:`~skhybrid.model_selection.PrivateGridSearchCV`
        (docs/user_guide/private_selection.rst).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        score : float
            Higher is better; 0 is a perfect estimate.
        """
        check_is_fitted(self)
        warn_score_leak(self)
        X = validate_values(self, X, reset=False)
        estimate = getattr(self, self._estimate_attribute)
        return -float(np.mean((estimate - self._empirical_statistic(X)) ** 2))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        tags.input_tags.allow_nan = False
        return tags
