"""The ``skhybrid`` command line: help, demo, estimate, reproduce, and its errors.

Tests through ``python -m skhybrid`` in a new interpreter take seconds each (imports), so
all but one are marked slow; the in-process tests call the same ``main``.
"""

import csv
import importlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import skhybrid
from skhybrid._cli import main
from skhybrid.datasets import load_salaries
from skhybrid.reproduce import REPRODUCTIONS

REPOSITORY = Path(skhybrid.__file__).resolve().parents[1]
DEMO_ESTIMATORS = ["kvh", "pwh", "naive", "tcm_only", "full_lm", "lm_only", "adpm"]
ESTIMATE_NAMES = ["kvh", "pwh", "naive", "tcm_only", "full_lm", "lm_only", "adpm", "uni",
                  "propdpm", "ldpe", "stretching", "pdp_sample", "mixed_mean"]
NUMBER = r"-?[\d,]+(?:\.\d+)?"


def run_cli(*args, cwd):
    """Run ``python -m skhybrid ARGS`` on the package under test, without a display."""
    env = dict(os.environ, MPLBACKEND="Agg")
    # The package under test, not whatever copy is installed in site-packages.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "skhybrid", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=600,
    )


@pytest.fixture(scope="module")
def users_csv(tmp_path_factory):
    """2,000 users: values uniform on [0, 100], 30% tcm, epsilon 1 (tcm) or 2 (lm)."""
    rng = np.random.default_rng(0)
    values = rng.uniform(0, 100, size=2000)
    trust = np.where(rng.random(2000) < 0.3, "tcm", "lm")
    path = tmp_path_factory.mktemp("data") / "users.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["salary", "group", "eps"])
        for value, group in zip(values, trust):
            writer.writerow([value, group, 1.0 if group == "tcm" else 2.0])
    return path, values, int(np.count_nonzero(trust == "tcm"))


# -- help ---------------------------------------------------------------------------------


HELP = {
    "demo": ["--output", "--epsilon", "--tcm-fraction", "--seed", "SYNTHETIC", "skhybrid[plot]"],
    "estimate": ["--value", "--trust", "--epsilon", "--bounds", "--estimator", "--variance",
                 "--json", "--seed", "--ledger", "--user-id", "--default-budget", *ESTIMATE_NAMES],
    "ledger": ["FILE", "--releases", "--json"],
    "reproduce": ["--list", "--quick", "--output", "--seed", "--no-progress", "all"],
}


def test_program_help_lists_every_command(tmp_path):
    completed = run_cli("--help", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("usage: skhybrid ")
    for word in [*HELP, "--version", "examples:"]:
        assert word in completed.stdout, f"{word!r} missing from the help"


@pytest.mark.parametrize("command", list(HELP))
def test_command_help_documents_every_option(command, capsys):
    # In-process: the same parser as `python -m skhybrid COMMAND --help`, without the
    # seconds of a new interpreter per command.
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: skhybrid {command} ")
    for word in HELP[command]:
        assert word in out, f"{word!r} missing from the help of {command}"


def test_console_script_entry_point_is_main():
    pyproject = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())
    module, function = pyproject["project"]["scripts"]["skhybrid"].split(":")
    entry_point = getattr(importlib.import_module(module), function)
    assert entry_point is main
    with pytest.raises(SystemExit) as exit_info:
        entry_point(["--help"])
    assert exit_info.value.code == 0


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    assert "COMMAND" in capsys.readouterr().err


# -- demo ---------------------------------------------------------------------------------


