"""``skhybrid demo``: this run's releases against the truth, the theory behind them, a selection.

Each release on the bundled synthetic salaries is drawn with its expected error next to
the true mean (shown only because the data are synthetic), beside the papers'
closed-form expected errors (:mod:`skhybrid.theory`) with this run marked, and a short
budgeted model selection (:func:`select_and_release`) on a
:class:`~skhybrid.accounting.PrivacyLedger`.
"""

import math
from dataclasses import dataclass

import numpy as np

from .theory import (
    adpm_weights,
    affine_mse,
    peak_fraction,
    propdpm_weights,
    saturation_ratio,
    two_group_mse,
    uni_weights,
)

#: The shares of tcm users the figure sweeps (log-spaced, 0.01% to 50%).
TCM_FRACTIONS = np.logspace(-4, np.log10(0.5), 121)
#: The privacy levels of the improvement panel.
EPSILONS = (0.25, 1.0, 4.0)
#: The estimators of the release panel: the hybrids and both baselines (plus ADPM).
RELEASE_PANEL = ("kvh", "pwh", "tcm_only", "full_lm", "adpm")
#: tcm shares a reader is likely to try (the README's example, a new user's), where the
#: hybrid gains little: the demo says so and marks them, beside its own share.
COMMON_SHARES = (0.02, 0.05)
#: The strategies the demo's model selection chooses among.
SELECTION_CANDIDATES = ("kvh", "pwh", "naive", "tcm_only", "full_lm")
#: Every user's budget on the demo's ledger.
DEMO_BUDGET = 3.0
_DOLLARS = "US$"


# -- theory: the hybrid model over the tcm share --------------------------------------------


@dataclass
class HybridLandscape:
    """Expected MSEs (Avent et al. 2020, Lemmas 3.2, 3.4, 3.13) at each tcm share of
    ``fractions``, KVH's ``improvement`` R (Def. 3.5), and R's peak: computed where the
    baselines' expected MSEs cross, not read off the grid."""

    fractions: np.ndarray
    tcm_only: np.ndarray
    full_lm: np.ndarray
    kvh: np.ndarray
    pwh: np.ndarray
    improvement: np.ndarray
    peak_fraction: float
    peak_improvement: float


def hybrid_landscape(*, n, data_range, variance, epsilon, fractions=TCM_FRACTIONS):
    """The baselines' and the hybrids' expected MSEs for each tcm share, Laplace noise.

    The peak of R is where the baselines cross (:func:`~skhybrid.theory.peak_fraction`,
    Lemma 3.8 of Avent et al. 2020), computed rather than read off the grid.

    Parameters
    ----------
    n : int
        Number of users.
    data_range : float
        Width m of the bounds.
    variance : float
        The data's variance (both trust groups).
    epsilon : float
    fractions : array-like, default=TCM_FRACTIONS

    Returns
    -------
    landscape : HybridLandscape
    """
    from .reproduce._common_hybrid import analytic_curves

    fractions = np.asarray(fractions, dtype=float)
    peak = peak_fraction(n=n, m=data_range, epsilon=epsilon, sigma2=variance)
    kvh, pwh = (analytic_curves(strategy, n=n, c=np.append(fractions, peak), m=data_range,
                                epsilon=epsilon, sigma2=variance)
                for strategy in ("kvh", "pwh"))
    return HybridLandscape(
        fractions=fractions, tcm_only=kvh["mse_tcm_only"][:-1], full_lm=kvh["mse_full_lm"][:-1],
        kvh=kvh["mse_hybrid"][:-1], pwh=pwh["mse_hybrid"][:-1], improvement=kvh["R"][:-1],
        peak_fraction=peak, peak_improvement=float(kvh["R"][-1]),
    )


# -- theory: a different epsilon per user ---------------------------------------------------


@dataclass
class PerUserLandscape:
    """Expected MSEs at the data's known variance when a share of the users chooses
    ``eps1`` and the rest each of ``eps2``: the paper's ADPM (Algorithm 1 of Chaudhuri and
    Courtade: minimax weights for the worst-case variance), a variant not in the paper
    (the same program at the known variance, :func:`~skhybrid.theory.two_group_mse`),
    UNI and PropDPM; ``saturation*`` is ``R eps1`` (Eq. (4)), past which ADPM's error
    stops falling."""

    eps1: float
    eps2: np.ndarray
    adpm: np.ndarray
    adpm_known_variance: np.ndarray
    uni: np.ndarray
    propdpm: np.ndarray
    saturation: float
    saturation_known_variance: float


