"""Progress bars for long runs (reproductions, Monte Carlo comparisons)."""

import sys

from tqdm.auto import tqdm


def progress_bar(iterable=None, *, total=None, description=None, enabled=True):
    """Wrap ``iterable`` in a tqdm progress bar written to stderr.

    Parameters
    ----------
    iterable : iterable or None
        What to iterate over; ``None`` gives a bar updated by hand (``bar.update(k)``).
    total : int or None
        Number of steps when ``iterable`` has no length.
    description : str or None
        Shown before the bar.
    enabled : bool, default=True
        ``False`` returns a bar that prints nothing (library calls, tests).

    Returns
    -------
    bar : tqdm.tqdm
    """
    return tqdm(
        iterable, total=total, desc=description, disable=not enabled, file=sys.stderr,
        leave=False, dynamic_ncols=True,
    )
