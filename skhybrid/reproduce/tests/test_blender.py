"""blender-ndcg: NDCG of BLENDER's head list against epsilon, blended vs its ingredients."""

import csv

import matplotlib
import numpy as np
import pytest

from skhybrid.reproduce import reproduce

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def ndcg():
    return reproduce("blender-ndcg", quick=True, random_state=0)


def test_columns_are_equal_length_and_ndcg_in_the_unit_interval(ndcg):
    lengths = {len(values) for values in ndcg.table.values()}
    assert len(lengths) == 1
    for name, values in ndcg.table.items():
        assert np.all(np.isfinite(values)), name
    for name in ("blended_ndcg", "optin_ndcg", "client_ndcg"):
        assert np.all((ndcg.table[name] >= 0) & (ndcg.table[name] <= 1)), name
    assert np.all((ndcg.table["head_list_size"] >= 1) & (ndcg.table["head_list_size"] <= 50))


def test_clients_ndcg_increases_with_epsilon(ndcg):
    table = ndcg.table
    gain = table["client_ndcg"][-1] - table["client_ndcg"][0]
    assert gain > 3 * np.hypot(table["client_se"][-1], table["client_se"][0])


def test_blended_ndcg_is_high_at_every_epsilon_and_beats_the_clients_at_small_epsilon(ndcg):
    # The paper: above 95% on its logs; 0.9 leaves room for the quick run's small logs.
    table = ndcg.table
    assert np.all(table["blended_ndcg"] > 0.9)
    gap = table["blended_ndcg"][0] - table["client_ndcg"][0]
    assert gap > 3 * np.hypot(table["blended_se"][0], table["client_se"][0])


def test_save_writes_the_table_as_csv_and_a_png(ndcg, tmp_path):
    csv_path, png_path = ndcg.save(tmp_path)
    with open(csv_path, newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == list(ndcg.table)
    assert len(rows) == 1 + len(ndcg.table["epsilon"])
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
