"""Mixed estimators for per-user privacy levels (Ferrando, Gillenwater and Kulesza).

Users are grouped by privacy level (``np.inf`` = public); each group gets its own
private estimate at its own epsilon, and the estimates are mixed with inverse-variance
weights computed from public quantities only (group sizes, epsilons, bounds, variance).
"""

from dataclasses import dataclass
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from .._group_estimates import central_group_means, central_group_means_variance
from ..accounting import ReleaseCost, charge_release, check_user_id
from ..base import (
    RANDOM_STATE_CONSTRAINT,
    MeanEstimatorMixin,
    check_fit_metadata,
)
from ..mechanisms import ExponentialMechanism
from ..theory._mixed import (
    mixed_mean_variance,
    mixed_mean_weights,
    mixed_quantile_weights,
    mse_about_empirical_mean,
)
from ..utils._random import check_random_state
from ..mechanisms._feature_weights import noise_ranges
from ..utils._validation import resolve_variance
from ._adpm import _private_variance_of_levels
from ._hybrid import PRIVATE_VARIANCE_SHARE
from ._ranking import error_variance
from ._pdp import _validate_curator_fit, check_curator_users
from ._statistics import LevelStatistics, StatisticsFitMixin


@dataclass(frozen=True)
class _EpsilonGroups:
    """The users grouped by privacy level, as every mixed estimator needs them.

    Attributes
    ----------
    values : ndarray of shape (n_samples, n_features)
        Clipped values, rows ordered by group.
    epsilons : ndarray of shape (n_groups,)
        The distinct levels in increasing order (``np.inf``, the public group, last).
    sizes : ndarray of shape (n_groups,)
    starts : ndarray of shape (n_groups,)
        First row of each group in ``values``.
    lower, upper, variance : ndarray of shape (n_features,)
    """

    values: np.ndarray
    epsilons: np.ndarray
    sizes: np.ndarray
    starts: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    variance: np.ndarray

    @property
    def data_range(self):
        """L1 sensitivity of one user's value vector under replacement: sum of the ranges."""
        return float(np.sum(self.upper - self.lower))

    def members(self, group):
        """The clipped values of one group's users."""
        start = self.starts[group]
        return self.values[start : start + self.sizes[group]]


def _group_by_epsilon(estimator, X, trust_group, epsilon, user_id):
    values, user_epsilon, lower, upper, variance = _validate_curator_fit(
        estimator, X, trust_group, epsilon
    )
    charge_release(estimator, user_id, np.ones(user_epsilon.shape[0], dtype=bool), user_epsilon)
    epsilons, group_index, sizes = np.unique(
        user_epsilon, return_inverse=True, return_counts=True
    )
    if epsilons.size > 1:
        values = values.take(np.argsort(group_index, kind="stable"), axis=0)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return _EpsilonGroups(values, epsilons, sizes, starts, lower, upper, variance)


def _exponential_quantile(values, quantile, lower, upper, mechanism, rng):
    """One feature's private quantile by the exponential mechanism (Smith 2011, Alg. 2).

    The candidates are the intervals between consecutive sorted values, with the bounds
    as outer ends; the interval with k values below it has utility -|k - quantile * n|
    and base measure its length (an empty interval is never chosen). A uniform draw in
    the chosen interval samples the output density proportional to exp(epsilon u(y) / 2)
    on [lower, upper]. Replacing one value changes the number of values below any point
    by at most 1: utility sensitivity 1 under the replace-one relation.
    """
    edges = np.concatenate([[lower], np.sort(values), [upper]])
    lengths = np.diff(edges)
    with np.errstate(divide="ignore"):
        log_lengths = np.log(lengths)
    utilities = -np.abs(np.arange(values.size + 1) - quantile * values.size)
    chosen = mechanism.select(utilities, log_lengths, random_state=rng)
    return edges[chosen] + lengths[chosen] * rng.random()


