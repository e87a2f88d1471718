"""avent-*: Avent, Dubey and Korolova's Figures 1-3 and Corollary 4.4, on quick runs."""

import csv

import matplotlib
import numpy as np
import pytest

from skhybrid.reproduce import REPRODUCTIONS, Reproduction, reproduce

matplotlib.use("Agg")

NAMES = ["avent-figure1", "avent-figure2", "avent-figure3", "avent-corollary4.4"]
LOWER_BOUND, UPPER_BOUND = 17 / 8, 16 / 7  # Corollary 4.4
BETA_KEYS = ["c0.005_eps0.1", "c0.005_eps1", "c0.05_eps0.1", "c0.05_eps1"]


@pytest.fixture(scope="module")
def quick_runs():
    return {name: reproduce(name, quick=True, random_state=0) for name in NAMES}


def assert_table_columns_equal_length_and_finite(table):
    lengths = {name: len(values) for name, values in table.items()}
    assert len(set(lengths.values())) == 1, lengths
    for name, values in table.items():
        assert np.all(np.isfinite(np.asarray(values, dtype=float))), name


def assert_saves_csv_with_table_header_and_png(reproduction, directory):
    csv_path, png_path = reproduction.save(directory)
    with open(csv_path, newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == list(reproduction.table)
    assert len(rows) == 1 + len(next(iter(reproduction.table.values())))
    with open(png_path, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"


def assert_simulation_agrees(simulated, standard_error, analytic):
    """Every point within 4.5 standard errors, and the typical point within 2."""
    z = np.abs(np.asarray(simulated) - analytic) / standard_error
    assert z.max() <= 4.5, z
    assert np.median(z) <= 2.0, z


def test_every_avent_reproduction_is_registered_under_its_name(quick_runs):
    for name in NAMES:
        assert name in REPRODUCTIONS
        assert isinstance(quick_runs[name], Reproduction)
        assert quick_runs[name].name == name
        assert quick_runs[name].summary


@pytest.mark.parametrize("name", NAMES)
def test_table_columns_are_equal_length_and_finite(quick_runs, name):
    assert_table_columns_equal_length_and_finite(quick_runs[name].table)


@pytest.mark.parametrize(
    "name",
    # Drawing Figure 3's twelve panels takes a few seconds.
    [pytest.param(name, marks=pytest.mark.slow) if name == "avent-figure3" else name
     for name in NAMES],
)
def test_save_writes_the_table_as_csv_and_a_png(quick_runs, name, tmp_path):
    assert_saves_csv_with_table_header_and_png(quick_runs[name], tmp_path)


def test_figure1_kvh_beats_both_baselines_and_stays_below_16_7(quick_runs):
    # Sec. 4: R(E_KVH) is lower-bounded by 1; Corollary 4.4 caps it at 16/7 for eps <= 1.
    table = quick_runs["avent-figure1"].table
    for key in BETA_KEYS:
        assert np.all(table[f"R_kvh_{key}"] > 1.0), key
        assert np.all(table[f"R_kvh_{key}"] <= UPPER_BOUND), key


def test_figure1_simulated_R_agrees_with_the_analytic_R(quick_runs):
    table = quick_runs["avent-figure1"].table
    assert_simulation_agrees(
        np.concatenate([table[f"R_kvh_simulated_{key}"] for key in BETA_KEYS]),
        np.concatenate([table[f"R_kvh_simulated_se_{key}"] for key in BETA_KEYS]),
        np.concatenate([table[f"R_kvh_{key}"] for key in BETA_KEYS]),
    )


def test_figure1_covers_the_three_beta_distributions_of_the_paper(quick_runs):
    table = quick_runs["avent-figure1"].table
    sigmas = {shape: table["sigma"][table["beta_shape"] == shape][0] for shape in (10, 1, 0.1)}
    # Sec. 4: sigma ~ 0.109, 0.289 and 0.456.
    np.testing.assert_allclose(
        [sigmas[10], sigmas[1], sigmas[0.1]], [0.109, 0.289, 0.456], atol=5e-4
    )


def test_figure3_pwh_never_beats_kvh_loses_somewhere_and_beats_the_worse_baseline(quick_runs):
    # KVH's weight minimises the MSE, so R(E_PWH) <= R(E_KVH); the paper finds regions
    # with R(E_PWH) < 1, while r(E_PWH) > 1 (better than the worse baseline).
    table = quick_runs["avent-figure3"].table
    R = np.concatenate([table[f"R_pwh_{key}"] for key in BETA_KEYS])
    R_kvh = np.concatenate([table[f"R_kvh_{key}"] for key in BETA_KEYS])
    r = np.concatenate([table[f"r_pwh_{key}"] for key in BETA_KEYS])
    assert np.all(R <= R_kvh * (1 + 1e-12))
    assert np.any(R < 1.0)
    assert np.any(R > 1.0)
    assert np.all(r > 1.0)


@pytest.mark.parametrize("quantity", ["R", "r"])
def test_figure3_simulated_improvements_agree_with_the_analytic_ones(quick_runs, quantity):
    table = quick_runs["avent-figure3"].table
    assert_simulation_agrees(
        np.concatenate([table[f"{quantity}_pwh_simulated_{key}"] for key in BETA_KEYS]),
        np.concatenate([table[f"{quantity}_pwh_simulated_se_{key}"] for key in BETA_KEYS]),
        np.concatenate([table[f"{quantity}_pwh_{key}"] for key in BETA_KEYS]),
    )


def test_figure2_kvh_beats_both_baselines_on_the_salaries(quick_runs):
    table = quick_runs["avent-figure2"].table
    assert np.all((table["c"] >= 1e-3 * (1 - 1e-9)) & (table["c"] <= 0.1 * (1 + 1e-9)))
    for epsilon in ["0.1", "0.3", "1", "3", "10"]:
        R = table[f"R_kvh_eps{epsilon}"]
        assert np.all(R >= 1.0), epsilon
        if float(epsilon) <= 1:
            assert np.all(R <= UPPER_BOUND), epsilon


def test_figure2_simulated_R_agrees_with_the_analytic_R(quick_runs):
    table = quick_runs["avent-figure2"].table
    simulated = ["0.1", "10"]
    assert_simulation_agrees(
        np.concatenate([table[f"R_kvh_simulated_eps{eps}"] for eps in simulated]),
        np.concatenate([table[f"R_kvh_simulated_se_eps{eps}"] for eps in simulated]),
        np.concatenate([table[f"R_kvh_eps{eps}"] for eps in simulated]),
    )


def test_corollary_4_4_largest_R_lies_between_17_8_and_16_7(quick_runs):
    table = quick_runs["avent-corollary4.4"].table
    assert np.all(table["epsilon"] <= 1.0)
    assert np.all(table["y"] <= 0.25)
    assert np.all(table["max_R"] <= UPPER_BOUND)
    assert table["max_R"].max() >= LOWER_BOUND * (1 - 1e-9)
    np.testing.assert_allclose(table["lower_bound"], LOWER_BOUND)
    np.testing.assert_allclose(table["upper_bound"], UPPER_BOUND)


def test_corollary_4_4_supremum_over_n_matches_a_brute_force_maximum(quick_runs):
    # The supremum bounds every R on the n grid, and the grid comes within 0.1% of it.
    table = quick_runs["avent-corollary4.4"].table
    assert np.all(table["max_R_over_n_grid"] <= table["max_R"] * (1 + 1e-9))
    np.testing.assert_allclose(table["max_R_over_n_grid"], table["max_R"], rtol=1e-3)


def test_corollary_4_4_summary_states_the_bounds_hold(quick_runs):
    summary = quick_runs["avent-corollary4.4"].summary
    assert "Every value <= 16/7: True" in summary
    assert "the largest >= 17/8: True" in summary
