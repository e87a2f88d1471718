"""Searches over pipelines: which steps charge, their ledger, their metadata, their loss.

A search's estimator may be a scikit-learn ``Pipeline`` whose steps are skhybrid
estimators and transformers (each with a ``ledger`` parameter: they release and charge)
and public transformers (no ``ledger``: functions of public constants, such as
:class:`~skhybrid.preprocessing.BoundsScaler`). The search treats the pipeline as one
release whose cost is the sum of its charging steps' costs (sequential composition:
each step's input is a post-processing of the earlier steps' releases and of each
user's own record). This module is the only place that tells a pipeline from an
estimator; :mod:`._search` calls it for every model it plans, fits or scores.
"""

import inspect

import numpy as np
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.utils.metadata_routing import _routing_enabled
from sklearn.utils.validation import _num_samples

from ._losses import selection_loss


def _steps(model):
    """``(parameter prefix, step)`` of every step of ``model`` (itself, if not a pipeline)."""
    if not isinstance(model, Pipeline):
        return [("", model)]
    return [(f"{name}__", step) for name, step in model.steps
            if step is not None and step != "passthrough"]


def charging_steps(model):
    """The steps that release and charge: those with a ``ledger`` parameter."""
    return [(prefix, step) for prefix, step in _steps(model)
            if "ledger" in step.get_params(deep=False)]


def ledger_of(model):
    """The ledger ``model``'s releases charge: its own, or its charging steps' (one ledger).

    Raises
    ------
    ValueError
        When the steps of a pipeline charge different ledgers (or some none): a search
        reserves its cost on one ledger.
    """
    ledgers = {id(step.ledger): step.ledger for _, step in charging_steps(model)}
    if len(ledgers) > 1:
        names = ", ".join(f"{prefix[:-2] or type(step).__name__}: "
                          f"{'None' if step.ledger is None else type(step.ledger).__name__}"
                          for prefix, step in charging_steps(model))
        raise ValueError(
            "a search over a pipeline reserves its cost on one ledger, and the pipeline's "
            f"steps charge different ones ({names}): give every charging step the same "
            "ledger (or none)")
    return next(iter(ledgers.values()), None)


def candidate_model(estimator, params, ledger=None, *, set_ledger=True):
    """A fresh model of one candidate: ``estimator`` cloned, ``params`` set (estimators in
    them cloned too, as scikit-learn's searches do), and, with ``set_ledger``, ``ledger``
    given to every charging step (after the swap, so a swapped-in step gets it)."""
    model = clone(estimator).set_params(**clone(params, safe=False))
    if set_ledger:
        model.set_params(**{f"{prefix}ledger": ledger for prefix, _ in charging_steps(model)})
    return model


def seeded(model, seed=0):
    """``model`` with every step's ``random_state`` set to ``seed`` (for public stand-ins)."""
    return model.set_params(**{f"{prefix}random_state": seed for prefix, step in _steps(model)
                               if "random_state" in step.get_params(deep=False)})


def fit_model(model, X, fit_params):
    """``model.fit(X, **fit_params)`` with the search's flat metadata (``trust_group``,
    ``epsilon``, ``user_id``) given to every step that takes it.

    A pipeline with metadata routing off gets ``step__key`` for each step whose ``fit``
    accepts ``key``; with routing on, every charging step is asked for ``user_id``
    (the search charges per user) and the pipeline routes the rest by the steps' own
    requests. Keys already of the ``step__key`` form are passed as they are.
    """
    if not isinstance(model, Pipeline):
        return model.fit(X, **fit_params)
    if _routing_enabled():
        for _, step in charging_steps(model):
            step.set_fit_request(user_id=True)
        requested = model.get_metadata_routing().consumes("fit", list(fit_params))
        return model.fit(X, **{key: value for key, value in fit_params.items()
                               if key in requested})
    routed = {key: value for key, value in fit_params.items() if "__" in key}
    for prefix, step in _steps(model):
        accepted = inspect.signature(step.fit).parameters
        routed.update({f"{prefix}{key}": value for key, value in fit_params.items()
                       if "__" not in key and key in accepted})
    return model.fit(X, **routed)


def final_step(model):
    """The estimator at the end of ``model`` (``model`` itself if not a pipeline)."""
    return model[-1] if isinstance(model, Pipeline) else model


def model_loss(fitted, X_scored):
    """Each held-out record's loss against a fitted model, and the loss's width.

    A pipeline's records go through its fitted transformers first (a function of the
    released steps and of the record alone), and are scored by its final step's loss
    (:func:`~skhybrid.model_selection._losses.selection_loss`), whose width holds for
    any input: the records are clipped to the final step's public bounds.
    """
    if isinstance(fitted, Pipeline):
        if len(fitted) > 1:
            # No record (a refit scores none): the final step's input shape, empty.
            X_scored = (fitted[:-1].transform(X_scored) if _num_samples(X_scored)
                        else np.empty((0, fitted[-1].n_features_in_)))
        fitted = fitted[-1]
    return selection_loss(fitted, X_scored)


def check_public_bounds(estimator, candidates):
    """Refuse a candidate with a charging step without public bounds, naming both.

    Parameters
    ----------
    estimator : estimator or Pipeline
    candidates : list of dict
    """
    for candidate in candidates:
        model = candidate_model(estimator, candidate, set_ledger=False)
        for prefix, step in charging_steps(model):
            if "bounds" in step.get_params(deep=False) and step.bounds is None:
                where = "" if not prefix else f" (step {prefix[:-2]!r} of the pipeline)"
                raise ValueError(
                    f"private selection needs data-independent bounds; candidate {candidate} "
                    f"has {type(step).__name__} with bounds=None{where}: pass "
                    "bounds=(lower, upper)")


def input_bounds(model):
    """The public bounds of ``model``'s input: those of its first step (for stand-ins).

    Raises
    ------
    ValueError
        When the first step has no public bounds (a public transformer): its input's
        range is unknown, so no public stand-in of it can be made.
    """
    _, first = _steps(model)[0]
    bounds = first.get_params(deep=False).get("bounds")
    if bounds is None:
        raise ValueError(
            f"private selection needs data-independent bounds; {type(first).__name__} "
            "has bounds=None (pass bounds=(lower, upper))")
    return bounds


def flat_user_id(params):
    """The ``user_id`` of a search's metadata: given as is, or to a step (``step__user_id``,
    scikit-learn's routing-off form for a pipeline), or None."""
    if params.get("user_id") is not None:
        return params["user_id"]
    return next((value for key, value in params.items() if key.endswith("__user_id")), None)
