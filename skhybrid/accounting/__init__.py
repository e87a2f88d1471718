"""Privacy accounting: a per-user ledger of budgets and the releases that spend them.

See docs/user_guide/accounting.rst for the user guide. Estimators charge through
:func:`charge_release` (and :func:`charge_dask_release` for Dask metadata), with the cost
each declares in its ``_release_cost`` method (a :class:`ReleaseCost`).
"""

import importlib

from ._ledger import PrivacyLedger

#: The estimators' seam, imported on first use: reading a ledger (``skhybrid ledger``)
#: needs neither it nor the validation it brings (pandas).
_COSTS = {"ReleaseCost", "charge_dask_release", "charge_release", "check_user_id",
          "user_id_array", "warn_unaccounted_release"}


def __getattr__(name):
    if name in _COSTS:
        return getattr(importlib.import_module(f"{__name__}._costs"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__


__all__ = [
    "PrivacyLedger",
    "ReleaseCost",
    "charge_dask_release",
    "charge_release",
    "check_user_id",
    "user_id_array",
    "warn_unaccounted_release",
]
