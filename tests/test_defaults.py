"""What a new user gets: the README's quick start, the getting-started page and
``skhybrid estimate`` without ``--estimator``, on the bundled salaries at 5% tcm, against
the best strategy in hindsight (the issue "Right answers by default").

Each entry point's estimator (as the page configures it) is refitted with seeded noise,
and its RMSE against the data's mean is compared with every strategy's on the same
users, with KVH at the true variance (which a user does not know) among them.
"""

import csv
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from skhybrid import HybridMeanEstimator
from skhybrid._cli import main

ROOT = Path(__file__).resolve().parents[1]
N_SEEDS = 40


def _readme_quick_start():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Quick start"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _getting_started_first_fit():
    text = (ROOT / "docs" / "getting_started.rst").read_text()
    section = text[text.index("A first fit"):]
    block = re.search(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+)", section).group(1)
    return "\n".join(line[3:] for line in block.splitlines())


def _run(snippet):
    namespace = {"print": lambda *args, **kwargs: None}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a quick start must not warn
        exec(compile(snippet, "<snippet>", "exec"), namespace)
    return namespace


def _rmse(estimates, truth):
    errors = np.asarray(estimates) - truth
    return float(np.sqrt(np.mean(errors**2))), float(np.std(errors**2) / np.sqrt(
        2 * np.mean(errors**2) * len(errors)))


def _refit_rmse(estimator, X, trust_group):
    estimates = [clone(estimator).set_params(random_state=seed).fit(
        X, trust_group=trust_group).mean_[0] for seed in range(N_SEEDS)]
    return _rmse(estimates, X.mean())


def _best_strategy_rmse(X, trust_group, bounds):
    candidates = [HybridMeanEstimator(s, bounds=bounds, variance=None)
                  for s in ("pwh", "naive", "tcm_only", "full_lm", "lm_only")]
    candidates.append(HybridMeanEstimator("kvh", bounds=bounds, variance=float(X.var())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return min((_refit_rmse(c, X, trust_group) for c in candidates), key=lambda r: r[0])


def _assert_within_1_2x(rmse, best):
    # Two standard errors of the two RMSEs as measurement slack.
    assert rmse[0] <= 1.2 * best[0] + 2 * np.hypot(rmse[1], 1.2 * best[1]), (rmse, best)


@pytest.mark.slow
@pytest.mark.parametrize("page", [_readme_quick_start, _getting_started_first_fit],
                         ids=["README", "getting_started"])
def test_the_quick_starts_are_within_1_2x_of_the_best_strategy(page):
    namespace = _run(page())
    estimator, X, trust_group = namespace["estimator"], namespace["X"], namespace["trust_group"]
    assert np.mean(trust_group == "tcm") == pytest.approx(0.05, abs=0.005)
    bounds = estimator.bounds
    _assert_within_1_2x(_refit_rmse(estimator, X, trust_group),
                        _best_strategy_rmse(X, trust_group, bounds))


@pytest.mark.slow
def test_estimate_without_estimator_is_within_1_2x_of_the_best_strategy(tmp_path, capsys):
    from skhybrid.datasets import load_salaries

    salaries = load_salaries()
    X = salaries.data
    trust_group = np.where(np.random.default_rng(0).random(len(X)) < 0.05, "tcm", "lm")
    path = tmp_path / "salaries.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["salary", "group"])
        writer.writerows(zip(X[:, 0].tolist(), trust_group.tolist()))
    lower, upper = salaries.bounds
    estimates = []
    for seed in range(N_SEEDS // 2):  # a CSV read per run: fewer runs
        assert main(["estimate", str(path), "--value", "salary", "--trust", "group",
                     "--epsilon", "1", "--bounds", repr(lower), repr(upper), "--seed",
                     str(seed), "--json"]) == 0
        estimates.append(float(re.search(r'"estimate": ([^,]+)',
                                         capsys.readouterr().out).group(1)))
    _assert_within_1_2x(_rmse(estimates, X.mean()),
                        _best_strategy_rmse(X, trust_group, salaries.bounds))
