"""Chunk summaries: the first reduction of a fit on a Dask input, shared by the estimators.

Each chunk of users is validated and summarised (group sizes, each group's privacy
level, the range of the values); the curator merges the summaries into the public
facts it fixes before releasing anything. :class:`~skhybrid.HybridKMeans` and
:class:`~skhybrid.BlenderHeavyHitters` both run it.
"""

from typing import NamedTuple

import numpy as np
from sklearn.utils.validation import check_array

from ._dask import renumbered_errors
from ._validation import check_epsilon, check_group_epsilons, check_trust_group


class GroupSummary(NamedTuple):
    """What the curator needs to know about the users before the first iteration (all public).

    epsilon_tcm, epsilon_lm : float or None
        Each group's privacy level (None for an empty group).
    minimum, maximum : ndarray of shape (n_features,) or None
        The data's range, read only when ``bounds=None``.
    """

    n_tcm: int
    n_lm: int
    epsilon_tcm: float
    epsilon_lm: float
    minimum: np.ndarray = None
    maximum: np.ndarray = None


class _ChunkSummary(NamedTuple):
    """One chunk's part of a :class:`GroupSummary`.

    first_members : tuple of ((int, float) or None)
        For the tcm and the lm group: the row (in the whole input) of the chunk's first
        member and the group's privacy level; None without members.
    """

    n_tcm: int
    n_lm: int
    first_members: tuple
    minimum: np.ndarray
    maximum: np.ndarray


def _finite_values(X_block):
    """One chunk's values as floats; NaN or infinity raise, naming the row."""
    values = check_array(X_block, dtype=np.float64, ensure_all_finite=False,
                         ensure_min_samples=0, input_name="X")
    not_finite = ~np.isfinite(values)
    if not_finite.any():
        row, column = np.argwhere(not_finite)[0]
        raise ValueError(
            "X must hold finite numbers (no NaN or infinity); got "
            f"{values[row, column].item()!r} at row {row}, column {column}"
        )
    return values


def summarise_chunk(X_block, trust_block, epsilon_block, *, offset, rng, default_epsilon,
                    estimator_name, check_values=_finite_values):
    """Validate one chunk of a Dask input and summarise it (the first reduction of a fit).

    ``check_values`` validates the chunk's rows of ``X`` and returns them as an array.
    Errors name the row in the whole input. Returns the group sizes, each group's one
    privacy level with the row of its first member (for the merge), and the chunk's
    range.
    """
    with renumbered_errors(lambda row: offset + row):
        values = check_values(X_block)
        n_rows = values.shape[0]
        is_tcm = check_trust_group(trust_block, n_rows)
        if epsilon_block is None:
            user_epsilon = default_epsilon
        else:
            user_epsilon = check_epsilon(epsilon_block, n_rows)
        levels = check_group_epsilons(user_epsilon, is_tcm, estimator_name)
    first_members = []
    for level, members in zip(levels, (is_tcm, ~is_tcm)):
        rows = np.flatnonzero(members)[:1]
        first_members.append((offset + int(rows[0]), level) if rows.size else None)
    n_tcm = int(np.count_nonzero(is_tcm))
    return _ChunkSummary(
        n_tcm, n_rows - n_tcm, tuple(first_members),
        values.min(axis=0) if n_rows else None, values.max(axis=0) if n_rows else None,
    )


def merge_chunk_summaries(summaries, estimator_name):
    """The curator's :class:`GroupSummary` from the chunks' summaries.

    Each group's level must be the same in every chunk: the levels of each chunk's first
    member of each group go through :func:`check_group_epsilons` again, whose error then
    names that member's row.
    """
    first_members = [
        (*member, group == 0)
        for summary in summaries
        for group, member in enumerate(summary.first_members)
        if member is not None
    ]
    rows, levels, is_tcm = (np.array(column) for column in zip(*first_members))
    with renumbered_errors(lambda index: int(rows[index])):
        epsilon_tcm, epsilon_lm = check_group_epsilons(levels, is_tcm, estimator_name)
    non_empty = [summary for summary in summaries if summary.minimum is not None]
    return GroupSummary(
        n_tcm=sum(summary.n_tcm for summary in summaries),
        n_lm=sum(summary.n_lm for summary in summaries),
        epsilon_tcm=epsilon_tcm,
        epsilon_lm=epsilon_lm,
        minimum=np.min([summary.minimum for summary in non_empty], axis=0),
        maximum=np.max([summary.maximum for summary in non_empty], axis=0),
    )
