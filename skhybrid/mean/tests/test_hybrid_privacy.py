"""Privacy audit of HybridMeanEstimator's released mean on neighbouring datasets."""

import numpy as np
import pytest

import skhybrid._group_estimates as group_estimates
from skhybrid import HybridMeanEstimator
from skhybrid.audit import audit_mechanism, estimator_release

N_FITS = 5_000
N_BINS = 10
EPSILON = 1.0


def _neighbours(replaced):
    """Ten tcm and ten lm users in [0, 1]; the neighbour replaces one user's value by 1e6."""
    X = np.linspace(0.0, 1.0, 20).reshape(-1, 1)
    trust = np.array(["tcm"] * 10 + ["lm"] * 10)
    X_prime = X.copy()
    index = 0 if replaced == "tcm" else 10
    X_prime[index, 0] = 1e6  # far outside the bounds: clipping must protect it
    return X, X_prime, trust


def _audit(estimator, replaced, delta, seed):
    X, X_prime, trust = _neighbours(replaced)
    release_a = estimator_release(estimator, X, trust_group=trust)
    release_b = estimator_release(estimator, X_prime, trust_group=trust)
    return audit_mechanism(
        release_a, release_b, EPSILON, delta, n_samples=N_FITS, n_bins=N_BINS, random_state=seed
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "replaced, strategy",
    # tcm_only / lm_only isolate the replaced user's group, so no other group's noise
    # hides a leak; kvh audits the combined release.
    [("tcm", "tcm_only"), ("lm", "lm_only"), ("tcm", "kvh"), ("lm", "kvh")],
)
@pytest.mark.parametrize("mechanism, delta", [("laplace", 0.0), ("gaussian", 1e-3)])
def test_released_mean_passes_the_audit_for_a_replaced_user(replaced, strategy, mechanism, delta):
    estimator = HybridMeanEstimator(
        strategy, epsilon=EPSILON, delta=delta, mechanism=mechanism, bounds=(0.0, 1.0)
    )
    result = _audit(estimator, replaced, delta, seed=21)
    assert result.passed, str(result)


@pytest.mark.slow
def test_audit_fails_when_the_central_noise_is_divided_by_1_4(monkeypatch):
    original = group_estimates.central_mechanism

    def weak(mechanism, *, epsilon, delta, ranges, group_size):
        # The same mechanism calibrated for a sensitivity 1.4 times too small.
        return original(mechanism, epsilon=epsilon, delta=delta, ranges=ranges / 1.4,
                        group_size=group_size)

    monkeypatch.setattr(group_estimates, "central_mechanism", weak)
    estimator = HybridMeanEstimator("tcm_only", epsilon=EPSILON, bounds=(0.0, 1.0))
    result = _audit(estimator, "tcm", 0.0, seed=22)
    # Same number of fits and bins as the passing audits: they have the power to see this.
    assert not result.passed, str(result)


def _audit_variance(seed):
    """The released variance estimate (variance="private") of 1,000 tcm users (enough for
    the estimate to carry information; with ten it is clipped to 0 almost always)."""
    X = np.linspace(0.0, 1.0, 1000).reshape(-1, 1)
    # The user at the midpoint moves to the bound: the largest change of (x - mid)**2
    # (from the lower bound to the upper one would not change it at all).
    X[500, 0] = 0.5
    X_prime = X.copy()
    X_prime[500, 0] = 1e6
    trust = np.array(["tcm"] * 1000)
    estimator = HybridMeanEstimator("tcm_only", epsilon=EPSILON, bounds=(0.0, 1.0))
    release_a = estimator_release(estimator, X, attribute="variance_", trust_group=trust)
    release_b = estimator_release(estimator, X_prime, attribute="variance_", trust_group=trust)
    return audit_mechanism(release_a, release_b, EPSILON, n_samples=N_FITS, n_bins=N_BINS,
                           random_state=seed)


@pytest.mark.slow
def test_private_variance_estimate_passes_the_audit():
    # variance_ combines the tcm group's second moment (5% of epsilon) and its mean (95%).
    result = _audit_variance(seed=23)
    assert result.passed, str(result)


@pytest.mark.slow
def test_variance_audit_fails_when_the_second_moment_gets_the_whole_budget(monkeypatch):
    # The second moment calibrated at the whole epsilon, the mean at 95% of it: more
    # than epsilon in total.
    import skhybrid.mean._hybrid as hybrid_module

    # The fit plans its noise before the charge (planned_central_noise) and releases
    # with the plan: the control overspends there.
    original = hybrid_module.planned_central_noise

    def overspent(*args, epsilon, **kwargs):
        if np.all(kwargs["ranges"] == 0.25):  # the second moment's range, (1 / 2)**2
            epsilon = epsilon / hybrid_module.PRIVATE_VARIANCE_SHARE * 4  # 4 epsilon
        return original(*args, epsilon=epsilon, **kwargs)

    monkeypatch.setattr(hybrid_module, "planned_central_noise", overspent)
    result = _audit_variance(seed=24)
    assert not result.passed, str(result)
