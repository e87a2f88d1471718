"""Each reproduction's printed claims are about what its own plot shows.

For every reproduction (quick runs), the numbers its summary prints are read back and
found among the curves its figure draws: the panels' series, on the rows each panel
plots, exactly as :meth:`Reproduction.plot` draws them. A summary that quotes a value
from a denser grid, another figure or an unplotted point fails here.
"""

import functools
import re

import numpy as np
import pytest

from skhybrid.reproduce import REPRODUCTIONS, reproduce

NUMBER = r"-?\d+(?:\.\d+)?"


@functools.cache
def quick(name):
    return reproduce(name, quick=True, random_state=0)


def drawn(reproduction):
    """``{(panel title, curve label): (x, y)}``: what the figure draws."""
    curves = {}
    for panel in reproduction.panels:
        rows = slice(None) if panel.rows is None else np.asarray(panel.rows)
        x = np.asarray(reproduction.table[panel.x])[rows]
        for label, column in panel.series.items():
            curves[panel.title, label] = (x, np.asarray(reproduction.table[column],
                                                         dtype=float)[rows])
    return curves


def curve(reproduction, title_part, label):
    """The one drawn curve whose panel title contains ``title_part`` and has ``label``."""
    matches = [xy for (title, name), xy in drawn(reproduction).items()
               if title_part in title and name == label]
    assert len(matches) == 1, f"{len(matches)} curves {label!r} in panels {title_part!r}"
    return matches[0]


def assert_drawn_at(reproduction, title_part, label, x, y, *, decimals):
    """The curve passes through (x, y), y as printed with ``decimals`` decimals."""
    xs, ys = curve(reproduction, title_part, label)
    at = np.flatnonzero(np.isclose(xs.astype(float), x, rtol=5e-3))
    assert at.size, f"x = {x} is not drawn on {label!r} ({xs})"
    assert np.any(np.abs(ys[at] - y) <= 0.5 * 10.0**-decimals + 1e-12), (
        f"{label!r} at x = {x} draws {ys[at]}, the summary says {y}")


def printed(pattern, text, group=1):
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in:\n{text}"
    return float(match.group(group).replace(",", ""))


def test_every_reproduction_has_a_claims_test():
    tested = {name.removeprefix("test_").replace("_", "-").replace("corollary4-4",
                                                                     "corollary4.4")
              for name in globals() if name.startswith("test_") and name != (
                  "test_every_reproduction_has_a_claims_test")}
    assert set(REPRODUCTIONS) <= tested


def _analytic_extremes(reproduction, keep):
    values = np.concatenate([y for (_, label), (_, y) in drawn(reproduction).items()
                             if keep(label)])
    return values.min(), values.max()


def test_avent_figure1():
    rep = quick("avent-figure1")
    low, high = _analytic_extremes(rep, lambda label: "simulated" not in label)
    assert printed(rf"min ({NUMBER}), max", rep.summary) == pytest.approx(low, abs=5e-4)
    assert printed(rf"max ({NUMBER})", rep.summary) == pytest.approx(high, abs=5e-4)
    n_simulated = sum(y.size for (_, label), (_, y) in drawn(rep).items()
                      if "simulated" in label)
    assert printed(r"of the (\d+) points", rep.summary) == n_simulated


def test_avent_figure2():
    rep = quick("avent-figure2")
    peaks = re.findall(rf"(\d+(?:\.\d+)?): ({NUMBER}) at c = ({NUMBER})%", rep.summary)
    assert len(peaks) == 5
    for epsilon, value, percent in peaks:
        x, y = curve(rep, "analytic", f"eps={epsilon}")
        # The printed peak is the drawn curve's highest point, where the summary says.
        assert float(value) == pytest.approx(y.max(), abs=5e-4)
        assert x[np.argmax(y)] == pytest.approx(float(percent) / 100, rel=5e-3)
    largest = printed(rf"the largest ({NUMBER}) \(eps", rep.summary)
    assert largest == pytest.approx(max(float(value) for _, value, _ in peaks))


def test_avent_figure3():
    rep = quick("avent-figure3")
    R_panels = [panel for panel in rep.panels if panel.ylabel == "R(E_PWH)"]

    def stacked(keep):
        return np.concatenate([
            np.asarray(rep.table[column], dtype=float)[np.asarray(panel.rows)]
            for panel in R_panels for label, column in panel.series.items() if keep(label)])

    values = stacked(lambda label: label.endswith("%"))
    assert printed(rf"R\(E_PWH\): min ({NUMBER})", rep.summary) == pytest.approx(
        values.min(), abs=5e-4)
    assert printed(rf"R\(E_PWH\): min {NUMBER}, max ({NUMBER})", rep.summary) == (
        pytest.approx(values.max(), abs=5e-4))
    # The comparison with KVH is with curves the same panels draw.
    kvh = stacked(lambda label: label.endswith("KVH"))
    assert kvh.size == values.size
    share = printed(r"within 5% of R\(E_KVH\) at (\d+)%", rep.summary)
    assert share == pytest.approx(100 * np.mean(values >= 0.95 * kvh), abs=0.5)


def test_avent_corollary4_4():
    rep = quick("avent-corollary4.4")
    value = printed(rf"R\(E_KVH\) = ({NUMBER}) at c", rep.summary)
    c = printed(rf"at c = ({NUMBER})", rep.summary)
    assert_drawn_at(rep, "eps=1,", "sup over n", c, value, decimals=4)


