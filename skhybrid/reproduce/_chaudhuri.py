"""Chaudhuri and Courtade, "Mean Estimation Under Heterogeneous Privacy": Table II, Figure 1.

All are simulations: every trial draws a fresh dataset, fits each estimator on it with
its own seeded noise, and records the squared error against the population mean; the
analytic curves are the errors of :mod:`skhybrid.theory` (Algorithm 1's objective for
the affine estimators, the Sample mechanism's error), at the worst-case variance or at
the data's own. FME (the paper's reference [45], Fallah et al. 2022) is left out: the
paper only cites its Theorem 1, and that paper is not available to us, so Table II's FME
row and Appendix D's Figures 3 and 4 are not reproduced.
"""

import numpy as np

from ..mean import ADPMEstimator, PDPSampleEstimator
from ..theory import (
    adpm_weights,
    affine_mse,
    ldpe_weights,
    propdpm_weights,
    sample_mechanism_mse,
    sample_mechanism_thresholds,
    saturation_ratio,
    uni_weights,
    worst_case_variance,
)
from ..utils._progress import progress_bar
from ._base import Panel, Reproduction, squared_errors
from ._common_hybrid import mean_and_standard_error

#: Data are clipped to [-0.5, 0.5], the paper's domain (Sec. II).
_BOUNDS = (-0.5, 0.5)
_DATA_RANGE = _BOUNDS[1] - _BOUNDS[0]

#: The compared estimators, in Table II's order (FME left out): the ADPM strategies and
#: the Sample mechanism at t = max epsilon (SM, Sec. IV-A), each at the paper's worst-case
#: variance with the whole budget (the library's defaults spend 5% on a private variance).
_METHODS = {
    "ADPM": lambda: ADPMEstimator(strategy="adpm", bounds=_BOUNDS, variance=None),
    "PropDPM": lambda: ADPMEstimator(strategy="propdpm", bounds=_BOUNDS, variance=None),
    "LDPE": lambda: ADPMEstimator(strategy="ldpe", bounds=_BOUNDS, variance=None),
    "SM": lambda: PDPSampleEstimator(threshold="max", bounds=_BOUNDS, variance=None),
    "UNI": lambda: ADPMEstimator(strategy="uni", bounds=_BOUNDS, variance=None),
}
_AFFINE_WEIGHTS = {
    "ADPM": adpm_weights, "PropDPM": propdpm_weights, "LDPE": ldpe_weights, "UNI": uni_weights,
}

#: Table II as printed: natural-log MSE for the high and the low Var(epsilon) draws.
_TABLE_II = {
    "high": {"ADPM": -9.3, "PropDPM": -9.0, "LDPE": -7.2, "SM": -6.5, "UNI": -5.1},
    "low": {"ADPM": -8.1, "PropDPM": -8.1, "LDPE": -1.3, "SM": -7.9, "UNI": -7.1},
}
#: log(epsilon) is uniform on these intervals (Sec. IV-B).
_LOG_EPSILON_RANGES = {"high": (-4.0, 2.0), "low": (-3.0, -2.0)}


def _mse(method, epsilon, variance=None):
    """MSE about the population mean for data in [-0.5, 0.5] (theory module): the worst
    case, or (given ``variance``) for data of that variance centred on the midpoint (the
    Sample mechanism's to first order in its kept count).

    At the worst-case variance 1/4 the Sample mechanism's is exact for the release of
    PDPSampleEstimator: its divisor is the expected kept count, which
    sample_mechanism_mse plugs in.
    """
    if method == "SM":
        threshold = sample_mechanism_thresholds(epsilon)["max"]
        return float(sample_mechanism_mse(
            epsilon, threshold, data_range=_DATA_RANGE,
            variance=worst_case_variance(_DATA_RANGE) if variance is None else variance,
        ))
    solution = _AFFINE_WEIGHTS[method](epsilon, data_range=_DATA_RANGE)
    if variance is None:
        return solution.expected_mse
    if solution.trivial:  # the midpoint, which is the mean of centred data: no error
        return 0.0
    return affine_mse(solution.weights, variance=variance, noise_scale=solution.noise_scale,
                      level_noise_scales=solution.level_noise_scales)


