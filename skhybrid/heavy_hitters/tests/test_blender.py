"""BLENDER heavy hitters: LocalAlg on the client, the opt-in mechanisms, blending, the estimator.

Statistical tests are seeded and use tolerances of 4 standard errors; privacy audits use
the histogram audit of :mod:`skhybrid.audit`, each with a control that weakens the
mechanism and must fail.
"""

import pickle

import numpy as np
import pytest
from scipy import stats
from sklearn import config_context
from sklearn.base import clone
from sklearn.model_selection import KFold, cross_validate

import skhybrid.heavy_hitters._client as client_module
import skhybrid.heavy_hitters._optin as optin
from skhybrid.audit import audit_samples
from skhybrid.datasets import make_search_logs
from skhybrid.heavy_hitters import WILDCARD, BlenderClient, BlenderHeavyHitters
from skhybrid.theory import (
    headlist_threshold,
    l1_distance,
    list_of_lists_ndcg,
    local_randomizer_delta,
)

N_AUDIT = 200_000
WEAKER = 1.4  # the controls divide the noise scale (or multiply the keep-budget) by this

# A query with six URLs and a query with one: records (0, u) and (1, 0) differ in their
# query, the pair for which LocalAlg's privacy loss is largest.
AUDIT_HEAD_LIST = [(0, url) for url in range(6)] + [(1, 0)]

# Ten queries with two URLs each: every record is far above the head-list threshold
# at the sizes used below, so every fit keeps all twenty.
SMALL_LOG = {"n_queries": 10, "urls_per_query": 2, "zipf_exponent": 1.0, "url_zipf_exponent": 1.0}


def _opt_in(X):
    """Every user opt-in (tcm): fits of opt-in data alone, said explicitly."""
    return np.ones(len(X), dtype=bool)


def _within(sample, expected, n_se=4.0):
    """Each column's mean is within n_se standard errors of ``expected``."""
    se = sample.std(axis=0, ddof=1) / np.sqrt(sample.shape[0])
    return np.abs(sample.mean(axis=0) - expected) <= n_se * se


def _variance_matches(sample, variance_estimates, n_se=4.0):
    """Each column's sample variance is within n_se standard errors of the mean estimate.

    The standard error of a sample variance is sqrt((mu_4 - s^4 (n-3)/(n-1)) / n).
    """
    n = sample.shape[0]
    centered = sample - sample.mean(axis=0)
    spread = centered.var(axis=0, ddof=1)
    se = np.sqrt((np.mean(centered**4, axis=0) - spread**2 * (n - 3) / (n - 1)) / n)
    return np.abs(variance_estimates.mean(axis=0) - spread) <= n_se * se


def _aligned(estimator, attribute, records):
    """``estimator.<attribute>`` in the order of ``records`` (fits re-sort head_list_)."""
    index = {record: i for i, record in enumerate(estimator.head_list_)}
    return getattr(estimator, attribute)[[index[tuple(r)] for r in records]]


def _report_codes(reports):
    """One integer per report, for histogram audits: wildcards (-1) included."""
    return (reports[:, 0] + 1) * 1_000 + reports[:, 1] + 1


# --------------------------------------------------------------------------
# BlenderClient: LocalAlg (Figure 6, Theorem 3)
# --------------------------------------------------------------------------


def test_client_lists_reports_query_by_query_in_head_list_order_with_wildcards_last():
    client = BlenderClient([(5, 1), (2, 0), (5, 0)], epsilon=4.0, delta=1e-5)
    assert client.report_records.tolist() == [
        [5, 1], [5, 0], [5, WILDCARD], [2, 0], [2, WILDCARD], [WILDCARD, WILDCARD],
    ]
    # k_q counts each query's wildcard URL; the wildcard query has one URL.
    assert client.urls_per_query.tolist() == [3, 2, 1]
    assert client.head_list == [(5, 1), (2, 0), (5, 0)]


