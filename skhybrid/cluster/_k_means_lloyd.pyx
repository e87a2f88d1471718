"""One Lloyd pass of HybridKMeans over the users: nearest centres, exact code sums, responses.

In the style of scikit-learn's ``sklearn/cluster/_k_means_lloyd.pyx``: one ``prange``
over fixed-size chunks of rows on ``n_threads`` OpenMP threads (visible to, and limited
by, threadpoolctl). Each chunk adds into its own partial sums, which are then added in
chunk order: the integer sums are exact anyway, and the float sums of the lm reports
do not depend on the number of threads, so neither does any seeded release.

The curator's noise is drawn in :mod:`skhybrid.cluster._k_means_statistics`; the lm
users' randomized-response draws are made there too, before the pass.
"""

import numpy as np

cimport openmp
from cython.parallel cimport parallel, prange
from libc.stdint cimport int64_t, uint16_t, uint32_t
from libc.stdlib cimport free, malloc
from scipy.linalg.cython_blas cimport dgemm

from skhybrid._fixed_point cimport integer_code

#: Rows per chunk of a pass: each chunk has its own partial sums, so the sums of a pass
#: are the same whatever the threads. 2**11 rows keep a chunk's rows in cache and the
#: partial sums (chunks x clusters x features) small beside the input.
CHUNK_ROWS = 2048
DEF _CHUNK_ROWS = 2048
#: Rows of a block of a chunk: the block, clipped, and its products with the centres
#: stay in cache (scikit-learn's Lloyd iterations use 256 too). A compile-time constant:
#: the step of a C loop.
DEF _BLOCK_ROWS = 256

ctypedef fused draw_t:
    uint16_t
    uint32_t


def openmp_threads(n_jobs=None):
    """The threads of a pass for ``n_jobs``: None for OpenMP's maximum (all cores, or
    what ``OMP_NUM_THREADS`` or threadpoolctl allow), a negative number for that
    maximum plus one plus it (-1: all), at least 1."""
    cdef int available = openmp.omp_get_max_threads()
    if n_jobs is None:
        return max(available, 1)
    if n_jobs < 0:
        return max(available + 1 + n_jobs, 1)
    return int(n_jobs)


cdef inline Py_ssize_t respond(Py_ssize_t category, double draw, double width,
                               Py_ssize_t n_categories) noexcept nogil:
    # k-ary randomized response from its uniform draw in [0, 2**bits): slot
    # j = floor(draw / width) < k - 1 moves the category by j + 1 modulo k, so each
    # other category has probability exactly width / 2**bits. The slot is exact: draw
    # and width are integers below 2**53, exact in float64, and their correctly rounded
    # quotient is monotone in the draw and never crosses an integer (a non-integer
    # quotient q is at least 1 / width from the next, more than half an ulp of q while
    # q < 2**53 / width). category + j + 1 < 2 k - 1: one subtraction is the modulo.
    # (The tests hold a numpy reference of this arithmetic.)
    cdef Py_ssize_t slot = <Py_ssize_t>(draw / width)
    cdef Py_ssize_t moved = category + (slot + 1) * (slot < n_categories - 1)
    return moved - n_categories * (moved >= n_categories)


