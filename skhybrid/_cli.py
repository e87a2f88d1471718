"""The ``skhybrid`` command line (also ``python -m skhybrid``): demo, estimate, ledger, reproduce."""

import argparse
import csv
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_SECURE_NOISE = (
    "noise: the operating system's secure randomness (these are real private releases; "
    "--seed N gives a reproducible simulation instead)"
)
_SEEDED_NOISE = (
    "noise: seeded with --seed {seed}: a reproducible simulation, not a private release "
    "(anyone who knows the seed can remove the noise)"
)
_PLOT_HINT = 'for the plot, install matplotlib: python -m pip install "skhybrid[plot]"'


class _CommandError(Exception):
    """A mistake in the command's input: printed on stderr, exit status 2, no traceback."""


# -- the estimators the command line knows ------------------------------------------------


@dataclass(frozen=True)
class _Method:
    """One estimator choice of ``--estimator``: how to build it and what it is."""

    family: str
    strategy: str | None
    description: str
    needs_tcm_only: bool = False

    def build(self, *, epsilon, bounds, variance, random_state, clamp=False):
        from .mean import (
            ADPMEstimator,
            HybridMeanEstimator,
            MixedMeanEstimator,
            PDPSampleEstimator,
        )

        common = {"epsilon": epsilon, "bounds": bounds, "variance": variance,
                  "clamp": clamp, "random_state": random_state}
        if self.family == "hybrid":
            # Without a known variance, the library's default: a private estimate.
            return HybridMeanEstimator(self.strategy, **{
                **common, "variance": "private" if variance is None else variance})
        if self.family == "adpm":
            return ADPMEstimator(strategy=self.strategy, **common)
        if self.family == "pdp":
            return PDPSampleEstimator(**common)
        return MixedMeanEstimator(**common)


_METHODS = {
    "kvh": _Method("hybrid", "kvh", "HybridMean, known-variance hybrid (Avent et al. Def. 4.1)"),
    "pwh": _Method("hybrid", "pwh", "HybridMean, privacy-weighted hybrid (Def. 5.3)"),
    "naive": _Method("hybrid", "naive", "HybridMean, groups weighted by size (w = c)"),
    "tcm_only": _Method("hybrid", "tcm_only", "HybridMean, tcm users only (Def. 3.1)"),
    "full_lm": _Method("hybrid", "full_lm", "HybridMean, everyone local (Def. 3.3)"),
    "lm_only": _Method("hybrid", "lm_only", "HybridMean, lm users only (Def. 3.10)"),
    "adpm": _Method("adpm", "adpm", "ADPM, optimal affine weights (Chaudhuri-Courtade)"),
    "uni": _Method("adpm", "uni", "ADPM baseline: uniform weights", needs_tcm_only=True),
    "propdpm": _Method("adpm", "propdpm", "ADPM baseline: weights ~ epsilon",
                       needs_tcm_only=True),
    "ldpe": _Method("adpm", "ldpe", "ADPM baseline: per-level Laplace means",
                    needs_tcm_only=True),
    "stretching": _Method("adpm", "stretching",
                          "ADPM baseline: stretching (Alaggan et al.), biased",
                          needs_tcm_only=True),
    "pdp_sample": _Method("pdp", None, "PDPSample, the Sample mechanism (Jorgensen et al.)",
                          needs_tcm_only=True),
    "mixed_mean": _Method("mixed", None, "MixedMean, per-epsilon means mixed (Ferrando et al.)",
                          needs_tcm_only=True),
}
# Names are the library's own strategy names (snake_case); "tcm-only", "PDP-Sample"...
# are accepted too. The default, "auto", accepts every input the command does: kvh with
# a private variance (HybridMeanEstimator's default, near the best strategy at any tcm
# share) when each trust group has one finite epsilon, else adpm (any epsilon per user).
_DEFAULT_METHOD = "auto"


def _auto_method(trust_group, user_epsilon):
    """``"kvh"`` when each trust group has one finite epsilon, else ``"adpm"``."""
    if user_epsilon is None:
        return "kvh"
    if not np.all(np.isfinite(user_epsilon)):
        return "adpm"
    groups = [np.ones(len(user_epsilon), dtype=bool)] if trust_group is None else [
        trust_group == "tcm", trust_group != "tcm"]
    for rows in groups:
        if rows.any() and np.ptp(user_epsilon[rows]) != 0:
            return "adpm"
    return "kvh"


