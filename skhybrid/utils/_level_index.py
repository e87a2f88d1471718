"""Users grouped by their privacy level: one hashing pass, no sort of the users.

A fit with per-user epsilons works per level: counts and sums per distinct epsilon, then
each user's entry of a per-level table (a weight, a sampling probability). Sorting a
million epsilons (``np.unique``) costs several passes and n log n comparisons; here the
distinct levels are found by a hash table in one compiled pass (as pandas' ``factorize``
does, :func:`~skhybrid.utils._kernels.hash_groups`), the same pass can add the users'
fixed-point codes to their level's exact sums, only the few distinct levels are
sorted, and per-level results are reordered instead of the users. A per-user lookup
probes the table again (no per-user label array is kept). Up to two levels, comparison
passes do it without a table, and the others go through ``np.unique``.
"""

from dataclasses import dataclass

import numpy as np

from ._sums import _bounds_and_scale, _float_rows, fixed_point_sums


@dataclass(frozen=True)
class LevelIndex:
    """The distinct keys of an array, and how to find each key's place among them.

    Attributes
    ----------
    levels : ndarray of float64 of shape (n_levels,)
        The distinct keys, sorted.
    counts : ndarray of int64 of shape (n_levels,)
        How often each sorted key occurs.
    labels : ndarray of int of shape (n,) or None
        Each key's group (int8 or int32): ``levels[position[labels[i]]] == keys[i]``.
        None when the groups are found by the hash table instead.
    position : ndarray of intp of shape (n_levels,)
        Each group's place among the sorted levels.
    """

    levels: np.ndarray
    counts: np.ndarray
    labels: np.ndarray | None
    position: np.ndarray
    _keys: np.ndarray | None = None
    _table: tuple | None = None

    @classmethod
    def of(cls, keys, *, with_labels=False):
        """Group float64 ``keys`` (finite or infinite, never NaN or -0.0).

        ``with_labels`` keeps each key's group in ``labels`` (int32: half the memory of
        float64 keys) even when the hash table could find it again.
        """
        return cls._grouped(keys, None, with_labels)[0]

    @classmethod
    def with_code_sums(cls, keys, values, lower, upper, non_finite=None):
        """Group ``keys`` and add each group's fixed-point codes of ``values``, exactly.

        ``non_finite`` (int64 of shape (1,)), unless None, is made positive when a value
        is NaN or infinite, tested in the pass that codes them (see
        :func:`~skhybrid.utils._sums.fixed_point_sums`).

        Returns
        -------
        index : LevelIndex
        sums : ndarray of int64 of shape (n_levels, n_features)
            ``fixed_point_sums(values, lower, upper, labels=...)`` per sorted level.
        """
        return cls._grouped(keys, (values, lower, upper), False, non_finite)

    @classmethod
    def _grouped(cls, keys, summed, with_labels, non_finite=None):
        keys = np.ascontiguousarray(keys, dtype=np.float64)
        if keys.ndim != 1:
            raise ValueError(f"keys must be 1-d; got shape {keys.shape}")
        index = _two_or_fewer(keys)
        if index is None:
            distinct, inverse, counts = np.unique(keys, return_inverse=True,
                                                  return_counts=True)
            index = cls(distinct, counts.astype(np.int64), inverse.astype(np.int32),
                        np.arange(distinct.size))
        if index is not None:
            if summed is None:
                return index, None
            values, lower, upper = summed
            sums = fixed_point_sums(values, lower, upper, labels=index.labels,
                                    n_groups=index.levels.size, non_finite=non_finite)
            return index, index.sorted(sums)
        if summed is None:
            columns, lower, upper, scale = np.zeros((0, keys.shape[0])), *([np.zeros(0)] * 3)
        else:
            values = _float_rows(summed[0])
            lower, upper, scale = _bounds_and_scale(summed[1], summed[2], values.shape[1])
            columns = values.T
        labels = np.empty(keys.shape[0], dtype=np.int32) if with_labels else None
        from ._kernels import hash_groups  # numba: imported at first use

        table, slots, distinct, counts, sums = hash_groups(
            keys.view(np.uint64), labels, columns, lower, upper, scale, summed is not None,
            non_finite)
        distinct = distinct.view(np.float64)
        order = np.argsort(distinct, kind="stable")
        position = np.empty(order.size, dtype=np.intp)
        position[order] = np.arange(order.size)
        index = cls(distinct[order], counts[order], labels, position, keys, (table, slots))
        return index, (None if summed is None else sums[order])

    def per_group(self, per_level):
        """A table over the sorted levels, indexed by group instead."""
        return np.asarray(per_level)[self.position]

    def sorted(self, per_group):
        """A table over the groups, reordered to the sorted levels."""
        per_group = np.asarray(per_group)
        result = np.empty_like(per_group)
        result[self.position] = per_group
        return result

    def spread(self, per_level):
        """Each key's entry of a table over the sorted levels (float64).

        By the labels, a compiled gather where the kernels are used (numpy's indexing
        with int8 or int32 labels converts them to intp first: 2.2-2.5x slower at 1e7
        keys), else numpy's.
        """
        per_group = np.ascontiguousarray(self.per_group(per_level), dtype=np.float64)
        if self.labels is not None:
            return per_group[self.labels]
        table, slots = self._table
        spread = np.empty(self._keys.shape[0])
        from ._kernels import hash_lookup

        if not hash_lookup(self._keys.view(np.uint64), table, slots, per_group, spread):
            # Every key was grouped by this table: only keys changed since can miss.
            raise ValueError("the keys changed after they were grouped")
        return spread


#: Keys :func:`_two_or_fewer` looks at before its passes: more than two distinct keys
#: among them end it at once.
_HEAD_KEYS = 4096


def _two_or_fewer(keys):
    """The index of at most two distinct keys by comparison passes, else None.

    Three distinct keys among the first :data:`_HEAD_KEYS` (a sort of a few thousand,
    15 us) answer None without the passes (8-12 ms at 1e7 keys).
    """
    n = keys.shape[0]
    if n == 0:
        return LevelIndex(keys[:0].copy(), np.zeros(0, dtype=np.int64),
                          np.zeros(0, dtype=np.int8), np.zeros(0, dtype=np.intp))
    if n > _HEAD_KEYS and np.unique(keys[:_HEAD_KEYS]).size > 2:
        return None
    first = keys[0]
    other = keys != first
    n_other = int(np.count_nonzero(other))
    if n_other == 0:
        return LevelIndex(np.array([first]), np.array([n], dtype=np.int64),
                          np.zeros(n, dtype=np.int8), np.zeros(1, dtype=np.intp))
    second = keys[int(np.argmax(other))]
    if np.count_nonzero(keys == second) != n_other:
        return None
    labels = other.view(np.int8)  # 1 for the second key
    counts = np.array([n - n_other, n_other], dtype=np.int64)
    if first < second:
        return LevelIndex(np.array([first, second]), counts, labels, np.arange(2))
    return LevelIndex(np.array([second, first]), counts[::-1].copy(), labels,
                      np.array([1, 0], dtype=np.intp))
