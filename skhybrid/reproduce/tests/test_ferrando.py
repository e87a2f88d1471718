"""ferrando-figure1: the mixed mean against the PDP Sample mechanism (Ferrando et al., Fig. 1)."""

import csv

import matplotlib
import numpy as np
import pytest

from skhybrid.reproduce import reproduce

matplotlib.use("Agg")

BASELINE_THRESHOLDS = ["min", "mean", "max"]


@pytest.fixture(scope="module")
def figure_1():
    return reproduce("ferrando-figure1", quick=True, random_state=0)


def test_columns_are_equal_length_and_finite(figure_1):
    lengths = {len(values) for values in figure_1.table.values()}
    assert len(lengths) == 1
    for name, values in figure_1.table.items():
        assert np.all(np.isfinite(values)), name


def test_thresholds_are_the_captions_min_average_and_max(figure_1):
    table = figure_1.table
    np.testing.assert_allclose(table["min_threshold"], 0.01)
    np.testing.assert_allclose(table["mean_threshold"], 1.76)
    np.testing.assert_allclose(table["max_threshold"], 10.0)


@pytest.mark.parametrize("threshold", BASELINE_THRESHOLDS)
def test_mixed_mean_has_a_lower_variance_than_pdp_at_the_named_thresholds(figure_1, threshold):
    table = figure_1.table
    assert np.all(table["mixed_theory"] < table[f"{threshold}_theory"])
    # Simulated, pooled over n (the theory's ratios are 2 to 100 here).
    difference = table[f"{threshold}_variance"].sum() - table["mixed_variance"].sum()
    standard_error = np.sqrt(np.sum(table[f"{threshold}_se"] ** 2 + table["mixed_se"] ** 2))
    assert difference > 2 * standard_error


def test_pdp_at_the_optimal_threshold_is_close_to_the_mixed_mean(figure_1):
    ratio = figure_1.table["optimal_theory"] / figure_1.table["mixed_theory"]
    assert np.all(np.abs(ratio - 1) < 0.1)


def test_simulated_mixed_variance_agrees_with_the_theory(figure_1):
    # The theory uses sigma^2 = 25; clipping to 3 sigma lowers the true variance by ~3%.
    table = figure_1.table
    difference = table["mixed_variance"].sum() - table["mixed_theory"].sum()
    standard_error = np.sqrt(np.sum(table["mixed_se"] ** 2))
    assert abs(difference) < 4 * standard_error + 0.05 * table["mixed_theory"].sum()


def test_save_writes_the_table_as_csv_and_a_png(figure_1, tmp_path):
    csv_path, png_path = figure_1.save(tmp_path)
    with open(csv_path, newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == list(figure_1.table)
    assert len(rows) == 1 + len(figure_1.table["n"])
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
