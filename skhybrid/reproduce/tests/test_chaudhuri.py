"""chaudhuri-table2 and chaudhuri-figure1b: Chaudhuri and Courtade's Table II and Figure 1B."""

import csv

import matplotlib
import numpy as np
import pytest

from skhybrid.reproduce import reproduce
from skhybrid.theory import two_group_mse

matplotlib.use("Agg")

METHODS = ["ADPM", "PropDPM", "LDPE", "SM", "UNI"]


@pytest.fixture(scope="module")
def table_2():
    return reproduce("chaudhuri-table2", quick=True, random_state=0)


@pytest.fixture(scope="module")
def figure_1b():
    return reproduce("chaudhuri-figure1b", quick=True, random_state=0)


def assert_columns_equal_length_and_numbers_finite(table):
    lengths = {len(values) for values in table.values()}
    assert len(lengths) == 1, {name: len(values) for name, values in table.items()}
    for name, values in table.items():
        values = np.asarray(values)
        if values.dtype.kind == "f":
            assert np.all(np.isfinite(values)), name


def assert_saves_csv_with_the_table_header_and_a_png(reproduction, directory):
    csv_path, png_path = reproduction.save(directory)
    with open(csv_path, newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == list(reproduction.table)
    assert len(rows) == 1 + len(next(iter(reproduction.table.values())))
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- Table II -------------------------------------------------------------------------------


def test_table_2_has_one_row_per_regime_and_method(table_2):
    assert_columns_equal_length_and_numbers_finite(table_2.table)
    assert table_2.table["method"].tolist() == METHODS * 2
    assert table_2.table["paper_log_mse"][0] == -9.3  # ADPM, high Var(eps)


@pytest.mark.parametrize("regime", ["high Var(eps)", "low Var(eps)"])
def test_table_2_adpm_has_the_smallest_worst_case_error(table_2, regime):
    rows = table_2.table["regime"] == regime
    worst = dict(zip(table_2.table["method"][rows], table_2.table["worst_case_log_mse"][rows]))
    for method in METHODS:
        assert worst["ADPM"] <= worst[method] + 1e-12, method


@pytest.mark.parametrize("regime, baseline", [("high Var(eps)", "UNI"), ("low Var(eps)", "LDPE")])
def test_table_2_simulated_adpm_beats_the_paper_s_worst_baseline(table_2, regime, baseline):
    # Table II's largest gaps (about 4 and 7 in ln MSE) must show at quick sizes too.
    rows = table_2.table["regime"] == regime
    log_mse = dict(zip(table_2.table["method"][rows], table_2.table["simulated_log_mse"][rows]))
    se = dict(zip(table_2.table["method"][rows], table_2.table["simulated_log_mse_se"][rows]))
    assert log_mse[baseline] - log_mse["ADPM"] > 3 * np.hypot(se[baseline], se["ADPM"])


def test_table_2_saves_csv_and_png(table_2, tmp_path):
    assert_saves_csv_with_the_table_header_and_a_png(table_2, tmp_path)


# -- Figure 1B ------------------------------------------------------------------------------


def test_figure_1b_columns(figure_1b):
    assert_columns_equal_length_and_numbers_finite(figure_1b.table)
    assert np.all(np.diff(figure_1b.table["eps2"]) > 0)


def test_figure_1b_adpm_theory_is_theorem_1_and_below_every_baseline(figure_1b):
    table = figure_1b.table
    for row, eps2 in enumerate(table["eps2"]):
        assert table["ADPM_theory_x1e4"][row] == pytest.approx(
            1e4 * two_group_mse(1000, 0.7, 0.1, eps2), rel=1e-9
        )
        for method in METHODS:
            assert table["ADPM_theory_x1e4"][row] <= table[f"{method}_theory_x1e4"][row] * (
                1 + 1e-12
            )


def test_figure_1b_adpm_saturates_and_propdpm_degrades_beyond_r_eps1(figure_1b):
    table = figure_1b.table
    beyond = table["eps2"] >= table["saturation_eps2"]
    assert beyond.sum() >= 2 and not beyond.all()
    adpm = table["ADPM_theory_x1e4"]
    np.testing.assert_allclose(adpm[beyond], adpm[beyond][0], rtol=1e-12)
    assert np.all(adpm[~beyond] > adpm[beyond][0])
    assert np.all(np.diff(table["PropDPM_theory_x1e4"][beyond]) > 0)


def test_figure_1b_simulated_errors_agree_with_the_theory(figure_1b):
    # Bernoulli data on {-0.5, 0.5}: the worst-case errors are exact. Pooled over every
    # method and eps2: 20 squared errors per point are too skewed for a per-point test.
    table = figure_1b.table
    simulated = sum(table[f"{method}_mse_x1e4"].sum() for method in METHODS)
    theory = sum(table[f"{method}_theory_x1e4"].sum() for method in METHODS)
    standard_error = np.sqrt(sum(np.sum(table[f"{method}_se_x1e4"] ** 2) for method in METHODS))
    assert abs(simulated - theory) < 4 * standard_error


def test_figure_1b_saves_csv_and_png(figure_1b, tmp_path):
    assert_saves_csv_with_the_table_header_and_a_png(figure_1b, tmp_path)