def _method_name(text):
    """The ``--estimator`` name in the library's spelling (hyphens and case forgiven)."""
    return text.strip().lower().replace("-", "_")

# The demo population has one epsilon and both trust groups. PDPSampleEstimator,
# MixedMeanEstimator and ADPM's uni / propdpm / ldpe / stretching baselines are trusted-curator
# estimators (they reject lm users: their privacy comes from the curator's noise or
# sampling); run on the tcm users alone with one epsilon they all reduce to the Laplace
# mean of those users, which is the tcm_only row. So the demo leaves them out.
_DEMO_METHODS = ("kvh", "pwh", "naive", "tcm_only", "full_lm", "lm_only", "adpm")


def _noise_line(seed):
    return _SECURE_NOISE if seed is None else _SEEDED_NOISE.format(seed=seed)


def _child_seeds(seed, count):
    """``count`` independent seeds from ``seed`` (None stays None: secure randomness)."""
    if seed is None:
        return [None] * count
    return [int(child.generate_state(1)[0]) for child in np.random.SeedSequence(seed).spawn(count)]


def _use_matplotlib():
    """Whether matplotlib is importable; selects the file-only Agg backend if so."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")  # the command line only writes files, never opens windows
    return True


# -- skhybrid demo ------------------------------------------------------------------------


def _demo(args):
    from .datasets import load_salaries
    from .datasets._salaries import UC_SALARY_STD

    if not 0 < args.tcm_fraction < 1:
        raise _CommandError(
            f"--tcm-fraction must be in (0, 1) so that both trust groups exist; "
            f"got {args.tcm_fraction}"
        )
    if not (args.epsilon > 0 and math.isfinite(args.epsilon)):
        raise _CommandError(f"--epsilon must be a finite number > 0; got {args.epsilon}")
    salaries = load_salaries()
    X, bounds = salaries.data, salaries.bounds
    n_users = X.shape[0]
    # Who trusts the curator is the users' choice, public metadata; simulated with a
    # fixed seed so the population is the same in every run.
    n_tcm = round(args.tcm_fraction * n_users)
    if n_tcm in (0, n_users):
        raise _CommandError(f"--tcm-fraction {args.tcm_fraction} leaves a trust group empty")
    trust_group = np.full(n_users, "lm", dtype="<U3")
    trust_group[np.random.default_rng(0).choice(n_users, size=n_tcm, replace=False)] = "tcm"

    # The population's standard deviation is public in the paper's setting (Sec. 4).
    variance = UC_SALARY_STD**2
    rows = []
    for name, seed in zip(_DEMO_METHODS, _child_seeds(args.seed, len(_DEMO_METHODS))):
        method = _METHODS[name]
        estimator = method.build(
            epsilon=args.epsilon, bounds=bounds, variance=variance, random_state=seed
        )
        estimator.fit(X, trust_group=trust_group)
        rows.append({"estimator": name, "method": method.description,
                     "estimate": float(estimator.mean_[0]),
                     "expected_mse": float(estimator.expected_mse_[0])})
    baseline = {row["estimator"]: row["expected_mse"] for row in rows}
    better = min(baseline["tcm_only"], baseline["full_lm"])
    for row in rows:
        row["expected_rmse"] = math.sqrt(row["expected_mse"])
        row["improvement_vs_tcm_only"] = baseline["tcm_only"] / row["expected_mse"]
        row["improvement_vs_full_lm"] = baseline["full_lm"] / row["expected_mse"]
        row["improvement_vs_better"] = better / row["expected_mse"]

    print("skhybrid demo: a private mean salary from a hybrid-trust population")
    print(
        f"data: {n_users:,} salaries from skhybrid.datasets.load_salaries(): SYNTHETIC, "
        "shaped like the 2010 University of California salaries (no real person's data)"
    )
    print(
        f"      bounds [{bounds[0]:,.0f}, {bounds[1]:,.0f}] and standard deviation "
        f"{UC_SALARY_STD:,.0f}, both public"
    )
    print(
        f"users: {n_tcm:,} tcm ({n_tcm / n_users:.2%}, chosen at random: public metadata), "
        f"{n_users - n_tcm:,} lm; epsilon = {args.epsilon:g} for everyone"
    )
    print(_noise_line(args.seed))
    print(
        f"non-private mean of the synthetic data: {X.mean():,.0f} (shown only because the "
        "data are synthetic)"
    )
    print()
    print("expected RMSE = sqrt(expected_mse_): the analytic error against the data's mean")
    print("  for i.i.d. data with the public standard deviation (Avent et al. Lemmas 3.2-3.13).")
    print("vs TCM-only, vs Full-LM, vs better = that baseline's (or the better one's)")
    print("  expected_mse_ / this row's: > 1 means a smaller expected error than the baseline.")
    print()
    width = max(len(row["method"]) for row in rows)
    print(
        f"{'estimator':<9} {'method':<{width}} {'estimate':>9} {'expected RMSE':>13} "
        f"{'vs TCM-only':>11} {'vs Full-LM':>10} {'vs better':>9}"
    )
    for row in rows:
        print(
            f"{row['estimator']:<9} {row['method']:<{width}} {row['estimate']:>9,.0f} "
            f"{row['expected_rmse']:>13,.0f} {row['improvement_vs_tcm_only']:>11.3f} "
            f"{row['improvement_vs_full_lm']:>10.3f} {row['improvement_vs_better']:>9.3f}"
        )
    landscapes = _demo_landscapes(n_users, bounds, variance, args)
    print()
    for line in _demo_findings(rows, *landscapes, tcm_fraction=n_tcm / n_users,
                               epsilon=args.epsilon):
        print(line)

    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    csv_path = output / "skhybrid-demo.csv"
    columns = ["estimator", "method", "estimate", "expected_rmse", "expected_mse",
               "improvement_vs_tcm_only", "improvement_vs_full_lm", "improvement_vs_better"]
    with open(csv_path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    print()
    print(f"wrote {csv_path}")
    if not _use_matplotlib():
        print(f"no plot: matplotlib is not installed; {_PLOT_HINT}")
        return 0
    import matplotlib.pyplot as plt

    from ._demo import plot_landscapes

    figure = plot_landscapes(*landscapes, tcm_fraction=n_tcm / n_users, epsilon=args.epsilon,
                             n=n_users)
    png_path = output / "skhybrid-demo.png"
    figure.savefig(png_path, dpi=110)
    plt.close(figure)
    print(f"wrote {png_path}")
    return 0


def _demo_landscapes(n_users, bounds, variance, args):
    """The closed-form curves of the demo's figure, for the salaries' public parameters."""
    from ._demo import EPSILONS, hybrid_landscape, per_user_landscape
    from .theory import saturation_ratio

    data_range = bounds[1] - bounds[0]
    common = {"n": n_users, "data_range": data_range, "variance": variance}
    hybrid = hybrid_landscape(epsilon=args.epsilon, **common)
    levels = sorted({*EPSILONS, args.epsilon})
    improvements = {level: hybrid_landscape(epsilon=level, **common) for level in levels}
    eps1 = args.epsilon / 10
    # eps2 from eps1 to 100 eps1, and at least 3 times past ADPM's saturation point.
    ratio = saturation_ratio(n_users, 0.5, eps1, data_range=data_range, variance=variance)
    top = max(100.0, 3.0 * ratio)
    per_user = per_user_landscape(eps1=eps1, eps2=eps1 * np.logspace(0, np.log10(top), 41),
                                  **common)
    return hybrid, improvements, per_user


def _demo_findings(rows, hybrid, improvements, per_user, *, tcm_fraction, epsilon):
    """The figure's points in words, with the ratios."""
    best = hybrid.best
    strong = hybrid.fractions[hybrid.improvement > 1.5]
    kvh = next(row for row in rows if row["estimator"] == "kvh")
    lines = [
        "Where the hybrid model pays (closed forms; skhybrid-demo.png draws them):",
        f"  this run ({tcm_fraction:.2%} tcm, epsilon {epsilon:g}): KVH's expected MSE is "
        f"{kvh['improvement_vs_better']:.2f}x smaller than the better baseline's.",
        f"  at epsilon {epsilon:g} the gain peaks at R = {hybrid.improvement[best]:.2f}x with "
        f"{hybrid.fractions[best]:.2%} of the users in tcm, where TCM-only and Full-LM are "
        "equally good; "
        + (f"R > 1.5 from {strong.min():.2%} to {strong.max():.2%} tcm." if strong.size
           else "R stays below 1.5."),
        "  the peak by epsilon: " + ", ".join(
            f"{level:g}: R = {landscape.improvement[landscape.best]:.2f} at "
            f"{landscape.fractions[landscape.best]:.2%} tcm"
            for level, landscape in improvements.items()) + ".",
        "  far from the peak one group carries the estimate and the hybrid matches the "
        "better baseline (R -> 1): with many tcm users TCM-only is enough.",
    ]
    last = -1
    lines.append(
        f"A different epsilon per user (ADPM, Chaudhuri and Courtade): with half the users "
        f"at {per_user.eps1:g} and half at {per_user.eps2[last]:.3g}, ADPM's expected MSE is "
        f"{per_user.uni[last] / per_user.adpm[last]:.2f}x smaller than UNI's (everyone at "
        f"{per_user.eps1:g}) and {per_user.propdpm[last] / per_user.adpm[last]:.2f}x smaller "
        f"than PropDPM's; beyond eps2 = {per_user.saturation:.2g} more epsilon buys "
        "nothing (saturation), so those users' extra privacy is free."
    )
    return lines


