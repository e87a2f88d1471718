"""skhybrid: differentially private statistics for hybrid trust models, as scikit-learn estimators."""

from .mean import HybridMeanEstimator

__version__ = "0.1.0.dev0"

__all__ = ["HybridMeanEstimator", "__version__"]
