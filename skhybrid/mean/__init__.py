"""Private mean (and quantile) estimators."""

from ._adpm import ADPMEstimator
from ._hybrid import EmptyGroupWarning, HybridMeanEstimator
from ._mixed import MixedMeanEstimator, MixedQuantileEstimator
from ._pdp import PDPSampleEstimator
from ._pdp_quantile import PDPQuantileEstimator
from ._ranking import expected_mse, rank_by_expected_mse

__all__ = [
    "ADPMEstimator",
    "EmptyGroupWarning",
    "HybridMeanEstimator",
    "MixedMeanEstimator",
    "MixedQuantileEstimator",
    "PDPQuantileEstimator",
    "PDPSampleEstimator",
    "expected_mse",
    "rank_by_expected_mse",
]
