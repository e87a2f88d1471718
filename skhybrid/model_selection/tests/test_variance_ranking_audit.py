"""Privacy audit of a search's ranking route: its one released variance, with a control.

The search over mean estimators releases the data variance once, at
``VARIANCE_RELEASE_SHARE`` of each user's epsilon, then ranks (post-processing) and fits
the chosen candidate at the rest. The variance release is audited here at its share,
on neighbours that move the user at the midpoint to the bound (the largest change of
``(x - mid)**2``), 1,000 tcm users (as the audit of ``variance="private"`` in
skhybrid/mean/tests/test_hybrid_privacy.py, whose control overspends the second
moment). The control here ranks at the data's exact variance, and fails.
"""

import warnings

import numpy as np
import pytest

import skhybrid.model_selection._search as search_module
import skhybrid.model_selection._variance_ranking as ranking_module
from skhybrid import HybridMeanEstimator
from skhybrid.audit import audit_mechanism
from skhybrid.model_selection import PrivateGridSearchCV

pytestmark = pytest.mark.slow

N_FITS = 2_000
N_BINS = 10
SHARE_EPSILON = 1.0  # the variance release's epsilon: the search's epsilon times the share


def _neighbours():
    X = np.linspace(0.0, 1.0, 1000).reshape(-1, 1)
    X[500, 0] = 0.5
    X_prime = X.copy()
    X_prime[500, 0] = 1e6  # clipped to the upper bound
    return X, X_prime, np.array(["tcm"] * 1000)


def _search_release(X, trust):
    epsilon = SHARE_EPSILON / ranking_module.VARIANCE_RELEASE_SHARE

    def release(n_samples, rng):
        values = np.empty(n_samples)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(n_samples):
                estimator = HybridMeanEstimator(bounds=(0.0, 1.0), epsilon=epsilon,
                                                random_state=int(rng.integers(2**32)))
                search = PrivateGridSearchCV(estimator, {"strategy": ["kvh", "tcm_only"]},
                                             refit=False)
                values[i] = search.fit(X, trust_group=trust).variance_[0]
        return values

    return release


def _audit(seed):
    X, X_prime, trust = _neighbours()
    return audit_mechanism(_search_release(X, trust), _search_release(X_prime, trust),
                           SHARE_EPSILON, n_samples=N_FITS, n_bins=N_BINS, random_state=seed)


def test_the_searchs_variance_release_passes_the_audit_at_its_share():
    result = _audit(seed=31)
    assert result.passed, str(result)


class _ExactVariance(HybridMeanEstimator):
    """The control's leak: the ranking variance read from the clipped data, not released."""

    def fit(self, X, y=None, **metadata):
        super().fit(X, y, **metadata)
        self.variance_ = np.var(np.clip(X, 0.0, 1.0), axis=0)
        return self


def test_the_audit_fails_a_search_that_ranks_at_the_exact_variance(monkeypatch):
    original = search_module.variance_fit

    def leaking(estimator, fit_params):
        release, params = original(estimator, fit_params)
        return _ExactVariance(**release.get_params()), params

    monkeypatch.setattr(search_module, "variance_fit", leaking)
    result = _audit(seed=32)
    assert not result.passed, str(result)