def _squared_errors(epsilon, draw_data, population_mean, n_trials, rng, bar):
    """Squared error of each method on ``n_trials`` fresh datasets (shared by the methods)."""
    return squared_errors({method: make() for method, make in _METHODS.items()}, draw_data,
                          epsilon=epsilon, n_trials=n_trials, rng=rng, bar=bar,
                          target=population_mean)


def table_2(*, quick=False, random_state=0, progress=False):
    """Table II: log MSE of ADPM and its baselines for a high and a low variance of epsilon.

    n = 1000 users with log(epsilon_i) uniform on [-4, 2] (high) or [-3, -2] (low), drawn
    once; data Beta(2, 3) shifted to [-0.5, 0.5]; the MSE is against the population mean,
    over fresh datasets (20,000 in the paper; 1,000 here, 10 with ``quick``).
    """
    n_users, n_trials = 1000, 10 if quick else 1000
    # Beta(2, 3) on [-0.5, 0.5]: mean 2/5 - 1/2.
    population_mean = 2 / 5 - 1 / 2

    def draw_data(rng, n):
        return rng.beta(2.0, 3.0, size=(n, 1)) - 0.5

    rng = np.random.default_rng(random_state)
    columns = {name: [] for name in (
        "regime", "method", "paper_log_mse", "simulated_log_mse", "simulated_log_mse_se",
        "worst_case_log_mse",
    )}
    with progress_bar(total=2 * n_trials, description="chaudhuri-table2",
                      enabled=progress) as bar:
        for regime, (low, high) in _LOG_EPSILON_RANGES.items():
            epsilon = np.exp(rng.uniform(low, high, n_users))
            errors = _squared_errors(epsilon, draw_data, population_mean, n_trials, rng, bar)
            for method, squared in errors.items():
                mse, standard_error = mean_and_standard_error(squared)
                columns["regime"].append(f"{regime} Var(eps)")
                columns["method"].append(method)
                columns["paper_log_mse"].append(_TABLE_II[regime][method])
                columns["simulated_log_mse"].append(np.log(mse))
                columns["simulated_log_mse_se"].append(standard_error / mse)  # delta method
                columns["worst_case_log_mse"].append(np.log(_mse(method, epsilon)))
    table = {name: np.asarray(values) for name, values in columns.items()}

    panels = []
    for regime in _LOG_EPSILON_RANGES:
        label = f"{regime} Var(eps)"
        panels.append(Panel(
            x="method",
            series={"paper (Table II)": "paper_log_mse",
                    "simulated, Beta(2, 3)": "simulated_log_mse",
                    "worst case (theory)": "worst_case_log_mse"},
            errors={"simulated, Beta(2, 3)": "simulated_log_mse_se"},
            rows=table["regime"] == label,
            title=f"{label}: log eps ~ U{_LOG_EPSILON_RANGES[regime]}",
            xlabel="estimator", ylabel="ln MSE",
        ))
    return Reproduction(
        name="chaudhuri-table2",
        title="Chaudhuri & Courtade, Table II: ln MSE, n = 1000, Beta(2, 3) data "
              f"({n_trials} trials)",
        table=table, panels=panels, summary=_table_2_summary(table, n_trials),
    )


def _table_2_summary(table, n_trials):
    lines = [f"ln MSE over {n_trials} datasets (paper: 20,000), simulated vs Table II:"]
    adpm_smallest = []
    for regime in _LOG_EPSILON_RANGES:
        rows = table["regime"] == f"{regime} Var(eps)"
        methods = table["method"][rows]
        simulated, paper = table["simulated_log_mse"][rows], table["paper_log_mse"][rows]
        worst = table["worst_case_log_mse"][rows]
        lines.append(f"  {regime} Var(eps): " + ", ".join(
            f"{method} {value:.2f} ({reference:.1f})"
            for method, value, reference in zip(methods, simulated, paper)
        ))
        adpm_smallest.append(bool(np.all(worst[methods == "ADPM"] <= worst)))
        lines.append("    simulated order: " + _resolved_order(
            methods, simulated, table["simulated_log_mse_se"][rows]))
    verdict = "the smallest" if all(adpm_smallest) else "NOT the smallest"
    lines.append(
        f"ADPM's worst-case MSE is {verdict} of the five in both regimes (ADPM is minimax "
        "among affine estimators); the paper ranks ADPM first in both, tied with PropDPM "
        "in the low regime, where no user saturates and ADPM is PropDPM. FME is not run."
    )
    lines.append(
        "SM divides the kept users' noisy sum by their expected number, a public divisor "
        "(PDPSampleEstimator; dividing by the realised count, the paper's definition, "
        "would make the noise depend on the secret coins), so its row differs slightly "
        "from the paper's definition."
    )
    return "\n".join(lines)


