"""
When does the hybrid model pay off? Relative improvement against the tcm fraction
===================================================================================

Avent, Dubey and Korolova (2020) measure a hybrid estimator by its *relative
improvement* ``R = min(E_TCM-only, E_Full-LM) / E_hybrid`` (Def. 3.5): how many times
smaller its expected squared error is than that of the better of the two one-model
baselines. ``R > 1`` means that combining the trusted-curator (tcm) users with the
local-model (lm) users beats using either model alone.

This example draws ``R`` of the known-variance hybrid (KVH, Def. 4.1) against the
fraction ``c`` of users who trust the curator, from the closed forms in
:mod:`skhybrid.theory`, and checks a few points by Monte Carlo with
:class:`~skhybrid.HybridMeanEstimator`. The improvement is largest when few users
trust the curator: the tcm group alone is too small, the local noise of everyone else
is too large, and the hybrid takes the best of both.
"""

import matplotlib.pyplot as plt
import numpy as np

from skhybrid import HybridMeanEstimator
from skhybrid.theory import (
    full_lm_mse,
    hybrid_mse,
    kvh_weight,
    laplace_noise_variances,
    relative_improvement,
    tcm_only_mse,
)

n_users, epsilon = 2_000, 1.0
variance = 1 / 12  # values uniform on [0, 1], bounds (0, 1): m = 1
problem = dict(n=n_users, sigma_T2=variance, sigma_L2=variance)

# %%
# The closed forms
# ----------------
# Laplace noise variances of the tcm group's mean and of one lm report (Def. 3.9),
# the KVH weight and the MSEs of Lemmas 3.2, 3.4 and 3.13.

c = np.linspace(0.005, 0.5, 200)
s_T2, s_L2 = laplace_noise_variances(n_users, c, 1.0, epsilon)
weight = kvh_weight(n=n_users, c=c, s_T2=s_T2, s_L2=s_L2, sigma2=variance)
mse_kvh = hybrid_mse(weight, c=c, s_T2=s_T2, s_L2=s_L2, **problem)
mse_tcm = tcm_only_mse(c=c, s_T2=s_T2, n=n_users, sigma_T2=variance, sigma_L2=variance)
mse_full_lm = full_lm_mse(n=n_users, s_L2=s_L2) * np.ones_like(c)
improvement = relative_improvement(mse_kvh, c=c, s_T2=s_T2, s_L2=s_L2, **problem)

best = np.argmax(improvement)
print(f"n = {n_users}, epsilon = {epsilon}, data uniform on [0, 1]")
print(f"largest improvement R = {improvement[best]:.2f} at c = {c[best]:.3f}")

# %%
# Monte Carlo check
# -----------------
# At a few tcm fractions, fit the KVH estimator on fresh data many times and measure its
# squared error against the data's own mean (what the closed forms describe). The
# seeds make the simulation reproducible; a real release leaves ``random_state=None``.

rng = np.random.default_rng(0)
n_trials = 250
checked_c = np.array([0.02, 0.05, 0.15, 0.4])
simulated_mse, simulated_se = [], []
for fraction in checked_c:
    trust_group = np.where(np.arange(n_users) < round(fraction * n_users), "tcm", "lm")
    squared_errors = np.empty(n_trials)
    for trial in range(n_trials):
        X = rng.uniform(0, 1, size=(n_users, 1))
        estimator = HybridMeanEstimator(
            "kvh", epsilon=epsilon, bounds=(0, 1), variance=variance, random_state=rng
        )
        estimator.fit(X, trust_group=trust_group)
        squared_errors[trial] = (estimator.mean_[0] - X.mean()) ** 2
    simulated_mse.append(squared_errors.mean())
    simulated_se.append(squared_errors.std(ddof=1) / np.sqrt(n_trials))
simulated_mse, simulated_se = np.array(simulated_mse), np.array(simulated_se)

print(f"\n{'c':>5} {'KVH MSE (theory)':>17} {'KVH MSE (simulated)':>20} {'R (theory)':>11}")
for fraction, mse, se in zip(checked_c, simulated_mse, simulated_se):
    s_T2_c, s_L2_c = laplace_noise_variances(n_users, fraction, 1.0, epsilon)
    w_c = kvh_weight(n=n_users, c=fraction, s_T2=s_T2_c, s_L2=s_L2_c, sigma2=variance)
    theory = hybrid_mse(w_c, c=fraction, s_T2=s_T2_c, s_L2=s_L2_c, **problem)
    r_c = relative_improvement(theory, c=fraction, s_T2=s_T2_c, s_L2=s_L2_c, **problem)
    print(f"{fraction:>5.2f} {theory:>17.2e} {mse:>11.2e} +- {se:.1e} {r_c:>11.2f}")

# %%
# Plot
# ----
# Left: the three expected errors. Right: the relative improvement, with the simulated
# points (two standard errors) converted with the baselines' closed forms.

fig, (ax_mse, ax_r) = plt.subplots(1, 2, figsize=(10, 4))
ax_mse.plot(c, mse_tcm, label="TCM-only")
ax_mse.plot(c, mse_full_lm, label="Full-LM")
ax_mse.plot(c, mse_kvh, label="KVH hybrid")
ax_mse.errorbar(checked_c, simulated_mse, yerr=2 * simulated_se, fmt="ko", ms=4,
                label="KVH simulated")
ax_mse.set(xlabel="fraction of tcm users c", ylabel="expected squared error",
           yscale="log", title=f"n = {n_users}, epsilon = {epsilon}")
ax_mse.legend(fontsize="small")

s_T2_chk, s_L2_chk = laplace_noise_variances(n_users, checked_c, 1.0, epsilon)
baseline_chk = np.minimum(
    tcm_only_mse(c=checked_c, s_T2=s_T2_chk, n=n_users, sigma_T2=variance,
                 sigma_L2=variance),
    full_lm_mse(n=n_users, s_L2=s_L2_chk),
)
r_simulated = baseline_chk / simulated_mse
r_error = 2 * baseline_chk * simulated_se / simulated_mse**2
ax_r.plot(c, improvement, label="KVH (theory)")
ax_r.errorbar(checked_c, r_simulated, yerr=r_error, fmt="ko", ms=4, label="simulated")
ax_r.axhline(1.0, color="gray", lw=0.8, ls="--")
ax_r.set(xlabel="fraction of tcm users c", ylabel="relative improvement R",
         title="KVH against the better baseline")
ax_r.legend(fontsize="small")
fig.tight_layout()
plt.show()
