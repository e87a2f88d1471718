"""
What a grid search spends: a per-user privacy ledger
=====================================================

Every fit in a grid search is a private release. A
:class:`~skhybrid.accounting.PrivacyLedger` charges each user of each fit their own
privacy cost before any noise is drawn, and refuses a fit that would take anyone past
their budget. This example runs a 5-fold search over four candidates on a file ledger
(shared with the joblib workers of ``n_jobs=2``), plots the distribution of what the
users spent, then a cross-validation of the tcm-only baseline, which charges only the users it
uses, and shows the refusal that follows.
"""

import tempfile
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skhybrid import HybridMeanEstimator
from skhybrid.accounting import PrivacyLedger
from skhybrid.exceptions import BudgetExceededError, PrivacyLeakWarning

rng = np.random.default_rng(0)
n_users = 5_000
X = rng.beta(2, 5, size=(n_users, 1)) * 100
trust_group = np.where(rng.random(n_users) < 0.1, "tcm", "lm")
user_id = np.array([f"user-{i:05d}" for i in range(n_users)])

# %%
# A durable ledger with a default budget, and a smaller one for some users
# ------------------------------------------------------------------------
path = Path(tempfile.mkdtemp()) / "ledger.sqlite"
ledger = PrivacyLedger(path, default_budget=12.0)
ledger.set_budget(user_id[:500], 8.0)

# %%
# The grid search
# ---------------
# Validation scores read held-out raw values: with a ledger, ``score`` warns that they
# are not private (see the accounting guide for the private alternative). The
# simulation is seeded.
search = GridSearchCV(
    HybridMeanEstimator(bounds=(0, 100), ledger=ledger, random_state=0),
    {"epsilon": [0.25, 0.5], "strategy": ["kvh", "pwh"]},
    cv=KFold(5, shuffle=True, random_state=0), n_jobs=2, error_score="raise",
)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", PrivacyLeakWarning)
    search.fit(X, trust_group=trust_group, user_id=user_id)

print(f"releases charged: {len(ledger.history())} (4 candidates x 5 folds + the refit)")
print(f"epsilon spent per user: {np.unique(ledger.spent(user_id))}")

# %%
# Every user sat in the training folds of 16 fits (4 candidates x 4 folds) plus the
# refit: 8 fits at epsilon 0.25 and 8 at 0.5, and the refit at the best candidate's.
#
# A cross-validation of the tcm-only baseline then charges the tcm users only: the lm
# users' data are not used by it.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", PrivacyLeakWarning)
    cross_validate(HybridMeanEstimator("tcm_only", epsilon=0.25, bounds=(0, 100), ledger=ledger),
                   X, cv=KFold(5), params={"trust_group": trust_group, "user_id": user_id},
                   error_score="raise")

spent, remaining = ledger.spent(user_id), ledger.remaining(user_id)
fig, axes = plt.subplots(1, 2, figsize=(8, 3.4), layout="constrained", sharey=True)
for ax, values, label in [(axes[0], spent, "epsilon spent"),
                          (axes[1], remaining, "epsilon remaining")]:
    levels, counts = np.unique(values, return_counts=True)
    ax.bar([f"{v:g}" for v in levels], counts, color="tab:blue")
    ax.set_xlabel(label)
axes[0].set_ylabel("users")
fig.suptitle(f"{n_users:,} users after a grid search and a cross-validation")
plt.show()

# %%
# One more fit at epsilon 1 would take the tcm users among those with a budget of 8 past
# it: the ledger refuses before any noise is drawn, and nothing is charged. (Inside
# model selection, pass ``error_score="raise"``: scikit-learn otherwise turns a refused
# fit into a warning and a NaN score, and carries on with the other fits.)
try:
    HybridMeanEstimator(bounds=(0, 100), ledger=ledger).fit(
        X, trust_group=trust_group, user_id=user_id)
except BudgetExceededError as error:
    print(error)
print(f"remaining for the first user: {ledger.remaining(user_id[:1])[0]:g}")