class _BaseMixedEstimator(BaseEstimator):
    """Group the users by epsilon, estimate each group privately, mix the estimates."""

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, np.inf, closed="right")],
        "bounds": ["array-like", None],
        "variance": [Interval(Real, 0, None, closed="left"), "array-like", None],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "ledger": [HasMethods(["charge"]), None],
    }

    def _release_cost(self, is_tcm, epsilon, **_):
        """Each user's own level: every privacy group's Laplace or exponential mechanism
        runs at the group's level, on disjoint users (parallel composition)."""
        return ReleaseCost.at_levels(epsilon)

    def _fit_mixture(self, X, trust_group, epsilon, user_id=None):
        """Fit the per-group estimates and their mixture.

        Returns
        -------
        estimate : ndarray of shape (n_features,)
        groups : _EpsilonGroups
        weights : ndarray of shape (n_features, n_groups)
        """
        groups = _group_by_epsilon(self, X, trust_group, epsilon, user_id)
        rng = check_random_state(self.random_state)
        estimates = np.array([
            self._group_estimate(groups, group, rng) for group in range(groups.sizes.size)
        ])
        weights = self._mixing_weights(
            groups.sizes, groups.epsilons, data_range=groups.data_range,
            variance=groups.variance[:, np.newaxis],
        )
        self.group_epsilons_ = groups.epsilons
        self.group_sizes_ = groups.sizes
        self.group_weights_ = weights.T.copy()
        return np.einsum("fg,gf->f", weights, estimates), groups, weights


