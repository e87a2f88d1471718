"""Tasks shared by threads in compiled code: atomic counters and spin waits (numba).

A pass of :func:`~skhybrid.cluster._k_means_lloyd.lloyd_pass` is one compiled call per
thread (:func:`~skhybrid.utils._kernels.lloyd_tasks`) that takes its tasks from an
atomic counter and counts those it finished, so that no thread needs the GIL between
tasks; the caller waits for the other threads' last tasks by spinning in compiled code
(:func:`wait_for_tasks`), not by a lock: measured on the 2-core CI machine, a thread
blocked on a lock was woken 30-40 us after the last task ended, then waited for the GIL,
and the pool's thread started its tasks some 40 us after the caller (it needed the GIL
between its tasks too).

The shared state (:func:`new_state`) is an int64 array with a counter per cache line:

- ``NEXT_TASK``: the next task to take (each thread adds one and takes the old value);
- ``DONE``: the tasks finished, added to after each task's writes (the caller reads it
  with acquire order, so those writes are visible to it);
- ``FAILED``: set when a task raised (the task still counts as done);
- ``ABORT``: set by the caller when it stops early: the threads take no more tasks and
  stop waiting.

Imported where the kernels run (importing numba costs about 0.2 s).
"""

import os

import numba
import numpy as np
from llvmlite import binding, ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

NEXT_TASK, DONE, FAILED, ABORT = 0, 8, 16, 24
#: Counters 64 bytes apart: threads updating one do not pass the others' lines around.
STATE_SIZE = 32
#: Turns of the caller's wait for the other threads' last tasks before it blocks on
#: their futures instead (a thread descheduled on a busy machine): each turn after the
#: first ``_PAUSES`` yields the core (some 0.2-1 us), so some 10-60 ms.
WAIT_SPINS = 2**16

_OPTIONS = {"nogil": True, "cache": True, "boundscheck": False}
#: Turns of a spin wait with a pause only, before each turn yields the core.
_PAUSES = 64
_POSIX = os.name == "posix"
_X86 = binding.get_process_triple().split("-")[0] in {"x86_64", "i386", "i486", "i586",
                                                       "i686", "amd64"}


def new_state():
    """Zeroed shared state of one call (see the module's docstring)."""
    return np.zeros(STATE_SIZE, dtype=np.int64)


def _element_pointer(context, builder, signature, args):
    array_type = signature.args[0]
    array = context.make_array(array_type)(context, builder, args[0])
    index = context.cast(builder, args[1], signature.args[1], types.intp)
    return cgutils.get_item_pointer(context, builder, array_type, array, [index])


@intrinsic
def _fetch_add(typingctx, array, index, value):
    """``array[index] += value`` atomically (sequentially consistent); the old value."""
    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature, args)
        increment = context.cast(builder, args[2], signature.args[2], types.int64)
        return builder.atomic_rmw("add", pointer, increment, "seq_cst")
    return types.int64(array, index, value), codegen


@intrinsic
def _load_acquire(typingctx, array, index):
    """``array[index]``, read with acquire order (never hoisted out of a loop)."""
    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature, args)
        return builder.load_atomic(pointer, "acquire", 8)
    return types.int64(array, index), codegen


@intrinsic
def _store_release(typingctx, array, index, value):
    """``array[index] = value`` with release order: the writes before it are visible
    to a thread that reads it with acquire order."""
    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature, args)
        stored = context.cast(builder, args[2], signature.args[2], types.int64)
        builder.store_atomic(stored, pointer, "release", 8)
        return context.get_dummy_value()
    return types.void(array, index, value), codegen


def _call(builder, name, return_type):
    """Emit a call of the function ``name`` (no arguments)."""
    function = cgutils.get_or_insert_function(builder.module,
                                              ir.FunctionType(return_type, []), name)
    builder.call(function, [])


@intrinsic
def _pause(typingctx):
    """A spin-wait hint to the core (x86's ``pause``; nothing elsewhere)."""
    def codegen(context, builder, signature, args):
        if _X86:
            _call(builder, "llvm.x86.sse2.pause", ir.VoidType())
        return context.get_dummy_value()
    return types.void(), codegen


@intrinsic
def _yield_core(typingctx):
    """Let another thread waiting for this core run (POSIX ``sched_yield``; elsewhere
    a pause only)."""
    def codegen(context, builder, signature, args):
        if _POSIX:
            _call(builder, "sched_yield", ir.IntType(32))
        elif _X86:
            _call(builder, "llvm.x86.sse2.pause", ir.VoidType())
        return context.get_dummy_value()
    return types.void(), codegen


@numba.njit(inline="always", **_OPTIONS)
def _spin(count):
    """One turn of a spin wait: a pause, and from the ``_PAUSES``-th turn on, the core
    offered to another thread (a thread of the pool that holds the GIL can share this
    core: measured, a spinning thread kept one from running to the next scheduler tick,
    and the caller waited 2-5 ms for the GIL)."""
    if count < _PAUSES:
        _pause()
    else:
        _yield_core()


@numba.njit(inline="always", **_OPTIONS)
def take_task(state):
    """The next task, or -1 when the caller has stopped (``ABORT``)."""
    if _load_acquire(state, ABORT):
        return -1
    return _fetch_add(state, NEXT_TASK, 1)


@numba.njit(inline="always", **_OPTIONS)
def finish_task(state, failed):
    """Count a task done (after its writes), and mark a failure."""
    if failed:
        _store_release(state, FAILED, 1)
    _fetch_add(state, DONE, 1)


@numba.njit(inline="always", **_OPTIONS)
def wait_until_above(counter, value, state):
    """Spin until ``counter[0] > value`` (:func:`publish`); False if ``ABORT`` came
    first."""
    count = 0
    while _load_acquire(counter, 0) <= value:
        if _load_acquire(state, ABORT):
            return False
        _spin(count)
        count += 1
    return True


@numba.njit(**_OPTIONS)
def wait_for_tasks(state, n_tasks, spins):
    """Spin until ``n_tasks`` tasks are done; False after ``spins`` turns."""
    for count in range(spins):
        if _load_acquire(state, DONE) >= n_tasks:
            return True
        _spin(count)
    return _load_acquire(state, DONE) >= n_tasks


# Not nogil: called between the caller's draws, it keeps the GIL (no hand-off).
@numba.njit(cache=True, boundscheck=False)
def publish(counter, value):
    """``counter[0] = value`` with release order: the writes before it (draws) are
    visible to a thread that saw the value (:func:`wait_until_above`)."""
    _store_release(counter, 0, value)
