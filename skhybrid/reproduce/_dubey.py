"""Dubey and Korolova, "The Power of the Hybrid Model for Mean Estimation" (workshop version).

Figures 1 and 2 for c = 0.01, epsilon = 0.1, m = 1 and sigma = m / 6 over a range of n:
the expected squared errors of FullLM, OnlyTCM and Hybrid with the optimal weight w*
(Lemmas 3.1-3.3), and the improvement R of Hybrid over the better benchmark
(Theorem 3.4), which peaks at n_critical with value R_max (the Corollary). These are the
baselines and the KVH estimator of Avent, Dubey and Korolova (2020) with Laplace noise,
so the curves come from :mod:`skhybrid.theory` (Lemmas 3.2, 3.4, 3.13, Def. 4.1, Lemma
3.8 and :func:`~skhybrid.theory.max_relative_improvement`). The workshop paper's w*
equals Def. 4.1's weight once the Laplace noise variances are substituted, and its
printed n_critical equals Lemma 3.8's (its "c^2 e^2 sigma^2" is c^2 epsilon^2 sigma^2).
Its bound "R_max <= (eps^2 sigma^2 + 4 m^2) / (eps^2 sigma^2 + 2 m^2 - 1)" is garbled in
the text and not used; R_max itself is.

The simulation fits :class:`~skhybrid.HybridMeanEstimator` (``"full_lm"``,
``"tcm_only"``, ``"kvh"``) on data uniform on [1/2 - sqrt(3) sigma, 1/2 + sqrt(3) sigma]
(standard deviation sigma; the errors depend on the distribution only through sigma).
"""

import numpy as np

from ..mean import HybridMeanEstimator
from ..theory import laplace_critical_values, max_relative_improvement
from ._base import Panel, Reproduction
from ._common_hybrid import (
    analytic_curves,
    describe_agreement,
    describe_trials,
    round_to_multiple,
    simulate_squared_errors,
    summarise_simulation,
    trials_per_size,
)

_PAPER = "Dubey, Korolova (workshop)"
#: The setting of Figures 1 and 2.
_C = 0.01
_EPSILON = 0.1
_M = 1.0
_SIGMA = _M / 6
_SETTING = f"c = {_C:g}, eps = {_EPSILON:g}, m = {_M:g}, sigma = m/6"
_RANGE = (1e2, 1e6)
#: Every n is a multiple of 1 / c, so that c n is a whole number of tcm users.
_N_MULTIPLE = round(1 / _C)
#: Names of the paper's mechanisms -> HybridMeanEstimator strategies.
_MECHANISMS = {"FullLM": "full_lm", "OnlyTCM": "tcm_only", "Hybrid": "kvh"}


def _draw_uniform(n, d, rng):
    half_width = np.sqrt(3.0) * _SIGMA  # a uniform of half-width h has variance h^2 / 3
    return rng.uniform(0.5 - half_width, 0.5 + half_width, size=(n, d))


def _sweep(*, quick, random_state, progress):
    """Analytic and simulated errors, R and w* over the n grid (n_critical included)."""
    sigma2 = _SIGMA**2
    _, n_critical = laplace_critical_values(c=_C, m=_M, epsilon=_EPSILON, sigma2=sigma2)
    if quick:
        grid, budget, minimum, maximum = np.array([1e2, 1e3]), 1_000_000, 200, 400
    else:
        grid, budget, minimum, maximum = np.geomspace(*_RANGE, 17), 20_000_000, 100, 2000
    sizes = round_to_multiple(np.append(grid, n_critical), _N_MULTIPLE)
    analytic = analytic_curves("kvh", n=sizes, c=_C, m=_M, epsilon=_EPSILON, sigma2=sigma2)
    errors = simulate_squared_errors(
        _draw_uniform, sizes=sizes, epsilons=[_EPSILON], fractions=[_C], variance=sigma2,
        strategies=tuple(_MECHANISMS.values()), bounds=(0.0, _M),
        n_trials=lambda n: trials_per_size(n, budget=budget, minimum=minimum, maximum=maximum),
        random_state=random_state, progress=progress, description="Dubey-Korolova",
    )
    simulated = {
        name: values[:, 0, 0] for name, values in summarise_simulation(errors, "kvh").items()
    }
    table = {"n": sizes}
    for name, strategy in _MECHANISMS.items():
        column = "mse_hybrid" if strategy == "kvh" else f"mse_{strategy}"
        mean, se = simulated[f"mse_{strategy}"], simulated[f"mse_{strategy}_se"]
        table[f"mse_{name}"] = analytic[column]
        table[f"mse_{name}_simulated"] = mean
        table[f"mse_{name}_simulated_se"] = se
        table[f"mse_{name}_simulated_to_analytic"] = mean / analytic[column]
        table[f"mse_{name}_simulated_to_analytic_se"] = se / analytic[column]
    r_max, _ = max_relative_improvement(c=_C, m=_M, epsilon=_EPSILON, sigma2=sigma2)
    table["R"] = analytic["R"]
    table["R_simulated"] = simulated["R"]
    table["R_simulated_se"] = simulated["R_se"]
    table["R_max"] = np.full(sizes.size, r_max)
    table["weight"] = analytic["weight"]
    table["weight_fitted"] = np.array([_fitted_weight(int(n)) for n in sizes])
    table["c"] = np.full(sizes.size, _C)
    table["n_trials"] = np.array([size["kvh"].shape[-1] for size in errors], dtype=float)
    facts = {"n_critical": n_critical, "R_max": r_max}
    return table, facts


