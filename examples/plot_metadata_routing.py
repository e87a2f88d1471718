"""
Grid search with metadata routing, and what tuning costs in privacy
===================================================================

Each user's ``trust_group`` and ``epsilon`` are sample metadata: with scikit-learn's
metadata routing on, :class:`~sklearn.model_selection.GridSearchCV` splits them with
the samples and passes them to every fit. This example searches over the strategy of
:class:`~skhybrid.HybridMeanEstimator` (a hyperparameter that is not ``epsilon``).

Doing so on private data is costly: every fit is a private release, so the users'
budgets add up over the folds and candidates, and the validation scores are computed
from the held-out users' raw values. The example counts the budget and then follows the
recommended route: tune on synthetic data with the same public structure (group
sizes, privacy levels, bounds), and fit the private data once.
"""

import matplotlib.pyplot as plt
import numpy as np
import sklearn
from sklearn.model_selection import GridSearchCV, KFold

from skhybrid import HybridMeanEstimator
from skhybrid.mean import expected_mse as expected_mse_of

rng = np.random.default_rng(0)
n_users = 20_000
trust_group = np.where(rng.random(n_users) < 0.03, "tcm", "lm")  # public
epsilon = np.where(trust_group == "tcm", 0.5, 2.0)                  # public
bounds = (0.0, 100.0)                                               # public
X_private = rng.beta(2, 5, size=(n_users, 1)) * 100  # stands for the real data

candidates = {"strategy": ["kvh", "pwh", "naive", "tcm_only", "full_lm"]}
cv = KFold(n_splits=5, shuffle=True, random_state=0)  # both groups in every fold

# %%
# Tune on synthetic data
# ----------------------
# Uniform values on the public bounds, with the real population's public structure.
# The estimator asks for both metadata with ``set_fit_request``; ``config_context``
# turns routing on for this block only. ``random_state`` seeds the simulation.

X_synthetic = rng.uniform(*bounds, size=(n_users, 1))
with sklearn.config_context(enable_metadata_routing=True):
    estimator = HybridMeanEstimator(bounds=bounds, random_state=0).set_fit_request(
        trust_group=True, epsilon=True
    )
    search = GridSearchCV(estimator, candidates, cv=cv)
    search.fit(X_synthetic, trust_group=trust_group, epsilon=epsilon)

results = search.cv_results_
strategies = list(results["param_strategy"])

# The analytic expected error of each strategy needs no validation at all: it depends
# on the public structure and on the data's variance, here the synthetic data's (on
# private data: a private estimate, the ``variance_`` of a default fit).
expected_mse = [
    expected_mse_of(HybridMeanEstimator(strategy, bounds=bounds),
                    variance=float(X_synthetic.var()), trust_group=trust_group,
                    epsilon=epsilon)[0]
    for strategy in strategies
]

print("strategy   validation squared error (5 folds)   expected")
for strategy, mean, std, analytic in zip(
    strategies, results["mean_test_score"], results["std_test_score"], expected_mse
):
    print(f"  {strategy:<9} {-mean:>14.4f} +- {std:<14.4f} {analytic:>14.4f}")
print(f"best by validation: {search.best_params_['strategy']}; "
      f"by expected error: {strategies[int(np.argmin(expected_mse))]}")

# %%
# The budget it would have cost on private data
# ---------------------------------------------
# Each candidate is fitted on ``k - 1`` folds containing each user, and the best one is
# refitted on everyone.

n_folds, n_candidates = cv.get_n_splits(), len(candidates["strategy"])
fits_per_user = (n_folds - 1) * n_candidates + 1
print(f"\n{n_folds} folds x {n_candidates} candidates: each user takes part in "
      f"{fits_per_user} fits, so a user with epsilon = 0.5 would spend "
      f"{fits_per_user * 0.5:g}, not 0.5; and the validation scores would be computed "
      f"from raw held-out values (not private at all).")

# %%
# One private fit with the chosen strategy
# ----------------------------------------
# Outside the search there is no routing to configure: pass the metadata to ``fit``.
# In a real release, leave ``random_state=None``.

final = HybridMeanEstimator(search.best_params_["strategy"], bounds=bounds,
                            random_state=1)
final.fit(X_private, trust_group=trust_group, epsilon=epsilon)
print(f"\nprivate fit, strategy={final.strategy!r}: mean {final.mean_[0]:.2f} "
      f"+- {np.sqrt(final.expected_mse_[0]):.2f} (the data's mean: {X_private.mean():.2f})")

# %%
# Plot the validation scores
# --------------------------

position = np.arange(len(strategies))
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.bar(position - 0.2, -results["mean_test_score"], width=0.4,
       yerr=results["std_test_score"], label="validation (grid search, 5 folds)")
ax.bar(position + 0.2, expected_mse, width=0.4, label="expected (analytic bound, no data)")
ax.set(xticks=position, xticklabels=strategies, yscale="log",
       ylabel="squared error of the mean", title="Choosing the strategy on synthetic data")
ax.legend(fontsize="small")
fig.tight_layout()
plt.show()