class MixedMeanEstimator(StatisticsFitMixin, MeanEstimatorMixin, _BaseMixedEstimator):
    """Private mean for per-user privacy levels: one Laplace mean per level, mixed.

    Users with the same epsilon form a group; each group's mean gets Laplace noise for
    its own epsilon (public users, ``epsilon = inf``, get none), and the group means are
    combined with the weights that minimise the variance of the mixture, proportional
    to 1 / (sigma^2 / n_g + 2 (R / (n_g epsilon_g))^2) (Ferrando et al. Sec. 2, after
    Rubin and Weisberg 1975).

    Read more in docs/privacy.rst about the guarantee and its neighbouring relation.

    Parameters
    ----------
    epsilon : float, default=1.0
        Every user's privacy level when no ``epsilon`` metadata is passed (``np.inf``:
        public data); the total budget of one fit over all features.
    bounds : pair (lower, upper) or None, default=None
        Data-independent clipping bounds, scalars or per feature. ``None`` derives them
        from the data and emits :class:`~skhybrid.exceptions.PrivacyLeakWarning`.
    variance : "private", float, array-like of shape (n_features,) or None, default="private"
        The data variance used by the weights and ``expected_mse_``.

        - ``"private"``: estimated privately in the fit, as
          :class:`~skhybrid.ADPMEstimator` does: each private group's first and second
          moments at ``PRIVATE_VARIANCE_SHARE`` (5%) of its epsilon (the group means get
          the rest: sequential composition), the public group's exactly.
        - a float or per-feature array: a known (public) variance.
        - ``None``: the worst case for the bounds, (upper - lower)**2 / 4.

        The default was chosen by measurement (the user guide's choosing page,
        "Per-user privacy levels: ADPM's and the mixed mean's default").
    clamp : bool, default=False
        Whether to project the released estimate onto the bounds (post-processing;
        the error never grows, ``expected_mse_`` becomes an upper bound). ``False``
        keeps the estimate unbiased; see the section on clamping in docs/privacy.rst.
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` draws noise from the operating system's secure randomness; an int
        gives reproducible noise (simulations only).

    ledger : PrivacyLedger, default=None
        Charge every release to this :class:`~skhybrid.accounting.PrivacyLedger`:
        each user pays their own privacy cost (docs/user_guide/accounting.rst) before
        any noise is drawn, or the fit raises
        :class:`~skhybrid.exceptions.BudgetExceededError` and releases nothing. Needs
        ``user_id`` in ``fit``. Shared, never copied, by ``clone`` and model selection.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The private estimate of the mean.
    group_epsilons_ : ndarray of shape (n_groups,)
        The distinct privacy levels, increasing (``np.inf``, the public group, last).
    group_sizes_ : ndarray of shape (n_groups,)
        Users per group (public under the neighbouring relation).
    group_weights_ : ndarray of shape (n_groups, n_features)
        Each group's weight in the mixture, per feature; each column sums to 1.
    variance_ : ndarray of shape (n_features,)
        The data variance the weights used: the private estimate
        (``variance="private"``), the known variance, or the worst case.
    expected_mse_ : ndarray of shape (n_features,)
        Expected squared error of ``mean_`` against the empirical mean of the fitted
        data (:func:`~skhybrid.theory.mixed_mean_variance` converted by
        :func:`~skhybrid.theory.mse_about_empirical_mean`) for i.i.d. data of the given
        ``variance`` (an estimate with ``"private"``); with ``variance=None`` an upper
        bound.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has string feature names.

    See Also
    --------
    PDPSampleEstimator : the Sample mechanism baseline.
    MixedQuantileEstimator : the same mixing for quantiles.
    ADPMEstimator : one weight per user from a convex program.

    Notes
    -----
    Neighbouring relation: replace one user's value (any value), with the number of
    users, every user's epsilon and hence the group sizes public. Replacing a user of
    group g moves the group's clipped sum by at most R = sum_j (upper_j - lower_j) in
    L1, so Laplace noise of scale R / (n_g epsilon_g) on each coordinate of the group
    mean (``skhybrid._group_estimates.central_group_mean``) protects the group's
    users at epsilon_g. The other groups' estimates do not depend on them and the
    weights depend on public quantities only, so each user gets their own epsilon.

    Ferrando et al. write the sum's sensitivity as ``max(|a|, |b|)``, its add/remove
    sensitivity; under replacement it is b - a (see :mod:`skhybrid.theory`).

    References
    ----------
    C. Ferrando, J. Gillenwater and A. Kulesza. "Combining Public and Private Data".
    PriML workshop at NeurIPS 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.mean._mixed import MixedMeanEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(2000, 1))
    >>> epsilon = np.repeat([0.1, 1.0, np.inf], [1000, 900, 100])
    >>> est = MixedMeanEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=epsilon)
    >>> est.group_epsilons_.tolist(), est.group_sizes_.tolist()
    ([0.1, 1.0, inf], [1000, 900, 100])
    >>> bool(abs(est.mean_[0] - X.mean()) < 0.05)
    True
    """

    _mixing_weights = staticmethod(mixed_mean_weights)
    _allow_inf = True

    _parameter_constraints: dict = {
        **_BaseMixedEstimator._parameter_constraints,
        "variance": [Interval(Real, 0, None, closed="left"), "array-like",
                     StrOptions({"private"}), None],
        "clamp": ["boolean"],
    }

    def __init__(
        self, *, epsilon=1.0, bounds=None, variance="private", clamp=False, random_state=None,
        ledger=None,
    ):
        self.epsilon = epsilon
        self.bounds = bounds
        self.variance = variance
        self.clamp = clamp
        self.random_state = random_state
        self.ledger = ledger

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, trust_group=None, epsilon=None, user_id=None):
        """Fit the private mean.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), Dask array or Dask DataFrame
            One row per user. A Dask collection is reduced chunk by chunk where it
            lives; only the counts and clipped sums per privacy level are collected.
        y : ignored
        trust_group : array-like of shape (n_samples,), default=None
            Accepted for the common API; every user must be ``"tcm"`` (or True).
        epsilon : array-like of shape (n_samples,), default=None
            Per-user privacy levels, > 0; ``np.inf`` marks public users. ``None``
            gives everyone the ``epsilon`` parameter.

        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        Returns
        -------
        self : MixedMeanEstimator
        """
        self._fit_statistics(X, trust_group, epsilon, user_id)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, *, trust_group=None, epsilon=None, user_id=None):
        """Add a chunk of users; the estimate is released when ``mean_`` is next read.

        The counts and clipped sums per privacy level accumulate over calls; the first
        read of ``mean_`` (or ``predict``/``score``) after new data draws each group's
        noise once and updates the other fitted attributes. Each further release
        spends every earlier user's epsilon again and warns with
        :class:`~skhybrid.exceptions.PrivacyBudgetWarning`.

        Parameters
        ----------
        X, y, trust_group, epsilon
            As in :meth:`fit`, for the new users only.

        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        Returns
        -------
        self : MixedMeanEstimator
        """
        return self._partial_fit_statistics(X, trust_group, epsilon, user_id)

    # -- sufficient statistics and the release (see _statistics.StatisticsFitMixin) -------

    def _raw_rows(self, is_tcm, epsilon):
        return np.ones_like(is_tcm)

    def _private_variance(self):
        return isinstance(self.variance, str) and self.variance == "private"

    def _public_context(self, lower, upper):
        # With variance="private": estimated in the release, the worst case until then.
        return {"lower": lower, "upper": upper, "variance": resolve_variance(
            None if self._private_variance() else self.variance, lower, upper)}

    def _mean_epsilons(self, epsilons):
        """The groups' epsilons of their means: with ``variance="private"`` each keeps
        ``1 - PRIVATE_VARIANCE_SHARE`` of its own."""
        if not self._private_variance():
            return epsilons
        return epsilons * (1.0 - PRIVATE_VARIANCE_SHARE)

    def _release_cost(self, is_tcm, epsilon, **_):
        """Each user's own level: every privacy group's Laplace mechanism runs at the
        group's level, on disjoint users (parallel composition). With
        ``variance="private"`` a user's level is split (sequential composition):
        ``PRIVATE_VARIANCE_SHARE`` on the variance's moments, the rest on the group's
        mean; the total is still their level."""
        return ReleaseCost.at_levels(epsilon)

    def _checks_finite(self):
        return True

    def _chunk_statistics(self, X, is_tcm, epsilon, context, rng, check_finite=False):
        """Counts and clipped sums per privacy level (``check_finite``: every value
        tested in the same pass; a NaN or an infinity raises
        :class:`~skhybrid.base.NonFiniteValues`)."""
        check_curator_users(self, is_tcm)
        return LevelStatistics.from_users(
            X, epsilon, np.zeros(X.shape[0], dtype=bool), context["lower"], context["upper"],
            check_finite=check_finite, squares=self._private_variance(),
        )

    def _plan_release(self, statistics, context, fit_warnings):
        """Refuse a private group's noise too wide to draw, before the charge."""
        private = np.isfinite(statistics.epsilons)
        if private.any():
            central_group_means_variance(
                statistics.counts[private],
                epsilons=self._mean_epsilons(statistics.epsilons[private]),
                ranges=context["upper"] - context["lower"],
            )

    def _release(self, statistics, context, plan, rng):
        """Each group's mean (Laplace noise at its epsilon; exact if public), mixed."""
        lower, upper, variance = context["lower"], context["upper"], context["variance"]
        # Each feature's noise is calibrated to its share of the budget (noise_ranges).
        data_range = noise_ranges(upper - lower)[:, np.newaxis]
        sizes = statistics.counts
        if self._private_variance():
            # Released first (each group at a share of its own epsilon); evaluated as a
            # design by expected_mse, the design's variance.
            variance = error_variance(
                self, _private_variance_of_levels(statistics, lower, upper, rng))
        self.variance_ = np.array(variance, dtype=np.float64)
        # The means' levels (the rest of each epsilon with variance="private").
        epsilons = self._mean_epsilons(statistics.epsilons)
        # Every private group at once; the public group (inf) is exact.
        centred = statistics.centred_sums(lower, upper)
        estimates = lower + centred / sizes[:, np.newaxis]
        private = np.isfinite(epsilons)
        if private.any():
            estimates[private], _ = central_group_means(
                centred[private], sizes[private], origin=lower, epsilons=epsilons[private],
                ranges=upper - lower, rng=rng,
            )
        weights = self._mixing_weights(
            sizes, epsilons, data_range=data_range, variance=variance[:, np.newaxis]
        )
        self.group_epsilons_ = statistics.epsilons
        self.group_sizes_ = sizes
        self.group_weights_ = weights.T.copy()
        data_variance = error_variance(self, variance)
        population_mse = mixed_mean_variance(
            sizes, epsilons, data_range=data_range, variance=data_variance[:, np.newaxis],
            weights=weights,
        )
        self.expected_mse_ = np.asarray(
            mse_about_empirical_mean(population_mse, n_samples=statistics.n_users,
                                     variance=data_variance),
            dtype=np.float64,
        )
        return np.einsum("fg,gf->f", weights, estimates)


