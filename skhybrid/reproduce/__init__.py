"""Regenerate the papers' headline figures and tables (``skhybrid reproduce NAME``).

Each reproduction is a function ``f(*, quick=False, random_state=0, progress=False)``
(the arguments of :func:`reproduce`) returning a :class:`Reproduction`: the numbers as
a table (written as CSV) and how to plot them (written as PNG). ``quick=True`` runs
fewer Monte Carlo trials or a smaller grid, for tests and a first look.
"""

from ._avent import REPRODUCTIONS as _AVENT
from ._base import Panel, Reproduction
from ._blender import REPRODUCTIONS as _BLENDER
from ._chaudhuri import REPRODUCTIONS as _CHAUDHURI
from ._dubey import REPRODUCTIONS as _DUBEY
from ._ferrando import REPRODUCTIONS as _FERRANDO
from ._kmeans import REPRODUCTIONS as _KMEANS

#: Every reproduction by name, in the order of the papers' README.
REPRODUCTIONS = {
    **_AVENT, **_DUBEY, **_CHAUDHURI, **_FERRANDO, **_KMEANS, **_BLENDER,
}


def reproduce(name, *, quick=False, random_state=0, progress=False):
    """Run the reproduction ``name`` and return its :class:`Reproduction`.

    Parameters
    ----------
    name : str
        One of :data:`REPRODUCTIONS`.
    quick : bool, default=False
        Fewer trials or a coarser grid.
    random_state : int, default=0
        Seed of the simulation (reproductions are simulations, never releases).
    progress : bool, default=False
        Show a progress bar on stderr.

    Returns
    -------
    reproduction : Reproduction
    """
    if name not in REPRODUCTIONS:
        raise ValueError(
            f"unknown reproduction {name!r}; choose one of: {', '.join(REPRODUCTIONS)}"
        )
    return REPRODUCTIONS[name](quick=quick, random_state=random_state, progress=progress)


__all__ = ["REPRODUCTIONS", "Panel", "Reproduction", "reproduce"]
