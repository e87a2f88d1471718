"""Private model selection: a grid search whose choice is differentially private and charged.

:class:`PrivateGridSearchCV` fits every candidate on every training fold (each fit a
private release, charged), scores the held-out tcm users with a loss of public range
(:mod:`._losses`) and picks a candidate with the exponential mechanism. Its whole cost
is known before it runs (:func:`search_cost`, from the estimators' own charges), is
reserved on the ledger in one charge, and what no release used is refunded.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.model_selection import (
    GridSearchCV,
    ParameterGrid,
    ParameterSampler,
    RandomizedSearchCV,
    check_cv,
)
from sklearn.utils import Bunch, _safe_indexing
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    _routing_enabled,
    process_routing,
)
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import _check_method_params, _num_samples, check_is_fitted

from ..accounting import user_id_array, warn_unaccounted_release
from ..base import RANDOM_STATE_CONSTRAINT
from ..exceptions import BudgetExceededError, warn_user
from ..mechanisms import ExponentialMechanism
from ..utils._dask import is_dask_collection
from ..utils._random import check_random_state
from ..utils._validation import check_bounds, check_epsilon, check_trust_group
from ._pipelines import (
    candidate_model,
    charging_steps,
    check_public_bounds,
    final_step,
    fit_model,
    flat_user_id,
    input_bounds,
    ledger_of,
    model_loss,
    seeded,
)
from ._search_cost import SearchCost
from ._variance_ranking import (
    chosen_fit_overrides,
    stratified_splitter,
    rank_at,
    ranking_route,
    rest_candidate,
    variance_fit,
)

# -- ledger stand-ins: what a candidate's fit charges, without charging the ledger again --


class _DryRun(Exception):
    """Raised by :class:`_CostProbe` at the charge, before any noise: the planned cost."""

    def __init__(self, user_ids, epsilon, delta, noise_multiplier):
        super().__init__("dry run")
        self.user_ids, self.epsilon, self.delta = user_ids, epsilon, delta
        self.noise_multiplier = noise_multiplier


class _CostProbe:
    """A ledger that stops the fit at its last charge and reports the cost.

    A model with one charging step (an estimator) is stopped at its charge, before any
    noise: nothing is released. A pipeline's earlier charging steps are let through
    (their charges recorded, their releases discarded with the probe) so that the
    later steps get their input; the fit stops at the last step's charge, and the cost
    is the sum of the steps' charges.
    """

    def __init__(self, n_charges=1):
        self.n_charges = n_charges
        self.charged = []

    def charge(self, user_ids, epsilon=0.0, delta=0.0, *, noise_multiplier=None, release=None,
               description=None):
        self.charged.append((epsilon, delta))
        if noise_multiplier is not None or len(self.charged) >= self.n_charges:
            raise _DryRun(user_ids, sum(np.asarray(e, dtype=np.float64) for e, _ in self.charged),
                          sum(np.asarray(d, dtype=np.float64) for _, d in self.charged),
                          noise_multiplier)
        return 0


class _Allotment:
    """A ledger for one planned release, drawing on the search's reservation.

    It accepts the charges it was planned for (each user at most the planned amount
    in all: a pipeline's charging steps charge it one after the other) and records
    their sum; it travels to worker processes with the candidate (it pickles),
    and what it recorded comes back with the fit's result.
    """

    def __init__(self, epsilon, delta):
        self.epsilon, self.delta = epsilon, delta
        self.used = None

    def charge(self, user_ids, epsilon=0.0, delta=0.0, *, noise_multiplier=None, release=None,
               description=None):
        n = self.epsilon.shape[0]
        epsilon = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), (n,))
        delta = np.broadcast_to(np.asarray(delta, dtype=np.float64), (n,))
        slack = 1e-12 * np.maximum(self.epsilon, 1.0)
        if self.used is not None:
            epsilon, delta = epsilon + self.used[0], delta + self.used[1]
        if (noise_multiplier is not None
                or (epsilon > self.epsilon + slack).any() or (delta > self.delta + 1e-15).any()):
            raise BudgetExceededError.for_users(
                list(np.asarray(user_ids).tolist()), epsilon > self.epsilon + slack,
                n_users=n, budget=self.epsilon, spent=np.zeros(n), would_spend=epsilon,
                budget_delta=self.delta, would_spend_delta=delta,
            )
        self.used = (epsilon.copy(), delta.copy())
        return int(np.count_nonzero((epsilon > 0) | (delta > 0)))


def _planned_cost(estimator, params, X, fit_params, n_rows):
    """What one fit of ``estimator`` with ``params`` would charge each row's user.

    The fit runs with a :class:`_CostProbe` up to its charge (every estimator charges
    after validating its input and before any noise), so the cost is the estimators'
    own (each declares it in ``_release_cost``) and nothing is released.
    """
    probe = candidate_model(estimator, params, _CostProbe())
    probe_ledger = ledger_of(probe)
    probe_ledger.n_charges = len(charging_steps(probe))
    try:
        fit_model(probe, X, fit_params)
    except _DryRun as charge:
        if charge.noise_multiplier is not None:
            raise ValueError(
                f"{type(estimator).__name__} with a Gaussian mechanism composes by noise "
                "multipliers, which a search cannot reserve and refund as epsilon; use "
                "mechanism='laplace' in private searches and their cost"
            ) from None
        return (np.broadcast_to(np.asarray(charge.epsilon, dtype=np.float64), (n_rows,)).copy(),
                np.broadcast_to(np.asarray(charge.delta, dtype=np.float64), (n_rows,)).copy())
    return np.zeros(n_rows), np.zeros(n_rows)


# -- warnings: once per search, whichever process raised them ------------------------------


def _recording(function, *args, **kwargs):
    """``function(*args, **kwargs)`` with its warnings recorded, and any exception returned."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = function(*args, **kwargs), None
        except Exception as exception:  # returned: the caller needs what was charged first
            result, error = None, exception
    return result, error, [(w.category, str(w.message)) for w in caught]


def _warn_once_per_kind(records, owner):
    """Re-emit recorded warnings in this process: one of each class, saying how many there were."""
    by_kind = {}
    for category, message in records:
        by_kind.setdefault(category, []).append(message)
    for category, messages in by_kind.items():
        note = "" if len(messages) == 1 else (
            f" [{owner}: {len(messages)} of its fits warned {category.__name__}; shown once]")
        warn_user(messages[0] + note, category)


# -- metadata: the same routing as scikit-learn's searches ---------------------------------


def _routed_params(search, params):
    """The estimator's fit metadata and the splitter's split metadata of one search fit."""
    if _routing_enabled():
        routed = process_routing(search, "fit", **params)
        return dict(routed.estimator.fit), dict(routed.splitter.split)
    params = dict(params)
    groups = params.pop("groups", None)
    return params, {} if groups is None else {"groups": groups}


def _user_ids(estimator, user_id, n_rows):
    if user_id is None:
        if ledger_of(estimator) is not None:
            raise ValueError(
                f"{type(estimator).__name__} has a ledger but the search was fit without "
                "user_id: pass one id per row (search.fit(X, ..., user_id=ids))"
            )
        return np.arange(n_rows)
    return user_id_array(user_id, n_rows)


_ROUTES = {"exponential": "exponential selection",
           "expected_mse": "public expected_mse ranking",
           "private_variance": "expected_mse ranking at one private variance"}


class _NoPublicError(ValueError):
    """A candidate has no expected error computable from public quantities alone."""


class _Plan(Bunch):
    """A search's releases and what each costs each row's user (arrays over the rows).

    Keys: ``candidates``, ``splits``, ``fits`` (``(candidate, train, test, epsilon,
    delta)`` per fold fit, costs over the training rows), ``selection`` (epsilon per
    row), ``refits`` (candidate index to ``(epsilon, delta)`` over all rows: every
    candidate that may be refit), ``ids``, ``is_scored``, ``fit_params``, ``n_test``,
    ``expected`` (public expected errors, or None), ``records`` (the ranking's
    warnings) and ``probe_records`` (the cost probes' warnings, which the fits repeat).
    """

    def reserved(self):
        """Each row's epsilon and delta: every fit, the selection and the dearest refit."""
        n = self.ids.shape[0]
        epsilon, delta = self.selection.copy(), np.zeros(n)
        for _, train, _, fit_epsilon, fit_delta in self.fits:
            epsilon[train] += fit_epsilon
            delta[train] += fit_delta
        if self.refits:
            epsilon += np.max([cost[0] for cost in self.refits.values()], axis=0)
            delta += np.max([cost[1] for cost in self.refits.values()], axis=0)
        return epsilon, delta


def _search_inputs(owner, estimator, X, y, params, cv):
    """The estimator's fit metadata (``user_id`` always given), the splits, the user ids."""
    fit_params, split_params = _routed_params(owner, params)
    ids = _user_ids(estimator, flat_user_id(params), _num_samples(X))
    fit_params["user_id"] = ids  # every planned fit is charged (or probed) per user
    splits = [] if cv is None else list(cv.split(X, y, **split_params))
    return fit_params, splits, ids


def _plan_fits(estimator, candidates, X, fit_params, splits, refit_candidates):
    """Each fold fit's and each refit's cost (see :class:`_Plan`), and their warnings."""
    records, fits, refits = [], [], {}

    def probe(candidate, rows):
        X_rows = X if rows is None else _safe_indexing(X, rows)
        rows_params = (fit_params if rows is None
                       else _check_method_params(X, params=fit_params, indices=rows))
        cost, error, caught = _recording(_planned_cost, estimator, candidate, X_rows,
                                         rows_params, _num_samples(X_rows))
        records.extend(caught)
        if error is not None and rows is not None and _unfittable(error):
            # The fold's fit will refuse its data the same way, before any charge.
            n = _num_samples(X_rows)
            return np.zeros(n), np.zeros(n)
        if error is not None:
            raise error
        return cost

    for index, candidate in enumerate(candidates):
        for train, test in splits:
            fits.append((index, train, test, *probe(candidate, train)))
    for index in refit_candidates:
        refits[index] = probe(candidates[index], None)
    return fits, refits, records


def _plan_private_variance(estimator, candidates, X, fit_params, ids, refit, reason):
    """The plan of :mod:`._variance_ranking`'s route: the variance's release over every
    row (a fold fit of index -1), then every candidate's fit at the rest (one is run)."""
    n_rows = ids.shape[0]
    release, release_params = variance_fit(estimator, fit_params)
    cost, error, records = _recording(_planned_cost, release, {}, X, release_params, n_rows)
    if error is not None:
        raise error
    overrides, rest_params = chosen_fit_overrides(estimator, fit_params)
    base = clone(estimator).set_params(**overrides)
    _, refits, caught = _plan_fits(base, [rest_candidate(c, fit_params)
                                          for c in candidates],
                                   X, rest_params, [], range(len(candidates)) if refit else [])
    return _Plan(candidates=candidates, splits=[], ids=ids, fit_params=rest_params,
                 fits=[(-1, np.arange(n_rows), np.arange(0), *cost)], refits=refits,
                 is_scored=np.zeros(n_rows, dtype=bool), n_test=np.zeros(n_rows, np.intp),
                 expected=None, records=[], probe_records=records + caught,
                 selection=np.zeros(n_rows), route="private_variance", reason=reason,
                 base=base, release=(release, release_params))


def _rank_privately(search, X, plan, records):
    """Release the variance (drawing on the reservation), rank the candidates at it."""
    release, release_params = plan.release
    # It charges the ledger itself (a history row of its own), drawing on the reservation.
    release = clone(release)
    _, _, error, caught = _fit_candidate(release, X, release_params, _safe_indexing(X, []))
    records += caught
    if error is not None:
        raise error
    search.variance_ = release.variance_.copy()
    n_features = release.n_features_in_
    expected = rank_at(plan.base, plan.candidates, search.variance_, plan.fit_params,
                       plan.ids.shape[0], n_features)
    best = int(np.argmin(expected))
    # Fit as configured: a candidate with variance="private" estimates it again in its
    # fit, with the lm users' reports (more precise than the ranking's small share; a
    # noisy share's outlier in the weight costs several times the error, on the salaries).
    return best, expected, rest_candidate(plan.candidates[best], plan.fit_params)


def _unfittable(error):
    """A fit that refused its fold's data (an empty group, say), not a search failure."""
    return isinstance(error, ValueError)


def _row_indexable(X, params):
    """``X`` and its metadata as the folds index them: a Dask DataFrame (or Series) as a
    Dask array with known chunk lengths (it has no positional ``take``)."""
    def converted(value):
        if is_dask_collection(value) and hasattr(value, "to_dask_array"):
            return value.to_dask_array(lengths=True)
        return value

    return converted(X), {key: converted(value) for key, value in params.items()}


def _fit_candidate(estimator, X_train, fit_params, X_scored):
    """One fit: the held-out loss sum, the loss's width, what it charged, error, warnings.

    ``estimator`` charges an :class:`_Allotment` or nothing (``ledger=None``).
    """
    allotment = ledger_of(estimator)
    allotment = allotment if isinstance(allotment, _Allotment) else None

    def run():
        fitted = fit_model(estimator, X_train, fit_params)
        losses, width = model_loss(fitted, X_scored)
        return float(np.sum(losses)), width

    result, error, records = _recording(run)
    return result, None if allotment is None else allotment.used, error, records


class PrivateGridSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Exhaustive search over a grid whose choice is differentially private and charged.

    The private counterpart of scikit-learn's ``GridSearchCV`` for skhybrid's
    estimators. By default (``selection="auto"``) the mean estimators are ranked by
    their expected error (at their public variance, or at one private variance
    released for the search) and everything else by the exponential mechanism.
    With ``selection="exponential"`` every candidate is fit on every
    training fold (each fit a release, charged as the estimator charges it), each
    candidate gets the sum over the held-out *tcm* users of a loss whose range is
    public (:mod:`skhybrid.model_selection._losses`), and the exponential mechanism
    picks one at ``selection_epsilon``. With ``selection="expected_mse"`` (mean
    estimators) candidates are ranked by their analytic expected error, which depends
    on public quantities only: nothing is fit on the data before the chosen candidate's
    one fit, and the selection costs nothing.

    Before its first release the search reserves its whole cost
    (:func:`search_cost`) on the estimator's ledger in one charge; if any user cannot
    afford it, it raises :class:`~skhybrid.exceptions.BudgetExceededError` and nothing
    is charged or released. The candidates' fits draw on the reservation (they never
    charge the ledger themselves); what no release used (an exception before a fit's
    noise, a refit cheaper than the dearest candidate's) is refunded, with a history row.

    Read more in docs/user_guide/private_selection.rst, which proves the guarantee.

    Parameters
    ----------
    estimator : skhybrid estimator or Pipeline
        With ``ledger=`` to charge the search (``None``: nothing is recorded, and a
        search with secure noise warns once per process). Its ``bounds`` must be given.
        A ``Pipeline`` of skhybrid estimators and transformers and public transformers
        is one release costing the sum of its steps' (all with the same ledger; see
        "Searching over pipelines" in the user guide); a grid may swap a step.
    param_grid : dict or list of dict
        As ``GridSearchCV``'s.
    selection : {"auto", "exponential", "expected_mse"}, default="auto"
        How the candidate is chosen: the exponential mechanism on held-out losses
        (every estimator), or the smallest ``expected_mse_`` from public quantities
        (estimators with an analytic error, when it does not depend on the data: it is
        computed on public stand-ins of ``X``'s shape, and refused if it differs between
        two of them). For mean estimators whose candidates read the data's variance
        (``variance="private"``, the default, or the worst case ``variance=None``),
        ``"expected_mse"`` ranks at one private variance: released once at
        ``VARIANCE_RELEASE_SHARE`` of every user's epsilon, the chosen candidate fit at
        the rest (:mod:`skhybrid.model_selection._variance_ranking`: one fit's epsilon
        in all). ``"auto"``: ``"expected_mse"`` where it applies, else
        ``"exponential"``; the route depends on the estimator and the grid alone, and
        :func:`search_cost` states it. Held-out losses cannot tell mean estimators apart
        at realistic sizes (their errors differ by far less than one user's loss range),
        so ``"expected_mse"`` is the way to select a mean estimator.
    selection_epsilon : float, default=1.0
        Epsilon of the exponential mechanism, charged to every tcm user with a finite
        privacy level (the users whose held-out records are scored).
    cv : int, cross-validation generator or iterable, default=5
        As ``GridSearchCV``'s (unused with ``selection="expected_mse"``). The splits
        must not depend on ``X``'s values (KFold, ShuffleSplit, GroupKFold on public
        groups); a user held out in several splits multiplies the sensitivity.
    refit : bool, default=True
        Refit the chosen candidate on all of ``X`` (one more release, charged).
    n_jobs : int, default=None
        Fits in parallel (joblib); their warnings come back to this process.
    random_state : None, int or numpy.random.Generator, default=None
        Of the selection's noise. ``None`` is secure randomness; seeds are for
        simulations. The candidates' noise comes from the estimator's own
        ``random_state``.

    Attributes
    ----------
    best_index_ : int
    best_params_ : dict
    best_estimator_ : estimator
        The chosen candidate refit on all of ``X`` (with ``refit=True``); its ledger is
        the estimator's.
    cv_results_ : dict of ndarray
        ``params``, ``param_<name>``, ``selected`` (the chosen candidate), and with
        ``selection="expected_mse"`` the public ``expected_mse`` and its rank. There
        are no test scores: they would not be private (only the choice is).
    n_splits_ : int
        0 with ``expected_mse`` selection (nothing is fit on folds).
    selection_ : str
        The selection used: ``"expected_mse"`` or ``"exponential"``.
    variance_ : ndarray of shape (n_features,)
        The private variance the candidates were ranked at (the route at one private
        variance only).
    reserved_epsilon_ : ndarray of shape (n_users,)
        What the search reserved from each user (in the order of ``user_id``).
    spent_epsilon_ : ndarray of shape (n_users,)
        What its releases used; the difference was refunded.

    See Also
    --------
    search_cost : Each user's cost of a search, before it runs.
    sklearn.model_selection.GridSearchCV : The non-private search.

    Notes
    -----
    Privacy, for user ``i`` under replace-one neighbours (proof in the user guide):
    the sum of the epsilons the candidates' fits charge ``i`` (each fit is a release of
    the estimator), plus ``selection_epsilon`` if ``i`` is a scored tcm user (the
    exponential mechanism with utility sensitivity ``B`` times the number of splits
    holding out ``i``), plus the refit; by adaptive composition. lm users are never
    scored: their raw records do not reach the curator's selection.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid import HybridMeanEstimator
    >>> from skhybrid.accounting import PrivacyLedger
    >>> from skhybrid.model_selection import PrivateGridSearchCV, search_cost
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(2000, 1))
    >>> g = np.where(rng.random(2000) < 0.3, "tcm", "lm")
    >>> ids = np.arange(2000)
    >>> ledger = PrivacyLedger(default_budget=10.0)
    >>> # A public variance: the candidates' expected errors are then public too, and
    >>> # the search ranks them without spending anything on the choice.
    >>> est = HybridMeanEstimator(bounds=(0, 1), variance=1 / 12, ledger=ledger,
    ...                           random_state=0)
    >>> search = PrivateGridSearchCV(est, {"strategy": ["pwh", "tcm_only"]})
    >>> cost = search_cost(search, X, trust_group=g, user_id=ids)
    >>> search = search.fit(X, trust_group=g, user_id=ids)
    >>> bool(np.allclose(ledger.spent(ids), cost))
    True
    >>> search.selection_, search.best_params_
    ('expected_mse', {'strategy': 'pwh'})
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        "param_grid": [dict, list],
        "selection": [StrOptions({"auto", "exponential", "expected_mse"})],
        "selection_epsilon": [Interval(Real, 0, None, closed="neither")],
        "cv": ["cv_object"],
        "refit": ["boolean"],
        "n_jobs": [Integral, None],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(self, estimator, param_grid, *, selection="auto", selection_epsilon=1.0,
                 cv=5, refit=True, n_jobs=None, random_state=None):
        self.estimator = estimator
        self.param_grid = param_grid
        self.selection = selection
        self.selection_epsilon = selection_epsilon
        self.cv = cv
        self.refit = refit
        self.n_jobs = n_jobs
        self.random_state = random_state

    # The inner estimator's parameters are validated by its own fits.
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, **params):
        """Reserve the search's cost, fit the candidates, choose privately, refit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), Dask array or DataFrame
            A Dask DataFrame (and Dask metadata) is searched as a Dask array with known
            chunk lengths: the fits see no column names.
        y : ignored
        **params : dict
            ``trust_group``, ``epsilon`` and ``user_id`` (routed to the estimator as in
            ``GridSearchCV``: all of them with metadata routing off, the requested ones
            with it on; the search itself reads ``trust_group`` and ``user_id``), and
            ``groups`` for the splitter.

        Returns
        -------
        self : PrivateGridSearchCV
        """
        X, params = _row_indexable(X, params)
        plan = self._plan(X, y, params)
        ledger = ledger_of(self.estimator)
        epsilon, delta = plan.reserved()
        # Pre-flight: raises (nothing charged, nothing released) if anyone cannot afford it.
        reservation = None
        if ledger is not None:
            reservation = ledger.reserve(epsilon, plan.ids, delta=delta, release={
                "estimator": type(self).__name__, "mechanism": "reservation",
                "params": {"estimator": type(self.estimator).__name__,
                           "param_grid": self.param_grid, "selection": self.selection,
                           "selection_epsilon": self.selection_epsilon,
                           "n_splits": len(plan.splits), "refit": self.refit},
            }, description=(
                f"reservation of {type(self).__name__}: {len(plan.candidates)} candidates "
                f"x {len(plan.splits)} folds, {_ROUTES[plan.route]}, refit={self.refit}"))
        elif self.random_state is None and plan.expected is None:
            warn_unaccounted_release(type(self).__name__, float(epsilon.max(initial=0.0)),
                                     plan.ids.shape[0])
        self.reserved_epsilon_ = epsilon
        used = Bunch(epsilon=np.zeros_like(epsilon), delta=np.zeros_like(delta),
                     reason="the chosen candidate's refit costs less than the dearest one's")
        try:
            self._run(X, plan, used)
        except BaseException as error:
            used.reason = f"stopped by {type(error).__name__} before these releases"
            raise
        finally:
            self.spent_epsilon_ = used.epsilon
            if reservation is not None:
                # The folds' allotments were used outside the ledger; the refit charged
                # it (its own history row), drawing on the reservation.
                reservation.keep(plan.ids, used.epsilon, used.delta)
                self.spent_epsilon_ = epsilon - reservation.epsilon_left
                reservation.close(f"refund of {type(self).__name__}'s unused reservation: "
                                  f"{used.reason}")
        return self

    def _plan(self, X, y, params):
        candidates = list(ParameterGrid(self.param_grid))
        check_public_bounds(self.estimator, candidates)
        fit_params, _, ids = _search_inputs(self, self.estimator, X, y, params, None)
        records, expected = [], None
        route, reason = ranking_route(self.estimator, candidates)
        if self.selection != "exponential" and route == "private_variance":
            return _plan_private_variance(self.estimator, candidates, X, fit_params, ids,
                                          self.refit, reason)
        if self.selection == "exponential":
            reason = "selection='exponential' was asked"
        else:
            try:
                expected, records = self._expected_mse(X, candidates, fit_params)
                reason = ("the candidates' expected errors depend on public quantities "
                          "only: they are ranked for free, and the chosen one fit once")
            except _NoPublicError as error:
                if self.selection == "expected_mse":
                    raise ValueError(str(error)) from None
                reason = str(error)
        exponential = expected is None
        if exponential:
            splitter, y = stratified_splitter(self.cv, y, params, _num_samples(X))
            fit_params, splits, ids = _search_inputs(self, self.estimator, X, y, params,
                                                     splitter)
            refit_candidates = range(len(candidates)) if self.refit else []
        else:
            # The ranking is public, so only the chosen candidate's refit is planned.
            splits, refit_candidates = [], [int(np.argmin(expected))] if self.refit else []
        n_rows = ids.shape[0]
        fits, refits, caught = _plan_fits(self.estimator, candidates, X, fit_params, splits,
                                          refit_candidates)
        is_tcm = check_trust_group(params.get("trust_group"), n_rows)
        levels = params.get("epsilon")
        finite = (np.ones(n_rows, dtype=bool) if levels is None
                  else np.isfinite(check_epsilon(levels, n_rows, allow_inf=True)))
        is_scored = is_tcm & finite & exponential
        n_test = np.zeros(n_rows, dtype=np.intp)
        for _, test in splits:
            n_test[test] += 1
        return _Plan(candidates=candidates, splits=splits, fits=fits, refits=refits, ids=ids,
                     fit_params=fit_params, is_scored=is_scored, n_test=n_test,
                     expected=expected, records=records, probe_records=caught,
                     selection=np.where(is_scored, float(self.selection_epsilon), 0.0),
                     route="exponential" if exponential else "expected_mse", reason=reason)

    def _run(self, X, plan, used):
        ledger = ledger_of(self.estimator)
        records = list(plan.records)
        expected = plan.expected
        refit_overrides = {}
        if plan.route == "private_variance":
            self.selection_ = "expected_mse"
            best, expected, refit_overrides = _rank_privately(self, X, plan, records)
        elif expected is not None:
            self.selection_ = "expected_mse"
            best = int(np.argmin(expected))
        else:
            self.selection_ = "exponential"
            best = self._select(X, plan, used, records, ledger)
        self.best_index_ = best
        self.best_params_ = plan.candidates[best]
        self.n_splits_ = len(plan.splits)
        if self.refit:
            # The refit charges the ledger itself (a history row naming the chosen
            # parameters), drawing on the search's reservation.
            refit = candidate_model(plan.get("base", self.estimator),
                                    {**self.best_params_, **refit_overrides}, ledger)
            _, _, error, caught = _fit_candidate(refit, X, plan.fit_params,
                                                 _safe_indexing(X, []))
            records += caught
            if error is not None:
                raise error
            self.best_estimator_ = refit
            if hasattr(refit, "n_features_in_"):
                self.n_features_in_ = refit.n_features_in_
        self.cv_results_ = self._results(plan.candidates, best, expected)
        _warn_once_per_kind(records, type(self).__name__)

    def _select(self, X, plan, used, records, ledger):
        """Fit every candidate on every fold, then the exponential mechanism on the losses."""
        tasks = []
        for index, train, test, epsilon, delta in plan.fits:
            scored = test[plan.is_scored[test]]
            # The allotment replaces the ledger before the clone leaves this process
            # (an in-memory ledger does not pickle; an allotment does).
            allotment = None if ledger is None else _Allotment(epsilon, delta)
            tasks.append((index, train, (
                candidate_model(self.estimator, plan.candidates[index], allotment),
                _safe_indexing(X, train),
                _check_method_params(X, params=plan.fit_params, indices=train),
                _safe_indexing(X, scored),
            )))
        results = []
        try:
            if self.n_jobs in (None, 1):
                # One at a time: the first failure stops the search before further releases.
                for _, _, task in tasks:
                    results.append(_fit_candidate(*task))
                    if results[-1][2] is not None and not _unfittable(results[-1][2]):
                        break
            else:
                results = Parallel(n_jobs=self.n_jobs)(
                    delayed(_fit_candidate)(*task) for _, _, task in tasks)
        except BaseException:
            # Interrupted (KeyboardInterrupt, a dead worker): a fit whose result never
            # came back may have drawn its noise, so its allotment counts as used.
            for index, train, task in tasks[len(results):]:
                allotment = ledger_of(task[0])
                if self.n_jobs in (None, 1) and isinstance(allotment, _Allotment):
                    self._count(used, allotment.used, train)
                elif isinstance(allotment, _Allotment):
                    self._count(used, (allotment.epsilon, allotment.delta), train)
            raise
        finally:
            for (_, train, _), (_, charged, _, _) in zip(tasks, results):
                self._count(used, charged, train)
        utilities = np.zeros(len(plan.candidates))
        width, failed = 0.0, []
        for (index, _, task), (result, _, error, caught) in zip(tasks, results):
            records += caught
            if error is None:
                utilities[index] -= result[0]
                width = max(width, result[1])
            elif _unfittable(error):
                failed.append((index, _num_samples(task[3]), error))
        for result in results:
            if result[2] is not None and (not _unfittable(result[2]) or width == 0.0):
                _warn_once_per_kind(records, type(self).__name__)
                raise result[2]
        for index, n_scored, error in failed:
            # Scored as the worst loss of every held-out user: no fit, no information.
            utilities[index] -= width * n_scored
            records.append((UserWarning, (
                f"candidate {plan.candidates[index]} could not be fit on a fold ({error}); "
                "it is scored there as the worst loss")))
        if not plan.is_scored.any():
            raise ValueError(
                "the exponential selection scores held-out tcm users with a finite epsilon, "
                "and there are none; use selection='expected_mse' or give tcm users")
        mechanism = ExponentialMechanism(epsilon=self.selection_epsilon,
                                         sensitivity=self._sensitivity(width, plan))
        # The selection's cost is used from here: the noise is drawn next.
        used.epsilon += plan.selection
        return mechanism.select(utilities, random_state=check_random_state(self.random_state))

    @staticmethod
    def _sensitivity(width, plan):
        """Of the utilities: the loss width times the most splits holding out one user."""
        return width * max(int(plan.n_test.max()), 1)

    @staticmethod
    def _count(used, charged, rows):
        if charged is not None:
            used.epsilon[rows] += charged[0]
            used.delta[rows] += charged[1]

    def _expected_mse(self, X, candidates, fit_params):
        """Each candidate's ``expected_mse_`` from public stand-ins of ``X``'s shape.

        Three stand-ins with the same public metadata (every value at the lower bound;
        at the upper bound; alternating between them, the widest spread): a candidate
        whose figure differs between them reads the data (its location or its spread),
        and is refused. Nothing is fit on ``X``.
        """
        n_rows = _num_samples(X)
        n_features = np.shape(X)[1] if len(np.shape(X)) > 1 else 1
        fit_params = {key: value for key, value in fit_params.items() if key != "user_id"}
        records, expected = [], []
        for candidate in candidates:
            # The stand-ins are in the candidate's input bounds (a swapped step's own).
            lower, upper = check_bounds(
                input_bounds(candidate_model(self.estimator, candidate, set_ledger=False)),
                n_features)
            alternating = np.where((np.arange(n_rows) % 2 == 0)[:, None], lower, upper)
            figures = []
            for stand_in in (np.tile(lower, (n_rows, 1)), np.tile(upper, (n_rows, 1)),
                             alternating):
                model = seeded(candidate_model(self.estimator, candidate, None))
                fitted, error, caught = _recording(fit_model, model, stand_in, fit_params)
                records += caught
                if error is not None:
                    raise error
                fitted = final_step(fitted)
                if not hasattr(fitted, "expected_mse_"):
                    raise _NoPublicError(
                        f"{type(fitted).__name__} has no expected_mse_ to rank by: its "
                        "candidates are chosen with selection='exponential'")
                figures.append(float(np.mean(fitted.expected_mse_)))
            if not np.allclose(figures, figures[0], rtol=1e-9, atol=0.0):
                raise _NoPublicError(
                    f"the expected_mse_ of candidate {candidate} depends on the data "
                    f"({', '.join(f'{f:g}' for f in figures)} on public stand-ins), so "
                    "ranking by it would not be private: give the estimator a public "
                    "variance= (free), or use selection='exponential'")
            expected.append(figures[0])
        return np.array(expected), records

    def _results(self, candidates, best, expected):
        results = {"params": candidates}
        for name in sorted({key for candidate in candidates for key in candidate}):
            column = np.ma.MaskedArray(np.empty(len(candidates), dtype=object),
                                       mask=True)
            for index, candidate in enumerate(candidates):
                if name in candidate:
                    column[index] = candidate[name]
            results[f"param_{name}"] = column
        results["selected"] = np.arange(len(candidates)) == best
        if expected is not None:
            results["expected_mse"] = expected
            results["rank_expected_mse"] = np.argsort(np.argsort(expected)) + 1
        return results

    def predict(self, X):
        """The refit best estimator's ``predict``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def get_metadata_routing(self):
        """The routing of ``fit``'s metadata: to the estimator's ``fit`` and the splitter.

        Returns
        -------
        routing : MetadataRouter
        """
        return (
            MetadataRouter(owner=self)
            .add(estimator=self.estimator,
                 method_mapping=MethodMapping().add(caller="fit", callee="fit"))
            .add(splitter=check_cv(self.cv),
                 method_mapping=MethodMapping().add(caller="fit", callee="split"))
        )


def search_cost(search, X, y=None, **params):
    """Each user's epsilon that running ``search`` on ``X`` would charge, before any release.

    Every fit of the search is run up to its charge (every estimator charges after
    validating its input and before drawing noise) against a probe that records the
    cost and stops it: the costs are the ones the estimators declare (their
    ``_release_cost``) and nothing is released.

    Parameters
    ----------
    search : PrivateGridSearchCV, GridSearchCV or RandomizedSearchCV
        Over a skhybrid estimator or a ``Pipeline`` of them and of public transformers
        (a ``RandomizedSearchCV`` needs an int ``random_state``, so that its candidates
        are known in advance). A pipeline's cost is the sum of its charging steps'.
    X : array-like of shape (n_samples, n_features)
    y : ignored
    **params : dict
        The metadata ``search.fit`` would get (``trust_group``, ``epsilon``,
        ``user_id``, ``groups``).

    Returns
    -------
    epsilon : SearchCost, an ndarray of shape (n_samples,)
        Per user, in the order of ``user_id`` (the rows of ``X``); its ``user_ids``,
        and its ``route`` and ``reason``: how the search will choose and why, decided
        by the estimator and the grid before anything runs. Pass it to
        ``ledger.reserve`` to run any search inside a reservation. With a refit, the
        dearest candidate's refit is counted: the cost is exact when the candidates'
        refits cost the same, an upper bound otherwise (a private search refunds the
        difference).
    """
    X, params = _row_indexable(X, params)
    if isinstance(search, PrivateGridSearchCV):
        validate_parameter_constraints(search._parameter_constraints,
                                       search.get_params(deep=False),
                                       caller_name=type(search).__name__)
        plan = search._plan(X, y, params)
        _warn_once_per_kind(plan.records + plan.probe_records, "search_cost")
        return SearchCost(plan.reserved()[0], user_ids=plan.ids, route=plan.route,
                          reason=plan.reason)
    if isinstance(search, GridSearchCV):
        candidates = list(ParameterGrid(search.param_grid))
    elif isinstance(search, RandomizedSearchCV):
        if not isinstance(search.random_state, Integral):
            raise ValueError(
                "search_cost needs RandomizedSearchCV(random_state=<int>) to know its "
                f"candidates before it runs; got random_state={search.random_state!r}")
        candidates = list(ParameterSampler(search.param_distributions, search.n_iter,
                                           random_state=search.random_state))
    else:
        raise TypeError(
            "search_cost accepts PrivateGridSearchCV, GridSearchCV and RandomizedSearchCV; "
            f"got {type(search).__name__}")
    fit_params, splits, ids = _search_inputs(search, search.estimator, X, y, params,
                                             check_cv(search.cv))
    refit_candidates = range(len(candidates)) if search.refit else []
    fits, refits, records = _plan_fits(search.estimator, candidates, X, fit_params, splits,
                                       refit_candidates)
    _warn_once_per_kind(records, "search_cost")
    epsilon = _Plan(fits=fits, refits=refits, ids=ids,
                    selection=np.zeros(ids.shape[0])).reserved()[0]
    return SearchCost(epsilon, user_ids=ids, route="scikit-learn", reason=(
        f"{type(search).__name__} fits {len(candidates)} candidates on {len(splits)} folds"
        + (" and refits the best" if search.refit else "")
        + ": its choice is not private (run it inside ledger.reserve(cost))"))
