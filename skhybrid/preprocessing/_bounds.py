"""A scaler of public bounds to the unit box: reads no data, charges nothing."""

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils.validation import check_is_fitted, validate_data

from ..utils._validation import check_bounds


class BoundsScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Map each feature's public bounds to ``[0, 1]``.

    ``transform`` clips each value to its feature's bounds and maps ``lower`` to 0 and
    ``upper`` to 1, so the next step of a pipeline has the public bounds ``(0, 1)``
    whatever the units of the data. The scaling depends on the bounds alone: ``fit``
    reads only the number of features (and their names), releases nothing and charges
    nothing, so the scaler may sit in front of any private estimator.

    Parameters
    ----------
    bounds : pair (lower, upper)
        Data-independent bounds, scalars or per feature (as the estimators' ``bounds``).

    Attributes
    ----------
    lower_, upper_ : ndarray of shape (n_features,)
        The validated bounds.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    See Also
    --------
    HybridStandardScaler : A private standardisation, a release charged like any other.
    sklearn.preprocessing.MinMaxScaler : The same map from the data's own minimum and
        maximum, which are not private.

    Examples
    --------
    >>> from skhybrid.preprocessing import BoundsScaler
    >>> scaler = BoundsScaler(([0, 18], [500_000, 80])).fit([[50_000, 30]])
    >>> scaler.transform([[250_000, 49], [900_000, 10]]).tolist()
    [[0.5, 0.5], [1.0, 0.0]]
    """

    _parameter_constraints: dict = {"bounds": ["array-like"]}

    def __init__(self, bounds):
        self.bounds = bounds

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate the bounds for ``X``'s features; the values are not read.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : BoundsScaler
        """
        X = validate_data(self, X, dtype=np.float64)
        self.lower_, self.upper_ = check_bounds(self.bounds, X.shape[1])
        return self

    def transform(self, X):
        """Clip ``X`` to the bounds and map them to ``[0, 1]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_scaled : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (np.clip(X, self.lower_, self.upper_) - self.lower_) / (self.upper_ - self.lower_)

    def inverse_transform(self, X):
        """Map values in ``[0, 1]`` back to the bounds' units.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.lower_ + X * (self.upper_ - self.lower_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.requires_fit = True
        return tags
