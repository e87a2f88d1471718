"""One conformance suite for every ledger store: memory, SQLite and a real PostgreSQL.

Each test runs on each backend (the ``backend`` fixture of ``conftest.py``; PostgreSQL is
a server the suite starts itself). What is specified: exact charges through model
selection, a refusal that changes nothing, refunds, the per-user audit trail, and, for
the stores processes share, concurrent writers and a writer killed mid-charge.
"""

import math
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings

import joblib
import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold

from skhybrid import HybridMeanEstimator
from skhybrid.accounting import PrivacyLedger
from skhybrid.exceptions import BudgetExceededError, LedgerError, PrivacyLeakWarning


def _state(ledger):
    """Everything a reader can see: users' totals and the whole history."""
    users = ledger.users()
    return ({key: value.tolist() for key, value in users.items()},
            [{k: v for k, v in row.items()} for row in ledger.history()])


def _env():
    return {**os.environ, "PYTHONPATH": os.getcwd()}


# -- charges, refusals and refunds --------------------------------------------------------


def test_charges_add_up_exactly_and_read_back_from_a_new_connection(backend):
    _, target = backend
    ledger = PrivacyLedger(target, default_budget=100.0)
    rng = np.random.default_rng(0)
    ids = np.array([f"user-{i}" for i in rng.permutation(500)])
    amounts = rng.choice([0.1, 0.25, 0.7], size=(12, 500))
    for row in amounts:
        ledger.charge(ids, row)
    expected = [math.fsum(column) for column in amounts.T]
    assert ledger.spent(ids).tolist() == expected
    if target is not None:
        assert PrivacyLedger(target).spent(ids[::-1]).tolist() == expected[::-1]


def test_a_refused_charge_changes_nothing(backend):
    _, target = backend
    ledger = PrivacyLedger(target, default_budget=1.0)
    ledger.set_budget([3], 0.5)
    ledger.charge(np.arange(10), 0.4, description="first")
    before = _state(ledger)
    with pytest.raises(BudgetExceededError, match=r"1 of 10 users \(worst: user 3"):
        ledger.charge(np.arange(10), 0.4)
    assert _state(ledger) == before
    if target is not None:
        assert _state(PrivacyLedger(target)) == before


def test_grid_search_charges_each_user_each_fit_that_included_them(backend):
    _, target = backend
    rng = np.random.default_rng(1)
    n_users = 300
    X = rng.uniform(0, 1, size=(n_users, 1))
    trust = np.where(rng.random(n_users) < 0.4, "tcm", "lm")
    ids = np.array([f"u{i}" for i in rng.permutation(n_users)])
    ledger = PrivacyLedger(target, default_budget=50.0)
    cv = KFold(5, shuffle=True, random_state=3)
    search = GridSearchCV(HybridMeanEstimator(bounds=(0, 1), ledger=ledger, random_state=0),
                          {"epsilon": [0.3, 0.7], "strategy": ["kvh", "pwh"]}, cv=cv,
                          n_jobs=2)
    # An in-memory ledger stays in this process: its workers are threads.
    backend_name = "threading" if target is None else "loky"
    with joblib.parallel_backend(backend_name, n_jobs=2), warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search.fit(X, trust_group=trust, user_id=ids)
    charges = {user: [] for user in ids}
    for train, _ in cv.split(X):
        for params in search.cv_results_["params"]:
            for user in ids[train]:
                charges[user].append(params["epsilon"])
    for user in ids:
        charges[user].append(search.best_params_["epsilon"])
    expected = [math.fsum(charges[user]) for user in ids]
    assert ledger.spent(ids).tolist() == expected
    assert len(ledger.history()) == 5 * 4 + 1


def test_a_refund_gives_back_what_was_charged_and_never_more(backend):
    _, target = backend
    ledger = PrivacyLedger(target, default_budget=(5.0, 1e-5))
    ledger.charge(["a", "b"], 1.5, 1e-6, description="PrivateGridSearchCV reservation",
                  kind="reservation")
    ledger.refund(["a"], 1.0, 1e-6, description="unused reservation")
    epsilon, delta = ledger.spent(["a", "b"], with_delta=True)
    assert epsilon.tolist() == [0.5, 1.5] and delta.tolist() == [0.0, 1e-6]
    before = _state(ledger)
    with pytest.raises(ValueError, match="refund of epsilon 0.6.*user 'a' is more than they "
                                         "were charged.*nothing was refunded"):
        ledger.refund(["b", "a"], 0.6)
    with pytest.raises(ValueError, match="never charged .*user 'c'"):
        ledger.refund(["c"], 0.1)
    assert _state(ledger) == before
    kinds = [(row["kind"], row["description"]) for row in ledger.history()]
    assert kinds == [("reservation", "PrivateGridSearchCV reservation"),
                     ("refund", "unused reservation")]


