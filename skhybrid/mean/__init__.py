"""Private mean estimators."""

from ._adpm import ADPMEstimator
from ._hybrid import EmptyGroupWarning, HybridMeanEstimator

__all__ = ["ADPMEstimator", "EmptyGroupWarning", "HybridMeanEstimator"]
