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


def _labelled_boxes(axis, renderer):
    """The drawn extents of the axis's non-empty tick labels (major and minor)."""
    ticks = axis.get_major_ticks() + axis.get_minor_ticks()
    return [tick.label1.get_window_extent(renderer) for tick in ticks
            if tick.label1.get_visible() and tick.label1.get_text()
            and tick.get_loc() is not None]


@pytest.mark.parametrize("y", [
    np.array([128.0, 131.0, 148.0]),       # a fraction of a decade
    np.array([0.04, 0.08, 0.3]),           # about a decade
    np.array([1e-1, 1e-4, 1e-6]),          # many decades
])
def test_log_axes_label_ticks_as_plain_numbers_without_overlap(y):
    display = CurveDisplay(x=np.array([100.0, 300.0, 1000.0]), curves={"a": y},
                           xlabel="n", ylabel="(MSE - 1/(12n)) n^2")
    display.plot(xscale="log", yscale="log")
    figure = display.figure_
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for axis in (display.ax_.xaxis, display.ax_.yaxis):
        texts = [tick.label1.get_text() for tick in axis.get_minor_ticks()]
        assert not any(texts), texts  # minor ticks are marks only
        labels = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
        assert labels and not any("times" in label or "^" in label for label in labels)
        boxes = sorted(_labelled_boxes(axis, renderer), key=lambda box: (box.x0, box.y0))
        for first, second in zip(boxes, boxes[1:]):
            assert not first.overlaps(second)
    # the y label lies inside the figure (not clipped when saved)
    label_box = display.ax_.yaxis.label.get_window_extent(renderer)
    assert label_box.x0 >= 0
    plt.close(figure)
