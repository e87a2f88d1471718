"""Nothing secret survives a fit: a walk over every fitted estimator's attributes.

A fitted estimator may hold released values and public metadata only. The walk visits
every attribute at any depth (dicts, lists, tuples, dataclasses, objects) and fails on

- a random generator, bit generator or RandomState, or a dict holding a bit generator's
  state (it could replay the noise);
- a float equal to a non-private statistic of the training data: a clipped value, an
  exact sum or mean (of everyone, of a trust group, of a privacy level, of a cluster
  under the released centres), and an integer array equal to exact counts of records.

Group and level sizes (``n_tcm_``, ``n_lm_``, ``group_sizes_``, ``level_sizes_``...) are
public under the neighbouring relation (replace one user; sizes public) and allowed.
"""

import dataclasses
import inspect
import warnings

import numpy as np
import pytest

import skhybrid
from skhybrid.utils._random import DeferredSecureGenerator
from skhybrid.utils._sums import FIXED_POINT_BITS

BOUNDS = (0.0, 1.0)


def _public_estimators():
    """Every estimator skhybrid exports (a new one is walked automatically)."""
    from sklearn.base import BaseEstimator

    return {
        name: cls for name, cls in inspect.getmembers(skhybrid, inspect.isclass)
        if issubclass(cls, BaseEstimator)
    }


def _population(seed=0, n=600):
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(-0.2, 1.2, size=(n, 2)), 6) + rng.uniform(0, 1e-7, size=(n, 2))
    is_tcm = rng.random(n) < 0.4
    epsilon = rng.choice([0.5, 2.0], size=n)
    return X, is_tcm, epsilon