def _resolved_order(methods, values, standard_errors, z=2.0):
    """The methods by increasing value, ``<`` between neighbours whose difference exceeds
    ``z`` combined standard errors and ``~`` where the simulation cannot order them."""
    order = np.argsort(values, kind="stable")
    text = str(methods[order[0]])
    resolved = False
    for previous, current in zip(order[:-1], order[1:]):
        gap = (values[current] - values[previous]) / np.hypot(standard_errors[current],
                                                               standard_errors[previous])
        resolved |= gap > z
        text += (" < " if gap > z else " ~ ") + str(methods[current])
    if not resolved:
        return "too noisy to order any two methods (run without --quick for more trials)"
    return text + f" ('~': within {z:g} standard errors)"


def figure_1b(*, quick=False, random_state=0, progress=False):
    """Figure 1B: MSE x 10^4 against epsilon_2, with epsilon_1 = 0.1, f = 0.7, n = 1000.

    Data are Bernoulli on {-0.5, 0.5} (p = 1/2, read as the worst-case variance 1/4;
    the paper does not state p), so the worst-case errors of the theory are the exact
    MSEs here. ADPM's error stops falling at the saturation point eps2 = R eps1 (Eq. (4)).
    """
    n_users, fraction, eps1 = 1000, 0.7, 0.1
    n_trials = 20 if quick else 1000
    saturation = saturation_ratio(n_users, fraction, eps1) * eps1
    eps2_grid = (np.array([0.1, 0.2, 0.5, 1.0]) if quick else
                 np.array([0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0]))
    # The saturation point is drawn: the summary states ADPM's error there.
    eps2_grid = np.unique(np.append(eps2_grid, saturation))
    n_private = int(round(fraction * n_users))

    def draw_data(rng, n):
        return rng.integers(0, 2, size=(n, 1)) - 0.5

    rng = np.random.default_rng(random_state)
    table = {"eps2": eps2_grid}
    for method in _METHODS:
        for suffix in ("mse_x1e4", "se_x1e4", "theory_x1e4"):
            table[f"{method}_{suffix}"] = np.empty(eps2_grid.size)
    with progress_bar(total=eps2_grid.size * n_trials, description="chaudhuri-figure1b",
                      enabled=progress) as bar:
        for row, eps2 in enumerate(eps2_grid):
            epsilon = np.repeat([eps1, eps2], [n_private, n_users - n_private])
            errors = _squared_errors(epsilon, draw_data, 0.0, n_trials, rng, bar)
            for method, squared in errors.items():
                mse, standard_error = mean_and_standard_error(squared)
                table[f"{method}_mse_x1e4"][row] = 1e4 * mse
                table[f"{method}_se_x1e4"][row] = 1e4 * standard_error
                table[f"{method}_theory_x1e4"][row] = 1e4 * _mse(method, epsilon)
    table["saturation_eps2"] = np.full(eps2_grid.size, saturation)

    panels = [
        Panel(x="eps2", series={m: f"{m}_mse_x1e4" for m in _METHODS},
              errors={m: f"{m}_se_x1e4" for m in _METHODS},
              title=f"simulated ({n_trials} trials, +-1 s.e.)",
              xlabel="eps2", ylabel="MSE x 1e4", xscale="log"),
        Panel(x="eps2", series={m: f"{m}_theory_x1e4" for m in _METHODS},
              title=f"theory; ADPM saturates at eps2 = R eps1 = {saturation:.3f}",
              xlabel="eps2", ylabel="MSE x 1e4", xscale="log"),
    ]
    return Reproduction(
        name="chaudhuri-figure1b",
        title="Chaudhuri & Courtade, Figure 1B: eps1 = 0.1, f = 0.7, n = 1000, "
              "Bernoulli data on {-0.5, 0.5}",
        table=table, panels=panels, summary=_figure_1b_summary(table, saturation),
    )


