"""What each estimator's release costs each user, and the charge before the noise.

This is the one place that says what a ``fit`` (or a ``partial_fit`` release) charges
each user on a :class:`~skhybrid.accounting.PrivacyLedger`. Each user's cost is the
guarantee the estimator's mechanism gives that user for that release:

========================  ==============================================================
Estimator                 Cost to user ``i`` of one release
========================  ==============================================================
HybridMeanEstimator       ``epsilon_i`` (Laplace, pure DP; the user's own level,
                          central for tcm users and local for lm users); with
                          ``mechanism="gaussian"`` a Gaussian release of noise
                          multiplier ``r(epsilon_i, delta)`` (the analytic calibration
                          the mechanism uses). Not charged: lm users under
                          ``"tcm_only"`` and tcm users under ``"lm_only"`` (their data
                          are not used, when the other group is not empty), and lm
                          users with ``local_reports=True`` (their reports were made
                          on their devices; charge that once with
                          :meth:`PrivacyLedger.charge` when you collect them: reusing a
                          report is post-processing). With ``variance="private"``
                          (the default) the same ``epsilon_i``: a tcm user's epsilon
                          is split, 5% on the group's second moment and 95% on its
                          mean (sequential composition); lm users' variance estimate
                          is post-processing of their reports.
ADPMEstimator             ``epsilon_i`` (Laplace on an affine estimate whose weights
                          give user ``i`` ``epsilon_i``-DP, Chaudhuri and Courtade).
PDPSampleEstimator        ``min(epsilon_i, t)`` for the threshold ``t``: a user below
                          ``t`` is kept with probability ``(e^epsilon_i - 1) /
                          (e^t - 1)``, and subsampling a ``t``-DP release with that
                          probability gives ``ln(1 + p (e^t - 1)) = epsilon_i``
                          (amplification by sampling, Jorgensen et al. 2015, Thm 1);
                          a user above ``t`` is always kept and gets ``t``.
MixedMeanEstimator,       ``epsilon_i`` (each privacy group's Laplace or exponential
MixedQuantileEstimator    mechanism runs at the group's level).
PDPQuantileEstimator      ``epsilon_i`` (the PE mechanism's cost of moving user ``i`` is
                          ``epsilon_i``, Jorgensen et al. 2015).
HybridKMeans              ``epsilon_i`` over all ``n_iter`` iterations (the parameter is
                          the total); lm users are not charged under ``"tcm_only"``.
BlenderHeavyHitters       ``(epsilon, delta)`` for every user: opt-in users by
                          Theorem 1's head list and estimates, clients by Theorem 3's
                          local randomizer (Avent et al. 2017).
========================  ==============================================================

Public users (``epsilon_i = inf``, where an estimator accepts them) are not charged:
their data are public. Users with a zero cost are left out of the charge.
"""

import os
import sys
import warnings
from dataclasses import dataclass

import numpy as np
import sklearn

from ..exceptions import UnaccountedReleaseWarning
from ..mechanisms._calibration import gaussian_noise_multiplier
from ..utils._dask import is_dask_collection
from ..utils._validation import check_epsilon, check_trust_group
from ._ledger import id_array


@dataclass
class ReleaseCost:
    """Each user's cost of one release.

    Attributes
    ----------
    epsilon : float or ndarray of shape (n_users,)
        Pure epsilon (or the epsilon of an (epsilon, delta) guarantee); 0 = not charged.
        A float charges every user the same.
    delta : ndarray of shape (n_users,) or float
    noise_multiplier : ndarray of shape (n_users,) or None
        For Gaussian releases; ``inf`` = not charged.
    mechanism : str
    """

    epsilon: object
    delta: object = 0.0
    noise_multiplier: object = None
    mechanism: str = "laplace"


def _levels(epsilon, n_users):
    """Per-user levels with public users (inf) at 0: they are not charged.

    One level for everyone stays a scalar: the ledger then charges it without a
    per-user array.
    """
    if np.ndim(epsilon) == 0:
        return 0.0 if np.isinf(epsilon) else float(epsilon)
    epsilon = np.asarray(epsilon, dtype=np.float64)
    return np.where(np.isinf(epsilon), 0.0, epsilon)


