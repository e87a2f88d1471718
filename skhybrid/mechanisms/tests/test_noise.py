"""Distribution tests of every noise sampler, each with a control that must be rejected."""

import numpy as np
import pytest
from scipy import stats

from skhybrid.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    LocalGaussianRandomizer,
    LocalLaplaceRandomizer,
    analytic_gaussian_delta,
    gaussian_noise_multiplier,
)
from skhybrid.mechanisms._families import LAPLACE
from skhybrid.mechanisms._noise import (
    discrete_laplace_variance,
    grid_step,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

N_DRAWS = 200_000
PASS_LEVEL = 1e-4  # a correct sampler is rejected once in 10,000 runs
REJECT_LEVEL = 1e-8  # a 30%-off scale must be rejected far below this


def _chi_square_pvalue(draws, pmf, support):
    """Chi-square goodness of fit on ``support`` plus one bin for everything else."""
    observed = np.array([np.sum(draws == k) for k in support], dtype=float)
    observed = np.append(observed, draws.size - observed.sum())
    expected = pmf(support) * draws.size
    expected = np.append(expected, draws.size - expected.sum())
    keep = expected > 5
    observed, expected = observed[keep], expected[keep]
    expected *= observed.sum() / expected.sum()
    return stats.chisquare(observed, expected).pvalue


def _discrete_laplace_pmf(scale):
    q = np.exp(-1.0 / scale)
    return lambda k: (1 - q) / (1 + q) * q ** np.abs(k)


def _discrete_gaussian_pmf(sigma):
    grid = np.arange(-60 * int(sigma) - 60, 60 * int(sigma) + 61)
    norm = np.sum(np.exp(-(grid**2) / (2 * sigma**2)))
    return lambda k: np.exp(-(np.asarray(k) ** 2) / (2 * sigma**2)) / norm


@pytest.mark.parametrize("scale", [0.7, 2.5, 10.0])
def test_discrete_laplace_matches_its_pmf_and_rejects_a_30_percent_off_scale(scale):
    draws = sample_discrete_laplace(np.random.default_rng(0), scale, (N_DRAWS,))
    support = np.arange(-8 * scale - 2, 8 * scale + 3).astype(int)
    assert _chi_square_pvalue(draws, _discrete_laplace_pmf(scale), support) > PASS_LEVEL
    assert _chi_square_pvalue(draws, _discrete_laplace_pmf(1.3 * scale), support) < REJECT_LEVEL
    standard_error = np.sqrt(2.0 / N_DRAWS) * discrete_laplace_variance(scale) * 2.5
    assert abs(draws.var() - discrete_laplace_variance(scale)) < 4 * standard_error


@pytest.mark.parametrize("sigma", [1.0, 3.0, 12.0])
def test_discrete_gaussian_matches_its_pmf_and_rejects_a_30_percent_off_sigma(sigma):
    draws = sample_discrete_gaussian(np.random.default_rng(1), sigma, (N_DRAWS,))
    support = np.arange(-6 * sigma - 1, 6 * sigma + 2).astype(int)
    assert _chi_square_pvalue(draws, _discrete_gaussian_pmf(sigma), support) > PASS_LEVEL
    assert _chi_square_pvalue(draws, _discrete_gaussian_pmf(1.3 * sigma), support) < REJECT_LEVEL


def _ks_pvalue(noise, distribution, scale):
    return stats.kstest(noise, distribution(scale=scale).cdf).pvalue


@pytest.mark.parametrize("secure", [True, False])
def test_central_laplace_noise_is_laplace_with_scale_sensitivity_over_epsilon(secure):
    mechanism = LaplaceMechanism(epsilon=0.5, sensitivity=0.2, secure=secure)
    noise = mechanism.randomise(np.full((N_DRAWS, 1), 3.0), random_state=2)[:, 0] - 3.0
    assert _ks_pvalue(noise, stats.laplace, 0.4) > PASS_LEVEL
    assert _ks_pvalue(noise, stats.laplace, 0.4 * 1.3) < REJECT_LEVEL
    assert mechanism.variance() == pytest.approx(2 * 0.4**2, rel=1e-9)


@pytest.mark.parametrize("secure", [True, False])
def test_central_gaussian_noise_is_normal_with_the_calibrated_sigma(secure):
    mechanism = GaussianMechanism(epsilon=0.8, delta=1e-6, sensitivity=0.3, secure=secure)
    noise = mechanism.randomise(np.full((N_DRAWS, 1), -1.0), random_state=3)[:, 0] + 1.0
    assert _ks_pvalue(noise, stats.norm, mechanism.sigma) > PASS_LEVEL
    assert _ks_pvalue(noise, stats.norm, mechanism.sigma * 1.3) < REJECT_LEVEL
    assert mechanism.variance() == pytest.approx(mechanism.sigma**2, rel=1e-9)


def test_local_laplace_reports_have_per_user_scale_range_over_epsilon():
    rng = np.random.default_rng(4)
    values = rng.uniform(-1, 3, N_DRAWS)
    epsilon = rng.choice([0.25, 1.0, 4.0], N_DRAWS)
    randomizer = LocalLaplaceRandomizer(bounds=(-1.0, 3.0))
    reports = randomizer.privatize(values, epsilon=epsilon, random_state=5)
    standardized = (reports - values) / (4.0 / epsilon)
    assert _ks_pvalue(standardized, stats.laplace, 1.0) > PASS_LEVEL
    assert _ks_pvalue(standardized, stats.laplace, 1.3) < REJECT_LEVEL
    variance = randomizer.noise_variance(epsilon=epsilon)
    np.testing.assert_allclose(variance, 2 * (4.0 / epsilon) ** 2, rtol=1e-9)


def test_local_laplace_vector_noise_is_in_proportion_to_each_range():
    values = np.zeros((N_DRAWS, 2))
    randomizer = LocalLaplaceRandomizer(bounds=([0.0, 0.0], [1.0, 3.0]), epsilon=2.0)
    reports = randomizer.privatize(values, random_state=6)
    # Half the budget per feature: scales d * range_j / epsilon = 2 * 1 / 2 and 2 * 3 / 2,
    # which sum to epsilon over the box: 1 / 1 + 3 / 3 = 2.
    for column, scale in zip(reports.T, [1.0, 3.0]):
        assert _ks_pvalue(column, stats.laplace, scale) > PASS_LEVEL
        assert _ks_pvalue(column, stats.laplace, 2.0) < REJECT_LEVEL
    np.testing.assert_allclose(randomizer.noise_variance(2), [2 * 1.0**2, 2 * 3.0**2], rtol=1e-9)


def test_local_gaussian_reports_are_normal_with_the_calibrated_sigma():
    values = np.full(N_DRAWS, 0.5)
    randomizer = LocalGaussianRandomizer(bounds=(0.0, 2.0), epsilon=1.5, delta=1e-5)
    reports = randomizer.privatize(values, random_state=7)
    sigma = 2.0 * gaussian_noise_multiplier(1.5, 1e-5)
    assert _ks_pvalue(reports - 0.5, stats.norm, sigma) > PASS_LEVEL
    assert _ks_pvalue(reports - 0.5, stats.norm, 1.3 * sigma) < REJECT_LEVEL
    assert randomizer.noise_variance() == pytest.approx(sigma**2, rel=1e-9)


def test_local_randomizers_clip_before_noise_and_never_modify_input():
    values = np.array([-50.0, 0.5, 1e9])
    before = values.copy()
    reports = LocalLaplaceRandomizer(bounds=(0.0, 1.0), epsilon=1e6).privatize(values, random_state=0)
    np.testing.assert_allclose(reports, [0.0, 0.5, 1.0], atol=1e-4)
    np.testing.assert_array_equal(values, before)
    with pytest.raises(ValueError, match="NaN"):
        LocalLaplaceRandomizer(bounds=(0.0, 1.0)).privatize([0.5, np.nan])


@pytest.mark.parametrize(
    "mechanism",
    [
        LaplaceMechanism(epsilon=0.3, sensitivity=1.7),
        GaussianMechanism(epsilon=0.3, delta=1e-8, sensitivity=1.7),
    ],
    ids=["laplace", "gaussian"],
)
def test_secure_releases_lie_on_a_power_of_two_grid(mechanism):
    released = mechanism.randomise(np.full((1000, 3), 0.123456789), random_state=8)
    scale = getattr(mechanism, "scale", None) or mechanism.sigma
    step = grid_step(scale)
    assert np.log2(step) == np.round(np.log2(step))
    np.testing.assert_array_equal(released / step, np.round(released / step))


def test_analytic_gaussian_meets_delta_and_beats_the_classic_calibration():
    for epsilon in (0.1, 0.5, 0.99):
        for delta in (1e-3, 1e-6, 1e-10):
            analytic = gaussian_noise_multiplier(epsilon, delta)
            classic = gaussian_noise_multiplier(epsilon, delta, "classic")
            assert analytic_gaussian_delta(epsilon, analytic) <= delta
            assert analytic_gaussian_delta(epsilon, analytic * 0.999) > delta
            assert analytic < classic
            assert classic == pytest.approx(np.sqrt(2 * np.log(1.25 / delta)) / epsilon)
    assert analytic_gaussian_delta(5.0, gaussian_noise_multiplier(5.0, 1e-6)) <= 1e-6


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (2.0, 1e-5), (0.5, 0.0), (0.5, 1.0)])
def test_gaussian_refuses_parameters_outside_its_calibration(epsilon, delta):
    with pytest.raises(ValueError, match="epsilon < 1|delta must be in"):
        GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=1.0, calibration="classic")


