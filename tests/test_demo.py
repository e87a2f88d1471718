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
    best = int(np.argmax(landscape.improvement))
    full_lm = 2 * (M / epsilon) ** 2 / N
    assert landscape.full_lm[best] == pytest.approx(full_lm, rel=1e-12)
    assert landscape.tcm_only[best] / landscape.full_lm[best] == pytest.approx(1.0, abs=0.1)
    c = landscape.peak_fraction
    r_max = 2 * (2 - c) * M**2 / ((c - 1) * epsilon**2 * VARIANCE + 2 * M**2)
    assert landscape.peak_improvement == pytest.approx(r_max, rel=1e-6)
    # far from the crossing the hybrid is no better than the better baseline
    assert landscape.improvement[0] < 1.01 and landscape.improvement[-1] < 1.02


def test_the_printed_peak_is_the_maximum_of_a_fine_grid_not_a_grid_point():
    """Issue 32: the peak is computed (the baselines' crossing), so no point of a grid
    100 times finer than the figure's exceeds it, and the crossing is where TCM-only and
    Full-LM have the same expected MSE."""
    for epsilon in (0.25, 1.0, 4.0):
        coarse = hybrid_landscape(n=N, data_range=M, variance=VARIANCE, epsilon=epsilon)
        fine = hybrid_landscape(n=N, data_range=M, variance=VARIANCE, epsilon=epsilon,
                                fractions=np.logspace(-4, np.log10(0.5), 12_001))
        assert coarse.peak_improvement >= fine.improvement.max() * (1 - 1e-9)
        assert coarse.peak_improvement > coarse.improvement.max()  # not read off the grid
        at_peak = hybrid_landscape(n=N, data_range=M, variance=VARIANCE, epsilon=epsilon,
                                   fractions=[coarse.peak_fraction])
        assert at_peak.tcm_only[0] == pytest.approx(at_peak.full_lm[0], rel=1e-9)


def test_paper_adpm_is_algorithm_1_and_the_variant_is_the_known_variance_program():
    """The paper's ADPM uses the worst-case variance: at these salaries its saturation
    ratio is 1 + 8 / (n f eps1^2) (Eq. (4)), and it can lose to PropDPM at the true
    variance; the known-variance variant never loses to UNI or PropDPM."""
    eps1 = 0.1
    landscape = per_user_landscape(n=N, data_range=M, variance=VARIANCE, eps1=eps1,
                                   eps2=eps1 * np.logspace(0, 2, 21))
    assert landscape.saturation == pytest.approx((1 + 8 / (N * 0.5 * eps1**2)) * eps1)
    assert landscape.saturation_known_variance > 4 * landscape.saturation
    variant = landscape.adpm_known_variance
    beyond = landscape.eps2 >= landscape.saturation_known_variance
    np.testing.assert_allclose(variant[beyond], variant[beyond][0], rtol=1e-12)
    assert np.all(variant <= landscape.uni * (1 + 1e-12))
    assert np.all(variant <= landscape.propdpm * (1 + 1e-12))
    # The paper's minimax weights are optimal for the worst case, not for the salaries'
    # small variance: at eps2 = 10 eps1 PropDPM beats them, UNI nearly ties.
    assert landscape.propdpm[-1] < landscape.adpm[-1]
    assert landscape.uni[-1] / landscape.adpm[-1] == pytest.approx(1.0, abs=0.01)
    # UNI treats everyone at eps1: flat in eps2
    np.testing.assert_allclose(landscape.uni, landscape.uni[0], rtol=1e-12)


def test_selection_compares_by_public_quantities_and_charges_one_release():
    from skhybrid._demo import select_and_release

    rng = np.random.default_rng(0)
    n = 5_000
    X = rng.uniform(0, 100, size=(n, 1))
    trust_group = np.where(np.arange(n) < 50, "tcm", "lm")
    selection = select_and_release(X, trust_group=trust_group, user_id=np.arange(n),
                                   bounds=(0, 100), variance=100**2 / 12, epsilon=0.5,
                                   random_state=0)
    assert selection.best == min(selection.scores, key=selection.scores.get)
    # The comparison does not depend on the data: the same on other values.
    other = select_and_release(X[::-1] * 0.5, trust_group=trust_group, user_id=np.arange(n),
                               bounds=(0, 100), variance=100**2 / 12, epsilon=0.5,
                               random_state=0)
    assert other.scores == selection.scores
    np.testing.assert_array_equal(selection.spent, np.full(n, 0.5))
    # The search reserves its cost, and the chosen candidate's release draws on it: one
    # release, naming the chosen parameters, and nothing else spent.
    history = selection.ledger.history()
    assert [row["kind"] for row in history] == ["reservation", "refund", "release"]
    assert history[-1]["params"]["strategy"] == selection.estimator.strategy
    assert selection.scores[selection.best] ** 2 == pytest.approx(
        selection.estimator.expected_mse_[0])


