"""ADPM: the minimax-optimal affine mean for arbitrary per-user epsilon (Chaudhuri and Courtade)."""

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from ..accounting import ReleaseCost
from ..base import (
    RANDOM_STATE_CONSTRAINT,
    MeanEstimatorMixin,
    NonFiniteValues,
)
from ..mechanisms import LaplaceMechanism, LocalLaplaceRandomizer
from ..mechanisms._feature_weights import feature_noise_weights, scaled_ranges
from ..mechanisms._noise import personalized_laplace_release, personalized_laplace_variance
from ..theory import (
    adpm_weights,
    affine_mse,
    ldpe_weights,
    propdpm_weights,
    saturation_threshold,
    stretching_mse,
    stretching_weights,
    uni_weights,
)
from ..theory._mixed import mse_about_empirical_mean
from ..utils._sums import all_finite, centred_sums, rounding_slack, square_grid
from ..utils._validation import (
    check_epsilon,
    check_trust_group,
    clip_to_bounds,
    masked_rows,
    resolve_variance,
)
from ._hybrid import PRIVATE_VARIANCE_SHARE, private_variance_estimate
from ._ranking import error_variance
from ._statistics import LevelStatistics, StatisticsFitMixin, level_lookup

_BASELINES = {
    "uni": uni_weights,
    "propdpm": propdpm_weights,
    "ldpe": ldpe_weights,
    "stretching": stretching_weights,
}


def _local_users(is_tcm, epsilon):
    """lm users with a finite epsilon; public lm users need no local noise (count as tcm)."""
    if is_tcm.all():  # no lm user (no trust_group): no pass over the levels
        return np.zeros(is_tcm.shape[0], dtype=bool)
    return ~is_tcm & np.isfinite(epsilon)


def _released_level_mean(level_sums, weights, counts, ranges, epsilon, rng):
    """``sum_k w_k level_sums[k]`` plus personalized Laplace noise (Lemma 1 of Chaudhuri
    and Courtade): user i of level k moves it by ``w_k sum(ranges)`` in L1, so the scale
    ``max_k w_k sum(ranges) / epsilon_k`` protects each at their own ``epsilon_k``. Each
    feature's noise is in proportion to its range (:func:`feature_noise_weights`).

    Returns the released sum and the variance of its noise, per feature.
    """
    feature_weights = feature_noise_weights(ranges)
    scaled = scaled_ranges(ranges, feature_weights)
    weighted = (weights @ level_sums) / feature_weights
    magnitude = float(np.sum(np.abs(weights) * counts)) * scaled
    slack = float(np.sum(rounding_slack(magnitude, n_operations=5 + weights.size)))
    sensitivity = np.abs(weights) * float(np.sum(scaled)) + slack
    released, scale = personalized_laplace_release(weighted[np.newaxis, :], sensitivity,
                                                   epsilon, rng, secure=True)
    return released[0] * feature_weights, 2.0 * (scale * feature_weights) ** 2


