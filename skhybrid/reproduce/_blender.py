"""Avent et al., "BLENDER" (USENIX Security 2017): NDCG of the head list against epsilon.

The paper's list-of-lists NDCG (Section 4) of BLENDER's head list, ranked by the blended
probabilities, by the opt-in users' estimates alone and by the clients' estimates alone
(the "ingredients" of Figure 9), for epsilon from 1 to 6 with 5% opt-in users
(Section 4.2.1's AOL setting; its Figures 12 and 16 plot NDCG against epsilon). The AOL
and Yandex logs are not redistributable: the data are synthetic search logs
(:func:`skhybrid.datasets.make_search_logs`). A simulation: every trial draws a fresh log,
a fresh opt-in group and seeded noise.
"""

import numpy as np

from ..datasets import make_search_logs
from ..heavy_hitters import BlenderHeavyHitters
from ..theory import list_of_lists_ndcg
from ..utils._progress import progress_bar
from ._base import Panel, Reproduction
from ._common_hybrid import mean_and_standard_error

#: Section 4.2.1: 5% opt-in users (AOL), head lists of 50 records (AOL).
_OPTIN_FRACTION = 0.05
_MAX_RECORDS = 50
#: The estimates compared: fitted attribute -> label.
_ESTIMATES = {
    "probabilities_": "blended",
    "optin_probabilities_": "opt-in only",
    "client_probabilities_": "clients only",
}
_COLUMNS = {"probabilities_": "blended", "optin_probabilities_": "optin",
            "client_probabilities_": "client"}


def _record_counts(X):
    """Distinct (query, url) records of ``X`` and their counts, each pair packed into one
    int64 key (the ids are non-negative ints; a row-wise ``np.unique`` takes seconds)."""
    width = int(X[:, 1].max()) + 1
    keys, counts = np.unique(X[:, 0] * width + X[:, 1], return_counts=True)
    return np.column_stack(np.divmod(keys, width)), counts


def _ndcg_of_each_estimate(estimator, truth):
    """List-of-lists NDCG of the head list ranked by each of the estimator's estimates."""
    if not estimator.head_list_:
        return {attribute: 0.0 for attribute in _ESTIMATES}
    head = np.array(estimator.head_list_)
    return {attribute: list_of_lists_ndcg((head, getattr(estimator, attribute)), truth)
            for attribute in _ESTIMATES}


def ndcg_against_epsilon(*, quick=False, random_state=0, progress=False):
    """NDCG of the blended, opt-in-only and client-only head lists against epsilon.

    1,000,000 users (100,000 with ``quick``), 5% of them opt-in, at most 50 records,
    delta = 1e-7 (1e-6 with ``quick``: delta stays below 1 / n_users), the paper's
    f_O = 0.95 and f_C = 0.85; 20 trials per epsilon (10 with ``quick``). NDCG is
    measured against the empirical record frequencies of the fitted log, as
    :meth:`BlenderHeavyHitters.score` does.
    """
    n_users, delta, n_trials = (100_000, 1e-6, 10) if quick else (1_000_000, 1e-7, 20)
    epsilon_grid = np.array([1.0, 3.0, 6.0] if quick else [1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0])
    rng = np.random.default_rng(random_state)
    scores = {attribute: np.empty((epsilon_grid.size, n_trials)) for attribute in _ESTIMATES}
    head_sizes = np.empty((epsilon_grid.size, n_trials))
    with progress_bar(total=epsilon_grid.size * n_trials, description="blender-ndcg",
                      enabled=progress) as bar:
        for row, epsilon in enumerate(epsilon_grid):
            for trial, seed in enumerate(rng.integers(2**32, size=n_trials)):
                trial_rng = np.random.default_rng(seed)
                X = make_search_logs(n_users, random_state=trial_rng)
                trust = np.where(trial_rng.random(n_users) < _OPTIN_FRACTION, "tcm", "lm")
                estimator = BlenderHeavyHitters(
                    epsilon=epsilon, delta=delta, max_records=_MAX_RECORDS,
                    random_state=trial_rng,
                ).fit(X, trust_group=trust)
                truth = _record_counts(X)
                for attribute, value in _ndcg_of_each_estimate(estimator, truth).items():
                    scores[attribute][row, trial] = value
                head_sizes[row, trial] = len(estimator.head_list_)
                bar.update(1)

    table = {"epsilon": epsilon_grid}
    for attribute, values in scores.items():
        table[f"{_COLUMNS[attribute]}_ndcg"], table[f"{_COLUMNS[attribute]}_se"] = (
            mean_and_standard_error(values))
    table["head_list_size"] = head_sizes.mean(axis=1)
    panel = Panel(
        x="epsilon",
        series={label: f"{_COLUMNS[attribute]}_ndcg" for attribute, label in _ESTIMATES.items()},
        errors={label: f"{_COLUMNS[attribute]}_se" for attribute, label in _ESTIMATES.items()},
        title=f"{_OPTIN_FRACTION:.0%} opt-in, head list <= {_MAX_RECORDS}, delta = {delta:g}",
        xlabel="epsilon", ylabel="list-of-lists NDCG",
    )
    return Reproduction(
        name="blender-ndcg",
        title=f"BLENDER on synthetic logs: {n_users:,} users,\n{n_trials} trials (+-1 s.e.)",
        table=table, panels=[panel], summary=_summary(table, n_trials),
    )


def _summary(table, n_trials):
    epsilon = table["epsilon"]
    blended, optin, client = table["blended_ndcg"], table["optin_ndcg"], table["client_ndcg"]
    paper_range = (epsilon >= 1) & (epsilon <= 5)
    above = bool(np.all(blended[paper_range] >= 0.95))
    at_least_best = blended >= np.maximum(optin, client) - 2 * table["blended_se"]
    return "\n".join([
        f"Mean NDCG over {n_trials} synthetic logs per epsilon: blended "
        f"{blended.min():.3f}-{blended.max():.3f}, opt-in only {optin.min():.3f}-"
        f"{optin.max():.3f}, clients only {client.min():.3f}-{client.max():.3f} "
        f"(head lists of {table['head_list_size'].min():.0f}-"
        f"{table['head_list_size'].max():.0f} records).",
        f"The blended NDCG is {'above' if above else 'NOT above'} 95% at every epsilon of "
        f"this grid in [1, 5] ({_listed(epsilon[paper_range])}), as the paper reports for "
        "its logs over [1, 5] (Figures 12 and 16); it is within two "
        f"standard errors of the better ingredient or above it at "
        f"{int(at_least_best.sum())} of {epsilon.size} epsilons.",
        f"The clients' NDCG rises from {client[0]:.3f} at epsilon = {epsilon[0]:g} to "
        f"{client[-1]:.3f} at {epsilon[-1]:g}: local reports need a larger budget, the "
        "opt-in users carry the blend at small epsilon.",
    ])


def _listed(values):
    return ", ".join(f"{value:g}" for value in values)


#: name -> function(*, quick, random_state, progress) -> Reproduction
REPRODUCTIONS = {"blender-ndcg": ndcg_against_epsilon}
