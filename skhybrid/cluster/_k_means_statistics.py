"""The two trust groups' clustering statistics of HybridKMeans, in memory and per chunk.

tcm users: the curator assigns their clipped values to the nearest centre and releases
each cluster's count and centred sum with Laplace noise (:class:`_CentralClustering`).
lm users: one Laplace-noised report each, and in each iteration their nearest centre
through randomized response; the curator de-mixes the reports by reported cluster
(:class:`_LocalClustering`). :func:`_merge_cluster_means` combines the two groups'
means with the PWH weight; :class:`_ChunkClustering` and :func:`_chunk_statistics` run
one iteration on one chunk of a Dask input.
"""

import copy
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import numpy as np

from .._group_estimates import privatized_rows
from ..mechanisms import LaplaceMechanism
from ..mechanisms._families import LAPLACE
from ..mechanisms._randomized_response import (
    randomized_response_drawn_probabilities,
    randomized_response_widths,
    response_bits,
    response_draws,
)
from ..theory._hybrid import pwh_weight_unchecked
from ..utils._sums import FIXED_POINT_BITS, _bounds_and_scale, centred_sums
from ..utils._validation import (
    check_trust_group,
    masked_rows,
)
from ._k_means_budget import central_sum_weights
from ._k_means_lloyd import chunk_local_offsets, lloyd_pass

#: The lm users' fixed reports are kept in float32: each iteration reads them all, and
#: at 1e6 x 50 the pass is bound by memory. Already private, they may be rounded
#: (post-processing): a report's rounding error, at most 2**-24 of its magnitude, is
#: negligible beside its Laplace noise. Their sums are float64.
REPORT_DTYPE = np.float32


def centred_code_sums(code_sums, counts):
    """Each cluster's exact sum of its members' values centred on the middle of the box.

    In fixed-point units (:func:`~skhybrid.utils._sums.fixed_point_sums`): a code is in
    ``[0, 2**B]``, so ``code - 2**(B - 1)`` is the value minus the middle of the box,
    exact in integers (see :func:`central_iteration_sensitivity`). ``code_sums``
    (n_clusters, n_features) are :func:`~skhybrid.cluster._k_means_lloyd.lloyd_pass`'s,
    ``counts`` (n_clusters,) the clusters' sizes.
    """
    return code_sums - (counts[:, np.newaxis].astype(np.int64) << (FIXED_POINT_BITS - 1))


@dataclass(frozen=True)
class _ClusterMeans:
    """One trust group's private cluster means in one iteration (see :func:`_cluster_means`).

    ``means`` and ``noise_variance`` (n_clusters, n_features) have NaN rows where a
    cluster has no estimate; ``sizes`` are the private sizes; ``present`` the clusters
    with an estimate. The variance takes the data's part at its worst for the bounds.
    """

    means: np.ndarray
    sizes: np.ndarray
    present: np.ndarray
    noise_variance: np.ndarray


def _cluster_means(midpoint, centred_sums, sizes, sum_variance):
    """:class:`_ClusterMeans` from centred sums, private sizes and the sums' noise
    variance (Algorithm 1, lines 10 and 12): ``midpoint + centred_sums / size`` and
    ``sum_variance / size**2`` for a cluster of private size at least 1 (present); NaN
    rows for the others (a non-empty cluster has a member; dividing by less would
    amplify the noise without bound)."""
    present = sizes >= 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        means = midpoint + centred_sums / sizes[:, np.newaxis]
        variance = sum_variance / (sizes * sizes)[:, np.newaxis]
    means[~present] = np.nan
    variance[~present] = np.nan
    return _ClusterMeans(means, sizes, present, variance)


class _CentralStatistics(NamedTuple):
    """One chunk's tcm counts and :func:`centred_code_sums`: exact int64, so chunks add up."""

    counts: np.ndarray
    sums: np.ndarray


