"""BLENDER's closed-form pieces checked against the paper's definitions.

Statistical tests simulate the mechanisms with plain numpy and compare with
tolerances of 4 standard errors, all seeded.
"""

import numpy as np
import pytest
from scipy import stats

from skhybrid.theory import (
    blend_estimates,
    blended_variance,
    blending_weights,
    client_report_probabilities,
    client_variance,
    client_variance_estimate,
    denoise_client_reports,
    headlist_threshold,
    l1_distance,
    list_of_lists_ndcg,
    local_alg_achieved_privacy,
    local_alg_keep_probability,
    local_alg_parameters,
    local_alg_transition_matrix,
    local_randomizer_delta,
    optin_count_noise_scale,
    optin_variance,
    optin_variance_estimate,
    project_onto_simplex,
    record_query_index,
)

# Three head-list queries with 2, 1 and 3 URLs plus their wildcard URL, and
# the wildcard query, whose only URL is the wildcard.
URLS_PER_QUERY = np.array([3, 2, 4, 1])


def _randomizer(urls_per_query=URLS_PER_QUERY, epsilon=4.0, delta=1e-5, fraction=0.85):
    params = local_alg_parameters(
        epsilon, delta, urls_per_query, query_budget_fraction=fraction
    )
    return params, {
        "query_keep_probability": params.query_keep_probability,
        "url_keep_probability": params.url_keep_probability,
        "urls_per_query": urls_per_query,
    }


def _within(sample, expected, n_se=4.0):
    """Each column's mean is within n_se standard errors of `expected`."""
    se = sample.std(axis=0, ddof=1) / np.sqrt(sample.shape[0])
    return np.abs(sample.mean(axis=0) - expected) <= n_se * se


def _variance_matches(sample, expected_variance, n_se=4.0):
    """Each column's sample variance is within n_se standard errors of the expected one.

    The standard error of a sample variance is sqrt((mu_4 - s^4 (n-3)/(n-1)) / n).
    """
    n = sample.shape[0]
    centered = sample - sample.mean(axis=0)
    s2 = centered.var(axis=0, ddof=1)
    mu4 = np.mean(centered**4, axis=0)
    se = np.sqrt((mu4 - s2**2 * (n - 3) / (n - 1)) / n)
    return np.abs(s2 - expected_variance) <= n_se * se


# --------------------------------------------------------------------------
# CreateHeadList and EstimateOptinProbabilities (Figures 3 and 4, Theorem 4)
# --------------------------------------------------------------------------


def test_optin_noise_scale_is_replacement_sensitivity_over_epsilon():
    assert optin_count_noise_scale(4.0) == pytest.approx(2 / 4.0)
    assert optin_count_noise_scale(2.0, records_per_user=3) == pytest.approx(3.0)
    np.testing.assert_allclose(optin_count_noise_scale([1.0, 2.0]), [2.0, 1.0])


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0, 10.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-7])
def test_record_of_a_single_user_passes_threshold_with_probability_delta_over_two(
    epsilon, delta
):
    scale = optin_count_noise_scale(epsilon)
    threshold = headlist_threshold(epsilon, delta)
    # P(N + Y > tau) for count N = 1 and Y ~ Laplace(b_S).
    assert stats.laplace.sf(threshold - 1, scale=scale) == pytest.approx(delta / 2, rel=1e-9)


@pytest.mark.parametrize("records_per_user", [1, 2, 10])
def test_headlist_threshold_satisfies_the_papers_assertion_tau_at_least_one(records_per_user):
    epsilon = np.array([0.1, 1.0, 4.0, 50.0, 800.0])
    threshold = headlist_threshold(epsilon, 0.5, records_per_user=records_per_user)
    assert np.all(np.isfinite(threshold)) and np.all(threshold >= 1)


def test_headlist_threshold_grows_as_delta_shrinks():
    assert headlist_threshold(1.0, 1e-7) > headlist_threshold(1.0, 1e-5)