cdef void _chunk_pass(
        const double[:, ::1] X, Py_ssize_t start, Py_ssize_t stop,
        const double[::1] origin, const double[:, ::1] scaled, const double[::1] norms,
        const double[::1] lower, const double[::1] upper, const double[::1] scale,
        bint code_sums, const unsigned char[::1] is_local, Py_ssize_t local,
        const Py_ssize_t[::1] level, const double[::1] widths, const draw_t[::1] draws,
        const float[:, ::1] reports, Py_ssize_t[::1] labels,
        int64_t[::1] counts, int64_t[:, ::1] sums, double[::1] local_counts,
        double[:, ::1] local_sums, double *buffer) noexcept nogil:
    """Rows ``start:stop``, block by block: each row's label, then its code sums
    (central) or its response and report sums (local), into this chunk's partial sums.
    ``local``: the chunk's first local user. ``buffer``: the thread's scratch space of
    ``(2 n_features + n_clusters) * _BLOCK_ROWS`` values."""
    cdef Py_ssize_t n_features = X.shape[1], n_clusters = scaled.shape[1]
    cdef Py_ssize_t first, n_block, row, block_row, feature, centre, label, group
    cdef double value, best
    cdef double *shifted = buffer
    cdef double *products = buffer + n_features * _BLOCK_ROWS
    # The block's fixed-point codes (central passes), made as the block is read.
    cdef int64_t *codes = <int64_t *>(products + n_clusters * _BLOCK_ROWS)
    cdef int blas_k = <int>n_clusters, blas_d = <int>n_features, blas_n
    cdef double one = 1.0, zero = 0.0
    for first in range(start, stop, _BLOCK_ROWS):
        n_block = min(_BLOCK_ROWS, stop - first)
        # The block clipped and centred on the origin, row-major, and its codes.
        for block_row in range(n_block):
            for feature in range(n_features):
                value = X[first + block_row, feature]
                if code_sums:
                    codes[block_row * n_features + feature] = integer_code(
                        value, lower[feature], upper[feature], scale[feature])
                if value < lower[feature]:
                    value = lower[feature]
                elif value > upper[feature]:
                    value = upper[feature]
                shifted[block_row * n_features + feature] = value - origin[feature]
        # products = shifted . (-2 c^T), by BLAS as scikit-learn's Lloyd iterations:
        # row-major (n_block x k) is BLAS's column-major (k x n_block) =
        # scaled^T (k x d) . shifted^T (d x n_block).
        blas_n = <int>n_block
        dgemm("N", "N", &blas_k, &blas_n, &blas_d, &one, <double *>&scaled[0, 0], &blas_k,
              shifted, &blas_d, &zero, products, &blas_k)
        for block_row in range(n_block):
            row = first + block_row
            # ||c||^2 - 2 (x - origin) . c: the first minimum on ties (``<`` only).
            label, best = 0, norms[0] + products[block_row * n_clusters]
            for centre in range(1, n_clusters):
                value = norms[centre] + products[block_row * n_clusters + centre]
                if value < best:
                    label, best = centre, value
            if labels.shape[0] > 0:
                labels[row] = label
            if is_local.shape[0] > 0 and is_local[row]:
                group = label
                if draws.shape[0] > 0:
                    group = respond(label, draws[local],
                                    widths[level[local] if level.shape[0] > 0 else 0],
                                    n_clusters)
                if level.shape[0] > 0:
                    group = group + level[local] * n_clusters
                local_counts[group] += 1.0
                for feature in range(n_features):
                    local_sums[group, feature] += reports[local, feature]
                local += 1
            elif code_sums:
                counts[label] += 1
                for feature in range(n_features):
                    sums[label, feature] += codes[block_row * n_features + feature]


