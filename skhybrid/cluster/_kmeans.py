"""Hybrid-model differentially private K-means (Avent, Dubey and Korolova 2020, Sec. 7).

Algorithm 1 of the paper (Appendix E) runs two DP K-means algorithms side by side and
merges their centres after every iteration with the privacy-weighted hybrid (PWH)
estimator of Def. 5.3:

- tcm users (trusted-curator model) give the curator their clipped values; in each of the
  ``tau`` iterations the curator assigns them to their nearest centre and releases every
  cluster's count and sum with Laplace noise (the classic DP K-means of Dwork 2011):
  :class:`_CentralClustering`.
- lm users (local model) send their value once with local Laplace noise and, in each
  iteration, their nearest centre, computed on their device from their true value,
  through k-ary randomized response (:class:`RandomizedResponse`); the curator
  aggregates the reports by reported cluster: :class:`_LocalClustering`.

Budget of one fit (``epsilon`` = a user's total, ``tau`` = ``n_iter``)
-----------------------------------------------------------------------
- tcm user: ``tau`` releases of the counts and centred sums, each ``epsilon / tau``-DP
  (:func:`central_iteration_mechanism`): total ``epsilon``.
- lm user: one report at ``epsilon / (tau + 1)`` and ``tau`` randomized responses at
  ``epsilon / (tau + 1)`` each (:func:`local_release_epsilon`): total ``epsilon``.

Everything else (means, weights, de-mixing, clipping of the centres) is
post-processing of these releases.

Neighbouring relation: replace one user's value (any value; values are clipped to the
bounds first), with the number of users and the trust groups public. The centres of
every iteration are released (they are what the next iteration is computed from), so
the guarantee follows from adaptive sequential composition.

Departures from Algorithm 1, none of which changes what a user spends:

- the tcm noise scale is calibrated to replacing a user (``m d + 2``, not ``m d + 1``;
  see :func:`central_iteration_sensitivity`), and the tcm sums are centred on the box;
- the lm reports are de-mixed from the randomized response, which makes the lm cluster
  means unbiased (Algorithm 1's plain average pulls every centre towards the overall
  mean by the share of responses from other clusters, about half of them at
  epsilon = 7, tau = 5, K = 4);
- the PWH weight uses the noise variance of each group's cluster *mean*, including the
  noise of its cluster size and of the randomized response (Algorithm 1, line 13,
  writes ``s_T^2 = 2 b_T^2`` and ``s_L^2 = 2 b_L^2``, the variances of one noisy sum
  and of one report).
"""

import copy
import math
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._group_estimates import local_report_variance, privatize_locally
from ..mechanisms._feature_weights import feature_noise_weights, scaled_ranges
from ..accounting._costs import charge_dask_release, charge_release, check_user_id
from ..base import (
    RANDOM_STATE_CONSTRAINT,
    ValidatedParamsMixin,
    check_fit_metadata,
    validate_fit_input,
    warn_score_leak,
)
from ..exceptions import EmptyGroupWarning
from ..mechanisms import LaplaceMechanism
from ..theory._hybrid import pwh_weight
from ..utils._dask import (
    check_dask_features,
    renumbered_errors,
    chunk_generators,
    is_dask_collection,
    map_chunks,
    n_chunks,
)
from ..utils._kernels import first_minimum, first_minimum_code_sums
from ..utils._random import check_random_state
from ..utils._sums import (
    FIXED_POINT_BITS,
    centred_sums,
    fixed_point_codes,
    fixed_point_sums,
    grouped_code_sums,
    rounding_slack,
)
from ..utils._threads import available_cores, single_threaded_blas
from ..utils._validation import (
    check_epsilon,
    check_trust_group,
    check_group_epsilons,
    clip_to_bounds,
    feature_wise,
    masked_rows,
    resolve_bounds,
)

_STRATEGIES = ("hybrid", "tcm_only", "full_lm")

#: Rows per block of the nearest-centre search. Each block runs tens of numpy calls;
#: on blocks much smaller than this, the threads spend more time passing the GIL
#: between those calls than computing (measured: 8192 rows is 10-20% slower).
_CHUNK_ROWS = 32768
#: Below this many input values per core, a thread costs more than it saves.
_ELEMENTS_PER_WORKER = 2**20
_CHUNKS_PER_TASK = 2


# -- privacy budget of Algorithm 1 ----------------------------------------------------------


def central_iteration_sensitivity(ranges, n_users=1):
    """L1 sensitivity of one iteration's tcm release: all clusters' counts and centred sums.

    Algorithm 1 (Avent et al. 2020, Appendix E, line 2) calibrates the tcm noise to
    ``m d + 1``: the L1 norm of a value in ``[0, m]^d`` plus one count, the change when a
    user is *added or removed*. skhybrid's neighbours *replace* a user. The sums are taken
    of the values minus the middle of the box, each of L1 norm at most
    ``sum(ranges) / 2``. A user who moves to another cluster changes two counts by one
    and two centred sums by at most ``sum(ranges) / 2`` each; a user who stays changes
    one centred sum by at most ``sum(ranges)``. Hence

        sensitivity = sum(upper - lower) + 2,

    where ``sum(upper - lower)`` (the L1 diameter of the box) is the paper's ``m d`` for
    per-feature bounds.

    Several features: the sums are released divided by each feature's noise weight
    (:func:`~skhybrid.mechanisms._feature_weights.feature_noise_weights`), so that each
    feature's noise is in proportion to its range; the scaled ranges have the same L1
    sum, and the division's rounding is one more operation in the slack.

    In floating point: the counts are exact integers, and the centred sums are
    computed exactly in fixed point (:mod:`skhybrid.utils._sums`, centred on the middle
    of the grid in integers) and then converted to floats, which rounds each sum, of
    magnitude at most ``n_users * range / 2``, by a few units in its last place. A user
    changes at most two sums per feature, so each feature's term gains twice
    :func:`~skhybrid.utils._sums.rounding_slack` of that magnitude, and the total is
    rounded up: the statistic the noise is added to moves by at most this much, in
    float64, for any bounds.

    Parameters
    ----------
    ranges : ndarray of shape (n_features,)
        ``upper - lower``.
    n_users : int, default=1
        The number of users in the release (public): bounds the sums' magnitude.

    Returns
    -------
    sensitivity : float
    """
    ranges = np.asarray(ranges, dtype=np.float64)
    weights = feature_noise_weights(ranges)
    scaled = scaled_ranges(ranges, weights)
    n_operations = 4 if ranges.shape[0] == 1 else 5
    slack = 2.0 * rounding_slack(n_users * scaled / 2.0, n_operations)
    return float(np.nextafter(math.fsum([*(scaled + slack), 2.0]), np.inf))