@pytest.mark.slow  # a new interpreter plus seven fits on 252,540 users
def test_demo_prints_every_estimator_and_writes_the_csv_and_plot(tmp_path):
    completed = run_cli("demo", "--seed", "0", "--output", tmp_path / "out", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert "SYNTHETIC" in out and "--seed 0" in out and "simulation" in out

    salaries = load_salaries()
    true_mean = salaries.data.mean()
    printed = {}
    for name in DEMO_ESTIMATORS:
        match = re.search(
            rf"^{name}\s.*?\s({NUMBER})\s+({NUMBER})\s+({NUMBER})\s+({NUMBER})\s+({NUMBER})"
            rf"\s+([+-][\d,]+)\s*$",
            out, re.M,
        )
        assert match, f"no row for {name} in:\n{out}"
        printed[name] = [float(value.replace(",", "")) for value in match.groups()]
    for name, (estimate, expected_rmse, *_, error) in printed.items():
        # Seeded noise: each estimate is within 5 expected RMSEs of the data's mean.
        assert abs(estimate - true_mean) < 5 * expected_rmse, name
        assert error == pytest.approx(estimate - true_mean, abs=1.5)

    with open(tmp_path / "out" / "skhybrid-demo.csv", newline="") as handle:
        rows = {row["estimator"]: row for row in csv.DictReader(handle)}
    assert list(rows) == DEMO_ESTIMATORS
    for name, (estimate, expected_rmse, vs_tcm, vs_full, vs_better, _) in printed.items():
        row = rows[name]
        assert float(row["improvement_vs_better"]) == pytest.approx(vs_better, abs=1e-3)
        assert vs_better == pytest.approx(min(vs_tcm, vs_full), abs=2e-3)
        assert float(row["estimate"]) == pytest.approx(estimate, abs=0.5)
        assert float(row["expected_rmse"]) == pytest.approx(expected_rmse, abs=0.5)
        assert float(row["expected_rmse"]) ** 2 == pytest.approx(float(row["expected_mse"]))
        assert float(row["improvement_vs_tcm_only"]) == pytest.approx(vs_tcm, abs=1e-3)
        assert float(row["improvement_vs_full_lm"]) == pytest.approx(vs_full, abs=1e-3)
    # The improvements are ratios of expected MSEs; the baselines' own are 1, and KVH's
    # weight minimises the expected MSE, so it beats both baselines (R >= 1, Def. 3.5).
    assert float(rows["tcm_only"]["improvement_vs_tcm_only"]) == 1.0
    assert float(rows["full_lm"]["improvement_vs_full_lm"]) == 1.0
    assert float(rows["kvh"]["improvement_vs_tcm_only"]) >= 1.0
    assert float(rows["kvh"]["improvement_vs_full_lm"]) >= 1.0
    # The default population sits near the crossing of the baselines: the demo's point.
    assert float(rows["kvh"]["improvement_vs_better"]) > 1.5
    assert "Theory (closed-form" in out and "saturates" in out

    png = tmp_path / "out" / "skhybrid-demo.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_without_seed_uses_secure_randomness(tmp_path, capsys):
    assert main(["demo", "--output", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "secure randomness" in out and "real private releases" in out


@pytest.mark.parametrize("option, value", [("--tcm-fraction", "0"), ("--tcm-fraction", "1.5"),
                                           ("--epsilon", "-1")])
def test_demo_rejects_a_bad_population(option, value, tmp_path, capsys):
    assert main(["demo", option, value, "--output", str(tmp_path)]) == 2
    assert option in capsys.readouterr().err


# -- estimate -----------------------------------------------------------------------------


def _estimate_args(path, *flags, **options):
    """``estimate`` arguments for the users' CSV: KVH at epsilon 1 with the known variance.

    ``options`` replace the defaults, keyed by option name without dashes.
    """
    values = {"value": "salary", "trust": "group", "epsilon": "1", "bounds": ["0", "100"],
              "estimator": "kvh", "variance": str(100**2 / 12), **options}
    args = ["estimate", str(path)]
    for option, value in values.items():
        args += [f"--{option}", *([value] if isinstance(value, str) else value)]
    return args + list(flags)


@pytest.mark.slow  # a new interpreter: seconds of imports
def test_estimate_prints_an_estimate_within_its_expected_error(users_csv, tmp_path):
    path, values, n_tcm = users_csv
    completed = run_cli(*_estimate_args(path, "--seed", "3"), cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    estimate = float(re.search(r"^estimate:\s+(\S+)", completed.stdout, re.M).group(1))
    rmse = float(re.search(r"^expected RMSE:\s+(\S+)", completed.stdout, re.M).group(1))
    assert f"{n_tcm:,} tcm, {2000 - n_tcm:,} lm" in completed.stdout
    assert abs(estimate - values.mean()) < 4 * rmse


def test_estimate_json_reports_the_estimate_and_its_context(users_csv, capsys):
    path, values, n_tcm = users_csv
    assert main(_estimate_args(path, "--seed", "4", "--json")) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["estimator"] == "kvh"
    assert (report["n_users"], report["n_tcm"], report["n_lm"]) == (2000, n_tcm, 2000 - n_tcm)
    assert report["epsilon"] == 1.0 and report["epsilon_column"] is None
    assert report["bounds"] == [0.0, 100.0] and report["seeded"] is True
    assert report["expected_rmse"] ** 2 == pytest.approx(report["expected_mse"])
    assert abs(report["estimate"] - values.mean()) < 4 * report["expected_rmse"]


def test_estimate_takes_per_user_epsilon_from_a_column(users_csv, capsys):
    path, values, _ = users_csv
    assert main(_estimate_args(path, "--seed", "5", "--json", epsilon="eps",
                               estimator="adpm")) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["epsilon"] is None and report["epsilon_column"] == "eps"
    assert abs(report["estimate"] - values.mean()) < 4 * report["expected_rmse"]


def test_estimate_without_trust_column_treats_everyone_as_tcm(users_csv, capsys):
    path, values, _ = users_csv
    args = _estimate_args(path, "--seed", "6", "--json", epsilon="eps", estimator="mixed_mean")
    del args[args.index("--trust") : args.index("--trust") + 2]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["n_tcm"], report["n_lm"]) == (2000, 0)
    assert abs(report["estimate"] - values.mean()) < 4 * report["expected_rmse"]


@pytest.mark.parametrize(
    "file_text, options, message",
    [
        (None, {}, "no such file"),
        ("", {}, "is empty"),
        ("salary,group\n1,tcm\nabc,lm\n", {}, "line 3: column 'salary' must be a finite number"),
        ("salary,group\n1,tcm\n2,maybe\n", {}, "got 'maybe'"),
        ("salary,group\n", {}, "no data rows"),
        ("salary,group\n1,tcm\n", {"value": "wage"}, "no column 'wage'"),
        ("salary,group\n1,tcm\n", {"bounds": ["9", "1"]}, "--bounds must be two finite"),
        ("salary,group\n1,tcm\n", {"bounds": ["0", "inf"]}, "--bounds must be two finite"),
        ("salary,group\n1,tcm\n", {"epsilon": "often"}, "neither a number nor a column"),
        ("salary,group\n1,tcm\n", {"epsilon": "0"}, "--epsilon must be a finite number > 0"),
        ("salary,group\n1,tcm\n", {"epsilon": "inf"}, "--epsilon must be a finite number > 0"),
        ("salary,group\n1,tcm\n", {"estimator": "best"}, "choose one of: kvh, pwh"),
        ("salary,group\n1,tcm\n2,lm\n", {"estimator": "pdp_sample"},
         "trusted-curator estimator"),
    ],
    ids=["missing-file", "empty-file", "non-numeric", "bad-trust", "no-rows",
         "missing-column", "bounds-reversed", "bounds-infinite", "bad-epsilon-column",
         "non-positive-epsilon", "infinite-epsilon", "unknown-estimator",
         "estimator-not-for-lm-users"],
)
def test_estimate_errors_exit_2_with_a_message(file_text, options, message, tmp_path, capsys):
    path = tmp_path / "input.csv"
    if file_text is not None:
        path.write_text(file_text)
    assert main(_estimate_args(path, **options)) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("skhybrid estimate: error: ")
    assert message in captured.err
    assert captured.out == ""


@pytest.mark.slow  # a new interpreter: seconds of imports
def test_a_zero_epsilon_is_not_told_that_inf_is_allowed_where_it_is_not(tmp_path, capsys):
    path = tmp_path / "input.csv"
    path.write_text("salary,group\n1,tcm\n")
    assert main(_estimate_args(path, epsilon="0")) == 2
    assert "inf: public data" not in capsys.readouterr().err


@pytest.mark.parametrize("bounds", [["-1e3", "1e3"], ["-0.5e2", "100"], ["-5", "100"]])
def test_estimate_reads_negative_bounds_in_any_float_spelling(bounds, users_csv, capsys):
    path, _, _ = users_csv
    assert main(_estimate_args(path, "--seed", "4", "--json", bounds=bounds)) == 0
    assert json.loads(capsys.readouterr().out)["bounds"] == [float(b) for b in bounds]


def test_infinite_bounds_get_the_bounds_message_not_an_argument_count(users_csv, capsys):
    path, _, _ = users_csv
    assert main(_estimate_args(path, bounds=["-inf", "inf"])) == 2
    assert "--bounds must be two finite numbers LO < HI; got -inf inf" in capsys.readouterr().err


def test_errors_exit_2_without_a_traceback(tmp_path):
    completed = run_cli(*_estimate_args(tmp_path / "missing.csv"), cwd=tmp_path)
    assert completed.returncode == 2
    assert "no such file" in completed.stderr
    assert "Traceback" not in completed.stderr


# -- reproduce ----------------------------------------------------------------------------


@pytest.mark.slow  # a new interpreter: seconds of imports
def test_reproduce_list_names_every_reproduction(tmp_path):
    completed = run_cli("reproduce", "--list", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    listed = [line.split()[0] for line in completed.stdout.splitlines() if line.strip()]
    assert listed == list(REPRODUCTIONS) or (not REPRODUCTIONS and "no reproductions" in
                                             completed.stdout)


def test_reproduce_unknown_name_exits_2(capsys):
    assert main(["reproduce", "no-such-figure", "--no-progress"]) == 2
    assert "unknown reproduction 'no-such-figure'" in capsys.readouterr().err


def test_reproduce_without_name_exits_2(capsys):
    assert main(["reproduce"]) == 2
    assert "--list" in capsys.readouterr().err


@pytest.mark.slow
def test_quick_reproduction_writes_csv_and_png(tmp_path):
    name = "avent-corollary4.4"
    completed = run_cli("reproduce", name, "--quick", "--no-progress", "--output",
                        tmp_path / "out", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith(f"== {name}: ")
    assert (tmp_path / "out" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    with open(tmp_path / "out" / f"{name}.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert len(rows) > 1 and all(len(row) == len(rows[0]) for row in rows)


# -- estimate: CSV as spreadsheets write it, messages in the user's words (issue 14, §3) --


def _estimate_json(path, capsys, *flags, **options):
    assert main(_estimate_args(path, "--seed", "1", "--json", *flags, **options)) == 0, (
        capsys.readouterr().err
    )
    return json.loads(capsys.readouterr().out)


def test_estimate_reads_utf8_with_a_byte_order_mark(tmp_path, capsys):
    # Excel's "CSV UTF-8" starts with a BOM, which must not end up in the first name.
    path = tmp_path / "excel.csv"
    path.write_bytes("salary,group\r\n10,tcm\r\n20,lm\r\n30,tcm\r\n".encode("utf-8-sig"))
    assert _estimate_json(path, capsys)["n_users"] == 3


@pytest.mark.parametrize("delimiter", [";", "\t", "|"])
def test_estimate_sniffs_the_delimiter(delimiter, tmp_path, capsys):
    path = tmp_path / "users.csv"
    rows = ["salary", "group"], ["10", "tcm"], ["20.5", "lm"], ["30", "tcm"]
    path.write_text("\n".join(delimiter.join(row) for row in rows) + "\n")
    report = _estimate_json(path, capsys)
    assert (report["n_users"], report["n_tcm"]) == (3, 2)


def test_estimate_takes_sep_and_quoted_fields(tmp_path, capsys):
    # A decimal comma in a quoted field, with ";" as the delimiter given by --sep.
    path = tmp_path / "users.csv"
    path.write_text('salary;group;note\n10;tcm;"a; b"\n20;lm;"two\nlines"\n30;tcm;x\n')
    report = _estimate_json(path, capsys, "--sep", ";")
    assert report["n_users"] == 3
    path.write_text("salary\tgroup\n10\ttcm\n20\tlm\n")
    assert _estimate_json(path, capsys, "--sep", "tab")["n_users"] == 2


def test_estimate_line_numbers_count_file_lines(tmp_path, capsys):
    # A quoted field spanning lines and a blank line: the bad value is on line 6.
    path = tmp_path / "users.csv"
    path.write_text('salary,group,note\n10,tcm,"one\ntwo"\n\n20,lm,x\nabc,tcm,y\n')
    assert main(_estimate_args(path)) == 2
    assert "line 6: column 'salary' must be a finite number; got 'abc'" in (
        capsys.readouterr().err
    )


def test_estimate_accepts_one_and_zero_trust_columns(tmp_path, capsys):
    path = tmp_path / "users.csv"
    path.write_text("salary,group\n10,1\n20,0\n30,1\n40,True\n")
    assert _estimate_json(path, capsys)["n_tcm"] == 3
    path.write_text("salary,group\n10,1\n20,2\n")
    assert main(_estimate_args(path)) == 2
    assert "line 3: column 'group' must be tcm, lm, true, false, 1 or 0" in (
        capsys.readouterr().err
    )


def test_estimate_library_errors_speak_in_option_names_and_lines(tmp_path, capsys):
    # The library says "PDPSampleEstimator ... at index 1"; the command says what the
    # user typed and the file's line.
    path = tmp_path / "users.csv"
    path.write_text("salary,group\n1,tcm\n2,lm\n")
    assert main(_estimate_args(path, estimator="pdp-sample")) == 2
    err = capsys.readouterr().err
    assert "--estimator pdp-sample" in err and "line 3" in err
    assert "PDPSampleEstimator" not in err and "index" not in err


def test_estimate_messages_carry_no_numpy_reprs(tmp_path, capsys):
    path = tmp_path / "users.csv"
    path.write_text("salary,group,eps\n1,tcm,1\n2,lm,-2\n")
    for options in ({"epsilon": "eps", "estimator": "adpm"}, {"trust": "salary"}):
        assert main(_estimate_args(path, **options)) == 2
        err = capsys.readouterr().err
        assert not re.search(r"np\.\w+\(", err), err  # np.float64(-2.0), np.str_('x')


def _default_estimate(path, capsys, **options):
    """``estimate`` without ``--estimator`` (nor ``--variance``): the JSON report."""
    args = _estimate_args(path, "--seed", "2", "--json", **options)
    for option in ("--estimator", "--variance"):
        del args[args.index(option) : args.index(option) + 2]
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_estimate_names_follow_the_library_and_default_to_auto(users_csv, capsys, tmp_path):
    path, values, _ = users_csv
    # One convention (the library's strategy names); hyphens are forgiven.
    for name in ("tcm_only", "tcm-only", "TCM_ONLY"):
        assert _estimate_json(path, capsys, estimator=name)["estimator"] == name
    # One epsilon per trust group: kvh with a private variance (the library's default).
    report = _default_estimate(path, capsys, epsilon="eps")
    assert report["estimator"] == "kvh"
    assert abs(report["estimate"] - values.mean()) < 4 * report["expected_rmse"]
    # An epsilon per user: adpm, which takes any.
    varied = tmp_path / "varied.csv"
    varied.write_text("salary,group,eps\n" + "".join(
        f"{value},{'tcm' if i % 3 == 0 else 'lm'},{1 + i % 5}\n" for i, value in enumerate(values)))
    report = _default_estimate(varied, capsys, epsilon="eps")
    assert report["estimator"] == "adpm"
    assert abs(report["estimate"] - values.mean()) < 4 * report["expected_rmse"]


def test_estimate_clamp_keeps_the_estimate_within_the_bounds(tmp_path, capsys):
    path = tmp_path / "users.csv"
    path.write_text("salary,group\n" + "".join(f"{v},tcm\n" for v in (1, 99, 50)))
    for seed in range(10):
        args = _estimate_args(path, "--seed", str(seed), "--json", "--clamp",
                              epsilon="0.001", estimator="tcm_only")
        assert main(args) == 0
        assert 0 <= json.loads(capsys.readouterr().out)["estimate"] <= 100


# -- the privacy ledger: estimate --ledger and the ledger command ---------------------------


def _ledger_csv(tmp_path):
    path = tmp_path / "users.csv"
    path.write_text("id,salary,group\n" + "".join(
        f"{i},{10 * i},{'tcm' if i % 2 else 'lm'}\n" for i in range(1, 9)))
    return path


def _estimate_with_ledger(path, ledger, *extra):
    return main(["estimate", str(path), "--value", "salary", "--trust", "group", "--epsilon",
                 "1", "--bounds", "0", "100", "--estimator", "kvh", "--ledger", str(ledger),
                 "--user-id", "id", *extra])


def test_estimate_charges_the_ledger_and_refuses_when_a_budget_is_spent(tmp_path, capsys):
    from skhybrid.accounting import PrivacyLedger

    path, ledger = _ledger_csv(tmp_path), tmp_path / "budget.sqlite"
    assert _estimate_with_ledger(path, ledger, "--default-budget", "2") == 0
    out = capsys.readouterr().out
    # What each user was charged, and what they have left.
    assert re.search(r"^charged:\s+8 users epsilon 1 \(in ", out, re.M)
    assert re.search(r"^remaining:\s+epsilon 1 to 1 per user", out, re.M)
    assert _estimate_with_ledger(path, ledger) == 0
    capsys.readouterr()
    assert _estimate_with_ledger(path, ledger) == 2
    err = capsys.readouterr().err
    assert "refused: this release would exceed the privacy budget of 8 of 8 users" in err
    # Integer-looking ids are integers, as the library's own callers would pass them.
    np.testing.assert_array_equal(PrivacyLedger(ledger).spent(np.arange(1, 9)), np.full(8, 2.0))


def test_ledger_command_summarises_users_spends_and_releases(tmp_path, capsys):
    path, ledger = _ledger_csv(tmp_path), tmp_path / "budget.sqlite"
    _estimate_with_ledger(path, ledger, "--default-budget", "4")
    _estimate_with_ledger(path, ledger)
    capsys.readouterr()
    assert main(["ledger", str(ledger)]) == 0
    out = capsys.readouterr().out
    assert "users:         8, of whom 0 have exhausted their budget" in out
    assert "epsilon spent: min 2, median 2, 90% 2, max 2" in out
    assert out.count("HybridMeanEstimator (laplace): 8 at epsilon 1") == 2
    assert main(["ledger", str(ledger), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_users"] == 8 and summary["n_releases"] == 2


@pytest.mark.parametrize("args, message", [
    (["--ledger", "L"], "--ledger needs --user-id COL"),
    (["--user-id", "id"], "--user-id needs --ledger FILE"),
    (["--ledger", "L", "--user-id", "nope"], "--user-id"),
])
def test_estimate_ledger_options_are_checked(tmp_path, capsys, args, message):
    path = _ledger_csv(tmp_path)
    status = main(["estimate", str(path), "--value", "salary", "--epsilon", "1", "--bounds",
                   "0", "100", "--estimator", "tcm_only",
                   *[str(tmp_path / a) if a == "L" else a for a in args]])
    assert status == 2 and message in capsys.readouterr().err


def test_ledger_command_refuses_a_file_that_is_not_a_ledger(tmp_path, capsys):
    path = _ledger_csv(tmp_path)
    assert main(["ledger", str(path)]) == 2
    assert "file is not a database" in capsys.readouterr().err
    assert main(["ledger", str(tmp_path / "absent.sqlite")]) == 2
    assert "no ledger at" in capsys.readouterr().err


# -- the command line in its own words (issue 29) ----------------------------------------------

# Names a command-line user never typed: classes, parameters, methods, Python syntax.
PYTHON_WORDS = re.compile(
    r"[A-Z]\w*Estimator|HybridKMeans|strategy=|set_budget|default_budget|trust_group|"
    r"user_id|\*\*2|\bindex \d")


@pytest.mark.parametrize("args, option", [
    (["--estimator", "uni"], "--estimator uni"),
    (["--estimator", "pdp_sample"], "--estimator pdp_sample"),
    (["--estimator", "mixed_mean"], "--estimator mixed_mean"),
    (["--estimator", "kvh", "--epsilon", "mixed"], "--estimator adpm"),
    (["--estimator", "kvh", "--variance", "1e9"], "--variance"),
    (["--estimator", "kvh", "--ledger", "L", "--user-id", "id"], "--default-budget"),
])
def test_estimate_errors_name_options_and_values_not_python_names(users_csv, tmp_path, capsys,
                                                                   args, option):
    path, _, _ = users_csv
    with_id = tmp_path / "users.csv"
    lines = path.read_text().splitlines()
    # ids, and an epsilon that differs within each trust group
    with_id.write_text("\n".join([f"id,{lines[0]},mixed"] + [
        f"{i},{line},{1 + i % 2}" for i, line in enumerate(lines[1:])]) + "\n")
    args = [str(tmp_path / "budget.sqlite") if arg == "L" else arg for arg in args]
    status = main(["estimate", str(with_id), "--value", "salary", "--trust", "group",
                   "--epsilon", "1", "--bounds", "0", "100", *args])
    err = capsys.readouterr().err
    assert status == 2
    assert option in err
    assert not PYTHON_WORDS.search(err), err
    assert not re.search(r"(--estimator \w+): \1", err), err  # no repeated prefix


def test_estimate_without_a_trust_column_warns_that_every_user_is_tcm(users_csv, capsys):
    path, _, _ = users_csv
    args = ["estimate", str(path), "--value", "salary", "--epsilon", "1", "--bounds", "0",
            "100", "--estimator", "tcm_only", "--seed", "0", "--json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "no --trust column, so every user is tcm" in captured.err
    assert json.loads(captured.out)["n_tcm"] == 2000
    assert main([*args, "--trust", "group"]) == 0
    assert "warning" not in capsys.readouterr().err


def _european(path, rows, header="salary;group"):
    """A CSV as European spreadsheets write it: semicolons and decimal commas."""
    path.write_text(header + "\n" + "".join(
        f"{str(value).replace('.', ',')};{group}\n" for value, group in rows))
    return path


def test_estimate_reads_european_csvs_with_decimal_comma(tmp_path, capsys):
    rows = [(62.51, "tcm"), (12.25, "lm"), (80.5, "tcm"), (33.75, "lm")]
    european = _european(tmp_path / "eu.csv", rows)
    plain = tmp_path / "plain.csv"
    plain.write_text("salary,group\n" + "".join(f"{v},{g}\n" for v, g in rows))
    common = ["--value", "salary", "--trust", "group", "--epsilon", "1", "--bounds", "0",
              "100", "--estimator", "kvh", "--seed", "5", "--json"]
    # Without --decimal the error says what to do.
    assert main(["estimate", str(european), *common]) == 2
    assert "--decimal ','" in capsys.readouterr().err
    assert main(["estimate", str(european), *common, "--decimal", ","]) == 0
    from_european = json.loads(capsys.readouterr().out)
    assert main(["estimate", str(plain), *common]) == 0
    assert from_european == json.loads(capsys.readouterr().out)
    assert main(["estimate", str(european), *common, "--decimal", ";"]) == 2
    assert "--decimal must be '.' or ','" in capsys.readouterr().err


def test_estimate_skip_missing_leaves_out_incomplete_rows_and_says_how_many(tmp_path, capsys):
    path = tmp_path / "gaps.csv"
    path.write_text("salary,group\n10,tcm\n,lm\n30,NA\n40,lm\nNaN,tcm\n60,tcm\n")
    complete = tmp_path / "complete.csv"
    complete.write_text("salary,group\n10,tcm\n40,lm\n60,tcm\n")
    common = ["--value", "salary", "--trust", "group", "--epsilon", "1", "--bounds", "0",
              "100", "--estimator", "kvh", "--seed", "2", "--json"]
    assert main(["estimate", str(path), *common]) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and "--skip-missing" in err
    assert main(["estimate", str(path), *common, "--skip-missing"]) == 0
    captured = capsys.readouterr()
    assert "skipped 3 rows with a missing value (lines 3, 4, 6); 3 users remain" in captured.err
    skipped = json.loads(captured.out)
    assert skipped["n_users"] == 3
    assert main(["estimate", str(complete), *common]) == 0
    assert skipped == json.loads(capsys.readouterr().out)


def test_estimate_prints_the_estimate_with_its_expected_error(users_csv, capsys):
    path, _, _ = users_csv
    assert main(_estimate_args(path, "--seed", "1")) == 0
    out = capsys.readouterr().out
    estimate, error = re.search(r"^estimate:\s+(\S+) \+- (\S+)", out, re.M).groups()
    rmse = re.search(r"^expected RMSE:\s+(\S+)", out, re.M).group(1)
    assert float(error) == pytest.approx(float(rmse), rel=1e-2)
    # An expectation over the trust assignment too: one split's error can be larger.
    assert "an average over the noise and over which users are tcm" in out
