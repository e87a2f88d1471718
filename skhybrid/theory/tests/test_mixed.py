"""Tests of the mixed-estimator and Sample-mechanism theory (Ferrando, Gillenwater, Kulesza)."""

import numpy as np
import pytest
from scipy.stats import norm

from skhybrid.theory import _mixed as mixed_theory
from skhybrid.theory._mixed import (
    group_mean_noise_scale,
    group_mean_variance,
    inverse_variance_weights,
    mixed_mean_variance,
    mixed_mean_weights,
    mixed_quantile_weights,
    mse_about_empirical_mean,
    optimal_sample_threshold,
    sample_mechanism_mse,
    sample_mechanism_probabilities,
    sample_mechanism_thresholds,
)

# Ferrando et al. Figure 1: group sizes [n, 100, 500, 1000, 5000, 10000] and epsilons.
FIGURE_1_EPSILON = np.array([10.0, 0.05, 0.1, 0.01, 0.25, 0.15])
FIGURE_1_PRIVATE_SIZES = [100, 500, 1000, 5000, 10000]
# N(0, 25) data. The paper does not state its bounds; we clip to [-15, 15] (3 sigma), so
# the replace-one sensitivity of a sum is upper - lower = 30.
DATA_SD = 5.0
BOUND = 15.0
DATA_RANGE = 2 * BOUND


def figure_1_sizes(n):
    return np.array([n, *FIGURE_1_PRIVATE_SIZES], dtype=float)


def figure_1_user_epsilon(n):
    return np.repeat(FIGURE_1_EPSILON, figure_1_sizes(n).astype(int))


def clipped_normal_variance(sd, bound):
    """Var(clip(X, -bound, bound)) for X ~ N(0, sd^2): the truncated second moment plus
    the mass clipped to +-bound."""
    k = bound / sd
    inside = sd**2 * (2 * norm.cdf(k) - 1 - 2 * k * norm.pdf(k))
    return inside + 2 * bound**2 * norm.sf(k)


FIGURE_1_VARIANCE = clipped_normal_variance(DATA_SD, BOUND)


# ---------------------------------------------------------------- keep probabilities


def test_keep_probability_matches_jorgensen_definition():
    rng = np.random.default_rng(0)
    epsilon = rng.uniform(0.01, 5.0, size=200)
    for threshold in [0.05, 0.7, 3.0]:
        definition = np.minimum(1.0, np.expm1(epsilon) / np.expm1(threshold))
        np.testing.assert_allclose(
            sample_mechanism_probabilities(epsilon, threshold), definition, rtol=1e-12
        )


def test_users_at_or_above_threshold_and_public_users_are_always_kept():
    epsilon = np.array([0.1, 0.5, 0.5000001, 2.0, np.inf])
    probabilities = sample_mechanism_probabilities(epsilon, 0.5)
    assert np.all(probabilities[1:] == 1.0)
    assert 0 < probabilities[0] < 1
    # t = inf keeps exactly the public users.
    np.testing.assert_array_equal(
        sample_mechanism_probabilities(epsilon, np.inf), [0, 0, 0, 0, 1]
    )


def test_keep_probability_is_at_most_epsilon_over_threshold():
    # Ferrando Sec. 2: (e^eps - 1) / (e^t - 1) <= p_hat = min(1, eps / t).
    epsilon = np.geomspace(1e-3, 20, 60)
    for threshold in [0.01, 0.3, 1.0, 10.0]:
        probabilities = sample_mechanism_probabilities(epsilon, threshold)
        assert np.all(probabilities <= np.minimum(1.0, epsilon / threshold) * (1 + 1e-12))


def test_keep_probability_does_not_overflow_for_large_privacy_levels():
    # exp(1000) overflows; the probability is e^(eps - t) up to a factor 1 + O(e^-eps).
    probability = sample_mechanism_probabilities([800.0], 1000.0)[0]
    assert probability == pytest.approx(np.exp(-200.0), rel=1e-12)


# ---------------------------------------------------------------- named thresholds


