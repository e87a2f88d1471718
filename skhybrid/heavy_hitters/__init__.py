"""Heavy hitters: the most popular records and their probabilities.

:class:`BlenderHeavyHitters` is the curator's side of BLENDER (Avent et al. 2017);
:class:`BlenderClient` is LocalAlg, the randomizer clients run on their devices.
"""

from ._blender import WILDCARD, BlenderClient, BlenderHeavyHitters

__all__ = ["WILDCARD", "BlenderClient", "BlenderHeavyHitters"]