def test_records_outside_the_head_list_are_reported_as_their_wildcard():
    # With an enormous budget LocalAlg keeps what it is given (lines 8-11 then 21).
    client = BlenderClient([(5, 1), (2, 0)], epsilon=200.0, delta=1e-5)
    reports = client.privatize([[5, 1], [5, 9], [7, 7], [2, 0]], random_state=0)
    assert reports.tolist() == [[5, 1], [5, WILDCARD], [WILDCARD, WILDCARD], [2, 0]]


def test_privatized_reports_follow_the_transition_matrix():
    client = BlenderClient(AUDIT_HEAD_LIST, epsilon=2.0, delta=1e-5)
    true_cell = 3  # the record (0, 3)
    reports = client.privatize(np.tile(client.report_records[true_cell], (100_000, 1)),
                               random_state=1)
    codes = _report_codes(reports)
    observed = np.array([np.sum(codes == code) for code in _report_codes(client.report_records)])
    assert observed.sum() == 100_000  # every report is a cell of the head list
    expected = 100_000 * client.transition_matrix[true_cell]
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_transition_matrix_rows_are_figure_6s_two_stages():
    client = BlenderClient(AUDIT_HEAD_LIST, epsilon=2.0, delta=1e-5)
    t = client.parameters.query_keep_probability
    t_q = client.parameters.url_keep_probability
    row = client.transition_matrix[0]  # true record (0, 0); query 0 has k_q = 7
    k = 3  # queries 0, 1 and the wildcard query
    assert row[0] == pytest.approx(t * t_q[0])
    assert row[1] == pytest.approx(t * (1 - t_q[0]) / 6)
    assert row[7] == pytest.approx((1 - t) / ((k - 1) * 2))  # (1, 0): query 1 has k_q = 2
    assert row[9] == pytest.approx((1 - t) / (k - 1))  # (*, *)
    assert row.sum() == pytest.approx(1.0)


def test_budget_is_split_between_query_and_url_by_query_budget_fraction():
    client = BlenderClient(AUDIT_HEAD_LIST, epsilon=2.0, delta=1e-4, query_budget_fraction=0.7)
    assert client.parameters.epsilon_query == pytest.approx(1.4)
    assert client.parameters.epsilon_url == pytest.approx(0.6)
    assert client.parameters.delta_query + client.parameters.delta_url == pytest.approx(1e-4)


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 4.0])
def test_local_alg_is_epsilon_delta_private_theorem_3(epsilon):
    client = BlenderClient(AUDIT_HEAD_LIST + [(7, 0), (7, 1)], epsilon=epsilon, delta=1e-5)
    certified_epsilon, certified_delta = client.achieved_privacy()
    assert certified_epsilon == pytest.approx(epsilon)
    assert certified_delta <= 1e-5 * (1 + 1e-9)
    # The exact hockey-stick divergence over every pair of true records.
    assert local_randomizer_delta(client.transition_matrix, epsilon) <= 1e-5


def _weaker_local_alg(monkeypatch):
    """LocalAlg with keep probabilities computed for 1.4 times the budget."""
    original = client_module.local_alg_parameters

    def weaker(epsilon, delta, urls_per_query, **kwargs):
        return original(epsilon * WEAKER, delta, urls_per_query, **kwargs)

    monkeypatch.setattr(client_module, "local_alg_parameters", weaker)


def _audit_local_alg(seed):
    client = BlenderClient(AUDIT_HEAD_LIST, epsilon=2.0, delta=1e-5)
    rng = np.random.default_rng(seed)
    reports_a = client.privatize(np.tile([0, 0], (N_AUDIT, 1)), random_state=rng)
    reports_b = client.privatize(np.tile([1, 0], (N_AUDIT, 1)), random_state=rng)
    exact_delta = local_randomizer_delta(client.transition_matrix, 2.0)
    result = audit_samples(_report_codes(reports_a), _report_codes(reports_b), 2.0, 1e-5)
    return result, exact_delta


def test_local_alg_reports_pass_the_audit():
    result, exact_delta = _audit_local_alg(seed=2)
    assert result.passed, str(result)
    assert exact_delta <= 1e-5


