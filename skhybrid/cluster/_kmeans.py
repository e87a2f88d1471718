"""Hybrid-model differentially private K-means (Avent, Dubey and Korolova 2020, Sec. 7).

Algorithm 1 of the paper (Appendix E): tcm users go through the classic DP K-means
(:class:`_CentralClustering`), lm users through local reports and randomized response
(:class:`_LocalClustering`), and the two groups' centres are merged after every
iteration with the PWH weight (Def. 5.3). The budget, the neighbouring relation and the
departures from Algorithm 1 are in :class:`HybridKMeans`' Notes.
"""

from functools import cache, partial
from numbers import Integral, Real

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import ThreadpoolController

from .._group_estimates import local_report_variance
from ..accounting import ReleaseCost, charge_dask_release, charge_release, check_user_id
from ..base import (
    RANDOM_STATE_CONSTRAINT,
    check_fit_metadata,
    validate_fit_input,
    warn_score_leak,
)
from ..exceptions import EmptyGroupWarning, NoisyCentresWarning, warn_user
from ..utils._chunks import GroupSummary, merge_chunk_summaries, summarise_chunk
from ..utils._dask import (
    check_dask_features,
    chunk_generators,
    is_dask_collection,
    map_chunks,
    n_chunks,
)
from ..utils._random import check_random_state
from ..utils._validation import (
    check_epsilon,
    check_group_epsilons,
    resolve_bounds,
)
from ._k_means_budget import central_iteration_mechanism, local_release_epsilon
from ._k_means_lloyd import nearest_centre, openmp_threads, within_cluster_sum_of_squares
from ._k_means_statistics import (
    _add_statistics,
    _chunk_statistics,
    _ChunkClustering,
    _FitPlan,
    _next_centres,
)

_STRATEGIES = ("hybrid", "tcm_only", "full_lm")

#: A fit warns (:class:`~skhybrid.exceptions.NoisyCentresWarning`) when a centre's
#: expected noise, ``centre_noise_``, exceeds this fraction of the bounds' diagonal. A
#: point drawn uniformly in a box is at about 0.41 diagonals from the box's centre, so
#: at 0.25 a centre's noise is more than half the distances it is meant to tell apart.
#: Measured: 300 users in 2 features (5% tcm, epsilon 1) are at 0.7 to 3.4 diagonals;
#: 3,000 (30% tcm) at 0.1; 200,000 at 0.002.
NOISY_CENTRE_FRACTION = 0.25


@cache
def _threadpool_controller():
    # Made once: inspecting the loaded libraries costs milliseconds.
    return ThreadpoolController()


