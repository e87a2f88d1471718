"""Hybrid-model mean estimation (Avent, Dubey and Korolova 2020)."""

import operator
from dataclasses import dataclass
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from .._group_estimates import (
    central_group_mean,
    local_report_variance,
    planned_central_noise,
    privatize_locally,
    privatized_sum,
    reported_group_mean,
    square_sum_about,
)
from ..base import (
    RANDOM_STATE_CONSTRAINT,
    MeanEstimatorMixin,
    NonFiniteValues,
)
from ..exceptions import EmptyGroupWarning, WorstCaseVarianceWarning, warn_user
from ..mechanisms._families import GAUSSIAN, LAPLACE, NOISE_FAMILIES, get_noise_family
from ..theory._hybrid import (
    full_lm_mse,
    hybrid_mse,
    hybrid_privacy_amplification,
    kvh_weight,
    lm_only_mse,
    naive_weight,
    pwh_weight,
    tcm_only_mse,
)
from ..utils._sums import (
    centred_sums,
    fixed_point_moments,
    float_column_sums,
    per_feature,
    square_grid,
)
from ..utils._validation import (
    check_group_epsilons,
    clip_to_bounds,
    masked_rows,
    resolve_variance,
)
from ._ranking import error_variance
from ._statistics import StatisticsFitMixin

_HYBRID_STRATEGIES = ("kvh", "pwh", "naive")
_STRATEGIES = _HYBRID_STRATEGIES + ("tcm_only", "full_lm", "lm_only")
#: With ``variance="private"``: the share of each tcm user's epsilon spent on the second
#: moment of the tcm group (the rest goes to their mean). lm users spend nothing more:
#: the curator estimates the variance from their reports, which are already private.
PRIVATE_VARIANCE_SHARE = 0.05


#: With ``variance="private"``: KVH's weight is computed at the estimate lowered by this
#: many of its standard errors (a lower confidence bound). An overestimated variance
#: moves the weight towards the worst case, the failure this option exists to avoid; an
#: underestimate moves it towards PWH's, which is close to the best whenever the
#: estimate is noisy (few tcm users, data spread thinly over wide bounds). The estimate
#: itself (``variance_``, and the ``expected_mse_`` of every strategy) is not lowered: a
#: lowered one put the figures of the strategies that lean on the tcm group's sampling
#: below their real error (tcm_only's mean figure at 0.19 of its mean squared error on
#: the salaries at 10% tcm users), which ordered them wrongly.
PRIVATE_VARIANCE_LOWER_Z = 1.0


_TINY = np.finfo(np.float64).tiny


def _inverse_variance_mix(estimates, variances):
    """Mix independent unbiased estimates with inverse-variance weights (None = absent).

    Returns the mixture and its variance. Arrays, or numpy float64 scalars (one
    feature: see :func:`private_variance_estimate`).
    """
    present = [(e, v) for e, v in zip(estimates, variances) if e is not None]
    if len(present) == 1:  # the sums below of one term, without Python's sum (0 + term)
        estimate, variance = present[0]
        weight = 1.0 / _at_least(variance, _TINY)
        return (weight * estimate + 0.0) / weight, 1.0 / weight
    weights = [1.0 / _at_least(v, _TINY) for _, v in present]
    total = sum(weights)
    return sum(w * e for w, (e, _) in zip(weights, present)) / total, 1.0 / total


def _as_it_is(values):
    return values


def _at_least(values, low):
    """``np.maximum(values, low)``; for a numpy scalar by comparison (the same value, NaN
    kept: ``max`` returns its first argument unless the second is greater), a tenth of
    the ufunc's cost on a scalar."""
    return max(values, low) if isinstance(values, np.floating) else np.maximum(values, low)


def _at_most(values, high):
    """``np.minimum(values, high)`` (see :func:`_at_least`)."""
    return min(values, high) if isinstance(values, np.floating) else np.minimum(values, high)


