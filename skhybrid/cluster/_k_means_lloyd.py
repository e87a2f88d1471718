"""Lloyd's iteration kernels of HybridKMeans: nearest centres, cluster sums, the objective.

Exact and deterministic computations on the data, and the lm users' randomized
responses, which their devices compute from their own nearest centre
(:func:`lloyd_pass`, one pass for both groups); the curator's noise is drawn in
:mod:`skhybrid.cluster._k_means_statistics`.
"""

import math
from functools import partial
from typing import NamedTuple

import numpy as np

from ..mechanisms._randomized_response import response_draws
from ..utils._responses import DRAW_BITS, SHORT_DRAW_BITS
from ..utils._sums import FIXED_POINT_BITS, _bounds_and_scale, per_feature
from ..utils._threads import CompiledTasks, available_cores, in_parts, single_threaded_blas

#: Rows per task of the nearest-centre search, at most and at least, and the number of
#: tasks aimed at in between (tasks balance the load over the threads: the threads'
#: last tasks end at most one task apart; measured at 1e6 x 10, 32 tasks a hybrid pass
#: 2-4% quicker than 8), with at least _MIN_TASK_VALUES values each: a task's Python
#: call (the kernel's dispatch and scratch arrays, the draws' lock) costs 10-20 us, and
#: at 1e5 x 2, k=3, a pass of 32 tasks took 337-391 us, of 2 to 8 tasks 245-302 us.
#: With local users, tasks of at most _TASK_ROWS rows where the values allow fewer:
#: their draws are made under a lock as each task starts, and the pool's thread starts
#: its first task some 40 us after the caller's. Measured per hybrid iteration (5% tcm
#: users): at 1e5 x 2, k=3, 4 tasks 9-13% quicker than 2; at 1e6 x 2, 32 tasks 19%
#: quicker than 16 (k=3), 13% (k=10). Not for `tcm_only` passes (1-3% slower), nor
#: more tasks by values: at 1e5 x 10 (8 tasks), 16 were 3-6% slower. (Measured with
#: session 35's Python call per task; since session 36 each thread runs its tasks in
#: one compiled loop, and tasks of 2**13 or 2**14 rows were 1-8% slower than these.)
_CHUNK_ROWS = 131072
_MIN_TASK_ROWS = 2048
_TASKS = 32
_MIN_TASK_VALUES = 2**16
_TASK_ROWS = 2**15
#: The lm users' fixed reports are kept in float32: each iteration reads them all, and
#: at 1e6 x 50 the pass is bound by memory (the reports as large as the input in
#: float64). Already private, they may be rounded (post-processing): a report's
#: rounding error, at most 2**-24 of its magnitude, is negligible beside its Laplace
#: noise. Measured per hybrid pass at 1e6 points, k=3: 8-10% quicker at 50 features,
#: 4-7% at 2 and 10; the reports' memory halved. Their sums are still float64.
REPORT_DTYPE = np.float32
#: Local users whose randomized responses are drawn at once (a quarter MiB of draws).
_DRAWN_AT_ONCE = 2**16
#: Below this many input values per core, a thread costs more than it saves.
_ELEMENTS_PER_WORKER = 2**16
#: A local user's response and report count as this many input values more (a local
#: row costs 1.7 ns more than a central one at 2 features: its response, its draw and
#: its report's sum), so that hybrid passes over few features are split too: measured
#: per hybrid iteration (5% tcm, k=3), at 1e5 x 1 0.34 ms on one thread, 0.19 ms on
#: two; at 5e4 x 2, 0.23 and 0.16 ms.
_LOCAL_ROW_VALUES = 2