# -- skhybrid estimate --------------------------------------------------------------------


_SEPARATORS = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}


@dataclass(frozen=True)
class _Table:
    """A CSV file read for ``skhybrid estimate``: its columns and each row's line number."""

    path: str
    header: list
    rows: list  # one list of fields per data row
    lines: list  # the file line on which each data row starts (the header is line 1)

    def column(self, name, option):
        if name not in self.header:
            raise _CommandError(
                f"{option}: no column {name!r} in {self.path}; its columns are: "
                f"{', '.join(self.header)}"
            )
        index = self.header.index(name)
        return [row[index] for row in self.rows]

    def where(self, row):
        return f"{self.path}, line {self.lines[row]}"


def _read_csv(path, sep=None):
    """A CSV file as spreadsheets and pandas write them, with readable errors.

    UTF-8 with or without a byte-order mark (as Excel writes it); the delimiter is
    ``sep``, or sniffed among ``, ; tab |`` from the start of the file; quoted fields
    may hold delimiters and line breaks. Python's csv module does the parsing.
    """
    delimiter = _SEPARATORS.get(sep, sep)
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            if delimiter is None:
                sample = handle.read(64 * 1024)
                handle.seek(0)
                try:
                    delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
                except csv.Error:  # one column, or nothing to tell the delimiter by
                    delimiter = ","
            reader = csv.reader(handle, delimiter=delimiter)
            header = next(reader, None)
            rows, lines, start = [], [], reader.line_num + 1
            for row in reader:
                if row:  # blank lines are skipped, as pandas does
                    rows.append(row)
                    lines.append(start)
                start = reader.line_num + 1
    except FileNotFoundError:
        raise _CommandError(f"no such file: {path}") from None
    except UnicodeDecodeError as error:
        raise _CommandError(
            f"cannot read {path}: it is not UTF-8 text ({error.reason} at byte "
            f"{error.start}); save it as UTF-8 (CSV UTF-8 in Excel)"
        ) from None
    except (OSError, csv.Error) as error:
        raise _CommandError(f"cannot read {path}: {error}") from None
    if not header:
        raise _CommandError(f"{path} is empty: expected a header row with column names")
    header = [name.strip() for name in header]
    if not rows:
        raise _CommandError(f"{path} has a header but no data rows")
    for row, line in zip(rows, lines):
        if len(row) != len(header):
            raise _CommandError(
                f"{path}, line {line}: {len(row)} fields where the header has "
                f"{len(header)} (delimiter {delimiter!r}; use --sep to set it)"
            )
    return _Table(str(path), header, rows, lines)