def test_a_closed_ledger_reconnects_when_used_again(backend):
    _, target = backend
    ledger = PrivacyLedger(target, default_budget=1.0)
    ledger.charge([1, 2], 0.25)
    ledger.close()
    ledger.charge([2], 0.25)
    assert ledger.spent([1, 2]).tolist() == [0.25, 0.5]
    ledger.close()


def test_remaining_reports_epsilon_and_delta(backend):
    _, target = backend
    ledger = PrivacyLedger(target, default_budget=(2.0, 1e-5))
    ledger.charge([1], 0.5, 4e-6)
    epsilon, delta = ledger.remaining([1, 2], with_delta=True)
    assert epsilon.tolist() == [1.5, 2.0]
    np.testing.assert_allclose(delta, [6e-6, 1e-5], rtol=1e-12)


# -- the audit trail -----------------------------------------------------------------------


def test_a_users_audit_trail_lists_their_releases_and_adds_up_to_their_spend(backend):
    _, target = backend
    ledger = PrivacyLedger(target, default_budget=10.0)
    ids = np.arange(1000)
    levels = np.where(ids % 3 == 0, 0.5, 1.0)
    X = np.random.default_rng(2).uniform(0, 1, size=(1000, 1))
    HybridMeanEstimator("kvh", bounds=(0, 1), ledger=ledger).fit(
        X, trust_group=np.where(ids % 3 == 0, "tcm", "lm"), epsilon=levels, user_id=ids)
    ledger.charge(ids[:10], 0.25, description="a survey")
    ledger.refund([3], 0.25)
    trail = ledger.history(user_id=[3, 4, 998])
    assert [(row["user_id"], row["kind"], row["epsilon"]) for row in trail] == [
        (3, "release", 0.5), (3, "release", 0.25), (3, "refund", -0.25),
        (4, "release", 1.0), (4, "release", 0.25), (998, "release", 1.0)]
    assert trail[0]["estimator"] == "HybridMeanEstimator"
    assert trail[0]["params"]["strategy"] == "kvh" and trail[0]["mechanism"] == "laplace"
    assert trail[1]["description"] == "a survey"
    for user in (3, 4, 998):
        assert sum(row["epsilon"] for row in trail if row["user_id"] == user) == \
            ledger.spent([user])[0]
    assert ledger.history(user_id=5000) == []


@pytest.mark.parametrize("kind", ["int", "str"])
def test_one_users_questions_read_only_that_users_rows(shared_backend, kind, monkeypatch):
    """A fresh process asking about a few users (a support desk) answers from their rows of
    the log, never loading every user's totals, with the same numbers as a full load."""
    from skhybrid.accounting import _stores

    monkeypatch.setattr(_stores, "_USER_PART", 64)  # many parts per event at this size
    _, target = shared_backend
    ids = np.random.default_rng(0).permutation(5000) * 3
    ids = ids if kind == "int" else np.char.add("u", ids.astype(str))
    ledger = PrivacyLedger(target, default_budget=(10.0, 1e-5))
    ledger.set_budget(ids[:100], 20.0, 1e-4)
    ledger.charge(ids[:3000], np.where(np.arange(3000) % 3 == 0, 0.5, 0.25))  # codes
    ledger.charge(ids[2000:], 0.125, 1e-6)  # new users; a bitmap
    ledger.charge(ids[::50], noise_multiplier=2.0)  # a few: sorted slots, Gaussian
    ledger.refund(ids[:7], 0.25)
    asked = np.concatenate([ids[[0, 3, 6, 50, 2500, 4999]], ["nobody"] if kind == "str" else [-1]])
    full = PrivacyLedger(target)
    full._load()  # every user's totals, as a process that charges has them
    expected = (full.spent(asked, with_delta=True), full.remaining(asked, with_delta=True))
    full_trail = full.history(user_id=asked)

    fresh = PrivacyLedger(target)
    monkeypatch.setattr(PrivacyLedger, "_load", lambda self: pytest.fail("loaded everyone"))
    np.testing.assert_array_equal(fresh.spent(asked, with_delta=True), expected[0])
    np.testing.assert_array_equal(fresh.remaining(asked, with_delta=True), expected[1])
    assert fresh.history(user_id=asked) == full_trail
    trail = fresh.history(user_id=ids[0])
    assert [(row["kind"], row["epsilon"], row["noise_multiplier"]) for row in trail] == [
        ("release", 0.5, None), ("release", 0.0, 2.0), ("refund", -0.25, None)]
    assert fresh._accounts.n == 0
    with pytest.raises(TypeError, match="user ids are"):
        fresh.spent([1] if kind == "str" else ["a"])


