"""A few users' questions answered from the log, without every user's totals in memory.

What has been spent on one user (a support desk's question) should not cost a fresh
process the whole ledger: the user's slot is read from the users table (one small part
per event that added users, see :mod:`._stores`), and each event's membership is tested
at that slot alone. The totals are replayed with the same arithmetic as a full load
(:class:`._accounts._Accounts`, events in order), so they are the same numbers.
"""

import numpy as np

from ._accounts import _Accounts
from ._events import _unpack


def _rank(bitmap, byte, bit):
    """The rank among an event's members of the members at ``byte``, ``bit`` of its
    bitmap (the bits set before them): the position of their codes."""
    if byte.size > 32:
        ones = np.bitwise_count(bitmap)
        before = np.concatenate([[0], np.cumsum(ones, dtype=np.int64)])[byte]
    else:
        before = np.array([np.bitwise_count(bitmap[:end]).sum(dtype=np.int64)
                           for end in byte.tolist()], dtype=np.int64)
    return before + np.bitwise_count(bitmap[byte].astype(np.uint16) >> (8 - bit))


def _membership(arrays, slots):
    """Which of ``slots`` an event's payload includes (their positions) and their codes."""
    n_total = int(arrays["n_total"])
    inside = np.flatnonzero((slots >= 0) & (slots < n_total))
    if "bitmap" in arrays:
        bitmap = arrays["bitmap"]
        byte, bit = slots[inside] >> 3, (slots[inside] & 7).astype(np.uint8)
        hit = inside[((bitmap[byte] >> (7 - bit)) & 1) == 1]
        byte, bit = slots[hit] >> 3, (slots[hit] & 7).astype(np.uint8)
        rank = _rank(bitmap, byte, bit) if "codes" in arrays else None
    else:
        members = np.cumsum(arrays["slot_steps"])
        at = np.minimum(np.searchsorted(members, slots[inside]), max(members.size - 1, 0))
        found = members[at] == slots[inside] if members.size else np.zeros(inside.size, bool)
        hit, rank = inside[found], at[found]
    codes = arrays.get("codes")
    return hit, None if codes is None else np.ascontiguousarray(codes[rank])


def replay(rows, slots):
    """The totals of the users at ``slots`` (-1: unknown) after the events ``rows``.

    Returns ``accounts`` (an :class:`_Accounts` whose row ``i`` is ``slots[i]``'s user)
    and each user's charges and refunds as ``(position in slots, event row, cost)``.
    """
    accounts = _Accounts()
    accounts.stage(slots.size, (0.0, 0.0))
    accounts.n = slots.size
    taken, n_before = [], 0
    for row in rows:
        arrays = _unpack(row[-1])
        n_total = int(arrays["n_total"])
        new = (slots >= n_before) & (slots < n_total)
        accounts.budget_epsilon[:slots.size][new] = arrays["new_budget"][0]
        accounts.budget_delta[:slots.size][new] = arrays["new_budget"][1]
        n_before = n_total
        hit, codes = _membership(arrays, slots)
        if not hit.size:
            continue
        table = arrays["table"].copy()  # a view would keep the whole payload alive
        changed, _ = accounts.after(row[1], hit, table, codes)
        accounts.apply(hit, changed)
        if row[1] != "budget":
            taken += [(int(i), row, table[0 if codes is None else codes[j]])
                      for j, i in enumerate(hit.tolist())]
    return accounts, taken