def _numbers(texts, name, table, *, allow_inf=False):
    values = np.empty(len(texts))
    for index, text in enumerate(texts):
        try:
            value = float((text or "").strip())
        except ValueError:
            value = math.nan
        if math.isnan(value) or (math.isinf(value) and not allow_inf):
            kind = "a number (inf allowed)" if allow_inf else "a finite number"
            raise _CommandError(
                f"{table.where(index)}: column {name!r} must be {kind}; got {text!r}"
            )
        values[index] = value
    return values


_TRUST_VALUES = {"tcm": "tcm", "true": "tcm", "1": "tcm", "lm": "lm", "false": "lm", "0": "lm"}


def _trust_groups(texts, name, table):
    groups = np.empty(len(texts), dtype="<U3")
    for index, text in enumerate(texts):
        group = _TRUST_VALUES.get((text or "").strip().lower())
        if group is None:
            raise _CommandError(
                f"{table.where(index)}: column {name!r} must be tcm, lm, true, false, 1 or 0 "
                f"(true / 1 = tcm, case-insensitive); got {text!r}"
            )
        groups[index] = group
    return groups


def _in_user_words(message, estimator, name, table):
    """A library message in the command's terms: ``--estimator NAME`` and line numbers."""
    message = message.replace(type(estimator).__name__, f"--estimator {name}")
    return re.sub(
        r"\bindex (\d+)\b",
        lambda match: f"line {table.lines[int(match.group(1))]}"
        if int(match.group(1)) < len(table.lines) else match.group(0),
        message,
    )


