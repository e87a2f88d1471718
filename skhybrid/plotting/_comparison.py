"""Bar chart of the errors of several estimators, with error bars and expected errors."""

import numpy as np

from ._curve import _check_matplotlib, _finish

_METRICS = ("rmse", "mse")


def _check_metric(metric):
    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {_METRICS}; got {metric!r}")


class ComparisonDisplay:
    """One bar per estimator: its error, with error bars and its expected error marked.

    In the style of scikit-learn's Display objects: build it from the result of
    :func:`~skhybrid.model_selection.compare_estimators` with :meth:`from_comparison`,
    or run the comparison with :meth:`from_estimators`; the matplotlib objects are
    stored on the display.

    Parameters
    ----------
    names : list of str
        The estimators' names, one bar each.
    values : array-like of shape (n_estimators,)
        Bar heights (for example the empirical RMSE).
    errors : array-like of shape (n_estimators,) or None, default=None
        Half-widths of the error bars (for example one standard error); ``None`` for
        no error bars.
    expected : array-like of shape (n_estimators,) or None, default=None
        The analytic expected value of each bar (for example sqrt of ``expected_mse_``),
        drawn as a marker; NaN entries get none.
    ylabel, title : str or None, default=None

    Attributes
    ----------
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    bars_ : matplotlib BarContainer
        The bars, in the order of ``names``.
    errorbars_ : matplotlib ErrorbarContainer or None
    expected_markers_ : matplotlib Line2D or None
        The expected-value markers, if any value is finite.

    See Also
    --------
    skhybrid.model_selection.compare_estimators : the Monte Carlo comparison.
    CurveDisplay : errors against a parameter.

    Examples
    --------
    >>> from skhybrid.plotting import ComparisonDisplay
    >>> display = ComparisonDisplay(
    ...     names=["kvh", "tcm_only"], values=[1.0, 1.5], errors=[0.1, 0.1],
    ...     expected=[1.02, 1.48], ylabel="RMSE",
    ... ).plot()
    >>> [float(bar.get_height()) for bar in display.bars_]
    [1.0, 1.5]
    """

    def __init__(self, *, names, values, errors=None, expected=None, ylabel=None, title=None):
        self.names = names
        self.values = values
        self.errors = errors
        self.expected = expected
        self.ylabel = ylabel
        self.title = title

    def plot(self, ax=None, *, yscale="linear", color=None, rotation=None):
        """Draw the bars.

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None
            Where to draw; ``None`` makes a new figure.
        yscale : {"linear", "log"}, default="linear"
        color : color or list of colors or None, default=None
            Bar colours; ``None`` uses matplotlib's first colour.
        rotation : float or None, default=None
            Rotation of the estimator names in degrees; ``None`` tilts them by 30
            degrees when any name is longer than 10 characters.

        Returns
        -------
        self : ComparisonDisplay
        """
        _check_matplotlib("ComparisonDisplay.plot")
        import matplotlib.pyplot as plt

        names = [str(name) for name in self.names]
        values = np.asarray(self.values, dtype=float)
        if values.shape != (len(names),):
            raise ValueError(
                f"values must have one entry per name ({len(names)}); got shape {values.shape}"
            )
        if ax is None:
            _, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(names) + 1.5), 3.8))
        positions = np.arange(len(names))
        self.bars_ = ax.bar(positions, values, color=color, label="_nolegend_")
        self.errorbars_ = None
        if self.errors is not None:
            self.errorbars_ = ax.errorbar(
                positions, values, yerr=np.asarray(self.errors, dtype=float),
                fmt="none", ecolor="black", capsize=3, label="_nolegend_",
            )
        self.expected_markers_ = None
        expected = None if self.expected is None else np.asarray(self.expected, dtype=float)
        if expected is not None and np.isfinite(expected).any():
            finite = np.isfinite(expected)
            (self.expected_markers_,) = ax.plot(
                positions[finite], expected[finite], linestyle="none", marker="D",
                markersize=6, color="black", markerfacecolor="white", label="expected",
            )
            ax.legend(fontsize="small")
        if rotation is None:
            rotation = 30 if any(len(name) > 10 for name in names) else 0
        ax.set_xticks(positions)
        ax.set_xticklabels(names, rotation=rotation, ha="right" if rotation else "center")
        ax.set_yscale(yscale)
        return _finish(self, ax, ylabel=self.ylabel, title=self.title)

    @classmethod
    def from_comparison(cls, result, *, metric="rmse", ax=None, title=None, **kwargs):
        """Plot a :class:`~skhybrid.model_selection.ComparisonResult`.

        Parameters
        ----------
        result : ComparisonResult
            What :func:`~skhybrid.model_selection.compare_estimators` returned.
        metric : {"rmse", "mse"}, default="rmse"
            Bar heights: the empirical RMSE or MSE, with error bars of one standard
            error (``rmse_se`` or ``mse_se``); the markers are sqrt(``expected_mse``)
            or ``expected_mse``.
        ax : matplotlib Axes or None, default=None
        title : str or None, default=None
        **kwargs : dict
            Passed to :meth:`plot` (``yscale``, ``color``, ``rotation``).

        Returns
        -------
        display : ComparisonDisplay
        """
        _check_metric(metric)
        table = result.table
        expected = np.asarray(table["expected_mse"], dtype=float)
        display = cls(
            names=list(table["estimator"]),
            values=table[metric],
            errors=table[f"{metric}_se"],
            expected=np.sqrt(expected) if metric == "rmse" else expected,
            ylabel=f"{metric.upper()} over {result.n_trials} trials (± 1 s.e.)",
            title=title,
        )
        return display.plot(ax=ax, **kwargs)

    @classmethod
    def from_estimators(
        cls, estimators, X=None, *, metric="rmse", ax=None, title=None, plot_kwargs=None,
        **compare_kwargs,
    ):
        """Run :func:`~skhybrid.model_selection.compare_estimators` and plot the result.

        Parameters
        ----------
        estimators : dict of str to estimator, or list of estimators
        X : array-like of shape (n_samples, n_features) or None, default=None
        metric : {"rmse", "mse"}, default="rmse"
        ax : matplotlib Axes or None, default=None
        title : str or None, default=None
        plot_kwargs : dict or None, default=None
            Passed to :meth:`plot`.
        **compare_kwargs : dict
            Passed to :func:`~skhybrid.model_selection.compare_estimators`
            (``fit_params``, ``make_data``, ``n_trials``, ``random_state``, ...).

        Returns
        -------
        display : ComparisonDisplay
            With the comparison's result in ``result_``.
        """
        from ..model_selection import compare_estimators

        _check_metric(metric)
        _check_matplotlib("ComparisonDisplay.from_estimators")
        result = compare_estimators(estimators, X, **compare_kwargs)
        display = cls.from_comparison(
            result, metric=metric, ax=ax, title=title, **(plot_kwargs or {})
        )
        display.result_ = result
        return display
