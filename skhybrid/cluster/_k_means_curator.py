"""The curator's arithmetic of a HybridKMeans iteration after its release, compiled (numba).

After the tcm release, an iteration's curator computes each group's cluster means from
its noisy (tcm) or randomized (lm) statistics and merges them with the PWH weight: some
40 operations on arrays of ``k x d`` values, which as numpy calls cost 40-60 us per
iteration against a pass of 300 us at 1e5 users (2 features, 3 clusters). Here each
step is one compiled function, called alone by the Python functions of
:mod:`skhybrid.cluster._k_means_statistics` (:func:`cluster_means` by
``_cluster_means``, ...) and inlined together by :func:`iteration_centres` for a fit:
one call per iteration. The float operations are those of the numpy code they replace,
in the same order (a fit's results did not change, bit for bit).

Imported where the fit runs (importing numba costs about 0.2 s).
"""

import types

import numba
import numpy as np

from ..theory._hybrid import pwh_weight_unchecked

_OPTIONS = {"cache": True, "boundscheck": False}


def _inline(function):
    """``function`` compiled to be inlined, with the Python functions it calls compiled
    alike: so that a formula stays in its one function (here, Def. 5.3's weight as
    :func:`~skhybrid.theory._hybrid.pwh_weight_unchecked` computes it). numba's cache
    of the kernels below is keyed on this file's source: a change to such a function
    must come with a change here."""
    names = dict(function.__globals__)
    for name in function.__code__.co_names:
        if isinstance(names.get(name), types.FunctionType):
            names[name] = _inline(names[name])
    return numba.njit(inline="always")(
        types.FunctionType(function.__code__, names, function.__name__))


_pwh_weight = _inline(pwh_weight_unchecked)


@numba.njit(inline="always", **_OPTIONS)
def cluster_means(midpoint, centred_sums, sizes, sum_variance, means, variance):
    """Each cluster's mean and its noise variance from its centred sum and private size
    (Algorithm 1, lines 10 and 12), into ``means`` and ``variance``.

    ``midpoint + centred_sums / size`` and ``sum_variance / size**2`` for a cluster of
    private size at least 1 (present); NaN rows for the others (a non-empty cluster has
    a member; dividing by less would amplify the noise without bound).
    """
    n_clusters, n_features = centred_sums.shape
    for cluster in range(n_clusters):
        size = sizes[cluster]
        for feature in range(n_features):
            if size >= 1.0:
                means[cluster, feature] = (midpoint[feature]
                                           + centred_sums[cluster, feature] / size)
                variance[cluster, feature] = sum_variance[cluster, feature] / (size * size)
            else:
                means[cluster, feature] = np.nan
                variance[cluster, feature] = np.nan


@numba.njit(inline="always", **_OPTIONS)
def central_means(midpoint, released, weights, central_variance, means, variance):
    """The tcm cluster means and their noise variance from the curator's release (see
    :func:`~skhybrid.cluster._k_means_statistics._release_central`): the noisy counts
    are the sizes, the noisy sums divided by each feature's noise weight are multiplied
    back by it (one feature: no weight), the sums' noise variance is
    ``central_variance`` per feature; then :func:`cluster_means`."""
    n_clusters, n_features = means.shape
    noisy = np.empty((n_clusters, n_features))
    sum_variance = np.empty((n_clusters, n_features))
    for cluster in range(n_clusters):
        for feature in range(n_features):
            value = released[n_clusters + cluster * n_features + feature]
            noisy[cluster, feature] = value * weights[feature] if n_features > 1 else value
            sum_variance[cluster, feature] = central_variance[feature]
    cluster_means(midpoint, noisy, released[:n_clusters], sum_variance, means, variance)


@numba.njit(inline="always", **_OPTIONS)
def demixed_sums(counts, sums, n_users, report_totals, other, gain, outside, inside_moment,
                 second_moment, sizes, centred, sum_variance):
    """The lm clusters' unbiased sizes and centred sums (Algorithm 1, lines 11-12, with
    the reports de-mixed from the randomized response) and the sums' noise variance (see
    :func:`~skhybrid.cluster._k_means_statistics._demix_local`), summed over the privacy
    levels in their order, into ``sizes``, ``centred`` and ``sum_variance``.

    Per level ``l`` and cluster ``j``: ``N_j = (count_j - other n) / gain`` and
    ``S_j = (sum_j - other T) / gain``; the variance of ``S_j - mu_j N_j`` is
    ``((n - N) outside + N inside) * second_moment`` with ``N`` clipped to ``[0, n]``.
    """
    n_levels, n_clusters = counts.shape
    n_features = sums.shape[2]
    for level in range(n_levels):
        users, share, scale = n_users[level], other[level, 0], gain[level, 0]
        for cluster in range(n_clusters):
            size = (counts[level, cluster] - share * users) / scale
            inside = min(max(size, 0.0), users)
            spread = (users - inside) * outside[level, 0] + inside * inside_moment[level, 0]
            sizes[cluster] = size if level == 0 else sizes[cluster] + size
            for feature in range(n_features):
                demixed = (sums[level, cluster, feature]
                           - share * report_totals[level, feature]) / scale
                part = spread * second_moment[level, feature]
                if level == 0:
                    centred[cluster, feature] = demixed
                    sum_variance[cluster, feature] = part
                else:
                    centred[cluster, feature] += demixed
                    sum_variance[cluster, feature] += part