def _hybrid_mean_cost(estimator, is_tcm, epsilon, **_):
    n_tcm = int(np.count_nonzero(is_tcm))
    n_lm = is_tcm.size - n_tcm
    uses_tcm = not (estimator.strategy == "lm_only" and n_lm)
    uses_lm = not (estimator.strategy == "tcm_only" and n_tcm) and not estimator.local_reports
    levels = _levels(epsilon, is_tcm.size)
    # Everyone charged at their level (both groups used, or the one group present): no
    # per-user mask, and one number for one epsilon (no n-long array to allocate).
    everyone = (uses_tcm or not n_tcm) and (uses_lm or not n_lm)
    if everyone and estimator.mechanism != "gaussian":
        return ReleaseCost(levels)
    charged = np.where(is_tcm, uses_tcm, uses_lm)
    levels = np.broadcast_to(levels, (is_tcm.size,))
    if estimator.mechanism == "gaussian":
        multiplier = np.full(is_tcm.size, np.inf)
        distinct, inverse = np.unique(levels[charged], return_inverse=True)
        multiplier[charged] = np.array([
            gaussian_noise_multiplier(level, estimator.delta) for level in distinct
        ])[inverse]
        return ReleaseCost(np.zeros(is_tcm.size), noise_multiplier=multiplier,
                           mechanism="gaussian")
    return ReleaseCost(np.where(charged, levels, 0.0))


def _own_level_cost(estimator, is_tcm, epsilon, **_):
    return ReleaseCost(_levels(epsilon, is_tcm.size))


def _pdp_cost(estimator, is_tcm, epsilon, *, threshold, **_):
    return ReleaseCost(np.minimum(_levels(epsilon, is_tcm.size), threshold))


def _kmeans_cost(estimator, is_tcm, epsilon, **_):
    levels = _levels(epsilon, is_tcm.size)
    if estimator.strategy == "tcm_only":
        levels = np.where(is_tcm, levels, 0.0)
    return ReleaseCost(levels)


def _blender_cost(estimator, is_tcm, epsilon, **_):
    return ReleaseCost(_levels(epsilon, is_tcm.size), delta=float(estimator.delta),
                       mechanism="laplace+randomized-response")


_COSTS = {
    "HybridMeanEstimator": _hybrid_mean_cost,
    "ADPMEstimator": _own_level_cost,
    "PDPSampleEstimator": _pdp_cost,
    "MixedMeanEstimator": _own_level_cost,
    "MixedQuantileEstimator": _own_level_cost,
    "PDPQuantileEstimator": _own_level_cost,
    "HybridKMeans": _kmeans_cost,
    "BlenderHeavyHitters": _blender_cost,
}


def release_cost(estimator, is_tcm, epsilon, **resolved):
    """Each user's cost of one release of ``estimator`` (the table above).

    Parameters
    ----------
    estimator : one of skhybrid's estimators
    is_tcm : ndarray of bool of shape (n_users,)
    epsilon : float or ndarray of shape (n_users,)
        The users' validated privacy levels.
    **resolved
        Quantities the fit resolved first (``threshold`` for PDPSampleEstimator).

    Returns
    -------
    cost : ReleaseCost
    """
    for cls in type(estimator).__mro__:
        if cls.__name__ in _COSTS:
            return _COSTS[cls.__name__](estimator, np.asarray(is_tcm, dtype=bool), epsilon,
                                        **resolved)
    raise TypeError(f"no privacy cost is defined for {type(estimator).__name__}")


#: Whether this process has said that a release went unrecorded (it says so once).
_UNACCOUNTED = {"warned": False}


_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.dirname(os.path.abspath(path))) + os.sep
    for path in (__file__,)
) + (os.path.dirname(os.path.abspath(sklearn.__file__)) + os.sep,)


