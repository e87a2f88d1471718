"""Validation and randomness helpers shared by every estimator."""

from ._random import check_random_state, secure_generator
from ._validation import (
    check_bounds,
    check_epsilon,
    check_sample_epsilon,
    check_trust_group,
    clip_to_bounds,
    resolve_bounds,
)

__all__ = [
    "check_bounds",
    "check_epsilon",
    "check_random_state",
    "check_sample_epsilon",
    "check_trust_group",
    "clip_to_bounds",
    "resolve_bounds",
    "secure_generator",
]
