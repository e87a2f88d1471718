"""The demo's closed-form landscapes and its figure: the paper's point, legibly drawn."""

import re

import numpy as np
import pytest

from skhybrid._cli import main
from skhybrid._demo import hybrid_landscape, per_user_landscape
from skhybrid.datasets._salaries import UC_SALARY_MAX, UC_SALARY_N, UC_SALARY_STD

N, M, VARIANCE = UC_SALARY_N, UC_SALARY_MAX, UC_SALARY_STD**2


@pytest.mark.parametrize("epsilon", [0.25, 1.0, 4.0])
def test_the_hybrid_gain_peaks_near_2_where_the_baselines_cross(epsilon):
    """Full-LM's MSE by hand (Lemma 3.4 with Laplace noise: 2 (m / eps)^2 / n); at the
    peak of R the two baselines are within 10% of each other (the crossing), and R is
    Dubey and Korolova's R_max = 2 (2 - c) m^2 / ((c - 1) eps^2 sigma^2 + 2 m^2), close
    to 2 because the salaries' range is far wider than their spread."""
    landscape = hybrid_landscape(n=N, data_range=M, variance=VARIANCE, epsilon=epsilon)
    best = landscape.best
    c = landscape.fractions[best]
    full_lm = 2 * (M / epsilon) ** 2 / N
    assert landscape.full_lm[best] == pytest.approx(full_lm, rel=1e-12)
    assert landscape.tcm_only[best] / landscape.full_lm[best] == pytest.approx(1.0, abs=0.1)
    r_max = 2 * (2 - c) * M**2 / ((c - 1) * epsilon**2 * VARIANCE + 2 * M**2)
    assert landscape.improvement[best] == pytest.approx(r_max, rel=0.02)
    # far from the crossing the hybrid is no better than the better baseline
    assert landscape.improvement[0] < 1.01 and landscape.improvement[-1] < 1.02


def test_adpm_saturates_and_beats_uni_and_propdpm():
    landscape = per_user_landscape(n=N, data_range=M, variance=VARIANCE, eps1=0.1,
                                   eps2=0.1 * np.logspace(0, 2, 21))
    beyond = landscape.eps2 >= landscape.saturation
    np.testing.assert_allclose(landscape.adpm[beyond], landscape.adpm[beyond][0], rtol=1e-12)
    assert np.all(landscape.adpm <= landscape.uni * (1 + 1e-12))
    assert np.all(landscape.adpm <= landscape.propdpm * (1 + 1e-12))
    # UNI treats everyone at eps1: flat in eps2
    np.testing.assert_allclose(landscape.uni, landscape.uni[0], rtol=1e-12)


def test_demo_findings_state_the_ratios_and_the_figure_reads_well(tmp_path, capsys):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import skhybrid._demo as demo

    figures = []
    original = demo.plot_landscapes

    def keep(*args, **kwargs):
        figure = original(*args, **kwargs)
        figures.append(figure)
        return figure

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(demo, "plot_landscapes", keep)
    monkeypatch.setattr(plt, "close", lambda *args: None)  # keep the figure to inspect
    try:
        assert main(["demo", "--seed", "0", "--output", str(tmp_path)]) == 0
    finally:
        monkeypatch.undo()
    out = capsys.readouterr().out
    peak = float(re.search(r"the gain peaks at R = ([\d.]+)x", out).group(1))
    assert 1.9 < peak <= 2.0
    assert re.search(r"ADPM's expected MSE is [\d.]+x smaller than UNI's", out)

    (figure,) = figures
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    bounds = figure.bbox
    axes = [ax for ax in figure.axes if ax.get_visible()]
    assert len(axes) == 3
    for ax in axes:
        # titles and axis labels are inside the figure (not cut)
        for text in (ax.title, ax.xaxis.label, ax.yaxis.label):
            box = text.get_window_extent(renderer)
            assert text.get_text()
            assert box.x0 >= bounds.x0 - 1 and box.x1 <= bounds.x1 + 1, text.get_text()
            assert box.y0 >= bounds.y0 - 1 and box.y1 <= bounds.y1 + 1, text.get_text()
        # tick labels do not overlap
        for axis in (ax.xaxis, ax.yaxis):
            boxes = sorted((label.get_window_extent(renderer)
                            for label in axis.get_ticklabels() if label.get_text()),
                           key=lambda box: (box.x0, box.y0))
            assert boxes
            for first, second in zip(boxes, boxes[1:]):
                assert not first.overlaps(second)
    plt.close(figure)
