"""Heavy hitters: the most popular records and their probabilities.

:class:`BlenderHeavyHitters` is the curator's side of BLENDER (Avent et al. 2017);
:class:`BlenderClient` is LocalAlg, the randomizer clients run on their devices.
"""

from ._blender import BlenderHeavyHitters
from ._client import BlenderClient
from ._records import WILDCARD

__all__ = ["WILDCARD", "BlenderClient", "BlenderHeavyHitters"]
