"""ComparisonDisplay draws one bar per estimator with its error bar and expected marker."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from skhybrid import HybridMeanEstimator, MixedQuantileEstimator  # noqa: E402
from skhybrid.model_selection import ComparisonResult, compare_estimators  # noqa: E402
from skhybrid.plotting import ComparisonDisplay  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _data(n_users=500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n_users, 1))
    trust = np.where(rng.random(n_users) < 0.2, "tcm", "lm")
    return X, {"trust_group": trust}


def _result():
    X, _ = _data()  # everyone tcm: the quantile estimator is a trusted-curator one
    estimators = {
        "tcm_only": HybridMeanEstimator("tcm_only", bounds=(0, 1)),
        "full_lm": HybridMeanEstimator("full_lm", bounds=(0, 1)),
        "median": MixedQuantileEstimator(bounds=(0, 1)),  # no expected_mse_
    }
    return compare_estimators(estimators, X, n_trials=5, random_state=0)


def _error_bar_half_widths(display):
    # The error bar's vertical segments, one per bar: (bottom, top) pairs.
    segments = display.errorbars_.lines[2][0].get_segments()
    return np.array([(top[1] - bottom[1]) / 2 for bottom, top in segments])


@pytest.mark.parametrize("metric", ["rmse", "mse"])
def test_bars_are_the_table_values_with_standard_error_bars(metric):
    result = _result()
    display = ComparisonDisplay.from_comparison(result, metric=metric)
    heights = [bar.get_height() for bar in display.bars_]
    np.testing.assert_allclose(heights, result.table[metric])
    np.testing.assert_allclose(_error_bar_half_widths(display), result.table[f"{metric}_se"])
    labels = [label.get_text() for label in display.ax_.get_xticklabels()]
    assert labels == ["tcm_only", "full_lm", "median"]
    assert display.ax_.get_ylabel().startswith(metric.upper())
    assert display.figure_ is display.ax_.figure


def test_expected_markers_only_where_the_estimator_has_an_expected_mse():
    result = _result()
    display = ComparisonDisplay.from_comparison(result)
    x, y = display.expected_markers_.get_data()
    np.testing.assert_array_equal(x, [0, 1])  # the median has no expected_mse_
    np.testing.assert_allclose(y, np.sqrt(result.table["expected_mse"][:2]))


def test_no_markers_when_nothing_is_expected():
    display = ComparisonDisplay(names=["a"], values=[1.0], expected=[np.nan]).plot()
    assert display.expected_markers_ is None
    assert display.errorbars_ is None
    assert display.ax_.get_legend() is None


def test_from_estimators_runs_the_comparison_on_the_given_axes():
    X, fit_params = _data()
    _, ax = plt.subplots()
    display = ComparisonDisplay.from_estimators(
        {"tcm_only": HybridMeanEstimator("tcm_only", bounds=(0, 1))}, X, ax=ax,
        title="one", fit_params=fit_params, n_trials=3, random_state=1,
    )
    assert display.ax_ is ax
    assert ax.get_title() == "one"
    assert isinstance(display.result_, ComparisonResult)
    assert display.bars_[0].get_height() == pytest.approx(display.result_.table["rmse"][0])


def test_constructor_checks_one_value_per_name():
    with pytest.raises(ValueError, match="one entry per name"):
        ComparisonDisplay(names=["a", "b"], values=[1.0]).plot()


def test_unknown_metric_is_rejected():
    with pytest.raises(ValueError, match="metric must be one of"):
        ComparisonDisplay.from_comparison(_result(), metric="mae")