def test_audit_fails_when_local_alg_keeps_with_the_probability_of_a_larger_budget(monkeypatch):
    _weaker_local_alg(monkeypatch)
    result, exact_delta = _audit_local_alg(seed=3)
    assert not result.passed, str(result)
    assert exact_delta > 1e-5


@pytest.mark.parametrize(
    "head_list, message",
    [
        ([], "at least one"),
        ([(0, 1), (0, 1)], "distinct"),
        ([(0, -1)], "Negative values"),
        ([(0, 1.5)], "integer ids"),
        ([(0, 1, 2)], "two columns"),
    ],
)
def test_bad_head_lists_raise_clear_errors(head_list, message):
    with pytest.raises(ValueError, match=message):
        BlenderClient(head_list, epsilon=1.0, delta=1e-5)


def test_privatize_takes_one_record_or_many_and_rejects_wildcards():
    client = BlenderClient([(0, 0), (0, 1)], epsilon=1.0, delta=1e-5)
    assert client.privatize([0, 1], random_state=0).shape == (2,)
    assert client.privatize([[0, 1], [3, 3]], random_state=0).shape == (2, 2)
    with pytest.raises(ValueError, match="Negative values"):
        client.privatize([[0, WILDCARD]])


# --------------------------------------------------------------------------
# Opt-in users: CreateHeadList (Figure 3) and EstimateOptinProbabilities (Figure 4)
# --------------------------------------------------------------------------


def test_record_held_by_one_opt_in_user_enters_the_candidates_with_probability_delta_over_two():
    # Every user of S holds a different record: each passes 1 + Laplace(b) > tau w.p. delta / 2.
    n_users, n_fits, delta = 2_000, 100, 0.2
    X = np.column_stack([np.arange(n_users), np.zeros(n_users, dtype=int)])
    est = BlenderHeavyHitters(epsilon=1.0, delta=delta, headlist_fraction=0.999)
    rng = np.random.default_rng(4)
    fractions = np.array([
        est.set_params(random_state=rng).fit(X, trust_group=_opt_in(X)).n_candidates_
        / est.n_headlist_users_
        for _ in range(n_fits)
    ])
    assert est.n_headlist_users_ == n_users - 2  # two users always left for estimation
    passes = fractions.mean()
    se = np.sqrt(delta / 2 * (1 - delta / 2) / (n_fits * est.n_headlist_users_))
    assert abs(passes - delta / 2) <= 4 * se


def test_head_list_holds_only_records_of_opt_in_users_above_the_threshold():
    rng = np.random.default_rng(5)
    popular = np.tile([[1, 1], [2, 0]], (200, 1))
    rare = np.column_stack([np.arange(100, 400), np.zeros(300, dtype=int)])  # one user each
    client_only = np.tile([[9, 9]], (5_000, 1))  # the most popular record, clients only
    X = np.vstack([popular, rare, client_only])
    trust = np.array(["tcm"] * (len(popular) + len(rare)) + ["lm"] * len(client_only))
    est = BlenderHeavyHitters(epsilon=4.0, delta=1e-6, headlist_fraction=0.9, random_state=rng)
    est.fit(X, trust_group=trust)
    assert set(est.head_list_) == {(1, 1), (2, 0)}
    assert est.n_candidates_ == 2


def _move_one_user(release, counts_a, counts_b, n_samples, rng):
    """Outputs of ``release`` on two count vectors that differ by moving one user."""
    samples_a = release(np.tile(counts_a, (n_samples, 1)), rng)
    samples_b = release(np.tile(counts_b, (n_samples, 1)), rng)
    return samples_a, samples_b


def _threshold_release(epsilon, delta):
    """CreateHeadList's output on two records, coded 2 * (first passes) + (second passes)."""

    def release(counts, rng):
        passes = optin._passes_threshold(counts, epsilon=epsilon, delta=delta, rng=rng)
        return 2 * passes[:, 0] + passes[:, 1]

    return release