def per_user_landscape(*, n, data_range, variance, eps1, eps2, fraction=0.5):
    """The paper's ADPM, its known-variance variant, UNI and PropDPM over epsilon_2.

    Parameters
    ----------
    n : int
    data_range, variance : float
    eps1 : float
        The more private group's level.
    eps2 : array-like
        The other group's levels, >= eps1.
    fraction : float, default=0.5
        Share of users at eps1.

    Returns
    -------
    landscape : PerUserLandscape
    """
    eps2 = np.asarray(eps2, dtype=float)
    n_first = int(round(fraction * n))
    counts = np.array([n_first, n - n_first])
    curves = {name: np.empty(eps2.size) for name in ("adpm", "variant", "uni", "propdpm")}
    common = {"data_range": data_range, "counts": counts}
    for index, level in enumerate(eps2):
        levels = np.array([eps1, level])
        paper = adpm_weights(levels, **common)  # Algorithm 1: worst-case variance
        curves["adpm"][index] = affine_mse(paper.weights, variance=variance,
                                           noise_scale=paper.noise_scale, counts=counts)
        curves["variant"][index] = two_group_mse(n, fraction, eps1, level,
                                                 data_range=data_range, variance=variance)
        curves["uni"][index] = uni_weights(levels, variance=variance, **common).expected_mse
        curves["propdpm"][index] = propdpm_weights(levels, variance=variance,
                                                   **common).expected_mse
    return PerUserLandscape(
        eps1=eps1, eps2=eps2, adpm=curves["adpm"], adpm_known_variance=curves["variant"],
        uni=curves["uni"], propdpm=curves["propdpm"],
        saturation=saturation_ratio(n, fraction, eps1, data_range=data_range) * eps1,
        saturation_known_variance=saturation_ratio(
            n, fraction, eps1, data_range=data_range, variance=variance) * eps1,
    )


# -- the model selection ----------------------------------------------------------------------


@dataclass
class Selection:
    """A budgeted model selection: each candidate's ``scores`` (the ``criterion``, smaller
    is better), the ``best``, its ``estimator`` fitted once on the ``ledger``, each user's
    epsilon ``spent`` (in ``user_id`` order) of their ``budget``, and what choosing cost."""

    scores: dict
    criterion: str
    best: str
    estimator: object
    ledger: object
    spent: np.ndarray
    budget: float
    selection_cost: str


def select_and_release(X, *, trust_group, user_id, bounds, variance, epsilon,
                       budget=DEMO_BUDGET, candidates=SELECTION_CANDIDATES,
                       random_state=None):
    """Choose a strategy of HybridMeanEstimator privately and release it on a ledger.

    :class:`~skhybrid.model_selection.PrivateGridSearchCV` compares the candidates by
    ``expected_mse_``, which with a public ``variance`` depends on public quantities
    only (the group sizes, epsilon, the bounds and the variance): the choice charges
    nobody and reads no private value. It reserves the chosen fit's cost on an in-memory
    :class:`~skhybrid.accounting.PrivacyLedger` in which every user has ``budget``,
    fits the chosen estimator once and gives back what that fit did not use.

    Returns
    -------
    selection : Selection
    """
    from .accounting import PrivacyLedger
    from .mean import HybridMeanEstimator
    from .model_selection import PrivateGridSearchCV

    ledger = PrivacyLedger(None, default_budget=budget)
    search = PrivateGridSearchCV(
        HybridMeanEstimator(epsilon=epsilon, bounds=bounds, variance=variance,
                            random_state=random_state, ledger=ledger),
        {"strategy": list(candidates)}, random_state=random_state,
    )
    search.fit(X, trust_group=trust_group, user_id=user_id)
    scores = {params["strategy"]: math.sqrt(float(figure)) for params, figure in
              zip(search.cv_results_["params"], search.cv_results_["expected_mse"])}
    return Selection(
        scores=scores, criterion="expected RMSE (public quantities only)",
        best=search.best_params_["strategy"], estimator=search.best_estimator_,
        ledger=ledger, spent=ledger.spent(user_id), budget=budget,
        selection_cost="0 (PrivateGridSearchCV ranked public expected errors)",
    )


