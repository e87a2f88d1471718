"""Tests of the hybrid-model theory (Avent, Dubey and Korolova 2020; Dubey and Korolova).

Each test states a property the papers prove or define, and checks the implementation
against it: minimisers found numerically, Monte Carlo simulations with standard-error
tolerances, limits and bounds from the papers' corollaries.
"""

import functools

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from skhybrid.mechanisms import GaussianMechanism
from skhybrid.theory._hybrid import (
    critical_values,
    full_lm_mse,
    gaussian_noise_variances,
    hybrid_mse,
    hybrid_privacy_amplification,
    kvh_weight,
    kvh_weight_heterogeneous,
    laplace_critical_values,
    laplace_noise_variances,
    lm_only_mse,
    max_relative_improvement,
    naive_weight,
    pwh_weight,
    relative_improvement,
    relative_improvement_over_worst,
    tcm_only_mse,
)


def _beta_mean(a, b, m=1.0):
    return m * a / (a + b)


def _beta_variance(a, b, m=1.0):
    return m**2 * a * b / ((a + b) ** 2 * (a + b + 1))


def _random_problems(rng, size, *, heterogeneous):
    """Random problems over many orders of magnitude, as keyword arguments of hybrid_mse."""
    sigma_T2 = 10 ** rng.uniform(-4, 0, size)
    return dict(
        n=10 ** rng.uniform(1, 6, size),
        c=rng.uniform(0.001, 0.999, size),
        s_T2=10 ** rng.uniform(-9, 0, size),
        s_L2=10 ** rng.uniform(-3, 3, size),
        sigma_T2=sigma_T2,
        sigma_L2=10 ** rng.uniform(-4, 0, size) if heterogeneous else sigma_T2,
        mu_T=rng.uniform(0, 1, size) if heterogeneous else np.zeros(size),
        mu_L=rng.uniform(0, 1, size) if heterogeneous else np.zeros(size),
    )


def _laplace_problem(n, c, m, epsilon, sigma2):
    s_T2, s_L2 = laplace_noise_variances(n, c, m, epsilon)
    return dict(n=n, c=c, s_T2=s_T2, s_L2=s_L2, sigma_T2=sigma2, sigma_L2=sigma2)


def _laplace_kvh_relative_improvement(n, c, m, epsilon, sigma2):
    """R(E_KVH) of Theorem 4.3, composed from Def. 3.5, Def. 4.1 and Lemma 3.13."""
    problem = _laplace_problem(n, c, m, epsilon, sigma2)
    weight = kvh_weight(
        n=n, c=c, s_T2=problem["s_T2"], s_L2=problem["s_L2"], sigma2=sigma2
    )
    return relative_improvement(hybrid_mse(weight, **problem), **problem)


def _numerical_argmin(objective):
    result = minimize_scalar(objective, bounds=(0.0, 1.0), method="bounded",
                             options={"xatol": 1e-12})
    return result.x


# --------------------------------------------------------------------------------------
# Weights against their definitions
# --------------------------------------------------------------------------------------


def test_kvh_weight_minimises_hybrid_mse_def_4_1():
    rng = np.random.default_rng(0)
    problems = _random_problems(rng, 60, heterogeneous=False)
    for i in range(60):
        problem = {key: value[i] for key, value in problems.items()}
        weight = kvh_weight(
            n=problem["n"], c=problem["c"], s_T2=problem["s_T2"], s_L2=problem["s_L2"],
            sigma2=problem["sigma_T2"],
        )
        numerical = _numerical_argmin(lambda w: hybrid_mse(w, **problem))
        assert hybrid_mse(weight, **problem) <= hybrid_mse(numerical, **problem) * (1 + 1e-12)
        assert weight == pytest.approx(numerical, abs=1e-5)


def test_kvh_weight_heterogeneous_minimises_hybrid_mse_def_6_1():
    rng = np.random.default_rng(1)
    problems = _random_problems(rng, 60, heterogeneous=True)
    for i in range(60):
        problem = {key: value[i] for key, value in problems.items()}
        weight = kvh_weight_heterogeneous(**problem)
        numerical = _numerical_argmin(lambda w: hybrid_mse(w, **problem))
        assert 0.0 <= weight <= 1.0
        assert hybrid_mse(weight, **problem) <= hybrid_mse(numerical, **problem) * (1 + 1e-12)
        assert weight == pytest.approx(numerical, abs=1e-5)


