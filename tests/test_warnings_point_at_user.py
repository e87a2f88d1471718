"""Warnings point at the user's line, however deep the fit ran (issue 49, item 4).

:func:`skhybrid.exceptions.warn_user` warns at the first frame outside skhybrid,
scikit-learn and joblib: no stack level is counted by hand.
"""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skhybrid import ADPMEstimator, HybridKMeans, HybridMeanEstimator, PDPSampleEstimator
from skhybrid.exceptions import (
    EmptyGroupWarning,
    PrivacyLeakWarning,
    WorstCaseVarianceWarning,
    warn_user,
)

RNG = np.random.default_rng(0)
X = RNG.uniform(0, 1, size=(300, 1))
TRUST = np.where(RNG.random(300) < 0.5, "tcm", "lm")

# (estimator, fit metadata, the warning it gives)
CASES = {
    "bounds=None": (HybridMeanEstimator(random_state=0), {"trust_group": TRUST},
                    PrivacyLeakWarning),
    "no trust_group": (HybridMeanEstimator(bounds=(0, 1), random_state=0), {},
                       EmptyGroupWarning),
    "worst-case variance": (HybridMeanEstimator("kvh", bounds=(0, 1), variance=None,
                                                random_state=0), {"trust_group": TRUST},
                            WorstCaseVarianceWarning),
    "ADPM bounds=None": (ADPMEstimator(random_state=0), {}, PrivacyLeakWarning),
    "PDP bounds=None": (PDPSampleEstimator(random_state=0), {}, PrivacyLeakWarning),
    "K-means without trust_group": (HybridKMeans(2, bounds=(0, 1), random_state=0), {},
                                    EmptyGroupWarning),
}


def _filenames(category, run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    filenames = {record.filename for record in caught if issubclass(record.category, category)}
    assert filenames, f"no {category.__name__}"
    return filenames


@pytest.mark.parametrize("case", CASES)
def test_a_direct_fit_warns_at_the_users_line(case):
    estimator, metadata, category = CASES[case]
    assert _filenames(category, lambda: estimator.fit(X, **metadata)) == {__file__}


@pytest.mark.parametrize("case", CASES)
def test_a_fit_through_a_pipeline_warns_at_the_users_line(case):
    estimator, metadata, category = CASES[case]
    pipeline = make_pipeline(FunctionTransformer(), estimator)
    step = pipeline.steps[-1][0]
    routed = {f"{step}__{key}": value for key, value in metadata.items()}
    assert _filenames(category, lambda: pipeline.fit(X, **routed)) == {__file__}


@pytest.mark.parametrize("case", [case for case in CASES if "K-means" not in case])
def test_a_fit_through_cross_validate_warns_at_the_users_line(case):
    estimator, metadata, category = CASES[case]
    assert _filenames(category, lambda: cross_validate(estimator, X, cv=3, params=metadata,
                                                       error_score="raise")) == {__file__}


def test_partial_fit_warns_at_the_users_line():
    estimator = HybridMeanEstimator(bounds=(0, 1), random_state=0)
    assert _filenames(EmptyGroupWarning, lambda: estimator.partial_fit(X)) == {__file__}


def test_warn_user_skips_every_skhybrid_frame():
    from skhybrid.utils._validation import resolve_bounds

    assert _filenames(PrivacyLeakWarning, lambda: resolve_bounds(None, X)) == {__file__}
    assert _filenames(UserWarning, lambda: warn_user("here", UserWarning)) == {__file__}