def test_dubey_figure1():
    rep = quick("dubey-figure1")
    x, hybrid = curve(rep, "expected squared error", "Hybrid")
    _, full_lm = curve(rep, "expected squared error", "FullLM")
    _, tcm_only = curve(rep, "expected squared error", "OnlyTCM")
    below = bool(np.all(hybrid < np.minimum(full_lm, tcm_only)))
    assert f"at every n in [{x.min():g}, {x.max():g}]: {below}" in rep.summary
    assert ("nowhere on this grid" in rep.summary) == bool(np.all(tcm_only > full_lm))


def test_dubey_figure2():
    rep = quick("dubey-figure2")
    _, r_max = curve(rep, "improvement R", "R_max")
    assert printed(rf"R_max = ({NUMBER})", rep.summary) == pytest.approx(r_max[0], abs=5e-5)
    n = printed(r"on the grid R peaks at n = (\d+)", rep.summary)
    value = printed(rf"on the grid R peaks at n = \d+ with ({NUMBER})", rep.summary)
    x, y = curve(rep, "improvement R", "analytic")
    assert x[np.argmax(y)] == n
    assert_drawn_at(rep, "improvement R", "analytic", n, value, decimals=4)


def test_chaudhuri_table2():
    rep = quick("chaudhuri-table2")
    for regime in ("high Var(eps)", "low Var(eps)"):
        line = next(line for line in rep.summary.splitlines() if line.strip().startswith(regime))
        for method, simulated, paper in re.findall(rf"(\w+) ({NUMBER}) \(({NUMBER})\)", line):
            methods, values = curve(rep, regime, "simulated, Beta(2, 3)")
            assert values[list(methods).index(method)] == pytest.approx(float(simulated),
                                                                        abs=5e-3)
            methods, values = curve(rep, regime, "paper (Table II)")
            assert values[list(methods).index(method)] == pytest.approx(float(paper))


def test_chaudhuri_figure1a():
    rep = quick("chaudhuri-figure1a")
    for method, first, last in re.findall(rf"(\w+) ({NUMBER}) \.\. ({NUMBER})", rep.summary):
        x, y = curve(rep, "theory", method)
        assert float(first) == pytest.approx(y[0], abs=0.5)
        assert float(last) == pytest.approx(y[-1], abs=0.5)


def test_chaudhuri_figure1b():
    rep = quick("chaudhuri-figure1b")
    start = printed(rf"falls from ({NUMBER}) at eps2 = ({NUMBER})", rep.summary)
    at = printed(rf"falls from {NUMBER} at eps2 = ({NUMBER})", rep.summary)
    assert_drawn_at(rep, "theory", "ADPM", at, start, decimals=2)
    value = printed(rf"to ({NUMBER}) at saturation", rep.summary)
    saturation = printed(rf"eps2 = R eps1 = ({NUMBER})", rep.summary)
    assert_drawn_at(rep, "theory", "ADPM", saturation, value, decimals=3)
    propdpm = printed(rf"\(({NUMBER}) at eps2 = ({NUMBER})\)", rep.summary)
    last = printed(rf"\({NUMBER} at eps2 = ({NUMBER})\)", rep.summary)
    assert_drawn_at(rep, "theory", "PropDPM", last, propdpm, decimals=2)


def test_ferrando_figure1():
    rep = quick("ferrando-figure1")
    for name, low, high in re.findall(rf"(t_\w+) = {NUMBER}: PDP / mixed variance "
                                      rf"({NUMBER})-({NUMBER}) in theory", rep.summary):
        _, pdp = curve(rep, name, "PDP (theory)")
        _, mixed = curve(rep, name, "mixed (theory)")
        ratio = pdp / mixed
        assert float(low) == pytest.approx(ratio.min(), abs=5e-3)
        assert float(high) == pytest.approx(ratio.max(), abs=5e-3)


def test_ferrando_figure2():
    rep = quick("ferrando-figure2")
    settings = re.findall(rf"(eps_H = {NUMBER}, eps_L = {NUMBER}): mixed / PE RMSE "
                          rf"({NUMBER})-({NUMBER})", rep.summary)
    assert len(settings) == 2
    for title, low, high in settings:
        _, mixed = curve(rep, title, "mixed median")
        _, pe = curve(rep, title, "PE")
        ratio = mixed / pe
        assert float(low) == pytest.approx(ratio.min(), abs=5e-3)
        assert float(high) == pytest.approx(ratio.max(), abs=5e-3)


def test_kmeans_figure6():
    rep = quick("kmeans-figure6")
    rows = re.findall(rf"({NUMBER})% tcm: at tau = (\d+), hybrid ({NUMBER}), TCM-only "
                      rf"({NUMBER}), Full-LM ({NUMBER})", rep.summary)
    assert len(rows) == 2
    for share, tau, *values in rows:
        for label, value in zip(("hybrid", "TCM-only", "Full-LM"), values):
            assert_drawn_at(rep, f"{share}% tcm", label, float(tau), float(value), decimals=0)


def test_blender_ndcg():
    rep = quick("blender-ndcg")
    for label, name in (("blended", "blended"), ("opt-in only", "opt-in only"),
                        ("clients only", "clients only")):
        low = printed(rf"{label} ({NUMBER})-{NUMBER}", rep.summary)
        high = printed(rf"{label} {NUMBER}-({NUMBER})", rep.summary)
        _, y = curve(rep, "opt-in", name)
        assert low == pytest.approx(y.min(), abs=5e-4)
        assert high == pytest.approx(y.max(), abs=5e-4)
    rises = re.search(rf"rises from ({NUMBER}) at epsilon = ({NUMBER}) to ({NUMBER}) at "
                      rf"({NUMBER})", rep.summary)
    first, at_first, last, at_last = map(float, rises.groups())
    assert_drawn_at(rep, "opt-in", "clients only", at_first, first, decimals=3)
    assert_drawn_at(rep, "opt-in", "clients only", at_last, last, decimals=3)
