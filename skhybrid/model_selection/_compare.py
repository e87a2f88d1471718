"""Monte Carlo comparison of private estimators: empirical error over repeated fits."""

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone

from ..utils._progress import progress_bar


@dataclass
class ComparisonResult:
    """What :func:`compare_estimators` returns.

    Attributes
    ----------
    table : dict of str to ndarray
        Equal-length columns, one row per estimator:

        - ``"estimator"``: the estimator's name;
        - ``"mse"``: the empirical mean squared error over the trials (mean over
          features of the squared difference between the estimate and the truth);
        - ``"mse_se"``: its standard error, the sample standard deviation of the
          trials' squared errors divided by sqrt(n_trials);
        - ``"rmse"``: sqrt(mse), and ``"rmse_se"`` its standard error by the delta
          method, mse_se / (2 rmse);
        - ``"expected_mse"``: the mean over trials (and features) of the fitted
          ``expected_mse_``, NaN for an estimator without one;
        - with ``baselines``, ``"R"`` and ``"r"``: the relative improvements over the
          better and the worse baseline (Avent, Dubey and Korolova 2020, Defs. 3.5 and
          5.1), ``min(mse_1, mse_2) / mse`` and ``max(mse_1, mse_2) / mse`` with the
          baselines' empirical MSEs.
    squared_errors : dict of str to ndarray of shape (n_trials,)
        Each estimator's squared error in every trial.
    n_trials : int
    baselines : tuple of two str or None
    """

    table: dict
    squared_errors: dict
    n_trials: int
    baselines: tuple | None = None

    def to_frame(self):
        """The table as a pandas DataFrame indexed by estimator name.

        Returns
        -------
        frame : pandas.DataFrame

        Raises
        ------
        ImportError
            When pandas is not installed (it is not a core dependency of skhybrid).
        """
        try:
            import pandas as pd
        except ImportError as error:  # pragma: no cover - exercised only without pandas
            raise ImportError(
                "ComparisonResult.to_frame needs pandas; install it with: "
                "python -m pip install pandas (or use the dict in .table)"
            ) from error
        return pd.DataFrame(self.table).set_index("estimator")


def compare_estimators(
    estimators,
    X=None,
    *,
    fit_params=None,
    make_data=None,
    n_trials=100,
    baselines=None,
    attribute=None,
    random_state=None,
    n_jobs=None,
    progress=False,
):
    """Compare private estimators by their empirical error over repeated fits.

    In each of ``n_trials`` trials, a fresh :func:`~sklearn.base.clone` of every
    estimator is fitted with its own child seed (drawn from ``random_state`` by
    :class:`numpy.random.SeedSequence`), and the squared error of its estimate against
    the true value is recorded. Trials are independent, and the whole run is
    reproducible from ``random_state`` whatever ``n_jobs`` and the joblib backend.

    Parameters
    ----------
    estimators : dict of str to estimator, or list of estimators
        The estimators to compare; a list names each one by its class and the
        parameters it sets. An estimator's ``random_state`` parameter, if it has one,
        is replaced in every trial.
    X : array-like of shape (n_samples, n_features) or None, default=None
        Fixed data, the same in every trial: only the privacy noise varies. The truth
        is the estimator's empirical statistic of ``X`` (the column means for a mean
        estimator, the quantile for a quantile estimator). Give either ``X`` or
        ``make_data``.
    fit_params : dict or None, default=None
        Per-sample metadata passed to every ``fit`` with ``X``, for example
        ``{"trust_group": ..., "epsilon": ...}``.
    make_data : callable or None, default=None
        ``make_data(rng) -> (X, fit_params, truth)``, called once per trial with a
        :class:`numpy.random.Generator`: new data each trial, so sampling error counts
        too. ``truth`` is an array-like of shape (n_features,) (or a scalar), or a dict
        of estimator name to truth when the estimators estimate different statistics.
    n_trials : int, default=100
        Number of trials, at least 2 (the standard errors need two).
    baselines : tuple of two str or None, default=None
        Names of the two baseline estimators (for example ``("tcm_only", "full_lm")``)
        against which the relative improvements ``R`` and ``r`` are computed; ``None``
        leaves those columns out.
    attribute : str or None, default=None
        The fitted attribute holding the estimate; ``None`` reads each estimator's
        ``_estimate_attribute`` (``mean_`` for the mean estimators, ``quantile_`` for
        :class:`~skhybrid.MixedQuantileEstimator`).
    random_state : None or int, default=None
        Seed of the simulation; ``None`` draws fresh entropy (not reproducible).
    n_jobs : int or None, default=None
        Number of parallel jobs, as in :class:`joblib.Parallel`; the backend is the one
        active in :func:`joblib.parallel_backend` (loky by default).
    progress : bool, default=False
        Show a progress bar over trials on stderr.

    Returns
    -------
    result : ComparisonResult

    See Also
    --------
    skhybrid.plotting.ComparisonDisplay : a bar chart of the result.
    skhybrid.theory.relative_improvement : R from the analytic MSEs.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid import HybridMeanEstimator
    >>> from skhybrid.model_selection import compare_estimators
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(2000, 1))
    >>> trust = np.where(rng.random(2000) < 0.1, "tcm", "lm")
    >>> estimators = {s: HybridMeanEstimator(s, bounds=(0, 1))
    ...               for s in ["kvh", "tcm_only", "full_lm"]}
    >>> result = compare_estimators(estimators, X, fit_params={"trust_group": trust},
    ...                             n_trials=20, baselines=("tcm_only", "full_lm"),
    ...                             random_state=0)
    >>> list(result.table)
    ['estimator', 'mse', 'mse_se', 'rmse', 'rmse_se', 'expected_mse', 'R', 'r']
    """
    named = _check_estimators(estimators)
    n_trials = _check_n_trials(n_trials)
    baselines = _check_baselines(baselines, named)
    attributes = _check_attributes(attribute, named)
    data = _check_data(X, fit_params, make_data, named)

    seeds = np.random.SeedSequence(random_state).spawn(n_trials)
    parallel = Parallel(n_jobs=n_jobs, return_as="generator")
    trials = parallel(
        delayed(_run_trial)(named, attributes, data, make_data, seed) for seed in seeds
    )
    squared = np.empty((n_trials, len(named)))
    expected = np.empty((n_trials, len(named)))
    bar = progress_bar(total=n_trials, description="compare_estimators", enabled=progress)
    try:
        for trial, (errors, expected_mses) in enumerate(trials):
            squared[trial], expected[trial] = errors, expected_mses
            bar.update(1)
    finally:
        bar.close()
    return _summarise(list(named), squared, expected, baselines)


