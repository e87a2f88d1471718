"""Private clustering."""

from ._kmeans import HybridKMeans

__all__ = ["HybridKMeans"]