def nearest_centre(X, centres, *, origin=None, bounds=None, code_sums=False):
    """Index of each row's nearest centre in squared Euclidean distance (first on ties).

    ``argmin_k ||x - c_k||^2 = argmin_k (||c_k||^2 - 2 x . c_k)``, computed by
    :func:`lloyd_pass` in coordinates centred on ``origin``: the products' rounding
    errors scale with ``|x - origin| |c - origin|``, not with ``|x| |c|``, which for
    data far from zero (near 1e6, say) would mislabel the rows near a boundary.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    centres : ndarray of shape (n_clusters, n_features)
        In the coordinates of ``X - origin``.
    origin : ndarray of shape (n_features,), default=None
        As in :func:`lloyd_pass`. None: the centres' mean (the centres are then given
        in the coordinates of ``X``).
    bounds
        As in :func:`lloyd_pass`.
    code_sums : bool, default=False
        Also count each centre's rows and add their fixed-point codes (see
        :func:`lloyd_pass`).

    Returns
    -------
    labels : ndarray of shape (n_samples,), dtype=intp
    counts : ndarray of int64 of shape (n_clusters,)
        Only with ``code_sums``: ``np.bincount(labels, minlength=n_clusters)``.
    sums : ndarray of int64 of shape (n_clusters, n_features)
        Only with ``code_sums``.
    """
    if origin is None:
        centres = np.asarray(centres, dtype=np.float64)
        origin = centres.mean(axis=0)
        centres = centres - origin
    labels, counts, sums, _ = lloyd_pass(X, centres, origin=origin, bounds=bounds,
                                         labels=True, code_sums=code_sums)
    return (labels, counts, sums) if code_sums else labels


class LocalResponses(NamedTuple):
    """The local users of a :func:`lloyd_pass`: who they are, their reports and privacy levels.

    rows : ndarray of bool of shape (n_rows,) or None
        Which rows of ``X`` are local users (None: every row).
    reports : ndarray of float32 of shape (n_local, n_features), C-contiguous
        Their fixed reports (centred as the sums should be), in row order, in float32
        (``REPORT_DTYPE``; :func:`lloyd_pass` converts other arrays).
    level : ndarray of int of shape (n_local,) or None
        Each local user's privacy level (None: one level).
    widths : ndarray of float64 of shape (n_levels,)
        Each level's randomized-response width: the draws per other cluster, out of
        ``2**32``
        (:func:`~skhybrid.mechanisms._randomized_response.randomized_response_widths`).
    task_counts : list of int or None
        The local users in each task of :func:`lloyd_pass`
        (:func:`local_task_counts`; None: counted by the pass). The same in every
        iteration: a fit counts them once.
    bits : int, default=32
        The bits of each response's draw, those of ``widths``' grid (32 or 16:
        :func:`~skhybrid.mechanisms._randomized_response.response_bits`).
    """

    rows: np.ndarray
    reports: np.ndarray
    level: np.ndarray
    widths: np.ndarray
    task_counts: list = None
    bits: int = DRAW_BITS