def test_kvh_weight_heterogeneous_reduces_to_def_4_1_for_equal_groups():
    rng = np.random.default_rng(2)
    problem = _random_problems(rng, 1000, heterogeneous=False)
    common_mean = rng.uniform(-5, 5, 1000)
    problem.update(mu_T=common_mean, mu_L=common_mean)
    homogeneous = kvh_weight(
        n=problem["n"], c=problem["c"], s_T2=problem["s_T2"], s_L2=problem["s_L2"],
        sigma2=problem["sigma_T2"],
    )
    np.testing.assert_allclose(kvh_weight_heterogeneous(**problem), homogeneous, rtol=1e-12)


def test_pwh_weight_minimises_privacy_error_def_5_3():
    # With zero data variance and equal means hybrid_mse is exactly the privacy error
    # w^2 s_T2 + (1 - w)^2 s_L2 / ((1 - c) n) that Def. 5.3 minimises.
    rng = np.random.default_rng(3)
    problems = _random_problems(rng, 60, heterogeneous=False)
    for i in range(60):
        n, c = problems["n"][i], problems["c"][i]
        s_T2, s_L2 = problems["s_T2"][i], problems["s_L2"][i]
        weight = pwh_weight(n=n, c=c, s_T2=s_T2, s_L2=s_L2)
        privacy_error = functools.partial(
            hybrid_mse, n=n, c=c, s_T2=s_T2, s_L2=s_L2, sigma_T2=0.0, sigma_L2=0.0
        )
        numerical = _numerical_argmin(privacy_error)
        assert privacy_error(weight) <= privacy_error(numerical) * (1 + 1e-12)
        assert weight == pytest.approx(numerical, abs=1e-5)


def test_pwh_weight_ignores_the_data_variance_sec_5():
    # PWH is KVH for a curator who assumes the data have no variance.
    rng = np.random.default_rng(4)
    p = _random_problems(rng, 1000, heterogeneous=False)
    pwh = pwh_weight(n=p["n"], c=p["c"], s_T2=p["s_T2"], s_L2=p["s_L2"])
    kvh_at_zero = kvh_weight(n=p["n"], c=p["c"], s_T2=p["s_T2"], s_L2=p["s_L2"], sigma2=0.0)
    np.testing.assert_allclose(pwh, kvh_at_zero, rtol=1e-12)


def test_naive_weight_is_the_tcm_fraction_like_the_empirical_mean_sec_5():
    c = np.array([0.001, 0.2, 0.5, 0.999])
    np.testing.assert_array_equal(naive_weight(c), c)
    # Without noise, weighting by the group sizes reproduces the empirical mean exactly.
    mse = hybrid_mse(naive_weight(c), n=500, c=c, s_T2=0.0, s_L2=0.0,
                     sigma_T2=0.3, sigma_L2=0.7, mu_T=1.0, mu_L=-2.0)
    np.testing.assert_allclose(mse, 0.0, atol=1e-15)


# --------------------------------------------------------------------------------------
# MSE formulas
# --------------------------------------------------------------------------------------


def test_hybrid_mse_at_weight_one_and_zero_is_tcm_only_and_lm_only_lemmas_3_2_3_11():
    rng = np.random.default_rng(5)
    p = _random_problems(rng, 1000, heterogeneous=True)
    groups = ("n", "c", "sigma_T2", "sigma_L2", "mu_T", "mu_L")
    tcm_kwargs = {key: p[key] for key in groups + ("s_T2",)}
    lm_kwargs = {key: p[key] for key in groups + ("s_L2",)}
    np.testing.assert_allclose(hybrid_mse(1.0, **p), tcm_only_mse(**tcm_kwargs), rtol=1e-12)
    np.testing.assert_allclose(hybrid_mse(0.0, **p), lm_only_mse(**lm_kwargs), rtol=1e-12)