def test_exponential_mechanism_probabilities_follow_the_definition_in_log_space():
    utilities = np.array([0.0, 1.0, 3.0])
    log_measure = np.log([1.0, 2.0, 0.5])
    mechanism = ExponentialMechanism(epsilon=1.2, sensitivity=0.5)
    weights = np.array([1.0, 2.0, 0.5]) * np.exp(1.2 * utilities / (2 * 0.5))
    np.testing.assert_allclose(mechanism.probabilities(utilities, log_measure), weights / weights.sum())
    huge = ExponentialMechanism(epsilon=1e3, sensitivity=1e-3, monotonic=True)
    probabilities = huge.probabilities(np.array([1e3, 1e3 - 1e-6, -1e3]))
    assert np.all(np.isfinite(probabilities))
    expected = np.array([1, np.exp(-1)]) / (1 + np.exp(-1))
    np.testing.assert_allclose(probabilities[:2], expected, rtol=1e-6)
    draws = mechanism.select(utilities, log_measure, size=N_DRAWS, random_state=9)
    observed = np.bincount(draws, minlength=3)
    assert stats.chisquare(observed, mechanism.probabilities(utilities, log_measure) * N_DRAWS).pvalue > PASS_LEVEL
    control = ExponentialMechanism(epsilon=1.2 * 1.3, sensitivity=0.5)
    assert stats.chisquare(observed, control.probabilities(utilities, log_measure) * N_DRAWS).pvalue < REJECT_LEVEL


