"""Differentially private statistics for hybrid trust models."""
