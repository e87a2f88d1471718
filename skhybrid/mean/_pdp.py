"""The Sample mechanism of Jorgensen, Yu and Cormode (2015) for personalized-DP means."""

import functools
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from .._group_estimates import central_group_mean, central_group_noise
from ..accounting import ReleaseCost, charge_dask_release, charge_release, check_user_id
from ..base import (
    RANDOM_STATE_CONSTRAINT,
    MeanEstimatorMixin,
    check_fit_metadata,
    clamp_estimate,
    validate_fit_input,
)
from ..mechanisms._families import LAPLACE
from ..mechanisms._feature_weights import feature_noise_weights, noise_ranges
from ..theory._mixed import (
    mse_about_empirical_mean,
    optimal_sample_threshold,
    sample_mechanism_probabilities,
    sample_mechanism_mse,
    sample_mechanism_thresholds,
)
from ..utils._dask import (
    any_dask,
    check_dask_features,
    chunk_generators,
    map_chunks,
    n_chunks,
    renumbered_errors,
)
from ..utils._level_index import LevelIndex
from ..utils._random import check_random_state
from ..utils._sums import FIXED_POINT_BITS, centred_sums, fixed_point_sums
from ..utils._validation import (
    check_epsilon,
    clip_to_bounds,
    resolve_bounds,
    resolve_variance,
)
from ._adpm import _private_variance_of_levels
from ._hybrid import PRIVATE_VARIANCE_SHARE
from ._ranking import error_variance
from ._statistics import (
    LevelStatistics,
    _sums_only,
    _validate_chunk,
    dask_bounds,
    level_lookup,
)

_NAMED_THRESHOLDS = ("min", "mean", "max", "optimal")


def check_curator_users(estimator, is_tcm):
    """Raise unless every user is tcm (trusted-curator estimators have no local model)."""
    if not is_tcm.all():
        index = int(np.flatnonzero(~is_tcm)[0])
        raise ValueError(
            f"{type(estimator).__name__} is a trusted-curator estimator: every user must be "
            f"'tcm'; got an 'lm' user at index {index}. For local-model users use "
            "HybridMeanEstimator (one epsilon per trust group) or ADPMEstimator with "
            "trust_group (one epsilon per user)"
        )


def _validate_curator_fit(estimator, X, trust_group, epsilon, *, clip=True):
    """Validate the input of a trusted-curator estimator with per-user privacy levels.

    Every user must be tcm; ``np.inf`` marks a public user. Shared by the Sample
    mechanism, the PE quantile and the mixed estimators.

    clip : bool, default=True
        False returns ``X`` itself, unclipped (for callers that clip block by block).

    Returns
    -------
    values : ndarray of shape (n_samples, n_features)
        ``X`` clipped to the bounds (a new array), or ``X`` with ``clip=False``.
    user_epsilon : ndarray of shape (n_samples,)
    lower, upper : ndarray of shape (n_features,)
    variance : ndarray of shape (n_features,)
        The ``variance`` parameter, or the worst case for the bounds.
    """
    X, is_tcm, user_epsilon = validate_fit_input(
        estimator, X, trust_group, epsilon, allow_inf=True
    )
    check_curator_users(estimator, is_tcm)
    lower, upper = resolve_bounds(estimator.bounds, X)
    # Estimators without a variance parameter (the PE quantile) get the worst case, and
    # so does variance="private" until it is released.
    variance = getattr(estimator, "variance", None)
    variance = resolve_variance(None if isinstance(variance, str) else variance, lower, upper)
    user_epsilon = np.broadcast_to(user_epsilon, X.shape[:1])
    values = clip_to_bounds(X, lower, upper) if clip else X
    return values, user_epsilon, lower, upper, variance


def _kept_sum(values, probability, lower, upper, rng):
    """Exact sum of the kept users' values centred on the midpoint, in fixed point.

    Each user's coin B_i ~ Bernoulli(p_i) keeps them. The sum is of the fixed-point
    codes (:mod:`skhybrid.utils._sums`) minus half the grid per kept user: an int64 that
    one user's replacement moves by at most one grid range, exactly.
    """
    # Dropped rows are labelled 1 and left out of the sums (kept rows: group 0). The
    # coins are drawn block by block: the same stream as one call, without n doubles.
    dropped = np.empty(values.shape[0], dtype=np.int8)
    for start in range(0, values.shape[0], _COIN_BLOCK):
        block = slice(start, start + _COIN_BLOCK)
        np.greater_equal(rng.random(dropped[block].shape[0]), probability[block],
                         out=dropped[block], casting="unsafe")
    codes = fixed_point_sums(values, lower, upper, labels=dropped)[0]
    n_kept = values.shape[0] - np.count_nonzero(dropped)
    return codes - np.int64(n_kept) * np.int64(2 ** (FIXED_POINT_BITS - 1))


