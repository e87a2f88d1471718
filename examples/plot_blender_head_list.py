"""
BLENDER: popular search records from opt-in users and local clients
===================================================================

BLENDER (Avent et al. 2017) finds the most popular (query, URL) records of a search
log and estimates their probabilities. A small group of opt-in users (``"tcm"``) trust
the curator: some of them build a private *head list* of candidate records, the
others estimate the candidates' probabilities. Everybody else (``"lm"``, the clients)
randomizes their own record against that head list on their device. The two groups'
estimates are blended record by record with inverse-variance weights.

On a synthetic search log of 300,000 users with 5% opt-in users,
:class:`~skhybrid.BlenderHeavyHitters` recovers the most popular records; the blended
estimates are more accurate than either group's alone, and ``score`` reports the
paper's list-of-lists NDCG of the head list.
"""

import matplotlib.pyplot as plt
import numpy as np

from skhybrid import BlenderHeavyHitters
from skhybrid.datasets import make_search_logs

n_users = 300_000
X, true_probabilities = make_search_logs(n_users, return_probabilities=True, random_state=0)
rng = np.random.default_rng(1)
trust_group = np.where(rng.random(n_users) < 0.05, "tcm", "lm")

blender = BlenderHeavyHitters(epsilon=4.0, delta=1e-7, max_records=30, random_state=0)
blender.fit(X, trust_group=trust_group)

# %%
# The head list
# -------------
# ``head_list_`` holds (query id, URL id) records, most probable first. The generator's
# ids are popularity ranks, so query 0 is the most popular query.

truth = np.array([true_probabilities[query, url] for query, url in blender.head_list_])
print(f"{n_users:,} users: {blender.n_headlist_users_:,} build the head list, "
      f"{blender.n_estimation_users_:,} opt-in users estimate, "
      f"{blender.n_clients_:,} clients")
print(f"head list: {len(blender.head_list_)} of {blender.n_candidates_} candidates; "
      f"NDCG = {blender.score(X):.3f}\n")
print(f"{'record':>10} {'true p':>8} {'blended':>8} {'opt-in':>8} {'clients':>8} {'w':>5}")
for index in range(10):
    query, url = blender.head_list_[index]
    print(f"{f'({query}, {url})':>10} {truth[index]:>8.4f} "
          f"{blender.probabilities_[index]:>8.4f} "
          f"{blender.optin_probabilities_[index]:>8.4f} "
          f"{blender.client_probabilities_[index]:>8.4f} {blender.weights_[index]:>5.2f}")

# %%
# How accurate is each group?
# ---------------------------
# The L1 distance to the true probabilities over the head list, for the opt-in users'
# estimates, the clients' estimates and the blend.

for label, estimate in [
    ("opt-in", blender.optin_probabilities_),
    ("clients", blender.client_probabilities_),
    ("blended", blender.probabilities_),
]:
    print(f"L1 error of the {label:<8} estimates: {np.abs(estimate - truth).sum():.4f}")

# %%
# Plot
# ----

rank = np.arange(1, len(truth) + 1)
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(rank, truth, "k-", lw=2, label="true probability")
ax.plot(rank, blender.optin_probabilities_, "s", ms=4, alpha=0.7, label="opt-in users")
ax.plot(rank, blender.client_probabilities_, "^", ms=4, alpha=0.7, label="clients")
ax.plot(rank, blender.probabilities_, "o", ms=5, label="blended")
ax.set(xlabel="position in the head list", ylabel="probability", yscale="log",
       title=f"BLENDER head list, epsilon = 4, {n_users:,} users, 5% opt-in")
ax.legend(fontsize="small")
fig.tight_layout()
plt.show()
