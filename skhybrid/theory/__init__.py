"""Closed-form theory of the papers skhybrid implements.

Each formula lives once, in a function that cites its paper and equation; the
estimators, examples and tests call these functions.

- Hybrid-model mean estimation (Avent, Dubey and Korolova 2020; Dubey and Korolova):
  baseline and hybrid MSEs, KVH / PWH / naive weights, relative improvements, critical
  values, R_max and privacy amplification.
- Combining public and private data (Ferrando, Gillenwater and Kulesza): the Sample
  mechanism of Jorgensen et al., its optimal threshold, inverse-variance mixing.
- ADPM (Chaudhuri and Courtade): the weight program solved exactly or by cvxpy, its
  hybrid extension, two-group closed forms, saturation and the baselines.
- BLENDER (Avent et al. 2017): LocalAlg, denoising, variances, blending and the
  list-of-lists NDCG.
"""

from . import (
    _adpm,
    _adpm_baselines,
    _adpm_common,
    _adpm_two_groups,
    _blender,
    _blender_local,
    _blender_metrics,
    _hybrid,
    _mixed,
)
from ._adpm import *  # noqa: F401,F403
from ._adpm_baselines import *  # noqa: F401,F403
from ._adpm_common import *  # noqa: F401,F403
from ._adpm_two_groups import *  # noqa: F401,F403
from ._blender import *  # noqa: F401,F403
from ._blender_local import *  # noqa: F401,F403
from ._blender_metrics import *  # noqa: F401,F403
from ._hybrid import *  # noqa: F401,F403
from ._mixed import *  # noqa: F401,F403

__all__ = sorted(
    name
    for module in (_adpm, _adpm_baselines, _adpm_common, _adpm_two_groups, _blender,
                   _blender_local, _blender_metrics, _hybrid, _mixed)
    for name in module.__all__
)
