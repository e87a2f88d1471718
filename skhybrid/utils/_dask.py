"""Dask inputs: sufficient statistics computed chunk by chunk, without collecting the data.

Every fit is a reduction: a numpy function turns one chunk of rows (and its metadata)
into small sufficient statistics, which are added up before the curator draws its noise
once. :func:`map_chunks` runs it on every chunk with ``dask.compute`` (whatever scheduler
is active). The core never imports Dask: :func:`is_dask_collection` looks in
``sys.modules`` first.
"""

import re
import sys
from contextlib import contextmanager

import numpy as np
from threadpoolctl import threadpool_limits


@contextmanager
def renumbered_errors(row_of):
    """Errors raised on a chunk (or a summary of chunks) name rows of the whole input.

    A ``ValueError`` whose message says ``at index i`` or ``at row i`` is raised again
    with ``row_of(i)`` in place of ``i`` (for a chunk, ``row_of`` adds its offset).
    """
    try:
        yield
    except ValueError as error:
        message = re.sub(
            r"\bat (index|row) (\d+)", lambda m: f"at {m[1]} {row_of(int(m[2]))}", str(error)
        )
        raise ValueError(message) from None


def is_dask_collection(obj):
    """Whether ``obj`` is a Dask collection (array, DataFrame, Series), without importing Dask."""
    if "dask" not in sys.modules or obj is None:
        return False
    import dask

    return dask.is_dask_collection(obj)


def any_dask(*objs):
    """Whether any of ``objs`` is a Dask collection."""
    return "dask" in sys.modules and any(is_dask_collection(obj) for obj in objs)


def _is_dataframe_like(obj):
    return hasattr(obj, "npartitions") and hasattr(obj, "map_partitions")


def _row_lengths(X):
    """Number of rows in each chunk (partition) of a Dask array or DataFrame."""
    if _is_dataframe_like(X):
        return tuple(int(n) for n in X.map_partitions(len).compute())
    chunks = X.chunks[0]
    if any(np.isnan(n) for n in chunks):
        X = X.compute_chunk_sizes()
        chunks = X.chunks[0]
    return tuple(int(n) for n in chunks)


def _blocks(obj, lengths, name):
    """Split ``obj`` into one delayed (or in-memory) block per chunk of ``lengths`` rows."""
    if obj is None or np.ndim(obj) == 0 and not is_dask_collection(obj):
        return [obj] * len(lengths)
    if is_dask_collection(obj):
        if _is_dataframe_like(obj):
            if obj.npartitions == len(lengths):
                return list(obj.to_delayed())
            obj = obj.to_dask_array(lengths=True)
        if not np.isnan(obj.shape[0]) and obj.shape[0] != sum(lengths):
            raise ValueError(
                f"{name} must have one entry per sample: expected {sum(lengths)}, "
                f"got {obj.shape[0]}"
            )
        if obj.ndim == 2:
            obj = obj.rechunk({0: lengths, 1: -1})
        else:
            obj = obj.rechunk({0: lengths})
        if sum(obj.chunks[0]) != sum(lengths):
            raise ValueError(
                f"{name} must have one entry per sample: expected {sum(lengths)}, "
                f"got {sum(obj.chunks[0])}"
            )
        return list(obj.to_delayed().ravel())
    array = obj if hasattr(obj, "iloc") else np.asarray(obj)
    if len(array) != sum(lengths):
        raise ValueError(
            f"{name} must have one entry per sample: expected {sum(lengths)}, got {len(array)}"
        )
    stops = np.cumsum(lengths)
    starts = stops - np.asarray(lengths)
    if hasattr(array, "iloc"):
        return [array.iloc[start:stop] for start, stop in zip(starts, stops)]
    return [array[start:stop] for start, stop in zip(starts, stops)]


def map_chunks(function, X, *, generators=None, **metadata):
    """Apply ``function`` to every chunk of ``X`` and its metadata, in parallel with Dask.

    Parameters
    ----------
    function : callable
        Called as ``function(X_block, *metadata_blocks, offset=..., rng=...)`` with numpy
        (or pandas) blocks; returns small per-chunk statistics. ``offset`` is the index
        of the chunk's first row (for error messages); ``rng`` is the chunk's own
        Generator, or None when ``generators`` is None.
    X : dask array of shape (n_samples, n_features) or dask DataFrame
        Split along its own chunks (partitions); a chunked array is first rechunked to
        hold every feature of a row in one chunk.
    generators : list of numpy.random.Generator or None, default=None
        One independent generator per chunk (see :func:`chunk_generators`), for
        randomness that happens where the data are (simulated local randomizers).
    **metadata : dask array or Series, array-like, scalar or None
        Per-sample metadata (``trust_group=...``, ``epsilon=...``), split along with
        ``X``; a scalar or None is passed to every chunk as it is.

    Returns
    -------
    results : list
        ``function``'s result for each chunk, in row order.
    """
    import dask

    if _partitions_aligned(X, metadata):
        return _map_partitions_one_pass(function, X, generators, metadata)
    lengths = _row_lengths(X)
    if not _is_dataframe_like(X) and X.ndim == 2:
        X = X.rechunk({0: lengths, 1: -1})
    blocks = list(zip(_blocks(X, lengths, "X"),
                      *(_blocks(value, lengths, name) for name, value in metadata.items())))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int)
    if generators is None:
        generators = [None] * len(blocks)
    tasks = [
        dask.delayed(function)(*block, offset=int(offset), rng=rng)
        for block, offset, rng in zip(blocks, offsets, generators)
    ]
    with threadpool_limits(limits=1, user_api="blas"):  # Dask's threads run our small products in parallel
        return list(dask.compute(*tasks))


