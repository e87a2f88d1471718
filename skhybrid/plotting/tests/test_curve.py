"""CurveDisplay draws one errorbar curve per label on shared x values."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from skhybrid.plotting import CurveDisplay  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_each_curve_is_drawn_at_its_values():
    x = np.array([0.1, 1.0, 10.0])
    curves = {"kvh": [3.0, 2.0, 1.0], "tcm_only": [4.0, 3.0, 2.0]}
    display = CurveDisplay(x=x, curves=curves, xlabel="epsilon", ylabel="MSE").plot(
        xscale="log"
    )
    assert sorted(display.lines_) == ["kvh", "tcm_only"]
    for label, y in curves.items():
        line_x, line_y = display.lines_[label].lines[0].get_data()
        np.testing.assert_array_equal(line_x, x)
        np.testing.assert_array_equal(line_y, y)
    assert display.ax_.get_xscale() == "log"
    assert display.ax_.get_xlabel() == "epsilon"
    assert [text.get_text() for text in display.ax_.get_legend().get_texts()] == list(curves)


def test_error_bars_only_for_curves_that_have_them():
    display = CurveDisplay(
        x=[1, 2], curves={"a": [1.0, 2.0], "b": [1.0, 1.0]}, errors={"a": [0.5, 0.25]}
    ).plot()
    bottom_top = [segment[:, 1] for segment in display.lines_["a"].lines[2][0].get_segments()]
    np.testing.assert_allclose(bottom_top, [[0.5, 1.5], [1.75, 2.25]])
    assert display.lines_["b"].lines[2] == ()


def test_from_table_plots_columns_on_the_given_axes():
    table = {"epsilon": np.array([1.0, 2.0]), "mse": np.array([4.0, 1.0]),
             "mse_se": np.array([0.1, 0.1])}
    _, ax = plt.subplots()
    display = CurveDisplay.from_table(
        table, x="epsilon", series=["mse"], errors={"mse": "mse_se"}, ax=ax, title="t"
    )
    assert display.ax_ is ax and display.figure_ is ax.figure
    assert ax.get_xlabel() == "epsilon" and ax.get_title() == "t"
    np.testing.assert_array_equal(display.lines_["mse"].lines[0].get_ydata(), [4.0, 1.0])
    # A single curve needs no legend.
    assert ax.get_legend() is None