@pytest.mark.parametrize(
    "kwargs", [{"epsilon": 0.0, "delta": 1e-5}, {"epsilon": 1.0, "delta": 0.0},
               {"epsilon": 1.0, "delta": 1.0}, {"epsilon": 1.0, "delta": 1e-5,
                                                 "records_per_user": 0}]
)
def test_headlist_threshold_rejects_invalid_parameters(kwargs):
    with pytest.raises(ValueError):
        headlist_threshold(**kwargs)


def test_optin_estimate_is_unbiased_with_theorem_4_variance():
    rng = np.random.default_rng(0)
    n_records, repetitions = 500, 200_000
    p = np.array([0.3, 0.05, 0.01])
    scale = optin_count_noise_scale(1.0)
    counts = rng.binomial(n_records, p, size=(repetitions, p.size))
    estimates = (counts + rng.laplace(scale=scale, size=counts.shape)) / n_records

    assert np.all(_within(estimates, p))
    assert np.all(_variance_matches(estimates, optin_variance(p, n_records, scale)))
    # The Bessel-corrected plug-in of Theorem 4 is unbiased.
    variance_estimates = optin_variance_estimate(estimates, n_records, scale)
    assert np.all(_within(variance_estimates, optin_variance(p, n_records, scale)))


# --------------------------------------------------------------------------
# LocalAlg (Figure 6) and Theorem 3
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n_choices", [2, 5, 100])
def test_keep_probability_makes_inequality_1_of_theorem_3_tight(n_choices):
    epsilon, delta = 3.4, 8.5e-6
    keep = local_alg_keep_probability(epsilon, delta, n_choices)
    replace = (1 - keep) / (n_choices - 1)
    assert keep - np.exp(epsilon) * replace == pytest.approx(delta / 2, rel=1e-6)


def test_keep_probability_is_uniform_without_budget_and_one_without_choice():
    assert local_alg_keep_probability(0.0, 0.0, 4) == pytest.approx(1 / 4)
    assert local_alg_keep_probability(2.0, 1e-5, 1) == 1.0
    assert local_alg_keep_probability(5000.0, 1e-5, 10) == 1.0  # no overflow


def test_local_alg_parameters_split_the_budget_by_query_budget_fraction():
    params, _ = _randomizer(epsilon=4.0, delta=1e-5, fraction=0.85)
    assert params.epsilon_query == pytest.approx(3.4)
    assert params.epsilon_url == pytest.approx(0.6)
    assert params.delta_query + params.delta_url == pytest.approx(1e-5)
    assert params.query_keep_probability == pytest.approx(
        local_alg_keep_probability(3.4, 0.85e-5, URLS_PER_QUERY.size)
    )
    np.testing.assert_allclose(
        params.url_keep_probability,
        local_alg_keep_probability(0.6, 0.15e-5, URLS_PER_QUERY),
    )
    assert params.url_keep_probability[-1] == 1.0  # the wildcard query has one URL


@pytest.mark.parametrize("fraction", [0.0, 1.0])
def test_local_alg_parameters_need_budget_for_both_stages(fraction):
    with pytest.raises(ValueError, match="query_budget_fraction"):
        local_alg_parameters(4.0, 1e-5, URLS_PER_QUERY, query_budget_fraction=fraction)


