"""A standard scaler whose means and standard deviations are released under the hybrid model."""

from functools import partial
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from ..accounting import ReleaseCost, charge_release, check_user_id
from ..base import RANDOM_STATE_CONSTRAINT, validate_fit_input, validate_values
from ..mean import HybridMeanEstimator
from ..utils._dask import is_dask_collection
from ..utils._validation import resolve_bounds


class _ChargeOnBehalf:
    """The inner mean estimator's ledger: at its charge, after every check of its own and
    before its noise, the scaler charges its own release (``charge()``) on its ledger."""

    def __init__(self, charge):
        self._charge = charge

    def charge(self, user_ids, epsilon=0.0, delta=0.0, **_):
        self._charge()
        return 0


class HybridStandardScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Standardize features with a private mean and standard deviation.

    Each feature's mean and variance are released under the hybrid model by
    :class:`~skhybrid.mean.HybridMeanEstimator` (``strategy="kvh"``,
    ``variance="private"``: the known-variance hybrid mean of Avent et al. 2020,
    Def. 4.1, at a privately released variance): tcm users through the central Laplace
    mechanism, lm users through their local randomizer. The release is charged on
    ``ledger`` like any estimator's: each user their ``epsilon``, over all features.

    ``transform`` clips each value to ``bounds``, standardizes it and clips the result
    to ``[-clip, clip]``: the next step's bounds are ``(-clip, clip)``, public by
    construction, and the whole pipeline's cost is the sum of its steps' (sequential
    composition; transforming is post-processing of the release).

    Read more in docs/user_guide/choosing.rst ("Pipelines").

    Parameters
    ----------
    epsilon : float, default=1.0
        Every user's privacy level when no ``epsilon`` metadata is passed: the budget
        of the release of all features' means and variances.
    bounds : pair (lower, upper) or None, default=None
        Data-independent clipping bounds, scalars or per feature. ``None`` derives them
        from the data and emits :class:`~skhybrid.exceptions.PrivacyLeakWarning`.
    clip : float, default=3.0
        Standardized values are clipped to ``[-clip, clip]``.
    ledger : PrivacyLedger or None, default=None
        Charged before the noise is drawn (``user_id`` metadata needed).
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` draws the noise from the operating system's secure randomness; an int
        gives reproducible noise (simulations only).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The private means.
    var_ : ndarray of shape (n_features,)
        The private variances, clipped to ``[0, (upper - lower)**2 / 4]`` (the largest
        variance in the bounds; post-processing).
    scale_ : ndarray of shape (n_features,)
        ``sqrt(var_)``, and 1 where it is 0 (as scikit-learn's ``StandardScaler``).
    lower_, upper_ : ndarray of shape (n_features,)
        The bounds ``transform`` clips to.
    n_tcm_, n_lm_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    See Also
    --------
    BoundsScaler : A public rescaling of the bounds to ``[0, 1]``, free of charge.
    sklearn.preprocessing.StandardScaler : The non-private scaler, whose fit on private
        data no guarantee covers.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.preprocessing import HybridStandardScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal([50_000, 40], [10_000, 8], size=(100_000, 2))
    >>> trust = np.where(rng.random(100_000) < 0.2, "tcm", "lm")
    >>> scaler = HybridStandardScaler(bounds=([0, 18], [200_000, 80]), random_state=0)
    >>> Z = scaler.fit(X, trust_group=trust).transform(X)
    >>> bool(np.all(np.abs(Z) <= 3.0))
    True
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "bounds": ["array-like", None],
        "clip": [Interval(Real, 0, None, closed="neither")],
        "ledger": [HasMethods(["charge"]), None],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, *, epsilon=1.0, bounds=None, clip=3.0, ledger=None, random_state=None):
        self.epsilon = epsilon
        self.bounds = bounds
        self.clip = clip
        self.ledger = ledger
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, trust_group=None, epsilon=None, user_id=None):
        """Release each feature's private mean and standard deviation.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            One row per user: their raw values (in memory: numpy or pandas).
        y : ignored
        trust_group : array-like of shape (n_samples,), default=None
            ``"tcm"`` / ``"lm"`` (case-insensitive) or booleans (True = tcm); ``None``
            means every user is tcm.
        epsilon : array-like of shape (n_samples,), default=None
            Per-user privacy levels, equal within each trust group (as
            :class:`~skhybrid.mean.HybridMeanEstimator`'s); ``None`` uses the
            ``epsilon`` parameter.
        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row: who the ledger charges. Required with ``ledger``.

        Returns
        -------
        self : HybridStandardScaler
        """
        if is_dask_collection(X):
            raise TypeError(
                "HybridStandardScaler fits in-memory data; got a Dask collection: fit it on "
                "X.compute() (the release is small: two numbers per feature), or fit "
                "HybridMeanEstimator(variance='private') on the Dask data")
        check_user_id(self, user_id)
        X, is_tcm, user_epsilon = validate_fit_input(self, X, trust_group, epsilon)
        lower, upper = resolve_bounds(self.bounds, X)
        # The scaler's charge happens where the mean estimator's would: after all its
        # checks (a refused fit charges nobody), before its noise.
        on_behalf = _ChargeOnBehalf(partial(charge_release, self, user_id, is_tcm, user_epsilon))
        means = HybridMeanEstimator(
            "kvh", epsilon=self.epsilon, bounds=(lower, upper), variance="private",
            random_state=self.random_state, ledger=on_behalf,
        )
        means.fit(X, trust_group=trust_group, epsilon=epsilon, user_id=np.arange(X.shape[0]))
        self.mean_ = means.mean_
        self.var_ = np.clip(means.variance_, 0.0, (upper - lower) ** 2 / 4.0)
        self.scale_ = np.where(self.var_ > 0, np.sqrt(self.var_), 1.0)
        self.lower_, self.upper_ = lower, upper
        self.n_tcm_, self.n_lm_ = means.n_tcm_, means.n_lm_
        return self

    def transform(self, X):
        """Clip to the bounds, standardize, and clip to ``[-clip, clip]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_scaled : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = validate_values(self, X, reset=False)
        standardized = (np.clip(X, self.lower_, self.upper_) - self.mean_) / self.scale_
        return np.clip(standardized, -self.clip, self.clip)

    def inverse_transform(self, X):
        """Map standardized values back to the data's units.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X * self.scale_ + self.mean_

    # -- private helpers ------------------------------------------------------------------

    def _release_cost(self, is_tcm, epsilon, **_):
        """Each user's level: the means and variances of all features are one release
        (the hybrid mean's split between mean and variance is inside it)."""
        return ReleaseCost.at_levels(epsilon)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
