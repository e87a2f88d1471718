"""
Combining public and private data: the mixed mean
=================================================

Ferrando, Gillenwater and Kulesza estimate a mean from users at several privacy levels
and a group of public users (``epsilon = inf``, for example people who opted into
publishing their data). :class:`~skhybrid.MixedMeanEstimator` releases one Laplace
mean per privacy level and mixes them with inverse-variance weights; the public group
enters without noise. The Sample mechanism of Jorgensen, Yu and Cormode
(:class:`~skhybrid.PDPSampleEstimator`), their baseline, subsamples the users with a
small epsilon instead.

2,000 private users (60% at epsilon = 0.1, 40% at epsilon = 1) are joined by a growing
number of public users. The expected error falls as the public group grows, and the
public group takes a growing share of the weight.
"""

import matplotlib.pyplot as plt
import numpy as np

from skhybrid import MixedMeanEstimator, PDPSampleEstimator

rng = np.random.default_rng(0)
variance = 1 / 12  # the data are uniform on the bounds (0, 1); the variance is public
private_epsilon = np.repeat([0.1, 1.0], [1_200, 800])
public_sizes = np.array([0, 10, 30, 100, 300, 1_000])

# %%
# Expected errors and weights
# ---------------------------
# ``expected_mse_`` is the expected squared error against the mean of the fitted data;
# ``group_weights_`` is each privacy level's share of the mixture.

rows = []
for n_public in public_sizes:
    epsilon = np.concatenate([private_epsilon, np.full(n_public, np.inf)])
    X = rng.uniform(0, 1, size=(len(epsilon), 1))
    mixed = MixedMeanEstimator(bounds=(0, 1), variance=variance, random_state=0)
    mixed.fit(X, epsilon=epsilon)
    sample = PDPSampleEstimator(threshold="optimal", bounds=(0, 1), variance=variance,
                                random_state=0)
    sample.fit(X, epsilon=epsilon)

    # Monte Carlo check of the mixed mean's error: fresh data and noise each trial.
    squared_errors = []
    for _ in range(250):
        X = rng.uniform(0, 1, size=(len(epsilon), 1))
        estimate = mixed.set_params(random_state=rng).fit(X, epsilon=epsilon).mean_[0]
        squared_errors.append((estimate - X.mean()) ** 2)
    weights = dict(zip(mixed.group_epsilons_.tolist(), mixed.group_weights_[:, 0]))
    rows.append({
        "n_public": n_public,
        "mixed": np.sqrt(mixed.expected_mse_[0]),
        "simulated": np.sqrt(np.mean(squared_errors)),
        "sample": np.sqrt(sample.expected_mse_[0]),
        "weights": [weights.get(level, 0.0) for level in (0.1, 1.0, np.inf)],
    })

print("expected RMSE against the data's mean, and the mixed mean's group weights")
print(f"{'public':>6} {'mixed':>8} {'simulated':>10} {'Sample':>8}   "
      f"{'w(0.1)':>6} {'w(1)':>6} {'w(inf)':>6}")
for row in rows:
    w = " ".join(f"{value:>6.3f}" for value in row["weights"])
    print(f"{row['n_public']:>6} {row['mixed']:>8.5f} {row['simulated']:>10.5f} "
          f"{row['sample']:>8.5f}   {w}")

# %%
# Plot
# ----

x = np.arange(len(public_sizes))
fig, (ax_err, ax_w) = plt.subplots(1, 2, figsize=(10, 4))
ax_err.plot(x, [row["mixed"] for row in rows], "o-", label="mixed mean (theory)")
ax_err.plot(x, [row["simulated"] for row in rows], "k+", ms=9,
            label="mixed mean (simulated)")
ax_err.plot(x, [row["sample"] for row in rows], "s-", label="Sample mechanism, t_opt")
ax_err.set(xticks=x, xticklabels=public_sizes, xlabel="public users (added to 2,000)",
           ylabel="expected RMSE", title="Error of the private mean")
ax_err.legend(fontsize="small")

bottom = np.zeros(len(rows))
for index, label in enumerate(["epsilon = 0.1", "epsilon = 1", "public"]):
    share = np.array([row["weights"][index] for row in rows])
    ax_w.bar(x, share, bottom=bottom, label=label)
    bottom += share
ax_w.set(xticks=x, xticklabels=public_sizes, xlabel="public users (added to 2,000)",
         ylabel="weight in the mixture", title="group_weights_")
ax_w.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.0, 0.5))
fig.tight_layout()
plt.show()