#: Coins drawn at once by :func:`_kept_sum`.
_COIN_BLOCK = 2**16


def _chunk_levels(X, trust_group, epsilon, *, offset, rng, validate):
    """A chunk's user counts per epsilon level, and its range (for ``bounds=None``)."""
    X, is_tcm, levels = _validate_chunk(X, trust_group, epsilon, offset=offset, **validate)
    with renumbered_errors(lambda row: offset + row):
        check_curator_users(PDPSampleEstimator(), is_tcm)
    counts = _sums_only(LevelStatistics.from_users(
        np.zeros((X.shape[0], 0)), levels, np.zeros(X.shape[0], dtype=bool)
    ))
    extremes = (X.min(axis=0), X.max(axis=0)) if X.shape[0] else None
    return counts, extremes


def _chunk_moments(X, trust_group, epsilon, *, offset, rng, validate, lower, upper):
    """A chunk's clipped sums and square sums per level (``variance="private"``)."""
    X, _, user_epsilon = _validate_chunk(X, trust_group, epsilon, offset=offset, **validate)
    return _sums_only(LevelStatistics.from_users(
        X, user_epsilon, np.zeros(X.shape[0], dtype=bool), lower, upper, squares=True))


def _chunk_kept_sum(X, trust_group, epsilon, *, offset, rng, validate, levels,
                    level_probability, lower, upper):
    """A chunk's kept users' centred, clipped sum; the coins are drawn where the data are."""
    X, _, user_epsilon = _validate_chunk(X, trust_group, epsilon, offset=offset, **validate)
    user_epsilon = np.broadcast_to(user_epsilon, X.shape[:1])
    probability = level_lookup(
        levels.epsilons, levels.local, level_probability, user_epsilon,
        np.zeros(X.shape[0], dtype=bool),
    )
    return _kept_sum(X, probability, lower, upper, rng)


def _largest_mean_offset(variance, ranges):
    """The largest distance ``|mu - c|`` from the centre of the bounds that the mean of data
    of variance sigma^2 can have: sigma^2 + (mu - c)^2 = E[(x - c)^2] <= (range / 2)^2.

    The error of the public divisor grows with it
    (:func:`~skhybrid.theory.sample_mechanism_mse`); at the worst-case variance it is 0.
    """
    return np.sqrt(np.maximum(ranges * ranges / 4.0 - variance, 0.0))


def _centred_magnitude(counts, expected_kept, lower, upper):
    """A public bound on the kept users' centred sum over ``expected_kept``: at most every
    user is kept, each within half a range of the midpoint."""
    return float(np.sum(counts)) * (upper - lower) / (2.0 * float(expected_kept))