def _threshold_audit(seed):
    # One user moves from the second record to the first. Counts on either side of tau
    # put both records in the Laplace tails, where the privacy loss is exactly epsilon.
    epsilon, delta = 1.0, 1e-3
    tau = headlist_threshold(epsilon, delta)
    below, above = np.floor(tau), np.ceil(tau)
    samples = _move_one_user(_threshold_release(epsilon, delta), [below, above],
                             [below - 1, above + 1], N_AUDIT, np.random.default_rng(seed))
    return audit_samples(*samples, epsilon, delta)


def _weaker_count_noise(monkeypatch):
    """The opt-in counts' Laplace mechanism with its scale divided by 1.4."""
    monkeypatch.setattr(
        optin, "_count_mechanism",
        lambda epsilon: optin.LaplaceMechanism(epsilon=epsilon * WEAKER, sensitivity=2.0),
    )


def test_candidate_head_list_passes_the_audit():
    result = _threshold_audit(seed=6)
    assert result.passed, str(result)


def test_audit_fails_when_the_head_list_noise_is_divided_by_1_4(monkeypatch):
    _weaker_count_noise(monkeypatch)
    result = _threshold_audit(seed=7)
    assert not result.passed, str(result)


def _optin_count_audit(seed):
    # EstimateOptinProbabilities releases the counts of T over a fixed partition; moving a
    # user changes two counts by one. Code the two noisy counts by the tails the move
    # pushes them into, where the privacy loss of the pair is exactly epsilon.
    epsilon, counts_a, counts_b = 1.0, np.array([41.0, 19.0]), np.array([40.0, 20.0])

    def release(counts, rng):
        noisy = optin._count_mechanism(epsilon).randomise(counts, random_state=rng)
        return 2 * (noisy[:, 0] > counts_a[0]) + (noisy[:, 1] < counts_a[1])

    samples = _move_one_user(release, counts_a, counts_b, N_AUDIT, np.random.default_rng(seed))
    return audit_samples(*samples, epsilon, 0.0)


def test_opt_in_counts_pass_the_audit():
    result = _optin_count_audit(seed=8)
    assert result.passed, str(result)


def test_audit_fails_when_the_opt_in_count_noise_is_divided_by_1_4(monkeypatch):
    _weaker_count_noise(monkeypatch)
    result = _optin_count_audit(seed=9)
    assert not result.passed, str(result)


@pytest.mark.slow
def test_opt_in_wildcard_cells_sum_the_trimmed_cells_and_their_noise_theorem_4():
    # Five candidates, two kept: (0, *) absorbs (0, 2) and the candidates' (0, *) (two
    # noise draws); (*, *) absorbs queries 1 and 2 and the candidates' (*, *) (five).
    candidates = np.array([[0, 0], [0, 1], [0, 2], [1, 0], [2, 0]])
    outside = np.array([[0, 7], [1, 7], [5, 5]])
    records = np.vstack([candidates, outside])
    p = np.array([0.3, 0.25, 0.05, 0.08, 0.07, 0.05, 0.1, 0.1])
    truth = {(0, 0): 0.3, (0, 1): 0.25, (0, WILDCARD): 0.1, (WILDCARD, WILDCARD): 0.35}
    rng = np.random.default_rng(38)
    estimates, variances = [], []
    for _ in range(3_000):
        sample = records[rng.choice(p.size, size=2_000, p=p)]
        layout, probabilities, variance = optin._estimate_optin_probabilities(
            sample, candidates, epsilon=0.5, max_records=2, rng=rng
        )
        order = [layout.cell_records.tolist().index(list(cell)) for cell in truth]
        estimates.append(probabilities[order])
        variances.append(variance[order])
    estimates, variances = np.array(estimates), np.array(variances)
    assert np.all(_within(estimates, list(truth.values())))
    assert np.all(_variance_matches(estimates, variances))


