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
# Given the salaries' public variance, ADPMEstimator solves ADPM's program for it: a
# variant of the paper's Algorithm 1 (which uses the worst case). The demo says so.
_DEMO_DESCRIPTIONS = {"adpm": "ADPM variant: weights for the known variance (not Alg. 1)"}


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
    from ._demo import RELEASE_PANEL, select_and_release
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
    tcm_fraction = n_tcm / n_users

    # The population's standard deviation is public in the paper's setting (Sec. 4).
    variance = UC_SALARY_STD**2
    seeds = _child_seeds(args.seed, len(_DEMO_METHODS) + 1)
    rows = []
    for name, seed in zip(_DEMO_METHODS, seeds):
        method = _METHODS[name]
        estimator = method.build(
            epsilon=args.epsilon, bounds=bounds, variance=variance, random_state=seed
        )
        estimator.fit(X, trust_group=trust_group)
        rows.append({"estimator": name, "method": _DEMO_DESCRIPTIONS.get(name, method.description),
                     "estimate": float(estimator.mean_[0]),
                     "expected_mse": float(estimator.expected_mse_[0])})
    baseline = {row["estimator"]: row["expected_mse"] for row in rows}
    better = min(baseline["tcm_only"], baseline["full_lm"])
    for row in rows:
        row["expected_rmse"] = math.sqrt(row["expected_mse"])
        row["improvement_vs_tcm_only"] = baseline["tcm_only"] / row["expected_mse"]
        row["improvement_vs_full_lm"] = baseline["full_lm"] / row["expected_mse"]
        row["improvement_vs_better"] = better / row["expected_mse"]
    # Shown only because the data are synthetic: a real release never prints this.
    true_mean = float(X.mean())

    print("skhybrid demo: a private mean salary from a hybrid-trust population")
    print(
        f"data: {n_users:,} salaries in US dollars from skhybrid.datasets.load_salaries(): "
        "SYNTHETIC, shaped like the 2010 University of California salaries (no real "
        "person's data)"
    )
    print(
        f"      bounds [{bounds[0]:,.0f}, {bounds[1]:,.0f}] and standard deviation "
        f"{UC_SALARY_STD:,.0f} dollars, both public"
    )
    print(
        f"users: {n_tcm:,} tcm ({tcm_fraction:.2%}, chosen at random: public metadata), "
        f"{n_users - n_tcm:,} lm; epsilon = {args.epsilon:g} for everyone"
    )
    print(_noise_line(args.seed))
    print(
        f"true mean of the synthetic data: {true_mean:,.0f} dollars (shown only because the "
        "data are synthetic)"
    )
    print()
    print("1. This run's releases (one fit each; each is a release of every user's data):")
    print("expected RMSE = sqrt(expected_mse_), in dollars: the analytic error against the")
    print("  data's mean for i.i.d. data with the public standard deviation (Avent et al.")
    print("  Lemmas 3.2-3.13). error = estimate - true mean. vs TCM-only, vs Full-LM, vs")
    print("  better = that baseline's (or the better one's) expected_mse_ / this row's:")
    print("  > 1 means a smaller expected error than the baseline.")
    print()
    width = max(len(row["method"]) for row in rows)
    print(
        f"{'estimator':<9} {'method':<{width}} {'estimate':>9} {'expected RMSE':>13} "
        f"{'vs TCM-only':>11} {'vs Full-LM':>10} {'vs better':>9} {'error':>8}"
    )
    for row in rows:
        print(
            f"{row['estimator']:<9} {row['method']:<{width}} {row['estimate']:>9,.0f} "
            f"{row['expected_rmse']:>13,.0f} {row['improvement_vs_tcm_only']:>11.3f} "
            f"{row['improvement_vs_full_lm']:>10.3f} {row['improvement_vs_better']:>9.3f} "
            f"{row['estimate'] - true_mean:>+8,.0f}"
        )
    within = sum(abs(row["estimate"] - true_mean) <= row["expected_rmse"] for row in rows)
    print(f"{within} of {len(rows)} estimates are within one expected RMSE of the true mean "
          "(about 2 in 3 are expected to be, for Laplace noise).")
    hybrid, improvements, per_user = _demo_landscapes(n_users, bounds, variance, args)
    print()
    kvh = next(row for row in rows if row["estimator"] == "kvh")
    for line in _demo_findings(kvh["improvement_vs_better"], hybrid, improvements,
                               per_user, tcm_fraction=tcm_fraction, epsilon=args.epsilon):
        print(line)

    user_id = np.arange(n_users)
    selection = select_and_release(
        X.reshape(-1, 1), trust_group=trust_group, user_id=user_id, bounds=bounds,
        variance=variance, epsilon=args.epsilon, random_state=seeds[-1],
    )
    print()
    for line in _demo_selection_lines(selection, trust_group, n_releases=len(rows)):
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

    from ._demo import plot_demo

    labels = {"kvh": "hybrid, KVH", "pwh": "hybrid, PWH", "tcm_only": "TCM-only",
              "full_lm": "Full-LM", "adpm": "ADPM variant\n(known variance)"}
    releases = [{"name": row["estimator"], "label": labels[row["estimator"]],
                 "estimate": row["estimate"], "expected_rmse": row["expected_rmse"]}
                for row in rows if row["estimator"] in RELEASE_PANEL]
    figure = plot_demo(
        releases=releases, true_mean=true_mean, hybrid=hybrid, improvements=improvements,
        per_user=per_user, selection=selection, trust_group=trust_group,
        tcm_fraction=tcm_fraction, epsilon=args.epsilon, n=n_users,
        run_gain=kvh["improvement_vs_better"],
    )
    png_path = output / "skhybrid-demo.png"
    figure.savefig(png_path, dpi=100)
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
    # eps2 from eps1 to 100 eps1, and at least 3 times past the saturation points.
    ratio = saturation_ratio(n_users, 0.5, eps1, data_range=data_range, variance=variance)
    top = max(100.0, 3.0 * ratio)
    per_user = per_user_landscape(eps1=eps1, eps2=eps1 * np.logspace(0, np.log10(top), 41),
                                  **common)
    return hybrid, improvements, per_user