def test_the_audit_trail_exports_to_a_frame_and_csv(backend, tmp_path):
    pd = pytest.importorskip("pandas")
    _, target = backend
    ledger = PrivacyLedger(target, default_budget=10.0)
    ledger.charge(["x", "y"], [0.5, 1.0], release={"estimator": "E", "params": {"k": 2}})
    frame = ledger.history(user_id=["y", "x"], as_frame=True)
    assert frame["user_id"].tolist() == ["y", "x"] and frame["epsilon"].tolist() == [1.0, 0.5]
    frame.to_csv(tmp_path / "trail.csv", index=False)
    back = pd.read_csv(tmp_path / "trail.csv")
    assert back["estimator"].tolist() == ["E", "E"] and back["params"][0] == '{"k": 2}'
    releases = ledger.history(as_frame=True)
    assert releases["n_users"].tolist() == [2]


def test_a_release_of_a_million_users_is_stored_in_about_a_bit_per_user(tmp_path):
    ledger = PrivacyLedger(tmp_path / "l.sqlite", default_budget=np.inf)
    ids = np.random.default_rng(0).permutation(1_000_000)
    ledger.charge(ids, 1.0)
    ledger.charge(ids[: 900_000], np.where(ids[: 900_000] % 2 == 0, 0.5, 1.0))
    ledger.charge(ids[: 900_000], 0.5)
    connection = __import__("sqlite3").connect(tmp_path / "l.sqlite")
    sizes = [row[0] for row in connection.execute(
        "SELECT length(payload) FROM events WHERE seq > 1 ORDER BY seq")]
    connection.close()
    # A bitmap over the users (1e6 / 8 bytes), plus one bit-ish of codes per member.
    assert sizes[1] < 200_000 and sizes[0] < 400_000, sizes


# -- processes sharing a ledger ------------------------------------------------------------


def _charge_repeatedly(target, users, attempts, queue):
    ledger = PrivacyLedger(target, timeout=60.0)
    succeeded = 0
    for _ in range(attempts):
        try:
            ledger.charge(users, 1.0)
            succeeded += 1
        except BudgetExceededError:
            pass
    queue.put((tuple(users), succeeded))


