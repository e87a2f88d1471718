"""
Quick start: a private mean salary from a hybrid population
===========================================================

The bundled dataset holds 252,540 synthetic salaries shaped like the University of
California salaries of Avent, Dubey and Korolova (2020). 5% of the employees trust the
curator (tcm) and 95% randomize their salary on their own device (lm); everyone gets
epsilon = 1. Each strategy of :class:`skhybrid.HybridMeanEstimator` releases a private
mean; the table compares its error with its analytic expected error.
"""

import numpy as np

from skhybrid import HybridMeanEstimator
from skhybrid.datasets import load_salaries

salaries = load_salaries()
X, bounds = salaries.data, salaries.bounds
n_users = X.shape[0]

# Who trusts the curator is the users' choice; here a random 5% do (public metadata).
rng = np.random.default_rng(0)
trust_group = np.where(rng.random(n_users) < 0.05, "tcm", "lm")

print(f"{n_users:,} users, {np.mean(trust_group == 'tcm'):.1%} tcm, epsilon = 1")
print(f"non-private mean salary: {X.mean():,.0f} (for comparison only)\n")
print(f"{'strategy':<10} {'estimate':>12} {'error':>10} {'expected RMSE':>14} {'tcm weight':>11}")
for strategy in ["kvh", "pwh", "naive", "tcm_only", "full_lm", "lm_only"]:
    # The standard deviation of the population (53,254) is public in the paper's setting.
    estimator = HybridMeanEstimator(strategy, epsilon=1.0, bounds=bounds, variance=53_254.0**2)
    estimator.fit(X, trust_group=trust_group)
    error = estimator.mean_[0] - X.mean()
    rmse = np.sqrt(estimator.expected_mse_[0])
    print(
        f"{strategy:<10} {estimator.mean_[0]:>12,.0f} {error:>+10,.0f} {rmse:>14,.0f} "
        f"{estimator.weight_[0]:>11.3f}"
    )