@pytest.mark.parametrize("n", [100, 10000])
def test_thresholds_of_figure_1_are_the_papers_min_average_max(n):
    # Figure 1 caption: t_min = 0.01, t_average = 1.76, t_max = 10.0, for every n.
    thresholds = sample_mechanism_thresholds(figure_1_user_epsilon(n))
    assert thresholds["min"] == 0.01
    assert thresholds["mean"] == pytest.approx(1.76, rel=1e-12)
    assert thresholds["max"] == 10.0


def test_public_users_do_not_enter_min_and_mean_but_make_max_infinite():
    epsilon = np.repeat([0.2, 1.0, np.inf], [5, 50, 500])
    thresholds = sample_mechanism_thresholds(epsilon)
    assert thresholds == {"min": 0.2, "mean": pytest.approx(0.6), "max": np.inf}
    only_public = sample_mechanism_thresholds([np.inf, np.inf])
    assert only_public == {"min": np.inf, "mean": np.inf, "max": np.inf}


# ---------------------------------------------------------------- group estimates


def test_group_noise_scale_is_range_over_size_times_epsilon():
    sizes = np.array([10, 200, 3000])
    epsilon = np.array([0.1, 1.0, np.inf])
    np.testing.assert_allclose(
        group_mean_noise_scale(sizes, epsilon, 4.0), [4.0 / 1.0, 4.0 / 200, 0.0]
    )


def test_group_variance_is_sampling_variance_plus_laplace_variance():
    sizes = np.array([10, 200, 3000])
    epsilon = np.array([0.1, 1.0, np.inf])
    expected = 2.5 / sizes + 2 * (4.0 / (sizes * epsilon)) ** 2
    np.testing.assert_allclose(
        group_mean_variance(sizes, epsilon, data_range=4.0, variance=2.5), expected
    )
    # The public group: sampling variance only.
    assert group_mean_variance(3000, np.inf, data_range=4.0, variance=2.5) == 2.5 / 3000


# ---------------------------------------------------------------- mixing weights


def test_weights_equal_the_inverse_variance_formula_of_section_2():
    sizes = figure_1_sizes(700)
    r, sigma2 = DATA_RANGE, FIGURE_1_VARIANCE
    # beta_i ~ n_i^2 / (n_i sigma^2 + 2 r^2 / eps_i^2), normalised (Ferrando Sec. 2).
    beta_tilde = sizes**2 / (sizes * sigma2 + 2 * r**2 / FIGURE_1_EPSILON**2)
    weights = mixed_mean_weights(sizes, FIGURE_1_EPSILON, data_range=r, variance=sigma2)
    np.testing.assert_allclose(weights, beta_tilde / beta_tilde.sum(), rtol=1e-12)
    assert weights.sum() == pytest.approx(1.0, rel=1e-15)


def test_public_group_weight_is_proportional_to_n_over_variance():
    sizes = np.array([40.0, 300.0, 1000.0])
    epsilon = np.array([np.inf, 0.5, 2.0])
    r, sigma2 = 1.0, 0.1
    weights = mixed_mean_weights(sizes, epsilon, data_range=r, variance=sigma2)
    private_variance = (sizes[1:] * sigma2 + 2 * r**2 / epsilon[1:] ** 2) / sizes[1:] ** 2
    np.testing.assert_allclose(
        weights[0] / weights[1:], (sizes[0] / sigma2) * private_variance, rtol=1e-12
    )


def test_per_feature_ranges_give_per_feature_weights_along_the_last_axis():
    sizes = np.array([50.0, 500.0])
    epsilon = np.array([np.inf, 0.3])
    ranges = np.array([[1.0], [10.0]])
    weights = mixed_mean_weights(sizes, epsilon, data_range=ranges, variance=0.2)
    assert weights.shape == (2, 2)
    for row, r in zip(weights, ranges[:, 0]):
        np.testing.assert_allclose(
            row, mixed_mean_weights(sizes, epsilon, data_range=r, variance=0.2)
        )
    # A wider range means more noise on the private group, hence less weight.
    assert weights[1, 1] < weights[0, 1]