# Two groups with different Beta distributions on [0, m]. "bias": the group means
# differ, so every error component (sampling, privacy, bias) is of similar size;
# "laplace": equal means, different variances, Laplace-calibrated noise.
_SCENARIOS = {
    "bias": dict(n=40, c=0.25, m=2.0, beta_T=(2.0, 3.0), beta_L=(0.5, 0.5),
                 noise=dict(s_T2=0.01, s_L2=0.3), seed=11),
    "laplace": dict(n=200, c=0.1, m=1.0, beta_T=(10.0, 10.0), beta_L=(0.5, 0.5),
                    noise=dict(epsilon=2.0), seed=12),
}
_N_TRIALS = 20_000


@functools.lru_cache(maxsize=None)
def _simulation(name):
    """Monte Carlo of every estimator: fresh data and noise in each trial."""
    spec = _SCENARIOS[name]
    n, c, m = spec["n"], spec["c"], spec["m"]
    if "epsilon" in spec["noise"]:
        s_T2, s_L2 = laplace_noise_variances(n, c, m, spec["noise"]["epsilon"])
    else:
        s_T2, s_L2 = spec["noise"]["s_T2"], spec["noise"]["s_L2"]
    n_tcm = int(round(c * n))
    rng = np.random.default_rng(spec["seed"])
    x_tcm = m * rng.beta(*spec["beta_T"], size=(_N_TRIALS, n_tcm))
    x_lm = m * rng.beta(*spec["beta_L"], size=(_N_TRIALS, n - n_tcm))

    def laplace(variance, size):
        return rng.laplace(scale=np.sqrt(variance / 2.0), size=size)

    lm_reports = x_lm + laplace(s_L2, x_lm.shape)
    tcm_reports = x_tcm + laplace(s_L2, x_tcm.shape)  # tcm users' reports under Full-LM
    estimates = dict(
        empirical=(x_tcm.sum(axis=1) + x_lm.sum(axis=1)) / n,
        tcm_only=x_tcm.mean(axis=1) + laplace(s_T2, _N_TRIALS),
        lm_only=lm_reports.mean(axis=1),
        full_lm=(tcm_reports.sum(axis=1) + lm_reports.sum(axis=1)) / n,
    )
    problem = dict(
        n=n, c=c, s_T2=s_T2, s_L2=s_L2,
        sigma_T2=_beta_variance(*spec["beta_T"], m), sigma_L2=_beta_variance(*spec["beta_L"], m),
        mu_T=_beta_mean(*spec["beta_T"], m), mu_L=_beta_mean(*spec["beta_L"], m),
    )
    return problem, estimates


def _assert_within_standard_errors(squared_errors, expected, n_se=4.0):
    mean = squared_errors.mean()
    standard_error = squared_errors.std(ddof=1) / np.sqrt(squared_errors.size)
    assert abs(mean - expected) <= n_se * standard_error, (
        f"Monte Carlo MSE {mean:.6g} +- {standard_error:.2g} vs formula {expected:.6g}"
    )


def _hybrid_estimate_and_mse(estimates, problem, weight):
    estimate = weight * estimates["tcm_only"] + (1.0 - weight) * estimates["lm_only"]
    return estimate, hybrid_mse(weight, **problem)


@pytest.mark.parametrize("scenario", sorted(_SCENARIOS))
@pytest.mark.parametrize(
    "estimator",
    ["tcm_only", "full_lm", "lm_only", "hybrid_w=0.3", "hybrid_w=0.9", "hybrid_kvh_def_6_1"],
)
def test_mse_formula_matches_monte_carlo(scenario, estimator):
    problem, estimates = _simulation(scenario)
    p = problem
    if estimator == "tcm_only":
        estimate = estimates["tcm_only"]
        expected = tcm_only_mse(n=p["n"], c=p["c"], s_T2=p["s_T2"], sigma_T2=p["sigma_T2"],
                                sigma_L2=p["sigma_L2"], mu_T=p["mu_T"], mu_L=p["mu_L"])
    elif estimator == "full_lm":
        estimate = estimates["full_lm"]
        expected = full_lm_mse(n=p["n"], s_L2=p["s_L2"])
    elif estimator == "lm_only":
        estimate = estimates["lm_only"]
        expected = lm_only_mse(n=p["n"], c=p["c"], s_L2=p["s_L2"], sigma_T2=p["sigma_T2"],
                               sigma_L2=p["sigma_L2"], mu_T=p["mu_T"], mu_L=p["mu_L"])
    elif estimator.startswith("hybrid_w="):
        weight = float(estimator.removeprefix("hybrid_w="))
        estimate, expected = _hybrid_estimate_and_mse(estimates, problem, weight)
    else:
        estimate, expected = _hybrid_estimate_and_mse(
            estimates, problem, kvh_weight_heterogeneous(**problem)
        )
    _assert_within_standard_errors((estimate - estimates["empirical"]) ** 2, expected)


