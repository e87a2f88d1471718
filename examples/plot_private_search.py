"""
Choosing a model privately on the salaries, and what it costs
=============================================================

:class:`~skhybrid.model_selection.PrivateGridSearchCV` is the search to use instead of
``GridSearchCV`` when the data are private: its choice is differentially private and
charged to the ledger, and :func:`~skhybrid.model_selection.search_cost` says what it
will cost each user before anything is released. This example selects on the bundled
salaries twice:

- a hybrid mean's strategy, ranked by the public expected error (nothing is spent on
  the choice: only the chosen candidate's one fit is charged);
- a K-means' number of clusters, chosen by the exponential mechanism on held-out
  losses (every candidate's fold fits and the selection are charged);

then shows a third search refused up front (nobody charged, nothing released), and
plots each user's spent budget and the ledger's history.
"""

import matplotlib.pyplot as plt
import numpy as np

from skhybrid import HybridKMeans, HybridMeanEstimator
from skhybrid.accounting import PrivacyLedger
from skhybrid.datasets import load_salaries
from skhybrid.exceptions import BudgetExceededError
from skhybrid.model_selection import PrivateGridSearchCV, search_cost

salaries = load_salaries()
rng = np.random.default_rng(0)
X = salaries.data[:60_000]
n_users = X.shape[0]
trust_group = np.where(rng.random(n_users) < 0.05, "tcm", "lm")  # 5% trust the curator
user_id = np.arange(n_users)
ledger = PrivacyLedger(default_budget=8.0)

# %%
# A mean's strategy, by the public expected error
# -----------------------------------------------
# ``expected_mse_`` depends only on public quantities (group sizes, privacy levels,
# bounds, a public guess of the spread): the search ranks the candidates without
# reading the data and fits the chosen one once. The simulation is seeded.
mean_search = PrivateGridSearchCV(
    HybridMeanEstimator(bounds=salaries.bounds, variance=55_000.0**2, ledger=ledger,
                        random_state=0),
    {"strategy": ["kvh", "pwh", "naive", "tcm_only"]},
)
mean_cost = search_cost(mean_search, X, trust_group=trust_group, user_id=user_id)
mean_search.fit(X, trust_group=trust_group, user_id=user_id)
print(f"chosen: {mean_search.best_params_} by {mean_search.selection_}; "
      f"cost per user {np.unique(mean_cost)}; route {mean_cost.route}: {mean_cost.reason}")
print(f"estimate {mean_search.best_estimator_.mean_[0]:,.0f} (true {X.mean():,.0f})")

# %%
# K-means' number of clusters, by the exponential mechanism
# ---------------------------------------------------------
# Two folds: each user is in the training fold of one fit per candidate, and each tcm
# user is scored once. The reservation counts the dearest refit; the K-means refits all
# cost the same here, so nothing comes back unless the search stops early.
kmeans_search = PrivateGridSearchCV(
    HybridKMeans(bounds=salaries.bounds, epsilon=1.0, n_iter=3, ledger=ledger,
                 random_state=0),
    {"n_clusters": [1, 2, 3]}, cv=2, selection_epsilon=1.0, random_state=0,
)
kmeans_cost = search_cost(kmeans_search, X, trust_group=trust_group, user_id=user_id)
kmeans_search.fit(X, trust_group=trust_group, user_id=user_id)
print(f"chosen: {kmeans_search.best_params_}; cost per user {np.unique(kmeans_cost)}")
centres = np.sort(kmeans_search.best_estimator_.cluster_centers_[:, 0])
print(f"centres: {np.round(centres, -2)}")

# %%
# A search nobody can afford is refused before its first release
# ---------------------------------------------------------------
# Every user has 8 - 5 = 3 (lm) or 8 - 6 = 2 (tcm) left; a 3-fold search over four
# candidates would need more. The reservation fails: nobody is charged.
wider = PrivateGridSearchCV(kmeans_search.estimator, {"n_clusters": [1, 2, 3, 4]}, cv=3)
wider_cost = search_cost(wider, X, trust_group=trust_group, user_id=user_id)
print(f"it would cost up to {wider_cost.max():g} per user")
try:
    wider.fit(X, trust_group=trust_group, user_id=user_id)
except BudgetExceededError as error:
    print(f"refused: {error}")

# %%
# What the users spent
# --------------------
# The pre-flight costs add up to what the ledger charged, user by user. Each search is
# one reservation in the history (plotted below); its refit is a release row of its own
# naming the chosen parameters, drawing on the reservation (a refund row gives the draw
# back first), and what is left of the reservation is refunded at the end.
spent = ledger.spent(user_id)
assert np.allclose(spent, mean_cost + kmeans_cost)
is_tcm = trust_group == "tcm"
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
for label, members in (("tcm", is_tcm), ("lm", ~is_tcm)):
    levels, counts = np.unique(spent[members], return_counts=True)
    axes[0].bar([f"{label}: {v:g}" for v in levels], counts)
axes[0].set_yscale("log")
axes[0].set_ylabel("users")
axes[0].set_xlabel("epsilon spent (budget 8)")
# Each search's reservation (its fits' and refit's rows draw on it).
history = [row for row in ledger.history() if row["kind"] == "reservation"]
labels = [f"{i + 1}. {row['params']['estimator']} search" for i, row in enumerate(history)]
totals = [sum(level["epsilon"] * level["n_users"] for level in row["levels"])
          for row in history]
axes[1].barh(range(len(history)), np.array(totals) / 1e3)
axes[1].set_yticks(range(len(history)), labels)
axes[1].invert_yaxis()
axes[1].set_xlabel("reserved epsilon, all users (thousands)")
fig.suptitle(f"{n_users:,} salaries after two private searches")
plt.show()
