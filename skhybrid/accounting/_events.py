"""The ledger's event payloads: new users, membership and costs, packed into one blob.

Each event of the append-only log stores its users' membership as a bitmap over the
users, or their sorted positions when few take part, with the distinct costs.
"""

import json
import math
import zlib

import numpy as np


def _encode(new_ids, by_id, new_budget, slots, codes, table, n_total):
    """An event's payload: new users (and their order by id), membership (bitmap or
    sorted slots), codes, costs."""
    arrays = {"new_ids": new_ids,
              "by_id": by_id.astype(np.min_scalar_type(max(by_id.size - 1, 0))),
              "new_budget": np.asarray(new_budget, dtype=np.float64),
              "table": table, "n_total": np.array(n_total)}
    if slots.size * 16 >= n_total:
        member = np.zeros(n_total, dtype=bool)
        member[slots] = True
        arrays["bitmap"] = np.packbits(member)
        if codes is not None:
            in_order = np.zeros(n_total, dtype=codes.dtype)
            in_order[slots] = codes
            arrays["codes"] = in_order[member]
    else:
        order = np.argsort(slots)
        arrays["slot_steps"] = np.diff(slots[order], prepend=0)
        if codes is not None:
            arrays["codes"] = codes[order]
    return _pack(arrays)


def _decode(payload):
    """(new_ids, by_id, new_budget, sorted slots, codes in slot order or None, table)."""
    arrays = _unpack(payload)
    if "bitmap" in arrays:
        slots = np.flatnonzero(np.unpackbits(arrays["bitmap"], count=int(arrays["n_total"])))
    else:
        slots = np.cumsum(arrays["slot_steps"])
    return (arrays["new_ids"], arrays["by_id"], tuple(arrays["new_budget"]), slots,
            arrays.get("codes"),
            arrays["table"])


def _pack(arrays):
    """Named arrays as one zlib-compressed blob: a JSON header (dtype, shape), then the data.

    Only plain numeric and unicode dtypes are written and read (no pickles: a blob read
    from a shared database cannot run code).
    """
    header = json.dumps({name: [array.dtype.str, list(array.shape)]
                         for name, array in arrays.items()}).encode()
    return zlib.compress(b"".join([len(header).to_bytes(4, "little"), header,
                                   *(np.ascontiguousarray(a).tobytes() for a in arrays.values())]),
                         1)


def _unpack(blob):
    raw = zlib.decompress(blob)
    size = int.from_bytes(raw[:4], "little")
    offset, arrays = 4 + size, {}
    for name, (dtype, shape) in json.loads(raw[4:offset]).items():
        dtype = np.dtype(dtype)
        if dtype.kind not in "biufU":
            raise ValueError(f"a ledger blob holds an array of dtype {dtype}; expected numbers "
                             "or strings (is the ledger corrupt?)")
        count = math.prod(shape)
        arrays[name] = np.frombuffer(raw, dtype, count, offset).reshape(shape)
        offset += count * dtype.itemsize
    return arrays


def _levels(kind, table, counts):
    """The distinct costs of an event with their numbers of users, for the history."""
    if kind == "budget":
        return [{"epsilon": float(e), "delta": float(d), "n_users": int(c)}
                for (e, d), c in zip(table, counts)]
    return [
        {"epsilon": float(row[0]), "delta": float(row[1]),
         "noise_multiplier": None if len(row) < 3 or row[2] == 0 else float(1 / np.sqrt(row[2])),
         "n_users": int(c)}
        for row, c in zip(table, counts)
    ]


def _mechanism(table):
    if table.shape[1] > 2 and table[:, 2].any():
        return "gaussian"
    return "approximate" if table[:, 1].any() else "pure"
