"""Privacy accounting: a per-user ledger of budgets and the releases that spend them.

See :doc:`/user_guide/accounting` for the user guide and :mod:`skhybrid.accounting._costs` for what
each estimator charges each user.
"""

from ._ledger import PrivacyLedger

__all__ = ["PrivacyLedger"]
