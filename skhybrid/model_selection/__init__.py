"""Model selection: private grid search, the cost of a search, Monte Carlo comparisons."""

from ._compare import ComparisonResult, compare_estimators
from ._search import PrivateGridSearchCV, search_cost

__all__ = ["ComparisonResult", "PrivateGridSearchCV", "compare_estimators", "search_cost"]