# -- the figure -------------------------------------------------------------------------------


def _dashed(display, label):
    """Draw one curve of a CurveDisplay dashed (it overlaps another on part of its range)."""
    display.lines_[label].lines[0].set_linestyle("--")


def _plot_release(ax, releases, true_mean):
    """This run's estimates with +- one expected RMSE against the true mean."""
    from matplotlib.ticker import MaxNLocator

    names = [release["label"] for release in releases]
    positions = np.arange(len(releases))[::-1]
    ax.errorbar([release["estimate"] for release in releases], positions,
                xerr=[release["expected_rmse"] for release in releases], fmt="o",
                color="tab:blue", ecolor="tab:blue", capsize=4, label="this run's release")
    ax.axvline(true_mean, color="tab:red", linewidth=1.5,
               label="true mean (synthetic data only)")
    ax.set_yticks(positions, names)
    ax.set_ylim(positions.min() - 1.4, positions.max() + 0.6)  # room for the legend
    ax.set_xlabel(f"mean salary ({_DOLLARS}); bars: +-1 expected RMSE")
    ax.set_ylabel("estimator")
    ax.set_title("This run: the releases against the truth")
    ax.legend(fontsize="small", loc="lower center", ncols=2)
    ax.ticklabel_format(axis="x", style="plain", useOffset=False)
    ax.xaxis.set_major_locator(MaxNLocator(4))


def _plot_theory_error(ax, hybrid, *, tcm_fraction, epsilon, run):
    from .plotting import CurveDisplay

    percent = 100 * hybrid.fractions
    display = CurveDisplay(
        x=percent,
        curves={"TCM-only": np.sqrt(hybrid.tcm_only), "Full-LM": np.sqrt(hybrid.full_lm),
                "hybrid, KVH": np.sqrt(hybrid.kvh), "hybrid, PWH": np.sqrt(hybrid.pwh)},
        xlabel="users who trust the curator (%)",
        ylabel=f"expected RMSE of the mean ({_DOLLARS})",
        title=f"Theory: error against the tcm share, eps = {epsilon:g}",
    ).plot(ax=ax, xscale="log", yscale="log", marker="", linewidth=2)
    _dashed(display, "hybrid, PWH")  # PWH is within a few % of KVH: keep KVH visible
    for name, color in (("tcm_only", "C0"), ("full_lm", "C1"), ("kvh", "C2")):
        ax.plot(100 * tcm_fraction, run[name], marker="o", markersize=8, color=color,
                markeredgecolor="black", linestyle="none")
    ax.plot([], [], marker="o", color="white", markeredgecolor="black", linestyle="none",
            label="this run (expected RMSE)")
    ax.legend(fontsize="small", loc="upper right")


def _plot_theory_gain(ax, improvements, *, tcm_fraction, epsilon, run_gain, common_gains):
    from .plotting import CurveDisplay

    curves = {f"eps = {level:g}": landscape.improvement
              for level, landscape in improvements.items()}
    first = next(iter(improvements.values()))
    CurveDisplay(
        x=100 * first.fractions, curves=curves,
        xlabel="users who trust the curator (%)",
        ylabel="R = better baseline's MSE / KVH's MSE",
        title="Theory: the hybrid's gain, up to 2x",
    ).plot(ax=ax, xscale="log", marker="", linewidth=2)
    ours = improvements[epsilon]
    ax.plot(100 * ours.peak_fraction, ours.peak_improvement, marker="^", color="0.3",
            linestyle="none", label=f"peak at eps {epsilon:g}: R = {ours.peak_improvement:.3f}")
    ax.plot(100 * tcm_fraction, run_gain, marker="o", markersize=8, color="white",
            markeredgecolor="black", linestyle="none", label=f"this run: R = {run_gain:.3f}")
    ax.plot([100 * share for share in common_gains], list(common_gains.values()), marker="s",
            markersize=6, color="0.5", linestyle="none", label=", ".join(
                f"{share:.0%} tcm: R = {gain:.2f}" for share, gain in common_gains.items()))
    ax.axhline(1.0, color="0.7", linewidth=0.8)
    ax.set_ylim(0.9, 2.4)
    ax.legend(fontsize="small", loc="upper right", ncols=2)