def _estimate(args):
    method = _METHODS.get(_method_name(args.estimator))
    if method is None and _method_name(args.estimator) != "auto":
        raise _CommandError(
            f"unknown --estimator {args.estimator!r}; choose one of: {', '.join(_METHODS)}"
        )
    lower, upper = args.bounds
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise _CommandError(
            f"--bounds must be two finite numbers LO < HI; got {lower:g} {upper:g}"
        )
    if args.variance is not None and not (args.variance > 0 and math.isfinite(args.variance)):
        raise _CommandError(f"--variance must be a finite number > 0; got {args.variance:g}")
    table = _read_csv(args.file, args.sep)
    X = _numbers(table.column(args.value, "--value"), args.value, table)
    trust_group = None
    if args.trust is not None:
        trust_group = _trust_groups(table.column(args.trust, "--trust"), args.trust, table)
    from .exceptions import BudgetExceededError, LedgerError

    epsilon_parameter, user_epsilon = _epsilon(args.epsilon, table)
    ledger, user_id = _ledger_and_ids(args, table)
    if method is None:
        args.estimator = _auto_method(trust_group, user_epsilon)
        method = _METHODS[args.estimator]

    estimator = method.build(
        epsilon=epsilon_parameter, bounds=(lower, upper), variance=args.variance,
        random_state=args.seed, clamp=args.clamp,
    ).set_params(ledger=ledger)
    try:
        estimator.fit(X.reshape(-1, 1), trust_group=trust_group, epsilon=user_epsilon,
                      user_id=user_id)
    except (BudgetExceededError, LedgerError, KeyError) as error:
        message = error.args[0] if isinstance(error, KeyError) else str(error)
        raise _CommandError(f"--ledger {args.ledger}: refused: {message}") from None
    except (ValueError, TypeError) as error:  # the estimator's own checks of the metadata
        raise _CommandError(
            f"--estimator {args.estimator}: "
            f"{_in_user_words(str(error), estimator, args.estimator, table)}"
        ) from None

    n_tcm = len(X) if trust_group is None else int(np.count_nonzero(trust_group == "tcm"))
    expected_mse = float(estimator.expected_mse_[0])
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
    }
    if args.json:
        print(json.dumps(report))
        return 0
    epsilon_text = (f"from column {args.epsilon!r}" if user_epsilon is not None
                    else f"{epsilon_parameter:g} for every user")
    print(f"estimator:     {args.estimator}: {method.description}")
    print(f"users:         {report['n_users']:,} ({n_tcm:,} tcm, {report['n_lm']:,} lm); "
          f"epsilon {epsilon_text}")
    print(f"estimate:      {report['estimate']:.6g}  (private mean of column {args.value!r})")
    print(f"expected RMSE: {report['expected_rmse']:.6g}  (analytic, against the data's mean)")
    print(_noise_line(args.seed))
    if ledger is not None:
        release = ledger.history()[-1]
        print(f"ledger:        {release['n_users']:,} users charged in {args.ledger}; "
              f"see 'skhybrid ledger {args.ledger}'")
    return 0


def _ledger_and_ids(args, table):
    """The ledger of ``--ledger`` and the ids of ``--user-id`` (both or neither)."""
    from .accounting import PrivacyLedger
    from .exceptions import LedgerError

    if args.ledger is None:
        if args.user_id is not None or args.default_budget is not None:
            given = "--user-id" if args.user_id is not None else "--default-budget"
            raise _CommandError(f"{given} needs --ledger FILE (the ledger to charge)")
        return None, None
    if args.user_id is None:
        raise _CommandError(
            "--ledger needs --user-id COL: the column of user ids the ledger charges "
            "(row positions are not identities)"
        )
    ids = table.column(args.user_id, "--user-id")
    # Ids that are all integers are read as integers (as pandas would), else as text.
    if all(re.fullmatch(r"[+-]?\d+", value.strip()) for value in ids):
        ids = [int(value) for value in ids]
    try:
        ledger = PrivacyLedger(args.ledger, default_budget=args.default_budget)
    except (LedgerError, ValueError) as error:
        raise _CommandError(f"--ledger {args.ledger}: {error}") from None
    return ledger, np.array(ids, dtype=object)


