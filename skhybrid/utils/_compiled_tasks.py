"""Tasks shared by threads in compiled code: atomic counters and spin waits (numba).

A pass of :func:`~skhybrid.cluster._k_means_lloyd.lloyd_pass` is one compiled call per
thread (:func:`~skhybrid.utils._kernels.lloyd_tasks`) that takes its tasks from an
atomic counter and counts those it finished, so that no thread needs the GIL between
tasks; the caller waits for the other threads' last tasks by spinning in compiled code
(:func:`wait_for_tasks`), not by a lock: measured on the 2-core CI machine, a thread
blocked on a lock was woken 30-40 us after the last task ended, then waited for the GIL,
and the pool's thread started its tasks some 40 us after the caller (it needed the GIL
between its tasks too). A fit's passes can share their threads: a thread of the pool
that has ended its tasks of one pass waits, spinning, for the next
(:func:`next_pass`; :class:`~skhybrid.utils._threads.CompiledTasks`), and starts on it
as soon as the caller publishes it, without a call through the pool.

The shared state (:func:`new_state`) is an int64 array with a counter per cache line,
all counted over the passes (never reset: a thread late from one pass cannot take a
task of the next):

- ``NEXT_TASK``: the next task to take, as a ticket: pass ``p``'s ``n`` tasks are the
  tickets ``(p - 1) n`` to ``p n - 1``, each taken by one thread (compare and swap,
  only within its pass: :func:`take_task`);
- ``DONE``: the tasks finished, added to after each task's writes (the caller reads it
  with acquire order, so those writes are visible to it);
- ``FAILED``: set when a task raised (the task still counts as done);
- ``ABORT``: set by the caller when it stops (an error, or its last pass ended): the
  threads take no more tasks and stop waiting;
- ``PASS``: the pass in progress, raised by the caller when its inputs are written
  (:func:`start_pass`);
- ``LIVE``: the pool's threads in the call, or submitted to it (:func:`next_pass`);
- ``N_TASKS``: the tasks of each pass (constant);
- ``JOB``: a job the caller posts for a thread that waits for the next pass ``p``
  (:func:`post_job`): ``p`` while posted, ``-p`` once a thread took it
  (:func:`take_job`), 0 when the caller took it back (:func:`withdraw_job`).

Imported where the kernels run (importing numba costs about 0.2 s).
"""

import os

import numba
import numpy as np
from llvmlite import binding, ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

NEXT_TASK, DONE, FAILED, ABORT, PASS, LIVE, N_TASKS, JOB = 0, 8, 16, 24, 32, 40, 48, 56
#: Counters 64 bytes apart: threads updating one do not pass the others' lines around.
STATE_SIZE = 64
#: What :func:`next_pass` returns to a waiting thread of the pool when the caller has
#: posted a job for the next pass (:func:`post_job`).
JOB_POSTED = -1
#: Turns of a spin wait before the waiting thread gives up: the caller's wait for the
#: other threads' last tasks (then it sleeps between waits: a thread descheduled on a
#: busy machine), and a pool thread's wait for the next pass (then it returns to the
#: pool). Each turn after the first ``_PAUSES`` yields the core (some 0.2-1 us), so
#: some 10-60 ms.
WAIT_SPINS = 2**16
#: The ``linger`` of :func:`next_pass` for the caller: it runs the current pass only.
CALLER = -1

_OPTIONS = {"nogil": True, "cache": True, "boundscheck": False}
#: Turns of a spin wait with a pause only, before each turn yields the core.
_PAUSES = 64
_POSIX = os.name == "posix"
_X86 = binding.get_process_triple().split("-")[0] in {"x86_64", "i386", "i486", "i586",
                                                       "i686", "amd64"}


