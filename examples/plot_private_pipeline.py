"""
A private pipeline: standardize, then cluster
=============================================

A survey collects each respondent's salary (dollars) and age (years). Most respondents
randomize their answers on their own devices (``"lm"``); 5% trust the curator
(``"tcm"``). The curator wants three clusters of the standardized answers, the
scikit-learn idiom ``make_pipeline(StandardScaler(), KMeans(3))``, without ever
releasing anything that is not differentially private.

:class:`~skhybrid.preprocessing.HybridStandardScaler` releases each feature's mean and
standard deviation under the hybrid model and standardizes (clipping to ``[-3, 3]``,
so the next step's bounds are public); :class:`~skhybrid.HybridKMeans` clusters the
standardized values. Both charge the same :class:`~skhybrid.accounting.PrivacyLedger`,
so each user's history shows two releases whose epsilons add up. The same pipeline
without privacy (scikit-learn's ``StandardScaler`` and ``KMeans``) is the reference.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skhybrid import HybridKMeans
from skhybrid.accounting import PrivacyLedger
from skhybrid.preprocessing import HybridStandardScaler

rng = np.random.default_rng(0)
n_users = 100_000
group_centres = np.array([[30_000, 24], [100_000, 42], [250_000, 58]])
group_spread = np.array([[8_000, 3], [20_000, 8], [45_000, 7]])
group = rng.integers(0, 3, n_users)
X = group_centres[group] + group_spread[group] * rng.standard_normal((n_users, 2))
trust_group = np.where(rng.random(n_users) < 0.05, "tcm", "lm")
user_id = np.arange(n_users)
print(f"{n_users:,} respondents, {np.mean(trust_group == 'tcm'):.0%} tcm")

# %%
# One pipeline, two releases, one ledger
# --------------------------------------
# The scaler's bounds are public, in dollars and years; K-means' bounds are the
# scaler's output range, (-3, 3). Each user has a budget of 2; the scaler spends 0.5
# and K-means 1.

ledger = PrivacyLedger(default_budget=2.0)
private = make_pipeline(
    HybridStandardScaler(epsilon=0.5, bounds=([0, 18], [500_000, 80]), ledger=ledger,
                         random_state=0),
    HybridKMeans(3, epsilon=1.0, bounds=(-3, 3), ledger=ledger, random_state=1),
)
metadata = {"trust_group": trust_group, "user_id": user_id}
private.fit(X, **{f"{step}__{key}": value for step in private.named_steps
                  for key, value in metadata.items()})

for row in ledger.history(user_id=user_id[0]):
    print(f"user 0: {row['estimator']:<22} epsilon {row['epsilon']:.2f}")
print(f"spent by every user: {np.unique(ledger.spent(user_id))}")

# %%
# Against the same pipeline without privacy
# -----------------------------------------
# The centres are compared in the data's units (the private scaler's inverse
# transform maps K-means' centres back to dollars and years), and by the mean squared
# distance of the standardized data to its nearest centre.

public = make_pipeline(StandardScaler(), KMeans(3, n_init=10, random_state=0)).fit(X)
scaler = private[0]
private_centres = scaler.inverse_transform(private[1].cluster_centers_)
public_centres = public[0].inverse_transform(public[1].cluster_centers_)

print(f"\n{'':<9}{'mean salary':>12}{'mean age':>9}{'sd salary':>11}{'sd age':>8}")
for name, mean, scale in [("private", scaler.mean_, scaler.scale_),
                          ("exact", X.mean(axis=0), X.std(axis=0))]:
    print(f"{name:<9}{mean[0]:>12,.0f}{mean[1]:>9.1f}{scale[0]:>11,.0f}{scale[1]:>8.1f}")

standardized = public[0].transform(X)


def mean_squared_distance(centres):
    centres = public[0].transform(centres)
    distances = ((standardized[:, None, :] - centres[None]) ** 2).sum(axis=-1)
    return distances.min(axis=1).mean()


print(f"\nmean squared distance (standardized): private "
      f"{mean_squared_distance(private_centres):.3f}, non-private "
      f"{mean_squared_distance(public_centres):.3f}, one centre at the mean "
      f"{mean_squared_distance(X.mean(axis=0, keepdims=True)):.3f}")

fig, ax = plt.subplots(figsize=(6, 4))
shown = rng.choice(n_users, 3_000, replace=False)
ax.scatter(X[shown, 0] / 1000, X[shown, 1], s=3, alpha=0.3, color="grey")
ax.scatter(public_centres[:, 0] / 1000, public_centres[:, 1], marker="x", s=120,
           color="black", label="StandardScaler + KMeans (non-private)")
ax.scatter(private_centres[:, 0] / 1000, private_centres[:, 1], marker="o", s=80,
           facecolors="none", edgecolors="tab:red", linewidths=2,
           label="HybridStandardScaler + HybridKMeans")
ax.set_xlabel("salary (thousands of dollars)")
ax.set_ylabel("age (years)")
ax.set_xlim(0, 400)
ax.legend(loc="lower right", fontsize=8)
ax.set_title("Three clusters, each user charged 0.5 + 1.0")
fig.tight_layout()
plt.show()
