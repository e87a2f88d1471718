"""What :func:`~skhybrid.model_selection.search_cost` answers: per-user epsilon, and why."""

import numpy as np


class SearchCost(np.ndarray):
    """Each user's epsilon (an ndarray), with the user ids and the search's route.

    Attributes
    ----------
    user_ids : ndarray of shape (n_users,)
        Whose cost each entry is (what ``PrivacyLedger.reserve`` charges).
    route : str
        How the search chooses: ``"private_variance"``, ``"expected_mse"``,
        ``"exponential"``, or ``"scikit-learn"`` (a scikit-learn search).
    reason : str
        Why, in a sentence (decided by the estimator and the grid alone).
    """

    def __new__(cls, epsilon, *, user_ids, route, reason):
        cost = np.asarray(epsilon, dtype=np.float64).view(cls)
        cost.user_ids, cost.route, cost.reason = user_ids, route, reason
        return cost

    def __array_finalize__(self, obj):
        for name in ("user_ids", "route", "reason"):
            setattr(self, name, getattr(obj, name, None))