def central_iteration_mechanism(ranges, n_iter, epsilon, n_users=1):
    """The Laplace mechanism of one iteration's tcm counts and sums (Algorithm 1, lines 9-10).

    Each of the ``n_iter`` iterations spends ``epsilon / n_iter`` of a tcm user's budget,
    so the Laplace scale is ``b_T = (sum(ranges) + 2) n_iter / epsilon``: Algorithm 1's
    ``(m d + 1) tau / epsilon`` under replacement (see
    :func:`central_iteration_sensitivity`). Counts and sums share the scale, as in the
    paper.

    Parameters
    ----------
    ranges : ndarray of shape (n_features,)
    n_iter : int
    epsilon : float
        The tcm users' total budget.
    n_users : int, default=1
        The number of tcm users (public; see :func:`central_iteration_sensitivity`).

    Returns
    -------
    mechanism : skhybrid.mechanisms.LaplaceMechanism
    """
    sensitivity = central_iteration_sensitivity(ranges, n_users)
    return LaplaceMechanism(epsilon=epsilon / n_iter, sensitivity=sensitivity)


def local_release_epsilon(epsilon, n_iter):
    """An lm user's budget for each local release: ``epsilon / (tau + 1)`` (Algorithm 1).

    The user spends it once on their Laplace-noised report (line 4: scale
    ``b_L = m d (tau + 1) / epsilon``, with ``m d = sum(upper - lower)``) and once per
    iteration on the randomized response of their nearest centre (line 7).

    Parameters
    ----------
    epsilon : float or ndarray
        The users' total budget.
    n_iter : int

    Returns
    -------
    epsilon : float or ndarray
    """
    return epsilon / (n_iter + 1)


# -- randomized response --------------------------------------------------------------------


def randomized_response_keep_probability(epsilon, n_categories):
    """Probability that k-ary randomized response reports the true category.

    ``e^eps / (e^eps + k - 1)``; each other category has probability
    ``1 / (e^eps + k - 1)``, so any output is at most ``e^eps`` times likelier under one
    input than under another (Kairouz, Oh and Viswanath 2016). Algorithm 1, line 7 of
    Avent et al. 2020 states the same distribution as "the closest cluster with
    probability ``(e^eps - 1) / (K + e^eps - 1)``, a uniformly random one otherwise".
    Computed as ``1 / (1 + (k - 1) e^-eps)``, which does not overflow.

    Parameters
    ----------
    epsilon : float or ndarray
        > 0.
    n_categories : int
        k >= 1.

    Returns
    -------
    probability : float or ndarray
    """
    return 1.0 / (1.0 + (n_categories - 1) * np.exp(-np.asarray(epsilon, dtype=np.float64)))


