"""Warnings and errors specific to skhybrid, and where its warnings point."""

import importlib.util
import os
import sys
import warnings

import numpy as np

#: Frames in these directories are the libraries' own, not the user's line; skhybrid's
#: own tests are users (they sit in ``tests`` directories). Found without importing
#: scikit-learn or joblib (a ledger command needs neither).
_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.abspath(importlib.util.find_spec(name).origin)) + os.sep
    for name in (__package__, "sklearn", "joblib")
)
_TESTS = f"{os.sep}tests{os.sep}"


def _is_library_frame(filename):
    filename = os.path.abspath(filename)
    return filename.startswith(_LIBRARY_DIRS) and _TESTS not in filename


def warn_user(message, category):
    """Warn at the user's line: the first caller outside skhybrid, scikit-learn and joblib.

    No stack level to count: a fit reached directly, through a Pipeline, a search or
    ``cross_validate`` warns at the line of the user's code that started it.
    """
    # stacklevel 1 is this function's line, 2 its caller's, and so on.
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and _is_library_frame(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


class PrivacyLeakWarning(UserWarning):
    """A computation releases information about the data beyond its stated guarantee.

    Raised, for example, when ``bounds=None`` makes an estimator derive the clipping
    bounds from the data itself: the bounds then depend on the private values, so the
    estimate is no longer differentially private. Give data-independent bounds to
    silence it.
    """


class EmptyGroupWarning(UserWarning):
    """A hybrid strategy fell back to one group's estimate because the other group is empty.

    Also emitted when a hybrid strategy is fit without ``trust_group``: every user is
    then tcm, which is rarely what a hybrid fit means (with metadata routing on, request
    the metadata with ``set_fit_request(trust_group=True)`` and pass it).
    """


class MetadataOverrideWarning(UserWarning):
    """Per-sample ``epsilon`` metadata replaced a non-default ``epsilon`` parameter.

    The metadata wins: the parameter then has no effect on the fit, so a grid search
    over it compares identical fits. Leave the parameter at its default when passing
    per-user privacy levels.
    """


class PrivacyBudgetWarning(UserWarning):
    """A release spends the users' privacy budget again.

    Emitted when an estimator fitted with ``partial_fit`` releases a new estimate after
    more data arrived: every user whose data entered an earlier release has now taken
    part in two releases, so their total privacy loss is the sum of the epsilons spent
    (sequential composition).
    """


class UnaccountedReleaseWarning(UserWarning):
    """A release with secure noise spent users' privacy budget and no ledger recorded it.

    Emitted once per process, by the first such fit (or search): it says what that
    release spent per user. Give the estimator ``ledger=PrivacyLedger(...)`` and pass
    ``user_id`` to ``fit`` to record every release, or charge releases yourself with
    :meth:`skhybrid.accounting.PrivacyLedger.charge`.
    """


class BudgetExceededError(RuntimeError):
    """A release would take some users past their privacy budget; nothing was charged.

    Raised by :class:`skhybrid.accounting.PrivacyLedger` (and so by an estimator's
    ``fit`` with ``ledger=``) before any noise is drawn: no user is charged and nothing
    is released.

    Attributes
    ----------
    n_users : int
        How many users would exceed their budget.
    user_id : int or str
        The worst of them (largest epsilon over budget).
    budget, spent, would_spend : float
        That user's epsilon budget, spent so far, and total after the release.
    """

    def __init__(self, message, *, n_users, user_id, budget, spent, would_spend):
        super().__init__(message)
        self.n_users = n_users
        self.user_id = user_id
        self.budget = budget
        self.spent = spent
        self.would_spend = would_spend

    def __reduce__(self):
        # The attributes are keyword-only: pickle them as state, so that the error
        # crosses processes (joblib sends a worker's error to the parent).
        return _rebuilt_error, (type(self), self.args, self.__dict__)

    @classmethod
    def for_users(cls, ids, over, *, n_users, budget, spent, would_spend, budget_delta,
                  would_spend_delta):
        """The error for users ``ids[over]`` of ``n_users``, naming the one most over budget."""
        excess = np.where(over, np.maximum(would_spend - budget, 0.0), -np.inf)
        worst = int(np.argmax(excess))
        n_over = int(np.count_nonzero(over))
        detail = (
            f"budget epsilon {float(budget[worst]):g}, spent {float(spent[worst]):g}, "
            f"{float(would_spend[worst]):g} after this release"
        )
        if would_spend_delta[worst] > budget_delta[worst]:
            detail += (f"; delta budget {float(budget_delta[worst]):g}, "
                       f"{float(would_spend_delta[worst]):g} after this release")
        if np.isinf(would_spend[worst]) and budget_delta[worst] == 0:
            detail += "; a Gaussian release needs a delta budget > 0 (set_budget(ids, epsilon, delta))"
        return cls(
            f"this release would exceed the privacy budget of {n_over} of {n_users} users "
            f"(worst: user {ids[worst]!r}, {detail}); nothing was charged or released",
            n_users=n_over, user_id=ids[worst], budget=float(budget[worst]),
            spent=float(spent[worst]), would_spend=float(would_spend[worst]),
        )


def _rebuilt_error(cls, args, state):
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class LedgerError(RuntimeError):
    """A privacy ledger cannot be read or written (not a ledger, corrupt, or locked).

    Nothing was charged: a charge is one transaction, applied wholly or not at all.
    """


class WorstCaseVarianceWarning(UserWarning):
    """An estimator's weights assume the worst-case data variance for the bounds.

    Emitted by ``HybridMeanEstimator(strategy="kvh", variance=None)``: the weight is
    then computed for ``(upper - lower)**2 / 4``, the largest variance any data in the
    bounds can have, which for most real data puts far too little weight on the tcm
    group (20 times the error of ``"pwh"`` on the bundled salaries at 5% tcm). Pass a
    known ``variance``, or ``variance="private"`` to estimate it privately.
    """


class NoisyCentresWarning(UserWarning):
    """Some of a K-means fit's centres are mostly privacy noise.

    Emitted by :class:`~skhybrid.cluster.HybridKMeans` when a centre's expected noise
    (``centre_noise_``, from its released cluster sizes, the bounds and epsilon) exceeds
    ``NOISY_CENTRE_FRACTION`` of the bounds' diagonal: such a centre tells little about
    the data (it may sit anywhere in the box). More users, a larger epsilon, fewer
    clusters, fewer iterations or tighter bounds reduce the noise.
    """


__all__ = [
    "BudgetExceededError",
    "EmptyGroupWarning",
    "LedgerError",
    "MetadataOverrideWarning",
    "NoisyCentresWarning",
    "PrivacyBudgetWarning",
    "PrivacyLeakWarning",
    "UnaccountedReleaseWarning",
    "WorstCaseVarianceWarning",
]

