"""Curves of an error (or any statistic) against a parameter, with error bars."""

import numpy as np


def _check_matplotlib(caller):
    try:
        import matplotlib.pyplot  # noqa: F401
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            f"{caller} needs matplotlib; install it with: python -m pip install 'skhybrid[plot]'"
        ) from error


def _finish(display, ax, **labels):
    """Set the axes' labels that are not None (``xlabel``, ``ylabel``, ``title``) and keep
    the axes and figure on the display."""
    for name, text in labels.items():
        if text is not None:
            getattr(ax, f"set_{name}")(text)
    display.ax_, display.figure_ = ax, ax.figure
    return display


def _plain_number(value, _position=None):
    """A tick label as a plain number: 0.01, 200, 1e+05 (``%g``)."""
    return f"{value:g}"


def _tidy_log_ticks(axis):
    """Readable ticks on a log axis: only the major ticks labelled, as plain numbers, at
    1-2-5 (or 1-3) times a power of ten over up to three decades, else at the powers."""
    from matplotlib import ticker

    low, high = sorted(axis.get_view_interval())
    decades = np.log10(high / low) if low > 0 else np.inf
    subs = (1.0, 2.0, 5.0) if decades <= 1.2 else (1.0, 3.0) if decades <= 3 else (1.0,)
    axis.set_major_locator(ticker.LogLocator(base=10.0, subs=subs))
    axis.set_major_formatter(ticker.FuncFormatter(_plain_number))
    axis.set_minor_formatter(ticker.NullFormatter())


class CurveDisplay:
    """Several curves ``y(x)`` on one axes, each with optional error bars.

    In the style of scikit-learn's Display objects: build it from data with
    :meth:`from_table` (or the constructor), then :meth:`plot`; the matplotlib objects
    are stored on the display.

    Parameters
    ----------
    x : array-like of shape (n_points,)
        Shared x values.
    curves : dict of str to array-like of shape (n_points,)
        Label of each curve to its y values.
    errors : dict of str to array-like of shape (n_points,) or None, default=None
        Label to the half-width of the error bar at each point (for example one or two
        standard errors); curves without an entry get no error bars.
    xlabel, ylabel, title : str or None, default=None

    Attributes
    ----------
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    lines_ : dict of str to matplotlib artist
        The artist drawn for each curve.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.plotting import CurveDisplay
    >>> epsilon = np.array([0.1, 1.0, 10.0])
    >>> display = CurveDisplay(x=epsilon, curves={"mse": 2 / epsilon**2}, xlabel="epsilon")
    >>> display = display.plot(xscale="log", yscale="log")
    >>> sorted(display.lines_)
    ['mse']
    """

    def __init__(self, *, x, curves, errors=None, xlabel=None, ylabel=None, title=None):
        self.x = x
        self.curves = curves
        self.errors = errors
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.title = title

    def plot(self, ax=None, *, xscale="linear", yscale="linear", **kwargs):
        """Draw the curves.

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None
            Where to draw; ``None`` makes a new figure.
        xscale, yscale : {"linear", "log", "symlog", "logit"}, default="linear"
        **kwargs : dict
            Passed to ``Axes.errorbar`` for every curve (for example ``marker="o"``).

        Returns
        -------
        self : CurveDisplay
        """
        _check_matplotlib("CurveDisplay.plot")
        import matplotlib.pyplot as plt

        if ax is None:
            # constrained layout keeps the axis labels inside the saved figure
            _, ax = plt.subplots(layout="constrained")
        x = np.asarray(self.x)
        errors = self.errors or {}
        style = {"marker": "o", "markersize": 3, "capsize": 2, **kwargs}
        self.lines_ = {}
        for label, y in self.curves.items():
            yerr = errors.get(label)
            self.lines_[label] = ax.errorbar(
                x, np.asarray(y, dtype=float),
                yerr=None if yerr is None else np.asarray(yerr, dtype=float),
                label=label, **style,
            )
        # set_*scale resets the tick locators, which would undo a categorical (string) axis.
        if xscale != "linear":
            ax.set_xscale(xscale)
        if yscale != "linear":
            ax.set_yscale(yscale)
        if xscale == "log":
            _tidy_log_ticks(ax.xaxis)
        if yscale == "log":
            _tidy_log_ticks(ax.yaxis)
        if len(self.curves) > 1:
            ax.legend(fontsize="small")
        return _finish(self, ax, xlabel=self.xlabel, ylabel=self.ylabel, title=self.title)

    @classmethod
    def from_table(
        cls, table, *, x, series, errors=None, ax=None, xlabel=None, ylabel=None, title=None,
        xscale="linear", yscale="linear", **kwargs,
    ):
        """Plot columns of a table (a dict of equal-length columns or a DataFrame).

        Parameters
        ----------
        table : mapping of str to array-like
            For example the ``table`` of a :class:`skhybrid.reproduce.Reproduction`.
        x : str
            Column on the x axis.
        series : dict of str to str or list of str
            Curve label to column; a list uses the column names as labels.
        errors : dict of str to str or None, default=None
            Curve label to the column holding its error-bar half-widths.
        ax, xlabel, ylabel, title, xscale, yscale, **kwargs
            As in the constructor and :meth:`plot`; ``xlabel`` defaults to ``x``.

        Returns
        -------
        display : CurveDisplay
        """
        if not isinstance(series, dict):
            series = {column: column for column in series}
        curves = {label: np.asarray(table[column]) for label, column in series.items()}
        bars = {label: np.asarray(table[column]) for label, column in (errors or {}).items()}
        display = cls(
            x=np.asarray(table[x]), curves=curves, errors=bars,
            xlabel=x if xlabel is None else xlabel, ylabel=ylabel, title=title,
        )
        return display.plot(ax=ax, xscale=xscale, yscale=yscale, **kwargs)
