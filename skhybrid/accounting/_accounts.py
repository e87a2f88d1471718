"""The ledger's in-process state: user ids (checked) mapped to slots, and every user's totals.

A :class:`~skhybrid.accounting.PrivacyLedger` gives each user a position ("slot")
once, when they first appear (:class:`_Index`), and keeps their budgets and what they
have spent in numpy arrays indexed by slot (:class:`_Accounts`), updated with
vectorized arithmetic as events are replayed or charged.
"""

import math
import zlib
from collections import OrderedDict
from numbers import Integral

import numpy as np

from ._composition import gaussian_epsilon

# Id arrays remembered with their slots (the ids of folds, searches and repeated fits).
_CACHE_IDS = 50_000_000


def id_array(user_ids):
    """User ids as a numpy array; a list or tuple keeps each id's own type.

    ``np.asarray([1, "b"])`` would turn both into strings: a list becomes an object
    array instead, so that ids of mixed types are refused rather than renamed.
    """
    if hasattr(user_ids, "to_numpy"):
        user_ids = user_ids.to_numpy()
    return np.asarray(user_ids, dtype=object if isinstance(user_ids, (list, tuple)) else None)


def _check_ids(user_ids):
    """User ids as a contiguous int64 or unicode array, and their kind ("int" or "str")."""
    if user_ids is None:
        raise ValueError("user_ids must be an array-like of user ids; got None")
    if isinstance(user_ids, (str, bytes)) or np.ndim(user_ids) == 0:
        user_ids = [user_ids]
    values = id_array(user_ids)
    if values.ndim != 1:
        raise ValueError(f"user_ids must be one-dimensional; got shape {values.shape}")
    if values.dtype.kind in "iu":
        if values.dtype.kind == "u" and values.size and int(values.max()) > 2**63 - 1:
            raise ValueError("integer user ids must fit in 64 signed bits")
        return np.ascontiguousarray(values, dtype=np.int64), "int"
    if values.dtype.kind == "U":
        return np.ascontiguousarray(values), "str"
    if values.dtype.kind == "O":
        listed = values.tolist()
        if listed and all(isinstance(value, str) for value in listed):
            return np.array(listed, dtype=str), "str"
        if listed and all(isinstance(v, Integral) and not isinstance(v, bool) for v in listed):
            try:
                return np.array([int(v) for v in listed], dtype=np.int64), "int"
            except OverflowError:
                raise ValueError("integer user ids must fit in 64 signed bits") from None
        _refuse_missing(listed)
        names = sorted({type(value).__name__ for value in listed})
        if names:
            raise TypeError("user ids must be all integers or all strings; got a mix of "
                            + ", ".join(names))
    if values.dtype.kind == "f":
        _refuse_missing(values.tolist())
    raise TypeError(
        f"user ids must be integers or strings; got {values.dtype.name} values "
        f"(for example {values.flat[0]!r})" if values.size else
        f"user ids must be integers or strings; got an empty {values.dtype.name} array"
    )


def _refuse_missing(listed):
    """A ValueError naming the first missing id (None, NaN, pandas' NA or NaT), if any."""
    for index, value in enumerate(listed):
        missing = value is None or type(value).__name__ in ("NAType", "NaTType") or (
            isinstance(value, float) and math.isnan(value))
        if missing:
            raise ValueError(
                f"user ids must not be missing; got {value!r} at index {index} (the ledger "
                "charges each row's user: give every row an id)"
            )



