"""skhybrid: differentially private statistics for hybrid trust models, as scikit-learn estimators.

Users either trust the curator (``"tcm"``, central DP) or randomize their own data
(``"lm"``, local DP), and may each have their own privacy level ``epsilon``. Estimators
take both as per-sample metadata: ``est.fit(X, trust_group=..., epsilon=...)``.
"""

from . import (
    accounting,
    audit,
    cluster,
    datasets,
    exceptions,
    heavy_hitters,
    mechanisms,
    model_selection,
    plotting,
    preprocessing,
    theory,
)
from .accounting import PrivacyLedger
from .cluster import HybridKMeans
from .heavy_hitters import BlenderHeavyHitters
from .mean import (
    ADPMEstimator,
    HybridMeanEstimator,
    MixedMeanEstimator,
    MixedQuantileEstimator,
    PDPQuantileEstimator,
    PDPSampleEstimator,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "ADPMEstimator",
    "BlenderHeavyHitters",
    "HybridKMeans",
    "HybridMeanEstimator",
    "MixedMeanEstimator",
    "MixedQuantileEstimator",
    "PDPQuantileEstimator",
    "PDPSampleEstimator",
    "PrivacyLedger",
    "__version__",
    "accounting",
    "audit",
    "cluster",
    "datasets",
    "exceptions",
    "heavy_hitters",
    "mechanisms",
    "model_selection",
    "plotting",
    "preprocessing",
    "theory",
]
