"""Threads: the cores this process may use, and BLAS kept to one thread inside parallel work."""

import ctypes
import os
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from functools import lru_cache

from threadpoolctl import ThreadpoolController


@lru_cache(maxsize=1)
def _threadpool_controller():
    # Created once: inspecting the loaded libraries on every call costs about 0.5 ms.
    return ThreadpoolController()


@contextmanager
def single_threaded_blas():
    """Limit BLAS to one thread while our own threads (or Dask's) run small products.

    Each of several threads calling a multithreaded BLAS on blocks of a few thousand
    rows oversubscribes the cores, and BLAS threads spin-waiting on busy cores can slow
    a product a hundredfold. The limit is process-wide and lifted on exit.
    """
    with _threadpool_controller().limit(limits=1, user_api="blas"):
        yield


_pool = {}


def _forget_pool():
    # A forked child has none of its parent's threads: it starts its own pool.
    _pool.clear()


os.register_at_fork(after_in_child=_forget_pool)


def shared_pool():
    """The process's pool of one thread per available core, started at first use.

    Kept for later calls: starting threads costs more than the tasks of a small pass,
    and a thread's first BLAS call allocates its buffers once. Its threads are idle
    between calls; tasks must not wait on each other (they all share this pool).
    """
    if "pool" not in _pool:
        # Kept if set already: a pool started inside cores_apart places its threads.
        _pool.setdefault("threads", {})  # native thread id -> the CPUs it is kept on
        _pool.setdefault("apart", None)  # the CPUs a new thread of the pool starts on
        _pool["pool"] = ThreadPoolExecutor(available_cores(), thread_name_prefix="skhybrid",
                                           initializer=_thread_started)
    return _pool["pool"]


def _thread_started():
    # Known to cores_apart from now on; kept off the caller's core from its first task.
    threads, apart = _pool["threads"], _pool["apart"]
    native_id = threading.get_native_id()
    threads[native_id] = None
    if apart is not None:
        _set_cpus(native_id, apart)


def _current_cpu():
    """The core the calling thread runs on (glibc's ``sched_getcpu``), or None."""
    if "getcpu" not in _pool:
        try:
            _pool["getcpu"] = ctypes.CDLL(None, use_errno=True).sched_getcpu
        except (AttributeError, OSError, TypeError):  # not glibc (TypeError: Windows)
            _pool["getcpu"] = None
    getcpu = _pool["getcpu"]
    cpu = -1 if getcpu is None else getcpu()
    return cpu if cpu >= 0 else None


def _set_cpus(native_id, cpus):
    try:
        os.sched_setaffinity(native_id, cpus)
    except (AttributeError, OSError, ValueError):  # not Linux, or a core gone: left as is
        return
    _pool["threads"][native_id] = cpus


@contextmanager
def cores_apart():
    """While in it, the calling thread stays on its core and the pool's threads off it.

    Linux wakes a sleeping thread on the core of the thread that wakes it when it
    judges them to share data (``wake_affine``), and a thread woken there waits for
    that core while the other cores idle: measured on the 2-core CI machine, one pass
    in two or three of HybridKMeans at 1e6 x 10 ran both of its threads on one core
    (11-13 ms instead of 7.5) and stayed there to its end (the caller wakes the pool's
    threads). So, for the duration of a call of :func:`run_compiled_tasks` (for
    HybridKMeans, of a fit's iterations), the caller is kept on the core it runs on
    (its own set of cores is given back on exit) and each of the pool's threads on the
    caller's other cores (one set for all: the scheduler still spreads them and moves
    them off a busy core). A pool thread's set changes only when the caller has moved
    to another core (one system call per thread then). Only a placement: which thread
    computes what does not change (see :func:`run_compiled_tasks`). No effect where the
    platform has no ``sched_getcpu`` or ``sched_setaffinity``, where the caller may run
    on one core only, or while another thread is in such a call (two callers kept on
    the core they were on could share it).
    """
    # Counted before the caller is kept on one core (the count is kept for the process).
    available_cores()
    with _callers_lock:
        alone = not _callers
        _callers.append(threading.get_ident())  # once per call: calls may nest
    try:
        if alone:  # concurrent callers are left to the scheduler (they could share a core)
            with _kept_apart():
                yield
        else:
            yield
    finally:
        with _callers_lock:
            _callers.remove(threading.get_ident())