def test_concurrent_processes_neither_lose_nor_double_charges(shared_backend):
    _, target = shared_backend
    PrivacyLedger(target, default_budget=12.0)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    groups = [list(range(start, start + 60)) for start in (0, 20, 40, 60)]
    processes = [context.Process(target=_charge_repeatedly, args=(target, users, 8, queue))
                 for users in groups]
    for process in processes:
        process.start()
    results = [queue.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    expected = np.zeros(120)
    for users, succeeded in results:
        expected[list(users)] += succeeded
    ledger = PrivacyLedger(target)
    np.testing.assert_array_equal(ledger.spent(np.arange(120)), expected)
    assert expected.max() <= 12.0
    assert len(ledger.history()) == sum(succeeded for _, succeeded in results)


def test_a_process_killed_while_charging_leaves_whole_releases_only(shared_backend):
    _, target = shared_backend
    n_users = 300_000
    PrivacyLedger(target, default_budget=np.inf)
    script = textwrap.dedent(f"""
        import numpy as np
        from skhybrid.accounting import PrivacyLedger
        ledger = PrivacyLedger({target!r})
        ids = np.random.default_rng(0).permutation({n_users})
        ledger.charge(ids, 0.5)
        print("ready", flush=True)
        while True:
            ledger.charge(ids, 0.5)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             env=_env())
    assert child.stdout.readline().strip() == b"ready"
    time.sleep(1.5)
    child.send_signal(signal.SIGKILL)
    child.wait()
    ledger = PrivacyLedger(target)
    n_releases = len(ledger.history())
    assert n_releases >= 2
    np.testing.assert_array_equal(ledger.spent(np.arange(n_users)),
                                  np.full(n_users, 0.5 * n_releases))


def test_a_long_ledger_is_checkpointed_and_reopens_to_the_same_totals(shared_backend):
    _, target = shared_backend
    ledger = PrivacyLedger(target, default_budget=np.inf)
    ids = np.arange(30_000)
    for k in range(8):
        ledger.charge(ids[k::2], 0.1 * (k + 1))
    expected = ledger.spent(ids)
    first = PrivacyLedger(target)  # replays 120,000 memberships: writes a checkpoint
    np.testing.assert_array_equal(first.spent(ids), expected)
    assert first._store.latest_checkpoint()[0] == 8
    first.charge(ids[:5], 1.0)
    second = PrivacyLedger(target)  # starts from the checkpoint, replays one event
    np.testing.assert_array_equal(second.spent(ids), first.spent(ids))
    assert second.spent(ids[:5]).tolist() == [math.fsum([0.1 * (k + 1) for k in range(8)
                                                         if k % 2 == i % 2 and k <= i] + [1.0])
                                              for i in range(5)]
    assert len(second.history()) == 9


def test_a_writer_holding_the_lock_makes_others_wait_then_fail_clearly(shared_backend):
    name, target = shared_backend
    ledger = PrivacyLedger(target, default_budget=1.0, timeout=0.5)
    ledger.charge([1], 0.1)
    holder = PrivacyLedger(target)
    with holder._store.transaction(write=True):
        with pytest.raises(LedgerError, match="locked by another .*nothing was charged"):
            ledger.charge([1], 0.1)
    assert ledger.spent([1])[0] == 0.1


def test_payloads_past_one_value_are_stored_in_parts(shared_backend, monkeypatch):
    """PostgreSQL's bytea and SQLite's blobs stop at 1 GB (1e8 new users in one release,
    a checkpoint of 1e8 totals): longer payloads are stored in parts, here of 64 bytes."""
    from skhybrid.accounting import _stores

    monkeypatch.setattr(_stores, "_PART", 64)
    _, target = shared_backend
    ledger = PrivacyLedger(target, default_budget=np.inf)
    ids = np.random.default_rng(0).permutation(30_000)
    for k in range(8):  # long enough for a checkpoint (as the test above)
        ledger.charge(ids[k::2], 0.25 * (k + 1))
    expected = ledger.spent(ids)
    store = ledger._store
    with store.transaction():
        n_parts = store._execute("SELECT COUNT(*) FROM {p}parts").fetchone()[0]
    assert n_parts > 8  # the test stores in parts at all
    reopened = PrivacyLedger(target)  # replays the events: writes a checkpoint in parts
    np.testing.assert_array_equal(reopened.spent(ids), expected)
    again = PrivacyLedger(target)  # starts from that checkpoint
    np.testing.assert_array_equal(again.spent(ids), expected)
    assert again._store.latest_checkpoint()[0] == 8


def test_a_psycopg_connection_is_a_ledger_and_pickles_as_its_address(postgres_url):
    import pickle

    import psycopg

    with psycopg.connect(postgres_url) as connection:  # the caller's, closed by the caller
        ledger = PrivacyLedger(connection, default_budget=2.0)
        ledger.charge(["a"], 0.5)
        assert "password" not in repr(ledger) and ledger.path.startswith("dbname=")
        copy = pickle.loads(pickle.dumps(ledger))
        copy.charge(["a"], 0.25)
        assert ledger.spent(["a"]).tolist() == [0.75]


def test_a_ledger_file_of_an_older_format_is_a_clear_error(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    connection.execute("INSERT INTO meta VALUES ('format', 'skhybrid-privacy-ledger-1')")
    connection.commit()
    connection.close()
    with pytest.raises(LedgerError, match="format 'skhybrid-privacy-ledger-1'; this version "
                                          "reads 'skhybrid-privacy-ledger-3'"):
        PrivacyLedger(path)


def test_a_format_2_ledger_is_read_and_marked_format_3(tmp_path):
    """Format 2 kept new users in the events' payloads: still read (by a full load, not by
    the few users' path, which needs every event's users in the users table), and marked
    format 3 so that a version reading only format 2 refuses it rather than misreads it."""
    path = tmp_path / "ledger.sqlite"
    PrivacyLedger(path, default_budget=5.0).charge([3, 1, 2], 1.0)
    connection = sqlite3.connect(path)
    connection.execute("UPDATE meta SET value = 'skhybrid-privacy-ledger-2' WHERE key = 'format'")
    connection.execute("DELETE FROM meta WHERE key = 'users'")
    connection.commit()
    connection.close()
    ledger = PrivacyLedger(path)
    np.testing.assert_array_equal(ledger.spent([1, 3, 9]), [1.0, 1.0, 0.0])
    assert ledger._loaded  # the full load, not the few users' path
    with ledger._store.transaction():
        assert ledger._store.get_meta("format") == "skhybrid-privacy-ledger-3"


def test_a_dropped_postgres_ledger_closes_its_own_connection_not_the_callers(postgres_url):
    """psycopg warns of a connection collected open: the ledger closes the one it opened
    when it is collected; a connection the caller gave stays open, the caller's."""
    import gc
    import warnings

    import psycopg

    ledger = PrivacyLedger(postgres_url, default_budget=2.0)
    ledger.charge(["a"], 0.5)
    own = ledger._store._connection
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        del ledger
        gc.collect()
    assert own.closed
    with psycopg.connect(postgres_url) as connection:
        ledger = PrivacyLedger(connection, default_budget=2.0)
        ledger.charge(["b"], 0.5)
        del ledger
        gc.collect()
        assert not connection.closed
