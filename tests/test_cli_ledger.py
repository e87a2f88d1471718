"""The ``skhybrid ledger`` command: budgets, one user's account and audit trail, export."""

import csv
import json

import numpy as np
import pytest

from skhybrid._cli import main
from skhybrid.accounting import PrivacyLedger


def _users_csv(tmp_path):
    path = tmp_path / "users.csv"
    path.write_text("id,salary,group\n" + "".join(
        f"{i},{10 * i},{'tcm' if i % 2 else 'lm'}\n" for i in range(1, 9)))
    return path


def _estimate(path, ledger, *extra):
    return main(["estimate", str(path), "--value", "salary", "--trust", "group", "--epsilon",
                 "1", "--bounds", "0", "100", "--estimator", "kvh", "--ledger", str(ledger),
                 "--user-id", "id", *extra])


def test_set_budget_for_users_then_look_one_up_with_their_audit_trail(tmp_path, capsys):
    ledger = tmp_path / "budget.sqlite"
    assert main(["ledger", str(ledger), "set-budget", "--user", "1", "2", "3", "4", "5", "6",
                 "7", "8", "--epsilon", "3", "--delta", "1e-6"]) == 0
    assert "budgets set for 8 users" in capsys.readouterr().out
    assert _estimate(_users_csv(tmp_path), ledger) == 0
    capsys.readouterr()
    assert main(["ledger", str(ledger), "user", "3"]) == 0
    out = capsys.readouterr().out
    assert "user 3: spent epsilon 1 (delta 0); remaining 2 (delta 1e-06); 1 releases" in out
    assert "HybridMeanEstimator (laplace, release): epsilon 1" in out
    assert main(["ledger", str(ledger), "--json", "user", "3", "99"]) == 0
    users = json.loads(capsys.readouterr().out)
    assert [user["spent_epsilon"] for user in users] == [1.0, 0.0]
    assert users[0]["releases"][0]["params"]["strategy"] == "kvh"
    assert users[1]["remaining_epsilon"] is None  # no budget and no default


def test_set_budget_from_a_csv_of_ids_and_budgets(tmp_path, capsys):
    budgets = tmp_path / "budgets.csv"
    budgets.write_text("user,eps,dlt\nalice,2.5,0\nbob,inf,1e-5\n")
    ledger = tmp_path / "l.sqlite"
    assert main(["ledger", str(ledger), "set-budget", "--csv", str(budgets), "--id-column",
                 "user", "--epsilon", "eps", "--delta", "dlt"]) == 0
    epsilon, delta = PrivacyLedger(ledger).remaining(["alice", "bob"], with_delta=True)
    assert epsilon.tolist() == [2.5, np.inf] and delta.tolist() == [0.0, 1e-5]


def test_a_bad_budget_names_its_line_and_creates_no_ledger(tmp_path, capsys):
    budgets = tmp_path / "budgets.csv"
    budgets.write_text("id,eps\n1,2\n2,-1\n")
    ledger = tmp_path / "l.sqlite"
    assert main(["ledger", str(ledger), "set-budget", "--csv", str(budgets),
                 "--epsilon", "eps"]) == 2
    err = capsys.readouterr().err
    assert "--epsilon column 'eps' must be >= 0 (inf for no limit); got '-1' (line 3)" in err
    assert not ledger.exists()


def test_a_refused_run_speaks_the_command_lines_words_and_leaves_no_file(tmp_path, capsys):
    ledger = tmp_path / "new.sqlite"
    assert _estimate(_users_csv(tmp_path), ledger) == 2  # no budgets, no --default-budget
    err = capsys.readouterr().err
    assert f"set their budget with 'skhybrid ledger {ledger} set-budget' or pass " \
           "--default-budget EPS" in err
    assert "set_budget" not in err and "default_budget" not in err
    assert list(tmp_path.iterdir()) == [tmp_path / "users.csv"]


def test_reading_commands_never_create_a_ledger(tmp_path, capsys):
    for action in ([], ["user", "1"], ["export", str(tmp_path / "out.csv")]):
        assert main(["ledger", str(tmp_path / "absent.sqlite"), *action]) == 2
        assert "no ledger at" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_export_writes_users_releases_and_audit_trails(tmp_path, capsys):
    ledger = tmp_path / "budget.sqlite"
    path = _users_csv(tmp_path)
    _estimate(path, ledger, "--default-budget", "4")
    _estimate(path, ledger)
    PrivacyLedger(ledger).refund([2], 0.5, description="correction")

    def read(name):
        with open(tmp_path / name, newline="") as stream:
            return list(csv.DictReader(stream))

    assert main(["ledger", str(ledger), "export", str(tmp_path / "users.csv")]) == 0
    users = read("users.csv")
    assert [row["user_id"] for row in users] == [str(i) for i in range(1, 9)]
    assert users[1]["spent_epsilon"] == "1.5" and users[0]["remaining_epsilon"] == "2.0"
    assert main(["ledger", str(ledger), "export", str(tmp_path / "r.csv"), "--releases"]) == 0
    assert [row["kind"] for row in read("r.csv")] == ["release", "release", "refund"]
    assert main(["ledger", str(ledger), "export", str(tmp_path / "t.csv"), "--user", "2"]) == 0
    trail = read("t.csv")
    assert [(row["kind"], float(row["epsilon"])) for row in trail] == [
        ("release", 1.0), ("release", 1.0), ("refund", -0.5)]
    assert json.loads(trail[0]["params"])["strategy"] == "kvh"
    # OUT.csv after the ids: --user takes the words after it, but not the last one.
    assert main(["ledger", str(ledger), "export", "--user", "2", "3",
                 str(tmp_path / "t2.csv")]) == 0
    assert [row["user_id"] for row in read("t2.csv")] == ["2", "2", "2", "3", "3"]
    assert main(["ledger", str(ledger), "export", "--user", "2"]) == 2
    assert "export needs OUT.csv" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["set-budget", "--epsilon", "1"], "give either --user ID"),
    (["set-budget", "--user", "1", "--epsilon", "x"], "--epsilon must be a number; got 'x'"),
    (["set-budget", "--user", "1", "--epsilon", "1", "--delta", "1"],
     "--delta must be in [0, 1); got '1'"),
])
def test_set_budget_options_are_checked(tmp_path, capsys, args, message):
    assert main(["ledger", str(tmp_path / "l.sqlite"), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "l.sqlite").exists()