def _per_feature(value, n_features):
    """``value`` (a scalar or one per feature) as a contiguous float64 array."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(value, dtype=np.float64),
                                                (n_features,)))


def chunk_local_offsets(is_local, Py_ssize_t n_rows):
    """Each chunk's first local user (and their number, last): shape (n_chunks + 1,).
    ``is_local``: bool array of shape (n_rows,), or None for no local user."""
    n_chunks = max(1, (n_rows + _CHUNK_ROWS - 1) // _CHUNK_ROWS)
    offsets = np.zeros(n_chunks + 1, dtype=np.intp)
    if is_local is not None and n_rows:
        starts = np.arange(0, n_rows, _CHUNK_ROWS)
        np.cumsum(np.add.reduceat(np.asarray(is_local, dtype=np.intp), starts),
                  out=offsets[1:])
    return offsets


def lloyd_pass(const double[:, ::1] X, centres, *, origin, lower, upper, scale=None,
               bint code_sums=False, is_local=None, first_local=None, level=None,
               widths=None, draws=None, reports=None, Py_ssize_t n_levels=1,
               bint return_labels=False, int n_threads=1):
    """One pass of Lloyd's iteration over the rows of ``X``.

    Each row, clipped to ``[lower, upper]``, gets the label of its nearest centre
    (``argmin_k ||c_k||^2 - 2 (x - origin) . c_k``, the first on ties, in coordinates
    centred on ``origin``: the products' rounding errors then scale with
    ``|x - origin| |c - origin|``, not ``|x| |c|``; the products of each block of rows
    by one BLAS call, as scikit-learn's Lloyd iterations: 2-4x quicker than loops
    over the features, measured at 1e6 x 2 and x 10). Then:

    - a central row (not local; with ``code_sums``) is counted in its label's count and
      its fixed-point codes (``skhybrid/_fixed_point.pxd``) are added to its label's
      int64 sums: exact, whatever the order;
    - a local row sends its label through k-ary randomized response with its draw and
      its level's width, and its float32 report (centred as the sums should be) is
      added to the float64 sums of (its level, the reported cluster).

    Parameters
    ----------
    X : ndarray of float64 of shape (n_rows, n_features), C-contiguous
    centres : ndarray of shape (n_clusters, n_features)
        In the coordinates of ``X - origin``.
    origin, lower, upper : ndarray of float64 of shape (n_features,)
    scale : ndarray of float64 of shape (n_features,), default=None
        The fixed-point grid's scale (needed with ``code_sums``).
    code_sums : bool, default=False
        Count and sum the central rows.
    is_local : ndarray of bool of shape (n_rows,), default=None
        Which rows are local users (None: none).
    first_local : ndarray of intp of shape (n_chunks + 1,), default=None
        :func:`chunk_local_offsets` of ``is_local`` (computed if None).
    level : ndarray of intp of shape (n_local,), default=None
        Each local user's privacy level (None: one level).
    widths : ndarray of float64 of shape (n_levels,)
        Each level's randomized-response width
        (:func:`~skhybrid.mechanisms._randomized_response.randomized_response_widths`).
    draws : ndarray of uint32 or uint16 of shape (n_local,), default=None
        One draw per local user, in row order
        (:func:`~skhybrid.mechanisms._randomized_response.response_draws`); None for
        one cluster (no response changes it).
    reports : ndarray of float32 of shape (n_local, n_features), C-contiguous
        The local users' fixed reports, in row order.
    n_levels : int, default=1
    return_labels : bool, default=False
    n_threads : int, default=1

    Returns
    -------
    labels : ndarray of intp of shape (n_rows,) or None
    counts, sums : ndarray of int64 of shape (n_clusters,) and (n_clusters, n_features)
        The central rows' counts and code sums (zeros without ``code_sums``).
    local_counts, local_sums : ndarray of float64 of shape (n_levels * n_clusters,) and
        (n_levels * n_clusters, n_features)
        The local reports' counts and sums by level and reported cluster (cluster ``j``
        of level ``l`` at ``l * n_clusters + j``).
    """
    cdef Py_ssize_t n_rows = X.shape[0], n_features = X.shape[1]
    centres = np.asarray(centres, dtype=np.float64)
    cdef Py_ssize_t n_clusters = centres.shape[0]
    cdef Py_ssize_t n_groups = n_levels * n_clusters
    cdef Py_ssize_t n_chunks = max(1, (n_rows + _CHUNK_ROWS - 1) // _CHUNK_ROWS)
    cdef const double[:, ::1] scaled = np.ascontiguousarray(-2.0 * centres.T)
    cdef const double[::1] norms = np.einsum("kd,kd->k", centres, centres)
    cdef const double[::1] origin_ = _per_feature(origin, n_features)
    cdef const double[::1] lower_ = _per_feature(lower, n_features)
    cdef const double[::1] upper_ = _per_feature(upper, n_features)
    cdef const double[::1] scale_ = _per_feature(0.0 if scale is None else scale, n_features)
    cdef const unsigned char[::1] is_local_ = (
        np.empty(0, np.uint8) if is_local is None else np.asarray(is_local).view(np.uint8))
    if first_local is None:
        first_local = chunk_local_offsets(is_local, n_rows)
    cdef const Py_ssize_t[::1] first_local_ = first_local
    cdef const Py_ssize_t[::1] level_ = (np.empty(0, np.intp) if level is None
                                         else np.asarray(level, dtype=np.intp))
    cdef const double[::1] widths_ = (np.ones(1) if widths is None
                                      else np.asarray(widths, dtype=np.float64))
    cdef const float[:, ::1] reports_ = (
        np.empty((0, n_features), np.float32) if reports is None
        else np.ascontiguousarray(reports, dtype=np.float32))
    # One compiled loop per type of draws (16 or 32 bits), chosen once per pass.
    draws = np.empty(0, np.uint32) if draws is None else np.asarray(draws)
    cdef bint short_draws = draws.dtype == np.uint16
    cdef const uint16_t[::1] draws16 = draws if short_draws else np.empty(0, np.uint16)
    cdef const uint32_t[::1] draws32 = np.empty(0, np.uint32) if short_draws else draws
    labels = np.empty(n_rows if return_labels else 0, dtype=np.intp)
    cdef Py_ssize_t[::1] labels_ = labels
    # Each chunk's partial sums, added in chunk order below.
    cdef int64_t[:, ::1] chunk_counts = np.zeros((n_chunks, n_clusters), np.int64)
    cdef int64_t[:, :, ::1] chunk_sums = np.zeros(
        (n_chunks if code_sums else 1, n_clusters, n_features), np.int64)
    cdef double[:, ::1] chunk_local_counts = np.zeros((n_chunks, n_groups))
    cdef bint with_local = is_local is not None
    cdef double[:, :, ::1] chunk_local_sums = np.zeros(
        (n_chunks if with_local else 1, n_groups, n_features))
    cdef Py_ssize_t chunk, start, stop
    cdef double *buffer
    n_threads = max(1, min(n_threads, n_chunks))
    with nogil, parallel(num_threads=n_threads):
        buffer = <double *>malloc((2 * n_features + n_clusters) * _BLOCK_ROWS * sizeof(double))
        for chunk in prange(n_chunks, schedule="static"):
            start = chunk * _CHUNK_ROWS
            stop = min(start + _CHUNK_ROWS, n_rows)
            if short_draws:
                _chunk_pass(X, start, stop, origin_, scaled, norms, lower_, upper_, scale_,
                            code_sums, is_local_, first_local_[chunk], level_, widths_,
                            draws16, reports_, labels_, chunk_counts[chunk],
                            chunk_sums[chunk if code_sums else 0], chunk_local_counts[chunk],
                            chunk_local_sums[chunk if with_local else 0], buffer)
            else:
                _chunk_pass(X, start, stop, origin_, scaled, norms, lower_, upper_, scale_,
                            code_sums, is_local_, first_local_[chunk], level_, widths_,
                            draws32, reports_, labels_, chunk_counts[chunk],
                            chunk_sums[chunk if code_sums else 0], chunk_local_counts[chunk],
                            chunk_local_sums[chunk if with_local else 0], buffer)
        free(buffer)
    counts = np.asarray(chunk_counts).sum(axis=0)
    sums = np.asarray(chunk_sums).sum(axis=0)
    # numpy adds the chunks' rows in order along axis 0 (its pairwise summation is
    # along a contiguous axis only): the same float sums on any number of threads.
    local_counts = np.asarray(chunk_local_counts).sum(axis=0)
    local_sums = np.asarray(chunk_local_sums).sum(axis=0)
    return (labels if return_labels else None), counts, sums, local_counts, local_sums


def nearest_centre(X, centres, *, origin=None, bounds=None, n_threads=1):
    """Index of each row's nearest centre in squared Euclidean distance (first on ties).

    :func:`lloyd_pass`'s labels. ``origin`` None: the centres' mean (the centres are
    then in the coordinates of ``X``), else the centres are in those of ``X - origin``.
    ``bounds``: ``(lower, upper)`` each row is clipped to (None: not clipped).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    centres = np.asarray(centres, dtype=np.float64)
    if origin is None:
        origin = centres.mean(axis=0)
        centres = centres - origin
    lower, upper = (-np.inf, np.inf) if bounds is None else bounds
    labels, *_ = lloyd_pass(X, centres, origin=origin, lower=lower, upper=upper,
                            return_labels=True, n_threads=n_threads)
    return labels


def within_cluster_sum_of_squares(X, centres):
    """The K-means objective (WCSS): sum over rows of the squared distance to the nearest centre.

    Avent et al. 2020, Sec. 7: ``sum_k sum_{x in C_k} ||x - mu_k||^2`` with each row in
    the cluster of its nearest centre. Distances to the chosen centre are computed
    directly, without the cancellation of ``||x||^2 - 2 x . c + ||c||^2``.
    """
    labels = nearest_centre(X, centres)
    total = 0.0
    for start in range(0, X.shape[0], 2**17):
        block = slice(start, start + 2**17)
        difference = X[block] - centres[labels[block]]
        total += float(np.einsum("ij,ij->", difference, difference))
    return total