def _demo_findings(run_gain, hybrid, improvements, per_user, *, tcm_fraction, epsilon):
    """The theory panels' points in words, with the ratios the figure draws."""
    strong = hybrid.fractions[hybrid.improvement > 1.5]
    last = -1

    def ratio(curve):
        return f"{curve[last] / per_user.adpm[last]:.2f}"

    return [
        "2. Theory (closed-form expected errors; the figure's \"Theory\" panels, with this "
        "run marked):",
        f"  this run ({tcm_fraction:.2%} tcm, epsilon {epsilon:g}): KVH's expected MSE is "
        f"{run_gain:.3f}x smaller than the better baseline's (R = {run_gain:.3f}).",
        f"  at epsilon {epsilon:g} the gain peaks at R = {hybrid.peak_improvement:.3f} with "
        f"{hybrid.peak_fraction:.3%} of the users in tcm, where TCM-only and Full-LM are "
        "equally good; "
        + (f"R > 1.5 from {strong.min():.2%} to {strong.max():.2%} tcm." if strong.size
           else "R stays below 1.5."),
        "  the peak by epsilon (computed at the baselines' crossing): " + ", ".join(
            f"{level:g}: R = {landscape.peak_improvement:.3f} at "
            f"{landscape.peak_fraction:.3%} tcm"
            for level, landscape in improvements.items()) + ".",
        "  far from the peak one group carries the estimate and the hybrid matches the "
        "better baseline (R -> 1): with many tcm users TCM-only is enough.",
        f"  a different epsilon per user, half the users at {per_user.eps1:g} and half at "
        f"{per_user.eps2[last]:.3g} (expected MSE at the salaries' known standard "
        "deviation):",
        f"    the paper's ADPM (Chaudhuri and Courtade, Algorithm 1: minimax weights for the "
        f"worst-case variance) saturates at eps2 = {per_user.saturation:.2g}; UNI's "
        f"expected MSE / its own = {ratio(per_user.uni)}, PropDPM's / its own = "
        f"{ratio(per_user.propdpm)} (minimax weights guard against the worst-case "
        "variance, not the salaries').",
        f"    a variant not in the paper, ADPM's program solved with the known variance, "
        f"saturates at eps2 = {per_user.saturation_known_variance:.2g}; its expected MSE "
        f"is {per_user.uni[last] / per_user.adpm_known_variance[last]:.2f}x smaller than "
        f"UNI's and {per_user.propdpm[last] / per_user.adpm_known_variance[last]:.2f}x "
        "smaller than PropDPM's.",
    ]