def new_state(n_tasks):
    """The shared state of passes of ``n_tasks`` tasks, before the first (see the
    module's docstring)."""
    state = np.zeros(STATE_SIZE, dtype=np.int64)
    state[N_TASKS] = n_tasks
    return state


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
def _compare_exchange(typingctx, array, index, expected, value):
    """``array[index] = value`` if it holds ``expected``, atomically (sequentially
    consistent); whether it did."""
    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature, args)
        old = context.cast(builder, args[2], signature.args[2], types.int64)
        new = context.cast(builder, args[3], signature.args[3], types.int64)
        pair = builder.cmpxchg(pointer, old, new, "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)
    return types.boolean(array, index, expected, value), codegen


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
def current_pass(state):
    """The pass in progress (0 before the first)."""
    return _load_acquire(state, PASS)


@numba.njit(inline="always", **_OPTIONS)
def take_task(state, current):
    """The next task of pass ``current`` (in ``[0, n_tasks)``), or -1 when it has none
    left or the caller has stopped (``ABORT``). A ticket is taken only within the pass
    (compare and swap): a thread late from a pass never takes one of the next."""
    n_tasks = state[N_TASKS]
    base = (current - 1) * n_tasks
    while True:
        if _load_acquire(state, ABORT):
            return -1
        ticket = _load_acquire(state, NEXT_TASK)
        if ticket >= base + n_tasks:
            return -1
        if _compare_exchange(state, NEXT_TASK, ticket, ticket + 1):
            return ticket - base


@numba.njit(inline="always", **_OPTIONS)
def next_pass(state, current, linger):
    """The pass after ``current`` that this thread takes part in, or 0 for none
    (``JOB_POSTED`` when the caller has posted a job for it meanwhile: see
    :func:`take_job`).

    The caller (``linger`` is ``CALLER``) runs one pass. A thread of the pool waits up
    to ``linger`` turns (:func:`_spin`) for the caller's next pass (:func:`start_pass`),
    then leaves (counted off ``LIVE``). It leaves for good only if no pass came meanwhile:
    it counts itself off, then reads the pass, and the caller raises the pass, then reads
    ``LIVE`` (both sequentially consistent), so that either the caller sees it gone (and
    submits another thread) or it sees the new pass (and stays), or both.
    """
    if linger == CALLER:
        return 0
    count = 0
    while True:
        if _load_acquire(state, ABORT):
            _fetch_add(state, LIVE, -1)
            return 0
        latest = _load_acquire(state, PASS)
        if latest > current:
            return latest
        if _load_acquire(state, JOB) == current + 1:
            return JOB_POSTED
        if count >= linger:
            _fetch_add(state, LIVE, -1)
            if _load_acquire(state, PASS) == current or _load_acquire(state, ABORT):
                return 0
            _fetch_add(state, LIVE, 1)  # a pass came: stays for it
            count = 0
            continue
        _spin(count)
        count += 1


@numba.njit(**_OPTIONS)
def start_pass(state, n_helpers):
    """Publish the next pass (its inputs written before: release order); the number of
    the pool's threads to submit for ``n_helpers`` to take part (counted in ``LIVE``
    now, see :func:`next_pass`)."""
    _fetch_add(state, PASS, 1)
    missing = n_helpers - _load_acquire(state, LIVE)
    if missing <= 0:
        return 0
    _fetch_add(state, LIVE, missing)
    return missing


@numba.njit(inline="always", **_OPTIONS)
def finish_task(state, failed):
    """Count a task done (after its writes), and mark a failure."""
    if failed:
        _store_release(state, FAILED, 1)
    _fetch_add(state, DONE, 1)


#: The slots of a counter of inputs made during a pass (:func:`new_made_counter`): how
#: many (``counter[0]``, :func:`publish`) and what they are made from (``MADE_SOURCE``).
MADE_SOURCE = 8


def new_made_counter():
    """A zeroed counter of inputs made during a pass (see ``MADE_SOURCE``)."""
    return np.zeros(MADE_SOURCE + 8, dtype=np.int64)


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
def post_job(state, upcoming):
    """Post a job for a thread of the pool waiting for pass ``upcoming`` (its inputs
    written before: release order)."""
    _store_release(state, JOB, upcoming)


@numba.njit(inline="always", **_OPTIONS)
def take_job(state, upcoming):
    """Take the job posted for pass ``upcoming`` (True), unless the caller took it back
    or another thread took it first (False)."""
    return _compare_exchange(state, JOB, upcoming, -upcoming)


@numba.njit(**_OPTIONS)
def withdraw_job(state, upcoming):
    """Take back the job posted for pass ``upcoming``: True if no thread took it (the
    caller must do it: also when none was posted), False if one did (it publishes what
    it makes)."""
    if _compare_exchange(state, JOB, upcoming, 0):
        return True
    return _load_acquire(state, JOB) != -upcoming


@numba.njit(**_OPTIONS)
def wait_for_tasks(state, current, spins):
    """Spin until the tasks of pass ``current`` and those before are done; False after
    ``spins`` turns."""
    done = current * state[N_TASKS]
    for count in range(spins):
        if _load_acquire(state, DONE) >= done:
            return True
        _spin(count)
    return _load_acquire(state, DONE) >= done


@numba.njit(**_OPTIONS)
def stop(state):
    """Set ``ABORT`` (release order): the threads take no more tasks and stop waiting."""
    _store_release(state, ABORT, 1)


# Not nogil: called between the caller's draws, it keeps the GIL (no hand-off); also
# called from compiled code (a kept thread's draws).
@numba.njit(cache=True, boundscheck=False)
def publish(counter, value):
    """``counter[0] = value`` with release order: the writes before it (draws) are
    visible to a thread that saw the value (:func:`wait_until_above`)."""
    _store_release(counter, 0, value)