class _LocalStatistics(NamedTuple):
    """One chunk's lm reports per privacy level: ``counts`` and centred ``sums`` per
    reported cluster, ``n_users`` and ``report_totals`` (all clusters)."""

    counts: np.ndarray
    sums: np.ndarray
    n_users: np.ndarray
    report_totals: np.ndarray


def _add_statistics(parts):
    """The statistics of all chunks: the field-wise sums of the chunks' statistics."""
    return type(parts[0])(*(sum(field) for field in zip(*parts)))


def _release_central(statistics, lower, upper, mechanism, rng):
    """The curator's tcm release of one iteration (Algorithm 1, lines 9-10): noise drawn once.

    One noisy vector: the counts, then the centred sums (converted from exact fixed
    point, a rounding the sensitivity covers) divided by each feature's noise weight
    (:func:`central_sum_weights`). Each cluster's :class:`_ClusterMeans` entry is the
    middle of the box plus its noisy sum (times the weight) over its noisy count. A
    mean's error is (Y_sum - mu Y_count) / count with |mu| <= half the range: both noises
    count in its variance.
    """
    counts, code_sums = statistics
    ranges = upper - lower
    weights = central_sum_weights(ranges)
    sums = centred_sums(code_sums, lower, upper, n_users=int(counts.max(initial=0)))
    sums = sums / weights  # exact where a weight is 1
    released = mechanism.randomise(np.concatenate([counts.astype(np.float64), sums.ravel()]),
                                   random_state=rng)
    k = counts.shape[0]
    sums = released[k:].reshape(k, weights.shape[0]) * weights
    variance = mechanism.variance(released.size) * (weights**2 + (ranges / 2.0) ** 2)
    return _cluster_means(lower + ranges / 2.0, sums, released[:k],
                          np.broadcast_to(variance, sums.shape))


def _demix_local(statistics, midpoint, ranges, release_epsilon, report_variance):
    """The curator's lm cluster means of one iteration, de-mixed from the randomized response.

    A report lands in its true cluster with probability ``keep`` and in each other one
    with probability ``other`` (exactly those the responses are drawn with:
    :func:`~skhybrid.mechanisms._randomized_response.randomized_response_drawn_probabilities`),
    so (per privacy level)

        E[reported count_j] = other n + (keep - other) N_j,
        E[reported sum_j] = other T + (keep - other) S_j,

    with ``T`` the sum of all reports; solving gives unbiased sizes ``N_j`` and sums
    ``S_j`` (Algorithm 1's plain average pulls the centres towards the overall mean).
    Post-processing: no noise is drawn here.
    """
    counts, sums, n_users, report_totals = statistics
    k = counts.shape[1]
    keep, other = randomized_response_drawn_probabilities(release_epsilon, k,
                                                          response_bits(release_epsilon, k))
    gain = keep - other
    # The mean's error is (S_j - mu_j N_j) / N_j = sum_i (x_i + Y_i - mu_j) w_ij / N_j
    # over all users, with w_ij = (1[report_i = j] - other) / gain, of second moment
    # ``outside`` cluster j and ``inside_moment`` inside it; E[(x + Y - mu)^2] is the
    # report's noise variance plus at most range^2 (``second_moment``).
    outside = other * (1.0 - other) / gain**2
    inside_moment = (keep * (1.0 - other) ** 2 + (1.0 - keep) * other**2) / gain**2
    second_moment = report_variance + ranges**2
    # Per level l and cluster j: N_j = (count_j - other n) / gain and
    # S_j = (sum_j - other T) / gain, summed over the levels in their order.
    sizes = centred = sum_variance = 0.0
    for level in range(counts.shape[0]):
        users, share, scale = n_users[level], other[level], gain[level]
        size = (counts[level] - share * users) / scale
        inside = np.minimum(np.maximum(size, 0.0), users)
        spread = (users - inside) * outside[level] + inside * inside_moment[level]
        sizes = sizes + size
        centred = centred + (sums[level] - share * report_totals[level]) / scale
        sum_variance = sum_variance + spread[:, np.newaxis] * second_moment[level]
    return _cluster_means(midpoint, centred, sizes, sum_variance)