def _ledger(args):
    """``skhybrid ledger FILE``: a summary of a ledger file."""
    from .accounting import PrivacyLedger
    from .exceptions import LedgerError

    if not os.path.exists(args.file):
        raise _CommandError(f"no ledger at {args.file}")
    try:
        summary = PrivacyLedger(args.file).summary(n_releases=args.releases)
    except LedgerError as error:
        raise _CommandError(str(error)) from None
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
        levels = ", ".join(
            f"{level['n_users']:,} at epsilon {level['epsilon']:g}"
            + (f" delta {level['delta']:g}" if level["delta"] else "")
            + (f" noise multiplier {level['noise_multiplier']:.4g}"
               if level["noise_multiplier"] else "")
            for level in release["levels"]) or "nobody charged"
        print(f"  {release['time']}  {release['estimator']} ({release['mechanism']}): {levels}")
    return 0


def _epsilon(text, table):
    """``(constructor epsilon, per-user epsilon or None)`` from a column name or a number."""
    if text in table.header:
        return 1.0, _numbers(table.column(text, "--epsilon"), text, table, allow_inf=True)
    try:
        value = float(text)
    except ValueError:
        raise _CommandError(
            f"--epsilon {text!r} is neither a number nor a column of {table.path} "
            f"(columns: {', '.join(table.header)})"
        ) from None
    if not value > 0:
        raise _CommandError(f"--epsilon must be > 0 (inf: public data); got {text}")
    return value, None


# -- skhybrid reproduce -------------------------------------------------------------------


def _reproduce(args):
    from .reproduce import REPRODUCTIONS, reproduce

    if args.list:
        if not REPRODUCTIONS:
            print("no reproductions are registered in this version of skhybrid")
        width = max((len(name) for name in REPRODUCTIONS), default=0)
        for name, function in REPRODUCTIONS.items():
            summary = (function.__doc__ or "").strip().splitlines()
            print(f"{name:<{width}}  {summary[0] if summary else ''}".rstrip())
        return 0
    if not args.names:
        raise _CommandError("give a reproduction NAME, 'all', or --list to see the names")
    names = list(REPRODUCTIONS) if args.names == ["all"] else args.names
    unknown = [name for name in names if name not in REPRODUCTIONS]
    if unknown:
        raise _CommandError(
            f"unknown reproduction {unknown[0]!r}; choose 'all' or one of: "
            f"{', '.join(REPRODUCTIONS) or '(none registered)'}"
        )
    plot = _use_matplotlib()
    output = Path(args.output)
    for name in names:
        reproduction = reproduce(
            name, quick=args.quick, random_state=args.seed, progress=not args.no_progress
        )
        print(f"== {name}: {reproduction.title}")
        if reproduction.summary:
            print(reproduction.summary.rstrip())
        if plot:
            paths = reproduction.save(output)
        else:
            output.mkdir(parents=True, exist_ok=True)
            paths = [output / f"{name}.csv"]
            reproduction.write_csv(paths[0])
        print("wrote " + ", ".join(str(path) for path in paths))
    if not plot:
        print(f"no plots: matplotlib is not installed; {_PLOT_HINT}")
    return 0


# -- the parser ---------------------------------------------------------------------------

_DESCRIPTION = """\
Differentially private statistics for users who trust the data collector to different
degrees: "tcm" users send raw values to a trusted curator (central DP), "lm" users
randomize on their own device (local DP), and each user may have their own epsilon.
Run "skhybrid COMMAND --help" for a command's options."""

_EPILOG = """\
examples:
  skhybrid demo --output results
  skhybrid estimate salaries.csv --value salary --trust group --epsilon 1 \\
      --bounds 0 2349033 --estimator kvh --json
  skhybrid estimate salaries.csv --value salary --trust group --epsilon 1 \\
      --bounds 0 2349033 --ledger budget.sqlite --user-id id --default-budget 3
  skhybrid ledger budget.sqlite
  skhybrid reproduce --list
  skhybrid reproduce avent-figure2 --quick --output figures"""

