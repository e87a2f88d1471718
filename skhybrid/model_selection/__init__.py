"""Comparing private estimators: Monte Carlo error over repeated fits."""

from ._compare import ComparisonResult, compare_estimators

__all__ = ["ComparisonResult", "compare_estimators"]