class RandomizedResponse:
    """k-ary randomized response: each user's epsilon-LDP report of one of k categories.

    The true category is kept with probability ``e^eps / (e^eps + k - 1)``; otherwise
    one of the other ``k - 1`` categories is reported, uniformly. Any two inputs are
    neighbours (local DP), and every output's probability ratio between them is at most
    ``e^eps``.

    Parameters
    ----------
    n_categories : int
        k >= 1; the categories are ``0, ..., k - 1``.
    epsilon : float, default=1.0
        The default privacy level; ``privatize`` accepts one per user.

    Notes
    -----
    The outputs are categories, not floating-point values, so there is no low-order-bit
    leak. A report changes when a uniform double (a multiple of 2**-53) is below the
    change probability ``(k - 1) / (e^eps + k - 1)``, so the probabilities are exact up to
    that grid; for an epsilon so large that the change probability is below 2**-53, the
    achieved level is about ``53 ln 2 + ln(k - 1)`` (about 37), never unbounded.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.cluster._kmeans import RandomizedResponse
    >>> response = RandomizedResponse(n_categories=4, epsilon=np.log(3.0))
    >>> response.probabilities(0).round(3).tolist()
    [0.5, 0.167, 0.167, 0.167]
    >>> response.privatize(np.array([0, 3, 3]), random_state=0).shape
    (3,)
    """

    def __init__(self, *, n_categories, epsilon=1.0):
        self.n_categories = n_categories
        self.epsilon = epsilon

    def keep_probability(self, epsilon=None):
        """Probability of reporting the true category (``epsilon=None``: the randomizer's)."""
        return randomized_response_keep_probability(self._levels(epsilon), self._categories())

    def probabilities(self, category, *, epsilon=None):
        """The output distribution for a user whose true category is ``category``.

        Returns
        -------
        probabilities : ndarray of shape (n_categories,)
        """
        k = self._categories()
        levels = self._levels(epsilon)
        keep = float(randomized_response_keep_probability(levels, k))
        probabilities = np.full(k, float(self._other_probability(levels, k)) if k > 1 else 0.0)
        probabilities[self._check_categories(np.array([category]))[0]] = keep
        return probabilities

    def privatize(self, categories, *, epsilon=None, random_state=None):
        """Randomize each user's category on their device.

        Parameters
        ----------
        categories : array-like of int, shape (n_users,)
            True categories in ``[0, n_categories)``.
        epsilon : float or array-like of shape (n_users,), default=None
            Each user's privacy level for this report; ``None`` uses ``epsilon``.
        random_state : None, int or numpy.random.Generator, default=None
            ``None`` uses the operating system's secure randomness.

        Returns
        -------
        reports : ndarray of int, shape (n_users,)
        """
        k = self._categories()
        true = self._check_categories(categories)
        levels = self._levels(epsilon, true.shape[0])
        rng = check_random_state(random_state)
        if k == 1:
            return true.astype(np.intp)
        changed = rng.random(true.shape[0]) < (k - 1) * self._other_probability(levels, k)
        # A shift of 1 .. k-1 (mod k) is uniform over the other categories.
        reports = rng.integers(1, k, size=true.shape[0], dtype=np.intp)
        reports *= changed
        reports += true
        np.remainder(reports, k, out=reports)
        return reports

    @staticmethod
    def _other_probability(levels, k):
        # 1 / (e^eps + k - 1) = e^-eps keep, accurate even where keep rounds to 1 (so a
        # change never becomes impossible).
        return np.exp(-levels) * randomized_response_keep_probability(levels, k)

    def _categories(self):
        k = self.n_categories
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
            raise ValueError(f"n_categories must be an integer >= 1; got {k!r}")
        return int(k)

    def _levels(self, epsilon, n_users=None):
        if epsilon is None:
            return check_epsilon(self.epsilon)
        if np.ndim(epsilon) == 0:
            return check_epsilon(epsilon)
        return check_epsilon(epsilon, n_users)

    def _check_categories(self, categories):
        array = np.asarray(categories)
        if array.ndim != 1 or array.dtype.kind not in "iu":
            raise ValueError(
                "categories must be a 1-dimensional array of integers; got an array of "
                f"dtype {array.dtype} and shape {array.shape}"
            )
        k = self._categories()
        if array.size and (array.min() < 0 or array.max() >= k):
            index = int(np.flatnonzero((array < 0) | (array >= k))[0])
            raise ValueError(
                f"categories must be in [0, {k}); got {array[index].item()!r} at index {index}"
            )
        return array


# -- the two groups' cluster estimates -------------------------------------------------------