def test_transition_matrix_follows_the_two_stages_of_figure_6():
    params, kw = _randomizer()
    t, t_q = params.query_keep_probability, params.url_keep_probability
    transition = local_alg_transition_matrix(**kw)
    query = record_query_index(URLS_PER_QUERY)
    k = URLS_PER_QUERY.size

    np.testing.assert_allclose(transition.sum(axis=1), 1.0)
    # Stage 1: the query is kept with probability t, else uniform among the others.
    query_marginal = np.stack([transition[:, query == q].sum(axis=1) for q in range(k)], 1)
    expected = np.where(query[:, None] == np.arange(k)[None, :], t, (1 - t) / (k - 1))
    np.testing.assert_allclose(query_marginal, expected)
    for x in range(query.size):
        for q in range(k):
            block = transition[x, query == q] / query_marginal[x, q]
            if q != query[x]:
                # Stage 2 after a replaced query: a uniform URL of the new query.
                np.testing.assert_allclose(block, 1 / URLS_PER_QUERY[q])
            else:
                # Stage 2 after a kept query: the URL is kept with probability t_q.
                own = np.flatnonzero(np.flatnonzero(query == q) == x)[0]
                assert block[own] == pytest.approx(t_q[q])
                others = np.delete(block, own)
                np.testing.assert_allclose(others, (1 - t_q[q]) / max(1, others.size))


@pytest.mark.parametrize("epsilon", [1.0, 4.0, 8.0])
@pytest.mark.parametrize("fraction", [0.5, 0.85, 0.99])
def test_theorem_3_privacy_at_the_chosen_keep_probabilities_is_within_target(
    epsilon, fraction
):
    delta = 1e-5
    urls = np.random.default_rng(1).integers(1, 8, size=60)
    params, kw = _randomizer(urls, epsilon=epsilon, delta=delta, fraction=fraction)
    achieved_epsilon, achieved_delta = local_alg_achieved_privacy(
        **kw, epsilon_query=params.epsilon_query, epsilon_url=params.epsilon_url
    )
    assert achieved_epsilon <= epsilon * (1 + 1e-12)
    # Rounding of 1 - t is amplified by e^epsilon_Q: about 1e-13 absolute at epsilon = 8.
    assert achieved_delta <= delta * (1 + 1e-6)


def test_theorem_3_accounting_detects_an_overconfident_randomizer():
    params, kw = _randomizer()
    kw["query_keep_probability"] = params.query_keep_probability + 0.01
    _, achieved_delta = local_alg_achieved_privacy(
        **kw, epsilon_query=params.epsilon_query, epsilon_url=params.epsilon_url
    )
    assert achieved_delta > 1e-5


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_randomizer_exact_delta_over_all_record_pairs_is_within_target(epsilon):
    delta = 1e-5
    urls = np.random.default_rng(2).integers(1, 6, size=40)
    _, kw = _randomizer(urls, epsilon=epsilon, delta=delta)
    transition = local_alg_transition_matrix(**kw)
    assert local_randomizer_delta(transition, epsilon) <= delta
    # Off the truthful output, the probability ratio of any two records is <= e^eps.
    ratio = transition[:, None, :] / transition[None, :, :]
    truthful = np.eye(transition.shape[0], dtype=bool)[:, None, :]
    assert np.all(ratio[~np.broadcast_to(truthful, ratio.shape)] <= np.exp(epsilon))


def _excess_outside_diagonal(stage_matrix, epsilon):
    """Pointwise excess P(y|x) - e^eps P(y|x') over all (x, x', y)."""
    excess = stage_matrix[:, None, :] - np.exp(epsilon) * stage_matrix[None, :, :]
    diagonal = np.eye(stage_matrix.shape[0], dtype=bool)[:, None, :]
    return excess, np.broadcast_to(diagonal, excess.shape)


