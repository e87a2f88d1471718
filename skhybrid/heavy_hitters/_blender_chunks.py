"""One BlenderHeavyHitters fit as reductions over chunks of users (Dask input).

The curator's random split of the opt-in users into S and T, drawn in blocks so that
it does not depend on the chunking, and each chunk's record counts.
"""

import copy
from typing import NamedTuple

import numpy as np
from sklearn.utils.validation import check_array

from ..utils._dask import chunk_generators
from ..utils._validation import check_trust_group
from ._records import _as_id_pairs, _distinct_records

#: Opt-in users are split into S and T in blocks of this many (by their rank among the
#: opt-in users), so that any chunk can find its members of S without the others.
_SPLIT_BLOCK = 1 << 16


class _HeadListSplit:
    """The curator's uniformly random split of the opt-in users into S and T.

    S is a uniformly random subset of ``n_headlist`` of the ``n_optin`` opt-in users,
    drawn in two steps: how many of S fall in each block of :data:`_SPLIT_BLOCK`
    consecutive opt-in users (a multivariate hypergeometric draw), then which ones
    within each block (a uniform subset, from the block's own generator). A chunk of
    rows only regenerates the blocks it overlaps, so the split does not depend on how
    the data are chunked: an in-memory fit and a Dask fit with the same seed split alike.
    """

    def __init__(self, n_optin, n_headlist, rng):
        starts = np.arange(0, n_optin, _SPLIT_BLOCK)
        self._starts = starts
        self._sizes = np.diff(np.append(starts, n_optin))
        self._selected = (
            rng.multivariate_hypergeometric(self._sizes, n_headlist) if starts.size
            else np.zeros(0, dtype=np.int64)
        )
        self._generators = chunk_generators(rng, starts.size)

    def part(self, start, stop):
        """What a chunk holding the opt-in users of ranks ``[start, stop)`` needs to know."""
        first = start // _SPLIT_BLOCK
        last = -(-stop // _SPLIT_BLOCK)
        blocks = list(zip(self._starts[first:last], self._sizes[first:last],
                          self._selected[first:last], self._generators[first:last]))
        return _SplitPart(start, stop, blocks)


class _SplitPart(NamedTuple):
    """One chunk's share of a :class:`_HeadListSplit`."""

    start: int
    stop: int
    blocks: list

    def in_headlist(self):
        """Whether each opt-in user of ranks ``[start, stop)`` is in S."""
        mask = np.zeros(self.stop - self.start, dtype=bool)
        for block_start, size, selected, generator in self.blocks:
            members = np.zeros(size, dtype=bool)
            # A copy: every chunk overlapping the block draws the same subset.
            members[copy.deepcopy(generator).permutation(size)[:selected]] = True
            low, high = max(self.start, block_start), min(self.stop, block_start + size)
            mask[low - self.start : high - self.start] = members[
                low - block_start : high - block_start
            ]
        return mask


def _records(X_block):
    """One chunk's records as int64 ids (the checks of :func:`_as_id_pairs`)."""
    values = check_array(X_block, dtype="numeric", ensure_all_finite=False,
                         ensure_min_samples=0, input_name="X")
    return _as_id_pairs(values, name="X", whom="BlenderHeavyHitters")


def _optin_statistics(X_block, trust_block, *, offset, rng):
    """The record counts of one chunk's opt-in users in S and in T.

    ``rng`` is the chunk's :class:`_SplitPart` of the curator's split. Returns
    ``(S records, S counts, T records, T counts)``, distinct records only.
    """
    records = _records(X_block)
    optin = records[check_trust_group(trust_block, records.shape[0])]
    in_headlist = rng.in_headlist()
    return (*_distinct_records(optin[in_headlist]), *_distinct_records(optin[~in_headlist]))


def _client_statistics(X_block, trust_block, *, offset, rng, client):
    """One chunk's clients run LocalAlg on their devices (``rng``); the counts of their reports."""
    records = _records(X_block)
    clients = records[~check_trust_group(trust_block, records.shape[0])]
    if clients.shape[0] == 0:
        return np.zeros(client._layout.n_cells, dtype=np.int64)
    reports = client._privatize_cells(client._layout.cells_of_records(clients), rng)
    return np.bincount(reports, minlength=client._layout.n_cells)


def _merged_records(parts):
    """The distinct records and counts of all chunks, from each chunk's (records, counts)."""
    records = np.concatenate([part[0] for part in parts]).reshape(-1, 2)
    counts = np.concatenate([part[1] for part in parts]).astype(np.int64)
    return _distinct_records(records, counts)