# --------------------------------------------------------------------------
# Estimates, blending and Theorem 6: Monte Carlo over fresh logs
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def repeated_fits():
    """Fits on fresh i.i.d. logs from a known distribution, all twenty records kept.

    Half of the opt-in users estimate probabilities, so the opt-in and client estimates
    have comparable variances and blending has something to gain.
    """
    n_fits, n_users, n_optin = 150, 50_000, 5_000
    _, probabilities = make_search_logs(1, return_probabilities=True, **SMALL_LOG)
    records = np.argwhere(probabilities > 0)
    trust = np.arange(n_users) < n_optin  # rows are i.i.d., so the first ones opt in
    rng = np.random.default_rng(10)
    est = BlenderHeavyHitters(epsilon=4.0, delta=1e-6, headlist_fraction=0.5,
                              project_to_simplex=False)
    attributes = ["optin_probabilities_", "optin_variances_", "client_probabilities_",
                  "client_variances_", "probabilities_", "variances_", "weights_"]
    results = {name: [] for name in attributes}
    for _ in range(n_fits):
        X = make_search_logs(n_users, random_state=rng, **SMALL_LOG)
        est.set_params(random_state=rng).fit(X, trust_group=trust)
        assert len(est.head_list_) == len(records)
        for name in attributes:
            results[name].append(_aligned(est, name, records))
    results = {name: np.array(values) for name, values in results.items()}
    results["true"] = probabilities[records[:, 0], records[:, 1]]
    return results


@pytest.mark.slow
@pytest.mark.parametrize("group", ["optin", "client"])
def test_each_groups_estimates_are_unbiased_theorem_4_and_observation_1(repeated_fits, group):
    assert np.all(_within(repeated_fits[f"{group}_probabilities_"], repeated_fits["true"]))


@pytest.mark.slow
@pytest.mark.parametrize("group", ["optin", "client"])
def test_each_groups_variance_estimates_match_the_spread_theorems_4_and_5(repeated_fits, group):
    assert np.all(_variance_matches(repeated_fits[f"{group}_probabilities_"],
                                    repeated_fits[f"{group}_variances_"]))


@pytest.mark.slow
@pytest.mark.parametrize("group", ["optin", "client"])
def test_blended_estimate_has_a_smaller_error_than_either_groups_theorem_6(repeated_fits, group):
    truth = repeated_fits["true"]
    blended = ((repeated_fits["probabilities_"] - truth) ** 2).sum(axis=1)
    single = ((repeated_fits[f"{group}_probabilities_"] - truth) ** 2).sum(axis=1)
    gain = single - blended  # paired over the fits
    assert gain.mean() > 4 * gain.std(ddof=1) / np.sqrt(gain.size)


@pytest.mark.slow
def test_blend_is_the_inverse_variance_combination_figure_7(repeated_fits):
    fits = repeated_fits
    optin, client = fits["optin_variances_"], fits["client_variances_"]
    weights = client / (optin + client)
    np.testing.assert_allclose(fits["weights_"], weights, rtol=1e-12)
    np.testing.assert_allclose(
        fits["probabilities_"],
        weights * fits["optin_probabilities_"] + (1 - weights) * fits["client_probabilities_"],
        rtol=1e-12, atol=1e-15,
    )
    # Theorem 6: the blend's variance is below each group's.
    assert np.all(fits["variances_"] <= np.minimum(optin, client))


def test_projection_makes_the_head_list_and_wildcards_a_distribution():
    X = make_search_logs(50_000, random_state=11, **SMALL_LOG)
    trust = np.random.default_rng(12).random(50_000) < 0.2
    est = BlenderHeavyHitters(random_state=13).fit(X, trust_group=trust)
    assert np.all(est.probabilities_ >= 0) and est.other_probability_ >= 0
    assert est.probabilities_.sum() + est.other_probability_ == pytest.approx(1.0)
    assert np.all(np.diff(est.probabilities_) <= 0)  # most probable first


# --------------------------------------------------------------------------
# The two phases of a deployment: opt-in users first, then the clients' reports
# --------------------------------------------------------------------------


def _two_phase_population(seed):
    rng = np.random.default_rng(seed)
    optin = make_search_logs(20_000, random_state=rng, **SMALL_LOG)
    clients = make_search_logs(200_000, random_state=rng, **SMALL_LOG)
    return optin, clients, rng