class MixedQuantileEstimator(MeanEstimatorMixin, _BaseMixedEstimator):
    """Private quantile for per-user privacy levels: one exponential mechanism per level, mixed.

    Users with the same epsilon form a group; each group's quantile is released by the
    exponential mechanism with Smith's (2011) utility at the group's epsilon (a public
    group uses its exact quantile), and the group quantiles are mixed with the weights
    of :class:`MixedMeanEstimator`, as Ferrando et al. do (Sec. 2, "Quantiles").

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
    variance : float, array-like of shape (n_features,) or None, default=None
        The variance in the mean's mixing weights; ``None`` uses the worst case for
        the bounds, (upper - lower)**2 / 4. There is no ``"private"``: the quantile's
        error needs no data variance. A group's quantile errs by its sampling,
        q (1 - q) / (n f^2), and the exponential mechanism's rank noise, about
        8 / (n epsilon f)^2, both scaling with 1 / f^2 for the density f at the
        quantile, which cancels in the weights; the data variance is in neither, and no
        released figure uses it. Measured on the choosing guide's shapes and privacy
        mixes (its "Mixed median" paragraph), the weights at the true data variance were
        up to 5 times worse than at ``None`` (the salaries); ``None`` was within 1.05.
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` draws from the operating system's secure randomness; an int gives
        reproducible results (simulations only).

    ledger : PrivacyLedger, default=None
        Charge every release to this :class:`~skhybrid.accounting.PrivacyLedger`:
        each user pays their own privacy cost (docs/user_guide/accounting.rst) before
        any noise is drawn, or the fit raises
        :class:`~skhybrid.exceptions.BudgetExceededError` and releases nothing. Needs
        ``user_id`` in ``fit``. Shared, never copied, by ``clone`` and model selection.

    Attributes
    ----------
    quantile_ : ndarray of shape (n_features,)
        The private estimate of the quantile.
    group_epsilons_ : ndarray of shape (n_groups,)
        The distinct privacy levels, increasing (``np.inf``, the public group, last).
    group_sizes_ : ndarray of shape (n_groups,)
        Users per group (public under the neighbouring relation).
    group_weights_ : ndarray of shape (n_groups, n_features)
        Each group's weight in the mixture, per feature; each column sums to 1.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has string feature names.

    See Also
    --------
    MixedMeanEstimator : the same mixing for means, whose weights this reuses.

    Notes
    -----
    Neighbouring relation: replace one user's value (any value), with the number of
    users and every user's epsilon (hence the group sizes) public. Replacing one user
    of group g changes the number of the group's values below any point by at most 1,
    so the utility has sensitivity 1 and the exponential mechanism with
    epsilon_g / n_features per feature protects the group's users at epsilon_g over
    all features (basic composition). The other groups do not depend on them and the
    weights are public, so each user gets their own epsilon.

    The weights are the mean's inverse-variance weights (a weighting tailored to the
    exponential mechanism is left open by the paper), so they are not optimal for
    quantiles; ``score`` is minus the squared error of ``quantile_`` against the
    empirical quantiles of ``X`` (:func:`numpy.quantile`, linear interpolation),
    averaged over the features.

    References
    ----------
    C. Ferrando, J. Gillenwater and A. Kulesza. "Combining Public and Private Data".
    PriML workshop at NeurIPS 2021.

    A. Smith. "Privacy-preserving statistical estimation with optimal convergence
    rates". STOC 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.mean._mixed import MixedQuantileEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1001, 1))
    >>> epsilon = np.repeat([0.1, 1.0], [500, 501])
    >>> est = MixedQuantileEstimator(bounds=(-5, 5), variance=1.0, random_state=0)
    >>> est = est.fit(X, epsilon=epsilon)
    >>> bool(abs(est.quantile_[0] - np.median(X)) < 0.3)
    True
    """

    _parameter_constraints: dict = {
        **_BaseMixedEstimator._parameter_constraints,
        "quantile": [Interval(Real, 0, 1, closed="both")],
    }
    _mixing_weights = staticmethod(mixed_quantile_weights)

    def __init__(
        self, quantile=0.5, *, epsilon=1.0, bounds=None, variance=None, random_state=None,
        ledger=None,
    ):
        self.quantile = quantile
        self.epsilon = epsilon
        self.bounds = bounds
        self.variance = variance
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

        Returns
        -------
        self : MixedQuantileEstimator
        """
        check_fit_metadata(self, trust_group, epsilon, hybrid=False)
        check_user_id(self, user_id)
        self.quantile_, _, _ = self._fit_mixture(X, trust_group, epsilon, user_id)
        return self

    _estimate_attribute = "quantile_"

    def _empirical_statistic(self, X):
        # score(X) compares quantile_ with numpy's linearly interpolated quantile of X.
        return np.quantile(X, self.quantile, axis=0)

    def _group_estimate(self, groups, group, rng):
        """The group's quantile: exact for the public group, else the exponential mechanism."""
        values = groups.members(group)
        epsilon = groups.epsilons[group]
        if np.isinf(epsilon):
            return np.quantile(values, self.quantile, axis=0)
        n_features = values.shape[1]
        # The user's budget is split evenly over the features (basic composition).
        mechanism = ExponentialMechanism(epsilon=epsilon / n_features, sensitivity=1.0)
        return np.array([
            _exponential_quantile(
                values[:, feature], self.quantile, groups.lower[feature],
                groups.upper[feature], mechanism, rng,
            )
            for feature in range(n_features)
        ])