def private_variance_estimate(*, ranges, tcm_first, tcm_first_variance, tcm_second,
                              tcm_second_variance, report_first, report_second, n_reports,
                              report_noise_variance, lower_z=None, both=False):
    """The data variance from private releases only: each group's second moment minus
    its squared mean, mixed.

    Not from the papers (derived here for ``variance="private"``). All moments are about
    the bounds' midpoint, so a value's squared distance lies in ``[0, (range / 2)**2]``.

    - tcm group: ``tcm_first`` and ``tcm_second``, the centrally released means of
      ``x - mid`` and ``(x - mid)**2`` of the same users, with the variances of their
      noise. ``tcm_second - tcm_first**2`` is the group's sample variance plus noise:
      the two moments' sampling errors cancel in it (they do not in a mix of one
      group's second moment with another's mean, which on wide bounds is many times the
      variance), and its error is the noise's, ``tcm_second_variance + 4 tcm_first**2
      tcm_first_variance`` to first order.
    - reports (lm users, and every user under ``"full_lm"``): a report is ``y = x + e``
      with independent noise of known variance ``s2`` per user, so
      ``report_second - s2 - report_first**2`` is the reports' sample variance of ``x``
      plus an error of variance ``(4 S**2 s2 + Var(e**2)) / n`` to first order, at most
      ``(range**2 s2 + 5 s2**2) / n`` (``S**2 <= range**2 / 4``; ``Var(e**2) = 5 s2**2``
      for Laplace noise, ``2 s2**2`` for Gaussian).

    The two groups' variances are mixed with inverse-variance weights (the groups share
    one distribution, as KVH assumes), lowered by ``lower_z`` standard errors of the mix
    and clipped to Popoviciu's range ``[0, range**2 / 4]``. The sample variances'
    own sampling error (small beside the noise at these shares of epsilon) is left out.
    Everything here is post-processing of private releases.

    Parameters
    ----------
    ranges : ndarray of shape (n_features,)
    tcm_first, tcm_second : ndarray of shape (n_features,) or None
        None when the tcm group is absent or not used.
    tcm_first_variance, tcm_second_variance : ndarray of shape (n_features,) or None
        The variances of their noise.
    report_first, report_second : ndarray of shape (n_features,) or None
        The reports' means of ``y - mid`` and ``(y - mid)**2``; None without reports.
    n_reports : int
    report_noise_variance : ndarray of shape (n_features,) or None
        The reports' mean noise variance ``mean(s2)``.
    lower_z : float, default=None
        How many standard errors to lower by; None is ``PRIVATE_VARIANCE_LOWER_Z``
        (KVH's). ``ADPMEstimator`` takes ``ADPM_VARIANCE_LOWER_Z``.
    both : bool, default=False
        Also return the estimate not lowered (clipped alike), second.

    Every argument may also be a numpy float64 scalar (one feature): the same float64
    operations (squares written as products: numpy's scalar power may round otherwise
    than its arrays'), each about a tenth of its cost on a 1-element array.

    Returns
    -------
    variance : ndarray of shape (n_features,), or a numpy float64 scalar
    """
    squared_ranges = ranges * ranges
    highest = squared_ranges / 4.0
    tcm_variance = tcm_error = report_variance = report_error = None
    if tcm_first is not None:
        tcm_variance = tcm_second - tcm_first * tcm_first
        tcm_error = tcm_second_variance + 4.0 * (tcm_first * tcm_first) * tcm_first_variance
    if report_first is not None:
        s2 = report_noise_variance
        report_variance = report_second - s2 - report_first * report_first
        report_error = (squared_ranges * s2 + 5.0 * (s2 * s2)) / n_reports
    variance, error = _inverse_variance_mix([tcm_variance, report_variance],
                                            [tcm_error, report_error])
    if lower_z is None:
        lower_z = PRIVATE_VARIANCE_LOWER_Z
    lowered = _at_most(_at_least(variance - lower_z * np.sqrt(error), 0.0), highest)
    if both:  # np.clip's values
        return lowered, _at_most(_at_least(variance, 0.0), highest)
    return lowered


def _group_sums(X, is_tcm, lower, upper, *, squares, reports, report_squares,
                check_finite=False):
    """The tcm rows' exact fixed-point sums (and squared distances' sums, for
    ``variance="private"``) and the lm rows' report sums, in one pass.

    Never a difference of sums: each row is added to its own group's sums only
    (:func:`~skhybrid.utils._sums.fixed_point_moments`). A squared distance to the
    midpoint is clipped before its code, so one tcm user moves its sum by at most one
    grid range; ``is_tcm=None`` codes every row. ``check_finite`` tests every value of
    every row in the same pass: a NaN or an infinity raises
    :class:`~skhybrid.base.NonFiniteValues`.
    """
    sums = fixed_point_moments(X, lower, upper, is_tcm, squares=squares, others=reports,
                               other_squares=report_squares, check_finite=check_finite)
    if not sums.finite:
        raise NonFiniteValues
    return sums


def _same_level(first, second, group):
    """The one epsilon of a group seen in two sets of statistics (None = group absent)."""
    if first is None or second is None or first == second:
        return second if first is None else first
    raise ValueError(
        f"HybridMeanEstimator needs one epsilon per trust group, but the {group} group has "
        f"{float(first)!r} in one chunk and {float(second)!r} in another; for a different epsilon per "
        "user use ADPMEstimator"
    )


