"""What ``skhybrid demo`` computes besides its releases: where the hybrid model pays.

Every number here is the papers' closed-form expected error (:mod:`skhybrid.theory`)
for the bundled salaries' public parameters (n, the bounds, the standard deviation); no
data are touched. The demo's figure draws these curves; its table states the same
ratios.
"""

from dataclasses import dataclass

import numpy as np

from .theory import (
    full_lm_mse,
    hybrid_mse,
    kvh_weight,
    laplace_noise_variances,
    propdpm_weights,
    pwh_weight,
    relative_improvement,
    saturation_ratio,
    tcm_only_mse,
    two_group_mse,
    uni_weights,
)

#: The shares of tcm users the figure sweeps (log-spaced, 0.01% to 50%).
TCM_FRACTIONS = np.logspace(-4, np.log10(0.5), 121)
#: The privacy levels of the improvement panel.
EPSILONS = (0.25, 1.0, 4.0)


@dataclass
class HybridLandscape:
    """Expected MSEs (Avent et al. 2020, Lemmas 3.2, 3.4, 3.13) over the tcm share.

    Attributes
    ----------
    fractions : ndarray of shape (n_fractions,)
    tcm_only, full_lm, kvh, pwh : ndarray of shape (n_fractions,)
        Expected MSE about the population mean.
    improvement : ndarray of shape (n_fractions,)
        KVH's relative improvement over the better baseline (Def. 3.5).
    """

    fractions: np.ndarray
    tcm_only: np.ndarray
    full_lm: np.ndarray
    kvh: np.ndarray
    pwh: np.ndarray
    improvement: np.ndarray

    @property
    def best(self):
        """Index of the tcm share where KVH gains most over the better baseline."""
        return int(np.argmax(self.improvement))


def hybrid_landscape(*, n, data_range, variance, epsilon, fractions=TCM_FRACTIONS):
    """The baselines' and the hybrids' expected MSEs for each tcm share, Laplace noise.

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
    c = np.asarray(fractions, dtype=float)
    s_T2, s_L2 = laplace_noise_variances(n, c, data_range, epsilon)
    problem = {"n": n, "c": c, "s_T2": s_T2, "s_L2": s_L2, "sigma_T2": variance,
               "sigma_L2": variance}
    kvh = hybrid_mse(kvh_weight(n=n, c=c, s_T2=s_T2, s_L2=s_L2, sigma2=variance), **problem)
    pwh = hybrid_mse(pwh_weight(n=n, c=c, s_T2=s_T2, s_L2=s_L2), **problem)
    return HybridLandscape(
        fractions=c,
        tcm_only=tcm_only_mse(n=n, c=c, s_T2=s_T2, sigma_T2=variance, sigma_L2=variance),
        full_lm=np.broadcast_to(full_lm_mse(n=n, s_L2=s_L2), c.shape).copy(),
        kvh=kvh, pwh=pwh,
        improvement=relative_improvement(kvh, **problem),
    )


@dataclass
class PerUserLandscape:
    """Expected MSEs when half the users choose epsilon_1 and half a larger epsilon_2.

    ADPM from Theorem 1 of Chaudhuri and Courtade (:func:`~skhybrid.theory.two_group_mse`),
    UNI (everyone at epsilon_1) and PropDPM (weights proportional to epsilon) from their
    weights (:func:`~skhybrid.theory.uni_weights`, :func:`~skhybrid.theory.propdpm_weights`).

    Attributes
    ----------
    eps1 : float
    eps2 : ndarray of shape (n_points,)
    adpm, uni, propdpm : ndarray of shape (n_points,)
    saturation : float
        ``R eps1`` (Eq. (4)): past it ADPM's error stops falling.
    """

    eps1: float
    eps2: np.ndarray
    adpm: np.ndarray
    uni: np.ndarray
    propdpm: np.ndarray
    saturation: float


def per_user_landscape(*, n, data_range, variance, eps1, eps2, fraction=0.5):
    """ADPM, UNI and PropDPM for two privacy levels, over the second level.

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
    adpm, uni, propdpm = (np.empty(eps2.size) for _ in range(3))
    for index, level in enumerate(eps2):
        epsilon = np.repeat([eps1, level], [n_first, n - n_first])
        adpm[index] = two_group_mse(n, fraction, eps1, level, data_range=data_range,
                                    variance=variance)
        uni[index] = uni_weights(epsilon, data_range=data_range, variance=variance).expected_mse
        propdpm[index] = propdpm_weights(epsilon, data_range=data_range,
                                         variance=variance).expected_mse
    ratio = saturation_ratio(n, fraction, eps1, data_range=data_range, variance=variance)
    return PerUserLandscape(eps1=eps1, eps2=eps2, adpm=adpm, uni=uni, propdpm=propdpm,
                            saturation=ratio * eps1)