def _figure_1b_summary(table, saturation):
    eps2 = table["eps2"]
    theory = {method: table[f"{method}_theory_x1e4"] for method in _METHODS}
    adpm_best = all(np.all(theory["ADPM"] <= values * (1 + 1e-12)) for values in theory.values())
    beyond = eps2 >= saturation * (1 - 1e-12)  # the saturation point itself is on the grid
    flat = np.ptp(theory["ADPM"][beyond]) <= 1e-9 * theory["ADPM"][beyond].max()
    propdpm_rises = bool(np.all(np.diff(theory["PropDPM"][beyond]) > 0))
    simulated = {method: table[f"{method}_mse_x1e4"] for method in _METHODS}
    z = np.abs(simulated["ADPM"] - theory["ADPM"]) / table["ADPM_se_x1e4"]
    last = -1
    return "\n".join([
        f"ADPM's MSE x 1e4 falls from {theory['ADPM'][0]:.2f} at eps2 = {eps2[0]:g} to "
        f"{theory['ADPM'][beyond][0]:.3f} at saturation (eps2 = R eps1 = {saturation:.3f}) "
        f"and is {'flat' if flat else 'NOT flat'} beyond it, as in Figure 1B.",
        f"ADPM is {'the smallest' if adpm_best else 'NOT the smallest'} of the five in "
        "theory at every eps2; PropDPM "
        f"{'rises' if propdpm_rises else 'does not rise'} past saturation "
        f"({theory['PropDPM'][last]:.2f} at eps2 = {eps2[last]:g}), LDPE approaches ADPM "
        f"({theory['LDPE'][last]:.2f}) and SM grows ({theory['SM'][last]:.2f}), as the "
        "paper describes.",
        f"Simulated ADPM matches its theory within {z.max():.1f} standard errors.",
        _simulated_ranking(table, last),
    ])


def _simulated_ranking(table, row):
    """What the simulation alone says about ADPM against the others at one eps2: a
    method is ranked only where the difference exceeds 2 standard errors."""
    eps2 = table["eps2"][row]
    simulated = {method: table[f"{method}_mse_x1e4"][row] for method in _METHODS}
    se = {method: table[f"{method}_se_x1e4"][row] for method in _METHODS}
    resolved, unresolved = [], []
    for method in _METHODS:
        if method == "ADPM":
            continue
        z = (simulated[method] - simulated["ADPM"]) / np.hypot(se[method], se["ADPM"])
        (resolved if z > 2 else unresolved).append(method)
    values = ", ".join(f"{method} {value:.2f} +- {se[method]:.2f}"
                       for method, value in simulated.items())
    if not resolved:
        return (f"Simulated at eps2 = {eps2:g} ({values}): too noisy to rank the methods; "
                "the ranking above is the theory's (run without --quick for more trials).")
    return (f"Simulated at eps2 = {eps2:g} ({values}): ADPM is below "
            f"{', '.join(resolved)} by more than 2 standard errors"
            + (f"; against {', '.join(unresolved)} the simulation is too noisy to rank"
               if unresolved else "") + ".")