def test_clients_reports_are_blended_with_the_opt_in_estimates_of_the_first_fit():
    optin, clients, rng = _two_phase_population(14)
    est = BlenderHeavyHitters(random_state=rng).fit(optin, trust_group=_opt_in(optin))
    assert est.n_clients_ == 0 and np.all(est.weights_ == 1.0)
    published = list(est.head_list_)
    before = dict(zip(est.head_list_, est.optin_probabilities_))

    reports = est.make_client().privatize(clients, random_state=rng)
    est.fit_reports(reports)
    assert est.n_clients_ == len(clients)
    assert set(est.head_list_) == set(published)
    assert dict(zip(est.head_list_, est.optin_probabilities_)) == before
    assert np.all((est.weights_ > 0) & (est.weights_ < 1))
    # Reading the same reports again is deterministic post-processing: no new noise.
    first = est.probabilities_.copy()
    np.testing.assert_array_equal(est.fit_reports(reports).probabilities_, first)


@pytest.mark.slow
def test_denoised_client_reports_are_unbiased_observation_1():
    optin, _, rng = _two_phase_population(15)
    _, probabilities = make_search_logs(1, return_probabilities=True, **SMALL_LOG)
    est = BlenderHeavyHitters(max_records=8, random_state=rng).fit(optin)
    records = np.array(est.head_list_)
    client = est.make_client()
    estimates = []
    for _ in range(200):
        clients = make_search_logs(20_000, random_state=rng, **SMALL_LOG)
        est.fit_reports(client.privatize(clients, random_state=rng))
        estimates.append(_aligned(est, "client_probabilities_", records))
    # Eight records kept of twenty: the others are spread over the wildcard cells.
    assert np.all(_within(np.array(estimates), probabilities[records[:, 0], records[:, 1]]))


def test_reports_for_another_head_list_are_rejected():
    optin, clients, rng = _two_phase_population(16)
    est = BlenderHeavyHitters(max_records=5, random_state=rng).fit(optin,
                                                                   trust_group=_opt_in(optin))
    other = BlenderClient([(0, 0), (123, 4)], epsilon=4.0, delta=1e-5)
    reports = other.privatize(np.tile([123, 4], (100, 1)), random_state=0)
    first_foreign = next(tuple(r) for r in reports.tolist() if r[0] == 123)
    with pytest.raises(ValueError, match=rf"got \({first_foreign[0]}, {first_foreign[1]}\)"):
        est.fit_reports(reports)


def test_no_clients_means_the_opt_in_estimates_alone():
    X = make_search_logs(20_000, random_state=17, **SMALL_LOG)
    est = BlenderHeavyHitters(random_state=18).fit(X, trust_group=_opt_in(X))
    assert est.n_clients_ == 0
    assert np.all(np.isnan(est.client_probabilities_)) and np.all(est.weights_ == 1.0)
    np.testing.assert_array_equal(est.variances_, est.optin_variances_)


def test_too_few_opt_in_users_give_an_empty_head_list():
    X = np.array([[0, 0]] * 3 + [[1, 1]] * 50)
    trust = ["tcm"] * 3 + ["lm"] * 50
    est = BlenderHeavyHitters(random_state=19).fit(X, trust_group=trust)
    assert est.head_list_ == [] and est.n_candidates_ == 0 and est.other_probability_ == 1.0
    assert est.n_clients_ == 50 and est.score(X) == 0.0
    with pytest.raises(ValueError, match="head list is empty"):
        est.make_client()
    with pytest.raises(ValueError, match="head list is empty"):
        est.fit_reports([[0, 0]])


# --------------------------------------------------------------------------
# Utility on a search log of a million users (the paper's Section 4 setting)
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def million_users():
    X = make_search_logs(1_000_000, random_state=20)
    trust = np.where(np.random.default_rng(21).random(len(X)) < 0.05, "tcm", "lm")
    est = BlenderHeavyHitters(epsilon=4.0, delta=1e-6, max_records=50, random_state=22)
    records, counts = np.unique(X, axis=0, return_counts=True)
    return X, (records, counts), est.fit(X, trust_group=trust)