def _plot_per_user(ax, per_user):
    from .plotting import CurveDisplay

    paper = "ADPM, paper (Alg. 1, worst-case var.)"
    variant = "ADPM variant: known variance"
    display = CurveDisplay(
        x=per_user.eps2,
        curves={paper: np.sqrt(per_user.adpm),
                variant: np.sqrt(per_user.adpm_known_variance),
                "UNI (everyone at eps1)": np.sqrt(per_user.uni),
                "PropDPM (weights ~ epsilon)": np.sqrt(per_user.propdpm)},
        xlabel="epsilon of the other half of the users (eps2)",
        ylabel=f"expected RMSE of the mean ({_DOLLARS})",
        title=f"Theory: a different epsilon per user (half at {per_user.eps1:g})",
    ).plot(ax=ax, xscale="log", marker="", linewidth=2)
    _dashed(display, variant)
    ax.axvline(per_user.saturation_known_variance, color="0.4", linestyle=":", linewidth=1)
    ax.legend(fontsize="x-small", loc="center right")


def _plot_selection(ax, selection):
    names = list(selection.scores)
    colors = ["tab:green" if name == selection.best else "0.65" for name in names]
    ax.barh(np.arange(len(names))[::-1], [selection.scores[name] for name in names],
            color=colors)
    ax.set_yticks(np.arange(len(names))[::-1], names)
    ax.set_xlabel(f"expected RMSE ({_DOLLARS}): the selection's criterion")
    ax.set_ylabel("candidate strategy")
    ax.set_title(f"Model selection: chose {selection.best} (green)")


def _plot_spend(ax, selection, trust_group):
    groups = ("tcm", "lm")
    spent = [float(np.mean(selection.spent[trust_group == group])) for group in groups]
    positions = np.arange(len(groups))
    ax.bar(positions, spent, color="tab:purple", label="spent on the ledger")
    ax.bar(positions, [selection.budget - value for value in spent], bottom=spent,
           color="0.85", label="remaining")
    ax.set_xticks(positions, [f"{group} users" for group in groups])
    ax.set_xlabel("trust group (mean over its users)")
    ax.set_ylabel("epsilon per user")
    ax.set_ylim(0, selection.budget * 1.25)
    ax.axhline(selection.budget, color="0.3", linestyle=":", linewidth=1)
    ax.set_title(f"Ledger: per-user spend, budget {selection.budget:g}")
    ax.legend(fontsize="small", loc="upper right", ncols=2)


def plot_demo(*, releases, true_mean, hybrid, improvements, per_user, selection,
              trust_group, tcm_fraction, epsilon, n, run_gain, common_gains):
    """The demo's figure: this run's releases, the theory with this run marked, a selection.

    Returns
    -------
    figure : matplotlib Figure
    """
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 3, figsize=(16, 9))
    # Fixed margins (constrained layout costs a second of the demo's 10): room for the
    # release panel's estimator names on the left and the title on top.
    figure.subplots_adjust(left=0.1, right=0.985, bottom=0.065, top=0.93, wspace=0.32,
                           hspace=0.3)
    run = {release["name"]: release["expected_rmse"] for release in releases}
    _plot_release(axes[0, 0], releases, true_mean)
    _plot_theory_error(axes[0, 1], hybrid, tcm_fraction=tcm_fraction, epsilon=epsilon,
                       run=run)
    _plot_theory_gain(axes[0, 2], improvements, tcm_fraction=tcm_fraction, epsilon=epsilon,
                      run_gain=run_gain, common_gains=common_gains)
    _plot_per_user(axes[1, 0], per_user)
    _plot_selection(axes[1, 1], selection)
    _plot_spend(axes[1, 2], selection, trust_group)
    figure.suptitle(
        f"skhybrid demo: {n:,} synthetic salaries, {100 * tcm_fraction:.2g}% tcm users, "
        f"epsilon {epsilon:g} (\"Theory\" panels: closed-form expected errors; "
        "circles: this run)", fontsize="medium",
    )
    return figure
