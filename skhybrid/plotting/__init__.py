"""Plots in the style of scikit-learn's Display objects (needs the ``plot`` extra: matplotlib)."""

from ._comparison import ComparisonDisplay
from ._curve import CurveDisplay

__all__ = ["ComparisonDisplay", "CurveDisplay"]