def test_laplace_noise_variances_are_those_of_the_laplace_mechanism_sec_2_1():
    # Laplace noise of scale sensitivity / epsilon, sensitivity m / (c n) for the tcm
    # mean and m for one lm user's value: its sample variance must match.
    rng = np.random.default_rng(6)
    n, c, m, epsilon = 300, 0.2, 3.0, 0.7
    s_T2, s_L2 = laplace_noise_variances(n, c, m, epsilon)
    for variance, sensitivity in ((s_T2, m / (c * n)), (s_L2, m)):
        noise = rng.laplace(scale=sensitivity / epsilon, size=200_000)
        _assert_within_standard_errors(noise**2, variance)


def test_gaussian_noise_variances_match_the_classic_gaussian_mechanism():
    n, c, m, epsilon, delta = 1000, 0.05, 2.0, 0.5, 1e-6
    s_T2, s_L2 = gaussian_noise_variances(n, c, m, epsilon, delta)
    for variance, sensitivity in ((s_T2, m / (c * n)), (s_L2, m)):
        mechanism = GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=sensitivity,
                                      calibration="classic", secure=False)
        assert variance == pytest.approx(mechanism.variance(), rel=1e-12)


# --------------------------------------------------------------------------------------
# Relative improvement (Secs. 4 and 5) and the corollaries
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [10.0, 1.0, 0.1])
def test_kvh_beats_both_baselines_on_the_grid_of_figure_1(alpha):
    sigma2 = _beta_variance(alpha, alpha)
    n, c, epsilon = np.meshgrid(np.geomspace(1e3, 1e5, 400), [0.005, 0.05], [0.1, 1.0])
    ratio = _laplace_kvh_relative_improvement(n, c, 1.0, epsilon, sigma2)
    assert np.all(ratio >= 1.0)


def test_figure_1_data_have_the_standard_deviations_the_paper_states():
    stated = {10.0: 0.109, 1.0: 0.289, 0.1: 0.456}
    for alpha, sigma in stated.items():
        assert np.sqrt(_beta_variance(alpha, alpha)) == pytest.approx(sigma, abs=5e-4)


def test_kvh_beats_both_baselines_when_tcm_group_is_smaller_than_noise_ratio_sec_4():
    # After Theorem 4.3: R(E_KVH) > 1 whenever c n < s_L2 / s_T2, for any mechanism.
    rng = np.random.default_rng(7)
    p = _random_problems(rng, 100_000, heterogeneous=False)
    keep = p["c"] * p["n"] < p["s_L2"] / p["s_T2"]
    p = {key: value[keep] for key, value in p.items()}
    weight = kvh_weight(n=p["n"], c=p["c"], s_T2=p["s_T2"], s_L2=p["s_L2"], sigma2=p["sigma_T2"])
    assert keep.sum() > 10_000
    assert np.all(relative_improvement(hybrid_mse(weight, **p), **p) > 1.0)


def test_pwh_never_loses_to_both_baselines_with_laplace_noise_sec_5():
    rng = np.random.default_rng(8)
    size = 100_000
    n = 10 ** rng.uniform(1, 7, size)
    c = rng.uniform(0.001, 0.999, size)
    epsilon = 10 ** rng.uniform(-2, 1.5, size)
    sigma2 = rng.uniform(0.0, 0.25, size)
    p = _laplace_problem(n, c, 1.0, epsilon, sigma2)
    mse = hybrid_mse(pwh_weight(n=n, c=c, s_T2=p["s_T2"], s_L2=p["s_L2"]), **p)
    worst = relative_improvement_over_worst(mse, **p)
    assert np.all(worst > 1.0)
    assert np.all(worst >= relative_improvement(mse, **p))