def nearest_centre(X, centres, *, codes=None):
    """Index of each row's nearest centre in squared Euclidean distance (first on ties).

    ``argmin_k ||x - c_k||^2 = argmin_k (||c_k||^2 - 2 x . c_k)``, computed in blocks of
    ``_CHUNK_ROWS`` rows: a matrix product gives the block's distances (one row per
    centre), then one compiled pass (:mod:`~skhybrid.utils._kernels`) picks each
    column's first minimum while the block is in cache. Large inputs are spread over
    the available cores, as scikit-learn's Lloyd iterations are.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    centres : ndarray of shape (n_clusters, n_features)
    codes : ndarray of shape (n_features, n_samples), default=None
        The rows' fixed-point codes: their exact sums per nearest centre are then
        added up in the same compiled pass, in int64.

    Returns
    -------
    labels : ndarray of shape (n_samples,), dtype=intp
    code_sums : ndarray of int64 of shape (n_clusters, n_features)
        Only with ``codes``.
    """
    scaled = -2.0 * centres
    norms = np.einsum("kd,kd->k", centres, centres)[:, np.newaxis]
    labels = np.empty(X.shape[0], dtype=np.intp)
    n_clusters = centres.shape[0]
    kernel = first_minimum if codes is None else first_minimum_code_sums

    def search_all(starts):
        sums = None if codes is None else np.zeros((n_clusters, codes.shape[0]), np.int64)
        for start in starts:
            rows = slice(start, start + _CHUNK_ROWS)
            distances = scaled @ X[rows].T
            distances += norms
            if sums is None:
                kernel(distances, labels[rows])
            else:
                kernel(distances, codes[:, rows], labels[rows], sums)
        return sums

    starts = range(0, X.shape[0], _CHUNK_ROWS)
    workers = min(available_cores(), X.size // _ELEMENTS_PER_WORKER)
    # One BLAS thread per block: for products this small BLAS threads cost more than
    # they save, and on busy cores their spin-waiting can slow a product a hundredfold.
    with single_threaded_blas():
        if workers > 1:
            # The product and the compiled pass release the GIL. Many small tasks
            # balance the load when another process holds a core.
            step = _CHUNKS_PER_TASK
            tasks = [starts[i : i + step] for i in range(0, len(starts), step)]
            with ThreadPoolExecutor(workers) as pool:
                parts = list(pool.map(search_all, tasks))
        else:
            parts = [search_all(starts)]
    if codes is None:
        return labels
    # Integer additions: the total is exact whatever the order of the parts.
    return labels, np.sum(parts, axis=0, dtype=np.int64)


def cluster_sums(values_by_feature, labels, n_clusters):
    """Each cluster's size and the sum of its members' values.

    Parameters
    ----------
    values_by_feature : ndarray of shape (n_features, n_samples)
        The values, one feature per row (contiguous rows make ``np.bincount`` fast).
    labels : ndarray of shape (n_samples,)
    n_clusters : int

    Returns
    -------
    counts : ndarray of shape (n_clusters,), float
    sums : ndarray of shape (n_clusters, n_features)
    """
    counts = np.bincount(labels, minlength=n_clusters).astype(np.float64)
    sums = np.empty((n_clusters, values_by_feature.shape[0]))
    for feature, column in enumerate(values_by_feature):
        sums[:, feature] = np.bincount(labels, weights=column, minlength=n_clusters)
    return counts, sums


@dataclass(frozen=True)
class _ClusterMeans:
    """One trust group's private cluster means in one iteration.

    Attributes
    ----------
    means : ndarray of shape (n_clusters, n_features)
        NaN rows for clusters without an estimate.
    sizes : ndarray of shape (n_clusters,)
        The private cluster sizes the means divide by.
    present : ndarray of shape (n_clusters,), bool
        Clusters with an estimate: private size at least 1 (a non-empty cluster has a
        member; dividing by less would amplify the noise without bound).
    noise_variance : ndarray of shape (n_clusters, n_features)
        Variance of the privacy noise in each coordinate of each mean (NaN where absent),
        with the data's contribution at its worst case for the bounds.
    """

    means: np.ndarray
    sizes: np.ndarray
    present: np.ndarray
    noise_variance: np.ndarray


def _cluster_means(midpoint, centred_sums, sizes, sum_variance):
    present = sizes >= 1.0
    means = np.full(centred_sums.shape, np.nan)
    means[present] = midpoint + centred_sums[present] / sizes[present, np.newaxis]
    variance = np.full(centred_sums.shape, np.nan)
    variance[present] = sum_variance[present] / sizes[present, np.newaxis] ** 2
    return _ClusterMeans(means, sizes, present, variance)


class _CentralStatistics(NamedTuple):
    """One chunk's tcm statistics in one iteration: what the curator adds noise to once.

    Both are exact integers, so the chunks' statistics add up exactly.

    counts : ndarray of int64 of shape (n_clusters,)
    sums : ndarray of int64 of shape (n_clusters, n_features)
        Exact sums of the clipped values' fixed-point codes centred on the middle of the
        grid (:func:`centred_code_sums`).
    """

    counts: np.ndarray
    sums: np.ndarray


class _LocalStatistics(NamedTuple):
    """One chunk's lm statistics in one iteration: the reports, collected by reported cluster.

    counts : ndarray of shape (n_levels, n_clusters)
    sums : ndarray of shape (n_levels, n_clusters, n_features)
        Per privacy level and reported cluster, the number of reports and the sum of the
        reports centred on the middle of the box.
    n_users : ndarray of shape (n_levels,)
    report_totals : ndarray of shape (n_levels, n_features)
        The sums of all centred reports, whatever cluster they report.
    """

    counts: np.ndarray
    sums: np.ndarray
    n_users: np.ndarray
    report_totals: np.ndarray


def _add_statistics(parts):
    """The statistics of all chunks: the field-wise sums of the chunks' statistics."""
    return type(parts[0])(*(sum(field) for field in zip(*parts)))


def centred_code_sums(values, lower, upper, labels, counts, *, codes=None, code_sums=None):
    """Each cluster's exact sum of its members' values centred on the middle of the box.

    In fixed-point units (:func:`~skhybrid.utils._sums.fixed_point_sums`): a clipped
    value's code is in ``[0, 2**B]``, so ``code - 2**(B - 1)`` is the value minus the
    middle of the box, of magnitude at most ``2**(B - 1)`` (half the range), computed in
    integers without rounding. A user who moves to another cluster changes two of these
    sums by at most ``2**(B - 1)`` per feature; one who stays, one sum by ``2**B``
    (see :func:`central_iteration_sensitivity`).

    Parameters
    ----------
    values : ndarray of shape (n_users, n_features)
        Raw or clipped values (clipped here).
    lower, upper : ndarray of shape (n_features,)
    labels : ndarray of int of shape (n_users,)
    counts : ndarray of int of shape (n_clusters,)
        ``np.bincount(labels, minlength=n_clusters)``.
    codes : ndarray of shape (n_features, n_users), default=None
        ``fixed_point_codes(values, lower, upper)`` when computed once for every
        iteration; None computes them here.
    code_sums : ndarray of int64 of shape (n_clusters, n_features), default=None
        The codes' exact sums per cluster when already computed (by the fused pass of
        :func:`nearest_centre`); only the centring is left to do.

    Returns
    -------
    sums : ndarray of int64 of shape (n_clusters, n_features)
    """
    if code_sums is not None:
        sums = code_sums.copy()
    elif codes is None:
        sums = fixed_point_sums(values, lower, upper, labels=labels, n_groups=counts.shape[0])
    else:
        sums = grouped_code_sums(codes, labels, counts.shape[0])
    sums -= counts[:, np.newaxis].astype(np.int64) << (FIXED_POINT_BITS - 1)
    return sums


def _release_central(statistics, lower, upper, mechanism, rng):
    """The curator's tcm release of one iteration (Algorithm 1, lines 9-10): noise drawn once.

    All clusters' counts and centred sums go through ``mechanism`` in one vector (the
    sums converted from exact fixed point to the values' units, the rounding of which
    the mechanism's sensitivity accounts for); a cluster's mean is the middle of the box
    plus its noisy centred sum over its noisy count, added after the noise.
    """
    counts, code_sums = statistics
    k, n_features = code_sums.shape
    ranges = upper - lower
    sums = centred_sums(code_sums, lower, upper, n_users=int(counts.max(initial=0)))
    # Each feature's sums divided by its noise weight (see central_iteration_sensitivity).
    weights = feature_noise_weights(ranges)
    if n_features > 1:
        sums = sums / weights
    released = mechanism.randomise(
        np.concatenate([counts.astype(np.float64), sums.ravel()]), random_state=rng
    )
    noisy_counts, noisy_sums = released[:k], released[k:].reshape(k, n_features)
    if n_features > 1:
        noisy_sums = noisy_sums * weights
    # The mean's error is (Y_sum - mu Y_count) / count, with mu the centred mean: both
    # noises, the count's times |mu| <= half the range.
    noise = mechanism.variance(released.size)
    sum_variance = np.broadcast_to(noise * (weights**2 + (ranges / 2.0) ** 2), (k, n_features))
    return _cluster_means(lower + ranges / 2.0, noisy_sums, noisy_counts, sum_variance)


def _demix_local(statistics, midpoint, ranges, release_epsilon, report_variance):
    """The curator's lm cluster means of one iteration, de-mixed from the randomized response.

    A report lands in its true cluster with probability ``keep`` and in each other one
    with probability ``other``, so (per privacy level)

        E[reported count_j] = other n + (keep - other) N_j,
        E[reported sum_j] = other T + (keep - other) S_j,

    with ``T`` the sum of all reports; solving gives unbiased sizes ``N_j`` and sums
    ``S_j``. (Algorithm 1 divides the reported sum by the reported count, which pulls
    every centre towards the overall mean by the share of reports from other clusters.)
    Post-processing: no noise is drawn here.
    """
    counts, sums, n_users, report_totals = statistics
    k = counts.shape[1]
    keep = randomized_response_keep_probability(release_epsilon, k)[:, np.newaxis]
    other = RandomizedResponse._other_probability(release_epsilon, k)[:, np.newaxis]
    if k == 1:
        other = np.zeros_like(keep)
    gain = keep - other
    n_users = n_users[:, np.newaxis]
    sizes = (counts - other * n_users) / gain
    demixed = (sums - other[..., np.newaxis] * report_totals[:, np.newaxis, :]) / gain[
        ..., np.newaxis
    ]
    # The mean's error is (S_j - mu_j N_j) / N_j = sum_i (x_i + Y_i - mu_j) w_ij / N_j
    # over all users, with w_ij = (1[report_i = j] - other) / gain of second moment
    # other (1 - other) / gain^2 outside cluster j and
    # (keep (1 - other)^2 + (1 - keep) other^2) / gain^2 inside it; E[(x + Y - mu)^2]
    # is the report's noise variance plus at most range^2.
    inside = np.clip(sizes, 0.0, n_users)
    spread = (
        (n_users - inside) * other * (1.0 - other)
        + inside * (keep * (1.0 - other) ** 2 + (1.0 - keep) * other**2)
    ) / gain**2
    second_moment = report_variance + ranges**2
    sum_variance = np.einsum("lk,ld->kd", spread, second_moment)
    return _cluster_means(midpoint, demixed.sum(axis=0), sizes.sum(axis=0), sum_variance)


class _CentralClustering:
    """The tcm side of an iteration on one chunk: the curator's counts and sums, then noise.

    The curator sees the clipped values and assigns each to its nearest centre
    (Algorithm 1, line 6): :meth:`statistics`. The noise is added once to the totals of
    all chunks by :func:`_release_central`; :meth:`estimate` is the one-chunk case.

    Parameters
    ----------
    values : ndarray of shape (n_users, n_features)
        Clipped to the bounds.
    lower, upper : ndarray of shape (n_features,)
    mechanism : LaplaceMechanism
    """

    def __init__(self, values, lower, upper, mechanism):
        self._values = values
        self._lower = lower
        self._upper = upper
        # The nearest-centre search runs on values near zero (better conditioned); it
        # only picks each user's cluster, from their own value.
        self._midpoint = (lower + upper) / 2.0
        self._centred = feature_wise(np.subtract, values, self._midpoint)
        # The users' fixed-point codes, once for every iteration (the curator's secret,
        # like the values; dropped with this object at the end of the fit).
        self._codes = fixed_point_codes(values, lower, upper)
        self._mechanism = mechanism

    def statistics(self, centres):
        """Each cluster's count and centred sum: :class:`_CentralStatistics`."""
        # Labels and the exact code sums per cluster in one pass over the users.
        nearest, code_sums = nearest_centre(self._centred, centres - self._midpoint,
                                            codes=self._codes)
        counts = np.bincount(nearest, minlength=centres.shape[0])
        sums = centred_code_sums(self._values, self._lower, self._upper, nearest, counts,
                                 codes=self._codes, code_sums=code_sums)
        return _CentralStatistics(counts, sums)

    def estimate(self, centres, rng):
        statistics = self.statistics(centres)
        return _release_central(statistics, self._lower, self._upper, self._mechanism, rng)


class _LocalClustering:
    """The lm side of an iteration on one chunk: reports sent once, then a randomized response.

    ``values`` are the users' clipped true values, which stay on their devices: each
    device computes its nearest centre from its own value and sends it through
    randomized response (Algorithm 1, line 7), drawn from ``rng`` in :meth:`statistics`.
    The curator collects the Laplace-noised ``reports`` (line 4) by reported cluster
    (lines 11-12) and de-mixes the totals of all chunks (:func:`_demix_local`);
    :meth:`estimate` is the one-chunk case.

    Parameters
    ----------
    values, reports : ndarray of shape (n_users, n_features)
    midpoint, ranges : ndarray of shape (n_features,)
    release_epsilon : ndarray of shape (n_levels,)
        Each privacy level's budget per release.
    report_variance : ndarray of shape (n_levels, n_features)
        Each privacy level's report noise variance, per feature.
    level : ndarray of shape (n_users,) or None
        Each user's privacy level (index into the two arrays above); None for one level.
    """

    def __init__(self, values, reports, midpoint, ranges, release_epsilon, report_variance, level):
        self._values = values
        self._midpoint = midpoint
        self._ranges = ranges
        self._centred_by_feature = np.subtract(reports.T, midpoint[:, np.newaxis], order="C")
        self._release_epsilon = release_epsilon
        self._report_variance = report_variance
        self._level = level
        if level is None:
            self._n_users = np.array([float(values.shape[0])])
            self._report_totals = self._centred_by_feature.sum(axis=1)[np.newaxis]
        else:
            self._n_users, self._report_totals = cluster_sums(
                self._centred_by_feature, level, release_epsilon.shape[0]
            )

    def statistics(self, centres, rng):
        """The reports by privacy level and reported cluster: :class:`_LocalStatistics`."""
        k, n_features = centres.shape
        n_levels = self._release_epsilon.shape[0]
        if self._values.shape[0] == 0:
            return _LocalStatistics(np.zeros((n_levels, k)), np.zeros((n_levels, k, n_features)),
                                    self._n_users, self._report_totals)
        nearest = nearest_centre(self._values, centres)
        if self._level is None:
            user_epsilon, offset = self._release_epsilon[0], 0
        else:
            user_epsilon, offset = self._release_epsilon[self._level], k * self._level
        response = RandomizedResponse(n_categories=k)
        reported = response.privatize(nearest, epsilon=user_epsilon, random_state=rng)
        counts, sums = cluster_sums(self._centred_by_feature, reported + offset, k * n_levels)
        return _LocalStatistics(counts.reshape(n_levels, k), sums.reshape(n_levels, k, n_features),
                                self._n_users, self._report_totals)

    def estimate(self, centres, rng):
        statistics = self.statistics(centres, rng)
        return _demix_local(
            statistics, self._midpoint, self._ranges, self._release_epsilon, self._report_variance
        )


def _merge_cluster_means(tcm, lm, previous, lower, upper):
    """Algorithm 1, lines 13-15: each cluster's PWH combination of the two groups' means.

    Per cluster and feature, Def. 5.3's weight ``s_L^2 / (s_L^2 + (1 - c) n s_T^2)``
    with ``s_T^2`` the noise variance of the tcm mean and ``s_L^2 / ((1 - c) n)`` that of
    the lm mean, each including the noise of its cluster size (and, for lm users, of the
    randomized response): the inverse-variance weighting of the two means' privacy
    noise. A cluster with one group's estimate takes it (weight 1 or 0); a cluster with
    neither keeps its previous centre (weight NaN). The centres are then clipped to the
    bounds: post-processing that only brings them closer to the clusters' true means,
    which lie in the box.

    Returns
    -------
    centres : ndarray of shape (n_clusters, n_features)
    weight : ndarray of shape (n_clusters, n_features)
    """
    absent = np.zeros(previous.shape[0], dtype=bool)
    has_tcm = tcm.present if tcm is not None else absent
    has_lm = lm.present if lm is not None else absent
    weight = np.where(has_tcm, 1.0, np.where(has_lm, 0.0, np.nan))
    weight = np.repeat(weight[:, np.newaxis], previous.shape[1], axis=1)
    both = has_tcm & has_lm
    if both.any():
        n_tcm = tcm.sizes[both, np.newaxis]
        n_lm = lm.sizes[both, np.newaxis]
        n = n_tcm + n_lm
        weight[both] = pwh_weight(
            n=n, c=n_tcm / n, s_T2=tcm.noise_variance[both], s_L2=n_lm * lm.noise_variance[both]
        )
    missing = np.zeros_like(previous)
    tcm_means = np.where(has_tcm[:, np.newaxis], tcm.means, 0.0) if tcm is not None else missing
    lm_means = np.where(has_lm[:, np.newaxis], lm.means, 0.0) if lm is not None else missing
    merged = weight * tcm_means + (1.0 - weight) * lm_means
    updated = has_tcm | has_lm
    centres = previous.copy()
    centres[updated] = merged[updated]
    return np.clip(centres, lower, upper), weight


def within_cluster_sum_of_squares(X, centres):
    """The K-means objective (WCSS): sum over rows of the squared distance to the nearest centre.

    Avent et al. 2020, Sec. 7: ``sum_k sum_{x in C_k} ||x - mu_k||^2`` with each row in the
    cluster of its nearest centre. Distances to the chosen centre are computed directly,
    without the cancellation of ``||x||^2 - 2 x . c + ||c||^2``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    centres : ndarray of shape (n_clusters, n_features)

    Returns
    -------
    wcss : float
    """
    labels = nearest_centre(X, centres)
    total = 0.0
    for start in range(0, X.shape[0], _CHUNK_ROWS):
        block = slice(start, start + _CHUNK_ROWS)
        difference = X[block] - centres[labels[block]]
        total += float(np.einsum("ij,ij->", difference, difference))
    return total


# -- one fit as reductions over chunks of users ------------------------------------------------


class _GroupSummary(NamedTuple):
    """What the curator needs to know about the users before the first iteration (all public).

    epsilon_tcm, epsilon_lm : float or None
        Each group's privacy level (None for an empty group).
    minimum, maximum : ndarray of shape (n_features,) or None
        The data's range, read only when ``bounds=None``.
    """

    n_tcm: int
    n_lm: int
    epsilon_tcm: float
    epsilon_lm: float
    minimum: np.ndarray = None
    maximum: np.ndarray = None


class _ChunkSummary(NamedTuple):
    """One chunk's part of a :class:`_GroupSummary`.

    first_members : tuple of ((int, float) or None)
        For the tcm and the lm group: the row (in the whole input) of the chunk's first
        member and the group's privacy level; None without members.
    """

    n_tcm: int
    n_lm: int
    first_members: tuple
    minimum: np.ndarray
    maximum: np.ndarray


def _finite_values(X_block):
    """One chunk's values as floats; NaN or infinity raise, naming the row."""
    values = check_array(X_block, dtype=np.float64, ensure_all_finite=False,
                         ensure_min_samples=0, input_name="X")
    not_finite = ~np.isfinite(values)
    if not_finite.any():
        row, column = np.argwhere(not_finite)[0]
        raise ValueError(
            "X must hold finite numbers (no NaN or infinity); got "
            f"{values[row, column].item()!r} at row {row}, column {column}"
        )
    return values


def _summarise_chunk(X_block, trust_block, epsilon_block, *, offset, rng, default_epsilon,
                     estimator_name="HybridKMeans", check_values=_finite_values):
    """Validate one chunk of a Dask input and summarise it (the first reduction of a fit).

    ``check_values`` validates the chunk's rows of ``X`` and returns them as an array.
    Errors name the row in the whole input. Returns the group sizes, each group's one
    privacy level with the row of its first member (for the merge), and the chunk's
    range.
    """
    with renumbered_errors(lambda row: offset + row):
        values = check_values(X_block)
        n_rows = values.shape[0]
        is_tcm = check_trust_group(trust_block, n_rows)
        if epsilon_block is None:
            user_epsilon = default_epsilon
        else:
            user_epsilon = check_epsilon(epsilon_block, n_rows)
        levels = check_group_epsilons(user_epsilon, is_tcm, estimator_name)
    first_members = []
    for level, members in zip(levels, (is_tcm, ~is_tcm)):
        rows = np.flatnonzero(members)[:1]
        first_members.append((offset + int(rows[0]), level) if rows.size else None)
    n_tcm = int(np.count_nonzero(is_tcm))
    return _ChunkSummary(
        n_tcm, n_rows - n_tcm, tuple(first_members),
        values.min(axis=0) if n_rows else None, values.max(axis=0) if n_rows else None,
    )


def _merge_chunk_summaries(summaries, estimator_name="HybridKMeans"):
    """The curator's :class:`_GroupSummary` from the chunks' summaries.

    Each group's level must be the same in every chunk: the levels of each chunk's first
    member of each group go through :func:`check_group_epsilons` again, whose error then
    names that member's row.
    """
    first_members = [
        (*member, group == 0)
        for summary in summaries
        for group, member in enumerate(summary.first_members)
        if member is not None
    ]
    rows, levels, is_tcm = (np.array(column) for column in zip(*first_members))
    with renumbered_errors(lambda index: int(rows[index])):
        epsilon_tcm, epsilon_lm = check_group_epsilons(levels, is_tcm, estimator_name)
    non_empty = [summary for summary in summaries if summary.minimum is not None]
    return _GroupSummary(
        n_tcm=sum(summary.n_tcm for summary in summaries),
        n_lm=sum(summary.n_lm for summary in summaries),
        epsilon_tcm=epsilon_tcm,
        epsilon_lm=epsilon_lm,
        minimum=np.min([summary.minimum for summary in non_empty], axis=0),
        maximum=np.max([summary.maximum for summary in non_empty], axis=0),
    )


@dataclass(frozen=True)
class _FitPlan:
    """What the curator fixes before the first iteration; public, sent to every chunk.

    Attributes
    ----------
    lower, upper : ndarray of shape (n_features,)
    central : LaplaceMechanism or None
        The tcm release of each iteration; None when no one runs the central algorithm.
    local_groups : tuple of bool
        Whether tcm users and whether lm users run the local algorithm.
    release_epsilon : ndarray of shape (n_levels,) or None
    report_variance : ndarray of shape (n_levels, n_features) or None
        Each local privacy level's budget per release and report noise variance; None
        when no one runs the local algorithm.
    group_levels : tuple of int
        The index of the tcm group's and of the lm group's level in ``release_epsilon``.
    """

    lower: np.ndarray
    upper: np.ndarray
    central: LaplaceMechanism = None
    local_groups: tuple = (False, False)
    release_epsilon: np.ndarray = None
    report_variance: np.ndarray = None
    group_levels: tuple = (0, 0)

    @property
    def midpoint(self):
        return (self.lower + self.upper) / 2.0

    @property
    def ranges(self):
        return self.upper - self.lower

    @property
    def local_noise(self):
        """The lm report's randomizer: Laplace noise on values clipped to the bounds."""
        return {"mechanism": "laplace", "delta": 0.0, "lower": self.lower, "upper": self.upper}

    def release_central(self, statistics, rng):
        return _release_central(statistics, self.lower, self.upper, self.central, rng)

    def demix_local(self, statistics):
        return _demix_local(
            statistics, self.midpoint, self.ranges, self.release_epsilon, self.report_variance
        )


class _ChunkClustering:
    """One chunk of users as Algorithm 1 sees them: who runs which algorithm, and the reports.

    The tcm users' clipped values go to the curator (:class:`_CentralClustering`); the
    local users' values stay on their devices, which send their one Laplace-noised
    report, drawn here from ``report_rng`` (:class:`_LocalClustering`).
    :meth:`statistics` gives one iteration's statistics of the chunk.

    Parameters
    ----------
    values : ndarray of shape (n_users, n_features)
        Clipped to the bounds.
    is_tcm : ndarray of bool, shape (n_users,)
    plan : _FitPlan
    report_rng : numpy.random.Generator or None
        The chunk's devices' randomness for their reports (None without local users).
    """

    def __init__(self, values, is_tcm, plan, report_rng):
        self.central = None
        if plan.central is not None:
            self.central = _CentralClustering(
                values if is_tcm.all() else masked_rows(values, is_tcm), plan.lower, plan.upper,
                plan.central,
            )
        self.local = None
        if plan.release_epsilon is None:
            return
        local_rows = np.where(is_tcm, *plan.local_groups)
        local_values = values if local_rows.all() else masked_rows(values, local_rows)
        level = None
        if plan.release_epsilon.size > 1:
            level = np.where(is_tcm[local_rows], *plan.group_levels)
        privatize = partial(privatize_locally, rng=report_rng, **plan.local_noise)
        if level is None:
            reports = local_values.copy()
            if local_values.shape[0]:
                reports = privatize(local_values, epsilon=plan.release_epsilon[0])
        else:
            reports = np.empty_like(local_values)
            for index, step in enumerate(plan.release_epsilon):
                members = level == index
                if members.any():
                    reports[members] = privatize(local_values[members], epsilon=step)
        self.local = _LocalClustering(
            local_values, reports, plan.midpoint, plan.ranges, plan.release_epsilon,
            plan.report_variance, level,
        )

    def statistics(self, centres, response_rng):
        """(:class:`_CentralStatistics` or None, :class:`_LocalStatistics` or None)."""
        central = self.central.statistics(centres) if self.central is not None else None
        local = self.local.statistics(centres, response_rng) if self.local is not None else None
        return central, local


def _chunk_statistics(X_block, trust_block, *, offset, rng, plan, centres):
    """One iteration's statistics of one chunk of a Dask input (validated by the first pass).

    ``rng`` is the chunk's pair (report generator, this iteration's response generator).
    The lm users' reports are sent once: each iteration re-creates the chunk's reports
    from a copy of the same report generator, so every iteration sees bit-identical
    reports (one release at ``epsilon / (tau + 1)``, as in memory). Re-drawing them costs
    time, but keeps the fit out of core, where persisting the reports would hold a copy
    of the local users' data in the cluster's memory.
    """
    report_rng, response_rng = rng if rng is not None else (None, None)
    values = clip_to_bounds(np.asarray(X_block, dtype=np.float64), plan.lower, plan.upper)
    is_tcm = check_trust_group(trust_block, values.shape[0])
    chunk = _ChunkClustering(values, is_tcm, plan, copy.deepcopy(report_rng))
    return chunk.statistics(centres, response_rng)


class HybridKMeans(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ValidatedParamsMixin,
                   BaseEstimator):
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
      centred sum, of scale ``b_T = (m d + 2) tau / epsilon``: ``epsilon / tau`` each.
      Algorithm 1 writes ``(m d + 1) tau / epsilon``, the sensitivity when a user is
      added or removed; skhybrid's neighbours replace a user, which changes two counts
      (see :func:`central_iteration_sensitivity`).
    - an lm user sends one report with Laplace noise of scale
      ``b_L = m d (tau + 1) / epsilon`` (``epsilon / (tau + 1)``) and ``tau`` randomized
      responses at ``epsilon / (tau + 1)`` each.

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
        random_state=None,
        ledger=None,
    ):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.n_iter = n_iter
        self.strategy = strategy
        self.bounds = bounds
        self.init = init
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
        check_fit_metadata(self, trust_group, epsilon, hybrid=self.strategy == "hybrid",
                           stacklevel=4)
        check_user_id(self, user_id)
        in_dask = is_dask_collection(X)
        if in_dask:
            users = self._summarise_dask_input(X, trust_group, epsilon)
            observed_range = np.vstack([users.minimum, users.maximum])
        else:
            X, is_tcm, user_epsilon = validate_fit_input(self, X, trust_group, epsilon)
            n_tcm = int(np.count_nonzero(is_tcm))
            users = _GroupSummary(
                n_tcm, X.shape[0] - n_tcm,
                *check_group_epsilons(user_epsilon, is_tcm, "HybridKMeans"),
            )
            observed_range = X
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
            chunk = _ChunkClustering(clip_to_bounds(X, lower, upper), is_tcm, plan, rngs[0])

            def statistics(centres, iteration):
                return chunk.statistics(centres, rngs[1 + iteration])

        weight = np.full(centres.shape, np.nan)
        for iteration in range(self.n_iter):
            central, local = statistics(centres, iteration)
            tcm = plan.release_central(central, rng) if central is not None else None
            lm = plan.demix_local(local) if local is not None else None
            centres, weight = _merge_cluster_means(tcm, lm, centres, lower, upper)

        self.cluster_centers_ = centres
        self.n_iter_ = self.n_iter
        self.weight_ = weight
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
        return nearest_centre(X, self.cluster_centers_)

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
        return euclidean_distances(X, self.cluster_centers_)

    def score(self, X, y=None):
        """Minus the within-cluster sum of squares of ``X`` per sample.

        Each row counts in the cluster of its nearest private centre; see
        :func:`within_cluster_sum_of_squares`.

        For simulations only: with real data the score is not private (it reads ``X``
        exactly) and no ledger charges it, so selecting a model by it publishes a
        non-private choice. To select on real data use
        :class:`~skhybrid.model_selection.PrivateGridSearchCV`
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

    def _check_groups(self, n_tcm, n_lm, trust_given):
        if self.strategy == "tcm_only" and n_tcm == 0:
            raise ValueError("strategy='tcm_only' needs at least one tcm user; got none")
        if self.strategy == "hybrid" and trust_given and min(n_tcm, n_lm) == 0:
            present = "tcm" if n_tcm else "lm"
            warnings.warn(
                f"strategy='hybrid' merges two groups but every user is {present}; the "
                f"centres come from the {present} algorithm alone",
                EmptyGroupWarning,
                stacklevel=4,
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
            partial(_summarise_chunk, default_epsilon=default_epsilon),
            X, trust_group=trust_group, epsilon=epsilon,
        )
        if sum(summary.n_tcm + summary.n_lm for summary in summaries) == 0:
            raise ValueError("X has 0 samples; HybridKMeans needs at least one")
        return _merge_chunk_summaries(summaries)

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