def _demo_selection_lines(selection, trust_group, *, n_releases):
    """The model selection and the ledger's per-user spend in words."""
    scores = ", ".join(f"{name} {value:,.0f}" for name, value in selection.scores.items())
    released = float(selection.estimator.mean_[0])
    rmse = math.sqrt(float(selection.estimator.expected_mse_[0]))
    spends = ", ".join(
        f"{group} users {np.min(selection.spent[trust_group == group]):g} to "
        f"{np.max(selection.spent[trust_group == group]):g}" for group in ("tcm", "lm"))
    return [
        f"3. Model selection on a privacy ledger (every user's budget: epsilon "
        f"{selection.budget:g}):",
        f"  candidates by {selection.criterion}, in dollars: {scores}.",
        f"  chose {selection.best}; released {released:,.0f} +- {rmse:,.0f} dollars "
        "(expected RMSE).",
        f"  epsilon spent per user on the ledger: {spends} (the selection: "
        f"{selection.selection_cost}; the release: its epsilon).",
        f"  the {n_releases} releases of part 1 are not on this ledger; with real data each "
        f"would spend every user's epsilon too.",
    ]


# -- skhybrid estimate --------------------------------------------------------------------


_SEPARATORS = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}


@dataclass(frozen=True)
class _Table:
    """A CSV file read for ``skhybrid estimate``: its columns and each row's line number."""

    path: str
    header: list
    rows: list  # one list of fields per data row
    lines: list  # the file line on which each data row starts (the header is line 1)
    decimal: str = "."  # the decimal mark of the numbers (--decimal)

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

    def complete_rows(self, columns):
        """This table without the rows that miss a value in one of ``columns``.

        Returns the table and the line numbers of the rows left out.
        """
        indices = [self.header.index(name) for name in columns if name in self.header]
        keep = [not any(_is_missing(row[index]) for index in indices) for row in self.rows]
        dropped = [line for line, kept in zip(self.lines, keep) if not kept]
        return _Table(
            self.path, self.header, [row for row, kept in zip(self.rows, keep) if kept],
            [line for line, kept in zip(self.lines, keep) if kept], self.decimal,
        ), dropped


# What spreadsheets and pandas write for a missing value (pandas' default NA strings).
_MISSING = {"", "na", "n/a", "nan", "-nan", "null", "none", "#n/a", "<na>"}


def _is_missing(text):
    return (text or "").strip().lower() in _MISSING