def _fitted_weight(n):
    """The weight_ HybridMeanEstimator("kvh") uses for n users, a fraction c of them tcm.

    It depends on the public n, c, epsilon, bounds and variance only, not on the data.
    """
    estimator = HybridMeanEstimator(
        "kvh", epsilon=_EPSILON, bounds=(0.0, _M), variance=_SIGMA**2, random_state=0
    )
    is_tcm = np.arange(n) < round(_C * n)
    return estimator.fit(np.full((n, 1), 0.5), trust_group=is_tcm).weight_[0]


def _agreement(table, names):
    return describe_agreement(*(
        np.concatenate([table[f"{name}{part}"] for name in names])
        for part in ("_simulated", "_simulated_se", "")
    ))


def figure1(*, quick=False, random_state=0, progress=False):
    """Figure 1: expected squared error of FullLM, OnlyTCM and Hybrid against n.

    n in [10^2, 10^6] (17 log-spaced values plus n_critical; 10^2, 10^3 and n_critical
    with ``quick``), with the simulated MSEs (100 to 2000 trials per n, fewer for large
    n; 200 to 400 with ``quick``) and their ratio to the analytic ones.
    """
    table, facts = _sweep(quick=quick, random_state=random_state, progress=progress)
    columns = ["n", "n_trials"] + [column for column in table if column.startswith("mse_")]
    table = {column: table[column] for column in columns}
    hybrid_best = bool(np.all(
        table["mse_Hybrid"] < np.minimum(table["mse_FullLM"], table["mse_OnlyTCM"])
    ))
    tcm_better = table["mse_OnlyTCM"] <= table["mse_FullLM"]
    crossing = (
        f"at the grid's n >= {table['n'][np.argmax(tcm_better)]:g}" if tcm_better.any()
        else "nowhere on this grid"
    )
    names = [f"mse_{name}" for name in _MECHANISMS]
    summary = (
        f"{_SETTING}: analytic Hybrid MSE below both benchmarks at every n in "
        f"[{table['n'].min():g}, {table['n'].max():g}]: {hybrid_best} (paper: Hybrid gives "
        f"a lower error, most usefully for small n). OnlyTCM beats FullLM {crossing} "
        f"(Lemma 3.8: from n_critical = {facts['n_critical']:.0f} on).\n"
        f"Simulated ({describe_trials(table['n_trials'])} trials per n) against the "
        f"analytic MSEs: {_agreement(table, names)}."
    )
    mse_series = {name: f"mse_{name}" for name in _MECHANISMS}
    mse_series.update({f"{name} simulated": f"mse_{name}_simulated" for name in _MECHANISMS})
    panels = [
        Panel(
            x="n", series=mse_series,
            errors={f"{name} simulated": f"mse_{name}_simulated_se" for name in _MECHANISMS},
            title="expected squared error", xlabel="n", ylabel="MSE", xscale="log",
            yscale="log",
        ),
        Panel(
            x="n",
            series={name: f"mse_{name}_simulated_to_analytic" for name in _MECHANISMS},
            errors={name: f"mse_{name}_simulated_to_analytic_se" for name in _MECHANISMS},
            title="simulated / analytic MSE", xlabel="n", ylabel="ratio", xscale="log",
        ),
    ]
    return Reproduction(
        name="dubey-figure1",
        title=f"{_PAPER}, Figure 1: relative performance of the models ({_SETTING})",
        table=table, panels=panels, summary=summary,
    )


def figure2(*, quick=False, random_state=0, progress=False):
    """Figure 2: the improvement R of Hybrid over the better benchmark, and w*, against n.

    The grid and trials of :func:`figure1`; R_max is drawn as a reference line, and w*
    next to the weight the fitted estimator uses.
    """
    table, facts = _sweep(quick=quick, random_state=random_state, progress=progress)
    columns = [
        "n", "n_trials", "R", "R_simulated", "R_simulated_se", "R_max", "weight",
        "weight_fitted", "c",
    ]
    table = {column: table[column] for column in columns}
    best = int(np.argmax(table["R"]))
    at_critical = int(np.argmin(np.abs(table["n"] - facts["n_critical"])))
    summary = (
        f"{_SETTING}: R_max = {facts['R_max']:.4f} at n_critical = {facts['n_critical']:.0f} "
        f"(the Corollary); on the grid R peaks at n = {table['n'][best]:g} with "
        f"{table['R'][best]:.4f}, and R > 1 at every n: {bool(np.all(table['R'] > 1))}. "
        f"w* = {table['weight'][at_critical]:.3f} at n = {table['n'][at_critical]:g} "
        f"(c = {_C:g}); the estimator's fitted weight equals w* to "
        f"{np.max(np.abs(table['weight_fitted'] - table['weight'])):.1e}.\n"
        f"Simulated ({describe_trials(table['n_trials'])} paired trials per n) against the "
        f"analytic R: {_agreement(table, ['R'])}."
    )
    panels = [
        Panel(
            x="n", series={"analytic": "R", "simulated": "R_simulated", "R_max": "R_max"},
            errors={"simulated": "R_simulated_se"}, title="improvement R of Hybrid",
            xlabel="n", ylabel="R", xscale="log",
        ),
        Panel(
            x="n", series={"w*": "weight", "w* fitted": "weight_fitted", "c": "c"},
            title="optimal weight on the tcm estimate", xlabel="n", ylabel="w",
            xscale="log",
        ),
    ]
    return Reproduction(
        name="dubey-figure2",
        title=f"{_PAPER}, Figure 2: multiplicative improvement R of Hybrid ({_SETTING})",
        table=table, panels=panels, summary=summary,
    )


#: name -> function(*, quick, random_state, progress) -> Reproduction
REPRODUCTIONS = {"dubey-figure1": figure1, "dubey-figure2": figure2}