# -- private helpers ----------------------------------------------------------------------


def _check_estimators(estimators):
    if isinstance(estimators, Mapping):
        named = dict(estimators)
    elif isinstance(estimators, (list, tuple)):
        named = {}
        for estimator in estimators:
            name = " ".join(repr(estimator).split())
            # Equal estimators get a suffix rather than silently overwriting each other.
            suffix, unique = 2, name
            while unique in named:
                unique, suffix = f"{name} #{suffix}", suffix + 1
            named[unique] = estimator
    else:
        raise TypeError(
            "estimators must be a dict of name to estimator or a list of estimators; "
            f"got {type(estimators).__name__}"
        )
    if not named:
        raise ValueError("estimators is empty; give at least one estimator to compare")
    for name, estimator in named.items():
        if not isinstance(name, str):
            raise TypeError(f"estimator names must be strings; got {name!r}")
        if not (hasattr(estimator, "fit") and hasattr(estimator, "get_params")):
            raise TypeError(
                f"estimator {name!r} is not a scikit-learn estimator (it needs fit and "
                f"get_params); got {estimator!r}"
            )
    return named


def _check_n_trials(n_trials):
    if not isinstance(n_trials, Integral) or isinstance(n_trials, bool) or n_trials < 2:
        raise ValueError(
            f"n_trials must be an int >= 2 (standard errors need two trials); got {n_trials!r}"
        )
    return int(n_trials)


def _check_baselines(baselines, named):
    if baselines is None:
        return None
    if isinstance(baselines, str) or not hasattr(baselines, "__len__") or len(baselines) != 2:
        raise ValueError(
            "baselines must be two estimator names, e.g. ('tcm_only', 'full_lm'); "
            f"got {baselines!r}"
        )
    for name in baselines:
        if name not in named:
            raise ValueError(
                f"baseline {name!r} is not one of the estimators: {', '.join(map(repr, named))}"
            )
    return tuple(baselines)


def _check_attributes(attribute, named):
    if attribute is not None:
        if not isinstance(attribute, str):
            raise TypeError(f"attribute must be a str such as 'mean_'; got {attribute!r}")
        return [attribute] * len(named)
    attributes = []
    for name, estimator in named.items():
        estimate_attribute = getattr(estimator, "_estimate_attribute", None)
        if estimate_attribute is None:
            raise ValueError(
                f"estimator {name!r} ({type(estimator).__name__}) does not say which fitted "
                "attribute holds its estimate; pass attribute='mean_' (or the right name)"
            )
        attributes.append(estimate_attribute)
    return attributes


