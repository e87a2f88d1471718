"""Datasets: the bundled synthetic salaries and data generators."""

from ._salaries import load_salaries, make_salaries
from ._search_logs import make_search_logs

__all__ = ["load_salaries", "make_salaries", "make_search_logs"]
