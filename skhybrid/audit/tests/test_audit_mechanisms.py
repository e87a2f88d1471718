"""Every mechanism passes the histogram privacy audit; with too little noise it fails."""

import numpy as np
import pytest

from skhybrid.audit import audit_mechanism, audit_samples
from skhybrid.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    LocalGaussianRandomizer,
    LocalLaplaceRandomizer,
)

N_SAMPLES = 200_000
WEAKER = 1.4  # the control divides the noise scale by this


def _central_release(mechanism, value):
    return lambda n, rng: mechanism.randomise(np.full((n, 1), value), random_state=rng)[:, 0]


def _local_release(randomizer, value, epsilon):
    # One user's report; the neighbour replaces the value by one far outside the bounds.
    return lambda n, rng: randomizer.privatize(np.full(n, value), epsilon=epsilon, random_state=rng)


class _WeakLocalGaussian(LocalGaussianRandomizer):
    """The local Gaussian randomizer with its noise standard deviation divided by 1.4."""

    def _multiplier(self, eps):
        return super()._multiplier(eps) / WEAKER


def _cases(weaken):
    divisor = WEAKER if weaken else 1.0
    laplace = LaplaceMechanism(epsilon=1.0, sensitivity=0.1 / divisor)
    gaussian = GaussianMechanism(epsilon=1.0, delta=1e-3, sensitivity=0.1 / divisor)
    local_laplace = LocalLaplaceRandomizer(bounds=(0.0, 1.0))
    local_gaussian = (_WeakLocalGaussian if weaken else LocalGaussianRandomizer)(
        bounds=(0.0, 1.0), delta=1e-3
    )
    # Exponential mechanism: one candidate's utility rises by the sensitivity while the
    # other 19 fall by it, the case where its factor 2 is nearly tight.
    exponential = ExponentialMechanism(epsilon=1.0 * divisor, sensitivity=1.0)
    utilities_a = np.zeros(20)
    utilities_b = np.where(np.arange(20) == 0, 1.0, -1.0)
    return {
        "central_laplace": (_central_release(laplace, 0.0), _central_release(laplace, 0.1), 0.0),
        "central_gaussian": (
            _central_release(gaussian, 0.0), _central_release(gaussian, 0.1), 1e-3,
        ),
        "local_laplace": (
            _local_release(local_laplace, 0.0, 1.0 * divisor),
            _local_release(local_laplace, 1e6, 1.0 * divisor),
            0.0,
        ),
        "local_gaussian": (
            _local_release(local_gaussian, 0.0, 1.0),
            _local_release(local_gaussian, 1e6, 1.0),
            1e-3,
        ),
        "exponential": (
            lambda n, rng: exponential.select(utilities_a, size=n, random_state=rng),
            lambda n, rng: exponential.select(utilities_b, size=n, random_state=rng),
            0.0,
        ),
    }


@pytest.mark.parametrize("name", list(_cases(False)))
def test_mechanism_passes_the_audit_at_its_epsilon(name):
    release_a, release_b, delta = _cases(False)[name]
    result = audit_mechanism(release_a, release_b, 1.0, delta, n_samples=N_SAMPLES, random_state=11)
    assert result.passed, str(result)


@pytest.mark.parametrize("name", list(_cases(True)))
def test_audit_fails_when_the_noise_is_divided_by_1_4(name):
    release_a, release_b, delta = _cases(True)[name]
    result = audit_mechanism(release_a, release_b, 1.0, delta, n_samples=N_SAMPLES, random_state=12)
    assert not result.passed, str(result)


def test_audit_of_identical_distributions_finds_no_privacy_loss():
    rng = np.random.default_rng(13)
    result = audit_samples(rng.normal(size=50_000), rng.normal(size=50_000), 0.1)
    assert result.passed and result.delta_hat < result.tolerance


def test_audit_of_disjoint_outputs_finds_delta_one():
    result = audit_samples(np.zeros(1000), np.ones(1000), 5.0)
    assert result.delta_hat == pytest.approx(1.0)
    assert not result.passed


def test_audit_rejects_unequal_sample_sizes():
    with pytest.raises(ValueError, match="equally many"):
        audit_samples(np.zeros(3), np.zeros(4), 1.0)


@pytest.mark.parametrize("divisor, should_pass", [(1.0, True), (WEAKER, False)])
def test_personalized_laplace_protects_each_user_at_their_own_epsilon(divisor, should_pass):
    from skhybrid.mechanisms._noise import personalized_laplace_release

    # Weighted sum of two users' values in [0, 1]: user 0 has epsilon 1, user 1 epsilon 3.
    weights = np.array([0.3, 0.7])
    epsilon = np.array([1.0, 3.0])
    sensitivity = weights / divisor

    def release(values):
        def draw(n, rng):
            statistic = np.full((n, 1), weights @ values)
            return personalized_laplace_release(statistic, sensitivity, epsilon, rng, True)[0][:, 0]
        return draw

    # Replacing user 0 (value 0 -> 1) moves the sum by 0.3: audited at user 0's epsilon.
    result = audit_mechanism(
        release(np.array([0.0, 0.5])), release(np.array([1.0, 0.5])), 1.0,
        n_samples=N_SAMPLES, random_state=14,
    )
    assert result.passed is should_pass, str(result)
