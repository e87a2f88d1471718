"""The charge before the noise: what a release costs each user, on the estimator's ledger.

Each estimator declares its release's cost next to the code that draws its noise, in a
``_release_cost(is_tcm, epsilon, **resolved)`` method returning a :class:`ReleaseCost`;
:func:`charge_release` charges it on ``estimator.ledger`` after every check that can
refuse the fit and before the noise.

Public users (``epsilon_i = inf``, where an estimator accepts them) are not charged:
their data are public. Users with a zero cost are left out of the charge.
"""

from dataclasses import dataclass

import numpy as np

from ..exceptions import UnaccountedReleaseWarning, warn_user
from ..utils._dask import is_dask_collection
from ..utils._validation import check_epsilon, check_trust_group
from ._accounts import id_array


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

    @classmethod
    def at_levels(cls, epsilon, *, charged=None, cap=None, **fields):
        """Each user charged their own level (public users, ``inf``, at 0).

        Parameters
        ----------
        epsilon : float or ndarray of shape (n_users,)
            One level for everyone stays a float: the ledger then charges it without
            a per-user array.
        charged : ndarray of bool of shape (n_users,), default=None
            The users whose data the release uses (the others at 0); None: everyone.
        cap : float, default=None
            A level no user's cost exceeds.
        **fields
            ``delta`` and ``mechanism``.
        """
        if np.ndim(epsilon) == 0:
            levels = 0.0 if np.isinf(epsilon) else float(epsilon)
        else:
            epsilon = np.asarray(epsilon, dtype=np.float64)
            levels = np.where(np.isinf(epsilon), 0.0, epsilon)
        if cap is not None:
            levels = np.minimum(levels, cap)
        if charged is not None:
            levels = np.where(charged, levels, 0.0)
        return cls(levels, **fields)


def release_cost(estimator, is_tcm, epsilon, **resolved):
    """Each user's cost of one release of ``estimator``: its ``_release_cost``.

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
    declared = getattr(estimator, "_release_cost", None)
    if declared is None:
        raise TypeError(
            f"{type(estimator).__name__} declares no privacy cost: give it a "
            "_release_cost(is_tcm, epsilon, **resolved) method returning a ReleaseCost")
    return declared(np.asarray(is_tcm, dtype=bool), epsilon, **resolved)


#: Whether this process has said that a release went unrecorded (it says so once).
_UNACCOUNTED = {"warned": False}


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
    warn_user(
        f"{name} released with secure noise and no ledger: it spent up to epsilon "
        f"{epsilon:g} of each of {n_users} users' budget, and nothing records it (this is "
        "said once per process; later releases are not reported). Give the estimator "
        "ledger=PrivacyLedger(...) and pass user_id to fit to record every release, or "
        "record it yourself with PrivacyLedger.charge",
        UnaccountedReleaseWarning,
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


def user_id_array(user_id, n_rows):
    """``user_id`` as a numpy array of one id per row of ``X`` (Dask and pandas collected)."""
    ids = id_array(_materialised(user_id))
    if ids.shape != (n_rows,):
        raise ValueError(f"user_id must have one id per row of X ({n_rows}); got shape "
                         f"{ids.shape}")
    return ids


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
            # A release charged by its noise multiplier has epsilon 0 here.
            cost = release_cost(estimator, is_tcm, epsilon, **resolved)
            warn_unaccounted_release(type(estimator).__name__,
                                     float(np.max(cost.epsilon, initial=0.0)), is_tcm.shape[0])
        return
    check_user_id(estimator, user_id)
    ids = user_id_array(user_id, is_tcm.shape[0])
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
