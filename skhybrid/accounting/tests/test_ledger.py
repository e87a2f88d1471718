"""PrivacyLedger: budgets, atomic charges, composition, storage and sharing."""

import math
import os
import pickle
import re
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.base import clone

from skhybrid import HybridMeanEstimator
from skhybrid.accounting import PrivacyLedger
from skhybrid.accounting._composition import gaussian_epsilon
from skhybrid.exceptions import BudgetExceededError, LedgerError
from skhybrid.mechanisms import analytic_gaussian_delta


def _dump(ledger):
    """Every row of every table, for before/after comparisons."""
    connection = sqlite3.connect(ledger.path)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


# -- budgets and charges ------------------------------------------------------------------


def test_k_releases_of_epsilon_spend_exactly_k_times_epsilon():
    ledger = PrivacyLedger(default_budget=100.0)
    for k in range(1, 31):
        ledger.charge([1, 2], 0.1)
        assert ledger.spent([1, 2]).tolist() == [k * 0.1, k * 0.1]


def test_mixed_epsilons_sum_to_the_correctly_rounded_total():
    rng = np.random.default_rng(0)
    amounts = rng.uniform(0.01, 1.0, size=200) * 10.0 ** rng.integers(-6, 1, size=200)
    ledger = PrivacyLedger(default_budget=np.inf)
    for amount in amounts:
        ledger.charge(["a"], amount)
    assert ledger.spent(["a"])[0] == math.fsum(amounts)


def test_remaining_is_budget_minus_spent_and_users_start_at_the_default():
    ledger = PrivacyLedger(default_budget=3.0)
    ledger.set_budget(["x"], 1.0)
    ledger.charge(["x", "y"], 0.25)
    np.testing.assert_array_equal(ledger.spent(["x", "y", "z"]), [0.25, 0.25, 0.0])
    np.testing.assert_array_equal(ledger.remaining(["x", "y", "z"]), [0.75, 2.75, 3.0])


def test_budgets_can_be_a_mapping():
    ledger = PrivacyLedger().set_budget({"a": 1.0, "b": 2.5})
    np.testing.assert_array_equal(ledger.remaining(["b", "a"]), [2.5, 1.0])
    with pytest.raises(TypeError, match="either as a mapping or as epsilon"):
        ledger.set_budget({"a": 1.0}, 2.0)


def test_a_charge_over_one_users_budget_raises_and_charges_nobody(tmp_path):
    ledger = PrivacyLedger(tmp_path / "l.sqlite", default_budget=5.0)
    ledger.set_budget([3, 4], [0.5, 0.7])
    ledger.charge(np.arange(10), 0.4)
    before = _dump(ledger)
    with pytest.raises(BudgetExceededError, match=r"2 of 10 users \(worst: user 3") as error:
        ledger.charge(np.arange(10), 0.4)
    assert error.value.n_users == 2 and error.value.user_id == 3
    assert error.value.budget == 0.5 and error.value.would_spend == pytest.approx(0.8)
    assert _dump(ledger) == before


def test_unknown_users_without_a_default_budget_raise_and_nothing_is_charged(tmp_path):
    ledger = PrivacyLedger(tmp_path / "l.sqlite")
    ledger.set_budget([1, 2], 1.0)
    before = _dump(ledger)
    with pytest.raises(KeyError, match="1 of 3 users have no budget.*user 9"):
        ledger.charge([1, 2, 9], 0.5)
    assert _dump(ledger) == before
    with pytest.raises(KeyError, match="no budget"):
        ledger.remaining([9])


def test_ids_of_mixed_types_raise_and_nothing_is_charged(tmp_path):
    ledger = PrivacyLedger(tmp_path / "l.sqlite", default_budget=1.0)
    ledger.charge([1, 2], 0.5)
    before = _dump(ledger)
    with pytest.raises(TypeError, match="all integers or all strings; got a mix of int, str"):
        ledger.charge(np.array([1, "b"], dtype=object), 0.5)
    with pytest.raises(TypeError, match="ledger's user ids are integers; got strings"):
        ledger.charge(["a"], 0.5)
    with pytest.raises(TypeError, match="all integers or all strings; got a mix of int, str"):
        ledger.charge([3, "c"], 0.5)  # a plain list: not read as the strings "3", "c"
    with pytest.raises(TypeError, match="got a mix of float"):
        ledger.charge([1.5], 0.5)
    with pytest.raises(TypeError, match="integers or strings; got float64"):
        ledger.charge(np.array([1.5]), 0.5)
    assert _dump(ledger) == before