def test_inverse_variance_weights_handle_zero_and_infinite_variances():
    np.testing.assert_allclose(inverse_variance_weights([0.0, 1.0, np.inf]), [1, 0, 0])
    np.testing.assert_allclose(inverse_variance_weights([0.0, 0.0, 2.0]), [0.5, 0.5, 0])
    np.testing.assert_allclose(inverse_variance_weights([np.inf, 2.0, 6.0]), [0, 0.75, 0.25])
    rows = inverse_variance_weights(np.array([[1.0, 1.0], [1.0, 3.0]]))
    np.testing.assert_allclose(rows, [[0.5, 0.5], [0.75, 0.25]])
    with pytest.raises(ValueError, match="finite"):
        inverse_variance_weights([np.inf, np.inf])
    with pytest.raises(ValueError, match=r"got -1\.0 at index 1$"):
        inverse_variance_weights([1.0, -1.0])
    with pytest.raises(ValueError, match="nan"):
        inverse_variance_weights([1.0, np.nan])


def test_zero_data_variance_pools_the_public_groups_by_size():
    # The limit sigma^2 -> 0 of beta_i ~ n_i / sigma^2: public groups by size, private 0.
    weights = mixed_mean_weights(
        [10, 30, 1000], [np.inf, np.inf, 1.0], data_range=1.0, variance=0.0
    )
    np.testing.assert_allclose(weights, [0.25, 0.75, 0.0])
    assert mixed_mean_variance([10, 30, 1000], [np.inf, np.inf, 1.0],
                               data_range=1.0, variance=0.0) == 0.0


def test_mixed_variance_at_optimal_weights_is_the_rubin_weisberg_minimum():
    sizes = figure_1_sizes(2000)
    kwargs = dict(data_range=DATA_RANGE, variance=FIGURE_1_VARIANCE)
    group_variances = group_mean_variance(sizes, FIGURE_1_EPSILON, **kwargs)
    optimum = mixed_mean_variance(sizes, FIGURE_1_EPSILON, **kwargs)
    assert optimum == pytest.approx(1 / np.sum(1 / group_variances), rel=1e-12)
    rng = np.random.default_rng(1)
    for weights in rng.dirichlet(np.ones(6), size=200):
        assert mixed_mean_variance(sizes, FIGURE_1_EPSILON, weights=weights, **kwargs) >= optimum
    # s_joint = sum_i beta_i^2 Var_i for arbitrary weights.
    weights = rng.dirichlet(np.ones(6))
    assert mixed_mean_variance(sizes, FIGURE_1_EPSILON, weights=weights, **kwargs) == (
        pytest.approx(np.sum(weights**2 * group_variances), rel=1e-12)
    )


def test_mixed_quantile_reuses_the_mean_weights():
    # Ferrando Sec. 2, "Quantiles": "we re-use the mixing weights derived for ... means".
    sizes, epsilon = [300, 701], [0.1, 1.0]
    np.testing.assert_array_equal(
        mixed_quantile_weights(sizes, epsilon, data_range=6.0, variance=1.0),
        mixed_mean_weights(sizes, epsilon, data_range=6.0, variance=1.0),
    )


# ---------------------------------------------------------------- Sample mechanism error


def test_sample_mechanism_error_is_group_variance_of_the_expected_kept_set():
    epsilon = np.repeat([0.1, 0.5, np.inf], [400, 300, 50])
    threshold = 0.3
    kept = 400 * np.expm1(0.1) / np.expm1(0.3) + 300 + 50
    expected = 2.0 / kept + 2 * (3.0 / (kept * threshold)) ** 2
    assert sample_mechanism_mse(
        epsilon, threshold, data_range=3.0, variance=2.0
    ) == pytest.approx(expected, rel=1e-12)
    # Vectorised over thresholds.
    thresholds = np.array([0.1, 0.3, np.inf])
    errors = sample_mechanism_mse(epsilon, thresholds, data_range=3.0, variance=2.0)
    assert errors.shape == (3,)
    assert errors[1] == pytest.approx(expected, rel=1e-12)