def test_kvh_improvement_tends_to_17_over_8_on_the_corollary_4_4_sequence():
    # Appendix B: m = 1, epsilon = 1, sigma^2 = 1/4, c = (1 + sqrt((288 + n) / n)) / 18.
    n = np.array([1e3, 1e4, 1e5, 1e6, 1e7, 1e8])
    c = (1.0 + np.sqrt((288.0 + n) / n)) / 18.0
    gap = np.abs(_laplace_kvh_relative_improvement(n, c, 1.0, 1.0, 0.25) - 17.0 / 8.0)
    assert np.all(np.diff(gap) < 0)
    assert gap[-1] < 1e-5


def test_kvh_improvement_never_exceeds_16_over_7_in_high_privacy_corollary_4_4():
    n, c, epsilon, sigma2 = np.meshgrid(
        np.geomspace(1.0, 1e9, 181),
        np.concatenate([np.geomspace(1e-4, 0.5, 120), np.linspace(0.5, 0.999, 40)]),
        np.array([0.01, 0.1, 0.3, 0.5, 0.8, 1.0]),
        np.array([1e-4, 0.01, 0.05, 0.1, 0.2, 0.25]),
        sparse=True,
    )
    ratio = _laplace_kvh_relative_improvement(n, c, 1.0, epsilon, sigma2)
    assert ratio.max() <= 16.0 / 7.0
    assert ratio.max() > 2.0  # the grid reaches the region of the maximum


def test_max_relative_improvement_is_reached_at_n_critical_dubey_korolova():
    c, epsilon, m, sigma2 = 0.01, 0.1, 1.0, (1.0 / 6.0) ** 2
    r_max, n_argmax = max_relative_improvement(c=c, m=m, epsilon=epsilon, sigma2=sigma2)
    _, n_crit = laplace_critical_values(c=c, m=m, epsilon=epsilon, sigma2=sigma2)
    assert n_argmax == n_crit
    assert r_max == pytest.approx(1.99, abs=0.005)  # Dubey and Korolova's Figure 2
    n = np.geomspace(1e2, 1e7, 400_001)
    ratio = _laplace_kvh_relative_improvement(n, c, m, epsilon, sigma2)
    best = np.argmax(ratio)
    assert ratio[best] <= r_max * (1 + 1e-12)
    assert ratio[best] == pytest.approx(r_max, rel=1e-6)
    assert n[best] == pytest.approx(n_crit, rel=1e-3)


@pytest.mark.parametrize(
    "c, epsilon, sigma2, reached",
    [
        (0.2, 1.0, 0.25, True),  # c_crit = 1/9 < c: peak at n_crit
        (0.3, 0.5, 0.1, True),
        (0.05, 1.0, 0.25, False),  # c < c_crit = 1/9: Full-LM always better, R grows with n
        (0.95, 1.0, 0.25, False),  # large c: the n -> inf limit exceeds the peak
    ],
)
def test_max_relative_improvement_is_the_supremum_over_n(c, epsilon, sigma2, reached):
    r_max, n_argmax = max_relative_improvement(c=c, m=1.0, epsilon=epsilon, sigma2=sigma2)
    n = np.geomspace(1.0, 1e13, 200_001)
    ratio = _laplace_kvh_relative_improvement(n, c, 1.0, epsilon, sigma2)
    assert ratio.max() <= r_max * (1 + 1e-9)
    assert np.isfinite(n_argmax) == reached
    if reached:
        # A kink (the baselines cross), so compare the value at n_argmax itself.
        assert _laplace_kvh_relative_improvement(n_argmax, c, 1.0, epsilon, sigma2) == (
            pytest.approx(r_max, rel=1e-10)
        )
        assert n[np.argmax(ratio)] == pytest.approx(n_argmax, rel=1e-3)
    else:
        assert ratio.max() == pytest.approx(r_max, rel=1e-6)
        assert np.argmax(ratio) == n.size - 1  # still growing at the end of the grid


# --------------------------------------------------------------------------------------
# Critical values
# --------------------------------------------------------------------------------------


def _away_from(value, boundary, rel=1e-6):
    return np.abs(value - boundary) > rel * np.maximum(np.abs(boundary), 1.0)