def _dashed(display, label):
    """Draw one curve of a CurveDisplay dashed (it overlaps another on part of its range)."""
    display.lines_[label].lines[0].set_linestyle("--")


def plot_landscapes(hybrid, improvements, per_user, *, tcm_fraction, epsilon, n):
    """The demo's figure: three panels that show where each estimator pays off.

    Parameters
    ----------
    hybrid : HybridLandscape
        At the demo's epsilon.
    improvements : dict of float to HybridLandscape
        One landscape per epsilon of the improvement panel.
    per_user : PerUserLandscape
    tcm_fraction, epsilon : float
        The demo's population, marked on the first two panels.
    n : int

    Returns
    -------
    figure : matplotlib Figure
    """
    import matplotlib.pyplot as plt

    from .plotting import CurveDisplay

    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4.9), layout="constrained")
    percent = 100 * hybrid.fractions
    curve = {"marker": "", "linewidth": 2}

    display = CurveDisplay(
        x=percent,
        curves={"TCM-only": np.sqrt(hybrid.tcm_only), "Full-LM": np.sqrt(hybrid.full_lm),
                "hybrid, KVH": np.sqrt(hybrid.kvh), "hybrid, PWH": np.sqrt(hybrid.pwh)},
        xlabel="users who trust the curator (%)", ylabel="expected RMSE of the mean",
        title=f"Error against the tcm share, epsilon = {epsilon:g}",
    ).plot(ax=left, xscale="log", yscale="log", **curve)
    _dashed(display, "hybrid, PWH")  # PWH is within a few % of KVH: keep KVH visible
    best = hybrid.best
    strong = hybrid.improvement > 1.5
    if strong.any():
        left.axvspan(percent[strong].min(), percent[strong].max(), color="tab:green",
                     alpha=0.12, linewidth=0)
    left.axvline(100 * tcm_fraction, color="0.4", linestyle="--", linewidth=1)
    left.annotate(
        f"hybrid MSE {hybrid.improvement[best]:.2f}x smaller\nthan both baselines'"
        "\n(shaded: more than 1.5x)",
        xy=(percent[best], np.sqrt(hybrid.kvh[best])), xytext=(0.03, 0.1),
        textcoords="axes fraction", fontsize="small",
        arrowprops={"arrowstyle": "->", "color": "0.3"},
    )

    CurveDisplay(
        x=percent,
        curves={f"epsilon = {level:g}": landscape.improvement
                for level, landscape in improvements.items()},
        xlabel="users who trust the curator (%)",
        ylabel="R = better baseline's MSE / KVH's MSE",
        title="Hybrid gain: up to 2x where the baselines cross",
    ).plot(ax=middle, xscale="log", **curve)
    middle.axhline(2.0, color="0.4", linestyle=":", linewidth=1)
    middle.axhline(1.0, color="0.7", linewidth=0.8)
    middle.axvline(100 * tcm_fraction, color="0.4", linestyle="--", linewidth=1)
    middle.set_ylim(0.9, 2.15)

    display = CurveDisplay(
        x=per_user.eps2,
        curves={"ADPM": np.sqrt(per_user.adpm),
                "UNI (everyone at eps1)": np.sqrt(per_user.uni),
                "PropDPM (weights ~ epsilon)": np.sqrt(per_user.propdpm)},
        xlabel="epsilon of the other half of the users (eps2)",
        ylabel="expected RMSE of the mean",
        title=f"A different epsilon per user: half at eps1 = {per_user.eps1:g}",
    ).plot(ax=right, xscale="log", yscale="log", **curve)
    _dashed(display, "PropDPM (weights ~ epsilon)")  # equal to ADPM below saturation
    right.legend(fontsize="small", loc="center right")
    right.axvline(per_user.saturation, color="0.4", linestyle=":", linewidth=1)
    right.annotate(f"ADPM saturates at eps2 = {per_user.saturation:.2g}:\n"
                   "more epsilon buys nothing",
                   xy=(per_user.saturation, np.sqrt(per_user.adpm[-1])),
                   xytext=(0.45, 0.1), textcoords="axes fraction", fontsize="small",
                   arrowprops={"arrowstyle": "->", "color": "0.3"})
    figure.suptitle(
        f"skhybrid demo: {n:,} synthetic salaries (dashed: this run's "
        f"{100 * tcm_fraction:.2g}% tcm users)", fontsize="medium",
    )
    return figure