def test_each_stage_exceeds_exp_epsilon_only_on_the_truthful_output_charged_to_delta():
    params, kw = _randomizer()
    t = params.query_keep_probability
    transition = local_alg_transition_matrix(**kw)
    query = record_query_index(URLS_PER_QUERY)
    k = URLS_PER_QUERY.size

    # Query stage: P(report query | true query), at epsilon_Q.
    first = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
    query_stage = np.stack([transition[first][:, query == q].sum(axis=1) for q in range(k)], 1)
    excess, diagonal = _excess_outside_diagonal(query_stage, params.epsilon_query)
    assert np.all(excess[~diagonal] <= 0)
    distinct = ~np.eye(k, dtype=bool)
    charged = np.max(excess, axis=2)[distinct]
    assert np.all(charged > 0)  # the slack is used, the check is not vacuous
    np.testing.assert_allclose(charged, params.delta_query / 2, rtol=1e-6)

    # URL stage of each query with several URLs, given the query is kept, at epsilon_U.
    for q in np.flatnonzero(URLS_PER_QUERY > 1):
        members = np.flatnonzero(query == q)
        url_stage = transition[np.ix_(members, members)] / t
        excess, diagonal = _excess_outside_diagonal(url_stage, params.epsilon_url)
        assert np.all(excess[~diagonal] <= 0)
        distinct = ~np.eye(members.size, dtype=bool)
        np.testing.assert_allclose(
            np.max(excess, axis=2)[distinct], params.delta_url / 2, rtol=1e-6
        )


def test_local_randomizer_delta_of_randomized_response_is_known():
    # Binary randomized response with keep probability 0.75: pure ln(3)-DP.
    transition = np.array([[0.75, 0.25], [0.25, 0.75]])
    assert local_randomizer_delta(transition, np.log(3)) == pytest.approx(0.0, abs=1e-12)
    assert local_randomizer_delta(transition, 0.0) == pytest.approx(0.5)


# --------------------------------------------------------------------------
# Denoising (Observation 1) and its variance (Theorem 5)
# --------------------------------------------------------------------------


def test_denoising_inverts_the_expected_reports_exactly():
    _, kw = _randomizer()
    p = np.random.default_rng(3).dirichlet(np.ones(URLS_PER_QUERY.sum()))
    reports = client_report_probabilities(p, **kw)
    query_estimates, record_estimates = denoise_client_reports(reports, **kw)
    np.testing.assert_allclose(record_estimates, p, atol=1e-14)
    np.testing.assert_allclose(
        query_estimates, np.bincount(record_query_index(URLS_PER_QUERY), weights=p), atol=1e-14
    )


@pytest.fixture(scope="module")
def client_simulation():
    """Client reports drawn user by user from LocalAlg's transition probabilities."""
    rng = np.random.default_rng(4)
    _, kw = _randomizer()
    query = record_query_index(URLS_PER_QUERY)
    p = np.array([0.2, 0.08, 0.02, 0.1, 0.04, 0.15, 0.1, 0.05, 0.06, 0.2])
    n_reports, repetitions = 1000, 3000

    cumulative = np.cumsum(local_alg_transition_matrix(**kw), axis=1)
    true_records = rng.choice(p.size, size=(repetitions, n_reports), p=p)
    uniforms = rng.random((repetitions, n_reports))
    reports = np.minimum((uniforms[..., None] > cumulative[true_records]).sum(-1), p.size - 1)
    counts = np.zeros((repetitions, p.size))
    np.add.at(counts, (np.arange(repetitions)[:, None], reports), 1)

    estimates = [denoise_client_reports(c, **kw) for c in counts]
    variance_estimates = [client_variance_estimate(c, **kw) for c in counts]
    return {
        "kw": kw,
        "p_record": p,
        "p_query": np.bincount(query, weights=p),
        "n_reports": n_reports,
        "query_estimates": np.array([e[0] for e in estimates]),
        "record_estimates": np.array([e[1] for e in estimates]),
        "query_variance_estimates": np.array([v[0] for v in variance_estimates]),
        "record_variance_estimates": np.array([v[1] for v in variance_estimates]),
    }


def test_denoised_client_estimates_are_unbiased_observation_1(client_simulation):
    sim = client_simulation
    assert np.all(_within(sim["record_estimates"], sim["p_record"]))
    assert np.all(_within(sim["query_estimates"], sim["p_query"]))


def _exact_client_variances(sim):
    kw = sim["kw"]
    reports = client_report_probabilities(sim["p_record"], **kw)
    return client_variance(reports, sim["n_reports"], **kw)


