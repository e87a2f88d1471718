"""Empirical privacy audits: check a mechanism or a fitted estimator on neighbouring data."""

from ._histogram import AuditResult, audit_mechanism, audit_samples, estimator_release

__all__ = ["AuditResult", "audit_mechanism", "audit_samples", "estimator_release"]