@pytest.mark.slow
def test_ndcg_is_at_least_95_percent_with_5_percent_opt_in(million_users):
    # The paper's headline, on the paper's metric: ideal lists as long as the head list.
    X, (records, counts), est = million_users
    assert len(est.head_list_) == 50
    head = np.array(est.head_list_)
    assert list_of_lists_ndcg((head, est.probabilities_), (records, counts)) >= 0.95


@pytest.mark.slow
def test_blended_l1_is_below_the_opt_in_only_and_client_only_l1(million_users):
    X, (records, counts), est = million_users
    truth = (records, counts / len(X))
    head = np.array(est.head_list_)
    l1 = {
        name: l1_distance((head, getattr(est, name)), truth)
        for name in ("probabilities_", "optin_probabilities_", "client_probabilities_")
    }
    assert l1["probabilities_"] < min(l1["optin_probabilities_"], l1["client_probabilities_"])


@pytest.mark.slow
def test_score_is_the_list_of_lists_ndcg_of_the_head_list(million_users):
    X, (records, counts), est = million_users
    head = np.array(est.head_list_)
    expected = list_of_lists_ndcg((head, est.probabilities_), (records, counts), ideal="all")
    assert est.score(X) == pytest.approx(expected, rel=1e-12)
    # Against the complete ideal, the 50-record head list misses the tail's relevance.
    assert est.score(X) < list_of_lists_ndcg((head, est.probabilities_), (records, counts))
    # Reversing the estimated order of the same records lowers the score.
    reversed_est = clone(est)
    reversed_est.head_list_, reversed_est.probabilities_ = est.head_list_, est.probabilities_[::-1]
    assert reversed_est.score(X) < est.score(X)


# --------------------------------------------------------------------------
# Input validation and metadata
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, message",
    [
        ([[0, 0.5], [1, 1]], "integer ids"),
        ([[0, -2], [1, 1]], "Negative values in data"),
        ([[0, 1, 2], [1, 1, 1]], "n_features = 3"),
        ([[0, np.nan], [1, 1]], "NaN"),
    ],
)
def test_bad_records_raise_clear_errors(X, message):
    with pytest.raises(ValueError, match=message):
        BlenderHeavyHitters().fit(X, trust_group=_opt_in(X))


def test_integer_valued_floats_and_any_integer_dtype_give_the_same_fit():
    X = make_search_logs(20_000, random_state=23, **SMALL_LOG)
    fits = [
        BlenderHeavyHitters(random_state=24).fit(X.astype(dtype), trust_group=_opt_in(X))
        for dtype in (np.int64, np.int32, np.uint16, np.float64)
    ]
    for fit in fits[1:]:
        assert fit.head_list_ == fits[0].head_list_
        np.testing.assert_array_equal(fit.probabilities_, fits[0].probabilities_)


def test_ids_too_large_to_pack_or_tabulate_give_the_same_fit_shifted():
    X = make_search_logs(20_000, random_state=36, **SMALL_LOG)
    trust = np.arange(20_000) < 4_000
    shift = 2**40
    small = BlenderHeavyHitters(random_state=37).fit(X, trust_group=trust)
    large = BlenderHeavyHitters(random_state=37).fit(X + shift, trust_group=trust)
    assert large.head_list_ == [(q + shift, u + shift) for q, u in small.head_list_]
    np.testing.assert_array_equal(large.probabilities_, small.probabilities_)
    assert large.score(X + shift) == pytest.approx(small.score(X))


def test_inputs_are_not_modified_and_score_keeps_the_fitted_state():
    X = make_search_logs(20_000, random_state=25, **SMALL_LOG)
    trust = np.where(np.arange(20_000) < 4_000, "tcm", "lm")
    X_before, trust_before = X.copy(), trust.copy()
    est = BlenderHeavyHitters(random_state=26).fit(X, trust_group=trust)
    state = pickle.dumps(est.__dict__)
    est.score(X)
    assert pickle.dumps(est.__dict__) == state
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(trust, trust_before)