def _secret_floats(X, is_tcm, epsilon, centres=None):
    """Non-private statistics of the training data, as a set of rounded floats."""
    clipped = np.clip(X, *BOUNDS)
    groups = [np.ones(len(X), bool), is_tcm, ~is_tcm]
    groups += [epsilon == level for level in np.unique(epsilon)]
    groups += [is_tcm & (epsilon == level) for level in np.unique(epsilon)]
    if centres is not None:
        labels = np.argmin(((clipped[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
        groups += [labels == k for k in range(len(centres))]
    secrets = set(np.round(clipped.ravel(), 9))
    for rows in groups:
        if rows.sum() < 2:
            continue
        for values in (clipped[rows], X[rows]):
            secrets.update(np.round(values.sum(axis=0), 9))
            secrets.update(np.round(values.mean(axis=0), 9))
            secrets.update(np.round(values.sum(axis=0) - rows.sum() * BOUNDS[0], 9))
    codes = np.rint(clipped * 2.0**FIXED_POINT_BITS)
    for rows in groups:
        secrets.update(np.round(codes[rows].sum(axis=0), 0))
    secrets.discard(0.0)
    secrets.discard(1.0)
    return secrets


def _walk(value, path, seen, found, secrets):
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, (np.random.Generator, np.random.BitGenerator, np.random.RandomState,
                          DeferredSecureGenerator)):
        found.append(f"{path}: a random generator ({type(value).__name__})")
        return
    if isinstance(value, dict):
        if "bit_generator" in value and "state" in value:
            found.append(f"{path}: a bit generator's state")
            return
        for key, item in value.items():
            _walk(item, f"{path}[{key!r}]", seen, found, secrets)
        return
    if isinstance(value, (list, tuple, set, frozenset)):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", seen, found, secrets)
        return
    if isinstance(value, (float, np.floating)) or (
        isinstance(value, np.ndarray) and value.dtype.kind in "fiu"
    ):
        flat = np.asarray(value, dtype=np.float64).ravel()
        hits = [v for v in np.round(flat, 9) if v in secrets]
        if hits:
            found.append(f"{path}: holds {len(hits)} exact statistic(s) of the data, e.g. {hits[0]}")
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            _walk(getattr(value, field.name), f"{path}.{field.name}", seen, found, secrets)
        return
    if hasattr(value, "__dict__") and not inspect.ismodule(value) and not callable(value):
        for key, item in vars(value).items():
            _walk(item, f"{path}.{key}", seen, found, secrets)


_PUBLIC = {"n_tcm_", "n_lm_", "group_sizes_", "level_sizes_", "n_features_in_",
           "n_clients_", "n_headlist_users_", "n_estimation_users_", "n_iter_",
           "n_candidates_", "feature_names_in_"}


def _secrets_of(estimator, secrets):
    found, seen = [], set()
    for key, value in vars(estimator).items():
        if key in _PUBLIC or key in estimator.get_params():
            continue
        _walk(value, key, seen, found, secrets)
    return found


def _fits():
    X, is_tcm, epsilon = _population()
    estimators = _public_estimators()
    trust = np.where(is_tcm, "tcm", "lm")
    yield "HybridMeanEstimator", estimators["HybridMeanEstimator"](bounds=BOUNDS), X, {
        "trust_group": trust}
    yield "ADPMEstimator", estimators["ADPMEstimator"](bounds=BOUNDS), X, {
        "trust_group": trust, "epsilon": epsilon}
    yield "PDPSampleEstimator", estimators["PDPSampleEstimator"](bounds=BOUNDS), X, {
        "epsilon": epsilon}
    yield "MixedMeanEstimator", estimators["MixedMeanEstimator"](bounds=BOUNDS), X, {
        "epsilon": epsilon}
    yield "MixedQuantileEstimator", estimators["MixedQuantileEstimator"](bounds=BOUNDS), X, {
        "epsilon": epsilon}
    yield "PDPQuantileEstimator", estimators["PDPQuantileEstimator"](bounds=BOUNDS), X, {
        "epsilon": epsilon}
    yield "HybridKMeans", estimators["HybridKMeans"](3, bounds=BOUNDS), X, {"trust_group": trust}
    yield "HybridStandardScaler", skhybrid.preprocessing.HybridStandardScaler(bounds=BOUNDS), X, {
        "trust_group": trust}
    records, optin = _search_logs()
    yield "BlenderHeavyHitters", estimators["BlenderHeavyHitters"](), records, {
        "trust_group": optin}


def _search_logs():
    records = skhybrid.datasets.make_search_logs(4_000, n_queries=40, random_state=0)
    optin = np.random.default_rng(1).random(records.shape[0]) < 0.3
    return records, optin


def _record_frequencies(records, optin):
    """Exact frequencies of the records among opt-in users, clients and everyone."""
    secrets = set()
    for rows in (optin, ~optin, np.ones(len(records), bool)):
        _, counts = np.unique(records[rows], axis=0, return_counts=True)
        secrets.update(np.round(counts / rows.sum(), 9))
    secrets.discard(1.0)
    return secrets


def test_every_public_estimator_is_walked():
    walked = {name for name, *_ in _fits()}
    assert walked == set(_public_estimators()) | {"HybridStandardScaler"}


@pytest.mark.parametrize("random_state", [None, 0])
@pytest.mark.parametrize("name, estimator, X, metadata", list(_fits()), ids=lambda v: v if isinstance(v, str) else "")
def test_fitted_estimator_holds_no_secret(name, estimator, X, metadata, random_state):
    estimator = estimator.set_params(random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X, **metadata)
    if name == "BlenderHeavyHitters":
        secrets = _record_frequencies(*_search_logs())
    else:
        _, is_tcm, epsilon = _population()
        secrets = _secret_floats(X, is_tcm, epsilon, getattr(estimator, "cluster_centers_", None))
    assert _secrets_of(estimator, secrets) == []


_DASK_ESTIMATORS = {
    "HybridMeanEstimator", "ADPMEstimator", "PDPSampleEstimator", "MixedMeanEstimator",
    "HybridKMeans", "BlenderHeavyHitters",
}  # The quantile estimators have no Dask path (their exponential mechanisms need every value)


def _secrets_for(name, estimator):
    if name == "BlenderHeavyHitters":
        return _record_frequencies(*_search_logs())
    X, is_tcm, epsilon = _population()
    return _secret_floats(X, is_tcm, epsilon, getattr(estimator, "cluster_centers_", None))


@pytest.mark.parametrize(
    "name, estimator, X, metadata",
    [fit for fit in _fits() if fit[0] in _DASK_ESTIMATORS],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_dask_fitted_estimator_holds_no_secret(name, estimator, X, metadata):
    da = pytest.importorskip("dask.array")
    chunks = len(X) // 3 + 1
    X_dask = da.from_array(X, chunks=(chunks, X.shape[1]))
    metadata = {key: da.from_array(np.asarray(value), chunks=chunks)
                for key, value in metadata.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X_dask, **metadata)
    assert _secrets_of(estimator, _secrets_for(name, estimator)) == []


_STREAMING = ["HybridMeanEstimator", "ADPMEstimator", "MixedMeanEstimator"]


@pytest.mark.parametrize(
    "name, estimator, X, metadata",
    [fit for fit in _fits() if fit[0] in _STREAMING],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_partial_fit_keeps_its_secrets_in_the_stream_only(name, estimator, X, metadata):
    half = len(X) // 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rows in (slice(None, half), slice(half, None)):
            estimator.partial_fit(X[rows], **{k: v[rows] for k, v in metadata.items()})
        estimator.mean_  # the release
    secrets = _secrets_for(name, estimator)
    # The stream is the curator's secret by design: the walk finds it there (so the walk
    # can see these secrets), and nowhere else on the estimator.
    assert _walk_found(estimator._stream, secrets)
    outside = {key: value for key, value in vars(estimator).items() if key != "_stream"}
    assert _secrets_of(_Attributes(outside, estimator.get_params()), secrets) == []
    estimator.discard_stream()
    assert "_stream" not in vars(estimator)
    assert _secrets_of(estimator, secrets) == []


class _Attributes:
    """Stand-in with an estimator's attributes, for walking a subset of them."""

    def __init__(self, attributes, params):
        self.__dict__.update(attributes)
        self._params = params

    def get_params(self):
        return {**self._params, "_params": None}


def _walk_found(value, secrets):
    found = []
    _walk(value, "stream", set(), found, secrets)
    return found


def _raw_values_in(blob, X):
    """How many of ``X``'s float64 values stand, byte for byte, in ``blob``."""
    return sum(blob.find(value.tobytes()) >= 0 for value in np.asarray(X, np.float64).ravel())


def _persisted_dask_inputs(name, X, metadata):
    """The fit's input as persisted Dask collections, in the two forms users write:
    a DataFrame's feature columns with its metadata columns, and columns of one array."""
    dd = pytest.importorskip("dask.dataframe")
    da = pytest.importorskip("dask.array")
    pd = pytest.importorskip("pandas")
    columns = [f"x{j}" for j in range(X.shape[1])]
    table = pd.DataFrame(X, columns=columns).assign(**{
        key: np.asarray(value) for key, value in metadata.items()
    })
    frame = dd.from_pandas(table, npartitions=3).persist()
    yield "frame", frame[columns], {key: frame[key] for key in metadata}
    if name == "BlenderHeavyHitters" or "epsilon" not in metadata:
        return
    stacked = da.from_array(np.column_stack([X, metadata["epsilon"]]),
                            chunks=(len(X) // 3 + 1, X.shape[1] + 1)).persist()
    rest = {key: da.from_array(np.asarray(value), chunks=len(X) // 3 + 1)
            for key, value in metadata.items() if key != "epsilon"}
    yield "array", stacked[:, : X.shape[1]], {"epsilon": stacked[:, X.shape[1]], **rest}


@pytest.mark.parametrize(
    "name, estimator, X, metadata",
    [fit for fit in _fits() if fit[0] in _DASK_ESTIMATORS],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_dask_fit_on_persisted_data_pickles_without_the_data(name, estimator, X, metadata):
    """Issue 25, 1: nothing fitted holds a Dask collection or the input's graph.

    A lazy attribute built from persisted partitions carries every raw value into the
    pickle that ``joblib.dump`` and model selection hand around.
    """
    import pickle

    for form, X_dask, metadata_dask in _persisted_dask_inputs(name, X, metadata):
        fitted = estimator.__class__(**estimator.get_params())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted.fit(X_dask, **metadata_dask)
        blob = pickle.dumps(fitted)
        assert b"dask" not in blob, form
        if name != "BlenderHeavyHitters":  # its records are small integers, not floats
            assert _raw_values_in(blob, X) == 0, form
            # The check can fail: the persisted input itself pickles with its values.
            assert _raw_values_in(pickle.dumps(X_dask), X) > 0.9 * X.size, form
