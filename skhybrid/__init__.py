"""skhybrid: differentially private statistics for hybrid trust models, as scikit-learn estimators.

Users either trust the curator (``"tcm"``, central DP) or randomize their own data
(``"lm"``, local DP), and may each have their own privacy level ``epsilon``. Estimators
take both as per-sample metadata: ``est.fit(X, trust_group=..., epsilon=...)``.
"""

import importlib

# Imported on first use (as scikit-learn does): a ledger command reads the ledger
# without importing every estimator and their libraries.
_SUBMODULES = {"accounting", "audit", "cluster", "datasets", "exceptions", "heavy_hitters",
               "mean", "mechanisms", "model_selection", "plotting", "preprocessing",
               "theory", "utils"}
_NAMES = {"PrivacyLedger": "accounting", "HybridKMeans": "cluster",
          "BlenderHeavyHitters": "heavy_hitters", "ADPMEstimator": "mean",
          "HybridMeanEstimator": "mean", "MixedMeanEstimator": "mean",
          "MixedQuantileEstimator": "mean", "PDPQuantileEstimator": "mean",
          "PDPSampleEstimator": "mean"}


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__

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
