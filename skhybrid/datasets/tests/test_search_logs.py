"""make_search_logs: shapes, reproducibility and the stated Zipf laws."""

import numpy as np
import pytest
from scipy import stats

from skhybrid.datasets._search_logs import make_search_logs


def _zipf(n_items, exponent):
    weights = np.arange(1, n_items + 1, dtype=float) ** -exponent
    return weights / weights.sum()


def _chi_square_pvalue(observed_ids, probabilities, n_head):
    """Chi-square p-value of observed ids against `probabilities`, head ids plus a tail bin."""
    counts = np.bincount(observed_ids, minlength=probabilities.size)
    observed = np.r_[counts[:n_head], counts[n_head:].sum()]
    expected = observed.sum() * np.r_[probabilities[:n_head], probabilities[n_head:].sum()]
    return stats.chisquare(observed, expected).pvalue


def test_records_are_an_int_array_of_query_and_url_ids_in_range():
    X = make_search_logs(5000, n_queries=50, urls_per_query=4, random_state=0)
    assert X.shape == (5000, 2)
    assert X.dtype == np.int64
    assert X[:, 0].min() >= 0 and X[:, 0].max() < 50
    assert X[:, 1].min() >= 0 and X[:, 1].max() < 4


def test_probabilities_are_a_distribution_over_query_url_pairs():
    X, p = make_search_logs(10, n_queries=30, urls_per_query=5,
                            return_probabilities=True, random_state=0)
    assert p.shape == (30, 5)
    assert p.sum() == pytest.approx(1.0)
    assert np.all(p[X[:, 0], X[:, 1]] > 0)


def test_a_seed_reproduces_the_log_and_different_seeds_differ():
    first = make_search_logs(1000, random_state=42)
    np.testing.assert_array_equal(first, make_search_logs(1000, random_state=42))
    np.testing.assert_array_equal(
        first, make_search_logs(1000, random_state=np.random.default_rng(42))
    )
    assert not np.array_equal(first, make_search_logs(1000, random_state=43))


def test_true_probabilities_follow_the_stated_zipf_laws():
    _, p = make_search_logs(1, n_queries=200, urls_per_query=6, zipf_exponent=1.1,
                            url_zipf_exponent=0.7, return_probabilities=True, random_state=0)
    np.testing.assert_allclose(p.sum(axis=1), _zipf(200, 1.1))
    np.testing.assert_allclose(p / p.sum(axis=1, keepdims=True), np.tile(_zipf(6, 0.7), (200, 1)))


def test_empirical_query_frequencies_follow_the_zipf_law():
    n_queries, exponent = 1000, 1.2
    X = make_search_logs(200_000, n_queries=n_queries, zipf_exponent=exponent, random_state=1)
    assert _chi_square_pvalue(X[:, 0], _zipf(n_queries, exponent), n_head=100) > 1e-3
    # The same test rejects a neighbouring exponent, so it has power.
    assert _chi_square_pvalue(X[:, 0], _zipf(n_queries, 1.1), n_head=100) < 1e-6


def test_empirical_url_frequencies_within_a_query_follow_the_zipf_law():
    X = make_search_logs(200_000, n_queries=20, urls_per_query=8, url_zipf_exponent=1.5,
                         random_state=2)
    top_query = X[X[:, 0] == 0, 1]
    assert _chi_square_pvalue(top_query, _zipf(8, 1.5), n_head=7) > 1e-3
    assert _chi_square_pvalue(X[:, 1], _zipf(8, 1.5), n_head=7) > 1e-3


def test_per_query_url_counts_bound_the_url_ids():
    urls = np.array([1, 3, 5])
    X, p = make_search_logs(20_000, n_queries=3, urls_per_query=urls,
                            return_probabilities=True, random_state=3)
    assert np.all(X[:, 1] < urls[X[:, 0]])
    assert np.all(p[0, 1:] == 0) and np.all(p[1, 3:] == 0)
    assert set(np.unique(X[X[:, 0] == 2, 1])) == set(range(5))


def test_default_head_carries_most_of_the_mass():
    _, p = make_search_logs(1, return_probabilities=True, random_state=0)
    query_mass = np.sort(p.sum(axis=1))[::-1]
    assert query_mass[:300].sum() > 0.8
    assert p.shape[0] >= 10 * 300  # with a long tail of rarer queries


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_users": 0}, "n_users"),
        ({"n_users": 10, "n_queries": 2.5}, "n_queries"),
        ({"n_users": 10, "urls_per_query": 0}, "urls_per_query"),
        ({"n_users": 10, "n_queries": 3, "urls_per_query": [1, 2]}, "urls_per_query"),
        ({"n_users": 10, "zipf_exponent": -1.0}, "zipf_exponent"),
        ({"n_users": 10, "url_zipf_exponent": np.nan}, "url_zipf_exponent"),
    ],
)
def test_invalid_parameters_are_named_in_the_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_search_logs(**kwargs)
