"""Threads: the cores this process may use, and BLAS kept to one thread inside parallel work."""

import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
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
        _pool["pool"] = ThreadPoolExecutor(available_cores(), thread_name_prefix="skhybrid")
    return _pool["pool"]


def run_tasks(function, n_tasks, n_threads):
    """``[function(0), ..., function(n_tasks - 1)]``, computed by ``n_threads`` threads.

    The calling thread and ``n_threads - 1`` threads of :func:`shared_pool` each take
    the next task not yet taken, in order, until none is left: the tasks start in order
    (a task may wait for one started before it), the load balances when a core is busy
    with other work, and no thread waits idle for the others to be scheduled.
    ``function`` should release the GIL (a compiled kernel does).
    """
    results = [None] * n_tasks
    next_task = itertools.count()

    def work():
        for task in next_task:  # next() on a count is atomic under the GIL
            if task >= n_tasks:
                return
            results[task] = function(task)

    helpers = [shared_pool().submit(work) for _ in range(min(n_threads, n_tasks) - 1)]
    try:
        work()
    finally:
        # Every task is taken: a helper not started yet (the pool busy with other
        # work, or this call made from one of its threads) is not waited for.
        for helper in helpers:
            if not helper.cancel():
                helper.result()
    return results


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
