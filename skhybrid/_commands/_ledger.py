"""``skhybrid ledger``: a ledger's summary, budgets, one user's audit trail, its export."""

import csv
import json
import os

import numpy as np

from ._common import CommandError
from ._table import _read_csv, _user_ids


def _in_ledger_words(message, ledger):
    """A ledger message in the command line's terms (its options, not Python names)."""
    return message.replace(
        "call set_budget for them or give the ledger a default_budget",
        f"set their budget with 'skhybrid ledger {ledger} set-budget' or pass "
        "--default-budget EPS",
    ).replace("set_budget", "set-budget")


# Ledger files this run created: removed if the run is refused (it leaves nothing behind).
CREATED_LEDGERS = []


def _open_ledger(target, *, create=False, default_budget=None):
    """The ledger at ``target`` (a file or a postgresql:// URL), as the command line opens it.

    Reading commands never create a file; a command that creates one records it, so
    that a refused run removes it again.
    """
    from ..accounting import PrivacyLedger
    from ..exceptions import LedgerError

    is_file = not target.startswith(("postgresql://", "postgres://"))
    new = is_file and not os.path.exists(target)
    if new and not create:
        raise CommandError(f"no ledger at {target}")
    try:
        ledger = PrivacyLedger(target, default_budget=default_budget)
    except (LedgerError, ValueError, ImportError) as error:
        _remove_new_file(target) if new else None
        raise CommandError(f"{target}: {error}") from None
    if new:
        CREATED_LEDGERS.append(target)
    return ledger


def _remove_new_file(path):
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def remove_created_ledgers():
    while CREATED_LEDGERS:
        _remove_new_file(CREATED_LEDGERS.pop())


def _ledger_and_ids(args, table):
    """The ledger of ``--ledger`` and the ids of ``--user-id`` (both or neither)."""
    if args.ledger is None:
        if args.user_id is not None or args.default_budget is not None:
            given = "--user-id" if args.user_id is not None else "--default-budget"
            raise CommandError(f"{given} needs --ledger FILE (the ledger to charge)")
        return None, None
    if args.user_id is None:
        raise CommandError(
            "--ledger needs --user-id COL: the column of user ids the ledger charges "
            "(row positions are not identities)"
        )
    ids = _user_ids(table.column(args.user_id, "--user-id"))
    try:
        ledger = _open_ledger(args.ledger, create=True, default_budget=args.default_budget)
    except CommandError as error:
        raise CommandError(f"--ledger {error}") from None
    return ledger, np.array(ids, dtype=object)


def run_ledger(args):
    """``skhybrid ledger FILE [ACTION]``: summary, set-budget, user or export."""
    handler = {None: _ledger_summary, "set-budget": _ledger_set_budget,
               "user": _ledger_user, "export": _ledger_export}[args.action]
    return handler(args)


def _ledger_summary(args):
    from ..exceptions import LedgerError

    try:
        summary = _open_ledger(args.file).summary(n_releases=args.releases)
    except LedgerError as error:
        raise CommandError(str(error)) from None
    if args.json:
        summary["spent_quantiles"] = {str(q): v for q, v in summary["spent_quantiles"].items()}
        print(json.dumps(summary))
        return 0
    quantiles = summary["spent_quantiles"]
    print(f"ledger:        {args.file}")
    print(f"users:         {summary['n_users']:,}, of whom {summary['n_exhausted']:,} have "
          "exhausted their budget")
    print("epsilon spent: " + ", ".join(
        f"{label} {quantiles[q]:.4g}" for label, q in
        (("min", 0.0), ("median", 0.5), ("90%", 0.9), ("max", 1.0))))
    print(f"releases:      {summary['n_releases']:,}")
    for release in summary["last_releases"]:
        print(f"  {release['time']}  {_release_line(release)}")
    return 0


def _release_line(release):
    levels = ", ".join(
        f"{level['n_users']:,} at epsilon {level['epsilon']:g}"
        + (f" delta {level['delta']:g}" if level["delta"] else "")
        + (f" noise multiplier {level['noise_multiplier']:.4g}"
           if level.get("noise_multiplier") else "")
        for level in release["levels"]) or "nobody charged"
    note = f" [{release['kind']}: {release['description']}]" if release["description"] else (
        f" [{release['kind']}]" if release["kind"] != "release" else "")
    return f"{release['estimator']} ({release['mechanism']}){note}: {levels}"


def _budget_number(text, option, *, is_delta=False, line=None):
    where = f" (line {line})" if line is not None else ""
    try:
        value = float(text)
    except ValueError:
        raise CommandError(f"{option} must be a number; got {text!r}{where}") from None
    if not value >= 0 or (is_delta and not value < 1):
        accepted = "in [0, 1)" if is_delta else ">= 0 (inf for no limit)"
        raise CommandError(f"{option} must be {accepted}; got {text!r}{where}")
    return value