@pytest.mark.parametrize(
    "sigma_T2, sigma_L2, mu_T, mu_L",
    [(0.05, 0.05, 0.5, 0.5), (0.2, 0.01, 0.5, 0.5), (0.01, 0.2, 0.4, 0.6), (0.08, 0.03, 0.7, 0.2)],
)
def test_tcm_only_beats_full_lm_exactly_when_c_above_and_n_below_critical_lemma_3_6(
    sigma_T2, sigma_L2, mu_T, mu_L
):
    # Lemma 3.6 holds s_T2 fixed while n varies.
    s_T2, s_L2 = 1e-4, 0.5
    c, n = np.meshgrid(np.linspace(0.002, 0.998, 499), np.geomspace(1.0, 1e6, 500))
    groups = dict(sigma_T2=sigma_T2, sigma_L2=sigma_L2, mu_T=mu_T, mu_L=mu_L)
    c_crit, n_crit = critical_values(c=c, s_T2=s_T2, s_L2=s_L2, **groups)
    tcm_better = tcm_only_mse(n=n, c=c, s_T2=s_T2, **groups) <= full_lm_mse(n=n, s_L2=s_L2)
    predicted = (c > c_crit) & (n <= n_crit)
    clear = _away_from(c, c_crit) & _away_from(n, n_crit)
    assert 0 < predicted[clear].sum() < clear.sum()
    np.testing.assert_array_equal(tcm_better[clear], predicted[clear])


def test_critical_fraction_is_where_n_critical_changes_sign_lemma_3_6():
    rng = np.random.default_rng(9)
    size = 10_000
    s_L2 = 10 ** rng.uniform(-3, 2, size)
    sigma_T2 = 10 ** rng.uniform(-4, 0, size)
    sigma_L2 = np.where(rng.random(size) < 0.2, sigma_T2, 10 ** rng.uniform(-4, 0, size))
    kwargs = dict(s_T2=1e-3, s_L2=s_L2, sigma_T2=sigma_T2, sigma_L2=sigma_L2)
    c_crit, _ = critical_values(c=0.5, **kwargs)
    assert np.all((c_crit > 0) & (c_crit < 1))
    _, below = critical_values(c=c_crit * (1 - 1e-6), **kwargs)
    _, above = critical_values(c=c_crit + 1e-6 * (1 - c_crit), **kwargs)
    assert np.all(below < 0) and np.all(above > 0)


def test_critical_fraction_is_continuous_where_group_variances_meet_lemma_3_6():
    # The paper's two branches (sigma_T = sigma_L and not) must agree in the limit.
    sigma2 = 0.05
    kwargs = dict(c=0.5, s_T2=1e-3, s_L2=0.4, sigma_L2=sigma2)
    equal, _ = critical_values(sigma_T2=sigma2, **kwargs)
    for relative_gap in (1e-12, 1e-9, 1e-6):
        for sign in (-1, 1):
            nearby, _ = critical_values(sigma_T2=sigma2 * (1 + sign * relative_gap), **kwargs)
            assert nearby == pytest.approx(equal, rel=10 * relative_gap + 1e-12)


@pytest.mark.parametrize("epsilon, sigma2", [(0.1, 0.25), (1.0, 0.25), (1.0, 0.01), (5.0, 0.08)])
def test_tcm_only_beats_full_lm_exactly_when_c_and_n_above_critical_lemma_3_8(epsilon, sigma2):
    # With Laplace noise s_T2 shrinks like 1 / n^2, so the side in n flips.
    m = 1.0
    c, n = np.meshgrid(np.linspace(0.002, 0.998, 499), np.geomspace(1.0, 1e6, 500))
    p = _laplace_problem(n, c, m, epsilon, sigma2)
    c_crit, n_crit = laplace_critical_values(c=c, m=m, epsilon=epsilon, sigma2=sigma2)
    tcm_better = tcm_only_mse(n=n, c=c, s_T2=p["s_T2"], sigma_T2=sigma2, sigma_L2=sigma2) <= (
        full_lm_mse(n=n, s_L2=p["s_L2"])
    )
    predicted = (c > c_crit) & (n >= n_crit)
    clear = _away_from(c, c_crit) & _away_from(n, n_crit)
    assert 0 < predicted[clear].sum() < clear.sum()
    np.testing.assert_array_equal(tcm_better[clear], predicted[clear])