_callers, _callers_lock = [], threading.Lock()


@contextmanager
def _kept_apart():
    cpu = _current_cpu()
    try:
        allowed = os.sched_getaffinity(0) if cpu is not None else set()
    except (AttributeError, OSError):
        allowed = set()
    apart = frozenset(allowed - {cpu})
    pinned = False
    if apart and cpu in allowed:
        _pool["apart"] = apart
        for native_id, cpus in list(_pool.get("threads", {}).items()):
            if cpus != apart:
                _set_cpus(native_id, apart)
        try:
            os.sched_setaffinity(0, {cpu})
            pinned = True
        except OSError:
            pass
    try:
        yield
    finally:
        if pinned:
            try:
                os.sched_setaffinity(0, allowed)
            except OSError:  # the process's cores changed meanwhile: its own set stands
                pass


def run_compiled_tasks(worker, args, n_tasks, n_threads, prepare=None):
    """One pass of a compiled task loop on ``n_threads`` threads:
    :meth:`CompiledTasks.run` once, its threads not kept."""
    tasks = CompiledTasks(worker, args, n_tasks, n_threads)
    try:
        tasks.run(prepare)
    finally:
        tasks.close()


class CompiledTasks:
    """Passes of a compiled task loop, run by the caller and ``n_threads - 1`` threads of
    :func:`shared_pool`: ``worker(state, linger, *args)``.

    ``worker`` is a compiled function (nogil) that takes the tasks of the current pass
    from the shared ``state`` until none is left, counts each done, and asks
    :func:`~skhybrid.utils._compiled_tasks.next_pass` for the next pass, as
    :func:`~skhybrid.utils._kernels.lloyd_tasks` does
    (:mod:`skhybrid.utils._compiled_tasks`). Each :meth:`run` is one pass: the caller
    publishes it, takes tasks too, then spins in compiled code until every task is done
    (no thread needs the GIL between tasks or to learn that the pass has ended; after
    ``WAIT_SPINS`` turns it sleeps between waits). A thread of the pool that has not
    started by then (the pool busy with other work) is not waited for: the caller has
    taken its tasks.

    Inside :func:`kept_threads` (a fit's iterations), the pool's threads are kept
    between passes: each waits, spinning in compiled code, for the next pass (up to
    ``WAIT_SPINS`` turns, else it returns to the pool and the next pass submits
    another) and starts on it as soon as it is published. Measured on the 2-core CI
    machine, a thread submitted to the pool started a pass's tasks 30-70 us after the
    caller published it, and the submission cost the caller 20 us (HybridKMeans, 1e5 x
    2, k=3: a pass of about 300 us). Elsewhere they return after each pass.
    ``args`` are the same arrays in every pass: the caller writes a pass's inputs into
    them before :meth:`run`. Between passes, the caller may post a job for a kept
    thread (:meth:`post_job`: the Lloyd pass's next draws, made while the caller
    computes the next centres) and take it back if no thread took it
    (:meth:`take_back_job`).

    Raises
    ------
    RuntimeError
        (from :meth:`run`) A task raised in compiled code.
    """

    def __init__(self, worker, args, n_tasks, n_threads):
        from . import _compiled_tasks as tasks  # numba: imported at first use

        self._tasks = tasks
        self._worker, self._args, self._n_tasks = worker, args, n_tasks
        self._state = tasks.new_state(n_tasks)
        self._helpers = max(min(n_threads, n_tasks) - 1, 0)
        self._futures = []
        self._passes = 0
        kept = _kept.get(threading.get_ident())
        self._linger = tasks.WAIT_SPINS if kept is not None else 0
        if kept is not None:
            kept.append(self)
        # Threads still waiting when this is dropped unclosed stop at once.
        self._finalizer = weakref.finalize(self, tasks.stop, self._state)

    @property
    def closed(self):
        """Whether these passes were stopped (:meth:`close`, or an error)."""
        return not self._finalizer.alive

    def run(self, prepare=None):
        """One pass. ``prepare(first_task)``, if given, runs on the calling thread after
        the pass is published and before the caller takes tasks (the Lloyd pass's
        draws, published as they are made; ``first_task`` is the ticket of the pass's
        first task, see :mod:`~skhybrid.utils._compiled_tasks`). If it raises, or the
        caller's own call does, the threads stop, are waited for, and the error is
        raised; no later pass runs."""
        tasks, state = self._tasks, self._state
        if self.closed:
            raise RuntimeError("these compiled passes were stopped")
        first_task = self._passes * self._n_tasks
        if self._helpers == 0:
            self._passes += 1
            tasks.start_pass(state, 0)
            self._call(prepare, first_task)
        else:
            pool = shared_pool()
            # Placed already: a thread of the pool, or a caller inside cores_apart.
            placed = (threading.get_native_id() in _pool["threads"]
                      or threading.get_ident() in _callers)
            with nullcontext() if placed else cores_apart():
                self._passes += 1
                missing = tasks.start_pass(state, self._helpers)
                self._futures = [future for future in self._futures if not future.done()]
                self._futures += [pool.submit(self._worker, state, self._linger, *self._args)
                                  for _ in range(missing)]
                self._call(prepare, first_task)
                # Every task is taken: a thread of the pool still in one ends it soon
                # (unless descheduled on a busy machine: then sleep between waits).
                while not tasks.wait_for_tasks(state, self._passes, tasks.WAIT_SPINS):
                    time.sleep(1e-4)
        failed = state[tasks.FAILED]
        errors = [future.exception() for future in self._futures
                  if future.done() and not future.cancelled() and future.exception()]
        if failed or errors:
            self.close()
        if errors:  # the call itself raised in a thread of the pool
            raise errors[0]
        if failed:
            raise RuntimeError("a task of a compiled pass raised (out of memory?)")

    def post_job(self):
        """Post a job for a thread of the pool that waits for the next pass (what
        ``worker`` does with it: see :func:`~skhybrid.utils._kernels.lloyd_tasks`),
        its inputs written before; False where no thread is kept between passes."""
        if self._linger == 0 or self._helpers == 0 or self.closed:
            return False
        self._tasks.post_job(self._state, self._passes + 1)
        return True

    def take_back_job(self):
        """Before the next pass: True if no thread took the posted job (the caller must
        do it), False if one did."""
        return bool(self._tasks.withdraw_job(self._state, self._passes + 1))

    def _call(self, prepare, first_task):
        """The caller's part of a pass: ``prepare``, then its tasks."""
        finished = False
        try:
            if prepare is not None:
                prepare(first_task)
            self._worker(self._state, self._tasks.CALLER, *self._args)
            finished = True
        finally:
            if not finished:
                self.close(wait=True)

    def close(self, *, wait=False):
        """No more passes: the threads kept waiting stop (with ``wait``, the started
        ones are waited for)."""
        self._finalizer()  # stop(state), once
        for future in self._futures:
            # A thread not started yet is not needed.
            if not future.cancel() and wait:
                future.exception()  # waits; the caller's error, if any, stands