def _private_variance_of_levels(statistics, lower, upper, rng):
    """``variance="private"``: the data variance from the levels' second moments.

    Not from the paper (derived here, as :func:`~skhybrid.mean._hybrid.
    private_variance_estimate` for the hybrid mean). The tcm levels' first and second
    moments about the bounds' midpoint are released at ``FIRST_MOMENT_SHARE`` and the
    rest of ``PRIVATE_VARIANCE_SHARE`` of every tcm user's epsilon (sequential
    composition), with weights in proportion to
    epsilon (PropDPM: the smallest personalized noise for a plain weighting); the lm
    levels' moments are post-processing of their reports. Both go through
    :func:`~skhybrid.mean._hybrid.private_variance_estimate`.
    """
    centre, square_range = square_grid(lower, upper)
    ranges = upper - lower
    squared_ranges = ranges * ranges
    central, local = ~statistics.local, statistics.local
    counts = statistics.counts
    tcm = {"tcm_first": None, "tcm_first_variance": None, "tcm_second": None,
           "tcm_second_variance": None}
    if counts[central].sum():
        eps, n = statistics.epsilons[central], counts[central]
        weights = propdpm_weights(eps, counts=n).weights
        share = eps * PRIVATE_VARIANCE_SHARE
        largest = int(n.max())
        first, first_noise = _released_level_mean(
            statistics.centred_sums(lower, upper)[central], weights, n, ranges,
            share * FIRST_MOMENT_SHARE, rng)
        zero = np.zeros_like(square_range)
        second, second_noise = _released_level_mean(
            centred_sums(statistics.square_sums[central], zero, square_range,
                         n_users=largest),
            weights, n, square_range, share * (1.0 - FIRST_MOMENT_SHARE), rng)
        # The variances of the noise: the moments' sampling errors cancel in the variance.
        tcm = {"tcm_first": first + lower - centre, "tcm_first_variance": first_noise,
               "tcm_second": second, "tcm_second_variance": second_noise}
    reports = {"report_first": None, "report_second": None, "n_reports": 0,
               "report_noise_variance": None}
    n_lm = int(counts[local].sum())
    if n_lm:
        noise = np.reshape(LocalLaplaceRandomizer(bounds=(lower, upper)).noise_variance(
            lower.shape[0], epsilon=statistics.epsilons[local]), (int(local.sum()), -1))
        reports = {
            "report_first": statistics.report_sums[local].sum(axis=0) / n_lm - centre,
            "report_second": statistics.report_square_sums[local].sum(axis=0) / n_lm,
            "n_reports": n_lm,
            "report_noise_variance": counts[local] @ noise / n_lm,
        }
    variance = private_variance_estimate(ranges=ranges, **tcm, **reports,
                                         lower_z=ADPM_VARIANCE_LOWER_Z)
    # The weight programs need a positive variance.
    return np.maximum(variance, squared_ranges / 4.0 * _SMALLEST_VARIANCE)


#: With ``variance="private"``: the first moment's part of ``PRIVATE_VARIANCE_SHARE``
#: (the second moment gets the rest). The squared first moment's error grows with the
#: mean's distance to the midpoint, which is large for skewed data in wide bounds.
#: Measured on the bundled salaries, 70% of users at epsilon 0.1, 25% at 1, 5% at 5, 40
#: trials (RMSE; ADPM and MixedMeanEstimator): 0.5 gave 148 and 155, 0.7 gave 132 and
#: 134, 0.85 gave 130 and 133 (at the true variance: 103 and 102).
FIRST_MOMENT_SHARE = 0.7

#: The smallest private variance ADPM solves at, as a share of the worst case.
_SMALLEST_VARIANCE = 1e-6

#: With ``variance="private"``: the estimate is not lowered (0 standard errors), unlike
#: KVH's (``PRIVATE_VARIANCE_LOWER_Z``). Measured on the bundled salaries with 20 trials
#: per privacy mix (benchmarks/bench_mean_variance_defaults.py): lowered by one standard
#: error, the estimate fell to the floor in the mix of 70% at 0.1, 25% at 1 and 5% at 5
#: (RMSE 174 against 134 at the worst case and 117 at the true variance); not lowered,
#: 139. ADPM's weights move smoothly with the variance, and an underestimate costs as
#: much as an overestimate.
ADPM_VARIANCE_LOWER_Z = 0.0


def _program_variance(feature_variance, lower, upper):
    """The variance the weight programs see with several features: in the scaled units
    (feature_noise_weights) every feature has range data_range / d, and the program
    takes the features' mean scaled variance."""
    return float(np.mean(feature_variance / feature_noise_weights(upper - lower) ** 2))