def test_sample_mechanism_error_uses_the_sum_of_the_keep_probabilities():
    # Per-user levels, including extreme and public ones, at many thresholds.
    rng = np.random.default_rng(2)
    epsilon = np.concatenate([rng.lognormal(-1, 2, size=3000), [750.0, 900.0], [np.inf] * 3])
    for threshold in [1e-3, 0.2, 1.0, 30.0, 800.0, np.inf]:
        kept = sample_mechanism_probabilities(epsilon, threshold).sum()
        assert sample_mechanism_mse(epsilon, threshold, data_range=2.0, variance=0.5) == (
            pytest.approx(group_mean_variance(kept, threshold, data_range=2.0, variance=0.5),
                          rel=1e-10)
        )


def test_sample_mechanism_at_max_threshold_discards_private_users_when_some_are_public():
    # Chaudhuri and Courtade Sec. IV-A: with t = max eps = inf, SM keeps only public data.
    epsilon = np.repeat([0.5, 2.0, np.inf], [1000, 1000, 80])
    t_max = sample_mechanism_thresholds(epsilon)["max"]
    assert sample_mechanism_mse(epsilon, t_max, data_range=1.0, variance=0.2) == 0.2 / 80


@pytest.mark.parametrize(
    "n_public, n_private, epsilon",
    [(50, 1000, 0.1), (1000, 50, 0.1), (200, 5000, 1.0), (10, 100, 5.0)],
)
def test_sample_mechanism_never_beats_mixing_one_public_and_one_private_group(
    n_public, n_private, epsilon
):
    # Ferrando Sec. 2, "Comparison with baseline method": for any t the Sample estimate is
    # a convex combination whose private term has at least the mixed estimator's variance.
    user_epsilon = np.repeat([np.inf, epsilon], [n_public, n_private])
    mixed = mixed_mean_variance(
        [n_public, n_private], [np.inf, epsilon], data_range=1.0, variance=0.25
    )
    thresholds = np.geomspace(epsilon / 100, epsilon * 100, 400)
    sample = sample_mechanism_mse(user_epsilon, thresholds, data_range=1.0, variance=0.25)
    assert np.all(sample >= mixed * (1 - 1e-12))


def test_mse_about_empirical_mean_subtracts_the_variance_of_the_data_mean():
    assert mse_about_empirical_mean(0.003, n_samples=200, variance=0.25) == pytest.approx(
        0.003 - 0.25 / 200
    )


# ---------------------------------------------------------------- optimal threshold


def _brute_force_minimum(epsilon, data_range, variance, thresholds):
    errors = sample_mechanism_mse(epsilon, thresholds, data_range=data_range, variance=variance)
    return errors.min()


@pytest.mark.parametrize("seed", range(6))
def test_optimal_threshold_is_no_worse_than_a_dense_grid_and_the_epsilons(seed):
    rng = np.random.default_rng(seed)
    n_groups = rng.integers(2, 6)
    values = np.sort(rng.uniform(0.02, 3.0, size=n_groups))
    if seed % 2:
        values = np.append(values, np.inf)
    epsilon = np.repeat(values, rng.integers(5, 2000, size=values.size))
    data_range, variance = rng.uniform(0.5, 20), rng.uniform(0.01, 10)
    t_opt = optimal_sample_threshold(epsilon, data_range=data_range, variance=variance)
    grid = np.concatenate([np.geomspace(0.01, 50.0, 20000), values, [np.inf]])
    best = _brute_force_minimum(epsilon, data_range, variance, grid)
    achieved = sample_mechanism_mse(epsilon, t_opt, data_range=data_range, variance=variance)
    assert achieved <= best * (1 + 1e-9)


def test_optimal_threshold_can_lie_strictly_between_two_epsilon_values():
    # Figure 1's groups with a narrow range: the best t is between 0.01 and 0.05, and it
    # beats every distinct epsilon value, so searching the epsilons alone is not enough.
    epsilon = figure_1_user_epsilon(1000)
    t_opt = optimal_sample_threshold(epsilon, data_range=1.0, variance=25.0)
    assert 0.01 < t_opt < 0.05
    at_epsilons = sample_mechanism_mse(
        epsilon, np.unique(FIGURE_1_EPSILON), data_range=1.0, variance=25.0
    )
    assert sample_mechanism_mse(epsilon, t_opt, data_range=1.0, variance=25.0) < (
        at_epsilons.min() * (1 - 1e-3)
    )