@pytest.mark.parametrize("ids, shown", [
    (["a", None, "b"], "None at index 1"),
    ([1, 2, float("nan")], "nan at index 2"),
    (np.array([1.0, np.nan]), "nan at index 1"),
    ("string", "<NA> at index 1"),
    ("str", "nan at index 1"),
    ("Int64", "nan at index 1"),
])
def test_a_missing_user_id_is_a_value_error_naming_its_row(ids, shown):
    """Missing ids (as pandas gives them: NA, NaN) are bad values, not bad types."""
    import pandas as pd

    if isinstance(ids, str):
        values = ["a", None, "b"] if ids != "Int64" else [1, None, 2]
        ids = pd.Series(values, dtype=ids)
    ledger = PrivacyLedger(default_budget=1.0)
    with pytest.raises(ValueError, match=f"must not be missing; got {re.escape(shown)}"):
        ledger.charge(ids, 0.5)
    X = np.random.default_rng(0).uniform(0, 1, (len(ids), 1))
    from skhybrid import HybridMeanEstimator

    estimator = HybridMeanEstimator("tcm_only", bounds=(0, 1), ledger=ledger)
    with pytest.raises(ValueError, match="must not be missing"):
        estimator.fit(X, user_id=ids)


def test_a_user_twice_in_one_release_is_refused():
    ledger = PrivacyLedger(default_budget=1.0)
    with pytest.raises(ValueError, match="user id 7 appears more than once"):
        ledger.charge([7, 8, 7], 0.1)
    assert ledger.history() == []


def test_the_history_records_each_release():
    ledger = PrivacyLedger(default_budget=10.0)
    ledger.charge([1, 2, 3], [0.5, 0.5, 1.0], release={
        "estimator": "E", "params": {"epsilon": 1.0}, "mechanism": "laplace"})
    ledger.charge([1], 0.0)  # a zero cost charges nobody but is still a release
    first, second = ledger.history()
    assert first["estimator"] == "E" and first["params"] == {"epsilon": 1.0}
    assert first["n_users"] == 3 and first["mechanism"] == "laplace"
    assert [(level["epsilon"], level["n_users"]) for level in first["levels"]] == [
        (0.5, 2), (1.0, 1)]
    assert second["n_users"] == 0


def test_summary_and_frame_describe_the_users():
    pd = pytest.importorskip("pandas")
    ledger = PrivacyLedger(default_budget=1.0)
    ledger.charge(np.arange(4), [0.25, 0.5, 1.0, 1.0])
    summary = ledger.summary()
    assert summary["n_users"] == 4 and summary["n_exhausted"] == 2
    assert summary["spent_quantiles"][1.0] == 1.0 and summary["n_releases"] == 1
    frame = ledger.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert frame.loc[1, "remaining_epsilon"] == 0.5


# -- Gaussian composition -----------------------------------------------------------------


def test_gaussian_releases_compose_into_one_gaussian_and_convert_at_the_users_delta():
    ledger = PrivacyLedger()
    ledger.set_budget(["u"], 10.0, delta=1e-6)
    for _ in range(4):
        ledger.charge(["u"], noise_multiplier=8.0)
    spent = ledger.spent(["u"])[0]
    # Four releases of multiplier 8 are one of multiplier 4: its delta at `spent` is 1e-6.
    assert analytic_gaussian_delta(spent, 4.0) <= 1e-6
    assert analytic_gaussian_delta(spent * (1 - 1e-9), 4.0) > 1e-6


def test_gaussian_composition_matches_google_dp_accounting():
    pld = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant")
    from dp_accounting import dp_event

    multipliers = [3.0, 5.0, 5.0, 9.0]
    accountant = pld.PLDAccountant()
    for multiplier in multipliers:
        accountant.compose(dp_event.GaussianDpEvent(multiplier))
    ours = gaussian_epsilon(np.array([sum(m**-2 for m in multipliers)]), np.array([1e-6]))[0]
    # The PLD accountant discretises pessimistically: it may only be slightly above.
    assert ours <= accountant.get_epsilon(1e-6) <= ours * (1 + 1e-4)


def test_a_gaussian_release_needs_a_delta_budget():
    ledger = PrivacyLedger(default_budget=5.0)
    with pytest.raises(BudgetExceededError, match="needs a delta budget > 0"):
        ledger.charge([1], noise_multiplier=2.0)


def test_approximate_releases_add_their_deltas():
    ledger = PrivacyLedger(default_budget=(10.0, 2.5e-6))
    ledger.charge([1], 1.0, 1e-6)
    ledger.charge([1], 1.0, 1e-6)
    with pytest.raises(BudgetExceededError, match="delta budget 2.5e-06"):
        ledger.charge([1], 1.0, 1e-6)
    assert ledger.spent([1])[0] == 2.0


