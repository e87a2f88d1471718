"""What a reproduction returns, and how it is written to disk (CSV + PNG)."""

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..plotting import CurveDisplay


@dataclass
class Panel:
    """One subplot of a reproduced figure: which columns of the table it draws.

    Attributes
    ----------
    x : str
        Column on the x axis.
    series : dict of str to str
        Curve label to column.
    errors : dict of str to str
        Curve label to the column of its error-bar half-widths (may be empty).
    rows : ndarray of bool or None
        Which table rows belong to this panel; ``None`` means all.
    title, xlabel, ylabel : str or None
    xscale, yscale : str
    """

    x: str
    series: dict
    errors: dict = field(default_factory=dict)
    rows: np.ndarray | None = None
    title: str | None = None
    xlabel: str | None = None
    ylabel: str | None = None
    xscale: str = "linear"
    yscale: str = "linear"


@dataclass
class Reproduction:
    """A regenerated figure or table of a paper.

    Attributes
    ----------
    name : str
        The name given to ``skhybrid reproduce``.
    title : str
        The paper and figure, for the plot and the CSV header.
    table : dict of str to ndarray
        The numbers, column by column (all of one length): written as the CSV.
    panels : list of Panel
        How to plot the table: one subplot per panel.
    summary : str
        A few lines comparing the result with the paper's claim, printed by the CLI.
    """

    name: str
    title: str
    table: dict
    panels: list
    summary: str = ""

    def write_csv(self, path):
        """Write :attr:`table` to ``path`` as CSV with a header row."""
        columns = list(self.table)
        values = [np.asarray(self.table[column]) for column in columns]
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            for row in zip(*values):
                writer.writerow([_csv_value(value) for value in row])

    def plot(self):
        """Draw every panel on one figure; returns the matplotlib Figure."""
        import matplotlib.pyplot as plt

        n_panels = len(self.panels)
        n_columns = min(n_panels, 3)
        n_rows = -(-n_panels // n_columns)
        figure, axes = plt.subplots(
            n_rows, n_columns, figsize=(4.5 * n_columns, 3.6 * n_rows), squeeze=False
        )
        for ax, panel in zip(axes.ravel(), self.panels):
            rows = slice(None) if panel.rows is None else np.asarray(panel.rows)
            table = {column: np.asarray(values)[rows] for column, values in self.table.items()}
            CurveDisplay.from_table(
                table, x=panel.x, series=panel.series, errors=panel.errors, ax=ax,
                xlabel=panel.xlabel, ylabel=panel.ylabel, title=panel.title,
                xscale=panel.xscale, yscale=panel.yscale,
            )
        for ax in axes.ravel()[n_panels:]:
            ax.set_visible(False)
        figure.suptitle(self.title, fontsize="medium")
        figure.tight_layout(rect=(0, 0, 1, 0.97))  # room for the title above the panels
        return figure

    def save(self, output_dir):
        """Write ``NAME.csv`` and ``NAME.png`` into ``output_dir``; returns both paths."""
        import matplotlib.pyplot as plt

        output_dir = Path(output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        csv_path = output_dir / f"{self.name}.csv"
        png_path = output_dir / f"{self.name}.png"
        self.write_csv(csv_path)
        figure = self.plot()
        figure.savefig(png_path, dpi=120)
        plt.close(figure)
        return csv_path, png_path


def squared_errors(estimators, draw_data, *, epsilon, n_trials, rng, bar, target=0.0,
                   attribute="mean_"):
    """Each estimator's squared error against ``target`` on ``n_trials`` fresh datasets.

    Each trial draws ``draw_data(trial_rng, n_users)`` from its own seed and fits every
    estimator on it with that generator as ``random_state`` (and ``epsilon`` metadata).
    """
    errors = {name: np.empty(n_trials) for name in estimators}
    for trial, seed in enumerate(rng.integers(2**32, size=n_trials)):
        trial_rng = np.random.default_rng(seed)
        X = draw_data(trial_rng, epsilon.size)
        for name, estimator in estimators.items():
            estimator.set_params(random_state=trial_rng).fit(X, epsilon=epsilon)
            errors[name][trial] = (getattr(estimator, attribute)[0] - target) ** 2
        bar.update(1)
    return errors


def _csv_value(value):
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, np.generic):
        return value.item()
    return value
