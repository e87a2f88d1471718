"""``skhybrid demo``: the main job on the bundled salaries, printed (and plotted)."""

import csv
import math
from pathlib import Path

import numpy as np

from ._common import (
    _DEMO_DESCRIPTIONS,
    _DEMO_METHODS,
    _PLOT_HINT,
    METHODS,
    CommandError,
    _child_seeds,
    _noise_line,
    _use_matplotlib,
)


def run_demo(args):
    from .._demo import RELEASE_PANEL, select_and_release
    from ..accounting import PrivacyLedger
    from ..datasets import load_salaries
    from ..datasets._salaries import UC_SALARY_STD

    if not 0 < args.tcm_fraction < 1:
        raise CommandError(
            f"--tcm-fraction must be in (0, 1) so that both trust groups exist; "
            f"got {args.tcm_fraction}"
        )
    if not (args.epsilon > 0 and math.isfinite(args.epsilon)):
        raise CommandError(f"--epsilon must be a finite number > 0; got {args.epsilon}")
    salaries = load_salaries()
    X, bounds = salaries.data, salaries.bounds
    n_users = X.shape[0]
    # Who trusts the curator is the users' choice, public metadata; simulated with a
    # fixed seed so the population is the same in every run.
    n_tcm = round(args.tcm_fraction * n_users)
    if n_tcm in (0, n_users):
        raise CommandError(f"--tcm-fraction {args.tcm_fraction} leaves a trust group empty")
    trust_group = np.full(n_users, "lm", dtype="<U3")
    trust_group[np.random.default_rng(0).choice(n_users, size=n_tcm, replace=False)] = "tcm"
    tcm_fraction = n_tcm / n_users

    # The population's standard deviation is public in the paper's setting (Sec. 4).
    variance = UC_SALARY_STD**2
    seeds = _child_seeds(args.seed, len(_DEMO_METHODS) + 1)
    # Part 1's releases are recorded as the library asks of every release: on a ledger.
    user_id = np.arange(n_users)
    releases_ledger = PrivacyLedger(default_budget=np.inf)
    rows = []
    for name, seed in zip(_DEMO_METHODS, seeds):
        method = METHODS[name]
        estimator = method.build(
            epsilon=args.epsilon, bounds=bounds, variance=variance, random_state=seed
        ).set_params(ledger=releases_ledger)
        estimator.fit(X, trust_group=trust_group, user_id=user_id)
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
    hybrid, improvements, per_user, common_gains = _demo_landscapes(
        n_users, bounds, variance, args)
    print()
    kvh = next(row for row in rows if row["estimator"] == "kvh")
    for line in _demo_findings(kvh["improvement_vs_better"], hybrid, improvements,
                               per_user, tcm_fraction=tcm_fraction, epsilon=args.epsilon,
                               common_gains=common_gains):
        print(line)

    selection = select_and_release(
        X.reshape(-1, 1), trust_group=trust_group, user_id=user_id, bounds=bounds,
        variance=variance, epsilon=args.epsilon, random_state=seeds[-1],
    )
    print()
    part_1_spent = releases_ledger.spent(user_id)
    for line in _demo_selection_lines(selection, trust_group, n_releases=len(rows),
                                      part_1_spent=part_1_spent):
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

    from .._demo import plot_demo

    labels = {"kvh": "hybrid, KVH", "pwh": "hybrid, PWH", "tcm_only": "TCM-only",
              "full_lm": "Full-LM", "adpm": "ADPM variant\n(known variance)"}
    releases = [{"name": row["estimator"], "label": labels[row["estimator"]],
                 "estimate": row["estimate"], "expected_rmse": row["expected_rmse"]}
                for row in rows if row["estimator"] in RELEASE_PANEL]
    figure = plot_demo(
        releases=releases, true_mean=true_mean, hybrid=hybrid, improvements=improvements,
        per_user=per_user, selection=selection, trust_group=trust_group,
        tcm_fraction=tcm_fraction, epsilon=args.epsilon, n=n_users,
        run_gain=kvh["improvement_vs_better"], common_gains=common_gains,
    )
    png_path = output / "skhybrid-demo.png"
    figure.savefig(png_path, dpi=100)
    plt.close(figure)
    print(f"wrote {png_path}")
    return 0


def _demo_landscapes(n_users, bounds, variance, args):
    """The closed-form curves of the demo's figure, for the salaries' public parameters."""
    from .._demo import COMMON_SHARES, EPSILONS, hybrid_landscape, per_user_landscape
    from ..theory import saturation_ratio

    data_range = bounds[1] - bounds[0]
    common = {"n": n_users, "data_range": data_range, "variance": variance}
    levels = sorted({*EPSILONS, args.epsilon})
    improvements = {level: hybrid_landscape(epsilon=level, **common) for level in levels}
    hybrid = improvements[args.epsilon]
    eps1 = args.epsilon / 10
    # eps2 from eps1 to 100 eps1, and at least 3 times past the saturation points.
    ratio = saturation_ratio(n_users, 0.5, eps1, data_range=data_range, variance=variance)
    top = max(100.0, 3.0 * ratio)
    per_user = per_user_landscape(eps1=eps1, eps2=eps1 * np.logspace(0, np.log10(top), 41),
                                  **common)
    shares = hybrid_landscape(epsilon=args.epsilon, fractions=COMMON_SHARES, **common)
    return hybrid, improvements, per_user, dict(zip(COMMON_SHARES, shares.improvement.tolist()))


def _demo_findings(run_gain, hybrid, improvements, per_user, *, tcm_fraction, epsilon,
                   common_gains):
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
        "  where the hybrid pays: near this run's share; at " + " and at ".join(
            f"{share:.0%} tcm R = {gain:.2f}" for share, gain in common_gains.items())
        + " (the README's example is 5%): with a few percent of the users in tcm, "
        "TCM-only is nearly as good.",
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


def _demo_selection_lines(selection, trust_group, *, n_releases, part_1_spent):
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
        f"  the {n_releases} releases of part 1 are on a ledger of their own (no budget "
        f"limit): they spent epsilon {part_1_spent.min():g} to {part_1_spent.max():g} per "
        "user (tcm_only and lm_only release one group's data each).",
    ]