class _CentralClustering:
    """The tcm side of an iteration on one chunk: the curator's counts and sums, then noise.

    The curator assigns the clipped ``values`` (never copied) to their nearest centre
    (Algorithm 1, line 6): :meth:`statistics`. The noise is added once to the totals of
    all chunks by :func:`_release_central`.
    """

    def __init__(self, values, lower, upper, n_threads=1):
        self._values = np.ascontiguousarray(values, dtype=np.float64)
        self._lower, self._upper, self._scale = _bounds_and_scale(lower, upper,
                                                                  self._values.shape[1])
        # The nearest-centre search runs on values near zero (better conditioned); it
        # only picks each user's cluster, from their own value.
        self._midpoint = (lower + upper) / 2.0
        self._n_threads = n_threads

    def statistics(self, centres):
        """Each cluster's count and centred sum: :class:`_CentralStatistics`."""
        # The exact code sums per cluster in one pass over the users, the codes computed
        # on the way (no copy of the users' values is kept, no label array written).
        _, counts, code_sums, _, _ = lloyd_pass(
            self._values, centres - self._midpoint, origin=self._midpoint,
            lower=self._lower, upper=self._upper, scale=self._scale, code_sums=True,
            n_threads=self._n_threads)
        return _CentralStatistics(counts, centred_code_sums(code_sums, counts))