def test_client_estimate_variance_matches_theorem_5(client_simulation):
    sim = client_simulation
    query_variances, record_variances = _exact_client_variances(sim)
    assert np.all(_variance_matches(sim["record_estimates"], record_variances))
    assert np.all(_variance_matches(sim["query_estimates"], query_variances))


def test_theorem_5_variance_estimates_are_unbiased(client_simulation):
    sim = client_simulation
    query_variances, record_variances = _exact_client_variances(sim)
    assert np.all(_within(sim["record_variance_estimates"], record_variances))
    assert np.all(_within(sim["query_variance_estimates"], query_variances))


def test_single_url_query_record_estimate_equals_its_query_estimate():
    _, kw = _randomizer()
    counts = np.random.default_rng(5).integers(10, 100, size=URLS_PER_QUERY.sum())
    query_estimates, record_estimates = denoise_client_reports(counts, **kw)
    query_variances, record_variances = client_variance_estimate(counts, **kw)
    assert record_estimates[-1] == pytest.approx(query_estimates[-1])
    assert record_variances[-1] == pytest.approx(query_variances[-1])


def test_denoising_rejects_uninformative_reports():
    _, kw = _randomizer()
    kw["query_keep_probability"] = 1 / URLS_PER_QUERY.size
    with pytest.raises(ValueError, match="query_keep_probability"):
        denoise_client_reports(np.ones(URLS_PER_QUERY.sum()), **kw)


def test_denoising_rejects_counts_of_the_wrong_length():
    _, kw = _randomizer()
    with pytest.raises(ValueError, match="one entry per head-list record"):
        denoise_client_reports(np.ones(3), **kw)


# --------------------------------------------------------------------------
# Blending (Theorem 6) and the simplex projection
# --------------------------------------------------------------------------


def test_blended_variance_is_below_each_components_theorem_6():
    rng = np.random.default_rng(6)
    optin = rng.uniform(1e-6, 1e-2, size=1000)
    client = rng.uniform(1e-6, 1e-2, size=1000)
    _, variance = blend_estimates(np.zeros(1000), optin, np.zeros(1000), client)
    assert np.all(variance < optin) and np.all(variance < client)


def test_blending_weights_minimise_the_variance_of_a_convex_combination():
    grid = np.linspace(0, 1, 10_001)
    for optin, client in [(1.0, 1.0), (1e-4, 3e-3), (5.0, 0.2)]:
        best = blending_weights(optin, client)
        best_variance = blended_variance(best, optin, client)
        assert np.all(blended_variance(grid, optin, client) >= best_variance * (1 - 1e-12))
        # First-order condition: d/dw [w^2 s_O + (1-w)^2 s_C] = 0.
        assert 2 * best * optin - 2 * (1 - best) * client == pytest.approx(0, abs=1e-12)


def test_blended_estimate_variance_matches_simulation():
    rng = np.random.default_rng(7)
    optin_var, client_var, truth = 4e-4, 1e-4, 0.1
    n = 200_000
    estimates, variance = blend_estimates(
        truth + rng.normal(0, np.sqrt(optin_var), n), np.full(n, optin_var),
        truth + rng.normal(0, np.sqrt(client_var), n), np.full(n, client_var),
    )
    assert _within(estimates[:, None], truth).all()
    assert _variance_matches(estimates[:, None], variance[0]).all()


def test_blending_weights_handle_missing_and_exact_estimates():
    np.testing.assert_allclose(
        blending_weights([np.inf, 1.0, 0.0, np.inf], [1.0, np.inf, 0.0, np.inf]),
        [0.0, 1.0, 0.5, 0.5],
    )
    estimates, variances = blend_estimates([np.nan, 0.3], [np.inf, 1.0],
                                           [0.2, np.nan], [1.0, np.inf])
    np.testing.assert_allclose(estimates, [0.2, 0.3])
    np.testing.assert_allclose(variances, [1.0, 1.0])