def figure_1a(*, quick=False, random_state=0, progress=False):
    """Figure 1A: (MSE - 1/(12n)) n^2 against n, for eps1 = 0.1, eps2 = 0.15, f = 0.5.

    Uniform data on [-0.5, 0.5] (variance 1/12, so ``1 / (12 n)`` is the sample mean's
    own error and the plotted quantity the second-order cost of privacy). The curves
    are the exact MSEs of the affine estimators at variance 1/12 (their weights are
    still chosen for the worst case, as the estimators do) and the Sample mechanism's to
    first order; the points are simulated (2,000 datasets per n; 300 at two n with
    ``quick``). The paper ran 200,000: the plotted quantity multiplies the error by
    n^2, so at large n only the theory curves are sharp.
    """
    fraction, eps1, eps2, variance = 0.5, 0.1, 0.15, 1 / 12
    n_grid = np.array([100, 1000] if quick else [100, 200, 500, 1000, 2000, 5000])
    n_trials = 300 if quick else 2000

    def draw_data(rng, n):
        return rng.uniform(*_BOUNDS, size=(n, 1))

    rng = np.random.default_rng(random_state)
    table = {"n": n_grid}
    for method in _METHODS:
        for suffix in ("simulated", "se", "theory"):
            table[f"{method}_{suffix}"] = np.empty(n_grid.size)
    with progress_bar(total=n_grid.size * n_trials, description="chaudhuri-figure1a",
                      enabled=progress) as bar:
        for row, n in enumerate(n_grid):
            n_private = int(round(fraction * n))
            epsilon = np.repeat([eps1, eps2], [n_private, n - n_private])
            errors = _squared_errors(epsilon, draw_data, 0.0, n_trials, rng, bar)
            for method, squared in errors.items():
                mse, standard_error = mean_and_standard_error(squared)
                table[f"{method}_simulated"][row] = (mse - variance / n) * n**2
                table[f"{method}_se"][row] = standard_error * n**2
                table[f"{method}_theory"][row] = (
                    _mse(method, epsilon, variance) - variance / n) * n**2
    panels = [
        Panel(x="n", series={m: f"{m}_theory" for m in _METHODS},
              title="theory (exact; SM to first order)", xlabel="n",
              ylabel="(MSE - 1/(12n)) n^2", xscale="log"),
        Panel(x="n", series={m: f"{m}_simulated" for m in _METHODS},
              errors={m: f"{m}_se" for m in _METHODS},
              title=f"simulated ({n_trials} trials, +-1 s.e.)", xlabel="n",
              ylabel="(MSE - 1/(12n)) n^2", xscale="log"),
    ]
    return Reproduction(
        name="chaudhuri-figure1a",
        title="Chaudhuri & Courtade, Figure 1A: eps1 = 0.1, eps2 = 0.15, f = 0.5, "
              "uniform data on [-0.5, 0.5]",
        table=table, panels=panels, summary=_figure_1a_summary(table, n_trials),
    )


def _figure_1a_summary(table, n_trials):
    n = table["n"]
    theory = {method: table[f"{method}_theory"] for method in _METHODS}
    adpm_best = all(np.all(theory["ADPM"] <= values * (1 + 1e-12)) for values in theory.values())
    ldpe_worse = bool(np.all(theory["LDPE"] > theory["ADPM"])
                      and np.all(theory["LDPE"] > theory["UNI"]))
    sm_gap = theory["SM"] / theory["ADPM"]
    z = {method: np.abs(table[f"{method}_simulated"] - theory[method]) / table[f"{method}_se"]
         for method in _METHODS}
    return "\n".join([
        f"(MSE - 1/(12n)) n^2 in theory at n = {n[0]:g} .. {n[-1]:g}: " + ", ".join(
            f"{method} {values[0]:.0f} .. {values[-1]:.0f}" for method, values in theory.items()),
        f"ADPM is {'the smallest' if adpm_best else 'NOT the smallest'} at every n; LDPE is "
        f"{'above' if ldpe_worse else 'NOT above'} both ADPM and UNI (eps1 and eps2 are "
        "close, so its per-group noise costs more than it gains), as the paper says.",
        f"SM is {sm_gap[0]:.2f} times ADPM at n = {n[0]:g} and {sm_gap[-1]:.2f} times at "
        f"n = {n[-1]:g}: close at small n and trending up (subsampling makes its "
        "first-order error larger), as the paper describes.",
        f"Simulated ({n_trials} datasets per n) within {max(v.max() for v in z.values()):.1f} "
        "standard errors of the theory for every method and n; "
        + ("too few datasets to rank the methods from the simulation alone."
           if n_trials < 1000 else "see the right panel."),
    ])


#: name -> function(*, quick, random_state, progress) -> Reproduction
REPRODUCTIONS = {
    "chaudhuri-table2": table_2,
    "chaudhuri-figure1a": figure_1a,
    "chaudhuri-figure1b": figure_1b,
}