def test_laplace_critical_fraction_is_lemma_3_6_with_laplace_noise():
    m, epsilon, sigma2 = 2.0, 0.5, 0.3
    _, s_L2 = laplace_noise_variances(100, 0.5, m, epsilon)
    general, _ = critical_values(c=0.5, s_T2=1.0, s_L2=s_L2, sigma_T2=sigma2, sigma_L2=sigma2)
    laplace, _ = laplace_critical_values(c=0.5, m=m, epsilon=epsilon, sigma2=sigma2)
    assert laplace == pytest.approx(general, rel=1e-12)


# --------------------------------------------------------------------------------------
# Privacy amplification (Theorem 8.1)
# --------------------------------------------------------------------------------------

_AMPLIFICATION = dict(n=10_000, c=0.05, m=1.0, epsilon=0.5, delta=1e-7)


def _amplification(weight, n_adversarial):
    n, c, m = _AMPLIFICATION["n"], _AMPLIFICATION["c"], _AMPLIFICATION["m"]
    s_T2, s_L2 = gaussian_noise_variances(
        n, c, m, _AMPLIFICATION["epsilon"], _AMPLIFICATION["delta"]
    )
    return hybrid_privacy_amplification(
        weight=weight, n=n, c=c, m=m, s_T2=s_T2, s_L2=s_L2,
        delta=_AMPLIFICATION["delta"], n_adversarial=n_adversarial,
    )


def test_amplified_epsilon_is_below_nominal_when_noise_is_shared_theorem_8_1():
    n_lm = (1 - _AMPLIFICATION["c"]) * _AMPLIFICATION["n"]
    weight, n_adversarial = np.meshgrid(
        np.linspace(0.01, 0.99, 50), np.linspace(0, n_lm - 2, 50)
    )
    epsilon_tcm, epsilon_lm = _amplification(weight, n_adversarial)
    nominal = _AMPLIFICATION["epsilon"]
    assert np.all(epsilon_tcm < nominal * (1 - 1e-9))
    assert np.all(epsilon_lm < nominal * (1 - 1e-9))


def test_no_amplification_in_the_theorems_limits_theorem_8_1():
    nominal = _AMPLIFICATION["epsilon"]
    n_lm = (1 - _AMPLIFICATION["c"]) * _AMPLIFICATION["n"]
    # tcm users: only Y_T protects them when w = 1 or every lm user's noise is known.
    assert _amplification(1.0, 0)[0] == pytest.approx(nominal, rel=1e-12)
    assert _amplification(0.4, n_lm)[0] == pytest.approx(nominal, rel=1e-12)
    # lm users: with w = 0 and every other lm user adversarial, only their own noise is left.
    assert _amplification(0.0, n_lm - 1)[1] == pytest.approx(nominal, rel=1e-12)


def test_lm_users_amplification_is_sqrt_of_honest_users_without_tcm_noise_theorem_8_1():
    # w = 0: the output's noise is the sum of k = |L \ A| independent local noises, whose
    # standard deviation is sqrt(k) times one user's, so epsilon' = epsilon / sqrt(k).
    n_lm = (1 - _AMPLIFICATION["c"]) * _AMPLIFICATION["n"]
    n_adversarial = np.array([0, 100, 9000, n_lm - 4, n_lm - 1])
    _, epsilon_lm = _amplification(0.0, n_adversarial)
    honest = n_lm - n_adversarial
    np.testing.assert_allclose(epsilon_lm, _AMPLIFICATION["epsilon"] / np.sqrt(honest), rtol=1e-12)


def test_amplified_epsilon_grows_with_the_adversarial_coalition_theorem_8_1():
    n_lm = (1 - _AMPLIFICATION["c"]) * _AMPLIFICATION["n"]
    n_adversarial = np.linspace(0, n_lm, 200)
    for weight in (0.0, 0.05, 0.5, 0.95):
        epsilon_tcm, epsilon_lm = _amplification(weight, n_adversarial)
        assert np.all(np.diff(epsilon_tcm) >= 0)
        assert np.all(np.diff(epsilon_lm) >= 0)


