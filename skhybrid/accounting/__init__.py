"""Privacy accounting: a per-user ledger of budgets and the releases that spend them.

See docs/user_guide/accounting.rst for the user guide. Estimators charge through
:func:`charge_release` (and :func:`charge_dask_release` for Dask metadata), with the cost
each declares in its ``_release_cost`` method (a :class:`ReleaseCost`).
"""

from ._costs import (
    ReleaseCost,
    charge_dask_release,
    charge_release,
    check_user_id,
    user_id_array,
    warn_unaccounted_release,
)
from ._ledger import PrivacyLedger

__all__ = [
    "PrivacyLedger",
    "ReleaseCost",
    "charge_dask_release",
    "charge_release",
    "check_user_id",
    "user_id_array",
    "warn_unaccounted_release",
]
