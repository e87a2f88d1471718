"""A release with secure noise and no ledger says, once per process, what it spent."""

import warnings

import numpy as np
import pytest

from skhybrid import HybridMeanEstimator, PDPSampleEstimator
from skhybrid.exceptions import UnaccountedReleaseWarning


@pytest.fixture
def fresh_process(monkeypatch):
    monkeypatch.setattr("skhybrid.accounting._costs._UNACCOUNTED", {"warned": False})


def test_the_first_secure_release_without_a_ledger_says_what_it_spent(fresh_process):
    X = np.random.default_rng(0).uniform(size=(250, 1))
    spent = "PDPSampleEstimator .* up to epsilon 0.5 of each of 250 users"
    with pytest.warns(UnaccountedReleaseWarning, match=spent) as record:
        PDPSampleEstimator(epsilon=0.5, bounds=(0, 1)).fit(X)
    assert record[0].filename == __file__  # points at the user's fit
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnaccountedReleaseWarning)
        HybridMeanEstimator("tcm_only", bounds=(0, 1)).fit(X)  # said once per process


def test_a_seeded_simulation_is_not_an_unaccounted_release(fresh_process):
    X = np.random.default_rng(0).uniform(size=(50, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnaccountedReleaseWarning)
        HybridMeanEstimator("tcm_only", bounds=(0, 1), random_state=0).fit(X)
    with pytest.warns(UnaccountedReleaseWarning):
        HybridMeanEstimator("tcm_only", bounds=(0, 1)).fit(X)