def _demo_figure(tmp_path, capsys, *args):
    """Run the demo in-process; return its printed text and its (open) figure."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import skhybrid._demo as demo

    figures = []
    original = demo.plot_demo

    def keep(*args, **kwargs):
        figure = original(*args, **kwargs)
        figures.append(figure)
        return figure

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(demo, "plot_demo", keep)
    monkeypatch.setattr(plt, "close", lambda *args: None)  # keep the figure to inspect
    try:
        assert main(["demo", "--seed", "0", "--output", str(tmp_path), *args]) == 0
    finally:
        monkeypatch.undo()
    (figure,) = figures
    return capsys.readouterr().out, figure


def test_demo_figure_shows_this_runs_release_the_theory_and_the_selection(tmp_path, capsys):
    import matplotlib.pyplot as plt

    out, figure = _demo_figure(tmp_path, capsys)
    release, error, gain, per_user, selection, spend = figure.axes[:6]
    # The release panel: one error bar per estimate, the printed estimates and RMSEs.
    true_mean = float(re.search(r"true mean of the synthetic data: ([\d,]+)", out)
                      .group(1).replace(",", ""))
    (line,) = [line for line in release.get_lines() if line.get_linestyle() == "-"
               and len(set(line.get_xdata())) == 1]
    assert line.get_xdata()[0] == pytest.approx(true_mean, abs=1)
    container = release.containers[0]
    estimates = np.asarray(container.lines[0].get_xdata(), dtype=float)
    printed = {name: float(value.replace(",", "")) for name, value in re.findall(
        r"^(kvh|pwh|tcm_only|full_lm|adpm)\s.*?\s([\d,]+)\s+[\d,]+\s+[\d.]+", out, re.M)}
    np.testing.assert_allclose(estimates, list(printed.values()), atol=0.5)
    labels = [label.get_text() for label in release.get_yticklabels()]
    assert "TCM-only" in labels and "Full-LM" in labels and "hybrid, KVH" in labels
    assert any("variant" in label for label in labels)  # issue 32: the ADPM is named
    # The theory panels say so, and carry this run's point: the printed R.
    for ax in (error, gain, per_user):
        assert ax.get_title().startswith("Theory")
    run_gain = float(re.search(r"this run \(.*?R = ([\d.]+)\)", out).group(1))
    legend = [text.get_text() for text in gain.get_legend().get_texts()]
    assert f"this run: R = {run_gain:.3f}" in legend
    peak = float(re.search(r"the gain peaks at R = ([\d.]+)", out).group(1))
    assert f"peak at eps 1: R = {peak:.3f}" in legend
    (peak_marker,) = [line for line in gain.get_lines() if line.get_marker() == "^"]
    assert peak_marker.get_ydata()[0] == pytest.approx(peak, abs=5e-4)
    # The y-axes in dollars (issue 32), the per-user panel names the paper's ADPM.
    for ax in (error, per_user):
        assert "US$" in ax.get_ylabel()
    assert "US$" in release.get_xlabel() and "US$" in selection.get_xlabel()
    names = [text.get_text() for text in per_user.get_legend().get_texts()]
    assert any("paper" in name and "Alg. 1" in name for name in names)
    assert any("variant" in name for name in names)
    # The selection: the chosen one is the printed one, the spend is the ledger's.
    chosen = re.search(r"chose (\w+);", out).group(1)
    assert selection.get_title() == f"Model selection: chose {chosen} (green)"
    assert spend.get_title().startswith("Ledger: per-user spend")
    plt.close(figure)


def test_demo_findings_state_the_ratios_and_the_figure_reads_well(tmp_path, capsys):
    import matplotlib.pyplot as plt

    out, figure = _demo_figure(tmp_path, capsys)
    peak = float(re.search(r"the gain peaks at R = ([\d.]+)", out).group(1))
    assert 1.99 < peak <= 2.0
    assert re.search(r"its expected MSE is [\d.]+x smaller than UNI's", out)

    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    bounds = figure.bbox
    axes = [ax for ax in figure.axes if ax.get_visible()]
    assert len(axes) == 6
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


def test_demo_writes_into_its_own_directory_by_default(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--seed", "1"]) == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["skhybrid-demo"]
    assert {path.name for path in (tmp_path / "skhybrid-demo").iterdir()} == {
        "skhybrid-demo.csv", "skhybrid-demo.png"}


def test_the_demo_records_its_own_releases_and_says_where_the_hybrid_pays(
        tmp_path, capsys, monkeypatch):
    """The flagship run does what it tells users to do (no UnaccountedReleaseWarning: its
    releases are on a ledger), and says the hybrid's gain is small at 2% and 5% tcm."""
    import warnings

    import matplotlib.pyplot as plt

    from skhybrid.accounting import _costs
    from skhybrid.exceptions import UnaccountedReleaseWarning

    monkeypatch.setitem(_costs._UNACCOUNTED, "warned", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnaccountedReleaseWarning)
        assert main(["demo", "--output", str(tmp_path)]) == 0  # secure noise
    capsys.readouterr()
    out, figure = _demo_figure(tmp_path, capsys)
    assert re.search(r"7 releases of part 1 are on a ledger of their own .*: they spent "
                     r"epsilon 6 to 6 per user", out)
    gains = dict(re.findall(r"(\d)% tcm R = ([\d.]+)", out))
    assert set(gains) == {"2", "5"}
    assert all(1.0 <= float(gain) < 1.1 for gain in gains.values())
    legend = [text.get_text() for text in figure.axes[2].get_legend().get_texts()]
    assert f"2% tcm: R = {gains['2']}, 5% tcm: R = {gains['5']}" in legend
    (marks,) = [line for line in figure.axes[2].get_lines() if line.get_marker() == "s"]
    np.testing.assert_allclose(marks.get_xdata(), [2, 5])
    plt.close(figure)