def test_optimal_threshold_edge_cases():
    # One group: keep everyone at t = eps (larger t subsamples, smaller t adds noise).
    assert optimal_sample_threshold(np.full(50, 0.7), data_range=1.0, variance=0.25) == 0.7
    # Only public users: no noise needed.
    assert optimal_sample_threshold([np.inf, np.inf], data_range=1.0, variance=0.25) == np.inf
    # A large public group and a few very private users: use the public data only.
    epsilon = np.repeat([np.inf, 0.01], [10000, 10])
    assert optimal_sample_threshold(epsilon, data_range=1.0, variance=0.25) == np.inf
    # Per-feature ranges give one threshold each.
    thresholds = optimal_sample_threshold(
        figure_1_user_epsilon(100), data_range=[1.0, DATA_RANGE], variance=FIGURE_1_VARIANCE
    )
    assert thresholds.shape == (2,) and thresholds[0] < thresholds[1]


def test_optimal_threshold_is_fast_when_every_user_has_their_own_epsilon():
    rng = np.random.default_rng(3)
    epsilon = np.exp(rng.uniform(np.log(1e-3), np.log(10.0), size=100_000))
    t_opt = optimal_sample_threshold(epsilon, data_range=1.0, variance=0.1)
    grid = np.geomspace(1e-3, 10.0, 5000)
    best = _brute_force_minimum(epsilon, 1.0, 0.1, grid)
    assert sample_mechanism_mse(epsilon, t_opt, data_range=1.0, variance=0.1) <= best


@pytest.mark.parametrize("variance", [0.0, 0.01, 0.08])
def test_optimal_threshold_with_many_levels_matches_the_dense_grid(monkeypatch, variance):
    # Past _MAX_GRID_POINTS the grid thins to a point per interval; the refinement must
    # still land on the 16-points-per-interval search's threshold.
    rng = np.random.default_rng(1)
    levels = np.unique(np.round(rng.uniform(0.05, 5.0, 20_000), 7))
    counts = rng.integers(1, 20, levels.size).astype(float)
    kwargs = {"data_range": 1.0, "variance": variance, "counts": counts, "mean_offset": 0.2}
    thinned = optimal_sample_threshold(levels, **kwargs)
    monkeypatch.setattr(mixed_theory, "_MAX_GRID_POINTS", 10**9)
    assert thinned == optimal_sample_threshold(levels, **kwargs)


@pytest.mark.parametrize("n", [100, 1000, 10000])
def test_figure_1_optimal_threshold_is_the_papers_0_25_when_range_is_20_sigma(n):
    # The paper reports t_optimized = 0.25 for all n but not its bounds. Its "PDP joint
    # variance" gives 0.25 for r / sigma between about 17 and 21 (r = 100 with sigma = 5
    # here); clipping at 3 sigma gives 0.15 instead (see the Monte Carlo test below).
    t_opt = optimal_sample_threshold(figure_1_user_epsilon(n), data_range=100.0, variance=25.0)
    assert t_opt == 0.25


# ---------------------------------------------------------------- Figure 1 comparisons


@pytest.mark.parametrize("n", [100, 300, 1000, 3000, 10000])
def test_figure_1_mixed_mean_beats_the_sample_mechanism_at_min_mean_and_max(n):
    kwargs = dict(data_range=DATA_RANGE, variance=FIGURE_1_VARIANCE)
    mixed = mixed_mean_variance(figure_1_sizes(n), FIGURE_1_EPSILON, **kwargs)
    epsilon = figure_1_user_epsilon(n)
    thresholds = sample_mechanism_thresholds(epsilon)
    for name in ["min", "mean", "max"]:
        assert mixed < sample_mechanism_mse(epsilon, thresholds[name], **kwargs), name