def _ledger_set_budget(args):
    """Budgets for one user (--user) or for every row of a CSV file (--csv)."""
    if (args.user is None) == (args.csv is None):
        raise CommandError("give either --user ID (with --epsilon) or --csv FILE.csv "
                            "(with --epsilon COL)")
    if args.user is not None:
        ids = _user_ids(args.user)
        epsilon = [_budget_number(args.epsilon, "--epsilon")] * len(ids)
        delta = [_budget_number(args.delta or "0", "--delta", is_delta=True)] * len(ids)
    else:
        table = _read_csv(args.csv, args.sep)
        ids = _user_ids(table.column(args.id_column, "--id-column"))
        lines = table.lines
        epsilon = [_budget_number(text, f"--epsilon column {args.epsilon!r}", line=line)
                   for text, line in zip(table.column(args.epsilon, "--epsilon"), lines)]
        delta = ([0.0] * len(ids) if args.delta is None else
                 [_budget_number(text, f"--delta column {args.delta!r}", is_delta=True, line=line)
                  for text, line in zip(table.column(args.delta, "--delta"), lines)])
    ledger = _open_ledger(args.file, create=True)
    try:
        ledger.set_budget(np.array(ids, dtype=object), epsilon, delta)
    except (ValueError, TypeError) as error:
        raise CommandError(f"{args.file}: {_in_ledger_words(str(error), args.file)}") from None
    print(f"budgets set for {len(ids):,} users in {args.file}")
    return 0


def _looked_up(ledger, texts, read):
    """``read(ledger, ids)`` for ids given as text: integers, or strings if the ledger's are."""
    ids = _user_ids(texts)
    try:
        return ids, read(ledger, np.array(ids, dtype=object))
    except TypeError as error:
        if "ledger's user ids are strings" not in str(error):
            raise CommandError(str(error)) from None
        ids = [text.strip() for text in texts]
        return ids, read(ledger, np.array(ids, dtype=object))


def _ledger_user(args):
    """Each user's budget, spend, remaining budget and audit trail."""
    ledger = _open_ledger(args.file)

    def read(ledger, ids):
        spent, spent_delta = ledger.spent(ids, with_delta=True)
        try:
            remaining, remaining_delta = ledger.remaining(ids, with_delta=True)
        except KeyError:  # users unknown to a ledger without a default budget
            remaining = remaining_delta = np.full(len(ids), np.nan)
        return spent, spent_delta, remaining, remaining_delta, ledger.history(user_id=ids)

    ids, (spent, spent_delta, remaining, remaining_delta, trail) = _looked_up(
        ledger, args.ids, read)
    users = []
    for i, user in enumerate(ids):
        users.append({
            "user_id": user, "spent_epsilon": float(spent[i]),
            "spent_delta": float(spent_delta[i]),
            "remaining_epsilon": None if np.isnan(remaining[i]) else float(remaining[i]),
            "remaining_delta": None if np.isnan(remaining[i]) else float(remaining_delta[i]),
            "releases": [row for row in trail if row["user_id"] == user],
        })
    if args.json:
        print(json.dumps(users))
        return 0
    for user in users:
        left = ("no budget (unknown to a ledger without a default budget)"
                if user["remaining_epsilon"] is None else
                f"{user['remaining_epsilon']:.6g} (delta {user['remaining_delta']:.3g})")
        print(f"user {user['user_id']}: spent epsilon {user['spent_epsilon']:.6g} "
              f"(delta {user['spent_delta']:.3g}); remaining {left}; "
              f"{len(user['releases'])} releases")
        for row in user["releases"]:
            print(f"  {row['time']}  {row['estimator']} ({row['mechanism']}, {row['kind']}"
                  + (f": {row['description']}" if row["description"] else "")
                  + f"): epsilon {row['epsilon']:g}"
                  + (f" delta {row['delta']:g}" if row["delta"] else "")
                  + (f" noise multiplier {row['noise_multiplier']:.4g}"
                     if row["noise_multiplier"] else ""))
    return 0


def _ledger_export(args):
    """The users' budgets and spends, the releases, or some users' audit trails, as CSV."""
    if args.output is None:
        # ``export --user 3 4 OUT.csv``: --user takes every word after it.
        if not args.user or len(args.user) < 2:
            raise CommandError("export needs OUT.csv, the CSV file to write")
        args.output = args.user.pop()
    ledger = _open_ledger(args.file)
    if args.user:
        _, rows = _looked_up(ledger, args.user, lambda ledger, ids: ledger.history(user_id=ids))
        columns = None
    elif args.releases:
        rows, columns = ledger.history(), None
    else:
        users = ledger.users()
        columns = list(users)
        rows = [dict(zip(columns, values)) for values in zip(
            *(array.tolist() for array in users.values()))]
    if columns is None:
        columns = list(rows[0]) if rows else ["seq", "kind", "time", "estimator"]
    with open(args.output, "w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({key: json.dumps(value, sort_keys=True)
                             if isinstance(value, (dict, list)) else value
                             for key, value in row.items()})
    print(f"wrote {len(rows):,} rows to {args.output}")
    return 0