class HybridKMeans(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Differentially private K-means for users who trust the curator to different degrees.

    Algorithm 1 of Avent, Dubey and Korolova (2020): tcm users' clipped values go
    through the classic DP K-means (Laplace-noised cluster counts and sums in each
    iteration); lm users send one Laplace-noised report and, in each iteration, their
    nearest centre by randomized response. After every iteration the two groups'
    cluster means are merged with the privacy-weighted hybrid weight (Def. 5.3). Every
    user spends exactly their ``epsilon`` over the whole fit (see Notes for the budget
    and for where this differs from the paper's pseudocode).

    Read more in docs/privacy.rst about the guarantee and its neighbouring relation.

    Parameters
    ----------
    n_clusters : int, default=8
        The number of centres.
    epsilon : float, default=1.0
        Every user's privacy level when no ``epsilon`` metadata is passed: the total
        budget of one fit over all features and all iterations.
    n_iter : int, default=5
        The number of iterations tau; the budget is split across them in advance, so
        all of them run (there is no convergence test on the private data).
    strategy : {"hybrid", "tcm_only", "full_lm"}, default="hybrid"
        - ``"hybrid"``: Algorithm 1, tcm users in the central algorithm, lm users in the
          local one, merged with the PWH weight.
        - ``"tcm_only"``: the classic DP K-means on tcm users only; lm users' data are
          not touched.
        - ``"full_lm"``: the local algorithm on every user; the curator runs the local
          randomizers on tcm users' values.
    bounds : pair (lower, upper) or None, default=None
        Data-independent clipping bounds, scalars or per feature. ``None`` derives them
        from the data and emits :class:`~skhybrid.exceptions.PrivacyLeakWarning`.
    init : "random" or array-like of shape (n_clusters, n_features), default="random"
        Initial centres, which must not depend on the private data: ``"random"`` draws
        them uniformly in the bounds from ``random_state``; an array is used as given.
    n_jobs : int or None, default=None
        The threads of each Lloyd pass over an in-memory input (OpenMP's, the only
        threads skhybrid starts). ``None`` uses all the cores OpenMP sees, as
        scikit-learn does: ``OMP_NUM_THREADS`` and threadpoolctl's
        ``threadpool_limits(n, user_api="openmp")`` lower it; -1 also means all, -2 all
        but one, and so on. Every seeded result is the same whatever the threads. A
        Dask input runs each chunk on one thread (Dask's threads run the chunks).
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` draws the noise (and random initial centres) from the operating
        system's secure randomness; an int gives reproducible noise (simulations only).

    ledger : PrivacyLedger, default=None
        Charge every release to this :class:`~skhybrid.accounting.PrivacyLedger`:
        each user pays their own privacy cost (docs/user_guide/accounting.rst) before
        any noise is drawn, or the fit raises
        :class:`~skhybrid.exceptions.BudgetExceededError` and releases nothing. Needs
        ``user_id`` in ``fit``. Shared, never copied, by ``clone`` and model selection.

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        The private centres after the last iteration (clipped to the bounds at every
        update).
    n_iter_ : int
        The number of iterations run (always ``n_iter``).
    weight_ : ndarray of shape (n_clusters, n_features)
        The weight on the tcm group's mean in the last iteration, per cluster and
        feature: the PWH weight where both groups have an estimate, 1 or 0 where only
        one has, NaN where neither has (the centre was kept).
    centre_noise_ : ndarray of shape (n_clusters,)
        Each centre's expected privacy noise: the root of the summed variances of its
        last update's noise, from the released cluster sizes, the bounds and epsilon
        (post-processing, no further cost); NaN for a centre no group updated. Above
        ``NOISY_CENTRE_FRACTION`` (0.25) of the bounds' diagonal, the fit warns with
        :class:`~skhybrid.exceptions.NoisyCentresWarning`: such a centre is mostly noise.
        It counts the noise only (not the sampling error or the data's part of it).
    n_tcm_, n_lm_ : int
        Group sizes (public under the neighbouring relation).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has string feature names.

    See Also
    --------
    skhybrid.HybridMeanEstimator : the hybrid mean estimator this algorithm builds on.
    sklearn.cluster.KMeans : the non-private algorithm.

    Notes
    -----
    **Budget.** With ``tau = n_iter`` and ``m d = sum(upper - lower)`` (the paper's data
    range ``m`` times the dimension ``d`` for data in ``[0, m]^d``; for per-feature
    bounds, the L1 diameter of the box, which is what bounds a report's sensitivity):

    - a tcm user takes part in ``tau`` Laplace releases of every cluster's count and
      centred sum, ``epsilon / tau`` each, split evenly over the ``d + 1`` parts: the
      counts get scale ``2 (d + 1) tau / epsilon`` and feature j's sums
      ``range_j (d + 1) tau / epsilon``, each part's noise in proportion to its own
      range, so the fit works in any units (:func:`central_sum_weights`, which has
      the proof). Algorithm 1 writes ``(m d + 1) tau / epsilon`` for all parts, the
      sensitivity when a user is added or removed; skhybrid's neighbours replace a
      user, which changes two counts (see :func:`central_iteration_sensitivity`).
    - an lm user sends one report with Laplace noise of scale
      ``b_L = m d (tau + 1) / epsilon`` (``epsilon / (tau + 1)``) and ``tau`` randomized
      responses at ``epsilon / (tau + 1)`` each.

    Neighbours replace one user's value, with the number of users and the trust groups
    public. Every iteration's centres are released; adaptive sequential composition
    gives the total, and everything else is post-processing.

    Per-user ``epsilon`` metadata is supported when it is equal within each trust group.
    With ``"full_lm"`` the two groups may still differ: each user's report and responses
    use their own level, and the de-mixing is done per level.

    **lm means.** Randomized response sends a user's report to a wrong cluster with
    probability ``1 - keep``. The curator de-mixes the reported counts and sums (see
    :class:`_LocalClustering`), so the lm cluster means are unbiased; Algorithm 1 takes
    the plain average, which shrinks the centres towards the overall mean.

    **Merging.** For each cluster and feature, the PWH weight of Def. 5.3 with the
    variance of the privacy noise in each group's cluster mean: the noisy sum and count
    for tcm users, the local noise carried through the de-mixing for lm users, with the
    data's part at its worst case for the bounds. (Algorithm 1's line 13 plugs in
    ``2 b_T^2`` and ``2 b_L^2``, the variances of one noisy sum and of one report.)

    **Empty clusters.** A cluster whose private size (noisy tcm count, de-mixed lm count)
    is below 1, possibly zero or negative, gets no estimate from that group; the other
    group's estimate is then used alone, and a cluster with neither keeps its previous
    centre. New centres are clipped to the bounds (post-processing).

    **What is released.** Only ``cluster_centers_`` and what derives from it. There is no
    ``inertia_`` and no ``labels_``: both are non-private statistics of the training
    data. For the same reason this class does not inherit scikit-learn's
    ``ClusterMixin``, whose contract (and estimator checks) are built on ``labels_``; it
    is tagged as a clusterer. :meth:`fit_predict` is ``fit(X).predict(X)``: each row's
    nearest private centre, which reveals each row's own region and so is not itself
    private. :meth:`score` on private data is likewise not private.

    **Dask inputs.** ``X`` (and the metadata) may be Dask arrays or DataFrames: each
    iteration is one reduction, in which every chunk gives its clusters' counts and
    sums (tcm users) and its reports by reported cluster (lm users), and the curator
    draws the central noise once from the totals. The data are read once to validate
    them and once per iteration, never collected. The lm users' randomness (report and
    responses) comes from each chunk's own generator, so a fit on several chunks has the
    distribution of the in-memory fit, and equals it when only the curator draws noise.

    **Threads.** Each pass over the users is one OpenMP loop over fixed chunks of rows
    on ``n_jobs`` threads (:func:`~skhybrid.cluster._k_means_lloyd.lloyd_pass`); each
    chunk has its own sums, added in chunk order, so no seeded result depends on the
    threads.

    References
    ----------
    B. Avent, Y. Dubey and A. Korolova. "The Power of the Hybrid Model for Mean
    Estimation". PoPETs 2020(4), Sec. 7 and Appendix E (Algorithm 1).

    C. Dwork. "A firm foundation for private data analysis". Communications of the ACM
    54(1), 2011 (the DP K-means of the tcm group).

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.cluster import HybridKMeans
    >>> rng = np.random.default_rng(0)
    >>> corners = np.array([[0.25, 0.25], [0.75, 0.75]])
    >>> X = corners[rng.integers(0, 2, 40_000)] + rng.normal(0, 0.03, (40_000, 2))
    >>> trust = np.where(rng.random(40_000) < 0.1, "tcm", "lm")
    >>> km = HybridKMeans(n_clusters=2, epsilon=4.0, bounds=(0, 1), random_state=1)
    >>> km = km.fit(X, trust_group=trust)
    >>> km.predict([[0.2, 0.3], [0.8, 0.7]]).tolist() in ([0, 1], [1, 0])
    True
    """

    _parameter_constraints: dict = {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "strategy": [StrOptions(set(_STRATEGIES))],
        "bounds": ["array-like", None],
        "init": [StrOptions({"random"}), "array-like"],
        "n_jobs": [Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left"), None],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "ledger": [HasMethods(["charge"]), None],
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        epsilon=1.0,
        n_iter=5,
        strategy="hybrid",
        bounds=None,
        init="random",
        n_jobs=None,
        random_state=None,
        ledger=None,
    ):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.n_iter = n_iter
        self.strategy = strategy
        self.bounds = bounds
        self.init = init
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.ledger = ledger

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, trust_group=None, epsilon=None, user_id=None):
        """Fit the private centres.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or Dask array or DataFrame
            One row per user: their raw values. A Dask input is read chunk by chunk
            (see Notes).
        y : ignored
        trust_group : array-like of shape (n_samples,), default=None
            ``"tcm"`` / ``"lm"`` (case-insensitive) or booleans (True = tcm); ``None``
            means every user is tcm. May be a Dask array or Series.
        epsilon : array-like of shape (n_samples,), default=None
            Per-user privacy levels; they must be equal within each trust group (the
            groups may differ). ``None`` uses the ``epsilon`` parameter.

        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        Returns
        -------
        self : HybridKMeans
        """
        # Every iteration is one reduction: each chunk of users gives its statistics for
        # the current centres (an in-memory X is one chunk), the curator adds them up and
        # draws the central noise once. A Dask X is read chunk by chunk, never collected.
        check_fit_metadata(self, trust_group, epsilon, hybrid=self.strategy == "hybrid")
        check_user_id(self, user_id)
        in_dask = is_dask_collection(X)
        if in_dask:
            users = self._summarise_dask_input(X, trust_group, epsilon)
            observed_range = np.vstack([users.minimum, users.maximum])
        else:
            X, is_tcm, user_epsilon = validate_fit_input(self, X, trust_group, epsilon)
            n_tcm = int(np.count_nonzero(is_tcm))
            users = GroupSummary(
                n_tcm, X.shape[0] - n_tcm,
                *check_group_epsilons(user_epsilon, is_tcm, "HybridKMeans"),
            )
            observed_range = X
        if self.n_clusters > users.n_tcm + users.n_lm:
            raise ValueError(f"n_samples={users.n_tcm + users.n_lm} should be >= "
                             f"n_clusters={self.n_clusters}.")
        self._check_groups(users.n_tcm, users.n_lm, trust_group is not None)
        lower, upper = resolve_bounds(self.bounds, observed_range)
        plan = self._plan(users, lower, upper)
        if plan.central is not None:
            # A noise too wide to draw is refused before the charge (as local noise is by
            # the plan's report variances).
            plan.central.variance(self.n_clusters * (1 + lower.shape[0]))
        if in_dask:
            charge_dask_release(self, user_id, trust_group, epsilon, allow_inf=False)
        else:
            charge_release(self, user_id, is_tcm, user_epsilon)
        rng = check_random_state(self.random_state)
        centres = self._initial_centres(lower, upper, rng)

        # The devices' randomness (reports, randomized responses) comes from each chunk's
        # own generators: the report's, then one per iteration.
        device_rngs = None
        if plan.release_epsilon is not None:
            device_rngs = [
                chunk_generators(chunk_rng, self.n_iter + 1)
                for chunk_rng in chunk_generators(rng, n_chunks(X) if in_dask else 1)
            ]
        if in_dask:
            statistics = partial(self._dask_statistics, X, trust_group, plan, device_rngs)
        else:
            rngs = device_rngs[0] if device_rngs else [None] * (self.n_iter + 1)
            chunk = _ChunkClustering(X, is_tcm, plan, rngs[0],  # clipped on the way
                                     n_threads=openmp_threads(self.n_jobs))

            def statistics(centres, iteration):
                return chunk.statistics(centres, rngs[1 + iteration])

        weight = noise_variance = np.full(centres.shape, np.nan)
        # Each OpenMP thread of a pass calls BLAS on its blocks: one BLAS thread each, as
        # scikit-learn's KMeans does (more would oversubscribe the cores).
        with _threadpool_controller().limit(limits=1, user_api="blas"):
            for iteration in range(self.n_iter):
                central, local = statistics(centres, iteration)
                centres, weight, noise_variance = _next_centres(plan, central, local,
                                                                centres, rng)

        self.cluster_centers_ = centres
        self.n_iter_ = self.n_iter
        self.weight_ = weight
        self.centre_noise_ = np.sqrt(np.sum(noise_variance, axis=1))
        self._warn_noisy_centres(lower, upper)
        self.n_tcm_ = users.n_tcm
        self.n_lm_ = users.n_lm
        self._n_features_out = self.n_clusters
        return self

    def fit_predict(self, X, y=None, *, trust_group=None, epsilon=None, user_id=None):
        """Fit, then give each row of ``X`` its nearest private centre.

        This is ``fit(X, ...).predict(X)``: a prediction from the private centres, not
        a private release (each row's label reveals that row's region).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        trust_group, epsilon : array-like of shape (n_samples,), default=None
            See :meth:`fit`.

        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self.fit(X, y, trust_group=trust_group, epsilon=epsilon,
                        user_id=user_id).predict(X)

    def predict(self, X):
        """The index of the nearest centre for each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        with _threadpool_controller().limit(limits=1, user_api="blas"):
            return nearest_centre(X, self.cluster_centers_,
                                  n_threads=openmp_threads(self.n_jobs))

    def transform(self, X):
        """Euclidean distance of each row of ``X`` to each centre.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        distances : ndarray of shape (n_samples, n_clusters)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        # Centred on the centres: ||x||^2 - 2 x . c + ||c||^2 about zero loses to
        # rounding what the squares of data far from zero carry (0.008 of distances near
        # 0.2 for 10 features near 1e6); about the centres it keeps the differences.
        origin = self.cluster_centers_.mean(axis=0)
        return euclidean_distances(X - origin, self.cluster_centers_ - origin)

    def score(self, X, y=None):
        """Minus the within-cluster sum of squares of ``X`` per sample.

        Each row counts in the cluster of its nearest private centre; see
        :func:`within_cluster_sum_of_squares`.

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
            Higher is better; 0 when every row sits on a centre.
        """
        check_is_fitted(self)
        warn_score_leak(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return -within_cluster_sum_of_squares(X, self.cluster_centers_) / X.shape[0]

    # -- private helpers ------------------------------------------------------------------

    def _release_cost(self, is_tcm, epsilon, **_):
        """Each user's level over all ``n_iter`` iterations (the parameter is the total);
        lm users are not charged under ``"tcm_only"``."""
        return ReleaseCost.at_levels(epsilon,
                                     charged=is_tcm if self.strategy == "tcm_only" else None)

    def _warn_noisy_centres(self, lower, upper):
        diagonal = float(np.sqrt(np.sum((upper - lower) ** 2)))
        noisy = ~(self.centre_noise_ <= NOISY_CENTRE_FRACTION * diagonal)  # NaN: no estimate
        if noisy.any():
            warn_user(
                f"{int(noisy.sum())} of {self.n_clusters} centres are mostly noise: their "
                f"expected noise (centre_noise_: {np.round(self.centre_noise_, 3).tolist()}, "
                "NaN for a centre no group updated) exceeds "
                f"{NOISY_CENTRE_FRACTION} of the bounds' diagonal ({diagonal:.3g}); "
                "more users, a larger epsilon, fewer clusters or iterations, or tighter "
                "bounds reduce it", NoisyCentresWarning)

    def _check_groups(self, n_tcm, n_lm, trust_given):
        if self.strategy == "tcm_only" and n_tcm == 0:
            raise ValueError("strategy='tcm_only' needs at least one tcm user; got none")
        if self.strategy == "hybrid" and trust_given and min(n_tcm, n_lm) == 0:
            present = "tcm" if n_tcm else "lm"
            warn_user(
                f"strategy='hybrid' merges two groups but every user is {present}; the "
                f"centres come from the {present} algorithm alone",
                EmptyGroupWarning,
            )

    def _initial_centres(self, lower, upper, rng):
        shape = (self.n_clusters, lower.shape[0])
        if isinstance(self.init, str):
            # "random": uniform in the (public) bounds, independent of the data.
            return rng.uniform(lower, upper, size=shape)
        try:
            centres = np.array(self.init, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"init must be 'random' or an array of numbers; got {self.init!r}"
            ) from None
        if centres.shape != shape:
            raise ValueError(
                f"init must have shape (n_clusters, n_features) = {shape}; got {centres.shape}"
            )
        if not np.all(np.isfinite(centres)):
            raise ValueError("init must contain finite numbers only")
        return centres

    def _plan(self, users, lower, upper):
        """Who runs which algorithm under each strategy, with which budget: a :class:`_FitPlan`."""
        central = None
        if self.strategy != "full_lm" and users.n_tcm:
            central = central_iteration_mechanism(
                upper - lower, self.n_iter, users.epsilon_tcm, users.n_tcm
            )
        plan = _FitPlan(lower, upper, central)
        local_groups = (self.strategy == "full_lm", self.strategy != "tcm_only")
        group_epsilons = (users.epsilon_tcm, users.epsilon_lm)
        # The local users' privacy levels: the lm group's and, for full_lm, the tcm group's.
        present = [
            group_epsilon
            for group_epsilon, local, size in zip(group_epsilons, local_groups, users[:2])
            if local and size
        ]
        if not present:
            return plan
        levels = np.unique(present)
        release_epsilon = local_release_epsilon(levels, self.n_iter)
        report_variance = np.array([
            local_report_variance(epsilon=step, **plan.local_noise) for step in release_epsilon
        ])
        group_levels = tuple(
            int(np.searchsorted(levels, group_epsilon)) if group_epsilon is not None else 0
            for group_epsilon in group_epsilons
        )
        return _FitPlan(lower, upper, central, local_groups, release_epsilon, report_variance,
                        group_levels)

    def _summarise_dask_input(self, X, trust_group, epsilon):
        """Validate a Dask input chunk by chunk and summarise its users (one reduction)."""
        check_dask_features(self, X, reset=True)
        default_epsilon = check_epsilon(self.epsilon) if epsilon is None else None
        summaries = map_chunks(
            partial(summarise_chunk, default_epsilon=default_epsilon,
                    estimator_name="HybridKMeans"),
            X, trust_group=trust_group, epsilon=epsilon,
        )
        if sum(summary.n_tcm + summary.n_lm for summary in summaries) == 0:
            raise ValueError("X has 0 samples; HybridKMeans needs at least one")
        return merge_chunk_summaries(summaries, "HybridKMeans")

    def _dask_statistics(self, X, trust_group, plan, device_rngs, centres, iteration):
        """One iteration's statistics of all chunks of a Dask input, added up."""
        generators = None
        if device_rngs is not None:
            generators = [(rngs[0], rngs[1 + iteration]) for rngs in device_rngs]
        parts = map_chunks(
            partial(_chunk_statistics, plan=plan, centres=centres),
            X, generators=generators, trust_group=trust_group,
        )
        return tuple(
            _add_statistics(group) if group[0] is not None else None for group in zip(*parts)
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "clusterer"
        tags.target_tags.required = False
        tags.input_tags.allow_nan = False
        return tags
