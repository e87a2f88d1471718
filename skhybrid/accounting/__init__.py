"""Privacy accounting: a per-user ledger of budgets and the releases that spend them.

See docs/user_guide/accounting.rst for the user guide and ``skhybrid.accounting._costs`` for what
each estimator charges each user.
"""

from ._ledger import PrivacyLedger

__all__ = ["PrivacyLedger"]