@numba.njit(inline="always", **_OPTIONS)
def merged_centres(with_tcm, tcm_means, tcm_sizes, tcm_variance, with_lm, lm_means, lm_sizes,
                   lm_variance, previous, lower, upper, centres, weight):
    """Algorithm 1, lines 13-15: each cluster's PWH combination of the two groups' means
    (see :func:`~skhybrid.cluster._k_means_statistics._merge_cluster_means`), clipped to
    the bounds, into ``centres`` and ``weight``.

    A group without means (``with_tcm`` or ``with_lm`` false: its arrays are not read),
    or a cluster it has no mean for (size below 1), gives no estimate: a cluster with one
    group's takes it (weight 1 for tcm, 0 for lm); with neither, it keeps its previous
    centre (weight NaN).
    """
    n_clusters, n_features = previous.shape
    for cluster in range(n_clusters):
        has_tcm = with_tcm and tcm_sizes[cluster] >= 1.0
        has_lm = with_lm and lm_sizes[cluster] >= 1.0
        for feature in range(n_features):
            if has_tcm and has_lm:
                # Sizes of at least 1 in both groups and finite noise variances: in the
                # range that pwh_weight checks.
                n_tcm, n_lm = tcm_sizes[cluster], lm_sizes[cluster]
                n = n_tcm + n_lm
                share = _pwh_weight(n, n_tcm / n, tcm_variance[cluster, feature],
                                    n_lm * lm_variance[cluster, feature])
                value = (share * tcm_means[cluster, feature]
                         + (1.0 - share) * lm_means[cluster, feature])
            elif has_tcm:
                share, value = 1.0, tcm_means[cluster, feature]
            elif has_lm:
                share, value = 0.0, lm_means[cluster, feature]
            else:
                share, value = np.nan, previous[cluster, feature]
            low, high = lower[feature], upper[feature]
            centres[cluster, feature] = low if value < low else high if value > high else value
            weight[cluster, feature] = share


@numba.njit(**_OPTIONS)
def iteration_centres(lower, upper, central_midpoint, released, weights, central_variance,
                      midpoint, counts, sums, n_users, report_totals, other, gain, outside,
                      inside_moment, second_moment, previous, centres, weight):
    """An iteration's new centres and their tcm weights, into ``centres`` and ``weight``:
    the tcm cluster means from the release, the lm ones de-mixed, merged.

    Parameters
    ----------
    lower, upper : ndarray of shape (n_features,)
    central_midpoint : ndarray of shape (n_features,)
        The middle of the box as the tcm release computes it
        (:func:`~skhybrid.cluster._k_means_statistics._central_constants`).
    released : ndarray of shape (n_clusters * (1 + n_features),) or None
        The tcm release: the noisy counts, then the noisy centred sums divided by
        ``weights`` (row by row; see
        :func:`~skhybrid.cluster._k_means_statistics._release_central`). None: no tcm
        group.
    weights : ndarray of shape (n_features,)
        Each feature's noise weight (not applied to one feature).
    central_variance : ndarray of shape (n_features,)
        The noise variance of a tcm cluster's centred sum, per feature.
    midpoint : ndarray of shape (n_features,)
        The middle of the box as the lm statistics compute it (``_FitPlan.midpoint``).
    counts, sums, n_users, report_totals
        The lm statistics (:class:`~skhybrid.cluster._k_means_statistics._LocalStatistics`),
        or None for no lm group.
    other, gain, outside, inside_moment, second_moment
        Their :class:`~skhybrid.cluster._k_means_statistics._ResponseConstants`.
    previous : ndarray of shape (n_clusters, n_features)
    """
    n_clusters, n_features = previous.shape
    # Each group's means (a group absent: empty arrays, not read).
    with_tcm, with_lm = released is not None, counts is not None
    shape = (n_clusters if with_tcm else 0, n_features)
    tcm_sizes = released[:n_clusters] if released is not None else np.empty(0)
    tcm_means, tcm_variance = np.empty(shape), np.empty(shape)
    if released is not None:
        central_means(central_midpoint, released, weights, central_variance, tcm_means,
                      tcm_variance)
    shape = (n_clusters if with_lm else 0, n_features)
    lm_sizes = np.empty(shape[0])
    lm_means, lm_variance = np.empty(shape), np.empty(shape)
    if counts is not None:
        centred = np.empty(shape)
        sum_variance = np.empty(shape)
        demixed_sums(counts, sums, n_users, report_totals, other, gain, outside,
                     inside_moment, second_moment, lm_sizes, centred, sum_variance)
        cluster_means(midpoint, centred, lm_sizes, sum_variance, lm_means, lm_variance)
    merged_centres(with_tcm, tcm_means, tcm_sizes, tcm_variance, with_lm, lm_means, lm_sizes,
                   lm_variance, previous, lower, upper, centres, weight)