def test_blending_weights_reject_negative_variances():
    with pytest.raises(ValueError, match="clip"):
        blending_weights([1.0, -1e-6], [1.0, 1.0])


def test_projection_onto_simplex_satisfies_the_optimality_conditions():
    rng = np.random.default_rng(8)
    values = rng.normal(0.05, 0.2, size=(200, 30))
    projection = project_onto_simplex(values)
    assert np.all(projection >= 0)
    np.testing.assert_allclose(projection.sum(axis=1), 1.0)
    for v, x in zip(values, projection):
        support = x > 0
        theta = (v - x)[support]
        np.testing.assert_allclose(theta, theta[0], atol=1e-12)  # x = v - theta there
        assert np.all(v[~support] <= theta[0] + 1e-12)  # and v <= theta elsewhere


def test_projection_is_the_nearest_point_of_the_simplex():
    rng = np.random.default_rng(9)
    v = rng.normal(0, 1, size=8)
    x = project_onto_simplex(v, total=2.0)
    others = 2.0 * rng.dirichlet(np.ones(8), size=10_000)
    assert np.linalg.norm(x - v) <= np.linalg.norm(others - v, axis=1).min()
    assert x.sum() == pytest.approx(2.0)


def test_projection_keeps_points_already_on_the_simplex():
    p = np.random.default_rng(10).dirichlet(np.ones(5))
    np.testing.assert_allclose(project_onto_simplex(p), p, atol=1e-15)


# --------------------------------------------------------------------------
# Metrics (Section 4)
# --------------------------------------------------------------------------

TRUE_COUNTS = {
    (0, 0): 30, (0, 1): 10,
    (1, 0): 20, (1, 1): 15,
    (2, 0): 12, (2, 1): 3,
    (3, 0): 5,
}


def _probabilities(counts):
    total = sum(counts.values())
    return {key: value / total for key, value in counts.items()}


def test_l1_of_identical_distributions_is_zero():
    p = _probabilities(TRUE_COUNTS)
    assert l1_distance(p, p) == 0.0
    assert l1_distance(np.array([0.2, 0.8]), np.array([0.2, 0.8])) == 0.0


def test_l1_sums_over_the_estimated_records():
    estimated = {("a", "x"): 0.5, ("b", "y"): 0.5}
    true = {("a", "x"): 0.3, ("c", "z"): 0.7}
    assert l1_distance(estimated, true) == pytest.approx(0.2 + 0.5)


def test_ndcg_of_the_true_lists_against_themselves_is_one_in_every_format():
    p = _probabilities(TRUE_COUNTS)
    records = np.array(list(p))
    values = np.array(list(p.values()))
    dense = np.zeros((4, 2))
    dense[records[:, 0], records[:, 1]] = values
    assert list_of_lists_ndcg(p, TRUE_COUNTS) == pytest.approx(1.0)
    assert list_of_lists_ndcg((records, values), (records, values)) == pytest.approx(1.0)
    assert list_of_lists_ndcg(dense, dense) == pytest.approx(1.0)


def test_ndcg_depends_only_on_the_estimated_order_and_true_proportions():
    p = _probabilities(TRUE_COUNTS)
    perturbed = dict(p)
    perturbed[(1, 0)], perturbed[(0, 0)] = 0.5, 0.2  # query 1 now ranked first
    squashed = {key: np.sqrt(value) for key, value in perturbed.items()}
    score = list_of_lists_ndcg(perturbed, TRUE_COUNTS)
    assert list_of_lists_ndcg(squashed, TRUE_COUNTS) == pytest.approx(score)
    assert list_of_lists_ndcg(perturbed, p) == pytest.approx(score)


def test_ndcg_drops_when_queries_are_misordered():
    p = _probabilities(TRUE_COUNTS)
    swapped = dict(p)
    swapped[(2, 0)], swapped[(2, 1)] = 0.5, 0.4  # query 2 estimated most popular
    assert list_of_lists_ndcg(swapped, TRUE_COUNTS) < 1.0


