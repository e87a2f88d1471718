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

from ._adpm import __all__ as _adpm_all
from ._adpm import *  # noqa: F401,F403
from ._adpm_baselines import __all__ as _adpm_baselines_all
from ._adpm_baselines import *  # noqa: F401,F403
from ._adpm_common import __all__ as _adpm_common_all
from ._adpm_common import *  # noqa: F401,F403
from ._adpm_two_groups import __all__ as _adpm_two_groups_all
from ._adpm_two_groups import *  # noqa: F401,F403
from ._blender import __all__ as _blender_all
from ._blender import *  # noqa: F401,F403
from ._blender_local import __all__ as _blender_local_all
from ._blender_local import *  # noqa: F401,F403
from ._blender_metrics import __all__ as _blender_metrics_all
from ._blender_metrics import *  # noqa: F401,F403
from ._hybrid import __all__ as _hybrid_all
from ._hybrid import *  # noqa: F401,F403
from ._mixed import (
    group_mean_noise_scale,
    group_mean_variance,
    inverse_variance_weights,
    mixed_mean_variance,
    mixed_mean_weights,
    mixed_quantile_weights,
    mse_about_empirical_mean,
    optimal_sample_threshold,
    sample_mechanism_mse,
    sample_mechanism_probabilities,
    sample_mechanism_thresholds,
)

__all__ = sorted(
    _hybrid_all
    + _adpm_all
    + _adpm_baselines_all
    + _adpm_common_all
    + _adpm_two_groups_all
    + _blender_all
    + _blender_local_all
    + _blender_metrics_all
    + [
        "group_mean_noise_scale",
        "group_mean_variance",
        "inverse_variance_weights",
        "mixed_mean_variance",
        "mixed_mean_weights",
        "mixed_quantile_weights",
        "mse_about_empirical_mean",
        "optimal_sample_threshold",
        "sample_mechanism_mse",
        "sample_mechanism_probabilities",
        "sample_mechanism_thresholds",
    ]
)
