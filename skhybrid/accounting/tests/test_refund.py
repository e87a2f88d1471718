"""PrivacyLedger.refund: budget given back atomically, with a history row."""

import numpy as np
import pytest

from skhybrid.accounting import PrivacyLedger


def test_refund_lowers_each_users_spend_by_the_amount_and_records_it():
    ledger = PrivacyLedger(default_budget=5.0)
    ledger.charge(["a", "b", "c"], [2.0, 1.0, 0.5], description="reservation")
    assert ledger.refund(["a", "b"], [0.5, 1.0], description="unused") == 2
    np.testing.assert_allclose(ledger.spent(["a", "b", "c"]), [1.5, 0.0, 0.5])
    np.testing.assert_allclose(ledger.remaining(["a", "b"]), [3.5, 5.0])
    reservation, refund = ledger.history()
    assert reservation["description"] == "reservation"
    assert refund["description"] == "unused" and refund["kind"] == "refund"
    # The refund row lists the amounts given back; the per-user trail shows them negative.
    assert sorted(level["epsilon"] for level in refund["levels"]) == [0.5, 1.0]
    assert [row["epsilon"] for row in ledger.history(user_id="a")] == [2.0, -0.5]


def test_refunding_more_than_spent_is_an_error_that_changes_nothing(tmp_path):
    ledger = PrivacyLedger(tmp_path / "ledger.sqlite", default_budget=5.0)
    ledger.charge([1, 2], [1.0, 1.0])
    with pytest.raises(ValueError, match="user 2 is more than they were charged"):
        ledger.refund([1, 2], [0.5, 1.5])
    with pytest.raises(ValueError, match="never charged"):
        ledger.refund([3], 0.1)
    np.testing.assert_array_equal(ledger.spent([1, 2]), [1.0, 1.0])
    assert len(ledger.history()) == 1


def test_refunding_a_whole_charge_leaves_exactly_what_was_spent_before():
    ledger = PrivacyLedger(default_budget=5.0)
    ledger.charge([7, 8], 0.1)
    ledger.charge([7, 8], [0.7, 1 / 3])
    ledger.refund([7, 8], [0.7, 1 / 3])
    np.testing.assert_array_equal(ledger.spent([7, 8]), [0.1, 0.1])


def test_refund_gives_back_delta_too():
    ledger = PrivacyLedger(default_budget=(5.0, 1e-5))
    ledger.charge([1], 1.0, 1e-6)
    ledger.refund([1], 1.0, 1e-6)
    assert ledger.users()["spent_delta"][0] == 0.0
    with pytest.raises(ValueError, match="delta"):
        ledger.refund([1], 0.0, 1e-6)