class _LocalClustering:
    """The lm side of an iteration on one chunk: reports sent once, then a randomized response.

    ``values`` (clipped to ``bounds`` on the way; None: already clipped) stay on the
    devices: each sends its nearest centre through randomized response (Algorithm 1,
    line 7) in :meth:`statistics`. The curator collects the Laplace-noised reports
    (line 4; ``centred_reports``, minus ``midpoint``, in :data:`REPORT_DTYPE`) by
    reported cluster (lines 11-12) and de-mixes the totals of all chunks
    (:func:`_demix_local`). ``level`` is each user's index into ``release_epsilon``
    (None: one level); ``rows`` which rows of ``values`` are these users (None: all).
    """

    def __init__(self, values, centred_reports, midpoint, release_epsilon, level, *,
                 rows=None, bounds=None, n_threads=1):
        self._values = np.ascontiguousarray(values, dtype=np.float64)
        n_rows, n_features = self._values.shape
        # Every row local: a mask all True (one byte a row) keeps one code path.
        self._rows = np.ones(n_rows, bool) if rows is None else np.asarray(rows, bool)
        self._first_local = chunk_local_offsets(self._rows, n_rows)
        # (No bounds: the values are clipped already, and no code is summed.)
        self._grid = ((-np.inf, np.inf, 0.0) if bounds is None
                      else _bounds_and_scale(*bounds, n_features))
        self._midpoint = midpoint
        self._reports = np.ascontiguousarray(centred_reports, dtype=REPORT_DTYPE)
        self._release_epsilon = release_epsilon
        self._level = None if level is None else np.asarray(level, dtype=np.intp)
        self._n_threads = n_threads
        n_levels = release_epsilon.shape[0]
        level = np.zeros(self._reports.shape[0], np.intp) if level is None else self._level
        self._n_users = np.bincount(level, minlength=n_levels).astype(np.float64)
        self._report_totals = np.stack([
            self._reports[level == index].sum(axis=0, dtype=np.float64)
            for index in range(n_levels)])

    def statistics(self, centres, rng, *, central=False):
        """The reports by privacy level and reported cluster: :class:`_LocalStatistics`.

        With ``central`` (the rows not local are the tcm group's users), one pass gives
        both groups' statistics: (:class:`_CentralStatistics`, :class:`_LocalStatistics`).
        """
        k, n_features = centres.shape
        n_levels = self._release_epsilon.shape[0]
        # Each device's nearest centre from its clipped value, sent through randomized
        # response (Algorithm 1, line 7), and its report added to the reported cluster's
        # sums, in one pass over the users (with the tcm users' code sums for ``central``).
        # The draws of all the pass's local users at once, before it, in row order.
        n_local = self._reports.shape[0]
        if n_local == 0 and not central:
            return _LocalStatistics(np.zeros((n_levels, k)), np.zeros((n_levels, k, n_features)),
                                    self._n_users, self._report_totals)
        bits = response_bits(self._release_epsilon, k)
        draws = response_draws(rng, n_local, bits) if k > 1 and n_local else None
        _, counts, code_sums, reported, sums = lloyd_pass(
            self._values, centres - self._midpoint, origin=self._midpoint,
            lower=self._grid[0], upper=self._grid[1], scale=self._grid[2],
            code_sums=central, is_local=self._rows, first_local=self._first_local,
            level=self._level, draws=draws,
            widths=randomized_response_widths(self._release_epsilon, k, bits),
            reports=self._reports, n_levels=n_levels, n_threads=self._n_threads)
        statistics = _LocalStatistics(reported.reshape(n_levels, k),
                                      sums.reshape(n_levels, k, n_features), self._n_users,
                                      self._report_totals)
        if not central:
            return statistics
        return _CentralStatistics(counts, centred_code_sums(code_sums, counts)), statistics



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
    shape = previous.shape
    has_tcm = np.zeros(shape, bool) if tcm is None else np.broadcast_to(
        tcm.present[:, np.newaxis], shape)
    has_lm = np.zeros(shape, bool) if lm is None else np.broadcast_to(
        lm.present[:, np.newaxis], shape)
    weight = np.where(has_tcm, 1.0, np.where(has_lm, 0.0, np.nan))
    value = previous
    if lm is not None:
        value = np.where(has_lm, lm.means, value)
    if tcm is not None:
        value = np.where(has_tcm, tcm.means, value)
    both = has_tcm & has_lm
    if both.any():
        # Sizes of at least 1 in both groups and finite noise variances: in the range
        # that pwh_weight checks.
        n_tcm, n_lm = tcm.sizes[:, np.newaxis], lm.sizes[:, np.newaxis]
        n = n_tcm + n_lm
        with np.errstate(divide="ignore", invalid="ignore"):
            share = pwh_weight_unchecked(n, n_tcm / n, tcm.noise_variance,
                                         n_lm * lm.noise_variance)
            merged = share * tcm.means + (1.0 - share) * lm.means
        weight = np.where(both, share, weight)
        value = np.where(both, merged, value)
    # Clipped to the bounds (a comparison, not np.clip, as the centres were before).
    centres = np.where(value < lower, lower, np.where(value > upper, upper, value))
    return centres, weight


def centre_noise_variance(tcm, lm, weight):
    """The variance of the privacy noise in each merged centre coordinate.

    ``w**2 v_T + (1 - w)**2 v_L`` for the merge ``w m_T + (1 - w) m_L`` of two means
    with independent noise of variances ``v_T`` and ``v_L`` (each from the group's
    released cluster sizes: post-processing); one group's variance where only it has an
    estimate; NaN where neither has (the previous centre was kept).
    """
    parts = []
    for group, share in ((tcm, weight), (lm, 1.0 - weight)):
        if group is None:
            parts.append(np.zeros_like(weight))
        else:
            present = np.broadcast_to(group.present[:, np.newaxis], weight.shape)
            parts.append(np.where(present & (share > 0), share * share * group.noise_variance,
                                  0.0))
    return np.where(np.isnan(weight), np.nan, parts[0] + parts[1])


def _next_centres(plan, central, local, previous, rng):
    """One iteration's new centres, their tcm weights and the variance of their noise
    (:func:`centre_noise_variance`) from its statistics (either may be None):
    :func:`_release_central`, :func:`_demix_local` and :func:`_merge_cluster_means`,
    the release's noise drawn from ``rng``."""
    tcm = lm = None
    if central is not None:
        tcm = _release_central(central, plan.lower, plan.upper, plan.central, rng)
    if local is not None:
        lm = _demix_local(local, plan.midpoint, plan.ranges, plan.release_epsilon,
                          plan.report_variance)
    centres, weight = _merge_cluster_means(tcm, lm, previous, plan.lower, plan.upper)
    return centres, weight, centre_noise_variance(tcm, lm, weight)