# -- storage ------------------------------------------------------------------------------


def test_a_file_ledger_survives_the_process(tmp_path):
    path = tmp_path / "l.sqlite"
    PrivacyLedger(path, default_budget=2.0).charge(["a", "b"], 0.5)
    script = textwrap.dedent(f"""
        from skhybrid.accounting import PrivacyLedger
        ledger = PrivacyLedger({str(path)!r})
        ledger.charge(["a"], 0.25)
        print(ledger.spent(["a", "b"]).tolist(), ledger.remaining(["c"]).tolist())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert out.stdout.strip() == "[0.75, 0.5] [2.0]"


def test_a_corrupt_file_is_a_clear_error(tmp_path):
    path = tmp_path / "l.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(LedgerError, match="cannot be used: file is not a database"):
        PrivacyLedger(path)


def test_another_sqlite_database_is_not_taken_for_a_ledger(tmp_path):
    path = tmp_path / "other.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE customers (id INTEGER)")
    connection.commit()
    connection.close()
    with pytest.raises(LedgerError, match="not a privacy ledger \\(its tables: customers\\)"):
        PrivacyLedger(path)


def test_a_locked_file_is_a_clear_error_and_nothing_is_charged(tmp_path):
    path = tmp_path / "l.sqlite"
    ledger = PrivacyLedger(path, default_budget=1.0, timeout=0.2)
    ledger.charge([1], 0.1)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(LedgerError, match="locked by another process.*nothing was charged"):
            ledger.charge([1], 0.1)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert ledger.spent([1])[0] == 0.1


# -- sharing: clone, pickling -------------------------------------------------------------


def test_clone_and_deepcopy_share_the_ledger():
    ledger = PrivacyLedger(default_budget=1.0)
    estimator = HybridMeanEstimator(bounds=(0, 1), ledger=ledger)
    assert clone(estimator).ledger is ledger
    assert clone(estimator).set_params(epsilon=0.5).get_params()["ledger"] is ledger


def test_an_in_memory_ledger_refuses_to_be_pickled():
    estimator = HybridMeanEstimator(bounds=(0, 1), ledger=PrivacyLedger())
    with pytest.raises(TypeError, match="in-memory PrivacyLedger cannot be pickled"):
        pickle.dumps(estimator)


def test_a_pickled_file_ledger_charges_the_same_file(tmp_path):
    ledger = PrivacyLedger(tmp_path / "l.sqlite", default_budget=1.0)
    copy = pickle.loads(pickle.dumps(ledger))
    assert copy is not ledger and copy.path == ledger.path
    copy.charge([5], 0.5)
    assert ledger.spent([5])[0] == 0.5


def test_a_relative_path_names_the_same_file_from_another_directory(tmp_path, monkeypatch):
    """A joblib worker started elsewhere unpickles the ledger: it must open the same file."""
    import pickle

    monkeypatch.chdir(tmp_path)
    ledger = PrivacyLedger("ledger.sqlite", default_budget=2.0)
    ledger.charge([1, 2], 0.5)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    copy = pickle.loads(pickle.dumps(ledger))
    np.testing.assert_array_equal(copy.spent([1, 2]), [0.5, 0.5])
    assert not (tmp_path / "elsewhere" / "ledger.sqlite").exists()


def test_a_full_disk_during_a_charge_says_so_and_charges_nothing(tmp_path):
    path = tmp_path / "ledger.sqlite"
    ledger = PrivacyLedger(path, default_budget=10.0)
    ledger.charge(np.arange(100), 1.0)
    connection = ledger._store._connect()
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {pages + 2}")  # a disk about to be full
    with pytest.raises(LedgerError, match=r"the disk is full \(database or disk is full\); "
                                          "nothing was charged"):
        ledger.charge(np.arange(200_000), 1.0)
    np.testing.assert_array_equal(PrivacyLedger(path).spent([0, 150]), [1.0, 0.0])
    assert len(PrivacyLedger(path).history()) == 1


def test_a_read_only_ledger_is_called_read_only_not_a_foreign_file(tmp_path):
    path = tmp_path / "ledger.sqlite"
    ledger = PrivacyLedger(path, default_budget=10.0)
    ledger.charge([1], 1.0)
    ledger.close()
    store = ledger._store
    store._connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True,
                                        isolation_level=None, check_same_thread=False)
    with pytest.raises(LedgerError, match="is read-only") as raised:
        ledger.charge([1], 1.0)
    assert "is it a privacy ledger file" not in str(raised.value)
    assert ledger.spent([1])[0] == 1.0  # reading still works
