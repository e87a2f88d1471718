"""Lloyd's iteration kernels of HybridKMeans: nearest centres, cluster sums, the objective.

Exact and deterministic computations on the data, before any noise (the noise is
drawn in :mod:`skhybrid.cluster._k_means_statistics`).
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..utils._kernels import grouped_row_sums, nearest_centre_sums
from ..utils._sums import FIXED_POINT_BITS, _bounds_and_scale, fixed_point_sums, per_feature
from ..utils._threads import available_cores, in_parts, single_threaded_blas

#: Rows per task of the nearest-centre search, at most and at least (tasks balance the
#: load over the threads).
_CHUNK_ROWS = 32768
_MIN_TASK_ROWS = 2048
#: Below this many input values per core, a thread costs more than it saves.
_ELEMENTS_PER_WORKER = 2**20


def nearest_centre(X, centres, *, origin=None, bounds=None, code_sums=False):
    """Index of each row's nearest centre in squared Euclidean distance (first on ties).

    ``argmin_k ||x - c_k||^2 = argmin_k (||c_k||^2 - 2 x . c_k)``, computed by one
    compiled pass (:func:`~skhybrid.utils._kernels.nearest_centre_sums`) over blocks of
    rows that stay in cache: a matrix product for the block's distances, then each
    row's first minimum, as scikit-learn's Lloyd iterations do. Large inputs are spread
    over the available cores (the pass releases the GIL).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    centres : ndarray of shape (n_clusters, n_features)
        In the coordinates of ``X - origin``.
    origin : ndarray of shape (n_features,), default=None
        Subtracted from each block of rows before its distances (the search is better
        conditioned near zero), without a shifted copy of ``X``.
    bounds : tuple (lower, upper), default=None
        Each row is clipped to the bounds on the way (without a clipped copy of ``X``).
    code_sums : bool, default=False
        Also count each centre's rows and add their fixed-point codes on the grid of
        ``bounds`` (:func:`~skhybrid.utils._kernels.fixed_point_code` of each value,
        never stored) to its exact sums, in int64, in the same pass.

    Returns
    -------
    labels : ndarray of shape (n_samples,), dtype=intp
    counts : ndarray of int64 of shape (n_clusters,)
        Only with ``code_sums``: ``np.bincount(labels, minlength=n_clusters)``.
    sums : ndarray of int64 of shape (n_clusters, n_features)
        Only with ``code_sums``.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n_samples, n_features = X.shape
    centres = np.asarray(centres, dtype=np.float64)
    scaled = np.ascontiguousarray(-2.0 * centres.T)
    norms = np.einsum("kd,kd->k", centres, centres)
    origin = per_feature(0.0 if origin is None else origin, n_features)
    if bounds is None:
        if code_sums:
            raise ValueError("code_sums needs the bounds of the fixed-point grid")
        lower, upper = per_feature(-np.inf, n_features), per_feature(np.inf, n_features)
        scale = np.zeros(n_features)
    else:
        lower, upper, scale = _bounds_and_scale(*bounds, n_features)
    labels = np.empty(n_samples, dtype=np.intp)

    def search(starts):
        counts = np.zeros(centres.shape[0], dtype=np.int64)
        sums = None
        if code_sums:
            sums = np.zeros((centres.shape[0], n_features), dtype=np.int64)
        for start in starts:
            nearest_centre_sums(X, start, min(start + step, n_samples), origin, scaled,
                                norms, lower, upper, scale, labels, counts, sums)
        return counts, sums

    workers = min(available_cores(), X.size // _ELEMENTS_PER_WORKER)
    # Several tasks per worker balance the load, when another process holds a core too.
    step = min(_CHUNK_ROWS, max(_MIN_TASK_ROWS, -(-n_samples // (8 * max(workers, 1)))))
    starts = range(0, n_samples, step)
    # One BLAS thread per block: for products this small BLAS threads cost more than
    # they save, and on busy cores their spin-waiting can slow a product a hundredfold.
    with single_threaded_blas():
        if workers > 1:
            with ThreadPoolExecutor(workers) as pool:
                parts = list(pool.map(search, [starts[i : i + 1] for i in range(len(starts))]))
        else:
            parts = [search(starts)]
    if not code_sums:
        return labels
    # Integer additions: the totals are exact whatever the order of the parts.
    return (labels, np.sum([counts for counts, _ in parts], axis=0, dtype=np.int64),
            np.sum([sums for _, sums in parts], axis=0, dtype=np.int64))


def cluster_sums(values, origin, labels, n_clusters):
    """Each cluster's size and the sum of its members' values minus ``origin``.

    For the lm users' reports (already private), in one compiled pass over the rows
    (:func:`~skhybrid.utils._kernels.grouped_row_sums`).

    Parameters
    ----------
    values : ndarray of shape (n_samples, n_features)
    origin : ndarray of shape (n_features,)
    labels : ndarray of int of shape (n_samples,)
        In ``[0, n_clusters)``.
    n_clusters : int

    Returns
    -------
    counts : ndarray of shape (n_clusters,), float
    sums : ndarray of shape (n_clusters, n_features)
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    n_features = values.shape[1]
    if values.shape[0] == 0:
        return np.zeros(n_clusters), np.zeros((n_clusters, n_features))
    labels = np.asarray(labels)
    if labels.min() < 0 or labels.max() >= n_clusters:
        raise ValueError(f"labels must be in [0, {n_clusters}); got {labels.min()} to "
                         f"{labels.max()}")
    origin = per_feature(origin, n_features)

    def part(start, stop):
        counts, sums = np.zeros(n_clusters), np.zeros((n_clusters, n_features))
        grouped_row_sums(values[start:stop], origin, labels[start:stop], counts, sums)
        return counts, sums

    # The pass releases the GIL: large inputs are summed in parts on threads.
    parts = in_parts(part, values.shape[0], min_rows=max(1, _ELEMENTS_PER_WORKER // n_features))
    return sum(counts for counts, _ in parts), sum(sums for _, sums in parts)


def centred_code_sums(values, lower, upper, labels, counts, *, code_sums=None):
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
    code_sums : ndarray of int64 of shape (n_clusters, n_features), default=None
        The codes' exact sums per cluster when already computed (by the fused pass of
        :func:`nearest_centre`); only the centring is left to do.

    Returns
    -------
    sums : ndarray of int64 of shape (n_clusters, n_features)
    """
    if code_sums is not None:
        sums = code_sums.copy()
    else:
        sums = fixed_point_sums(values, lower, upper, labels=labels, n_groups=counts.shape[0])
    sums -= counts[:, np.newaxis].astype(np.int64) << (FIXED_POINT_BITS - 1)
    return sums


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