def _task_rows(n_rows, n_features, local=False):
    """Rows per task of :func:`lloyd_pass`: a function of the input's shape alone (and of
    whether local users respond in it).

    Several tasks per core balance the load when another process holds a core too;
    the partition does not depend on the number of cores, so neither do the local
    users' draws (made by whole tasks). Up to ``_TASKS`` tasks, as many as a power of
    two (as many tasks per thread on 2, 4 or 8 cores): those of at least
    ``_MIN_TASK_VALUES`` values, or, with ``local`` users if that makes more, of at
    most ``_TASK_ROWS`` rows (the power of two above; a local user's response costs
    more than a few values, see ``_LOCAL_ROW_VALUES``); each of ``_MIN_TASK_ROWS`` to
    ``_CHUNK_ROWS`` rows.
    """
    by_values = max(1, n_rows * n_features // _MIN_TASK_VALUES)
    by_rows = -(-n_rows // _TASK_ROWS) if local else 1
    n_tasks = max(1 << (by_values.bit_length() - 1), 1 << max(0, (by_rows - 1).bit_length()))
    n_tasks = min(_TASKS, n_tasks)
    return min(_CHUNK_ROWS, max(_MIN_TASK_ROWS, -(-n_rows // n_tasks)))


def _task_bounds(n_rows, n_features, local=False):
    """The first and last-plus-one rows of each task of :func:`lloyd_pass`."""
    step = _task_rows(n_rows, n_features, local)
    starts = list(range(0, n_rows, step)) or [0]  # one empty task for no rows
    return starts, starts[1:] + [n_rows]


def _draw_chunks(n_local):
    """The tasks whose lm users' draws :func:`lloyd_pass` makes in one call, in order,
    given each task's number of local users: one task, then up to twice as many as the
    last chunk, while a chunk stays within ``_DRAWN_AT_ONCE`` users (one task at least):
    ``[(0, 1), (1, 3), (3, 7), ...]`` where tasks are small. A function of the counts
    alone, so the draws do not depend on the threads."""
    chunks, start, size = [], 0, 1
    while start < len(n_local):
        stop = start + 1
        while (stop < len(n_local) and stop - start < size
               and sum(n_local[start:stop + 1]) <= _DRAWN_AT_ONCE):
            stop += 1
        chunks.append((start, stop))
        size = 2 * (stop - start)
        start = stop
    return chunks


def _word_source(rng):
    """``(next_uint64, state address)`` of a numpy Generator's bit generator, from
    which compiled code reads the same 64-bit words as ``random_raw``
    (:func:`~skhybrid.utils._kernels.lloyd_tasks`; without the generator's lock: no
    other thread uses it meanwhile); None for others (a deferred secure generator, a
    bit generator without ``ctypes``)."""
    if type(rng) is not np.random.Generator:
        return None
    try:
        interface = rng.bit_generator.ctypes
    except (AttributeError, NotImplementedError):
        return None
    return interface.next_uint64, interface.state_address


def _function_address(function):
    """The address of a ctypes function."""
    import ctypes

    return ctypes.cast(function, ctypes.c_void_p).value


def _made_counter():
    from ..utils._compiled_tasks import new_made_counter  # numba: imported at first use

    return new_made_counter()


def local_task_counts(rows, n_rows, n_features):
    """The number of local users in each task of :func:`lloyd_pass` over ``n_rows`` rows
    of ``n_features`` (``rows``: which are local, None for all), for
    :class:`LocalResponses`."""
    starts, stops = _task_bounds(n_rows, n_features, local=True)
    if rows is None:
        return [stop - start for start, stop in zip(starts, stops)]
    return [int(np.count_nonzero(rows[start:stop])) for start, stop in zip(starts, stops)]


def lloyd_pass(X, centres, *, origin=None, bounds=None, labels=False, code_sums=False,
               local=None, rng=None):
    """One pass of Lloyd's iteration over the rows: nearest centres, the central rows'
    exact code sums and the local rows' randomized responses with their reports' sums.

    Each row's nearest centre (``argmin_k ||c_k||^2 - 2 x . c_k``, first on ties) is
    computed by one compiled pass
    (:func:`~skhybrid.utils._kernels.nearest_centre_sums`) over blocks of rows that stay
    in cache: the block's distances (by compiled loops over the block transposed for
    up to 24 features, where a product of 256 rows by a few centres is mostly BLAS's
    packing; by a BLAS product above, as scikit-learn's Lloyd iterations do), then each
    row's first minimum. While a block is in cache, its
    central rows' codes are added to their cluster's sums and its local rows respond:
    each sends its nearest centre through k-ary randomized response and its fixed
    report is added to the sums of the reported cluster (of its privacy level). The
    local users' data are read once per iteration and no n-long array is written.
    Large inputs are spread over the available cores (the pass releases the GIL).

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
    labels : bool, default=False
        Return each row's nearest centre.
    code_sums : bool, default=False
        Count each centre's central rows (those not local) and add their fixed-point
        codes on the grid of ``bounds`` (:func:`~skhybrid.utils._kernels.fixed_point_code`
        of each value, never stored) to its exact sums, in int64.
    local : LocalResponses, default=None
        The local users, if any.
    rng : numpy.random.Generator, default=None
        The local users' randomness of this iteration (with ``local``): the draws of
        :func:`~skhybrid.mechanisms._randomized_response.response_draws`, at once for
        up to ``_DRAWN_AT_ONCE`` local users, else in chunks of whole tasks in row
        order (:func:`_draw_chunks`).

    Returns
    -------
    labels : ndarray of intp of shape (n_samples,) or None
    counts, sums : ndarray of int64 of shape (n_clusters,) and (n_clusters, n_features)
        The central rows' counts and code sums (None without ``code_sums``).
    local_sums : tuple (counts, sums) or None
        With ``local``: the number of reports and the sum of the reports per
        privacy level and reported cluster, of shapes
        ``(n_levels * n_clusters,)`` and ``(n_levels * n_clusters, n_features)``, in
        float64 (cluster ``j`` of level ``l`` at ``l * n_clusters + j``).
    """
    return LloydPasses(X, origin=origin, bounds=bounds, code_sums=code_sums,
                       local=local).run(centres, labels=labels, rng=rng)


class LloydPasses:
    """The passes of :func:`lloyd_pass` over one input, as a fit makes one per iteration.

    What does not change between iterations is computed once: the input's layout, the
    bounds' fixed-point grid, the tasks and their local users, the draws' chunks, and
    the passes' arrays (measured: 33 us of Python per pass at 1e5 x 2, 7% of a hybrid
    iteration, most of it set-up), which each pass rewrites: so the passes' threads
    (:class:`~skhybrid.utils._threads.CompiledTasks`) can be kept between passes, inside
    :func:`~skhybrid.utils._threads.kept_threads` (a fit's iterations), and a kept
    thread makes the next pass's draws while the caller computes the next centres
    (:meth:`run`'s ``next_rng``; measured per hybrid iteration, against the caller
    making them at the pass's start: 12% quicker at 1e5 x 2, k=3, 7% at 1e5 x 10, 4% at
    1e6 x 2). Holds the users' values (and the local users' reports) only for the
    fit's duration, as the fit's own objects do.

    Parameters
    ----------
    X, origin, bounds, code_sums, local
        As in :func:`lloyd_pass`.
    """

    def __init__(self, X, *, origin=None, bounds=None, code_sums=False, local=None):
        X = np.ascontiguousarray(X, dtype=np.float64)
        n_samples, n_features = X.shape
        self._X = X
        self._origin = per_feature(0.0 if origin is None else origin, n_features)
        if bounds is None:
            if code_sums:
                raise ValueError("code_sums needs the bounds of the fixed-point grid")
            self._grid = (per_feature(-np.inf, n_features), per_feature(np.inf, n_features),
                          np.zeros(n_features))
        else:
            self._grid = _bounds_and_scale(*bounds, n_features)
        self._code_sums = code_sums
        starts, stops = _task_bounds(n_samples, n_features, local=local is not None)
        self._starts = np.asarray(starts, dtype=np.int64)
        self._stops = np.asarray(stops, dtype=np.int64)
        n_tasks = len(starts)
        # Each task's first local user and its number of local users.
        if local is None:
            n_local = [0] * n_tasks
        else:
            local = local._replace(
                reports=np.ascontiguousarray(local.reports, dtype=REPORT_DTYPE))
            n_local = local.task_counts
            if n_local is None:
                n_local = local_task_counts(local.rows, n_samples, n_features)
        self._local = local
        self._first_local = np.zeros(n_tasks + 1, dtype=np.int64)
        np.cumsum(n_local, out=self._first_local[1:])
        self._total_local = int(self._first_local[-1])
        self._draw_chunks = _draw_chunks(n_local)
        # The task after the chunk of draws that starts at each task (see lloyd_tasks).
        self._chunk_stops = np.zeros(n_tasks, dtype=np.int64)
        for start_task, stop_task in self._draw_chunks:
            self._chunk_stops[start_task] = stop_task
        work = X.size + _LOCAL_ROW_VALUES * self._total_local
        self._workers = max(min(available_cores(), work // _ELEMENTS_PER_WORKER), 1)
        self._arrays = None  # the passes' arrays (_PassArrays), made at the first pass
        self._tasks = None  # the passes' threads (CompiledTasks), started at the first
        self._rng = None  # the current pass's generator (its draws)
        self._dirty = False  # whether the task arrays may hold a pass's values
        self._next_word = None  # the generators' function the kept threads draw with
        self._job_posted = False  # whether the next pass's draws are posted as a job
        self._posted_rng = None  # the generator they are posted with

    def _pass_arrays(self, n_clusters):
        """The arrays of the passes for ``n_clusters`` centres, made once: each pass
        writes its centres and zeroes the task arrays (the threads kept between passes
        read the same arrays)."""
        if self._arrays is not None and self._arrays.scaled.shape[1] == n_clusters:
            return self._arrays
        if self._tasks is not None:
            self._tasks.close()
            self._tasks = None
        local, n_tasks = self._local, len(self._starts)
        n_features = self._X.shape[1]
        draws = drawn = None
        if local is not None and n_clusters > 1 and self._total_local > 0:
            draws = np.empty(self._total_local, dtype=np.uint16
                             if local.bits == SHORT_DRAW_BITS else np.uint32)
            if self._total_local > _DRAWN_AT_ONCE:
                drawn = _made_counter()  # see lloyd_tasks
        counts = _TaskArrays(n_tasks, (n_clusters,), np.int64)
        sums = (_TaskArrays(n_tasks, (n_clusters, n_features), np.int64) if self._code_sums
                else None)
        local_counts = local_sums = None
        if local is not None:
            n_groups = n_clusters * local.widths.shape[0]
            local_counts = _TaskArrays(n_tasks, (n_groups,), np.float64)
            local_sums = _TaskArrays(n_tasks, (n_groups, n_features), np.float64)
        self._arrays = _PassArrays(np.empty((n_features, n_clusters)), np.empty(n_clusters),
                                   draws, drawn, counts, sums, local_counts, local_sums)
        return self._arrays

    def _arguments(self, arrays, labels, drawn, next_word):
        """:func:`~skhybrid.utils._kernels.lloyd_tasks`' arguments after its first two."""
        local = self._local
        local_arrays = [None] * 7
        if local is not None:
            local_arrays = [local.rows, local.level, local.widths, arrays.draws, local.reports,
                            arrays.local_counts.rows, arrays.local_sums.rows]
        return (self._starts, self._stops, self._first_local, drawn, self._chunk_stops,
                next_word, self._X, self._origin, arrays.scaled, arrays.norms, *self._grid,
                labels, arrays.counts.rows, None if arrays.sums is None else arrays.sums.rows,
                *local_arrays)

    def run(self, centres, *, labels=False, rng=None, next_rng=None):
        """One pass: :func:`lloyd_pass`'s results for these ``centres`` (in the
        coordinates of ``X - origin``) and this iteration's ``rng``. ``next_rng``: the
        next pass's generator, whose draws a thread of the pool kept between the passes
        (a fit's) makes while the caller computes the next centres, where compiled code
        can read its words (:func:`_word_source`)."""
        X, local = self._X, self._local
        centres = np.asarray(centres, dtype=np.float64)
        arrays = self._pass_arrays(centres.shape[0])
        np.multiply(centres.T, -2.0, out=arrays.scaled)
        np.einsum("kd,kd->k", centres, centres, out=arrays.norms)
        if self._dirty:  # a pass that raised left its task arrays as they were
            for task_arrays in arrays[4:]:
                if task_arrays is not None:
                    task_arrays.rows.fill(0)
        self._dirty = True
        # numba: imported at first use.
        from ..utils._kernels import _COLUMN_FEATURES, lloyd_tasks, task_totals

        # The draws come from the iteration's generator in an order that does not
        # depend on the threads: up to _DRAWN_AT_ONCE local users, at once (the draws of
        # one randomized response of them all), before the pass; beyond, in chunks of
        # whole tasks, each published when made (a task's local users wait for theirs):
        # by a thread of the pool during the previous pass's curator work where the
        # caller posted them as a job, else by the caller while the pool's threads
        # compute (_draw, below).
        drawn, prepare = arrays.drawn, None
        if arrays.draws is not None and drawn is None:
            arrays.draws[:] = response_draws(rng, self._total_local, local.bits)
        if labels:  # a pass of its own, with its own label array and counter of draws
            label_array = np.empty(X.shape[0], dtype=np.intp)
            drawn = None if drawn is None else _made_counter()
            tasks = CompiledTasks(lloyd_tasks,
                                  self._arguments(arrays, label_array, drawn, None),
                                  len(self._starts), self._workers)
        else:
            label_array = None
            if self._tasks is None or self._tasks.closed:
                source = _word_source(rng) if drawn is not None else None
                self._next_word = None if source is None else source[0]
                self._job_posted = False
                self._tasks = CompiledTasks(
                    lloyd_tasks, self._arguments(arrays, None, drawn, self._next_word),
                    len(self._starts), self._workers)
            tasks = self._tasks
        taken = self._job_posted and not tasks.take_back_job()
        self._job_posted = False
        if taken and rng is not self._posted_rng:  # (a fit passes the one it posted)
            raise RuntimeError("this pass's draws were made ahead from another generator")
        if drawn is not None and not taken:
            self._rng = rng
            prepare = partial(self._draw, drawn=drawn)
        try:
            if X.shape[1] <= _COLUMN_FEATURES:  # no BLAS product: the distances by loops
                tasks.run(prepare)
            else:
                # One BLAS thread per block: for products this small BLAS threads cost
                # more than they save, and on busy cores their spin-waiting can slow a
                # product a hundredfold.
                with single_threaded_blas():
                    tasks.run(prepare)
        finally:
            self._rng = None
            if labels:
                tasks.close()
        # The totals, and the task arrays zeroed for the next pass.
        counts = np.empty(arrays.counts.shape, dtype=np.int64)
        sums = local_counts = local_sums = None
        if arrays.sums is not None:
            sums = np.empty(arrays.sums.shape, dtype=np.int64)
        if local is not None:
            local_counts = np.empty(arrays.local_counts.shape)
            local_sums = np.empty(arrays.local_sums.shape)
        task_totals(*(None if task_arrays is None else task_arrays.rows
                      for task_arrays in arrays[4:]),
                    counts, None if sums is None else sums.reshape(-1), local_counts,
                    None if local_sums is None else local_sums.reshape(-1))
        self._dirty = False
        if next_rng is not None and not labels and drawn is not None:
            self._post_draws(tasks, drawn, next_rng)
        totals = None if local is None else (local_counts, local_sums)
        return label_array, counts if self._code_sums else None, sums, totals

    def _post_draws(self, tasks, drawn, next_rng):
        """Post the next pass's draws as a job for a thread of the pool kept between the
        passes (it makes them, while the caller computes the next centres, from the
        same words in the same chunks as :meth:`_draw`), where compiled code can read
        ``next_rng``'s words with the function the threads were given."""
        source = _word_source(next_rng)
        if (source is None or self._next_word is None
                or _function_address(source[0]) != _function_address(self._next_word)):
            return
        from ..utils._compiled_tasks import MADE_SOURCE

        drawn[MADE_SOURCE] = source[1]
        self._posted_rng = next_rng
        self._job_posted = tasks.post_job()

    def _draw(self, first_task, drawn):
        """The pass's draws, made by the caller while the pool's threads compute: the
        tasks' draws in chunks of 1, 2, 4, ... tasks (of at most _DRAWN_AT_ONCE users
        where a task has fewer), each published when made (the tickets of the tasks
        drawn, see :func:`~skhybrid.utils._kernels.lloyd_tasks`): the pool's threads
        start on the first tasks at once, and a call per task costs 3-4 us more each,
        on the caller's way to its first task."""
        from ..utils._compiled_tasks import publish

        first_local, draws, bits = self._first_local, self._arrays.draws, self._local.bits
        for start_task, stop_task in self._draw_chunks:
            first, last = first_local[start_task], first_local[stop_task]
            if last > first:
                draws[first:last] = response_draws(self._rng, int(last - first), bits)
            publish(drawn, first_task + stop_task)


class _PassArrays(NamedTuple):
    """The arrays of :class:`LloydPasses`' passes (see
    :func:`~skhybrid.utils._kernels.lloyd_tasks`): the centres' ``scaled`` and ``norms``,
    the local users' ``draws`` and the counter ``drawn`` (None where not needed), and the
    task arrays (:class:`_TaskArrays`; ``sums`` and the local ones may be None)."""

    scaled: np.ndarray
    norms: np.ndarray
    draws: np.ndarray
    drawn: np.ndarray
    counts: "_TaskArrays"
    sums: "_TaskArrays"
    local_counts: "_TaskArrays"
    local_sums: "_TaskArrays"


class _TaskArrays:
    """Zeroed arrays of one shape, one per task of :func:`lloyd_pass`.

    One allocation whose rows are padded so that no two tasks' arrays share a 64-byte
    cache line: threads adding into neighbouring ones would pass the line back and
    forth (measured: a pass at 1e6 x 2 ran at half speed on two cores). Their total
    (:func:`~skhybrid.utils._kernels.task_totals`) adds the tasks' arrays in task order:
    integer totals are exact, and float totals are the same whatever the threads.
    """

    def __init__(self, n_tasks, shape, dtype):
        self._shape, self._size = shape, math.prod(shape)
        stride = -(-self._size // 8) * 8 + 8  # whole lines of 8-byte values, and one more
        self._rows = np.zeros((n_tasks, stride), dtype=dtype)

    @property
    def rows(self):
        """The tasks' arrays, flat in the rows of one C-contiguous array (padded): task
        ``t``'s is ``rows[t, :size]`` (:func:`~skhybrid.utils._kernels.lloyd_tasks`)."""
        return self._rows

    @property
    def shape(self):
        """The shape of one task's array (and of the total)."""
        return self._shape


def cluster_sums(values, origin, labels, n_clusters):
    """Each cluster's size and the sum of its members' values minus ``origin``.

    For the lm users' reports (already private), in one compiled pass over the rows
    (:func:`~skhybrid.utils._kernels.grouped_row_sums`).

    Parameters
    ----------
    values : ndarray of shape (n_samples, n_features)
        float32 (the reports' ``REPORT_DTYPE``) or converted to float64.
    origin : ndarray of shape (n_features,)
    labels : ndarray of int of shape (n_samples,)
        In ``[0, n_clusters)``.
    n_clusters : int

    Returns
    -------
    counts : ndarray of shape (n_clusters,), float
    sums : ndarray of shape (n_clusters, n_features)
    """
    values = np.asarray(values)
    # float32 reports are read as they are (converted value by value, exactly).
    values = np.ascontiguousarray(values, dtype=np.float32 if values.dtype == np.float32
                                  else np.float64)
    n_features = values.shape[1]
    if values.shape[0] == 0:
        return np.zeros(n_clusters), np.zeros((n_clusters, n_features))
    labels = np.asarray(labels)
    if labels.min() < 0 or labels.max() >= n_clusters:
        raise ValueError(f"labels must be in [0, {n_clusters}); got {labels.min()} to "
                         f"{labels.max()}")
    origin = per_feature(origin, n_features)

    from ..utils._kernels import grouped_row_sums  # numba: imported at first use

    def part(start, stop):
        counts, sums = np.zeros(n_clusters), np.zeros((n_clusters, n_features))
        grouped_row_sums(values[start:stop], origin, labels[start:stop], counts, sums)
        return counts, sums

    # The pass releases the GIL: large inputs are summed in parts on threads.
    parts = in_parts(part, values.shape[0], min_rows=max(1, _ELEMENTS_PER_WORKER // n_features))
    return sum(counts for counts, _ in parts), sum(sums for _, sums in parts)


def centred_code_sums(code_sums, counts):
    """Each cluster's exact sum of its members' values centred on the middle of the box.

    In fixed-point units (:func:`~skhybrid.utils._sums.fixed_point_sums`): a clipped
    value's code is in ``[0, 2**B]``, so ``code - 2**(B - 1)`` is the value minus the
    middle of the box, of magnitude at most ``2**(B - 1)`` (half the range), computed in
    integers without rounding. A user who moves to another cluster changes two of these
    sums by at most ``2**(B - 1)`` per feature; one who stays, one sum by ``2**B``
    (see :func:`central_iteration_sensitivity`).

    Parameters
    ----------
    code_sums : ndarray of int64 of shape (n_clusters, n_features)
        The codes' exact sums per cluster (from :func:`lloyd_pass`).
    counts : ndarray of int of shape (n_clusters,)
        Each cluster's number of members.

    Returns
    -------
    sums : ndarray of int64 of shape (n_clusters, n_features)
    """
    return code_sums - (counts[:, np.newaxis].astype(np.int64) << (FIXED_POINT_BITS - 1))


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
