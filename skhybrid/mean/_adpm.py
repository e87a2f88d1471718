"""ADPM: the minimax-optimal affine mean for arbitrary per-user epsilon (Chaudhuri and Courtade)."""

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..base import RANDOM_STATE_CONSTRAINT, MeanEstimatorMixin, validate_fit_input
from ..mechanisms import LaplaceMechanism, LocalLaplaceRandomizer
from ..mechanisms._noise import personalized_laplace_release
from ..theory._adpm import (
    adpm_weights,
    affine_mse,
    ldpe_weights,
    propdpm_weights,
    saturation_threshold,
    uni_weights,
)
from ..theory._mixed import mse_about_empirical_mean
from ..utils._random import check_random_state
from ..utils._validation import clip_to_bounds, resolve_bounds, resolve_variance

_BASELINES = {"uni": uni_weights, "propdpm": propdpm_weights, "ldpe": ldpe_weights}


class ADPMEstimator(MeanEstimatorMixin, BaseEstimator):
    """Private mean for users who each choose their own privacy level epsilon_i.

    ADPM releases ``sum_i w_i x_i + Laplace(b)`` for values clipped to the bounds, with the
    weights that minimise the worst-case expected error (Algorithm 1 of Chaudhuri and
    Courtade): users with a larger epsilon get more weight, up to a saturation level
    beyond which more epsilon buys nothing ("some privacy can be free"). The noise scale
    ``b = D max_i w_i / epsilon_i`` (Lemma 1) protects every user at their own epsilon_i.

    Hybrid extension (derived in :doc:`/adpm_solver`, in no paper): with ``trust_group``,
    lm users randomize their value locally with Laplace noise of scale
    ``D / epsilon_i``; their weights enter the program with that noise variance and are
    exempt from the central noise constraint.

    Read more in :doc:`/privacy`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Every user's privacy level when no ``epsilon`` metadata is passed.
    bounds : tuple (lower, upper) or None, default=None
        Data-independent clipping bounds; ``None`` derives them from the data with a
        :class:`~skhybrid.exceptions.PrivacyLeakWarning`.
    variance : float, array-like of shape (n_features,) or None, default=None
        A known bound on the data variance (a variant the paper does not have); ``None``
        is the paper's worst case (upper - lower)**2 / 4.
    solver : {"auto", "exact", "cvxpy"}, default="auto"
        ``"exact"``: the closed-form KKT solution (sort and prefix sums, see
        :doc:`/adpm_solver`); ``"cvxpy"``: the program solved by cvxpy with one variable
        per privacy level; ``"auto"``: the exact solver.
    strategy : {"adpm", "uni", "propdpm", "ldpe"}, default="adpm"
        ``"adpm"``, or one of the paper's baselines (Sec. IV-A): uniform weights
        (``"uni"``), weights proportional to epsilon (``"propdpm"``), per-level Laplace
        means mixed by inverse variance (``"ldpe"``). The baselines need tcm users only.
    local_reports : bool, default=False
        Whether lm rows of ``X`` are already reports privatized on the users' devices by
        :class:`~skhybrid.mechanisms.LocalLaplaceRandomizer` with the same bounds and
        their own epsilon; they are then neither clipped nor noised again.
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` uses the operating system's secure randomness.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The private estimate.
    weights_ : ndarray of shape (n_samples,)
        The users' weights; they sum to 1.
    noise_scale_ : ndarray of shape (n_features,)
        The Laplace scale of the central noise on each coordinate (0 when no central
        noise is needed).
    released_midpoint_ : bool
        True when the program's error bound exceeded the trivial one and, as Algorithm 1
        does, the midpoint of the bounds was released instead (then no data is used).
    saturation_epsilon_ : float
        The privacy level beyond which a tcm user's weight stops growing (for two groups,
        ``eps2 = R eps1`` with ``R = 1 + 8 / (n f eps1^2)``, Eq. (4)).
    expected_mse_ : ndarray of shape (n_features,)
        Worst-case (or known-variance) expected squared error of ``mean_`` against the
        empirical mean of the fitted data.
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

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "bounds": [tuple, list, None],
        "variance": [Interval(Real, 0, None, closed="neither"), "array-like", None],
        "solver": [StrOptions({"auto", "exact", "cvxpy"})],
        "strategy": [StrOptions({"adpm", "uni", "propdpm", "ldpe"})],
        "local_reports": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        bounds=None,
        variance=None,
        solver="auto",
        strategy="adpm",
        local_reports=False,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.bounds = bounds
        self.variance = variance
        self.solver = solver
        self.strategy = strategy
        self.local_reports = local_reports
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, trust_group=None, epsilon=None):
        """Fit the private mean.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        trust_group : array-like of shape (n_samples,), default=None
            ``"tcm"`` / ``"lm"`` or booleans (True = tcm); ``None``: everyone is tcm.
        epsilon : array-like of shape (n_samples,), default=None
            Per-user privacy levels, > 0; ``np.inf`` marks public users (no noise on
            their account). ``None`` gives everyone the ``epsilon`` parameter.

        Returns
        -------
        self : ADPMEstimator
        """
        X, is_tcm, user_epsilon = validate_fit_input(self, X, trust_group, epsilon, allow_inf=True)
        n_samples = X.shape[0]
        user_epsilon = np.broadcast_to(user_epsilon, (n_samples,)).astype(np.float64)
        # Public lm users need no local noise: they count as public tcm users.
        local = ~is_tcm & np.isfinite(user_epsilon)
        if self.strategy != "adpm" and local.any():
            raise ValueError(
                f"strategy={self.strategy!r} is a trusted-curator baseline; got "
                f"{int(local.sum())} lm users. Use strategy='adpm' for the hybrid extension"
            )
        raw = X[~local] if self.local_reports else X
        if raw.shape[0] == 0 and self.bounds is None:
            raise ValueError("bounds=None cannot be derived from privatized reports alone")
        lower, upper = resolve_bounds(self.bounds, raw)
        feature_variance = resolve_variance(self.variance, lower, upper, allow_zero=False)
        data_range = float(np.sum(upper - lower))
        program_variance = float(np.mean(feature_variance))
        solution = self._solve(user_epsilon, local, data_range, program_variance)
        rng = check_random_state(self.random_state)

        report_variance = np.zeros(n_samples)
        if local.any():
            randomizer = LocalLaplaceRandomizer(bounds=(lower, upper))
            report_variance[local] = randomizer.noise_variance(
                lower.shape[0], epsilon=user_epsilon[local]
            )
        self.released_midpoint_ = bool(solution.trivial)
        if solution.trivial:
            self.mean_ = (lower + upper) / 2.0
            self.noise_scale_ = np.zeros(lower.shape[0])
        else:
            values = self._values(X, local, user_epsilon, lower, upper, rng)
            self.mean_, scale = self._release(solution, values, user_epsilon, local, data_range, rng)
            self.noise_scale_ = np.full(lower.shape[0], scale)

        self.weights_ = solution.weights
        self.saturation_epsilon_ = float(
            saturation_threshold(user_epsilon, data_range=data_range, variance=program_variance,
                                 local=local)
        )
        self.expected_mse_ = self._expected_mse(solution, feature_variance, report_variance,
                                                lower, upper, n_samples)
        return self

    # -- private helpers ------------------------------------------------------------------

    def _solve(self, user_epsilon, local, data_range, variance):
        if self.strategy == "adpm":
            solver = "exact" if self.solver == "auto" else self.solver
            return adpm_weights(user_epsilon, data_range=data_range, variance=variance,
                                local=local, solver=solver)
        return _BASELINES[self.strategy](user_epsilon, data_range=data_range, variance=variance)

    def _values(self, X, local, user_epsilon, lower, upper, rng):
        """Clipped raw values, with lm users' rows replaced by their local reports."""
        values = clip_to_bounds(X, lower, upper)
        if local.any():
            if self.local_reports:
                values[local] = X[local]
            else:
                randomizer = LocalLaplaceRandomizer(bounds=(lower, upper))
                values[local] = randomizer.privatize(
                    values[local], epsilon=user_epsilon[local], random_state=rng
                )
        return values

    def _release(self, solution, values, user_epsilon, local, data_range, rng):
        weighted = solution.weights @ values
        if self.strategy == "ldpe":
            # LDPE noises each privacy level's mean: level k's term W_k mean_k moves by at
            # most W_k D / n_k when one of its users is replaced.
            finite = np.isfinite(user_epsilon)
            levels, inverse = np.unique(user_epsilon[finite], return_inverse=True)
            noise = np.zeros_like(weighted)
            for level, scale in zip(levels, solution.level_noise_scales):
                mechanism = LaplaceMechanism(epsilon=level, sensitivity=scale * level)
                noise += mechanism.randomise(np.zeros_like(weighted), random_state=rng)
            return weighted + noise, 0.0
        # Replacing tcm user i moves the weighted sum by w_i D in L1; lm users' reports
        # are already private and public users need no protection.
        sensitivity = np.where(local, 0.0, solution.weights * data_range)
        released, scale = personalized_laplace_release(
            weighted[np.newaxis, :], sensitivity, user_epsilon, rng, secure=True
        )
        return released[0], scale

    def _expected_mse(self, solution, feature_variance, report_variance, lower, upper, n_samples):
        if solution.trivial:
            return (upper - lower) ** 2 / 4.0
        population = np.array([
            affine_mse(
                solution.weights, variance=variance, noise_scale=solution.noise_scale,
                report_noise_variance=report_variance,
                level_noise_scales=solution.level_noise_scales,
            )
            for variance in feature_variance
        ])
        return mse_about_empirical_mean(population, n_samples=n_samples, variance=feature_variance)
