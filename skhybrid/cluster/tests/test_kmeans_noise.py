"""HybridKMeans says when its answer is noise: centre_noise_, its warning, n_clusters refused."""

import warnings

import numpy as np
import pytest

from skhybrid.cluster import HybridKMeans
from skhybrid.cluster._k_means_statistics import _ClusterMeans, centre_noise_variance
from skhybrid.exceptions import NoisyCentresWarning

CORNERS = np.array([[0.2, 0.2], [0.2, 0.8], [0.8, 0.2], [0.8, 0.8]])


def _blobs(n, tcm_fraction, seed=0):
    rng = np.random.default_rng(seed)
    X = np.clip(CORNERS[rng.integers(0, 4, n)] + rng.normal(0.0, 0.03, (n, 2)), 0, 1)
    trust = np.where(np.arange(n) < int(tcm_fraction * n), "tcm", "lm")
    return X, trust


def test_centre_noise_variance_is_that_of_the_weighted_merge():
    tcm = _ClusterMeans(np.zeros((3, 1)), np.array([5.0, 5.0, 0.0]),
                        np.array([True, True, False]), np.array([[0.04], [0.04], [np.nan]]))
    lm = _ClusterMeans(np.zeros((3, 1)), np.array([9.0, 0.0, 9.0]),
                       np.array([True, False, True]), np.array([[0.01], [np.nan], [0.01]]))
    weight = np.array([[0.2], [1.0], [0.0]])
    variance = centre_noise_variance(tcm, lm, weight)
    np.testing.assert_allclose(variance[:, 0], [0.2**2 * 0.04 + 0.8**2 * 0.01, 0.04, 0.01])
    assert np.isnan(centre_noise_variance(tcm, lm, np.full((3, 1), np.nan))).all()


def test_centre_noise_matches_the_spread_of_the_centres_over_the_noise():
    # Fixed data, the noise redrawn: the centres' spread is the noise the fit reports.
    X, trust = _blobs(20_000, 0.5)
    init = CORNERS + 0.05
    fits = [HybridKMeans(4, epsilon=2.0, n_iter=1, init=init, bounds=(0, 1),
                         random_state=seed).fit(X, trust_group=trust) for seed in range(200)]
    centres = np.array([km.cluster_centers_ for km in fits])
    observed = np.sqrt(np.sum(np.var(centres, axis=0), axis=1))
    reported = np.mean([km.centre_noise_ for km in fits], axis=0)
    # 200 draws: the standard deviation's relative standard error is about 5%.
    np.testing.assert_allclose(observed, reported, rtol=0.2)


def test_a_few_hundred_users_get_a_warning_and_many_do_not():
    X, trust = _blobs(300, 0.05)
    with pytest.warns(NoisyCentresWarning, match="centres are mostly noise") as caught:
        km = HybridKMeans(4, epsilon=1.0, bounds=(0, 1), random_state=0).fit(
            X, trust_group=trust)
    assert len([w for w in caught if w.category is NoisyCentresWarning]) == 1  # once a fit
    assert (~(km.centre_noise_ <= 0.25 * np.sqrt(2))).any()
    X, trust = _blobs(200_000, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoisyCentresWarning)
        km = HybridKMeans(4, epsilon=2.0, bounds=(0, 1), random_state=0).fit(
            X, trust_group=trust)
    assert (km.centre_noise_ < 0.25 * np.sqrt(2)).all()


def test_more_clusters_than_samples_is_refused_as_scikit_learn_does():
    X, trust = _blobs(3, 0.5)
    with pytest.raises(ValueError, match="n_samples=3 should be >= n_clusters=4"):
        HybridKMeans(4, bounds=(0, 1)).fit(X, trust_group=trust)