def _read_csv(path, sep=None, decimal="."):
    """A CSV file as spreadsheets and pandas write them, with readable errors.

    UTF-8 with or without a byte-order mark (as Excel writes it); the delimiter is
    ``sep``, or sniffed among ``, ; tab |`` from the start of the file (not ``,`` when
    it is the ``decimal`` mark, as in European CSVs: ``62,51;tcm``); quoted fields may
    hold delimiters and line breaks. Python's csv module does the parsing.
    """
    delimiter = _SEPARATORS.get(sep, sep)
    if delimiter is not None and delimiter == decimal:
        raise _CommandError(
            f"--sep {sep!r} and --decimal {decimal!r} are the same character; a European "
            "CSV is --sep ';' --decimal ','"
        )
    candidates = ",;\t|".replace(decimal, "")
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            if delimiter is None:
                sample = handle.read(64 * 1024)
                handle.seek(0)
                try:
                    delimiter = csv.Sniffer().sniff(sample, delimiters=candidates).delimiter
                except csv.Error:  # one column, or nothing to tell the delimiter by
                    delimiter = candidates[0]
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
    return _Table(str(path), header, rows, lines, decimal)


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
            raise _CommandError(
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
            raise _CommandError(
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
    if args.decimal not in (".", ","):
        raise _CommandError(f"--decimal must be '.' or ','; got {args.decimal!r}")
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
            raise _CommandError(f"--skip-missing: every row of {table.path} misses a value")
    X = _numbers(table.column(args.value, "--value"), args.value, table)
    trust_group = None
    if args.trust is not None:
        trust_group = _trust_groups(table.column(args.trust, "--trust"), args.trust, table)
    else:
        print("skhybrid estimate: warning: no --trust column, so every user is tcm (trusts "
              "the curator with their raw value); give --trust COL if some users randomize "
              "on their own device", file=sys.stderr)
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
        raise _CommandError(
            f"--ledger {args.ledger}: refused: "
            f"{_in_user_words(_in_ledger_words(message, args.ledger))}"
        ) from None
    except (ValueError, TypeError) as error:  # the estimator's own checks of the metadata
        message = _in_user_words(str(error), estimator=estimator, name=args.estimator,
                                 table=table)
        if not message.startswith("--estimator"):
            message = f"--estimator {args.estimator}: {message}"
        raise _CommandError(message) from None

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
          f"(private mean of column {args.value!r} +- its expected RMSE)")
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


def _line_list(lines, shown=10):
    """``2, 5, 9`` or ``2, 5, ... (12 in all)``: line numbers for a message."""
    text = ", ".join(str(line) for line in lines[:shown])
    return text if len(lines) <= shown else f"{text}, ... ({len(lines):,} in all)"


def _user_ids(values):
    """Ids read from text: integers when every id is one (as pandas would read them)."""
    values = [value.strip() for value in values]
    if all(re.fullmatch(r"[+-]?\d+", value) for value in values):
        return [int(value) for value in values]
    return values


def _in_ledger_words(message, ledger):
    """A ledger message in the command line's terms (its options, not Python names)."""
    return message.replace(
        "call set_budget for them or give the ledger a default_budget",
        f"set their budget with 'skhybrid ledger {ledger} set-budget' or pass "
        "--default-budget EPS",
    ).replace("set_budget", "set-budget")


# Ledger files this run created: removed if the run is refused (it leaves nothing behind).
_CREATED_LEDGERS = []


def _open_ledger(target, *, create=False, default_budget=None):
    """The ledger at ``target`` (a file or a postgresql:// URL), as the command line opens it.

    Reading commands never create a file; a command that creates one records it, so
    that a refused run removes it again.
    """
    from .accounting import PrivacyLedger
    from .exceptions import LedgerError

    is_file = not target.startswith(("postgresql://", "postgres://"))
    new = is_file and not os.path.exists(target)
    if new and not create:
        raise _CommandError(f"no ledger at {target}")
    try:
        ledger = PrivacyLedger(target, default_budget=default_budget)
    except (LedgerError, ValueError, ImportError) as error:
        _remove_new_file(target) if new else None
        raise _CommandError(f"{target}: {error}") from None
    if new:
        _CREATED_LEDGERS.append(target)
    return ledger


def _remove_new_file(path):
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def _remove_created_ledgers():
    while _CREATED_LEDGERS:
        _remove_new_file(_CREATED_LEDGERS.pop())


def _ledger_and_ids(args, table):
    """The ledger of ``--ledger`` and the ids of ``--user-id`` (both or neither)."""
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
    ids = _user_ids(table.column(args.user_id, "--user-id"))
    try:
        ledger = _open_ledger(args.ledger, create=True, default_budget=args.default_budget)
    except _CommandError as error:
        raise _CommandError(f"--ledger {error}") from None
    return ledger, np.array(ids, dtype=object)


def _ledger(args):
    """``skhybrid ledger FILE [ACTION]``: summary, set-budget, user or export."""
    handler = {None: _ledger_summary, "set-budget": _ledger_set_budget,
               "user": _ledger_user, "export": _ledger_export}[args.action]
    return handler(args)


def _ledger_summary(args):
    from .exceptions import LedgerError

    try:
        summary = _open_ledger(args.file).summary(n_releases=args.releases)
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
        raise _CommandError(f"{option} must be a number; got {text!r}{where}") from None
    if not value >= 0 or (is_delta and not value < 1):
        accepted = "in [0, 1)" if is_delta else ">= 0 (inf for no limit)"
        raise _CommandError(f"{option} must be {accepted}; got {text!r}{where}")
    return value


def _ledger_set_budget(args):
    """Budgets for one user (--user) or for every row of a CSV file (--csv)."""
    if (args.user is None) == (args.csv is None):
        raise _CommandError("give either --user ID (with --epsilon) or --csv FILE.csv "
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
        raise _CommandError(f"{args.file}: {_in_ledger_words(str(error), args.file)}") from None
    print(f"budgets set for {len(ids):,} users in {args.file}")
    return 0


def _looked_up(ledger, texts, read):
    """``read(ledger, ids)`` for ids given as text: integers, or strings if the ledger's are."""
    ids = _user_ids(texts)
    try:
        return ids, read(ledger, np.array(ids, dtype=object))
    except TypeError as error:
        if "ledger's user ids are strings" not in str(error):
            raise _CommandError(str(error)) from None
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
  skhybrid ledger budget.sqlite user 17
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


def _add_ledger_parser(commands, formatter):
    ledger = commands.add_parser(
        "ledger", formatter_class=formatter,
        help="look at and manage a privacy ledger: summary, budgets, users, export",
        description=(
            "A privacy ledger written by 'skhybrid estimate --ledger' or\n"
            "skhybrid.accounting.PrivacyLedger: an SQLite FILE, or a postgresql:// URL.\n"
            "Without an ACTION: users, epsilon spent (quantiles), users with an exhausted\n"
            "budget, and the latest releases. Reading actions never create a file."
        ),
        epilog=(
            "examples:\n"
            "  skhybrid ledger budget.sqlite\n"
            "  skhybrid ledger budget.sqlite set-budget --user 17 --epsilon 3\n"
            "  skhybrid ledger budget.sqlite set-budget --csv budgets.csv --id-column id \\\n"
            "      --epsilon budget\n"
            "  skhybrid ledger budget.sqlite user 17 42\n"
            "  skhybrid ledger budget.sqlite export users.csv\n"
            "  skhybrid ledger budget.sqlite export trail.csv --user 17"
        ),
    )
    ledger.add_argument("file", metavar="FILE", help="the ledger file (or a postgresql:// URL)")
    ledger.add_argument("--releases", type=_seed, default=5, metavar="N",
                        help="how many of the latest releases to list (default: 5)")
    ledger.add_argument("--json", action="store_true", help="print JSON")
    actions = ledger.add_subparsers(title="actions", dest="action", metavar="ACTION")
    budget = actions.add_parser(
        "set-budget", formatter_class=formatter,
        help="set the budget of one or more users, or of every row of a CSV file",
        description="Set users' budgets (what they already spent is kept). Creates the "
                    "ledger file if absent.")
    budget.add_argument("--user", nargs="+", metavar="ID", help="the users' ids")
    budget.add_argument("--csv", metavar="FILE.csv", help="a CSV file of ids and budgets")
    budget.add_argument("--id-column", default="id", metavar="COL",
                        help="with --csv: the column of user ids (default: id)")
    budget.add_argument("--epsilon", required=True, metavar="EPS|COL",
                        help="the epsilon budget (>= 0, inf for no limit); with --csv, the "
                             "column that holds it")
    budget.add_argument("--delta", default=None, metavar="DELTA|COL",
                        help="the delta budget in [0, 1) (default: 0); with --csv, a column")
    budget.add_argument("--sep", default=None, metavar="SEP",
                        help="with --csv: the delimiter (default: sniffed)")
    user = actions.add_parser(
        "user", formatter_class=formatter,
        help="users' spend, remaining budget and audit trail",
        description="For each user: epsilon and delta spent and remaining, and every\n"
                    "release they took part in (time, estimator, mechanism, cost).")
    user.add_argument("ids", nargs="+", metavar="ID", help="user ids")
    user.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                      help="print JSON")
    export = actions.add_parser(
        "export", formatter_class=formatter,
        help="write the users (or the releases, or some users' audit trails) as CSV",
        description="Write a CSV file: by default every user's budget and spends; with\n"
                    "--releases the history of releases; with --user the audit trail of\n"
                    "those users (one row per user and release).")
    export.add_argument("output", metavar="OUT.csv", help="the CSV file to write")
    export.add_argument("--releases", action="store_true", help="export the releases")
    export.add_argument("--user", nargs="+", metavar="ID",
                        help="export these users' audit trails")
    ledger.set_defaults(handler=_ledger)


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
            "dataset (skhybrid.datasets.load_salaries: 252,540 SYNTHETIC salaries in US\n"
            "dollars, shaped like the University of California 2010 salaries, bounds 0 to\n"
            "2,349,033, public standard deviation 53,254). A random --tcm-fraction of the\n"
            "users trusts the curator (tcm), the others randomize locally (lm); everyone\n"
            "has --epsilon. Prints and draws: 1. this run's releases (the hybrids, both\n"
            "baselines, ADPM) with their expected errors against the true mean; 2. the\n"
            "theory (closed-form expected errors, this run marked): the hybrid's gain over\n"
            "the tcm share and epsilon with its computed peak, and a different epsilon per\n"
            "user (the paper's ADPM, its known-variance variant, UNI, PropDPM); 3. a\n"
            "budgeted model selection released on a privacy ledger, with each user's\n"
            "spend. Writes DIR/skhybrid-demo.csv and DIR/skhybrid-demo.png (the plot\n"
            "needs matplotlib: pip install \"skhybrid[plot]\")."
        ),
    )
    demo.add_argument("--output", metavar="DIR", default="skhybrid-demo",
                      help="directory for skhybrid-demo.csv and .png, created if absent "
                           "(default: ./skhybrid-demo)")
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
                               "default: every user is tcm (with a warning)")
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
    estimate.add_argument("--decimal", metavar="MARK", default=".",
                          help="the decimal mark of the file's numbers: '.' (default) or ',' "
                               "(European CSVs: --decimal , with ; or tab as the delimiter)")
    estimate.add_argument("--skip-missing", action="store_true",
                          help="leave out the rows with a missing value (empty, NA, NaN, "
                               "null, None) in a column the command reads, and report how "
                               "many; default: such a row is an error. The remaining users "
                               "are the ones released on")
    estimate.add_argument("--clamp", action="store_true",
                          help="project the estimate onto --bounds (post-processing: the "
                               "error never grows, the estimate is no longer unbiased)")
    estimate.add_argument("--json", action="store_true",
                          help="print one JSON object: estimator, estimate, expected_rmse, "
                               "expected_mse, n_users, n_tcm, n_lm, epsilon (or null), "
                               "epsilon_column (or null), bounds, seeded, ledger, charged "
                               "(with --ledger: the users charged per epsilon)")
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

    _add_ledger_parser(commands, formatter)

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
    _CREATED_LEDGERS.clear()
    try:
        return args.handler(args)
    except _CommandError as error:
        _remove_created_ledgers()
        print(f"skhybrid {args.command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader closed the pipe (``skhybrid demo | head``): stop quietly, as Unix
        # tools do; pointing stdout at devnull avoids a second error at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
