"""Preprocessing for private pipelines: a private standard scaler and a public bounds scaler."""

from ._bounds import BoundsScaler
from ._standard import HybridStandardScaler

__all__ = ["BoundsScaler", "HybridStandardScaler"]