@contextmanager
def iteration_threads():
    """:func:`cores_apart` and :func:`kept_threads` together: for a fit's iterations."""
    with cores_apart(), kept_threads():
        yield


#: The calling threads inside :func:`kept_threads`: thread id -> its passes to close.
_kept = {}


@contextmanager
def kept_threads():
    """While in it, the pool's threads of this thread's :class:`CompiledTasks` wait for
    their next pass instead of returning to the pool (a fit's iterations); on exit they
    stop. Calls may nest (the outermost closes)."""
    ident = threading.get_ident()
    if ident in _kept:
        yield
        return
    _kept[ident] = []
    try:
        yield
    finally:
        for tasks in _kept.pop(ident):
            tasks.close()


@lru_cache(maxsize=1)
def available_cores():
    """The number of cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def in_parts(function, n_rows, min_rows=2**21):
    """``[function(start, stop), ...]`` over consecutive parts of ``range(n_rows)``.

    The parts run on threads, one per available core, when each part has at least
    ``min_rows`` rows (for fewer, a thread costs more than it saves); else there is one
    part, run here. ``function`` should release the GIL (a compiled kernel does).
    """
    n_parts = max(1, min(available_cores(), n_rows // min_rows))
    bounds = [n_rows * part // n_parts for part in range(n_parts + 1)]
    parts = list(zip(bounds[:-1], bounds[1:]))
    if n_parts == 1:
        return [function(start, stop) for start, stop in parts]
    with ThreadPoolExecutor(n_parts) as pool:
        return list(pool.map(lambda part: function(*part), parts))