@pytest.mark.parametrize("epsilon", [1e-16, 1e-20, 1e-50])
def test_tiny_epsilon_is_refused_rather_than_released_without_noise(epsilon):
    # Below ~1e-15 the geometric draws would saturate at the int64 maximum and cancel.
    from skhybrid.mechanisms import LaplaceMechanism

    with pytest.raises(ValueError, match=f"epsilon={epsilon:g} is too small"):
        LaplaceMechanism(epsilon=epsilon, sensitivity=1.0).randomise(0.5, random_state=0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: __import__("skhybrid").PDPSampleEstimator(epsilon=1e-50, bounds=(0, 1)),
        lambda: __import__("skhybrid").HybridKMeans(3, epsilon=1e-50, bounds=(0, 1)),
        lambda: __import__("skhybrid").HybridMeanEstimator(epsilon=1e-50, bounds=(0, 1)),
        lambda: __import__("skhybrid").MixedMeanEstimator(epsilon=1e-50, bounds=(0, 1)),
    ],
    ids=["pdp", "kmeans", "hybrid", "mixed"],
)
def test_estimators_refuse_an_epsilon_too_small_to_sample(make):
    X = np.random.default_rng(0).random((60, 2))
    estimator = make()
    # The hybrid estimators get both trust groups; the curator estimators tcm users only.
    hybrid = type(estimator).__name__ in ("HybridKMeans", "HybridMeanEstimator")
    trust_group = ["tcm", "lm"] * 30 if hybrid else None
    with pytest.raises(ValueError, match="too small to draw the noise"):
        estimator.fit(X, trust_group=trust_group)


