"""``skhybrid estimate FILE``: a private mean of a CSV's columns, with its metadata columns."""

import json
import math
import re
import sys

import numpy as np

from ._common import METHODS, CommandError, _auto_method, _method_name, _noise_line
from ._ledger import _in_ledger_words, _ledger_and_ids
from ._table import _is_missing, _line_list, _read_csv


def _numbers(texts, name, table, *, allow_inf=False):
    values = np.empty(len(texts))
    for index, text in enumerate(texts):
        number = (text or "").strip()
        if table.decimal != ".":
            number = number.replace(table.decimal, ".")
        try:
            value = float(number)
        except ValueError:
            value = math.nan
        if math.isnan(value) or (math.isinf(value) and not allow_inf):
            kind = "a number (inf allowed)" if allow_inf else "a finite number"
            hint = ""
            if _is_missing(text):
                hint = "; --skip-missing leaves out the rows with a missing value"
            elif table.decimal == "." and re.fullmatch(r"[+-]?\d*,\d+", number):
                hint = "; for decimal commas give --decimal ','"
            raise CommandError(
                f"{table.where(index)}: column {name!r} must be {kind}; got {text!r}{hint}"
            )
        values[index] = value
    return values


_TRUST_VALUES = {"tcm": "tcm", "true": "tcm", "1": "tcm", "lm": "lm", "false": "lm", "0": "lm"}


def _trust_groups(texts, name, table):
    groups = np.empty(len(texts), dtype="<U3")
    for index, text in enumerate(texts):
        group = _TRUST_VALUES.get((text or "").strip().lower())
        if group is None:
            hint = ("; --skip-missing leaves out the rows with a missing value"
                    if _is_missing(text) else "")
            raise CommandError(
                f"{table.where(index)}: column {name!r} must be tcm, lm, true, false, 1 or 0 "
                f"(true / 1 = tcm, case-insensitive); got {text!r}{hint}"
            )
        groups[index] = group
    return groups


# Library words and the command's: the estimators' class and strategy names are
# --estimator values, the metadata are options, parameters are options' values.
_CLI_WORDS = [
    (r"\bstrategy='(\w+)'", r"--estimator \1"),
    (r"\bADPMEstimator with trust_group\b", "--estimator adpm"),
    (r"\bADPMEstimator\b", "--estimator adpm"),
    (r"\bHybridMeanEstimator\b", "--estimator kvh, pwh or naive"),
    (r"\bPDPSampleEstimator\b", "--estimator pdp_sample"),
    (r"\bMixedMeanEstimator\b", "--estimator mixed_mean"),
    (r"call set_budget for them or give the ledger a default_budget",
     "give --default-budget EPS, the budget of users new to the ledger"),
    (r"\bdefault_budget\b", "--default-budget"),
    (r"\btrust_group\b", "--trust"),
    (r"\buser_id\b", "--user-id"),
    (r"^(variance|epsilon|bounds) must", r"--\1 must"),
    (r"\(upper - lower\)\*\*2 / 4", "(HI - LO)^2 / 4"),
    (r" for every feature", ""),
]


def _in_user_words(message, *, estimator=None, name=None, table=None):
    """A library message in the command's terms: options, their values, line numbers."""
    if estimator is not None:
        message = re.sub(rf"\b{type(estimator).__name__}\b", f"--estimator {name}", message)
    for pattern, replacement in _CLI_WORDS:
        message = re.sub(pattern, replacement, message)
    if table is not None:
        message = re.sub(
            r"\bindex (\d+)\b",
            lambda match: f"line {table.lines[int(match.group(1))]}"
            if int(match.group(1)) < len(table.lines) else match.group(0),
            message,
        )
    return message


