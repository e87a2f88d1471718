"""Private mean (and quantile) estimators."""

from ._adpm import ADPMEstimator
from ._hybrid import EmptyGroupWarning, HybridMeanEstimator
from ._mixed import MixedMeanEstimator, MixedQuantileEstimator
from ._pdp import PDPSampleEstimator

__all__ = [
    "ADPMEstimator",
    "EmptyGroupWarning",
    "HybridMeanEstimator",
    "MixedMeanEstimator",
    "MixedQuantileEstimator",
    "PDPSampleEstimator",
]
