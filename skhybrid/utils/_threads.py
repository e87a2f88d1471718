"""Threads: the cores this process may use, and BLAS kept to one thread inside parallel work."""

import os
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


@lru_cache(maxsize=1)
def available_cores():
    """The number of cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