@dataclass(frozen=True)
class _FitPlan:
    """What the curator fixes before the first iteration; public, sent to every chunk.

    ``central``: the tcm release's mechanism (None: no central algorithm);
    ``local_groups``: whether tcm and whether lm users run the local algorithm;
    ``release_epsilon`` (n_levels,) and ``report_variance`` (n_levels, n_features): each
    local level's budget per release and report noise (None: no local algorithm);
    ``group_levels``: the tcm and lm groups' indices into ``release_epsilon``.
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
        return {"mechanism": LAPLACE, "delta": 0.0, "lower": self.lower, "upper": self.upper}


class _ChunkClustering:
    """One chunk of users as Algorithm 1 sees them: who runs which algorithm, and the reports.

    The tcm users' clipped values go to the curator (:class:`_CentralClustering`); the
    local users' devices send one Laplace-noised report each, drawn from ``report_rng``
    (:class:`_LocalClustering`). :meth:`statistics` gives one iteration's statistics;
    for the hybrid strategy both groups' from one pass over the rows.
    """

    def __init__(self, values, is_tcm, plan, report_rng, n_threads=1):
        # Read at every iteration by the compiled pass, which takes rows contiguous.
        values = np.ascontiguousarray(values, dtype=np.float64)
        self.central = self.local = None
        local_rows = None if plan.release_epsilon is None else np.where(is_tcm, *plan.local_groups)
        # Hybrid: the tcm users are the rows not local, and one pass over the chunk gives
        # both groups' statistics (no copy of the tcm users' rows).
        self._fused = plan.central is not None and plan.local_groups == (False, True)
        if plan.central is not None and not self._fused:
            self.central = _CentralClustering(
                values if is_tcm.all() else masked_rows(values, is_tcm), plan.lower, plan.upper,
                n_threads,
            )
        if local_rows is None:
            return
        level = None
        # The reports are only ever added up centred on the middle of the box: each is
        # centred (in float64) and kept in float32 (REPORT_DTYPE: the pass reads them
        # at every iteration; the rounding is a post-processing of private values).
        privatize = partial(privatized_rows, values, rng=report_rng, centre=plan.midpoint,
                            dtype=REPORT_DTYPE, **plan.local_noise)
        if plan.release_epsilon.size == 1:
            reports = privatize(local_rows, epsilon=plan.release_epsilon[0])
        else:
            row_level = np.where(is_tcm, *plan.group_levels)
            level = row_level[local_rows]
            reports = np.empty((level.shape[0], values.shape[1]), dtype=REPORT_DTYPE)
            for index, step in enumerate(plan.release_epsilon):
                members = level == index
                if members.any():
                    reports[members] = privatize(local_rows & (row_level == index),
                                                 epsilon=step)
        # The users' true values stay the chunk's rows: no copy of them is kept.
        self.local = _LocalClustering(
            values, reports, plan.midpoint, plan.release_epsilon, level, rows=local_rows,
            bounds=(plan.lower, plan.upper), n_threads=n_threads,
        )

    def statistics(self, centres, response_rng):
        """(:class:`_CentralStatistics` or None, :class:`_LocalStatistics` or None)."""
        if self._fused:
            return self.local.statistics(centres, response_rng, central=True)
        central = self.central.statistics(centres) if self.central is not None else None
        local = (self.local.statistics(centres, response_rng)
                 if self.local is not None else None)
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
    values = np.asarray(X_block, dtype=np.float64)  # clipped on the way
    is_tcm = check_trust_group(trust_block, values.shape[0])
    chunk = _ChunkClustering(values, is_tcm, plan, copy.deepcopy(report_rng))
    return chunk.statistics(centres, response_rng)