class PDPSampleEstimator(MeanEstimatorMixin, BaseEstimator):
    """Private mean for per-user privacy levels by the Sample mechanism (PDP baseline).

    Each user i is kept independently with probability
    ``min(1, (exp(epsilon_i) - 1) / (exp(t) - 1))`` for a threshold t, and the kept
    users' mean is released with t-DP Laplace noise (Jorgensen, Yu and Cormode 2015).
    Users with ``epsilon_i >= t``, public users (``epsilon_i = inf``) among them, are
    always kept; the others are protected at their own level by the sampling. It is the
    baseline of Ferrando et al. and the SM baseline of Chaudhuri and Courtade;
    :class:`MixedMeanEstimator` usually has a smaller error.

    Read more in docs/privacy.rst about the guarantee and its neighbouring relation.

    Parameters
    ----------
    threshold : {"min", "mean", "max", "optimal"} or float, default="optimal"
        The threshold t (see :func:`~skhybrid.theory.sample_mechanism_thresholds`):

        - ``"min"``: the smallest finite epsilon; nobody is subsampled, everyone gets
          the noise of the most private user.
        - ``"mean"``: the unweighted mean of the distinct finite epsilons (Jorgensen et
          al.'s "average" threshold, as in Ferrando's Figure 1).
        - ``"max"``: the largest epsilon, ``np.inf`` when some users are public: then
          only the public users are kept (Chaudhuri and Courtade's SM).
        - ``"optimal"``: the t minimising the expected error (Ferrando's t_opt,
          :func:`~skhybrid.theory.optimal_sample_threshold`) for the ``variance``
          given, released (``"private"``), or the worst case for the bounds.
        - a float t > 0.

        ``"optimal"`` is the default, chosen by measurement on the bundled salaries
        and three other shapes (the user guide's choosing page, "The Sample
        mechanism's default"): at the private variance it was within 1.12 times the
        best threshold in every cell, while ``"max"`` (Chaudhuri and Courtade's SM, the
        default before issue 50) was 9 to 57 times the best whenever most users had a
        small epsilon. With a single privacy level every named threshold is that
        level: everyone is kept and the estimate is the plain Laplace mean.
    epsilon : float, default=1.0
        Every user's privacy level when no ``epsilon`` metadata is passed (``np.inf``:
        public data); the total budget of one fit over all features.
    bounds : pair (lower, upper) or None, default=None
        Data-independent clipping bounds, scalars or per feature. ``None`` derives them
        from the data and emits :class:`~skhybrid.exceptions.PrivacyLeakWarning`.
    variance : "private", float, array-like of shape (n_features,) or None, default="private"
        The data variance used by ``threshold="optimal"`` and ``expected_mse_``.

        - ``"private"``: estimated privately in the fit, as
          :class:`~skhybrid.ADPMEstimator` does: each level's first and second moments
          at ``PRIVATE_VARIANCE_SHARE`` (5%) of its epsilon; the Sample mechanism runs
          at the rest of every level, ``"optimal"`` chooses t at the released variance
          (post-processing; see Notes for what that costs).
        - a float or per-feature array: a known (public) variance.
        - ``None``: the worst case for the bounds, (upper - lower)**2 / 4.

        The default was chosen by measurement (the same page): at the worst case
        ``"optimal"`` was up to 1.73 times the best threshold and ``expected_mse_``
        ranked the thresholds in reverse where subsampling pays (Spearman -1); at the
        private variance it ranked them with Spearman 0.78 to 1.0.
    clamp : bool, default=False
        Whether to project the released estimate onto the bounds (post-processing;
        the error never grows, ``expected_mse_`` becomes an upper bound). ``False``
        keeps the estimate unbiased; see the section on clamping in docs/privacy.rst.
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` draws the sampling coins and the noise from the operating system's
        secure randomness; an int gives reproducible results (simulations only).

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
    threshold_ : float
        The threshold t used (``np.inf``: only public users were kept, without noise).
        With ``variance="private"`` the named thresholds are of the levels' rest,
        ``(1 - PRIVATE_VARIANCE_SHARE) epsilon_i``, at which the Sample mechanism runs.
    sampling_probability_ : ndarray of shape (n_samples,)
        Each user's keep probability. Absent after a fit on Dask input: a fitted
        estimator keeps nothing n-long or tied to the input's graph (see
        ``level_sampling_probability_``).
    level_epsilons_, level_sampling_probability_ : ndarray of shape (n_levels,)
        The distinct privacy levels, increasing, and the keep probability of each
        level's users.
    variance_ : ndarray of shape (n_features,)
        The data variance the threshold and ``expected_mse_`` used: the private
        estimate (``variance="private"``), the known variance, or the worst case.
    n_sampled_ : float
        The expected number of users kept, ``sampling_probability_.sum()``: the public
        divisor of the mean (see Notes). The realised number is not exposed.
    expected_mse_ : ndarray of shape (n_features,)
        Expected squared error of ``mean_`` against the empirical mean of the fitted
        data (:func:`~skhybrid.theory.sample_mechanism_mse` converted by
        :func:`~skhybrid.theory.mse_about_empirical_mean`) for i.i.d. data of the given
        ``variance``, with the spread of the kept count at the largest distance from
        the data's mean to the centre of the bounds that variance allows: exact when the
        mean lies at a bound (or nobody is subsampled), an upper bound otherwise (at most
        3 times the sampling term on data centred in the bounds). With
        ``variance=None`` it is an upper bound.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has string feature names.

    See Also
    --------
    MixedMeanEstimator : one Laplace mean per privacy level, mixed by inverse variance.
    ADPMEstimator : the minimax-optimal affine estimator for per-user levels.

    Notes
    -----
    **Neighbouring relation.** Replace one user's value (any value), with the number of
    users and every user's epsilon, hence every keep probability, public.

    **Release.** With c the centre of the bounds, R = sum_j (upper_j - lower_j), keep
    probabilities p_i, public divisor D = sum_i p_i and secret coins B_i ~ Bernoulli(p_i)
    drawn independently of the data::

        mean_ = c + (sum_i B_i (clip(x_i) - c) + Z) / D,   Z ~ Laplace(R / t) per coordinate.

    The inner mechanism M(K) = c + (sum_{i in K} (x_i - c) + Z) / D on a kept set K
    satisfies (a) replacing a kept user's value moves the sum by at most R in L1:
    t-DP; (b) adding or removing a kept user moves it by at most R / 2 (the values are
    centred): t/2-DP. A divisor equal to the realised kept count would break (b): the
    noise scale would differ between K and K + {i}, with an unbounded privacy loss in
    the tails; Jorgensen et al.'s theorem needs the inner mechanism to be DP under
    adding and removing a user.

    **Amplification** (Jorgensen et al.'s theorem, adapted to replacement). Fix the coins
    of every user but i and an output set O; let a, b, c be the probabilities of O under
    M(K + {x_i}), M(K + {x_i'}) and M(K). The release has probability
    p a + (1 - p) c on one dataset and p b + (1 - p) c on the other, with p = p_i.
    By (a) a <= e^t b, and by (b) a <= e^(t/2) c and c <= e^(t/2) b, so
    a - b <= (e^t - 1) min(b, c) (if c < b: a - b <= (e^(t/2) - e^(-t/2)) c
    <= (e^t - 1) c). Hence p a + (1 - p) c <= (1 + p (e^t - 1)) (p b + (1 - p) c), and
    1 + p_i (e^t - 1) = e^(epsilon_i) for epsilon_i < t. Averaging over the other coins
    keeps the bound. Users with epsilon_i >= t are always kept and get t <= epsilon_i
    by (a). The secure Laplace mechanism's grid rounding adds at most
    n_features * 2^-40 to the privacy loss in (b); the slack of the inequality absorbs
    it whenever t > 2e-6 sqrt(n_features).

    **Private variance** (``variance="private"``). Two releases in sequence on the same
    relation: the levels' moments (:func:`~skhybrid.mean._adpm._private_variance_of_levels`)
    at ``s epsilon_i`` for user i (``s = PRIVATE_VARIANCE_SHARE``), then the Sample
    mechanism on the levels ``(1 - s) epsilon_i``, whose threshold may depend on the
    first release (``"optimal"``). For every value of the first release the second is
    ``min((1 - s) epsilon_i, t)``-DP, so by adaptive composition user i gets
    ``s epsilon_i + min((1 - s) epsilon_i, T)``, with T the largest threshold the fit can
    choose: the one at variance 0, planned from public quantities before the charge,
    and the chosen threshold is capped at it. That is each user's charge (at most
    epsilon_i; exactly epsilon_i for users below T). With a named or float threshold, t
    is public and T = t.

    **What is exposed.** ``threshold_``, ``sampling_probability_``, ``n_sampled_`` and
    ``expected_mse_`` depend only on the public epsilons, bounds and parameters (and
    on ``variance_``, released, with ``variance="private"``). The
    realised number of kept users does not depend on the values, only on the coins, but
    it is not exposed: together with ``mean_`` it would reveal whether user i's coin
    kept them (for example when every other user has p = 1) and undo the amplification.

    Several features: ``epsilon`` is a user's total budget; the noise uses the L1
    sensitivity R of the value vector, and ``"optimal"`` minimises the error summed
    over the features (the features' mean variance).

    References
    ----------
    Z. Jorgensen, T. Yu and G. Cormode. "Conservative or liberal? Personalized
    differential privacy". ICDE 2015.

    C. Ferrando, J. Gillenwater and A. Kulesza. "Combining Public and Private Data".
    PriML workshop at NeurIPS 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.mean._pdp import PDPSampleEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(2000, 1))
    >>> epsilon = np.where(rng.random(2000) < 0.5, 0.5, 2.0)
    >>> est = PDPSampleEstimator(threshold="optimal", bounds=(0, 1), random_state=0)
    >>> est = est.fit(X, epsilon=epsilon)
    >>> bool(abs(est.mean_[0] - X.mean()) < 0.05)
    True
    """

    _parameter_constraints: dict = {
        "threshold": [
            StrOptions(set(_NAMED_THRESHOLDS)),
            Interval(Real, 0, None, closed="neither"),
        ],
        "epsilon": [Interval(Real, 0, np.inf, closed="right")],
        "bounds": ["array-like", None],
        "variance": [Interval(Real, 0, None, closed="left"), "array-like",
                     StrOptions({"private"}), None],
        "clamp": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "ledger": [HasMethods(["charge"]), None],
    }

    def __init__(
        self,
        *,
        threshold="optimal",
        epsilon=1.0,
        bounds=None,
        variance="private",
        clamp=False,
        random_state=None,
        ledger=None,
    ):
        self.threshold = threshold
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
            One row per user. A Dask collection is reduced in two passes where it
            lives (the epsilon levels' counts, then the kept users' sum); each chunk
            draws its users' coins; ``sampling_probability_`` is not kept (see Attributes).
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
        self : PDPSampleEstimator
        """
        check_fit_metadata(self, trust_group, epsilon, hybrid=False)
        check_user_id(self, user_id)
        if any_dask(X, trust_group, epsilon):
            return self._fit_dask(X, trust_group, epsilon, user_id)
        # Unclipped: the fixed-point sums clip block by block.
        values, user_epsilon, lower, upper, variance = _validate_curator_fit(
            self, X, trust_group, epsilon, clip=False
        )
        # Everything public is computed per privacy level, then spread to the users.
        index = LevelIndex(user_epsilon)
        levels, counts = index.levels, index.counts
        plan = self._plan(levels, counts, lower, upper, variance)
        # Each user pays what sampling guarantees them (see _release_cost); before the
        # variance's noise and the coins.
        charge_release(self, user_id, np.ones(user_epsilon.shape[0], dtype=bool), user_epsilon,
                       threshold=plan["bound"])
        rng = check_random_state(self.random_state)
        if self._private_variance():
            statistics = LevelStatistics.from_users(
                values, user_epsilon, np.zeros(values.shape[0], dtype=bool), lower, upper,
                squares=True, groups=index)
            variance = self._at_private_variance(plan, statistics, counts, lower, upper, rng)
            del statistics
        probability = index.spread(plan["probability"])
        del user_epsilon, index
        kept_sum = _kept_sum(values, probability, lower, upper, rng)
        self.sampling_probability_ = probability
        self._set_levels(levels, plan["probability"])
        self._release(kept_sum, plan["levels"], counts, plan["threshold"],
                      plan["probability"] @ counts, lower, upper, variance, rng)
        return self

    def _private_variance(self):
        return isinstance(self.variance, str) and self.variance == "private"

    def _mean_epsilons(self, levels):
        """The levels the Sample mechanism runs at: with ``variance="private"`` the rest,
        ``1 - PRIVATE_VARIANCE_SHARE``, of each (public users stay public)."""
        if not self._private_variance():
            return levels
        return levels * (1.0 - PRIVATE_VARIANCE_SHARE)

    def _plan(self, levels, counts, lower, upper, variance):
        """The public plan, before the charge: the Sample mechanism's levels, its
        threshold and keep probabilities (None while they wait for the private
        variance), and ``bound``, the largest threshold the fit can use (what it charges).
        A noise too wide to draw is refused here."""
        sample_levels = self._mean_epsilons(levels)
        ranges = upper - lower
        if self._private_variance() and self.threshold == "optimal":
            # The threshold is chosen at the released variance. The error is
            # A(t) + sigma^2 sum_i p_i^2 / (sum_i p_i)^2 (the count term at the largest
            # offset included), whose factor of sigma^2 does not fall as t grows and
            # subsamples more, so the minimiser does not grow with sigma^2 (Topkis): the
            # threshold at variance 0 bounds the release's choices. It also caps them, so
            # the charge holds whatever the search's rounding.
            bound = self._resolve_threshold(sample_levels, counts, ranges,
                                            np.zeros_like(variance))
            finite = sample_levels[np.isfinite(sample_levels)]
            # The widest noise of the thresholds between the smallest level and the bound.
            for threshold in {float(finite.min()) if finite.size else np.inf, bound}:
                self._check_noise(threshold, sample_mechanism_probabilities(
                    sample_levels, threshold) @ counts, counts, lower, upper)
            return {"levels": sample_levels, "threshold": None, "probability": None,
                    "bound": bound}
        threshold, probability = self._sampling(sample_levels, counts, ranges, variance)
        self._check_noise(threshold, probability @ counts, counts, lower, upper)
        return {"levels": sample_levels, "threshold": threshold, "probability": probability,
                "bound": threshold}

    def _at_private_variance(self, plan, statistics, counts, lower, upper, rng):
        """Release the variance (:func:`~skhybrid.mean._adpm._private_variance_of_levels`,
        at ``PRIVATE_VARIANCE_SHARE`` of each level) and, with ``threshold="optimal"``,
        choose the threshold at it (post-processing), capped at the plan's bound. Fills
        the plan; returns the variance (the design's when evaluated by ``expected_mse``)."""
        variance = error_variance(self, _private_variance_of_levels(statistics, lower, upper,
                                                                    rng))
        if plan["threshold"] is None:
            threshold, probability = self._sampling(plan["levels"], counts, upper - lower,
                                                    variance, cap=plan["bound"])
            plan.update(threshold=threshold, probability=probability)
        return variance

    def _sampling(self, levels, counts, ranges, variance, cap=np.inf):
        """The threshold t (at most ``cap``) and each level's keep probability."""
        threshold = min(self._resolve_threshold(levels, counts, ranges, variance), cap)
        probability = sample_mechanism_probabilities(levels, threshold)
        if float(probability @ counts) == 0.0:
            raise ValueError(
                f"threshold={self.threshold!r} keeps no user: every keep probability "
                "underflows to 0; use a smaller threshold"
            )
        return threshold, probability

    def _check_noise(self, threshold, expected_kept, counts, lower, upper):
        """Refuse a curator's noise too wide to draw, before anyone is charged."""
        if np.isfinite(threshold):
            central_group_noise(
                float(expected_kept), mechanism=LAPLACE, epsilon=threshold, delta=0.0,
                ranges=upper - lower,
                magnitude=_centred_magnitude(counts, expected_kept, lower, upper),
            ).variance(lower.shape[0])

    def _release_cost(self, is_tcm, epsilon, *, threshold, **_):
        """``min(epsilon_i, t)``: a user below the threshold ``t`` is kept with
        probability ``(e^epsilon_i - 1) / (e^t - 1)``, and subsampling a ``t``-DP release
        with it gives ``epsilon_i`` (Jorgensen et al. 2015, Thm 1); a user above ``t`` is
        always kept and gets ``t``.

        With ``variance="private"`` (sequential composition): ``s epsilon_i`` on the
        variance (``s = PRIVATE_VARIANCE_SHARE``) plus ``min((1 - s) epsilon_i, t)`` on
        the Sample mechanism at the rest, with ``t`` the largest threshold the fit can
        use (the plan's bound: a threshold chosen at the released variance is capped at
        it). At most epsilon_i; exactly epsilon_i below the bound."""
        if not self._private_variance():
            return ReleaseCost.at_levels(epsilon, cap=threshold)
        levels = ReleaseCost.at_levels(epsilon).epsilon
        cost = np.where(levels * (1.0 - PRIVATE_VARIANCE_SHARE) <= threshold, levels,
                        levels * PRIVATE_VARIANCE_SHARE + threshold)
        return ReleaseCost(float(cost) if np.ndim(cost) == 0 else cost)

    def _release(self, kept_sum, levels, counts, threshold, expected_kept, lower, upper,
                 variance, rng):
        """Noise the kept users' centred sum once and divide by the public divisor.

        ``levels`` and ``counts`` are the privacy levels and their numbers of users;
        ``expected_kept`` is the sum of the keep probabilities (public).
        """
        n_samples = int(np.sum(counts))
        expected_kept = float(expected_kept)
        centred = centred_sums(kept_sum, lower, upper, n_users=n_samples)
        if np.isinf(threshold):
            # Only public users have p > 0, and they are kept for sure: no noise.
            offset = centred / expected_kept
        else:
            offset = central_group_mean(
                centred, expected_kept, origin=np.zeros_like(lower), mechanism=LAPLACE,
                epsilon=threshold, delta=0.0, ranges=upper - lower, rng=rng,
                magnitude=_centred_magnitude(counts, expected_kept, lower, upper),
            ).mean
        variance = error_variance(self, variance)
        # Each feature's noise at its share of the budget (noise_ranges).
        population_mse = sample_mechanism_mse(
            levels, threshold, data_range=noise_ranges(upper - lower), variance=variance,
            counts=counts, mean_offset=_largest_mean_offset(variance, upper - lower),
        )
        self.mean_ = clamp_estimate(self, (lower + upper) / 2.0 + offset, lower, upper)
        self.variance_ = np.array(variance, dtype=np.float64)
        self.threshold_ = threshold
        self.n_sampled_ = expected_kept
        self.expected_mse_ = np.asarray(
            mse_about_empirical_mean(population_mse, n_samples=n_samples, variance=variance),
            dtype=np.float64,
        )

    def _fit_dask(self, X, trust_group, epsilon, user_id):
        """Two reductions: the epsilon levels' counts (public), then the kept users' sum.

        Each chunk draws its users' coins with its own child generator; only the level
        counts and the kept sum leave the chunk.
        """
        check_dask_features(self, X, reset=True)
        validate = {"default_epsilon": self.epsilon, "n_features": self.n_features_in_,
                    "allow_inf": True}
        metadata = {"trust_group": trust_group, "epsilon": epsilon}
        parts = map_chunks(functools.partial(_chunk_levels, validate=validate), X, **metadata)
        levels = functools.reduce(lambda total, part: total + part, [p[0] for p in parts])
        lower, upper = dask_bounds(self.bounds, [p[1] for p in parts], self.n_features_in_)
        variance = resolve_variance(None if self._private_variance() else self.variance,
                                    lower, upper)
        plan = self._plan(levels.epsilons, levels.counts, lower, upper, variance)
        charge_dask_release(self, user_id, trust_group, epsilon, allow_inf=True,
                            threshold=plan["bound"])
        rng = check_random_state(self.random_state)
        if self._private_variance():
            moments = map_chunks(functools.partial(_chunk_moments, validate=validate,
                                                   lower=lower, upper=upper), X, **metadata)
            variance = self._at_private_variance(
                plan, functools.reduce(lambda total, part: total + part, moments),
                levels.counts, lower, upper, rng)
        task = functools.partial(
            _chunk_kept_sum, validate=validate, levels=levels,
            level_probability=plan["probability"], lower=lower, upper=upper,
        )
        kept = map_chunks(task, X, generators=chunk_generators(rng, n_chunks(X)), **metadata)
        self._release(np.sum(kept, axis=0), plan["levels"], levels.counts, plan["threshold"],
                      np.dot(plan["probability"], levels.counts), lower, upper, variance, rng)
        # A lazy per-user array would keep the input's graph, and with it persisted data,
        # on the fitted estimator: only the per-level form is kept.
        self.__dict__.pop("sampling_probability_", None)
        self._set_levels(levels.epsilons, plan["probability"])
        return self

    def _set_levels(self, levels, level_probability):
        self.level_epsilons_ = np.asarray(levels, dtype=np.float64)
        self.level_sampling_probability_ = np.asarray(level_probability, dtype=np.float64)

    def _resolve_threshold(self, levels, counts, ranges, variance):
        data_range = float(np.sum(ranges))
        if not isinstance(self.threshold, str):
            # The threshold is the epsilon of the curator's Laplace noise (inf keeps only
            # public users): the same range as a privacy level.
            return check_epsilon(self.threshold, allow_inf=True, name="threshold")
        if self.threshold == "optimal":
            # One t for all features: it minimises the error summed over the features
            # in the units where each feature's noise is in proportion to its range
            # (feature_noise_weights), whose sampling term has the mean scaled variance.
            weights = feature_noise_weights(ranges)
            offset = _largest_mean_offset(variance, ranges)
            return float(
                optimal_sample_threshold(
                    levels, data_range=data_range,
                    variance=float(np.mean(variance / weights**2)), counts=counts,
                    mean_offset=float(np.sqrt(np.mean(offset**2 / weights**2))),
                )
            )
        # The named thresholds depend on the distinct levels only.
        return float(sample_mechanism_thresholds(levels)[self.threshold])