@pytest.mark.parametrize("n", [100, 300, 1000, 3000, 10000])
def test_figure_1_sample_mechanism_at_optimal_threshold_is_about_the_mixed_mean(n):
    # "In this case, the performance of PDP matches that of our proposed mechanism."
    # It is within 10%, and slightly *better*: Sample adds one noise draw for all kept
    # users, mixing adds one per group (the limitation noted in Ferrando Sec. 4).
    kwargs = dict(data_range=DATA_RANGE, variance=FIGURE_1_VARIANCE)
    mixed = mixed_mean_variance(figure_1_sizes(n), FIGURE_1_EPSILON, **kwargs)
    epsilon = figure_1_user_epsilon(n)
    t_opt = optimal_sample_threshold(epsilon, **kwargs)
    assert sample_mechanism_mse(epsilon, t_opt, **kwargs) / mixed == pytest.approx(1, abs=0.1)


# ---------------------------------------------------------------- Monte Carlo checks

MONTE_CARLO_N = 1000
MONTE_CARLO_TRIALS = 4000
MONTE_CARLO_THRESHOLDS = {"min": 0.01, "t=0.15": 0.15, "t=0.25": 0.25, "mean": 1.76, "max": 10.0}


@pytest.fixture(scope="module")
def figure_1_simulation():
    """Squared errors of plain-numpy simulations of both estimators on Figure 1's groups.

    Each trial draws clipped N(0, 25) data, then (a) per group the mean plus Laplace noise
    of scale range / (n_i eps_i), mixed with the analytic weights; (b) for each threshold,
    Bernoulli(p_i) keep decisions, the kept mean plus Laplace noise of scale
    range / (kept * t). Thresholds share the data, coins and noise draw (valid marginals,
    and paired comparisons between thresholds are sharper).
    """
    rng = np.random.default_rng(20211101)
    sizes = figure_1_sizes(MONTE_CARLO_N).astype(int)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    user_epsilon = figure_1_user_epsilon(MONTE_CARLO_N)
    weights = mixed_mean_weights(
        sizes, FIGURE_1_EPSILON, data_range=DATA_RANGE, variance=FIGURE_1_VARIANCE
    )
    scales = group_mean_noise_scale(sizes, FIGURE_1_EPSILON, DATA_RANGE)
    keep = {name: sample_mechanism_probabilities(user_epsilon, t)
            for name, t in MONTE_CARLO_THRESHOLDS.items()}
    errors = {"mixed": [], "mixed_empirical": []}
    for name in MONTE_CARLO_THRESHOLDS:
        errors[name], errors[name + "_empirical"] = [], []
    chunk = 100
    for _ in range(MONTE_CARLO_TRIALS // chunk):
        data = np.clip(rng.normal(0.0, DATA_SD, size=(chunk, sizes.sum())), -BOUND, BOUND)
        data_mean = data.mean(axis=1)
        group_means = np.add.reduceat(data, starts, axis=1) / sizes
        mixed = (group_means + rng.laplace(scale=scales, size=(chunk, sizes.size))) @ weights
        errors["mixed"].append(mixed)
        errors["mixed_empirical"].append(mixed - data_mean)
        coins = rng.random(size=data.shape)
        unit_laplace = rng.laplace(size=chunk)
        for name, t in MONTE_CARLO_THRESHOLDS.items():
            kept = coins < keep[name]
            n_kept = kept.sum(axis=1)
            estimate = (
                np.where(kept, data, 0.0).sum(axis=1) / n_kept
                + unit_laplace * DATA_RANGE / (n_kept * t)
            )
            errors[name].append(estimate)
            errors[name + "_empirical"].append(estimate - data_mean)
    return {name: np.concatenate(values) ** 2 for name, values in errors.items()}


def _assert_within_4_standard_errors(squared_errors, analytic):
    estimate = squared_errors.mean()
    standard_error = squared_errors.std(ddof=1) / np.sqrt(squared_errors.size)
    assert abs(estimate - analytic) < 4 * standard_error, (estimate, analytic, standard_error)


def test_mixed_mean_variance_matches_monte_carlo(figure_1_simulation):
    analytic = mixed_mean_variance(
        figure_1_sizes(MONTE_CARLO_N), FIGURE_1_EPSILON,
        data_range=DATA_RANGE, variance=FIGURE_1_VARIANCE,
    )
    _assert_within_4_standard_errors(figure_1_simulation["mixed"], analytic)
    n_total = figure_1_sizes(MONTE_CARLO_N).sum()
    _assert_within_4_standard_errors(
        figure_1_simulation["mixed_empirical"],
        mse_about_empirical_mean(analytic, n_samples=n_total, variance=FIGURE_1_VARIANCE),
    )


@pytest.mark.parametrize("name", list(MONTE_CARLO_THRESHOLDS))
def test_sample_mechanism_mse_matches_monte_carlo(figure_1_simulation, name):
    epsilon = figure_1_user_epsilon(MONTE_CARLO_N)
    analytic = sample_mechanism_mse(
        epsilon, MONTE_CARLO_THRESHOLDS[name], data_range=DATA_RANGE, variance=FIGURE_1_VARIANCE
    )
    _assert_within_4_standard_errors(figure_1_simulation[name], analytic)
    _assert_within_4_standard_errors(
        figure_1_simulation[name + "_empirical"],
        mse_about_empirical_mean(analytic, n_samples=epsilon.size, variance=FIGURE_1_VARIANCE),
    )


def test_with_3_sigma_bounds_monte_carlo_confirms_t_opt_0_15_beats_the_papers_0_25(
    figure_1_simulation,
):
    epsilon = figure_1_user_epsilon(MONTE_CARLO_N)
    t_opt = optimal_sample_threshold(epsilon, data_range=DATA_RANGE, variance=FIGURE_1_VARIANCE)
    assert t_opt == 0.15
    difference = figure_1_simulation["t=0.25"] - figure_1_simulation["t=0.15"]
    standard_error = difference.std(ddof=1) / np.sqrt(difference.size)
    assert difference.mean() > 4 * standard_error


# ---------------------------------------------------------------- input validation


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sample_mechanism_probabilities([1.0, 0.0], 1.0), "epsilon.*0.0 at index 1"),
        (lambda: sample_mechanism_probabilities([1.0], 0.0), "threshold must be > 0; got 0.0"),
        (lambda: group_mean_noise_scale([10, 0], 1.0, 1.0),
         "group_size must be > 0 and finite; got 0.0 at index 1$"),
        (lambda: group_mean_variance(10, 1.0, data_range=1.0, variance=-2.0),
         "variance must be >= 0 and finite; got -2.0"),
        (lambda: sample_mechanism_mse([1.0], 1.0, data_range=np.inf, variance=1.0),
         "data_range must be > 0 and finite; got inf"),
        (lambda: mixed_mean_weights([10, 20], [1.0], data_range=1.0, variance=1.0),
         "one entry per group"),
    ],
)
def test_invalid_inputs_name_the_offending_value(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("levels, sizes", [
    ([0.05, 0.1, 0.01, 0.25, 0.15, 10.0], [100, 500, 1000, 5000, 10000, 300]),
    ([0.5, np.inf], [40, 60]),
    ([2.0, 0.5, 2.0], [10, 20, 30]),  # a repeated entry is added up
])
def test_level_form_of_the_sample_mechanism_equals_the_per_user_form(levels, sizes):
    levels, sizes = np.array(levels), np.array(sizes)
    users = np.repeat(levels, sizes)
    for t in (0.1, 1.0, np.inf):
        assert sample_mechanism_mse(levels, t, data_range=30.0, variance=25.0,
                                    counts=sizes) == pytest.approx(
            sample_mechanism_mse(users, t, data_range=30.0, variance=25.0), rel=1e-12)
    assert optimal_sample_threshold(levels, data_range=30.0, variance=25.0,
                                    counts=sizes) == pytest.approx(
        optimal_sample_threshold(users, data_range=30.0, variance=25.0), rel=1e-9)