class ADPMEstimator(StatisticsFitMixin, MeanEstimatorMixin, BaseEstimator):
    """Private mean for users who each choose their own privacy level epsilon_i.

    ADPM releases ``sum_i w_i x_i + Laplace(b)`` for values clipped to the bounds, with the
    weights that minimise the worst-case expected error (Algorithm 1 of Chaudhuri and
    Courtade): users with a larger epsilon get more weight, up to a saturation level
    beyond which more epsilon buys nothing ("some privacy can be free"). The noise scale
    ``b = D max_i w_i / epsilon_i`` (Lemma 1) protects every user at their own epsilon_i.

    Hybrid extension (derived in docs/adpm_solver.rst, in no paper): with ``trust_group``,
    lm users randomize their value locally with Laplace noise of scale
    ``D / epsilon_i``; their weights enter the program with that noise variance and are
    exempt from the central noise constraint.

    Read more in docs/privacy.rst.

    Parameters
    ----------
    epsilon : float, default=1.0
        Every user's privacy level when no ``epsilon`` metadata is passed.
    bounds : pair (lower, upper) or None, default=None
        Data-independent clipping bounds; ``None`` derives them from the data with a
        :class:`~skhybrid.exceptions.PrivacyLeakWarning`.
    variance : "private", float, array-like of shape (n_features,) or None, default="private"
        The data variance the weights are solved at (a variant the paper does not have).

        - ``"private"``: estimated privately in the fit, from the tcm levels' first and
          second moments released at ``PRIVATE_VARIANCE_SHARE`` (5%) of each tcm user's
          epsilon (the mean gets the rest: sequential composition) and from the lm
          users' reports (post-processing); the weights are solved at the estimate.
        - a float or per-feature array: a known bound on the variance.
        - ``None``: the paper's worst case (upper - lower)**2 / 4.

        The default was chosen by measurement: on the bundled salaries and three other
        shapes, each with three privacy mixes, ADPM at the private variance was within
        1.16x of the best of ADPM and its baselines, ADPM at the worst case about 6x
        (the user guide's choosing page, "Per-user privacy levels: ADPM's and the mixed
        mean's default").
    solver : {"auto", "exact", "cvxpy"}, default="auto"
        ``"exact"``: the closed-form KKT solution (sort and prefix sums, see
        docs/adpm_solver.rst); ``"cvxpy"``: the program solved by cvxpy with one variable
        per privacy level; ``"auto"``: the exact solver.
    strategy : {"adpm", "uni", "propdpm", "ldpe", "stretching"}, default="adpm"
        ``"adpm"``, or one of the paper's baselines (Sec. IV-A): uniform weights
        (``"uni"``), weights proportional to epsilon (``"propdpm"``), per-level Laplace
        means mixed by inverse variance (``"ldpe"``), or the stretching mechanism of
        Alaggan et al. (``"stretching"``, Example 2 in Appendix D): each value is shrunk
        towards the middle of the bounds by ``epsilon_i / max(epsilon)`` (the paper's
        rule on its domain [-0.5, 0.5], on any interval) and the mean released at
        ``max(epsilon)``. Stretching is biased (its weights sum to less than 1; its
        ``expected_mse_`` reads the bias from the release); it is here to show why ADPM
        is not. The baselines need tcm users only.
    local_reports : bool, default=False
        Whether lm rows of ``X`` are already reports privatized on the users' devices by
        :class:`~skhybrid.mechanisms.LocalLaplaceRandomizer` with the same bounds and
        their own epsilon; they are then neither clipped nor noised again.
    clamp : bool, default=False
        Whether to project the released estimate onto the bounds (post-processing;
        the error never grows, ``expected_mse_`` becomes an upper bound). ``False``
        keeps the estimate unbiased; see the section on clamping in docs/privacy.rst.
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` uses the operating system's secure randomness.

    ledger : PrivacyLedger, default=None
        Charge every release to this :class:`~skhybrid.accounting.PrivacyLedger`:
        each user pays their own privacy cost (docs/user_guide/accounting.rst) before
        any noise is drawn, or the fit raises
        :class:`~skhybrid.exceptions.BudgetExceededError` and releases nothing. Needs
        ``user_id`` in ``fit``. Shared, never copied, by ``clone`` and model selection.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The private estimate.
    weights_ : ndarray of shape (n_samples,)
        The users' weights; they sum to 1 (to ``mean(epsilon) / max(epsilon)`` with
        ``strategy="stretching"``). Absent after a fit on Dask input and after
        ``partial_fit``: a fitted estimator keeps nothing n-long or tied to the
        input's graph; look a user's weight up in ``level_weights_`` by their
        level (see docs/privacy.rst).
    level_epsilons_, level_local_, level_sizes_, level_weights_ : ndarray of shape (n_levels,)
        The privacy levels (a level is a trust model and an epsilon; tcm levels first,
        by epsilon), whether each is an lm level, its number of users and the weight of
        each of its users: every user of a level gets the same weight.
    noise_scale_ : ndarray of shape (n_features,)
        The Laplace scale of the central noise on each coordinate (0 when no central
        noise is needed).
    released_midpoint_ : bool
        True when the program's error bound exceeded the trivial one and, as Algorithm 1
        does, the midpoint of the bounds was released instead (then no data is used).
    saturation_epsilon_ : float
        The privacy level beyond which a tcm user's weight stops growing (for two groups,
        ``eps2 = R eps1`` with ``R = 1 + 8 / (n f eps1^2)``, Eq. (4)).
    variance_ : ndarray of shape (n_features,)
        The data variance the weights were solved at: the private estimate
        (``variance="private"``), the known variance, or the worst case.
    expected_mse_ : ndarray of shape (n_features,)
        Worst-case (known-variance, or estimated-variance) expected squared error of ``mean_`` against the
        empirical mean of the fitted data: an expectation over the noise and over which
        users hold which privacy level (each level's users a random share of i.i.d.
        users); on one given assignment whose groups differ, the error can be larger.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    See Also
    --------
    HybridMeanEstimator : two trust groups with one epsilon each.

    Notes
    -----
    Several features: ``epsilon`` is a user's total budget. With D = sum of the feature
    ranges, replacing user i moves the weighted sum by at most ``w_i D`` in L1, so each
    coordinate gets Laplace noise of scale ``D max_i w_i / epsilon_i``; the weights solve
    the program with data range D and the features' mean variance.

    References
    ----------
    S. Chaudhuri and T. A. Courtade. "Mean Estimation Under Heterogeneous Privacy: Some
    Privacy Can Be Free".

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid import ADPMEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(1000, 1))
    >>> epsilon = np.where(rng.random(1000) < 0.2, 0.1, 2.0)
    >>> est = ADPMEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=epsilon)
    >>> round(float(est.weights_.sum()), 6)
    1.0
    """

    _allow_inf = True

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "bounds": ["array-like", None],
        "variance": [Interval(Real, 0, None, closed="neither"), "array-like",
                     StrOptions({"private"}), None],
        "solver": [StrOptions({"auto", "exact", "cvxpy"})],
        "strategy": [StrOptions({"adpm", "uni", "propdpm", "ldpe", "stretching"})],
        "local_reports": ["boolean"],
        "clamp": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "ledger": [HasMethods(["charge"]), None],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        bounds=None,
        variance="private",
        solver="auto",
        strategy="adpm",
        local_reports=False,
        clamp=False,
        random_state=None,
        ledger=None,
    ):
        self.epsilon = epsilon
        self.bounds = bounds
        self.variance = variance
        self.solver = solver
        self.strategy = strategy
        self.local_reports = local_reports
        self.clamp = clamp
        self.random_state = random_state
        self.ledger = ledger

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, trust_group=None, epsilon=None, user_id=None):
        """Fit the private mean.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), Dask array or Dask DataFrame
            A Dask collection is reduced chunk by chunk where it lives; only the counts
            and value sums per privacy level are collected.
        y : ignored
        trust_group : array-like of shape (n_samples,), default=None
            ``"tcm"`` / ``"lm"`` or booleans (True = tcm); ``None``: everyone is tcm.
        epsilon : array-like of shape (n_samples,), default=None
            Per-user privacy levels, > 0; ``np.inf`` marks public users (no noise on
            their account). ``None`` gives everyone the ``epsilon`` parameter.

        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        Returns
        -------
        self : ADPMEstimator
        """
        validated, statistics = self._fit_statistics(X, trust_group, epsilon, user_id)
        if validated is None:
            # Dask input: a lazy per-user array would keep the input's graph, and with it
            # persisted data, on the fitted estimator; only the per-level form is kept.
            self.__dict__.pop("weights_", None)
        else:
            # The users' levels as the statistics found them: no second grouping pass.
            self.weights_ = self._validated_user_weights(*validated, groups=statistics.groups)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, *, trust_group=None, epsilon=None, user_id=None):
        """Add a chunk of users; the estimate is released when ``mean_`` is next read.

        The counts and value sums per privacy level accumulate over calls; the weights
        are solved and the noise drawn on the first read of ``mean_`` (or
        ``predict``/``score``) after new data, which also updates the other fitted
        attributes. Each further release spends every earlier user's epsilon again and
        warns with :class:`~skhybrid.exceptions.PrivacyBudgetWarning`. The per-user
        ``weights_`` are not kept over a stream: ``level_weights_`` gives each level's.

        Parameters
        ----------
        X, y, trust_group, epsilon
            As in :meth:`fit`, for the new users only.

        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        Returns
        -------
        self : ADPMEstimator
        """
        self.__dict__.pop("weights_", None)
        return self._partial_fit_statistics(X, trust_group, epsilon, user_id)

    # -- sufficient statistics and the release (see _statistics.StatisticsFitMixin) -------

    def _raw_rows(self, is_tcm, epsilon):
        if not self.local_reports:
            return np.ones_like(is_tcm)
        return ~_local_users(is_tcm, epsilon)

    def _private_variance(self):
        return isinstance(self.variance, str) and self.variance == "private"

    def _public_context(self, lower, upper):
        # With variance="private": estimated in the release, the worst case until then.
        variance = resolve_variance(None if self._private_variance() else self.variance,
                                    lower, upper, allow_zero=False)
        return {"lower": lower, "upper": upper, "variance": variance}

    def _mean_epsilons(self, statistics):
        """The levels' epsilons of the mean's release: with ``variance="private"`` the tcm
        levels keep ``1 - PRIVATE_VARIANCE_SHARE`` of theirs (lm reports are sent once,
        at the user's full epsilon)."""
        if not self._private_variance():
            return statistics.epsilons
        return np.where(statistics.local, statistics.epsilons,
                        statistics.epsilons * (1.0 - PRIVATE_VARIANCE_SHARE))

    def _checks_finite(self):
        return True

    def _chunk_statistics(self, X, is_tcm, epsilon, context, rng, check_finite=False):
        """Counts and value sums per (trust model, epsilon) level.

        tcm users' values are clipped; lm users' values are their reports, privatized
        here with their own epsilon (as their devices would) unless ``local_reports``.

        ``check_finite``: every value is tested in the pass that adds the codes, or,
        when lm users' reports are drawn here, before them (a pass of its own); a NaN
        or an infinity raises :class:`~skhybrid.base.NonFiniteValues`.
        """
        local = _local_users(is_tcm, epsilon)
        self._check_local(int(np.count_nonzero(local)))
        lower, upper = context["lower"], context["upper"]
        reports = None
        if local.any():
            if self.local_reports:
                reports = masked_rows(X, local)
            else:
                if check_finite:  # tested before the devices' noise is drawn
                    if not all_finite(X):
                        raise NonFiniteValues
                    check_finite = False
                user_epsilon = np.broadcast_to(epsilon, local.shape)[local]
                reports = LocalLaplaceRandomizer(bounds=(lower, upper)).privatize(
                    clip_to_bounds(masked_rows(X, local), lower, upper), epsilon=user_epsilon,
                    random_state=rng,
                )
        return LevelStatistics.from_users(X, epsilon, local, lower, upper, reports,
                                          check_finite, squares=self._private_variance())

    def _check_local(self, n_local):
        if self.strategy != "adpm" and n_local:
            raise ValueError(
                f"strategy={self.strategy!r} is a trusted-curator baseline; got {n_local} lm "
                "users. Use strategy='adpm' for the hybrid extension"
            )

    def _plan_release(self, statistics, context, fit_warnings):
        """Solve the weights from the level counts (public), and refuse a noise too wide
        to draw: both before the charge."""
        lower, upper, feature_variance = context["lower"], context["upper"], context["variance"]
        solution = self._solve(self._mean_epsilons(statistics), statistics.local,
                               statistics.counts,
                               float(np.sum(upper - lower)),
                               _program_variance(feature_variance, lower, upper))
        if not solution.trivial:
            for mechanism, sensitivity, epsilons in self._noise(solution, statistics, lower,
                                                                upper):
                if mechanism is None:
                    personalized_laplace_variance(sensitivity, epsilons, lower.shape[0], True)
                else:
                    mechanism.variance(lower.shape[0])
        return solution

    def _release_cost(self, is_tcm, epsilon, **_):
        """Each user's own level: the affine estimate's weights give user i
        epsilon_i-DP under the Laplace noise of :meth:`_noise` (Chaudhuri and Courtade).

        With ``variance="private"`` a tcm user's epsilon_i is split (sequential
        composition): ``PRIVATE_VARIANCE_SHARE`` on the variance's two moments, the rest
        on the mean; lm users' variance is post-processing of their reports. Each user's
        total is still epsilon_i."""
        return ReleaseCost.at_levels(epsilon)

    def _release(self, statistics, context, solution, rng):
        """Add the noise to the weighted sum with the planned weights."""
        lower, upper, feature_variance = context["lower"], context["upper"], context["variance"]
        data_range = float(np.sum(upper - lower))
        feature_weights = feature_noise_weights(upper - lower)
        levels, local, counts = statistics.epsilons, statistics.local, statistics.counts
        if self._private_variance() and not solution.trivial:
            # Released first; the weights are solved at it (evaluated as a design by
            # expected_mse, at the design's variance). When even the worst case's program
            # releases the midpoint, the levels are too private for any measurable
            # moment: nothing is released.
            feature_variance = error_variance(
                self, _private_variance_of_levels(statistics, lower, upper, rng))
            solution = self._solve(self._mean_epsilons(statistics), local, counts,
                                   data_range,
                                   _program_variance(feature_variance, lower, upper))
        program_variance = _program_variance(feature_variance, lower, upper)
        self.variance_ = np.array(feature_variance, dtype=np.float64)
        level_weights = solution.weights

        # Each level's report noise variance, per feature.
        report_variance = np.zeros((levels.size, lower.shape[0]))
        if local.any():
            report_variance[local] = np.reshape(
                LocalLaplaceRandomizer(bounds=(lower, upper)).noise_variance(
                    lower.shape[0], epsilon=levels[local]),
                (-1, 1) if lower.shape[0] == 1 else (-1, lower.shape[0]),
            )
        self.released_midpoint_ = bool(solution.trivial)
        if solution.trivial:
            estimate = (lower + upper) / 2.0
            self.noise_scale_ = np.zeros(lower.shape[0])
        else:
            estimate, scale = self._noisy_sum(solution, statistics, lower, upper, rng)
            self.noise_scale_ = scale * feature_weights
        self.level_epsilons_ = statistics.epsilons
        self.level_local_ = statistics.local
        self.level_sizes_ = statistics.counts
        self.level_weights_ = level_weights
        # In the users' own epsilon (the mean's share of it, scaled back).
        share = 1.0 - PRIVATE_VARIANCE_SHARE if self._private_variance() else 1.0
        self.saturation_epsilon_ = float(
            saturation_threshold(self._mean_epsilons(statistics), data_range=data_range,
                                 variance=program_variance, local=local, counts=counts)
        ) / share
        self.expected_mse_ = self._expected_mse(solution, error_variance(self, feature_variance),
                                                report_variance, feature_weights, lower, upper,
                                                counts, estimate)
        return estimate

    def _noise(self, solution, statistics, lower, upper):
        """The central noise of the weighted sum (in scaled units), from public quantities.

        Returns a list of ``(mechanism, None, None)``, one per privacy level (LDPE), or
        ``[(None, user_sensitivity, epsilons)]`` for one personalized Laplace release.
        """
        level_weights = solution.weights
        central = ~statistics.local
        ranges = upper - lower
        # Released in scaled units, each feature divided by its noise weight (see
        # feature_noise_weights; one feature: weight 1, unchanged), then scaled back.
        feature_weights = feature_noise_weights(ranges)
        scaled = scaled_ranges(ranges, feature_weights)
        # The weighted centred sum is at most sum_k W_k n_k |range| (weights sum to at most
        # 1); the dot product over the levels (and the scaling) rounds by a few ulps of it
        # per level.
        magnitude = float(np.sum(np.abs(level_weights) * statistics.counts)) * scaled
        divisions = int(feature_weights.shape[0] > 1)  # the scaling, with several features
        slack = float(np.sum(rounding_slack(
            magnitude, n_operations=4 + divisions + int(central.sum()))))
        if self.strategy == "ldpe":
            # LDPE noises each privacy level's mean: level k's term W_k mean_k moves by at
            # most W_k D / n_k when one of its users is replaced.
            epsilons = self._mean_epsilons(statistics)
            finite = epsilons[np.isfinite(epsilons)]
            return [
                (LaplaceMechanism(epsilon=level, sensitivity=scale * level + slack), None, None)
                for level, scale in zip(finite, solution.level_noise_scales)
            ]
        # Replacing tcm user i moves the weighted sum by w_i D in L1; lm users' reports
        # are already private and public users need no protection. Every user of a level
        # has the level's weight, so the per-level maximum is the per-user one.
        sensitivity = np.where(
            statistics.local, 0.0, np.abs(level_weights) * float(np.sum(scaled)) + slack
        )
        return [(None, sensitivity, self._mean_epsilons(statistics))]

    def _noisy_sum(self, solution, statistics, lower, upper, rng):
        """The weighted sum of the values plus the central noise; returns it and the scale.

        The noise is added to the tcm levels' weighted sum of centred values (exact
        fixed-point sums, :mod:`skhybrid.utils._sums`); the lower bound's share and the
        lm users' weighted reports, already private, are added afterwards.
        """
        level_weights = solution.weights
        central = ~statistics.local
        feature_weights = feature_noise_weights(upper - lower)
        weighted = level_weights[central] @ statistics.centred_sums(lower, upper)[central]
        if feature_weights.shape[0] > 1:
            weighted = weighted / feature_weights
        noise = self._noise(solution, statistics, lower, upper)
        if self.strategy == "ldpe":
            noise_sum = np.zeros_like(weighted)
            for mechanism, _, _ in noise:
                noise_sum += mechanism.randomise(np.zeros_like(weighted), random_state=rng)
            released = weighted + noise_sum
            scale = 0.0
        else:
            _, sensitivity, epsilons = noise[0]
            released, scale = personalized_laplace_release(
                weighted[np.newaxis, :], sensitivity, epsilons, rng, secure=True
            )
            released = released[0]
        if feature_weights.shape[0] > 1:
            released = released * feature_weights
        # The centred values need their lower bound back: sum_i w_i lower for the tcm
        # users. Stretching releases centre + sum_i w_i (x_i - centre), with weights
        # summing to W < 1: its values shrink towards the centre of the bounds, as
        # Example 2 shrinks them towards 0 on [-0.5, 0.5]. That is the released sum
        # centred on the lower bound plus lower + (1 - W) (upper - lower) / 2, added
        # after the noise.
        total = float(np.sum(level_weights[central] * statistics.counts[central]))
        if self.strategy == "stretching":
            offset = lower + (1.0 - total) * (upper - lower) / 2.0
        else:
            offset = total * lower
        reports = level_weights[~central] @ statistics.report_sums[~central]
        return released + offset + reports, scale

    def _user_weights(self, n_samples, trust_group, epsilon):
        """Each user's weight: their level's, looked up row by row."""
        is_tcm = check_trust_group(trust_group, n_samples)
        user_epsilon = check_epsilon(
            self.epsilon if epsilon is None else epsilon,
            None if epsilon is None else n_samples, allow_inf=True,
        )
        return self._validated_user_weights(is_tcm, user_epsilon)

    def _validated_user_weights(self, is_tcm, user_epsilon, groups=None):
        if self.released_midpoint_:
            return np.zeros(is_tcm.shape[0])
        if groups is not None:
            return level_lookup(self.level_epsilons_, self.level_local_, self.level_weights_,
                                None, None, groups=groups)
        local = _local_users(is_tcm, user_epsilon)
        user_epsilon = np.broadcast_to(user_epsilon, local.shape)
        return level_lookup(
            self.level_epsilons_, self.level_local_, self.level_weights_, user_epsilon, local
        )

    def _solve(self, levels, local, counts, data_range, variance):
        """Each level's per-user weight and the noise, from the levels and their sizes."""
        if self.strategy == "adpm":
            solver = "exact" if self.solver == "auto" else self.solver
            return adpm_weights(levels, data_range=data_range, variance=variance,
                                local=local, solver=solver, counts=counts)
        return _BASELINES[self.strategy](levels, data_range=data_range, variance=variance,
                                         counts=counts)

    def _expected_mse(self, solution, feature_variance, report_variance, feature_weights, lower,
                      upper, counts, estimate):
        if solution.trivial:
            return (upper - lower) ** 2 / 4.0
        if self.strategy == "stretching":
            # Biased by (1 - W) times the mean's offset from the centre the values shrink
            # to. The noise scale is linear in the data range: feature j's is the scaled
            # release's times its weight.
            offsets = self._stretching_offsets(feature_variance, lower, upper, counts, estimate)
            return np.array([
                stretching_mse(self.level_epsilons_, mean_offset=offset, variance=variance,
                               data_range=float(np.sum(upper - lower)) * weight,
                               empirical=True, counts=counts)
                for offset, variance, weight in zip(offsets, feature_variance, feature_weights)
            ])
        level_scales = solution.level_noise_scales
        population = np.array([
            affine_mse(
                solution.weights, variance=variance, noise_scale=solution.noise_scale * weight,
                report_noise_variance=reports,
                level_noise_scales=None if level_scales is None else level_scales * weight,
                counts=counts,
            )
            for variance, reports, weight in zip(feature_variance, report_variance.T,
                                                 feature_weights)
        ])
        return mse_about_empirical_mean(population, n_samples=int(counts.sum()),
                                        variance=feature_variance)

    def _stretching_offsets(self, feature_variance, lower, upper, counts, estimate):
        """The mean's offset from the centre of the bounds that stretching's bias scales.

        Post-processing of the release ``R = centre + W (mean_w - centre) + noise``
        (``W`` the weights' total): ``((R - centre) / W)**2`` less its noise's and
        sampling's part, ``(2 eta**2 + variance sum_i w_i**2) / W**2``, estimates the
        squared offset without bias (clipped to ``[0, (range / 2)**2]``; where the offset
        is within its noise of 0 the clipping makes the figure high). The bound, half a
        range (the mean at a bound), as a design: :func:`~skhybrid.mean.expected_mse`
        has no mean to read.
        """
        half_ranges = (upper - lower) / 2.0
        weights = self.level_weights_
        if getattr(self, "_design_variance", None) is not None:
            return half_ranges
        total = float(weights @ counts)
        spread = 2.0 * self.noise_scale_ ** 2 + feature_variance * float(weights ** 2 @ counts)
        squared = ((estimate - (lower + upper) / 2.0) ** 2 - spread) / total ** 2
        return np.sqrt(np.clip(squared, 0.0, half_ranges ** 2))
