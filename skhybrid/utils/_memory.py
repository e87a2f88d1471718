"""Memories of public computations: recent results, by their public arguments."""


def remember(memory, key, value, limit):
    """``memory[key] = value`` in a dict kept to at most ``limit`` entries; ``value``.

    Emptied when full (a fit's few keys are soon back). For public quantities only
    (a noise plan, the bounds' widths and grids, randomized response's widths): nothing
    kept may depend on private data. Every test empties every memory (``conftest.py``).
    """
    if len(memory) >= limit:
        memory.clear()
    memory[key] = value
    return value
