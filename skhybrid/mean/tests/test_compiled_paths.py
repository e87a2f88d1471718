"""A fit sums the same integers whether numpy, numba's kernels or the C extension add them.

Small inputs go through numpy's passes and large ones through numba's kernels
(``skhybrid.utils._sums._compiled``), the hybrid mean's through the C extension where
it is installed; a seeded release must not depend on which.
"""

import warnings

import numpy as np
import pytest

from skhybrid import ADPMEstimator, HybridMeanEstimator, MixedMeanEstimator, PDPSampleEstimator
from skhybrid.utils.tests.test_sums import force_path

N = 20_000


def _data():
    rng = np.random.default_rng(3)
    X = rng.normal(0.5, 0.6, (N, 2))  # some values outside the bounds
    is_tcm = rng.random(N) < 0.3
    epsilon = np.round(rng.uniform(0.2, 4.0, 300), 3)[rng.integers(0, 300, N)]
    return X, is_tcm, epsilon


CASES = {
    "hybrid tcm_only": (HybridMeanEstimator("tcm_only", bounds=(0, 1), random_state=1), "none"),
    "hybrid kvh": (HybridMeanEstimator(bounds=(0, 1), random_state=1), "trust"),
    "hybrid local reports": (
        HybridMeanEstimator(bounds=(0, 1), local_reports=True, random_state=1), "trust"),
    "adpm many levels": (ADPMEstimator(bounds=(0, 1), random_state=1), "epsilon"),
    "adpm hybrid": (ADPMEstimator(bounds=(0, 1), random_state=1), "both"),
    "pdp many levels": (PDPSampleEstimator(bounds=(0, 1), random_state=1), "epsilon"),
    "mixed many levels": (MixedMeanEstimator(bounds=(0, 1), random_state=1), "epsilon"),
}


def _fitted(estimator, metadata, monkeypatch, path):
    X, is_tcm, epsilon = _data()
    kwargs = {"none": {}, "trust": {"trust_group": is_tcm}, "epsilon": {"epsilon": epsilon},
              "both": {"trust_group": is_tcm, "epsilon": epsilon}}[metadata]
    with monkeypatch.context() as patch:
        force_path(patch, path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = estimator.fit(X, **kwargs)
    # Fitted attributes and properties (mean_ reads the release).
    names = [name for name in dir(fitted) if name.endswith("_") and not name.startswith("_")]
    return {name: getattr(fitted, name) for name in names if hasattr(fitted, name)}


# The C extension sums the hybrid mean's moments only.
@pytest.mark.parametrize("case, other_path", [
    (case, path) for case in CASES for path in ["compiled", "native"]
    if path == "compiled" or case.startswith("hybrid")])
def test_numpy_and_compiled_sums_give_the_same_seeded_release(case, other_path, monkeypatch):
    """numpy's passes against numba's kernels, and against the C extension's moment
    sums (the hybrid mean's; the other estimators' sums are numpy's on that path)."""
    estimator, metadata = CASES[case]
    by_numpy = _fitted(estimator, metadata, monkeypatch, "numpy")
    compiled = _fitted(estimator, metadata, monkeypatch, other_path)
    assert by_numpy.keys() == compiled.keys() and "mean_" in by_numpy
    for name, value in by_numpy.items():
        if case == "hybrid local reports" and name in ("mean_", "variance_"):
            # lm users' reports (already private) are added in float64 in whatever
            # order vectorizes: equal up to that rounding, not bit for bit.
            np.testing.assert_allclose(value, compiled[name], rtol=1e-12)
        elif isinstance(value, np.ndarray) and value.dtype.kind in "fiub":
            assert value.tobytes() == compiled[name].tobytes(), name
        else:
            assert repr(value) == repr(compiled[name]), name