def test_smallest_supported_epsilon_still_adds_noise():
    from skhybrid.mechanisms import LaplaceMechanism

    # 200 independent one-coordinate releases.
    released = LaplaceMechanism(epsilon=1e-14, sensitivity=1.0).randomise(
        np.zeros((200, 1)), random_state=0
    )
    assert np.count_nonzero(released) >= 190


def test_adpm_at_a_tiny_epsilon_releases_the_data_independent_midpoint():
    # ADPM's program puts zero weight on every user: nothing of the data is released.
    from skhybrid import ADPMEstimator

    X = np.random.default_rng(0).random((60, 2))
    est = ADPMEstimator(epsilon=1e-50, bounds=(0, 1), random_state=0).fit(X)
    assert est.released_midpoint_
    np.testing.assert_array_equal(est.mean_, [0.5, 0.5])


def _one_word_discrete_laplace(words, scale):
    """The inversion of ``_add_discrete_laplace`` written out on all words at once."""
    uniform = (words >> np.uint64(11)).astype(np.float64) * 2.0**-53
    q = np.exp(-1.0 / scale)
    magnitude = np.floor(np.log((1.0 - uniform) * (1.0 + q) / 2.0) / np.log(q))
    return np.where(words & np.uint64(1), -magnitude, magnitude).astype(np.int64)


@pytest.mark.parametrize("scale", [3.0, "per-draw"])
def test_discrete_laplace_blocks_draw_the_stream_of_one_whole_inversion(scale):
    """Draws are made block by block (no n-long array of words): the result must be the
    tail inversion of one word per draw, taken in order from the same generator."""
    from skhybrid.mechanisms._noise import _DRAW_BLOCK, sample_discrete_laplace

    size = (2 * _DRAW_BLOCK + 123, 2)
    scales = np.random.default_rng(1).uniform(1, 9, size) if scale == "per-draw" else scale
    words = np.random.default_rng(7).bit_generator.random_raw(size[0] * size[1]).reshape(size)
    expected = _one_word_discrete_laplace(words, np.asarray(scales, dtype=np.float64))
    drawn = sample_discrete_laplace(np.random.default_rng(7), scales, size)
    # The module's form, floor(scale * (E + g)), and the textbook log ratio may round
    # differently at an integer boundary: allow one unit on a handful of draws.
    assert np.abs(drawn - expected).max() <= 1
    assert np.count_nonzero(drawn != expected) <= 5


