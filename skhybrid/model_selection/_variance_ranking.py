"""A search's route for mean estimators: one private variance, a free ranking, one fit.

A mean estimator's expected error depends on public quantities (group sizes, privacy
levels, bounds) and on one property of the data, its variance. When a search's
candidates read the variance from the data (``variance="private"``) or would assume
the worst case (``variance=None``), :class:`PrivateGridSearchCV` takes this route:

1. the variance is released once, by the estimator itself with ``variance="private"``
   at ``VARIANCE_RELEASE_SHARE`` of every user's epsilon (a release like any fit:
   charged, drawing on the search's reservation);
2. every candidate is ranked by its analytic expected error at that variance
   (:func:`skhybrid.mean.expected_mse`: post-processing, free);
3. only the chosen candidate is fit, at the rest of every user's epsilon, as
   configured: with ``variance="private"`` it estimates the variance again inside that
   fit, from its own releases and the lm users' reports, which are more precise than
   the ranking's small share (on the bundled salaries at 2% tcm, refitting at the
   ranking's variance put one run in 12 at 8 times the error).

Each user's total is therefore one fit's epsilon, whatever the grid. Whether a search
takes this route depends on the estimator and the grid alone (:func:`ranking_route`),
never on the data.
"""

from numbers import Integral

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold, check_cv
from sklearn.utils._param_validation import StrOptions

from ..mean._ranking import expected_mse
from ..utils._validation import check_epsilon, check_trust_group

#: The share of each user's epsilon a search over mean estimators spends on releasing
#: the data variance that ranks its candidates; the chosen candidate's fit gets the
#: rest, whose noise variance grows by ``1 / (1 - share)**2`` (11% at 0.05) where the
#: noise dominates. 0.05, as ``PRIVATE_VARIANCE_SHARE`` inside a fit; with it, on the
#: bundled salaries at 0.5%, 2% and 10% tcm users (50 runs each), every pick is within
#: 1.2x of the best strategy in hindsight and the search's answer within 1.06x
#: (skhybrid/model_selection/tests/test_variance_ranking_slow.py). Other shares were
#: not measured.
VARIANCE_RELEASE_SHARE = 0.05


def _variance_options(estimator, candidates):
    values = []
    for candidate in candidates:
        values.append(candidate.get("variance", estimator.get_params(deep=False)["variance"]))
    return values


def _accepts_private_variance(estimator):
    """Whether the estimator takes ``variance="private"`` (its parameter constraints say)."""
    constraints = getattr(type(estimator), "_parameter_constraints", {}).get("variance", [])
    return any(isinstance(constraint, StrOptions) and "private" in constraint.options
               for constraint in constraints)


def ranking_route(estimator, candidates):
    """How a search over ``estimator``'s ``candidates`` ranks, from their parameters alone.

    Returns
    -------
    route : {"private_variance", "expected_mse", None}
        ``"private_variance"``: mean estimators some of whose candidates read the
        variance from the data or assume the worst case (this module's route);
        ``"expected_mse"``: mean estimators whose candidates all have a public variance
        (ranked at it, free); ``None``: estimators without ``variance="private"``
        (ranked on public stand-ins if their error is public, else the exponential
        mechanism).
    reason : str
    """
    if not _accepts_private_variance(estimator):
        return None, (f"{type(estimator).__name__} has no private variance to rank at: its "
                      "candidates are ranked on public stand-ins if their expected error "
                      "is public, else chosen by the exponential mechanism on held-out "
                      "losses")
    options = _variance_options(estimator, candidates)
    if all(option is not None and not isinstance(option, str) for option in options):
        return "expected_mse", ("every candidate has a public variance: they are ranked by "
                                "their expected error at it, which costs nothing")
    return "private_variance", (
        f"the candidates' expected errors depend on the data's variance: it is released "
        f"once at {VARIANCE_RELEASE_SHARE:.0%} of every user's epsilon, the candidates are "
        "ranked by their expected error at it (free) and the chosen one is fit with the "
        "rest: one fit's epsilon in all")


def split_epsilon(estimator, fit_params, share):
    """``(params, metadata)`` overrides of a fit at ``share`` of every user's epsilon.

    The ``epsilon`` metadata is scaled when it is given, else the ``epsilon`` parameter
    (so that no metadata overrides a parameter).
    """
    if fit_params.get("epsilon") is not None:
        return {}, {"epsilon": np.asarray(fit_params["epsilon"], dtype=np.float64) * share}
    return {"epsilon": float(estimator.get_params(deep=False)["epsilon"]) * share}, {}


def variance_fit(estimator, fit_params):
    """The estimator that releases the variance, and its fit metadata."""
    params, metadata = split_epsilon(estimator, fit_params, VARIANCE_RELEASE_SHARE)
    release = clone(estimator).set_params(variance="private", **params)
    if "strategy" in release.get_params(deep=False):
        release.set_params(strategy=type(estimator)().get_params()["strategy"])
    return release, {**fit_params, **metadata}


def chosen_fit_overrides(estimator, fit_params):
    """The chosen candidate's parameter overrides and metadata: the rest of the epsilon."""
    params, metadata = split_epsilon(estimator, fit_params, 1.0 - VARIANCE_RELEASE_SHARE)
    return params, {**fit_params, **metadata}


def rest_candidate(candidate, fit_params):
    """A candidate as it is fit: at the rest of its epsilon when it sets the ``epsilon``
    parameter (and no metadata overrides it)."""
    rest = dict(candidate)
    if "epsilon" in candidate and fit_params.get("epsilon") is None:
        rest["epsilon"] = float(candidate["epsilon"]) * (1.0 - VARIANCE_RELEASE_SHARE)
    return rest


def rank_at(base, candidates, variance, rest_params, n_rows, n_features):
    """Each candidate's expected error (summed over features) for data of ``variance``,
    as configured and fit at the rest of the epsilon (post-processing of ``variance``;
    :func:`~skhybrid.mean.expected_mse`).

    ``base`` and ``rest_params`` are already at the rest (:func:`chosen_fit_overrides`
    applied once: the ``epsilon`` parameter of ``base``, or the ``epsilon`` metadata).
    """
    metadata = rest_params
    figures = []
    for candidate in candidates:
        model = clone(base).set_params(**rest_candidate(candidate, metadata))
        figures.append(float(np.sum(expected_mse(
            model, variance=variance, trust_group=metadata.get("trust_group"),
            epsilon=metadata.get("epsilon"), n_samples=n_rows, n_features=n_features))))
    return np.array(figures)


def stratified_splitter(cv, y, params, n_rows):
    """The splitter of an exponential search, and the ``y`` it splits on.

    ``cv=<int>`` stratifies on the trust group and, where every level has at least
    ``cv`` users, on the privacy level (public metadata, so the folds stay
    data-independent): every fold then holds every group that has ``cv`` users. Any
    other ``cv`` is used as given.
    """
    if not isinstance(cv, Integral):
        return check_cv(cv), y
    group = check_trust_group(params.get("trust_group"), n_rows).astype(np.int8)
    labels = group.astype(str)
    if params.get("epsilon") is not None:
        levels = check_epsilon(params["epsilon"], n_rows, allow_inf=True)
        with_levels = np.char.add(labels, np.char.add("/", levels.astype(str)))
        if np.unique(with_levels, return_counts=True)[1].min() >= cv:
            labels = with_levels
    if np.unique(labels, return_counts=True)[1].min() < cv:
        # A group smaller than the folds: stratifying would warn; some folds lack it
        # (their fits that cannot run score the worst loss).
        return check_cv(cv), y
    return StratifiedKFold(n_splits=cv), labels