class _Index:
    """User ids to slots: the ids sorted once, new ids merged in as they arrive.

    Lookups of a new array sort it (one ``argsort``) and search the sorted ids; arrays
    looked up before (the same ids charged again, the folds of a search) are recognised
    by a checksum and compared in full, then their slots are reused.
    """

    def __init__(self):
        self.kind = None
        self.ids = None  # in slot order
        self._sorted = None
        self._sorted_slots = np.zeros(0, dtype=np.int64)
        self._cache = OrderedDict()
        self._cached = 0

    def __len__(self):
        return self._sorted_slots.size

    def check_kind(self, kind):
        if self.kind is not None and kind != self.kind:
            raise TypeError(
                f"this ledger's user ids are {'integers' if self.kind == 'int' else 'strings'};"
                f" got {'integers' if kind == 'int' else 'strings'}"
            )

    @staticmethod
    def _key(values):
        # A checksum of a sample of the ids: it only picks the candidate array, which is
        # then compared in full, so a collision costs a lookup, never a wrong slot.
        step = max(1, values.size // 4096)
        return values.dtype.str, values.size, zlib.crc32(np.ascontiguousarray(values[::step]))

    def positions(self, values):
        """Each id's slot (-1 if unknown), the first duplicated id (or None), and the
        positions in ``values`` of the unknown ids, sorted by id."""
        found = self._cache.get(self._key(values))
        if found is not None and _same(found[0], values):
            self._cache.move_to_end(self._key(values))
            return found[1], found[2], np.zeros(0, dtype=np.intp)
        order = np.argsort(values)
        ordered = values[order]
        same = np.flatnonzero(ordered[1:] == ordered[:-1])
        duplicate = ordered[same[0]].item() if same.size else None
        slots = np.full(values.size, -1, dtype=np.int64)
        if len(self) and values.size:
            where = np.minimum(np.searchsorted(self._sorted, ordered), len(self) - 1)
            hit = self._sorted[where] == ordered
            slots[order[hit]] = self._sorted_slots[where[hit]]
            return slots, duplicate, order[~hit]
        return slots, duplicate, order

    def remember(self, values, slots, duplicate):
        """Keep ``values`` (all known) and their slots for the next lookup of the same ids."""
        if values.size > _CACHE_IDS:
            return
        key = self._key(values)
        if key not in self._cache:
            slots = slots.copy()
            slots.flags.writeable = False
            self._cache[key] = (values.copy(), slots, duplicate)
            self._cached += values.size
        while self._cached > _CACHE_IDS:
            _, (dropped, _, _) = self._cache.popitem(last=False)
            self._cached -= dropped.size

    def add(self, new_ids, by_id=None):
        """Give ``new_ids`` (distinct, unknown) the next slots, in their order.

        ``by_id`` sorts them (``new_ids[by_id]`` is increasing): charges know it from
        their lookup and store it; without it (a checkpoint's ids) they are sorted here.
        """
        if new_ids.size == 0:
            return
        slots = np.arange(len(self), len(self) + new_ids.size, dtype=np.int64)
        if self.ids is None:
            self.kind = "int" if new_ids.dtype.kind == "i" else "str"
            self.ids, self._sorted = new_ids.copy(), new_ids[:0]
        else:
            self.ids = np.concatenate([self.ids, new_ids])
        by_id = np.argsort(new_ids) if by_id is None else by_id
        new_ids, slots = new_ids[by_id], slots[by_id]
        # Merge two sorted arrays: each new id lands after the old ids below it.
        where = np.searchsorted(self._sorted, new_ids) + np.arange(new_ids.size)
        is_new = np.zeros(len(self) + new_ids.size, dtype=bool)
        is_new[where] = True
        merged = np.empty(is_new.size, dtype=np.promote_types(self._sorted.dtype, new_ids.dtype))
        merged[where], merged[~is_new] = new_ids, self._sorted
        merged_slots = np.empty(is_new.size, dtype=np.int64)
        merged_slots[where], merged_slots[~is_new] = slots, self._sorted_slots
        self._sorted, self._sorted_slots = merged, merged_slots

    def sorted_slots(self):
        return self._sorted_slots


def _same(first, second):
    """Whether two id arrays are equal, compared as raw integers (strings as code points)."""
    if first.dtype != second.dtype or first.shape != second.shape:
        return False
    if first.dtype.kind == "U":
        first, second = first.view(np.uint32), second.view(np.uint32)
    return bool(np.array_equal(first, second))


class _Accounts:
    """Every user's budget and totals, one numpy array per column, indexed by slot.

    Rows past ``n`` are scratch: a charge stages its new users there, and they count
    only once the charge is committed.
    """

    COLUMNS = ("budget_epsilon", "budget_delta", "high", "low", "delta", "gaussian")

    def __init__(self):
        self.n = 0
        self.columns = {name: np.zeros(0) for name in self.COLUMNS}
        self.any_delta = False
        self.any_gaussian = False

    def __getattr__(self, name):
        try:
            return self.__dict__["columns"][name]
        except KeyError:
            raise AttributeError(name) from None

    def stage(self, n_new, budget):
        """Rows for ``n_new`` users after the last one, with ``budget`` and nothing spent."""
        needed = self.n + n_new
        if needed > self.columns["high"].size:
            capacity = max(needed, 2 * self.columns["high"].size, 1024)
            for name, array in self.columns.items():
                grown = np.zeros(capacity)
                grown[:self.n] = array[:self.n]
                self.columns[name] = grown
        for name in self.COLUMNS:
            self.columns[name][self.n:needed] = 0.0
        self.columns["budget_epsilon"][self.n:needed] = budget[0]
        self.columns["budget_delta"][self.n:needed] = budget[1]

    def after(self, kind, slots, table, codes):
        """The columns ``kind`` changes for ``slots``, as they would be after the event."""

        def per_user(column):
            return table[0, column] if codes is None else table[codes, column]

        if slots.size == 0:
            return {}, 0
        if kind == "budget":
            return {"budget_epsilon": per_user(0), "budget_delta": per_user(1)}, 0
        sign = -1.0 if kind == "refund" else 1.0
        # Knuth's TwoSum of each total and its cost, renormalised: ``high`` stays the
        # float64 rounding of the exact sum of the costs, so ``k`` charges of ``epsilon``
        # read back as exactly ``k * epsilon`` (see :mod:`skhybrid.accounting._composition`).
        cost = sign * per_user(0)
        old_high = self.high[slots]
        total = old_high + cost
        back = total - old_high
        error = self.low[slots] + ((old_high - (total - back)) + (cost - back))
        high = total + error
        low = error - (high - total)
        n_over = int(np.count_nonzero(high > self.budget_epsilon[slots]))
        changed = {"high": high, "low": low}
        if table[:, 1].any():
            changed["delta"] = self.delta[slots] + sign * per_user(1)
        if table.shape[1] > 2 and table[:, 2].any():
            changed["gaussian"] = self.gaussian[slots] + per_user(2)
        return changed, n_over

    def apply(self, slots, changed):
        for name, values in changed.items():
            self.columns[name][slots] = values
        self.any_delta |= "delta" in changed
        self.any_gaussian |= "gaussian" in changed

    def spent(self, slots):
        """The epsilon spent by ``slots``, at their delta budget."""
        high = self.high[slots]
        if not self.any_gaussian:
            return high
        return high + gaussian_epsilon(self.gaussian[slots],
                                       self.budget_delta[slots] - self.delta[slots])