def test_theorem_8_1_case_split_picks_the_better_protected_group():
    # w <= c  <=>  w / c <= (1 - w) / (1 - c): then tcm users have the smaller
    # sensitivity, hence the smaller epsilon', and vice versa.
    c = _AMPLIFICATION["c"]
    weight = np.array([0.2 * c, 0.9 * c, 1.1 * c, 0.5, 0.99])
    epsilon_tcm, epsilon_lm = _amplification(weight, 0)
    np.testing.assert_array_equal(epsilon_tcm <= epsilon_lm, weight <= c)


# --------------------------------------------------------------------------------------
# Input validation and broadcasting
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: kvh_weight(n=10, c=1.0, s_T2=1, s_L2=1, sigma2=1),
            r"c must be in \(0, 1\); got 1\.0",
        ),
        (lambda: naive_weight(0.0), r"c must be in \(0, 1\); got 0\.0"),
        (lambda: full_lm_mse(n=-3, s_L2=1), r"n must be > 0 and finite; got -3\.0"),
        (
            lambda: hybrid_mse([0.2, 1.5], n=10, c=0.5, s_T2=1, s_L2=1, sigma_T2=1, sigma_L2=1),
            r"weight must be in \[0, 1\]; got 1\.5 at index 1",
        ),
        (
            lambda: laplace_noise_variances(10, 0.5, 1.0, 0.0),
            r"epsilon must be > 0 and finite; got 0\.0",
        ),
        (
            lambda: tcm_only_mse(n=10, c=0.5, s_T2=np.nan, sigma_T2=1, sigma_L2=1),
            r"s_T2 must be >= 0 and finite; got nan",
        ),
        (
            lambda: hybrid_privacy_amplification(weight=0.5, n=100, c=0.5, m=1, s_T2=1, s_L2=1,
                                                 delta=1e-5, n_adversarial=51),
            r"n_adversarial must be at most the number of lm users \(1 - c\) n; got 51\.0",
        ),
        (lambda: relative_improvement(0.0, n=10, c=0.5, s_T2=1, s_L2=1, sigma_T2=1, sigma_L2=1),
         r"mse must be > 0 and finite; got 0\.0"),
    ],
)
def test_invalid_inputs_raise_value_error_naming_the_value(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_functions_broadcast_like_elementwise_calls():
    rng = np.random.default_rng(10)
    p = _random_problems(rng, 12, heterogeneous=True)
    weight = rng.uniform(0, 1, 12)
    vectorised = hybrid_mse(weight.reshape(3, 4), **{k: v.reshape(3, 4) for k, v in p.items()})
    elementwise = [hybrid_mse(weight[i], **{k: v[i] for k, v in p.items()}) for i in range(12)]
    np.testing.assert_array_equal(vectorised.ravel(), elementwise)
    c_crit, n_crit = critical_values(c=np.array([0.1, 0.5]), s_T2=1e-3, s_L2=1.0,
                                     sigma_T2=0.1, sigma_L2=0.1)
    assert c_crit.shape == n_crit.shape == (2,)
    assert np.ndim(kvh_weight(n=100, c=0.1, s_T2=1e-3, s_L2=1.0, sigma2=0.1)) == 0


def test_peak_fraction_inverts_lemma_3_8s_n_crit_and_is_where_the_baselines_cross():
    """Dubey and Korolova's setting (c = 0.01, eps = 0.1, sigma = m / 6): n_critical
    is about 10,139 (Lemma 3.8), so at that n the peak fraction is c = 0.01; there the
    TCM-only and Full-LM MSEs are equal."""
    from skhybrid.theory import laplace_critical_values, peak_fraction

    _, n_crit = laplace_critical_values(c=0.01, m=1.0, epsilon=0.1, sigma2=1 / 36)
    assert float(n_crit) == pytest.approx(10_139.42, abs=0.01)
    c = peak_fraction(n=float(n_crit), m=1.0, epsilon=0.1, sigma2=1 / 36)
    assert c == pytest.approx(0.01, rel=1e-9)
    s_T2, s_L2 = laplace_noise_variances(float(n_crit), c, 1.0, 0.1)
    assert tcm_only_mse(n=float(n_crit), c=c, s_T2=s_T2, sigma_T2=1 / 36,
                        sigma_L2=1 / 36) == pytest.approx(
        full_lm_mse(n=float(n_crit), s_L2=s_L2), rel=1e-9)
