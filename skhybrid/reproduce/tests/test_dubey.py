"""dubey-figure1 and dubey-figure2: Dubey and Korolova's Figures 1 and 2, on quick runs."""

import matplotlib
import numpy as np
import pytest

from skhybrid.reproduce import REPRODUCTIONS, reproduce

# The table and file checks are the same for every reproduction of the hybrid papers.
from .test_avent import (
    assert_saves_csv_with_table_header_and_png,
    assert_simulation_agrees,
    assert_table_columns_equal_length_and_finite,
)

matplotlib.use("Agg")

NAMES = ["dubey-figure1", "dubey-figure2"]
MECHANISMS = ["FullLM", "OnlyTCM", "Hybrid"]
N_CRITICAL = 10_139  # Lemma 3.8 for c = 0.01, eps = 0.1, m = 1, sigma = 1/6


@pytest.fixture(scope="module")
def quick_runs():
    return {name: reproduce(name, quick=True, random_state=0) for name in NAMES}


def test_both_figures_are_registered_under_their_names(quick_runs):
    for name in NAMES:
        assert name in REPRODUCTIONS
        assert quick_runs[name].name == name
        assert quick_runs[name].summary


@pytest.mark.parametrize("name", NAMES)
def test_table_columns_are_equal_length_and_finite(quick_runs, name):
    assert_table_columns_equal_length_and_finite(quick_runs[name].table)


@pytest.mark.parametrize("name", NAMES)
def test_save_writes_the_table_as_csv_and_a_png(quick_runs, name, tmp_path):
    assert_saves_csv_with_table_header_and_png(quick_runs[name], tmp_path)


def test_figure1_hybrid_has_a_lower_error_than_both_benchmarks(quick_runs):
    table = quick_runs["dubey-figure1"].table
    assert np.all(table["mse_Hybrid"] < np.minimum(table["mse_FullLM"], table["mse_OnlyTCM"]))
    # Lemma 3.1: FullLM's error is 2 m^2 / (n eps^2).
    np.testing.assert_allclose(table["mse_FullLM"], 2.0 / (table["n"] * 0.1**2))


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_figure1_simulated_errors_agree_with_the_analytic_ones(quick_runs, mechanism):
    table = quick_runs["dubey-figure1"].table
    assert_simulation_agrees(
        table[f"mse_{mechanism}_simulated"],
        table[f"mse_{mechanism}_simulated_se"],
        table[f"mse_{mechanism}"],
    )
    # Pooled over n, with the standard errors added (a bound that allows any correlation).
    ratio = table[f"mse_{mechanism}_simulated_to_analytic"]
    ratio_se = table[f"mse_{mechanism}_simulated_to_analytic_se"]
    assert abs(ratio.mean() - 1.0) <= 3.0 * ratio_se.mean()


def test_figure2_R_exceeds_one_and_peaks_at_n_critical_with_R_max(quick_runs):
    table = quick_runs["dubey-figure2"].table
    assert np.all(table["R"] > 1.0 - 1e-12)
    assert np.all(table["R"] <= table["R_max"] * (1 + 1e-12))
    nearest = np.argmin(np.abs(table["n"] - N_CRITICAL))
    assert abs(table["n"][nearest] - N_CRITICAL) <= 50
    assert np.argmax(table["R"]) == nearest
    # R has a kink at n_critical: 0.4% away from it, R is still within 0.5% of R_max.
    assert table["R"][nearest] >= 0.995 * table["R_max"][0]
    # The Corollary's R_max = 2 (2 - c) m^2 / ((c - 1) eps^2 sigma^2 + 2 m^2).
    c, epsilon, sigma2 = 0.01, 0.1, 1 / 36
    np.testing.assert_allclose(
        table["R_max"], 2 * (2 - c) / ((c - 1) * epsilon**2 * sigma2 + 2), rtol=1e-12
    )


def test_figure2_estimator_uses_the_optimal_weight(quick_runs):
    table = quick_runs["dubey-figure2"].table
    np.testing.assert_allclose(table["weight_fitted"], table["weight"], rtol=1e-9)
    # Lemma 3.3's w* with m = 1:
    # c^2 n (eps^2 sigma^2 + 2) / (c eps^2 n sigma^2 + 2 (c (c n - 1) + 1)).
    n, c, eps2, sigma2 = table["n"], 0.01, 0.1**2, 1 / 36
    w_star = c**2 * n * (eps2 * sigma2 + 2) / (c * eps2 * n * sigma2 + 2 * (c * (c * n - 1) + 1))
    np.testing.assert_allclose(table["weight"], w_star, rtol=1e-12)


def test_figure2_simulated_R_agrees_with_the_analytic_R(quick_runs):
    table = quick_runs["dubey-figure2"].table
    assert_simulation_agrees(table["R_simulated"], table["R_simulated_se"], table["R"])