def run_estimate(args):
    method = METHODS.get(_method_name(args.estimator))
    if method is None and _method_name(args.estimator) != "auto":
        raise CommandError(
            f"unknown --estimator {args.estimator!r}; choose one of: {', '.join(METHODS)}"
        )
    lower, upper = args.bounds
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise CommandError(
            f"--bounds must be two finite numbers LO < HI; got {lower:g} {upper:g}"
        )
    if args.variance is not None and not (args.variance > 0 and math.isfinite(args.variance)):
        raise CommandError(f"--variance must be a finite number > 0; got {args.variance:g}")
    if args.decimal not in (".", ","):
        raise CommandError(f"--decimal must be '.' or ','; got {args.decimal!r}")
    table = _read_csv(args.file, args.sep, args.decimal)
    if args.skip_missing:
        used = [args.value, args.trust, args.user_id,
                args.epsilon if args.epsilon in table.header else None]
        table, skipped = table.complete_rows([name for name in used if name])
        if skipped:
            print(f"skipped {len(skipped):,} rows with a missing value (lines "
                  f"{_line_list(skipped)}); {len(table.rows):,} users remain",
                  file=sys.stderr)
        if not table.rows:
            raise CommandError(f"--skip-missing: every row of {table.path} misses a value")
    X = _numbers(table.column(args.value, "--value"), args.value, table)
    trust_group = None
    if args.trust is not None:
        trust_group = _trust_groups(table.column(args.trust, "--trust"), args.trust, table)
    else:
        print("skhybrid estimate: warning: no --trust column, so every user is tcm (trusts "
              "the curator with their raw value); give --trust COL if some users randomize "
              "on their own device", file=sys.stderr)
    from ..exceptions import BudgetExceededError, LedgerError

    epsilon_parameter, user_epsilon = _epsilon(args.epsilon, table)
    ledger, user_id = _ledger_and_ids(args, table)
    if method is None:
        args.estimator = _auto_method(trust_group, user_epsilon)
        method = METHODS[args.estimator]

    estimator = method.build(
        epsilon=epsilon_parameter, bounds=(lower, upper), variance=args.variance,
        random_state=args.seed, clamp=args.clamp,
    ).set_params(ledger=ledger)
    try:
        estimator.fit(X.reshape(-1, 1), trust_group=trust_group, epsilon=user_epsilon,
                      user_id=user_id)
    except (BudgetExceededError, LedgerError, KeyError) as error:
        message = error.args[0] if isinstance(error, KeyError) else str(error)
        raise CommandError(
            f"--ledger {args.ledger}: refused: "
            f"{_in_user_words(_in_ledger_words(message, args.ledger))}"
        ) from None
    except (ValueError, TypeError) as error:  # the estimator's own checks of the metadata
        message = _in_user_words(str(error), estimator=estimator, name=args.estimator,
                                 table=table)
        if not message.startswith("--estimator"):
            message = f"--estimator {args.estimator}: {message}"
        raise CommandError(message) from None

    n_tcm = len(X) if trust_group is None else int(np.count_nonzero(trust_group == "tcm"))
    expected_mse = float(estimator.expected_mse_[0])
    charged = None
    if ledger is not None:
        charged = [{"epsilon": level["epsilon"], "delta": level["delta"],
                    "n_users": level["n_users"]} for level in ledger.history()[-1]["levels"]]
    report = {
        "estimator": args.estimator,
        "estimate": float(estimator.mean_[0]),
        "expected_rmse": math.sqrt(expected_mse),
        "expected_mse": expected_mse,
        "n_users": len(X),
        "n_tcm": n_tcm,
        "n_lm": len(X) - n_tcm,
        "epsilon": None if user_epsilon is not None else epsilon_parameter,
        "epsilon_column": args.epsilon if user_epsilon is not None else None,
        "bounds": [lower, upper],
        "seeded": args.seed is not None,
        "ledger": args.ledger,
        "charged": charged,
    }
    if args.json:
        print(json.dumps(report))
        return 0
    epsilon_text = (f"from column {args.epsilon!r}" if user_epsilon is not None
                    else f"{epsilon_parameter:g} for every user")
    print(f"estimator:     {args.estimator}: {method.description}")
    print(f"users:         {report['n_users']:,} ({n_tcm:,} tcm, {report['n_lm']:,} lm); "
          f"epsilon {epsilon_text}")
    print(f"estimate:      {report['estimate']:.6g} +- {report['expected_rmse']:.3g}  "
          f"(private mean of column {args.value!r} +- its expected RMSE: an average over "
          "the noise and over which users are tcm, so this split's error can be larger)")
    print(f"expected RMSE: {report['expected_rmse']:.6g}  (analytic, against the data's mean)")
    print(_noise_line(args.seed))
    if ledger is not None:
        remaining = ledger.remaining(user_id)
        levels = ", ".join(f"{level['n_users']:,} users epsilon {level['epsilon']:g}"
                           + (f" delta {level['delta']:g}" if level["delta"] else "")
                           for level in charged)
        print(f"charged:       {levels} (in {args.ledger})")
        print(f"remaining:     epsilon {np.min(remaining):g} to {np.max(remaining):g} per "
              f"user; see 'skhybrid ledger {args.ledger}'")
    return 0


def _epsilon(text, table):
    """``(constructor epsilon, per-user epsilon or None)`` from a column name or a number."""
    if text in table.header:
        return 1.0, _numbers(table.column(text, "--epsilon"), text, table, allow_inf=True)
    try:
        value = float(text)
    except ValueError:
        raise CommandError(
            f"--epsilon {text!r} is neither a number nor a column of {table.path} "
            f"(columns: {', '.join(table.header)})"
        ) from None
    if not (value > 0 and math.isfinite(value)):
        raise CommandError(
            f"--epsilon must be a finite number > 0; got {text} (inf, for public data, is "
            "accepted per user, in an --epsilon column)")
    return value, None