@dataclass(frozen=True)
class _GroupStatistics:
    """Sufficient statistics of the hybrid mean: each group's size, level and value sum.

    ``tcm_sum`` is the exact fixed-point sum (int64) of the tcm users' clipped values
    (the float sum of their local reports for ``"full_lm"``); ``lm_sum`` adds lm users'
    reports (zeros for ``"tcm_only"``, which never reads lm users' data). With
    ``variance="private"``, ``tcm_square_sum`` is the exact fixed-point sum of the tcm
    users' ``(x - mid)**2`` and ``report_square_sum`` the float sum of the reports'
    ``(y - mid)**2`` (lm users' reports; every user's under ``"full_lm"``).
    """

    n_tcm: int
    n_lm: int
    epsilon_tcm: float | None
    epsilon_lm: float | None
    tcm_sum: np.ndarray
    lm_sum: np.ndarray
    tcm_square_sum: np.ndarray | None = None
    report_square_sum: np.ndarray | None = None

    def __add__(self, other):
        return _GroupStatistics(
            n_tcm=self.n_tcm + other.n_tcm,
            n_lm=self.n_lm + other.n_lm,
            epsilon_tcm=_same_level(self.epsilon_tcm, other.epsilon_tcm, "tcm"),
            epsilon_lm=_same_level(self.epsilon_lm, other.epsilon_lm, "lm"),
            tcm_sum=self.tcm_sum + other.tcm_sum,
            lm_sum=self.lm_sum + other.lm_sum,
            tcm_square_sum=_sum_or_none(self.tcm_square_sum, other.tcm_square_sum),
            report_square_sum=_sum_or_none(self.report_square_sum, other.report_square_sum),
        )


def _sum_or_none(first, second):
    return None if first is None else first + second