def user_stacklevel():
    """The stacklevel of the first caller outside skhybrid and scikit-learn (tests count)."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        inside = path.startswith(_LIBRARY_DIRS) and f"{os.sep}tests{os.sep}" not in path
        if not inside and "joblib" not in path:
            return level
        frame, level = frame.f_back, level + 1
    return 1


def warn_unaccounted_release(name, epsilon, n_users):
    """Say, once per process, that a release with secure noise had no ledger to record it.

    Parameters
    ----------
    name : str
        The estimator or search that released.
    epsilon : float
        The largest epsilon it spent for one user.
    n_users : int
    """
    if _UNACCOUNTED["warned"]:
        return
    _UNACCOUNTED["warned"] = True
    warnings.warn(
        f"{name} released with secure noise and no ledger: it spent up to epsilon "
        f"{epsilon:g} of each of {n_users} users' budget, and nothing records it (this is "
        "said once per process; later releases are not reported). Give the estimator "
        "ledger=PrivacyLedger(...) and pass user_id to fit to record every release, or "
        "record it yourself with PrivacyLedger.charge",
        UnaccountedReleaseWarning,
        stacklevel=user_stacklevel(),
    )


def check_user_id(estimator, user_id):
    """Refuse a ledger without ``user_id`` (row positions are not identities)."""
    if getattr(estimator, "ledger", None) is not None and user_id is None:
        raise ValueError(
            f"{type(estimator).__name__} has a ledger but was fit without user_id: pass "
            "one id per row (fit(X, ..., user_id=ids); with metadata routing on, call "
            "set_fit_request(user_id=True)). Row positions are not identities: under "
            "cross-validation the same position is a different user in every fold"
        )


def _materialised(values):
    if values is None:
        return None
    if is_dask_collection(values):
        values = values.compute()
    return getattr(values, "to_numpy", lambda: values)()


def charge_release(estimator, user_id, is_tcm, epsilon, **resolved):
    """Charge the users of one release on ``estimator.ledger`` (no-op without a ledger).

    Call it after every check that can refuse the fit and before the curator's noise
    (a refused fit must charge nobody): it raises
    :class:`~skhybrid.exceptions.BudgetExceededError` (nothing charged) when a user
    would exceed their budget.

    Parameters
    ----------
    estimator : estimator with a ``ledger`` parameter
    user_id : array-like of shape (n_users,), Dask array or Series
    is_tcm : ndarray of bool of shape (n_users,)
    epsilon : float or ndarray of shape (n_users,)
    **resolved
        See :func:`release_cost`.
    """
    ledger = getattr(estimator, "ledger", None)
    if ledger is None:
        if getattr(estimator, "random_state", 0) is None and not _UNACCOUNTED["warned"]:
            cost = release_cost(estimator, is_tcm, epsilon, **resolved)
            spent = cost.epsilon if cost.mechanism != "gaussian" else np.zeros(1)
            warn_unaccounted_release(type(estimator).__name__,
                                     float(np.max(spent, initial=0.0)), is_tcm.shape[0])
        return
    check_user_id(estimator, user_id)
    ids = id_array(_materialised(user_id))
    if ids.ndim != 1 or ids.shape[0] != is_tcm.shape[0]:
        raise ValueError(
            f"user_id must have one id per row of X ({is_tcm.shape[0]}); got shape {ids.shape}"
        )
    cost = release_cost(estimator, is_tcm, epsilon, **resolved)
    params = {key: value for key, value in estimator.get_params(deep=False).items()
              if key not in ("ledger", "random_state", "init")}
    ledger.charge(ids, cost.epsilon, cost.delta, noise_multiplier=cost.noise_multiplier,
                  release={"estimator": type(estimator).__name__, "params": params,
                           "mechanism": cost.mechanism})


def charge_dask_release(estimator, user_id, trust_group, epsilon, *, allow_inf, **resolved):
    """:func:`charge_release` for Dask metadata: the (small) metadata are computed first.

    ``X`` itself is never collected. The estimators call this after a reduction that
    validated every chunk of ``X`` (the statistics, or a first pass over the users),
    so a bad chunk fails the fit before anyone is charged.
    """
    if getattr(estimator, "ledger", None) is None:
        return
    check_user_id(estimator, user_id)
    ids = _materialised(user_id)
    n_users = len(ids)
    is_tcm = check_trust_group(_materialised(trust_group), n_users)
    if epsilon is None:
        levels = check_epsilon(estimator.epsilon, allow_inf=allow_inf)
    else:
        levels = check_epsilon(np.asarray(_materialised(epsilon)), n_users, allow_inf=allow_inf)
    charge_release(estimator, ids, is_tcm, levels, **resolved)