_ESTIMATE_EPILOG = "estimators:\n" + "\n".join(
    f"  {name:<11} {method.description}" + ("  [tcm users only]" if method.needs_tcm_only else "")
    for name, method in _METHODS.items()
) + """

The hybrid strategies (kvh ... lm_only) need one epsilon per trust group; adpm accepts a
different epsilon for every user, tcm or lm; the others are trusted-curator estimators
(every user tcm, epsilon may differ, inf = public). Values are clipped to --bounds.
Errors in the input exit with status 2 and a message on stderr."""


def _seed(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer; got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer; got {text!r}")
    return value


def _build_parser():
    from . import __version__

    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="skhybrid", description=_DESCRIPTION, epilog=_EPILOG, formatter_class=formatter
    )
    parser.add_argument("--version", action="version", version=f"skhybrid {__version__}")
    commands = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", required=True
    )

    demo = commands.add_parser(
        "demo", formatter_class=formatter,
        help="the main job: every mean estimator on the bundled synthetic salaries",
        description=(
            "Fit every mean estimator that applies to a hybrid population on the bundled\n"
            "dataset (skhybrid.datasets.load_salaries: 252,540 SYNTHETIC salaries shaped\n"
            "like the University of California 2010 salaries, bounds 0 to 2,349,033,\n"
            "public standard deviation 53,254). A random --tcm-fraction of the users trusts\n"
            "the curator (tcm), the others randomize locally (lm); everyone has --epsilon.\n"
            "Prints each estimate, its expected RMSE and its improvement over the TCM-only\n"
            "and Full-LM baselines, then where the hybrid model pays: the gain over the\n"
            "tcm share and epsilon, and ADPM against UNI and PropDPM when users choose\n"
            "their own epsilon. Writes DIR/skhybrid-demo.csv and DIR/skhybrid-demo.png\n"
            "(the plot needs matplotlib: pip install \"skhybrid[plot]\")."
        ),
    )
    demo.add_argument("--output", metavar="DIR", default=".",
                      help="directory for skhybrid-demo.csv and .png (default: current)")
    demo.add_argument("--epsilon", type=float, default=1.0,
                      help="every user's privacy level (default: 1.0)")
    demo.add_argument("--tcm-fraction", type=float, default=0.002, metavar="FRACTION",
                      help="fraction of users who trust the curator, in (0, 1) (default: "
                           "0.002, near where the hybrid gains most at epsilon 1)")
    demo.add_argument("--seed", type=_seed, default=None, metavar="N",
                      help="seed of the privacy noise, for a reproducible simulation; default: "
                           "the operating system's secure randomness (a real release)")
    demo.set_defaults(handler=_demo)

    estimate = commands.add_parser(
        "estimate", formatter_class=formatter, epilog=_ESTIMATE_EPILOG,
        help="a private mean of one column of a CSV file",
        description=(
            "Release a differentially private mean of one numeric column of a CSV file\n"
            "(one row per user) and its expected error. Read with Python's csv module:\n"
            "the first row holds the column names; UTF-8 with or without a byte-order\n"
            "mark; the delimiter is sniffed unless --sep gives it. Errors name the\n"
            "file's line numbers (the header is line 1)."
        ),
    )
    estimate.add_argument("file", metavar="FILE.csv", help="the CSV file, one row per user")
    estimate.add_argument("--value", required=True, metavar="COL",
                          help="column of the values to average")
    estimate.add_argument("--trust", metavar="COL",
                          help="column of trust groups: tcm / lm or true / false (true = tcm); "
                               "default: every user is tcm")
    estimate.add_argument("--epsilon", required=True, metavar="COL|FLOAT",
                          help="a column of per-user privacy levels (inf = public), or one "
                               "level for everyone")
    estimate.add_argument("--bounds", required=True, nargs=2, type=float, metavar=("LO", "HI"),
                          help="public, data-independent bounds of the values (LO < HI)")
    estimate.add_argument("--estimator", default=_DEFAULT_METHOD, metavar="NAME",
                          help="one of: auto, " + ", ".join(_METHODS) + " (see below; "
                               "hyphens work too); default: auto, which is kvh with a "
                               "private variance estimate when each trust group has one "
                               "epsilon, else adpm (any epsilon per user)")
    estimate.add_argument("--variance", type=float, metavar="V",
                          help="the known (public) variance of the values; default: kvh, "
                               "pwh, naive, tcm_only, full_lm and lm_only estimate it "
                               "privately (5%% of tcm users' epsilon), the others assume "
                               "the worst case for the bounds, (HI - LO)^2 / 4")
    estimate.add_argument("--sep", metavar="SEP", default=None,
                          help="the CSV delimiter: a character, or tab / comma / semicolon / "
                               "pipe; default: sniffed from the file")
    estimate.add_argument("--clamp", action="store_true",
                          help="project the estimate onto --bounds (post-processing: the "
                               "error never grows, the estimate is no longer unbiased)")
    estimate.add_argument("--json", action="store_true",
                          help="print one JSON object: estimator, estimate, expected_rmse, "
                               "expected_mse, n_users, n_tcm, n_lm, epsilon (or null), "
                               "epsilon_column (or null), bounds, seeded")
    estimate.add_argument("--seed", type=_seed, default=None, metavar="N",
                          help="seed of the privacy noise (simulations and tests only); "
                               "default: the operating system's secure randomness")
    estimate.add_argument("--ledger", metavar="FILE", default=None,
                          help="charge each user's privacy cost to this ledger file (created "
                               "if absent) before any noise is drawn; refuses, releasing "
                               "nothing, when a user's budget would be exceeded")
    estimate.add_argument("--user-id", metavar="COL", default=None,
                          help="the column of user ids the ledger charges (with --ledger)")
    estimate.add_argument("--default-budget", type=float, metavar="EPS", default=None,
                          help="epsilon budget of users new to the ledger (stored in it)")
    estimate.set_defaults(handler=_estimate)

    ledger = commands.add_parser(
        "ledger", formatter_class=formatter,
        help="summarise a privacy ledger file",
        description=(
            "Summarise a privacy ledger written by 'skhybrid estimate --ledger' or\n"
            "skhybrid.accounting.PrivacyLedger: users, epsilon spent (quantiles), users\n"
            "with an exhausted budget, and the latest releases."
        ),
    )
    ledger.add_argument("file", metavar="FILE", help="the ledger file")
    ledger.add_argument("--releases", type=_seed, default=5, metavar="N",
                        help="how many of the latest releases to list (default: 5)")
    ledger.add_argument("--json", action="store_true", help="print one JSON object")
    ledger.set_defaults(handler=_ledger)

    reproduce = commands.add_parser(
        "reproduce", formatter_class=formatter,
        help="regenerate a paper's figure or table (CSV + PNG)",
        description=(
            "Regenerate the papers' figures and tables: for each NAME, writes DIR/NAME.csv\n"
            "(the numbers) and DIR/NAME.png (the plot, needs matplotlib) and prints a\n"
            "summary comparing the result with the paper. 'all' runs every reproduction;\n"
            "--list shows the names. Reproductions are simulations: seeded (default 0)."
        ),
    )
    reproduce.add_argument("names", nargs="*", metavar="NAME",
                           help="reproduction names, or 'all'")
    reproduce.add_argument("--list", action="store_true", help="list the reproductions and exit")
    reproduce.add_argument("--quick", action="store_true",
                           help="fewer Monte Carlo trials or a coarser grid (a first look)")
    reproduce.add_argument("--output", metavar="DIR", default=".",
                           help="directory for NAME.csv and NAME.png (default: current)")
    reproduce.add_argument("--seed", type=_seed, default=0, metavar="N",
                           help="seed of the simulation (default: 0)")
    reproduce.add_argument("--no-progress", action="store_true",
                           help="no progress bar (it goes to stderr by default)")
    reproduce.set_defaults(handler=_reproduce)
    return parser


def main(argv=None):
    """Run the ``skhybrid`` command line.

    Parameters
    ----------
    argv : list of str or None, default=None
        The arguments after the program name; ``None`` reads ``sys.argv``.

    Returns
    -------
    status : int
        0 on success, 2 for a mistake in the input (the message goes to stderr).
        ``--help`` and argparse's own usage errors raise :class:`SystemExit`.
    """
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except _CommandError as error:
        print(f"skhybrid {args.command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader closed the pipe (``skhybrid demo | head``): stop quietly, as Unix
        # tools do; pointing stdout at devnull avoids a second error at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