def _check_data(X, fit_params, make_data, named):
    """The fixed data ``(X, fit_params, truths)``, or None when ``make_data`` is used."""
    if (X is None) == (make_data is None):
        raise ValueError(
            "give exactly one of X (fixed data) and make_data (a generator called per trial)"
        )
    if make_data is not None:
        if not callable(make_data):
            raise TypeError(f"make_data must be callable as make_data(rng); got {make_data!r}")
        if fit_params is not None:
            raise ValueError(
                "fit_params goes with fixed X; make_data returns its own (X, fit_params, truth)"
            )
        return None
    if fit_params is not None and not isinstance(fit_params, Mapping):
        raise TypeError(f"fit_params must be a dict of fit parameters; got {fit_params!r}")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d (n_samples, n_features); got shape {X.shape}")
    truths = {name: _empirical_statistic(estimator, X) for name, estimator in named.items()}
    return X, dict(fit_params or {}), truths


def _empirical_statistic(estimator, X):
    statistic = getattr(estimator, "_empirical_statistic", None)
    # Estimators without one are compared with the column means.
    return X.mean(axis=0) if statistic is None else np.asarray(statistic(X), dtype=np.float64)


def _run_trial(named, attributes, data, make_data, seed):
    """Fit every estimator once; return the squared errors and the expected MSEs."""
    data_seed, *estimator_seeds = seed.spawn(1 + len(named))
    if make_data is None:
        X, fit_params, truths = data
    else:
        X, fit_params, truth = _call_make_data(make_data, np.random.default_rng(data_seed))
        truths = truth if isinstance(truth, Mapping) else dict.fromkeys(named, truth)
    errors, expected = [], []
    for (name, estimator), attribute, child in zip(named.items(), attributes, estimator_seeds):
        estimator = clone(estimator)
        if "random_state" in estimator.get_params(deep=False):
            estimator.set_params(random_state=int(child.generate_state(1, dtype=np.uint64)[0]))
        estimator.fit(X, **fit_params)
        if not hasattr(estimator, attribute):
            raise ValueError(
                f"estimator {name!r} has no fitted attribute {attribute!r}; pass attribute= "
                "with the name of its estimate"
            )
        if name not in truths:
            raise ValueError(f"make_data's truth dict has no entry for estimator {name!r}")
        difference = np.asarray(getattr(estimator, attribute), dtype=np.float64) - truths[name]
        errors.append(float(np.mean(difference**2)))
        expected_mse = getattr(estimator, "expected_mse_", None)
        expected.append(np.nan if expected_mse is None else float(np.mean(expected_mse)))
    return errors, expected


def _call_make_data(make_data, rng):
    output = make_data(rng)
    if not isinstance(output, tuple) or len(output) != 3:
        raise ValueError(
            "make_data(rng) must return a tuple (X, fit_params, truth); "
            f"got {type(output).__name__}"
        )
    X, fit_params, truth = output
    if not isinstance(truth, Mapping):
        truth = np.asarray(truth, dtype=np.float64)
    return X, dict(fit_params or {}), truth


def _summarise(names, squared, expected, baselines):
    n_trials = squared.shape[0]
    mse = squared.mean(axis=0)
    mse_se = squared.std(axis=0, ddof=1) / np.sqrt(n_trials)
    rmse = np.sqrt(mse)
    with np.errstate(divide="ignore", invalid="ignore"):
        rmse_se = mse_se / (2.0 * rmse)
    table = {
        "estimator": np.array(names, dtype=object),
        "mse": mse,
        "mse_se": mse_se,
        "rmse": rmse,
        "rmse_se": rmse_se,
        # np.mean of an all-NaN column is NaN, which is what "no expected_mse_" means.
        "expected_mse": expected.mean(axis=0),
    }
    if baselines is not None:
        baseline_mses = mse[[names.index(name) for name in baselines]]
        with np.errstate(divide="ignore"):
            table["R"] = baseline_mses.min() / mse
            table["r"] = baseline_mses.max() / mse
    return ComparisonResult(
        table=table,
        squared_errors={name: squared[:, i].copy() for i, name in enumerate(names)},
        n_trials=n_trials,
        baselines=baselines,
    )
