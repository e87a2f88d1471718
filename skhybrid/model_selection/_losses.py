"""Per-user validation losses with a public range: what private selection scores.

A private search ranks candidates by the sum, over held-out users, of a loss of each
user's (clipped) record against the candidate's release. For a fixed release every
user's loss lies in an interval of public width ``B`` (from the bounds alone), so
replacing one user's record moves every candidate's sum by at most ``B``: the
sensitivity of :class:`~skhybrid.model_selection.PrivateGridSearchCV`'s exponential
mechanism. Each loss is minimised in expectation by the statistic the estimator
targets (a proper loss), so it ranks releases by how close they come to it; for the
mean estimators and K-means its average is ``score`` up to a constant:

- mean estimators: ``mean_j (x_j - m_j)^2``, width ``mean_j R_j^2``. Its average over
  users is ``score``'s squared error plus the data's variance, the same for every
  candidate.
- MixedQuantileEstimator, PDPQuantileEstimator: the pinball loss of the ``q``-quantile,
  ``mean_j max(q d_j, (q - 1) d_j)`` with ``d = x - theta``, width
  ``max(q, 1 - q) mean_j R_j``.
- HybridKMeans: ``min_k ||x - c_k||^2``, width ``sum_j R_j^2`` (the per-sample
  within-cluster sum of squares of ``score``).
- BlenderHeavyHitters: ``||p||^2 + 1 - 2 p(x)``, width 2: the squared L2 distance
  between the released distribution ``p`` (clipped to [0, 1]) and ``x``'s indicator
  (a Brier score); ``||p||^2`` is the same for every record, so only ``2 p(x)`` in
  [0, 2] moves with the record.

``R_j`` is feature ``j``'s width ``upper_j - lower_j``; records and releases are
clipped to the bounds first, which is what makes the widths hold.
"""

import numpy as np

from ..utils._validation import check_bounds


def _public_bounds(estimator, n_features):
    if getattr(estimator, "bounds", None) is None:
        raise ValueError(
            f"private selection needs data-independent bounds to bound each user's loss; "
            f"{type(estimator).__name__} has bounds=None (pass bounds=(lower, upper))"
        )
    return check_bounds(estimator.bounds, n_features)


def _clipped_records(estimator, X):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    lower, upper = _public_bounds(estimator, X.shape[1])
    return np.clip(X, lower, upper), lower, upper


def _squared_error(estimator, X):
    X, lower, upper = _clipped_records(estimator, X)
    estimate = np.clip(getattr(estimator, estimator._estimate_attribute), lower, upper)
    return np.mean((X - estimate) ** 2, axis=1), float(np.mean((upper - lower) ** 2))


def _pinball(estimator, X):
    X, lower, upper = _clipped_records(estimator, X)
    quantile = float(estimator.quantile)
    difference = X - np.clip(estimator.quantile_, lower, upper)
    losses = np.mean(np.maximum(quantile * difference, (quantile - 1.0) * difference), axis=1)
    return losses, max(quantile, 1.0 - quantile) * float(np.mean(upper - lower))


def _within_cluster(estimator, X):
    X, lower, upper = _clipped_records(estimator, X)
    centres = np.clip(estimator.cluster_centers_, lower, upper)
    distances = ((X[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    return distances.min(axis=1), float(np.sum((upper - lower) ** 2))


def _brier(estimator, X):
    probabilities = np.clip(np.asarray(estimator.probabilities_, dtype=np.float64), 0.0, 1.0)
    lookup = {tuple(record): p for record, p in zip(estimator.head_list_, probabilities)}
    records = np.asarray(X, dtype=object)
    mass = np.array([lookup.get(tuple(row), 0.0) for row in records.tolist()])
    return float(np.sum(probabilities**2)) + 1.0 - 2.0 * mass, 2.0


_LOSSES = {
    "HybridMeanEstimator": _squared_error,
    "ADPMEstimator": _squared_error,
    "PDPSampleEstimator": _squared_error,
    "MixedMeanEstimator": _squared_error,
    "MixedQuantileEstimator": _pinball,
    "PDPQuantileEstimator": _pinball,
    "HybridKMeans": _within_cluster,
    "BlenderHeavyHitters": _brier,
}


def selection_loss(estimator, X):
    """Each record's loss against a fitted estimator's release, and the loss's width.

    Parameters
    ----------
    estimator : a fitted skhybrid estimator
    X : array-like of shape (n_users, n_features)
        Held-out records.

    Returns
    -------
    losses : ndarray of shape (n_users,)
    width : float
        ``B``: for any fixed release, every record's loss lies in an interval of this
        width (the table above).
    """
    for cls in type(estimator).__mro__:
        if cls.__name__ in _LOSSES:
            return _LOSSES[cls.__name__](estimator, X)
    raise TypeError(
        f"no private selection loss is defined for {type(estimator).__name__}; accepted: "
        + ", ".join(sorted(_LOSSES))
    )