def test_each_trust_group_may_have_its_own_epsilon_but_only_one():
    X = make_search_logs(20_000, random_state=27, **SMALL_LOG)
    trust = np.arange(20_000) < 4_000
    epsilon = np.where(trust, 4.0, 1.0)
    est = BlenderHeavyHitters(random_state=28).fit(X, trust_group=trust, epsilon=epsilon)
    low = BlenderHeavyHitters(epsilon=1.0, random_state=28).fit(X, trust_group=trust)
    high = BlenderHeavyHitters(epsilon=4.0, random_state=28).fit(X, trust_group=trust)
    # Opt-in users at 4 build the same head list as with epsilon=4 everywhere (the same
    # noise draws); clients at 1 report with the noise of epsilon=1 everywhere.
    records = sorted(high.head_list_)
    assert sorted(est.head_list_) == records
    np.testing.assert_array_equal(_aligned(est, "optin_probabilities_", records),
                                  _aligned(high, "optin_probabilities_", records))
    np.testing.assert_allclose(est.client_variances_.sum(), low.client_variances_.sum(),
                               rtol=0.1)
    epsilon[5] = 2.0
    with pytest.raises(ValueError, match="one epsilon per trust group"):
        BlenderHeavyHitters().fit(X, trust_group=trust, epsilon=epsilon)


def test_default_randomness_differs_between_fits_and_seeds_reproduce():
    X = make_search_logs(20_000, random_state=29, **SMALL_LOG)
    trust = np.arange(20_000) < 4_000
    unseeded = [BlenderHeavyHitters().fit(X, trust_group=trust).probabilities_ for _ in range(2)]
    assert not np.array_equal(unseeded[0], unseeded[1])
    seeded = [BlenderHeavyHitters(random_state=3).fit(X, trust_group=trust) for _ in range(2)]
    assert seeded[0].head_list_ == seeded[1].head_list_
    np.testing.assert_array_equal(seeded[0].probabilities_, seeded[1].probabilities_)


# --------------------------------------------------------------------------
# scikit-learn integration
# --------------------------------------------------------------------------


@pytest.mark.parametrize("routing", [False, True])
def test_cross_validate_routes_trust_group_with_routing_off_and_on(routing):
    X = make_search_logs(30_000, random_state=30, **SMALL_LOG)
    trust = np.where(np.arange(30_000) % 5 == 0, "tcm", "lm")
    est = BlenderHeavyHitters(random_state=31)
    with config_context(enable_metadata_routing=routing):
        if routing:
            est = est.set_fit_request(trust_group=True)
        result = cross_validate(est, X, cv=KFold(3), params={"trust_group": trust})
    assert np.all((result["test_score"] > 0.5) & (result["test_score"] <= 1.0))


def test_pandas_input_records_feature_names():
    pd = pytest.importorskip("pandas")
    X = make_search_logs(20_000, random_state=32, **SMALL_LOG)
    frame = pd.DataFrame(X, columns=["query", "url"])
    est = BlenderHeavyHitters(random_state=33).fit(frame, trust_group=pd.Series(["tcm"] * 20_000))
    assert est.feature_names_in_.tolist() == ["query", "url"]
    assert 0.0 < est.score(frame) <= 1.0


def test_clone_and_pickle_keep_parameters_and_fitted_state():
    X = make_search_logs(20_000, random_state=34, **SMALL_LOG)
    trust = np.arange(20_000) < 4_000
    est = BlenderHeavyHitters(epsilon=2.0, max_records=7, random_state=35)
    est.fit(X, trust_group=trust)
    assert clone(est).get_params() == est.get_params()
    restored = pickle.loads(pickle.dumps(est))
    assert restored.head_list_ == est.head_list_
    np.testing.assert_array_equal(restored.probabilities_, est.probabilities_)
    assert restored.score(X) == est.score(X)
    assert restored.make_client().head_list == est.make_client().head_list
