"""Private mean estimators."""

from ._hybrid import EmptyGroupWarning, HybridMeanEstimator

__all__ = ["EmptyGroupWarning", "HybridMeanEstimator"]
