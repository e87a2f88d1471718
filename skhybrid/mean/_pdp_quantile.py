"""The personalized exponential mechanism (PE) of Jorgensen, Yu and Cormode for quantiles."""

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval

from ..accounting import ReleaseCost, charge_release, check_user_id
from ..base import (
    RANDOM_STATE_CONSTRAINT,
    MeanEstimatorMixin,
    check_fit_metadata,
)
from ..mechanisms._exponential import personalized_exponential_quantile
from ..utils._random import check_random_state
from ._pdp import _validate_curator_fit


class PDPQuantileEstimator(MeanEstimatorMixin, BaseEstimator):
    """Private quantile for per-user privacy levels by the PE mechanism (PDP baseline).

    Jorgensen, Yu and Cormode's personalized exponential mechanism (PE) scores each
    candidate r by the smallest total epsilon of the users whose values would have to
    change for r to become the quantile, and draws r with density proportional to
    ``exp(-cost / 2)`` on ``[lower, upper]``: moving a private user (small epsilon) is
    cheap, moving a less private one expensive, so every user's value counts in
    proportion to what they allow. It is the baseline against which Ferrando et al.
    compare the mixed median (:class:`MixedQuantileEstimator`, their Figure 2). The
    cost function and the derivation of the guarantee are in
    :func:`skhybrid.mechanisms._exponential.personalized_quantile_costs`.

    Read more in docs/privacy.rst about the guarantee and its neighbouring relation.

    Parameters
    ----------
    quantile : float, default=0.5
        The quantile q in [0, 1] to estimate (0.5: the median).
    epsilon : float, default=1.0
        Every user's privacy level when no ``epsilon`` metadata is passed (``np.inf``:
        public data); the total budget of one fit over all features.
    bounds : pair (lower, upper) or None, default=None
        Data-independent clipping bounds, scalars or per feature; the private quantile
        lies within them. ``None`` derives them from the data and emits
        :class:`~skhybrid.exceptions.PrivacyLeakWarning`.
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` draws from the operating system's secure randomness; an int gives
        reproducible results (simulations only).
    ledger : PrivacyLedger, default=None
        Charge every release to this :class:`~skhybrid.accounting.PrivacyLedger`:
        each user pays their own epsilon (docs/user_guide/accounting.rst) before any
        noise is drawn, or the fit raises
        :class:`~skhybrid.exceptions.BudgetExceededError` and releases nothing. Needs
        ``user_id`` in ``fit``. Shared, never copied, by ``clone`` and model selection.

    Attributes
    ----------
    quantile_ : ndarray of shape (n_features,)
        The private estimate of the quantile.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has string feature names.

    See Also
    --------
    MixedQuantileEstimator : one exponential mechanism per privacy level, mixed.
    PDPSampleEstimator : the Sample mechanism of the same paper, for means.

    Notes
    -----
    Neighbouring relation: replace one user's value (any value), with the number of
    users and every user's epsilon public. Replacing user u changes every candidate's
    cost by at most ``epsilon_u``, so the draw is ``epsilon_u``-DP for user u (the PE
    theorem). With several features each feature is drawn at ``epsilon_i /
    n_features`` (basic composition). Public users never move: the estimate always
    has at least as many public values on each side as the quantile needs. Values are
    clipped to the bounds first. ``score`` is minus the squared error of ``quantile_``
    against the empirical quantiles of ``X`` (:func:`numpy.quantile`).

    The interval costs take ``O(n log n)`` time per feature.

    References
    ----------
    Z. Jorgensen, T. Yu and G. Cormode. "Conservative or liberal? Personalized
    differential privacy". ICDE 2015.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid import PDPQuantileEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1001, 1))
    >>> epsilon = np.repeat([0.1, 1.0], [500, 501])
    >>> est = PDPQuantileEstimator(bounds=(-5, 5), random_state=0).fit(X, epsilon=epsilon)
    >>> bool(abs(est.quantile_[0] - np.median(X)) < 0.3)
    True
    """

    _parameter_constraints: dict = {
        "quantile": [Interval(Real, 0, 1, closed="both")],
        "epsilon": [Interval(Real, 0, np.inf, closed="right")],
        "bounds": ["array-like", None],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "ledger": [HasMethods(["charge"]), None],
    }

    _estimate_attribute = "quantile_"

    def __init__(self, quantile=0.5, *, epsilon=1.0, bounds=None, random_state=None,
                 ledger=None):
        self.quantile = quantile
        self.epsilon = epsilon
        self.bounds = bounds
        self.random_state = random_state
        self.ledger = ledger

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, trust_group=None, epsilon=None, user_id=None):
        """Fit the private quantile.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            One row per user.
        y : ignored
        trust_group : array-like of shape (n_samples,), default=None
            Accepted for the common API; every user must be ``"tcm"`` (or True).
        epsilon : array-like of shape (n_samples,), default=None
            Per-user privacy levels, > 0; ``np.inf`` marks public users. ``None``
            gives everyone the ``epsilon`` parameter.
        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        Returns
        -------
        self : PDPQuantileEstimator
        """
        check_fit_metadata(self, trust_group, epsilon, hybrid=False)
        check_user_id(self, user_id)
        values, user_epsilon, lower, upper, _ = _validate_curator_fit(
            self, X, trust_group, epsilon
        )
        charge_release(self, user_id, np.ones(values.shape[0], dtype=bool), user_epsilon)
        rng = check_random_state(self.random_state)
        n_features = values.shape[1]
        # The user's budget is split evenly over the features (basic composition).
        feature_epsilon = user_epsilon / n_features
        self.quantile_ = np.array([
            personalized_exponential_quantile(
                values[:, feature], feature_epsilon, self.quantile, lower[feature],
                upper[feature], rng,
            )
            for feature in range(n_features)
        ])
        return self

    def _release_cost(self, is_tcm, epsilon, **_):
        """Each user's own level: the PE mechanism's cost of moving user i is epsilon_i
        (Jorgensen et al. 2015)."""
        return ReleaseCost.at_levels(epsilon)

    def _empirical_statistic(self, X):
        # score(X) compares quantile_ with numpy's linearly interpolated quantile of X.
        return np.quantile(X, self.quantile, axis=0)
