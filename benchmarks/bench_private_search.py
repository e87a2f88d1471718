"""How good is PrivateGridSearchCV's choice? Its real error against the best candidate's.

``python benchmarks/bench_private_search.py [n_runs]`` (default 50 seeded runs per case).
For each run and grid, every candidate is fit once on all the data with the run's seed
(the fit the search's refit makes when it chooses that candidate) and its *real* error
is measured exactly on the data (simulation only: this reads the data). The table gives
the chosen candidate's error over the best candidate's (the factor; 1 = the best), its
median, 90th percentile and maximum over the runs, and the same for a search with a
huge selection epsilon, which is the non-private choice on the same fold fits
(``GridSearchCV`` scoring by the same held-out loss), and for scikit-learn's
``GridSearchCV`` scoring by ``score``.
"""

import sys
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid

from skhybrid import BlenderHeavyHitters, HybridKMeans, HybridMeanEstimator
from skhybrid.datasets import load_salaries
from skhybrid.model_selection import PrivateGridSearchCV
from skhybrid.model_selection._losses import selection_loss


def _blobs(rng, n=20_000):
    centres = np.array([[0.2, 0.2], [0.8, 0.25], [0.5, 0.8], [0.15, 0.75]])
    X = centres[rng.integers(0, 4, n)] + rng.normal(0, 0.06, (n, 2))
    return np.clip(X, 0, 1), np.where(rng.random(n) < 0.3, "tcm", "lm")


def _records(rng, n=20_000):
    # Zipf-like queries and URLs: a few frequent records and a long tail.
    queries = np.minimum(rng.zipf(1.6, n), 60) - 1
    urls = np.minimum(rng.zipf(2.0, n), 5) - 1
    return np.column_stack([queries, urls]), np.where(rng.random(n) < 0.1, "tcm", "lm")


def _real_errors(estimator, grid, X, trust, seed):
    """Each candidate's exact mean loss on all the data, fit with the run's seed."""
    errors = []
    for params in ParameterGrid(grid):
        fitted = clone(estimator).set_params(**params, random_state=seed).fit(
            X, trust_group=trust)
        errors.append(float(np.mean(selection_loss(fitted, X)[0])))
    return np.array(errors)


def _factors(make_data, estimator, grid, n_runs, selection_epsilon):
    private, large, sklearn_choice = [], [], []
    for seed in range(n_runs):
        rng = np.random.default_rng(seed)
        X, trust = make_data(rng)
        errors = _real_errors(estimator, grid, X, trust, seed)
        best = errors.min()
        for epsilon, out in ((selection_epsilon, private), (1e9, large)):
            search = PrivateGridSearchCV(
                clone(estimator).set_params(random_state=seed), grid, cv=KFold(3),
                selection="exponential", selection_epsilon=epsilon, refit=False,
                random_state=seed)
            search.fit(X, trust_group=trust)
            out.append(errors[search.best_index_] / best)
        search = GridSearchCV(clone(estimator).set_params(random_state=seed), grid,
                              cv=KFold(3), refit=False)
        search.fit(X, trust_group=trust)
        sklearn_choice.append(errors[search.best_index_] / best)
    return [np.array(values) for values in (private, large, sklearn_choice)]


def _summary(values):
    return (f"{np.median(values):.3f} / {np.quantile(values, 0.9):.3f} / "
            f"{values.max():.3f}")


def _hybrid_mean_case(n_runs, share, variance):
    """Strategies on the salaries, ranked by the public expected error (no data read).

    Each run draws who trusts the curator and releases every candidate once; the real
    error of a choice is the mean over runs of its release's squared error against the
    true mean, compared with the best single strategy's.
    """
    salaries = load_salaries()
    X = salaries.data
    grid = {"strategy": ["kvh", "pwh", "naive", "tcm_only", "full_lm"]}
    estimator = HybridMeanEstimator(bounds=salaries.bounds, variance=variance)
    squared_errors = np.empty((n_runs, len(grid["strategy"])))
    chosen = np.empty(n_runs, dtype=int)
    for seed in range(n_runs):
        rng = np.random.default_rng(seed)
        trust = np.where(rng.random(X.shape[0]) < share, "tcm", "lm")
        search = PrivateGridSearchCV(estimator, grid, refit=False).fit(X, trust_group=trust)
        chosen[seed] = search.best_index_
        for index, params in enumerate(ParameterGrid(grid)):
            fitted = clone(estimator).set_params(**params, random_state=seed).fit(
                X, trust_group=trust)
            squared_errors[seed, index] = (fitted.mean_[0] - X.mean()) ** 2
    mse = squared_errors.mean(axis=0)
    choice_mse = squared_errors[np.arange(n_runs), chosen].mean()
    names = np.array(grid["strategy"])
    return (choice_mse / mse.min(), "/".join(sorted(set(names[chosen]))),
            names[int(np.argmin(mse))])


def main(n_runs=50):
    warnings.simplefilter("ignore")
    print(f"{n_runs} seeded runs per case; factor = chosen candidate's real error / best "
          "candidate's (median / 90th percentile / max)\n")
    print("| grid | selection epsilon | private choice | epsilon 1e9 (non-private, same "
          "fits) | GridSearchCV by score |")
    print("| --- | --- | --- | --- | --- |")
    kmeans = HybridKMeans(bounds=(0, 1), epsilon=2.0, n_clusters=4, n_iter=5)
    blender = BlenderHeavyHitters(epsilon=4.0)
    cases = [
        ("HybridKMeans n_clusters in {2, 3, 4, 6}", _blobs, kmeans,
         {"n_clusters": [2, 3, 4, 6]}),
        ("HybridKMeans n_iter in {1, 2, 5, 10}", _blobs, kmeans, {"n_iter": [1, 2, 5, 10]}),
        ("HybridKMeans strategy x n_clusters", _blobs, kmeans,
         {"strategy": ["hybrid", "tcm_only", "full_lm"], "n_clusters": [3, 4]}),
        ("BLENDER epsilon split: headlist_fraction x query_budget_fraction", _records,
         blender, {"headlist_fraction": [0.5, 0.95], "query_budget_fraction": [0.5, 0.85]}),
    ]
    for name, data, estimator, grid in cases:
        private, large, by_score = _factors(data, estimator, grid, n_runs, 1.0)
        print(f"| {name} | 1.0 | {_summary(private)} | {_summary(large)} | "
              f"{_summary(by_score)} |", flush=True)
    print("\nHybridMeanEstimator strategies on the salaries (selection='auto': the public "
          "expected_mse_, nothing spent on selection)\n")
    print("| tcm share | variance | factor (MSE of the choices / best strategy's MSE) | "
          "chosen | best |")
    print("| --- | --- | --- | --- | --- |")
    for share in (0.01, 0.05, 0.3):
        for variance, label in ((None, "None (worst case)"), (53_254.0**2, "53,254^2")):
            factor, chosen, best = _hybrid_mean_case(n_runs, share, variance)
            print(f"| {share:.0%} | {label} | {factor:.3f} | {chosen} | {best} |", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