class HybridMeanEstimator(StatisticsFitMixin, MeanEstimatorMixin, BaseEstimator):
    """Differentially private mean for users who trust the curator to different degrees.

    tcm users (trusted-curator model) send raw values: the curator clips them and adds
    central noise to their mean. lm users (local model) add noise on their own devices.
    The hybrid strategies combine the two groups' estimates with a weight chosen from
    public quantities (group sizes, privacy levels, bounds and, for ``"kvh"``, a known
    variance); the baselines use one model only.

    Read more in docs/privacy.rst about the guarantee and its neighbouring relation.

    Parameters
    ----------
    strategy : {"kvh", "pwh", "naive", "tcm_only", "full_lm", "lm_only"}, default="kvh"
        - ``"kvh"``: known-variance hybrid, the weight minimising the expected error
          (Def. 4.1) for the ``variance`` given (or the worst case).
        - ``"pwh"``: privacy-weighted hybrid (Def. 5.3), needs no variance.
        - ``"naive"``: weight the groups by their sizes, w = c (Sec. 5).
        - ``"tcm_only"``: tcm users only, central noise (Def. 3.1).
        - ``"full_lm"``: every user under the local model (Def. 3.3); the curator runs
          the local randomizer on tcm users' values.
        - ``"lm_only"``: lm users' reports only (Def. 3.10).
    epsilon : float, default=1.0
        Every user's privacy level when no ``epsilon`` metadata is passed: the total
        budget of one fit over all features.
    delta : float, default=0.0
        The delta of the Gaussian mechanism, in (0, 1); must be 0 for Laplace.
    mechanism : {"laplace", "gaussian"}, default="laplace"
        Laplace (pure epsilon-DP, L1 sensitivity of the value vector) or Gaussian
        ((epsilon, delta)-DP with the analytic calibration, L2 sensitivity).
    bounds : pair (lower, upper) or None, default=None
        Data-independent clipping bounds, scalars or per feature. ``None`` derives them
        from the data and emits :class:`~skhybrid.exceptions.PrivacyLeakWarning`.
    variance : "private", float, array-like of shape (n_features,) or None, default="private"
        The data variance used by ``"kvh"``'s weight and by ``expected_mse_``.

        - ``"private"``: estimated privately in the same fit. Each tcm user spends
          ``PRIVATE_VARIANCE_SHARE`` (5%) of their epsilon on the tcm group's second
          moment and the rest on the mean (sequential composition: each user's total,
          and the ledger's charge, is still their epsilon); lm users' reports, already
          private, give the rest for free (post-processing). The estimate is
          ``variance_``; KVH's weight is computed at it lowered by
          ``PRIVATE_VARIANCE_LOWER_Z`` standard errors. With ``mechanism="gaussian"``
          only the reports are used.
          Measured against the best strategy in hindsight in "The default strategy"
          in docs/user_guide/choosing.rst.
        - a float or per-feature array: a known (public) variance.
        - ``None``: the worst case for the bounds, (upper - lower)**2 / 4. ``"kvh"``
          then warns with :class:`~skhybrid.exceptions.WorstCaseVarianceWarning`: its
          weight is far from the best for most data.
    local_reports : bool, default=False
        Whether the lm rows of ``X`` are reports the users' devices already privatized
        with this estimator's ``mechanism``, ``epsilon`` and ``bounds`` (see
        :class:`~skhybrid.mechanisms.LocalLaplaceRandomizer`). They are then neither
        clipped nor noised again. ``False`` means the lm rows are raw values and the
        local randomizer is simulated here.
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
    weight_ : ndarray of shape (n_features,)
        Weight on the tcm group's estimate.
    n_tcm_, n_lm_ : int
        Group sizes (public under the neighbouring relation).
    expected_mse_ : ndarray of shape (n_features,)
        Expected squared error of ``mean_`` against the empirical mean of the fitted
        data, by Lemma 3.13 (hybrid strategies) or Lemmas 3.2, 3.4 and 3.11 (baselines),
        for i.i.d. data of variance ``variance_``: an estimate with
        ``variance="private"``, exact for a known ``variance``, a worst-case bound with
        ``variance=None``. An expectation over the noise and over which users trust the
        curator (the tcm users as a random share of i.i.d. users): on one given
        assignment whose tcm users happen to differ from the others, the error can be
        several times its square root.
    variance_ : ndarray of shape (n_features,)
        The data variance ``expected_mse_`` is evaluated at: the private estimate
        (``variance="private"``; KVH's weight is computed at it lowered, see
        ``PRIVATE_VARIANCE_LOWER_Z``), the given one, or the worst case (``None``).
    noise_variance_tcm_, noise_variance_lm_ : ndarray of shape (n_features,)
        s_T^2, the variance of the noise on the tcm group's mean, and s_L^2, that of one
        lm user's report, per feature (in proportion to the squared ranges, see
        "Several features" in docs/user_guide/choosing.rst); NaN for a group that is absent.
    amplified_epsilon_ : dict or None
        For the Gaussian mechanism with both groups present, one feature and a hybrid
        strategy: the amplified epsilon of tcm and lm users against an adversary who
        sees only ``mean_`` (Theorem 8.1, no colluding lm users); else None.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has string feature names.

    See Also
    --------
    ADPMEstimator : a different epsilon for every user.

    Notes
    -----
    Group membership and group sizes are public; group sizes are what the weights use.
    When a hybrid strategy meets an empty group, it returns the other group's estimate,
    the limit of its weight, and warns with :class:`EmptyGroupWarning`; fitting a hybrid
    strategy without ``trust_group`` (everyone tcm) warns too. ``local_reports=True``
    without ``trust_group`` raises. Per-user ``epsilon`` metadata replaces the
    ``epsilon`` parameter; a non-default parameter then warns with
    :class:`~skhybrid.exceptions.MetadataOverrideWarning`.

    References
    ----------
    B. Avent, Y. Dubey and A. Korolova. "The Power of the Hybrid Model for Mean
    Estimation". PoPETs 2020(4).

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid import HybridMeanEstimator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(10_000, 1))
    >>> trust = np.where(rng.random(10_000) < 0.1, "tcm", "lm")
    >>> est = HybridMeanEstimator(bounds=(0, 1), random_state=0)
    >>> est = est.fit(X, trust_group=trust)
    >>> bool(abs(est.mean_[0] - X.mean()) < 0.05)
    True
    """

    _parameter_constraints: dict = {
        "strategy": [StrOptions(set(_STRATEGIES))],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "mechanism": [StrOptions(set(NOISE_FAMILIES))],
        "bounds": ["array-like", None],
        "variance": [Interval(Real, 0, None, closed="left"), "array-like",
                     StrOptions({"private"}), None],
        "local_reports": ["boolean"],
        "clamp": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "ledger": [HasMethods(["charge"]), None],
    }

    def __init__(
        self,
        strategy="kvh",
        *,
        epsilon=1.0,
        delta=0.0,
        mechanism="laplace",
        bounds=None,
        variance="private",
        local_reports=False,
        clamp=False,
        random_state=None,
        ledger=None,
    ):
        self.strategy = strategy
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.bounds = bounds
        self.variance = variance
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
            One row per user: raw values, or for lm users with ``local_reports=True``
            their privatized reports. A Dask collection is reduced chunk by chunk where
            it lives; only the groups' counts and sums are collected.
        y : ignored
        trust_group : array-like of shape (n_samples,), default=None
            ``"tcm"`` / ``"lm"`` (case-insensitive) or booleans (True = tcm); ``None``
            means every user is tcm. A Dask array or Series with Dask ``X``.
        epsilon : array-like of shape (n_samples,), default=None
            Per-user privacy levels; they must be equal within each trust group (the
            groups may differ). ``None`` uses the ``epsilon`` parameter.

        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        Returns
        -------
        self : HybridMeanEstimator
        """
        self._mechanism = self._resolve_mechanism()
        self._warn_worst_case_variance()
        self._fit_statistics(X, trust_group, epsilon, user_id)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, *, trust_group=None, epsilon=None, user_id=None):
        """Add a chunk of users; the estimate is released when ``mean_`` is next read.

        The groups' counts and sums accumulate over calls; no noise is drawn here
        (except the simulated local noise of lm users' raw values, which their devices
        would add when sending). The first read of ``mean_`` (or ``predict``/``score``)
        after new data draws the curator's noise once and updates every fitted
        attribute; reading again returns the same value. Each further release spends
        every earlier user's epsilon again and warns with
        :class:`~skhybrid.exceptions.PrivacyBudgetWarning`. With ``bounds=None`` the
        first chunk's range is used for every chunk (and leaks, as in :meth:`fit`).

        Parameters
        ----------
        X, y, trust_group, epsilon
            As in :meth:`fit`, for the new users only.

        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        Returns
        -------
        self : HybridMeanEstimator
        """
        self._mechanism = self._resolve_mechanism()
        self._warn_worst_case_variance()
        return self._partial_fit_statistics(X, trust_group, epsilon, user_id)

    # -- private helpers ------------------------------------------------------------------

    def _is_hybrid_fit(self):
        return self.strategy in _HYBRID_STRATEGIES

    def _resolve_mechanism(self):
        """The noise family of ``mechanism``, once per fit; refuses a delta it cannot use."""
        family = get_noise_family(self.mechanism)
        family.check_delta(self.delta)
        return family

    def _release_cost(self, is_tcm, epsilon, **_):
        """Each user's cost: their level, under the noise family's accounting.

        With ``variance="private"`` a tcm user's epsilon is split, 5% on the group's
        second moment and 95% on its mean (sequential composition); lm users'
        variance estimate is post-processing of their reports. Not charged: lm users
        under ``"tcm_only"`` and tcm users under ``"lm_only"`` (their data are not
        used, when the other group is not empty), and lm users with
        ``local_reports=True`` (their devices' reports are charged once when collected,
        with :meth:`~skhybrid.accounting.PrivacyLedger.charge`; reusing them is
        post-processing).
        """
        n_tcm = int(np.count_nonzero(is_tcm))
        n_lm = is_tcm.size - n_tcm
        uses_tcm = not (self.strategy == "lm_only" and n_lm)
        uses_lm = not (self.strategy == "tcm_only" and n_tcm) and not self.local_reports
        # Everyone charged (both groups used, or the one group present): no per-user mask.
        charged = None
        if not ((uses_tcm or not n_tcm) and (uses_lm or not n_lm)):
            charged = np.where(is_tcm, uses_tcm, uses_lm)
        return self._mechanism.release_cost(epsilon, delta=self.delta, n_users=is_tcm.size,
                                            charged=charged)

    def _check_groups(self, n_tcm, n_lm, trust_given):
        if self.strategy == "tcm_only" and n_tcm == 0:
            raise ValueError("strategy='tcm_only' needs at least one tcm user; got none")
        if self.strategy == "lm_only" and n_lm == 0:
            raise ValueError("strategy='lm_only' needs at least one lm user; got none")
        if self.strategy in _HYBRID_STRATEGIES and trust_given and min(n_tcm, n_lm) == 0:
            present = "tcm" if n_tcm else "lm"
            warn_user(
                f"strategy={self.strategy!r} combines two groups but every user is {present}; "
                f"the estimate is the {present} group's alone",
                EmptyGroupWarning,
            )

    def _weight_and_mse(self, tcm, n_tcm, n_lm, variance, s_L2, weight_variance=None):
        """Weight on the tcm estimate and the expected MSE, from the theory module.

        ``weight_variance`` (default ``variance``) sets KVH's weight; the MSE is for data
        of ``variance``, or of the design's variance when
        :func:`~skhybrid.mean.expected_mse` evaluates the candidate.
        """
        n = n_tcm + n_lm
        if n_lm == 0:
            # c = 1: Lemma 3.2's sampling terms vanish and only s_T^2 remains.
            return 1.0, tcm.noise_variance
        if n_tcm == 0:
            # c = 0: LM-only and the hybrids all reduce to Full-LM (Lemma 3.4).
            return 0.0, full_lm_mse(n=n, s_L2=s_L2)
        c = n_tcm / n
        data_variance = error_variance(self, variance)
        sigma = {"sigma_T2": data_variance, "sigma_L2": data_variance}
        if self.strategy == "lm_only":
            return 0.0, lm_only_mse(n=n, c=c, s_L2=s_L2, **sigma)
        if self.strategy == "tcm_only":
            return 1.0, tcm_only_mse(n=n, c=c, s_T2=tcm.noise_variance, **sigma)
        group = {"n": n, "c": c, "s_T2": tcm.noise_variance, "s_L2": s_L2}
        if self.strategy == "kvh":
            weight = kvh_weight(sigma2=variance if weight_variance is None else weight_variance,
                                **group)
        elif self.strategy == "pwh":
            weight = pwh_weight(**group)
        else:
            weight = naive_weight(c)
        return weight, hybrid_mse(weight, **group, **sigma)

    # -- sufficient statistics and the release (see _statistics.StatisticsFitMixin) -------

    def _raw_rows(self, is_tcm, epsilon):
        return is_tcm if self.local_reports else np.ones_like(is_tcm)

    def _public_context(self, lower, upper):
        if self._private_variance():
            # Estimated in the release; the worst case until then.
            variance = resolve_variance(None, lower, upper)
        else:
            variance = resolve_variance(self.variance, lower, upper)
        # Public quantities of the bounds, computed once: the ranges, the midpoint and
        # the range of a squared distance to it (square_grid).
        centre, square_range = square_grid(lower, upper)
        return {"lower": lower, "upper": upper, "variance": variance,
                "ranges": upper - lower, "centre": centre, "square_range": square_range}

    def _noise(self, context):
        return {"mechanism": self._mechanism, "delta": self.delta,
                "lower": context["lower"], "upper": context["upper"]}

    def _checks_finite(self):
        # The one pass of _group_sums reads every row first; "full_lm" clips and
        # randomizes the rows before any sum.
        return self.strategy != "full_lm"

    def _chunk_statistics(self, X, is_tcm, epsilon, context, rng, check_finite=False):
        """The groups' counts and sums: clipped tcm values, lm users' reports.

        tcm values are added exactly in fixed point (:mod:`skhybrid.utils._sums`), so
        one tcm user moves ``tcm_sum`` by at most one grid range in float64 too; lm
        reports are added on their own, never mixed with tcm rows. lm users' raw
        values are privatized here, as their devices would; with ``"full_lm"`` the
        curator runs the same randomizer on the tcm users' values.

        ``check_finite`` (not with ``"full_lm"``): the first pass, :func:`_group_sums`,
        tests every value, before any draw; a NaN or an infinity raises
        :class:`~skhybrid.base.NonFiniteValues`.
        """
        epsilon_tcm, epsilon_lm = check_group_epsilons(
            epsilon, is_tcm, "HybridMeanEstimator",
            hint="; for a different epsilon per user use ADPMEstimator",
        )
        noise = self._noise(context)
        lower, upper = context["lower"], context["upper"]
        # With variance="private": squared distances to the midpoint (see
        # private_variance_estimate).
        centre = context["centre"] if self._private_variance() else None
        n_tcm = int(np.count_nonzero(is_tcm))
        n_lm = X.shape[0] - n_tcm
        all_tcm = n_lm == 0
        reads_lm = n_lm > 0 and self.strategy != "tcm_only"  # tcm_only never reads lm data
        lm_sum = np.zeros(X.shape[1])
        tcm_square_sum = report_square_sum = None
        if centre is not None:
            report_square_sum = np.zeros(X.shape[1])
        if self.strategy == "full_lm":
            tcm_values = clip_to_bounds(X if all_tcm else masked_rows(X, is_tcm), lower, upper)
            tcm_reports = privatize_locally(
                tcm_values, epsilon=epsilon_tcm, rng=rng, **noise
            ) if n_tcm else np.zeros((0, X.shape[1]))
            tcm_sum = float_column_sums(tcm_reports)
            if centre is not None:
                report_square_sum += square_sum_about(tcm_reports, centre)
            if reads_lm and self.local_reports:
                lm_sum = _group_sums(X, is_tcm, lower, upper, squares=False, reports=True,
                                     report_squares=False).others
        else:
            # One pass: tcm rows in fixed point, lm rows' reports as they are. The square
            # sums are zeros for a chunk without tcm users: chunks' statistics add up.
            reports = reads_lm and self.local_reports
            sums = _group_sums(
                X, None if all_tcm else is_tcm, lower, upper,
                squares=(centre is not None and self._mechanism.pure
                         and self.strategy != "lm_only"),
                reports=reports, report_squares=reports and centre is not None,
                check_finite=check_finite,
            )
            tcm_sum, tcm_square_sum = sums.codes, sums.square_codes
            if reports:
                lm_sum = sums.others
                if centre is not None:
                    report_square_sum += sums.other_squares
        if reads_lm and not self.local_reports:
            # Privatized block by block; only the reports' sums are kept.
            lm_sum = privatized_sum(X, ~is_tcm, epsilon=epsilon_lm, rng=rng,
                                    squares_about=centre, **noise)
            if centre is not None:
                lm_sum, lm_square_sum = lm_sum
                report_square_sum += lm_square_sum
        return _GroupStatistics(
            n_tcm=n_tcm, n_lm=n_lm,
            epsilon_tcm=epsilon_tcm if n_tcm else None,
            epsilon_lm=epsilon_lm if n_lm else None,
            tcm_sum=tcm_sum, lm_sum=lm_sum,
            tcm_square_sum=tcm_square_sum, report_square_sum=report_square_sum,
        )

    def _plan_release(self, statistics, context, fit_warnings):
        """Refuse an empty group the strategy needs, or a central noise too wide to draw.

        Returns the tcm group's planned central noises,
        ``{"mean": ..., "second": ...}`` (:class:`~skhybrid._group_estimates.PlannedNoise`,
        None when not drawn), which :meth:`_release` draws from.
        """
        self._check_groups(statistics.n_tcm, statistics.n_lm, fit_warnings)
        plan = {"mean": None, "second": None}
        if statistics.n_tcm and self.strategy not in ("lm_only", "full_lm"):
            n_features = context["lower"].shape[0]
            mean_share = 1.0
            if statistics.tcm_square_sum is not None:  # as in _release
                mean_share = 1.0 - PRIVATE_VARIANCE_SHARE
                plan["second"] = planned_central_noise(
                    statistics.n_tcm, mechanism=LAPLACE,
                    epsilon=statistics.epsilon_tcm * PRIVATE_VARIANCE_SHARE, delta=0.0,
                    ranges=context["square_range"], n_features=n_features,
                )
            plan["mean"] = planned_central_noise(
                statistics.n_tcm, mechanism=self._mechanism,
                epsilon=statistics.epsilon_tcm * mean_share, delta=self.delta,
                ranges=context["ranges"], n_features=n_features,
            )
        return plan

    def _release(self, statistics, context, plan, rng):
        """Draw the central noise once from the groups' statistics and weight the estimates."""
        n_tcm, n_lm = statistics.n_tcm, statistics.n_lm
        epsilon_tcm, epsilon_lm = statistics.epsilon_tcm, statistics.epsilon_lm
        lower, upper, variance = context["lower"], context["upper"], context["variance"]
        ranges, centre = context["ranges"], context["centre"]
        noise = self._noise(context)
        lm_variance = local_report_variance(epsilon=epsilon_lm, **noise) if n_lm else None

        if self.strategy == "full_lm":
            # Def. 3.3: tcm users' values went through the local randomizer too.
            n_samples = n_tcm + n_lm
            variance_sum = lm_variance * n_lm if n_lm else 0.0
            if n_tcm:
                variance_sum = variance_sum + local_report_variance(
                    epsilon=epsilon_tcm, **noise
                ) * n_tcm
            estimate = (statistics.tcm_sum + statistics.lm_sum) / n_samples
            weight = n_tcm / n_samples
            # Lemma 3.4 with the users' average report variance (group epsilons may differ).
            mse = full_lm_mse(n=n_samples, s_L2=variance_sum / n_samples)
            tcm_variance = np.nan
            if self._private_variance():
                variance = private_variance_estimate(
                    ranges=ranges, tcm_first=None, tcm_first_variance=None,
                    tcm_second=None, tcm_second_variance=None,
                    report_first=estimate - centre,
                    report_second=statistics.report_square_sum / n_samples,
                    n_reports=n_samples, report_noise_variance=variance_sum / n_samples,
                )
        else:
            tcm = tcm_second = None
            if n_tcm and self.strategy != "lm_only":
                mean_share = 1.0
                if statistics.tcm_square_sum is not None:
                    # Sequential composition: the second moment at a share of epsilon_tcm,
                    # the mean at the rest (PRIVATE_VARIANCE_SHARE).
                    mean_share = 1.0 - PRIVATE_VARIANCE_SHARE
                    tcm_second = self._tcm_second_moment(statistics, epsilon_tcm,
                                                         context["square_range"], rng,
                                                         plan["second"])
                tcm = central_group_mean(
                    centred_sums(statistics.tcm_sum, lower, upper, n_users=n_tcm), n_tcm,
                    origin=lower,
                    mechanism=self._mechanism,
                    epsilon=epsilon_tcm * mean_share, delta=self.delta, ranges=ranges,
                    rng=rng, noise=plan["mean"],
                )
            lm = None
            if n_lm and self.strategy != "tcm_only":
                lm = reported_group_mean(statistics.lm_sum, n_lm, lm_variance)
            weight_variance = variance
            if self._private_variance():
                # KVH's weight at the lowered estimate, the errors at the estimate
                # (PRIVATE_VARIANCE_LOWER_Z). Evaluated as a design (expected_mse), both
                # are the design's variance.
                weight_variance, variance = (error_variance(self, estimate) for estimate in
                                             self._estimate_variance(statistics, tcm,
                                                                     tcm_second, lm, context))
            weight, mse = self._weight_and_mse(tcm, n_tcm, n_lm, variance, lm_variance,
                                               weight_variance)
            if lm is None:
                estimate = weight * tcm.mean
            elif tcm is None:
                estimate = (1.0 - weight) * lm.mean
            else:
                estimate = weight * tcm.mean + (1.0 - weight) * lm.mean
            tcm_variance = tcm.noise_variance if tcm is not None else np.nan

        n_features = lower.shape[0]
        self.variance_ = per_feature(variance, n_features, copy=True)
        self.weight_ = per_feature(weight, n_features, copy=True)
        self.expected_mse_ = per_feature(mse, n_features, copy=True)
        self.n_tcm_ = n_tcm
        self.n_lm_ = n_lm
        self.noise_variance_tcm_ = per_feature(tcm_variance, n_features, copy=True)
        self.noise_variance_lm_ = per_feature(np.nan if lm_variance is None else lm_variance,
                                              n_features, copy=True)
        self.amplified_epsilon_ = self._amplification(lower, upper, epsilon_tcm, epsilon_lm)
        return estimate

    def _warn_worst_case_variance(self):
        if self.strategy == "kvh" and self.variance is None:
            warn_user(
                "strategy='kvh' with variance=None computes its weight for the worst-case "
                "variance of the bounds, (upper - lower)**2 / 4, which puts far too little "
                "weight on the tcm group for most data; pass a known variance, or "
                "variance='private' to estimate it privately",
                WorstCaseVarianceWarning,
            )

    def _private_variance(self):
        return isinstance(self.variance, str) and self.variance == "private"

    def _tcm_second_moment(self, statistics, epsilon_tcm, square_range, rng, noise):
        """The tcm group's private mean of ``(x - mid)**2``, at a share of its epsilon.

        Laplace, with each feature's noise in proportion to its range ``(range / 2)**2``;
        the values were clipped before squaring, so one user moves the exact fixed-point
        sum by at most one range per feature. ``square_range`` is the grid of the square
        codes (:func:`~skhybrid.utils._sums.square_grid`).
        """
        n_tcm = statistics.n_tcm
        zero = np.zeros_like(square_range)
        return central_group_mean(
            centred_sums(statistics.tcm_square_sum, zero, square_range, n_users=n_tcm), n_tcm,
            origin=zero, mechanism=LAPLACE, epsilon=epsilon_tcm * PRIVATE_VARIANCE_SHARE,
            delta=0.0, ranges=square_range, rng=rng, noise=noise,
        )

    def _estimate_variance(self, statistics, tcm, tcm_second, lm, context):
        """``variance="private"``: :func:`private_variance_estimate` of this fit's releases,
        lowered and not.

        One feature's arrays enter it as numpy float64 scalars (the same operations, a
        tenth of the cost: about 8 us of a 75 us fit).
        """
        ranges, centre = context["ranges"], context["centre"]
        one = ranges.shape[0] == 1
        # One feature: each 1-element array's numpy float64 scalar.
        unpack = operator.itemgetter(0) if one else _as_it_is
        ranges = unpack(ranges)
        tcm_moments = {"tcm_first": None, "tcm_first_variance": None, "tcm_second": None,
                       "tcm_second_variance": None}
        if tcm_second is not None:
            tcm_moments = {
                "tcm_first": unpack(tcm.mean) - unpack(centre),
                "tcm_first_variance": unpack(tcm.noise_variance),
                "tcm_second": unpack(tcm_second.mean),
                "tcm_second_variance": unpack(tcm_second.noise_variance),
            }
        report_moments = {"report_first": None, "report_second": None, "n_reports": 0,
                          "report_noise_variance": None}
        if lm is not None:
            n_lm = statistics.n_lm
            report_moments = {
                "report_first": unpack(lm.mean) - unpack(centre),
                "report_second": unpack(statistics.report_square_sum) / n_lm,
                "n_reports": n_lm,
                "report_noise_variance": unpack(lm.noise_variance) * n_lm,
            }
        if tcm_second is None and lm is None:
            # No private moment to read (the Gaussian mechanism without lm reports).
            worst = resolve_variance(None, context["lower"], context["upper"])
            return worst, worst
        estimates = private_variance_estimate(ranges=ranges, **tcm_moments, **report_moments,
                                              both=True)
        return tuple(np.array([variance]) if one else variance for variance in estimates)

    def _amplification(self, lower, upper, epsilon_tcm, epsilon_lm):
        """Theorem 8.1's amplified epsilon of each group, never above the nominal one.

        The theorem inverts the classic calibration, a valid bound only below 1; the
        noise here is calibrated analytically, so its nominal epsilon can be smaller than
        the classic inversion. A group keeps its nominal epsilon unless the theorem gives
        a smaller value in the classic calibration's range.
        """
        applicable = (
            self._mechanism is GAUSSIAN  # Theorem 8.1 is about Gaussian noise
            and self.strategy in _HYBRID_STRATEGIES
            and lower.shape[0] == 1
            and np.isfinite(self.noise_variance_tcm_[0])
            and np.isfinite(self.noise_variance_lm_[0])
        )
        if not applicable:
            return None
        n = self.n_tcm_ + self.n_lm_
        amplified_tcm, amplified_lm = hybrid_privacy_amplification(
            weight=float(self.weight_[0]), n=n, c=self.n_tcm_ / n, m=float(upper[0] - lower[0]),
            s_T2=float(self.noise_variance_tcm_[0]), s_L2=float(self.noise_variance_lm_[0]),
            delta=self.delta,
        )
        nominal = {"tcm": epsilon_tcm, "lm": epsilon_lm}
        amplified = {"tcm": float(amplified_tcm), "lm": float(amplified_lm)}
        return {
            group: value if value < min(1.0, nominal[group]) else nominal[group]
            for group, value in amplified.items()
        }
