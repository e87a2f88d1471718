"""BLENDER's opt-in users (trusted curator): CreateHeadList and EstimateOptinProbabilities.

The curator's Laplace noise on count vectors (Avent et al. 2017, Figures 3 and 4): the
noise of opt-in users comes from here.
"""

import numpy as np

from ..mechanisms import LaplaceMechanism
from ..theory import (
    headlist_threshold,
    optin_count_noise_scale,
    optin_variance,
    optin_variance_estimate,
)
from ._records import _distinct_records, _HeadListLayout


def _count_mechanism(epsilon):
    """The Laplace mechanism of Figures 3 and 4: scale ``b = optin_count_noise_scale(epsilon)``.

    A vector of counts over a partition of records moves by at most one unit in two
    cells when one user's record is replaced: L1 sensitivity ``2 m_O`` with ``m_O = 1``,
    which :class:`~skhybrid.mechanisms.LaplaceMechanism` turns into the scale
    ``sensitivity / epsilon = b``. Its noise is floating-point safe.
    """
    sensitivity = optin_count_noise_scale(epsilon) * epsilon
    return LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity)


def _check_count_noise(n_optin, epsilon):
    """Refuse a count noise too wide to draw, before the ledger is charged.

    The released count vectors have at most one cell per opt-in user (their distinct
    records), so the noise of ``n_optin`` coordinates bounds every one of them.
    """
    if n_optin:
        _count_mechanism(epsilon).variance(n_optin)


def _passes_threshold(counts, *, epsilon, delta, rng):
    """CreateHeadList, lines 9-11: which noisy counts exceed ``tau``.

    ``counts`` has shape (..., n_distinct); leading axes are independent releases.
    """
    noisy = _count_mechanism(epsilon).randomise(counts, random_state=rng)
    return noisy > headlist_threshold(epsilon, delta)


def _create_head_list(records, *, epsilon, delta, rng, counts=None):
    """CreateHeadList (Figure 3) with ``m_O = 1``: the candidate head list from S.

    The candidates are the distinct records of S (the domain comes from the data)
    whose count plus ``Laplace(b_S)`` noise exceeds ``tau``: a record held by a single
    user, the one that can be in one neighbour's domain and not the other's, passes
    with probability ``delta / 2``. (epsilon, delta)-DP for the users in S.
    ``counts``, when given, says how many users of S hold each row of ``records``.

    Returns
    -------
    candidates : ndarray of int64, shape (n_candidates, 2)
        In increasing (query, url) order. The wildcard record is added by the layout.
    """
    distinct, counts = _distinct_records(records, counts)
    if distinct.shape[0] == 0:
        return distinct
    keep = _passes_threshold(counts.astype(np.float64), epsilon=epsilon, delta=delta, rng=rng)
    return distinct[keep]


def _estimate_optin_probabilities(records, candidates, *, epsilon, max_records, rng,
                                  counts=None):
    """EstimateOptinProbabilities (Figure 4) with ``m_O = 1``, on the users of T.

    The counts of T's records are released with ``Laplace(b_T)`` noise over the cells of
    the candidate head list (every candidate, one wildcard per candidate query, and
    ``(*, *)``): a partition fixed before T's data is read, so the release is
    epsilon-DP for the users in T. The ``max_records`` most probable candidates form
    the head list, and the cells of the head list the clients will see are sums of the
    released cells (post-processing).

    Returns
    -------
    layout : _HeadListLayout
        The final head list (records in decreasing opt-in estimate).
    probabilities, variances : ndarray of shape (layout.n_cells,)
        ``p_hat_O`` and Theorem 4's variance estimate per cell. A cell that sums ``m``
        released cells carries ``m`` independent ``Laplace(b_T)`` draws, whose variance
        ``2 m b_T^2`` is that of one ``Laplace(b_T sqrt(m))``: Theorem 4 is applied with
        that scale. Estimates are clipped below at the noise-only variance
        ``optin_variance(0, |D_T|, b)``, the least the true variance can be.

    ``counts``, when given, says how many users of T hold each row of ``records``.
    """
    n_users = records.shape[0] if counts is None else int(np.sum(counts))
    candidate_layout = _HeadListLayout(candidates)
    cell_counts = np.bincount(candidate_layout.cells_of_records(records), weights=counts,
                              minlength=candidate_layout.n_cells).astype(np.float64)
    noisy = _count_mechanism(epsilon).randomise(cell_counts, random_state=rng)
    candidate_estimates = noisy[candidate_layout.record_cells] / n_users
    top = np.argsort(-candidate_estimates, kind="stable")[:max_records]
    layout = _HeadListLayout(candidates[top])

    merged_into = layout.cells_of_records(candidate_layout.cell_records)
    probabilities = np.bincount(merged_into, weights=noisy, minlength=layout.n_cells) / n_users
    n_draws = np.bincount(merged_into, minlength=layout.n_cells)
    scale = optin_count_noise_scale(epsilon)
    variances = np.empty(layout.n_cells)
    for draws in np.unique(n_draws):
        cells = n_draws == draws
        draws_scale = scale * np.sqrt(draws)
        variances[cells] = np.maximum(
            optin_variance_estimate(probabilities[cells], n_users, draws_scale),
            optin_variance(0.0, n_users, draws_scale),
        )
    return layout, probabilities, variances
