"""Privacy audit of a whole private search, with a control that has too little noise.

A search's choice on two neighbouring datasets, which replace one held-out tcm user's
value 0 by 1. Its candidates are fit on the same training users on both sides, so the
search's guarantee for that user is ``selection_epsilon`` alone, and the candidates
are built for the exponential mechanism's worst case: one release sits at 0 and four at
1, so the user's move raises one candidate's utility by the loss width and lowers the
four others' by it (privacy loss ln 2.2 = 0.80 at epsilon 1; 1.57 for the control,
whose noise is halved).
"""

import warnings

import numpy as np
import pytest

from skhybrid import HybridMeanEstimator
from skhybrid.audit import audit_samples
from skhybrid.model_selection import PrivateGridSearchCV

pytestmark = pytest.mark.slow

N_SAMPLES = 2000
N_TRAIN = 40
GRID = [{"strategy": ["tcm_only"]}, {"strategy": ["lm_only"], "epsilon": [20, 30, 40, 50]}]


class _HalfNoiseSearch(PrivateGridSearchCV):
    """The control: the exponential mechanism at half its sensitivity (twice epsilon)."""

    @staticmethod
    def _sensitivity(width, plan):
        return PrivateGridSearchCV._sensitivity(width, plan) / 2


def _neighbours():
    # Training: tcm users at 0, lm users at 1; the last user is the held-out tcm user.
    X = np.concatenate([np.zeros(N_TRAIN), np.ones(N_TRAIN), [0.0]])[:, None]
    trust = np.array(["tcm"] * N_TRAIN + ["lm"] * N_TRAIN + ["tcm"])
    X_prime = X.copy()
    X_prime[-1] = 1.0
    split = [(np.arange(2 * N_TRAIN), np.array([2 * N_TRAIN]))]
    return X, X_prime, trust, split


def _choices(search_class, X, trust, split, rng):
    choices = np.empty(N_SAMPLES)
    for i in range(N_SAMPLES):
        search = search_class(HybridMeanEstimator(bounds=(0, 1)), GRID, cv=split,
                              selection="exponential", selection_epsilon=1.0, refit=False,
                              random_state=int(rng.integers(2**32)))
        choices[i] = search.fit(X, trust_group=trust).best_index_
    return choices


@pytest.mark.parametrize("search_class, passes", [
    (PrivateGridSearchCV, True), (_HalfNoiseSearch, False)])
def test_the_search_passes_the_audit_at_its_selection_epsilon_and_the_control_fails(
        search_class, passes):
    X, X_prime, trust, split = _neighbours()
    rng = np.random.default_rng(11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        choices = _choices(search_class, X, trust, split, rng)
        choices_prime = _choices(search_class, X_prime, trust, split, rng)
    # The candidates are what the worst case needs: 0 wins on X, the others on X'.
    assert np.mean(choices == 0) > np.mean(choices_prime == 0)
    result = audit_samples(choices, choices_prime, epsilon=1.0)
    assert result.passed is passes, str(result)
