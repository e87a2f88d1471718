"""
Private K-means in the hybrid model
===================================

:class:`~skhybrid.HybridKMeans` is Algorithm 1 of Avent, Dubey and Korolova (2020):
the few users who trust the curator (tcm) go through the classic DP K-means, the
others (lm) send locally randomized reports, and the two groups' cluster means are
merged after every iteration. Here only 0.5% of 100,000 users trust the curator and
everyone has epsilon = 4 for the whole fit.

The hybrid's centres are compared with those of its two one-model baselines
(``strategy="tcm_only"`` and ``"full_lm"``) and with scikit-learn's non-private
:class:`~sklearn.cluster.KMeans`. The quality measure is ``score``, minus the
within-cluster sum of squares per sample (higher is better); like K-means itself, a
private run can end in a poor local optimum, so each strategy is run with several
seeds and summarised by the median.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.cluster import KMeans

from skhybrid import HybridKMeans

rng = np.random.default_rng(0)
n_users, n_clusters, epsilon = 100_000, 4, 4.0
true_centres = np.array([[0.2, 0.2], [0.2, 0.8], [0.8, 0.2], [0.8, 0.8]])
X = true_centres[rng.integers(0, n_clusters, n_users)]
X = np.clip(X + rng.normal(0, 0.06, size=X.shape), 0, 1)
trust_group = np.where(rng.random(n_users) < 0.005, "tcm", "lm")
print(f"{n_users:,} users, {np.sum(trust_group == 'tcm')} tcm, epsilon = {epsilon}")

# %%
# Fit each strategy with several seeds
# ------------------------------------
# The bounds (0, 1) are known in advance; the initial centres are drawn uniformly in
# them from ``random_state``, so they do not depend on the data.

strategies = ["hybrid", "tcm_only", "full_lm"]
n_seeds = 8
scores = {strategy: [] for strategy in strategies}
first_fit = {}
for strategy in strategies:
    for seed in range(n_seeds):
        model = HybridKMeans(n_clusters, epsilon=epsilon, n_iter=3, strategy=strategy,
                             bounds=(0, 1), random_state=seed)
        model.fit(X, trust_group=trust_group)
        scores[strategy].append(model.score(X))
        first_fit.setdefault(strategy, model)

reference = KMeans(n_clusters, n_init=10, random_state=0).fit(X)
reference_score = reference.score(X) / n_users

print(f"\n{'strategy':<10} {'median score':>13} {'worst score':>12}")
for strategy in strategies:
    print(f"{strategy:<10} {np.median(scores[strategy]):>13.4f} "
          f"{np.min(scores[strategy]):>12.4f}")
print(f"{'KMeans':<10} {reference_score:>13.4f}   (non-private)")
print(f"hybrid weight on the tcm group (first seed, mean over clusters): "
      f"{np.nanmean(first_fit['hybrid'].weight_):.2f}")

# %%
# Plot
# ----
# Left: the centres of the first seed over a sample of the data. Right: the scores of
# every seed, relative to
# the non-private KMeans (lower is better).

fig, (ax_c, ax_s) = plt.subplots(1, 2, figsize=(10, 4.2))
shown = rng.choice(n_users, 3_000, replace=False)
ax_c.scatter(X[shown, 0], X[shown, 1], s=2, c="lightgray")
markers = {"hybrid": "o", "tcm_only": "s", "full_lm": "^"}
for strategy in strategies:
    centres = first_fit[strategy].cluster_centers_
    ax_c.scatter(centres[:, 0], centres[:, 1], marker=markers[strategy], s=60,
                 label=strategy, edgecolor="black")
ax_c.scatter(*reference.cluster_centers_.T, marker="x", s=80, c="black",
             label="KMeans (non-private)")
ax_c.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", title="Centres (seed 0)")
ax_c.legend(fontsize="small", loc="center", framealpha=0.9)

for position, strategy in enumerate(strategies):
    # Both scores are minus a sum of squares: the ratio is >= 1, lower is better.
    relative = np.array(scores[strategy]) / reference_score
    ax_s.plot(np.full(n_seeds, position), relative, "o", alpha=0.6)
    ax_s.plot([position - 0.2, position + 0.2], [np.median(relative)] * 2, "k-")
ax_s.axhline(1.0, color="gray", ls="--", lw=0.8, label="KMeans (non-private)")
ax_s.set(xticks=range(len(strategies)), xticklabels=strategies, yscale="log",
         ylabel="within-cluster SS / KMeans's", title=f"{n_seeds} seeds; line = median")
ticks = [1, 1.5, 2, 3, 5, 8]
ax_s.set_yticks(ticks, labels=[str(tick) for tick in ticks])
ax_s.minorticks_off()
ax_s.legend(fontsize="small")
fig.tight_layout()
plt.show()