def _partitions_aligned(X, metadata):
    """Whether ``X`` is a DataFrame whose metadata are its own partitions (or absent)."""
    if not _is_dataframe_like(X):
        return False
    return all(
        value is None or (np.ndim(value) == 0 and not is_dask_collection(value))
        or (_is_dataframe_like(value) and value.npartitions == X.npartitions)
        for value in metadata.values()
    )


def _located(function, *block, rng):
    """Run ``function`` on one partition; return its result, row count and any ValueError.

    The partition's offset is unknown until every partition has been counted, so rows
    are numbered within the partition here and renumbered by the caller.
    """
    try:
        return function(*block, offset=0, rng=rng), len(block[0]), None
    except ValueError as error:
        return None, len(block[0]), str(error)


def _located_columns(function, block, features, order, *, rng):
    """:func:`_located` on one partition of the combined frame, split back into blocks.

    ``order`` lists each metadata's name, its column in ``block`` (or None) and its
    in-memory value (used when it has no column).
    """
    blocks = [_feature_block(block, features)] + [
        value if column is None else block[column].rename(name)
        for name, column, value in order
    ]
    return _located(function, *blocks, rng=rng)


def _feature_block(block, features):
    """``block[features]``; for one float64 feature, a view of its column as (n, 1) (no
    new DataFrame: a quarter of a partition's statistics at 1e6 rows)."""
    if len(features) == 1:
        column = block[features[0]]
        if column.ndim == 1 and column.dtype == np.float64:  # not duplicated names
            return column.to_numpy().reshape(-1, 1)
    return block[features]


def _map_partitions_one_pass(function, X, generators, metadata):
    """:func:`map_chunks` on aligned DataFrame partitions, reading each one once: each
    task counts its own rows, and an error is renumbered once all the counts are known."""
    import dask

    # Series metadata become columns of one frame with X: each partition (each Parquet
    # file) is then read once, for all the columns, instead of once per collection.
    series = {name: value for name, value in metadata.items()
              if _is_dataframe_like(value) and value.ndim == 1}
    features = list(X.columns)
    combined, names = _columns_of_one_frame(X, series)
    if combined is None:
        names = {name: f"__skhybrid_{name}" for name in series}
        combined = X.assign(**{names[name]: series[name] for name in series}) if names else X
    if generators is None:
        generators = [None] * X.npartitions
    # Only the in-memory metadata (None or scalars) travel as they are.
    order = [(name, names.get(name), None if name in names else value)
             for name, value in metadata.items()]
    tasks = [
        dask.delayed(_located_columns)(function, block, features, order, rng=rng)
        for block, rng in zip(combined.to_delayed(), generators)
    ]
    with threadpool_limits(limits=1, user_api="blas"):  # Dask's threads run our small products in parallel
        results = dask.compute(*tasks)
    offset = 0
    for _, length, message in results:
        if message is not None:
            with renumbered_errors(lambda row: offset + row):
                raise ValueError(message)
        offset += length
    return [result for result, _, _ in results]


def _columns_of_one_frame(X, series):
    """``X`` and its metadata Series as one projection of the frame they all come from.

    When ``X`` selects columns of a frame and every Series is one column of that same
    frame (``frame[["value"]]`` and ``frame["tcm"]``), selecting all the columns at once
    spares the task graph an ``assign`` (about 1 ms per partition). Returns the combined
    collection and each metadata name's column in it, or ``(None, None)`` otherwise
    (or when Dask's expressions are not as expected: the caller then assigns).
    """
    try:
        from dask.dataframe.dask_expr import new_collection

        if type(X.expr).__name__ != "Projection":
            return None, None
        frame = X.expr.frame
        names = {}
        for name, value in series.items():
            expr = value.expr
            if type(expr).__name__ != "Projection" or expr.frame._name != frame._name:
                return None, None
            names[name] = expr.operand("columns")
        if not names or not all(isinstance(column, str) for column in names.values()):
            return None, None
        columns = list(dict.fromkeys([*X.columns, *names.values()]))
        return new_collection(frame)[columns], names
    except (AttributeError, ImportError, KeyError, TypeError):
        return None, None


def check_dask_features(estimator, X, *, reset):
    """Set or check ``n_features_in_`` and ``feature_names_in_`` for a Dask ``X``.

    scikit-learn reads feature names from eager DataFrames only; a Dask DataFrame's
    empty pandas ``_meta`` carries the same columns.
    """
    from sklearn.utils.validation import _check_feature_names, _check_n_features

    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional; got a Dask collection of {X.ndim}")
    _check_n_features(estimator, X, reset=reset)
    _check_feature_names(estimator, getattr(X, "_meta", X), reset=reset)


def n_chunks(X):
    """Number of row chunks (partitions) of a Dask array or DataFrame."""
    if _is_dataframe_like(X):
        return X.npartitions
    return len(X.chunks[0])


def chunk_generators(rng, n):
    """``n`` independent child generators of ``rng`` (numpy's ``Generator.spawn``).

    Children of a seeded generator are reproducible; children of the secure generator
    are keyed from its own stream's seed sequence and stay unpredictable.
    """
    return rng.spawn(n)
