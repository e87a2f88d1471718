"""Noise mechanisms of the two trust models.

Central mechanisms (:class:`LaplaceMechanism`, :class:`GaussianMechanism`,
:class:`ExponentialMechanism`) run on the curator's side; local randomizers
(:class:`LocalLaplaceRandomizer`, :class:`LocalGaussianRandomizer`) run on each user's
device. Every mechanism states its sensitivity under the replace-one neighbouring
relation and exposes the variance of the noise it adds.
"""

from ._calibration import analytic_gaussian_delta, gaussian_noise_multiplier
from ._central import GaussianMechanism, LaplaceMechanism
from ._exponential import ExponentialMechanism
from ._local import LocalGaussianRandomizer, LocalLaplaceRandomizer

__all__ = [
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "LocalGaussianRandomizer",
    "LocalLaplaceRandomizer",
    "analytic_gaussian_delta",
    "gaussian_noise_multiplier",
]
