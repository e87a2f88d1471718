"""Lloyd's iteration kernels of HybridKMeans: nearest centres, cluster sums, the objective.

Exact and deterministic computations on the data, before any noise (the noise is
drawn in :mod:`skhybrid.cluster._k_means_statistics`).
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..utils._kernels import first_minimum, first_minimum_code_sums
from ..utils._sums import FIXED_POINT_BITS, fixed_point_sums, grouped_code_sums
from ..utils._threads import available_cores, single_threaded_blas

#: Rows per block of the nearest-centre search. Each block runs tens of numpy calls;
#: on blocks much smaller than this, the threads spend more time passing the GIL
#: between those calls than computing (measured: 8192 rows is 10-20% slower).
_CHUNK_ROWS = 32768
#: Below this many input values per core, a thread costs more than it saves.
_ELEMENTS_PER_WORKER = 2**20
_CHUNKS_PER_TASK = 2


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