@pytest.mark.parametrize("epsilon", [0.8, "per-user"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_secure_laplace_release_adds_the_draws_in_place_as_one_noise_array(epsilon, overwrite):
    """The release adds the draws block by block to the grid units (no n-long noise
    array): it must equal rounding to the grid, adding one whole array of discrete
    Laplace noise from the same generator, and scaling back."""
    from skhybrid.mechanisms._noise import (
        _DRAW_BLOCK,
        _laplace_units,
        grid_step,
        laplace_release,
    )

    rng = np.random.default_rng(4)
    values = rng.uniform(-3.0, 5.0, size=(2 * _DRAW_BLOCK + 77, 2))
    eps = rng.uniform(0.5, 4.0, values.shape[0]) if epsilon == "per-user" else epsilon
    sensitivity = 8.0
    scale = sensitivity / np.asarray(eps)[..., np.newaxis]
    step = grid_step(scale)
    units = np.broadcast_to(
        _laplace_units(sensitivity, np.asarray(eps)[..., np.newaxis], step, 2), values.shape)
    noise = sample_discrete_laplace(np.random.default_rng(9), units, values.shape)
    expected = (np.round(values / step) + noise) * step
    given = values.copy()
    released = laplace_release(given, sensitivity, eps, np.random.default_rng(9), True,
                               overwrite=overwrite)
    np.testing.assert_array_equal(released, expected)
    if not overwrite:
        np.testing.assert_array_equal(given, values)


def test_local_randomizers_never_modify_the_callers_values():
    from skhybrid.mechanisms import LocalGaussianRandomizer, LocalLaplaceRandomizer

    X = np.random.default_rng(2).uniform(-1, 2, size=(1000, 2))
    before = X.copy()
    for randomizer in (LocalLaplaceRandomizer(epsilon=1.0, bounds=(0, 1)),
                       LocalGaussianRandomizer(epsilon=1.0, delta=1e-6, bounds=(0, 1))):
        randomizer.privatize(X, random_state=0)
        np.testing.assert_array_equal(X, before)


def test_owned_privatization_equals_the_public_one():
    from skhybrid._group_estimates import privatize_locally

    X = np.random.default_rng(3).uniform(-1, 2, size=(5000, 2))
    common = {"mechanism": LAPLACE, "epsilon": 0.7, "delta": 0.0,
              "lower": np.zeros(2), "upper": np.ones(2)}
    public = privatize_locally(X, rng=np.random.default_rng(4), **common)
    owned = privatize_locally(X.copy(), rng=np.random.default_rng(4), owned=True, **common)
    np.testing.assert_array_equal(owned, public)


@pytest.mark.parametrize("n_features", [1, 3])
def test_privatized_sum_is_the_sum_of_the_selected_rows_reports(n_features):
    """Block by block, without the reports: the same draws, in the same order, as
    privatizing ``X[rows]`` at once (sums equal up to the summation order)."""
    from skhybrid._group_estimates import _PRIVATIZE_ROWS, privatize_locally, privatized_sum

    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 2, size=(2 * _PRIVATIZE_ROWS + 999, n_features))
    rows = rng.random(X.shape[0]) < 0.7
    before = X.copy()
    common = {"mechanism": LAPLACE, "epsilon": 0.7, "delta": 0.0,
              "lower": np.zeros(n_features), "upper": np.ones(n_features)}
    reports = privatize_locally(X[rows], rng=np.random.default_rng(6), **common)
    sums = privatized_sum(X, rows, rng=np.random.default_rng(6), **common)
    np.testing.assert_allclose(sums, reports.sum(axis=0), rtol=1e-12)
    np.testing.assert_array_equal(X, before)


@pytest.mark.parametrize("size", [1, 2, 7, 32])
@pytest.mark.parametrize("scale", [0.3, 3.0, 2.0**40])
def test_few_discrete_laplace_draws_equal_the_vectorized_inversion(size, scale):
    """Up to _FEW_DRAWS draws of one scale are made in Python floats: they must be the
    vectorized path's draws (forced here by a per-draw scale) from the same words."""
    from skhybrid.mechanisms._noise import _FEW_DRAWS, _add_discrete_laplace

    assert size <= _FEW_DRAWS
    few, vectorized = np.zeros((20, size), dtype=np.int64), np.zeros((20, size), dtype=np.int64)
    for seed in range(20):
        _add_discrete_laplace(few[seed], np.random.default_rng(seed), scale)
        _add_discrete_laplace(vectorized[seed], np.random.default_rng(seed), np.full(size, scale))
    _assert_same_draws(few, vectorized, 1)


def _assert_same_draws(first, second, unit):
    """Equal, except that numpy's SIMD ``log`` (AVX-512 machines) and the C library's
    may differ in the last place, which moves a large scale's floor by one unit on an
    odd draw (on other machines numpy calls the C library and all are equal)."""
    assert np.all(np.abs(first - second) <= unit)
    assert np.count_nonzero(first != second) <= 2


@pytest.mark.parametrize("shape", [(1,), (3,), (4, 2), (32,)])
@pytest.mark.parametrize("overwrite", [False, True])
def test_few_coordinate_laplace_release_equals_the_vectorized_release(shape, overwrite):
    """A release of a few coordinates with scalar sensitivity and epsilon is computed in
    Python floats; with one-element arrays (the vectorized path) the same generator
    must give the same released values bit for bit (but see _assert_same_draws), also
    where the grid units exceed 2**53 (the sum of units and draw then rounds in
    float64) and for values that are not finite (which take the vectorized path)."""
    from skhybrid.mechanisms._noise import GRID_BITS, laplace_release

    rng = np.random.default_rng(sum(shape))
    for trial in range(30):
        magnitude = 10.0 ** rng.uniform(-3, 8)
        values = rng.uniform(-magnitude, magnitude, shape)
        if trial == 29:
            values.flat[0] = np.nan
        sensitivity, epsilon = 10.0 ** rng.uniform(-12, 1), 10.0 ** rng.uniform(-2, 1)
        given = values.copy()
        few = laplace_release(given, sensitivity, epsilon, np.random.default_rng(trial), True,
                              overwrite=overwrite)
        vectorized = laplace_release(values.copy(), np.full(shape[:-1], sensitivity),
                                     np.full(shape[:-1], epsilon),
                                     np.random.default_rng(trial), True)
        step = np.ldexp(1.0, np.frexp(sensitivity / epsilon)[1] - GRID_BITS)
        np.testing.assert_array_equal(np.isnan(few), np.isnan(vectorized))
        finite = ~np.isnan(few)
        # One unit of the draw, or one float64 spacing where the units pass 2**53.
        unit = np.maximum(step, np.spacing(np.abs(vectorized[finite])))
        _assert_same_draws(few[finite], vectorized[finite], unit)
        assert few.shape == values.shape and few.dtype == np.float64
        assert (few is given) == overwrite
        if not overwrite:
            np.testing.assert_array_equal(given, values)


@pytest.mark.parametrize("secure", [False, True])
def test_scalar_laplace_variance_equals_the_array_formula(secure):
    from skhybrid.mechanisms._noise import laplace_variance

    rng = np.random.default_rng(5)
    for _ in range(50):
        sensitivity, epsilon = 10.0 ** rng.uniform(-12, 2), 10.0 ** rng.uniform(-3, 1)
        d = int(rng.integers(1, 5))
        scalar = laplace_variance(sensitivity, epsilon, d, secure)
        array = laplace_variance(np.array([sensitivity]), np.array([epsilon]), d, secure)
        # numpy's exp and expm1 may be SIMD versions, within an ulp of the C library's.
        np.testing.assert_allclose(scalar, array[0], rtol=1e-14)


def test_small_default_releases_read_the_operating_systems_randomness(monkeypatch):
    """With random_state=None a fit's central release draws its few words from
    os.urandom (no generator is keyed): the released mean must be the inversion of
    exactly the bytes the OS returned, and a large draw builds the secure generator."""
    import os

    from skhybrid import HybridMeanEstimator
    from skhybrid.mechanisms._noise import GRID_BITS, _laplace_units
    from skhybrid.utils import _random

    requested = []

    def known_bytes(count):
        requested.append(count)
        return bytes(range(7, 7 + count))

    monkeypatch.setattr(_random.os, "urandom", known_bytes)
    monkeypatch.setattr(_random, "secure_generator",
                        lambda: pytest.fail("a small release keyed a generator"))
    X = np.random.default_rng(0).uniform(0.0, 1.0, (1000, 1))
    # One release (a known variance: no second-moment release next to the mean).
    estimator = HybridMeanEstimator("tcm_only", epsilon=1.0, bounds=(0.0, 1.0),
                                    variance=0.1).fit(X)
    assert requested == [8]
    (word,) = np.frombuffer(bytes(range(7, 15)), dtype=np.uint64)

    # The release, by hand: the centred mean on the grid, plus the word's inversion.
    from skhybrid._group_estimates import slack_ranges
    from skhybrid.utils._sums import centred_sums, fixed_point_sums

    lower, upper = np.array([0.0]), np.array([1.0])
    sensitivity = float(LAPLACE.mean_sensitivity(slack_ranges(upper - lower, 1000), 1000))
    step = np.ldexp(1.0, np.frexp(sensitivity)[1] - GRID_BITS)
    units = _laplace_units(sensitivity, 1.0, step, 1)
    centred = centred_sums(fixed_point_sums(X, lower, upper)[0], lower, upper,
                           n_users=1000)[0] / 1000
    uniform = float(word >> np.uint64(11)) * 2.0**-53
    q = np.exp(-1.0 / units)
    magnitude = np.floor(np.log((1.0 - uniform) * (1.0 + q) / 2.0) / np.log(q))
    draw = -magnitude if int(word) & 1 else magnitude
    expected = (np.round(centred / step) + draw) * step
    assert abs(estimator.mean_[0] - expected) <= step  # the two inversions' rounding

    deferred = _random.DeferredSecureGenerator()
    monkeypatch.setattr(_random, "secure_generator", lambda: np.random.default_rng(3))
    words = deferred.random_raw(_random._OS_WORDS + 1)
    np.testing.assert_array_equal(
        words, np.random.default_rng(3).bit_generator.random_raw(_random._OS_WORDS + 1))
    # Once built, every draw, small ones too, comes from the generator.
    stream = np.random.default_rng(3).bit_generator.random_raw(_random._OS_WORDS + 2)
    np.testing.assert_array_equal(deferred.random_raw(1), stream[-1:])
    assert requested == [8]
    assert _random.check_random_state(deferred) is deferred


@pytest.mark.parametrize("shape", [(33,), (110,), (3, 40), (70_000,)])
@pytest.mark.parametrize("overwrite", [False, True])
def test_scalar_laplace_release_equals_the_per_release_arrays_path(shape, overwrite):
    """More than _FEW_DRAWS coordinates with scalar sensitivity and epsilon: given as
    arrays of one value per release, the same generator must give the same released
    values bit for bit, as must a values array far from zero."""
    from skhybrid.mechanisms._noise import _FEW_DRAWS, laplace_release

    assert np.prod(shape) > _FEW_DRAWS
    rng = np.random.default_rng(len(shape))
    for trial in range(10):
        magnitude = 10.0 ** rng.uniform(-3, 8)
        values = rng.uniform(-magnitude, magnitude, shape) + (1e9 if trial == 9 else 0.0)
        sensitivity, epsilon = 10.0 ** rng.uniform(-12, 1), 10.0 ** rng.uniform(-2, 1)
        given = values.copy()
        scalar = laplace_release(given, sensitivity, epsilon, np.random.default_rng(trial),
                                 True, overwrite=overwrite)
        rows = values.reshape((-1, shape[-1]))
        arrays = laplace_release(rows.copy(), np.full(rows.shape[0], sensitivity),
                                 np.full(rows.shape[0], epsilon),
                                 np.random.default_rng(trial), True)
        np.testing.assert_array_equal(scalar.reshape(rows.shape), arrays)
        assert scalar.shape == values.shape and scalar.dtype == np.float64
        assert (scalar is given) == overwrite
        if not overwrite:
            np.testing.assert_array_equal(given, values)