def test_ndcg_drops_when_urls_are_misordered():
    p = _probabilities(TRUE_COUNTS)
    swapped = dict(p)
    swapped[(1, 0)], swapped[(1, 1)] = p[(1, 1)], p[(1, 0)]  # same query total
    assert list_of_lists_ndcg(swapped, TRUE_COUNTS) < 1.0


def test_ndcg_of_equally_probable_queries_does_not_depend_on_their_order():
    true = {(0, 0): 2, (1, 0): 2, (2, 0): 1}
    estimated = {(1, 0): 0.5, (0, 0): 0.4, (2, 0): 0.1}
    assert list_of_lists_ndcg(estimated, true) == pytest.approx(1.0)


def test_url_mistake_costs_more_in_a_higher_ranked_query():
    # Queries 0 and 1 have proportional URL distributions, so swapping their
    # URLs gives the same within-query NDCG; the query's gain and discount
    # make the mistake in the more popular query costlier.
    true = {(0, 0): 30, (0, 1): 10, (1, 0): 15, (1, 1): 5, (2, 0): 10}
    swap_top = {(0, 0): 10, (0, 1): 30, (1, 0): 15, (1, 1): 5, (2, 0): 10}
    swap_second = {(0, 0): 30, (0, 1): 10, (1, 0): 5, (1, 1): 15, (2, 0): 10}
    assert list_of_lists_ndcg(swap_top, true) < list_of_lists_ndcg(swap_second, true) < 1


def test_ndcg_matches_the_definition_on_a_hand_computed_example():
    true = {("q0", "a"): 0.4, ("q0", "b"): 0.2, ("q1", "a"): 0.3, ("q1", "b"): 0.1}
    # q1 ranked above q0; q1's URLs in order, q0's swapped.
    estimated = {("q1", "a"): 0.4, ("q1", "b"): 0.3, ("q0", "b"): 0.2, ("q0", "a"): 0.1}
    disc2 = 1 / np.log2(3)
    # URL list of q0: relevances 0.2/0.6 then 0.4/0.6.
    ndcg_q0 = ((2 ** (1 / 3) - 1) + (2 ** (2 / 3) - 1) * disc2) / (
        (2 ** (2 / 3) - 1) + (2 ** (1 / 3) - 1) * disc2
    )
    # Query list: relevances 0.4 (q1) then 0.6 (q0), q0 discounted by its URL NDCG.
    expected = ((2**0.4 - 1) * 1.0 + (2**0.6 - 1) * disc2 * ndcg_q0) / (
        (2**0.6 - 1) + (2**0.4 - 1) * disc2
    )
    assert list_of_lists_ndcg(estimated, true) == pytest.approx(expected, rel=1e-12)


def test_ndcg_of_a_short_head_list_is_against_the_true_top_queries():
    true = _probabilities(TRUE_COUNTS)
    top_query = {(0, 0): 0.3, (0, 1): 0.1}
    second_query = {(1, 0): 0.2, (1, 1): 0.15}
    assert list_of_lists_ndcg(top_query, true) == pytest.approx(1.0)
    assert list_of_lists_ndcg(second_query, true) < 1.0


def test_ndcg_lies_in_the_unit_interval_for_random_estimates():
    rng = np.random.default_rng(11)
    keys = list(TRUE_COUNTS) + [(5, 0), (0, 7)]  # records absent from the truth
    for _ in range(200):
        estimated = dict(zip(keys, rng.normal(size=len(keys))))
        assert 0.0 <= list_of_lists_ndcg(estimated, TRUE_COUNTS) <= 1.0 + 1e-12


def test_ndcg_of_an_empty_head_list_is_zero_and_duplicates_are_rejected():
    assert list_of_lists_ndcg({}, TRUE_COUNTS) == 0.0
    records = np.array([[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="duplicate"):
        list_of_lists_ndcg((records, [0.5, 0.5]), TRUE_COUNTS)
