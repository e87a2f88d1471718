"""The ``clamp`` option: the released mean projected onto the bounds (issue 14, §3)."""

import warnings

import numpy as np
import pytest

from skhybrid import ADPMEstimator, HybridMeanEstimator, MixedMeanEstimator, PDPSampleEstimator

RNG = np.random.default_rng(0)
X = RNG.uniform(0, 100, size=(50, 2))
TRUST = np.where(np.arange(50) < 25, "tcm", "lm")

MAKERS = {
    "hybrid": (lambda **kw: HybridMeanEstimator(bounds=(0, 100), **kw), {"trust_group": TRUST}),
    "adpm": (lambda **kw: ADPMEstimator(bounds=(0, 100), **kw), {}),
    "mixed": (lambda **kw: MixedMeanEstimator(bounds=(0, 100), **kw), {}),
    "pdp": (lambda **kw: PDPSampleEstimator(bounds=(0, 100), **kw), {}),
}


@pytest.mark.parametrize("name", list(MAKERS))
def test_clamp_projects_the_same_release_onto_the_bounds(name):
    make, metadata = MAKERS[name]
    # ADPM shrinks to the midpoint at epsilon 0.01 (weights 0): it leaves the bounds at 0.1.
    epsilon = 0.1 if name == "adpm" else 0.01
    left = 0
    for seed in range(20):
        raw = make(epsilon=epsilon, random_state=seed).fit(X, **metadata)
        clamped = make(epsilon=epsilon, clamp=True, random_state=seed).fit(X, **metadata)
        # Same noise, then the projection: within the bounds, and never farther from
        # the mean of the clipped data than the unclamped release.
        assert np.all((clamped.mean_ >= 0) & (clamped.mean_ <= 100))
        np.testing.assert_array_equal(clamped.mean_, np.clip(raw.mean_, 0, 100))
        truth = X.mean(axis=0)
        assert np.all(np.abs(clamped.mean_ - truth) <= np.abs(raw.mean_ - truth))
        np.testing.assert_array_equal(clamped.expected_mse_, raw.expected_mse_)
        left += int(np.any((raw.mean_ < 0) | (raw.mean_ > 100)))
    assert left > 0  # the unclamped default does leave the bounds at this epsilon


@pytest.mark.parametrize("name", ["hybrid", "adpm", "mixed"])
def test_clamp_applies_to_stream_releases(name):
    make, metadata = MAKERS[name]
    estimator = make(epsilon=0.01, clamp=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(10):
            estimator.partial_fit(X, **metadata)
            assert np.all((estimator.mean_ >= 0) & (estimator.mean_ <= 100))


def test_clamp_is_validated():
    with pytest.raises(ValueError, match="clamp"):
        HybridMeanEstimator(bounds=(0, 1), clamp="yes").fit(X)
