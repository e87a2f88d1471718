"""Datasets: the bundled synthetic salaries and data generators."""

from ._salaries import load_salaries, make_salaries

__all__ = ["load_salaries", "make_salaries"]
