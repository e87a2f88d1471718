"""What the hybrid-mean reproductions share: the analytic curves and the Monte Carlo.

Avent, Dubey and Korolova (PoPETs 2020) and Dubey and Korolova's workshop version plot
the same quantities: the MSEs of the TCM-only and Full-LM baselines and of a hybrid
estimator, and the ratios R (over the better baseline, Def. 3.5) and r (over the worse
one, Def. 5.1), in the homogeneous setting with epsilon-DP Laplace noise. The analytic
values compose :mod:`skhybrid.theory` functions; the simulated ones fit
:class:`~skhybrid.HybridMeanEstimator` on fresh data and measure the squared error
against the empirical mean of the fitted data (the papers' target, Def. 2.2).
"""

import numpy as np

from ..mean import HybridMeanEstimator
from ..mechanisms import LocalLaplaceRandomizer
from ..theory import (
    full_lm_mse,
    hybrid_mse,
    kvh_weight,
    laplace_noise_variances,
    pwh_weight,
    relative_improvement,
    relative_improvement_over_worst,
    tcm_only_mse,
)
from ..utils._progress import progress_bar

#: The weight of each hybrid strategy of HybridMeanEstimator, from the theory module.
_WEIGHTS = {
    "kvh": lambda problem, sigma2: kvh_weight(sigma2=sigma2, **problem),
    "pwh": lambda problem, sigma2: pwh_weight(**problem),
}

#: Largest number of values (users x trials) in one simulated fit, to bound memory.
_ENTRIES_PER_FIT = 2_000_000


def analytic_curves(strategy, *, n, c, m, epsilon, sigma2):
    """Analytic MSEs, weight, R and r of a hybrid strategy and its baselines (Laplace noise).

    The homogeneous setting of Sec. 4-5 (both groups share the variance ``sigma2``):
    Lemma 3.2 (TCM-only), Lemma 3.4 (Full-LM), Lemma 3.13 at the strategy's weight
    (Def. 4.1 for ``"kvh"``, Def. 5.3 for ``"pwh"``), with the noise variances of
    Def. 3.9. Every argument broadcasts.

    Returns
    -------
    curves : dict of str to ndarray
        ``mse_tcm_only``, ``mse_full_lm``, ``mse_hybrid``, ``weight``, ``R`` (Def. 3.5)
        and ``r`` (Def. 5.1).
    """
    s_T2, s_L2 = laplace_noise_variances(n, c, m, epsilon)
    problem = {"n": n, "c": c, "s_T2": s_T2, "s_L2": s_L2}
    weight = _WEIGHTS[strategy](problem, sigma2)
    groups = {**problem, "sigma_T2": sigma2, "sigma_L2": sigma2}
    mse = hybrid_mse(weight, **groups)
    return {
        "mse_tcm_only": tcm_only_mse(n=n, c=c, s_T2=s_T2, sigma_T2=sigma2, sigma_L2=sigma2),
        "mse_full_lm": full_lm_mse(n=n, s_L2=s_L2),
        "mse_hybrid": mse,
        "weight": weight,
        "R": relative_improvement(mse, **groups),
        "r": relative_improvement_over_worst(mse, **groups),
    }


def trials_per_size(n, *, budget, minimum, maximum):
    """Monte Carlo trials for n users: about ``budget / n`` (equal cost per n), clipped.

    Small n are cheap, so they get more trials; that matters most there, where one tcm
    user's Laplace noise makes the squared errors heavy-tailed.
    """
    return int(np.clip(budget // n, minimum, maximum))


def simulate_squared_errors(
    draw_data, *, sizes, epsilons, fractions, variance, strategies, bounds, n_trials,
    random_state, progress, description,
):
    """Squared errors of HybridMeanEstimator strategies on simulated data sets.

    For every size n, a data set is drawn per trial with ``draw_data`` (fresh i.i.d.
    draws, or a random permutation of a fixed data set). For each epsilon every user's
    device privatizes their value with the library's
    :class:`~skhybrid.mechanisms.LocalLaplaceRandomizer`; then for each tcm fraction c
    a random ``c n`` of the users are tcm and send raw values, the others their
    reports, and every strategy is fitted with ``local_reports=True``. The strategies
    and fractions thus share one data set and one set of local reports per trial
    (paired trials: the ratios R and r get smaller standard errors, and the local noise
    is drawn once). The price: the simulated points of one curve are correlated, so a
    whole curve can sit a little above or below the analytic one.

    Each fit holds up to ``d`` trials as ``d`` features: with the Laplace mechanism's L1
    calibration a budget of ``d * epsilon`` over ``d`` features with bounds ``[0, m]``
    gives every feature the noise of a one-feature epsilon-DP release (scale
    ``d m / (k d epsilon)`` on a tcm mean of k users, ``d m / (d epsilon)`` on one
    report), so each coordinate of ``mean_`` is an independent trial of the
    one-dimensional problem. This amortises the per-fit overhead.

    Parameters
    ----------
    draw_data : callable
        ``draw_data(n, d, rng) -> ndarray of shape (n, d)``: d independent data sets.
    sizes : sequence of int
        The numbers of users n.
    epsilons : sequence of float
        Every user's privacy level.
    fractions : sequence of float
        Fractions c of tcm users; every ``c * n`` must be a whole number.
    variance : float
        The data variance, known to the ``"kvh"`` strategy.
    strategies : sequence of str
        HybridMeanEstimator strategies.
    bounds : tuple
        The public clipping bounds ``(0, m)``.
    n_trials : int or callable
        Trials per size, or ``n_trials(n)``.
    random_state : int or sequence of int
        Seed of the simulation.
    progress : bool
        Show a progress bar.
    description : str
        Label of the progress bar.

    Returns
    -------
    errors : list of dict of str to ndarray of shape (len(epsilons), len(fractions), trials)
        For each size, the squared difference between ``mean_`` and the data set's mean,
        by strategy.
    """
    tcm_counts = np.outer(sizes, fractions)
    if not np.allclose(tcm_counts, np.round(tcm_counts), rtol=0.0, atol=1e-6):
        raise ValueError(f"c * n must be whole numbers of tcm users; got {tcm_counts}")
    tcm_counts = np.round(tcm_counts).astype(int)
    trials = [n_trials(n) if callable(n_trials) else int(n_trials) for n in sizes]
    estimators = {
        strategy: HybridMeanEstimator(
            strategy, bounds=bounds, variance=variance, local_reports=True
        )
        for strategy in strategies
    }
    rng = np.random.default_rng(random_state)
    errors = []
    with progress_bar(total=sum(trials), description=description, enabled=progress) as bar:
        for n, n_tcm, total in zip(np.asarray(sizes, dtype=int), tcm_counts, trials):
            shape = (len(epsilons), len(fractions), total)
            errors.append({strategy: np.empty(shape) for strategy in strategies})
            width = int(np.clip(_ENTRIES_PER_FIT // n, 1, total))
            for start in range(0, total, width):
                chunk = slice(start, min(start + width, total))
                d = chunk.stop - chunk.start
                chunk_rng = np.random.default_rng(rng.integers(2**63))
                X = draw_data(n, d, chunk_rng)
                target = X.mean(axis=0)
                for j, epsilon in enumerate(epsilons):
                    reports = LocalLaplaceRandomizer(bounds=bounds, epsilon=d * epsilon).privatize(
                        X, random_state=chunk_rng
                    )
                    for k, count in enumerate(n_tcm):
                        tcm_rows = chunk_rng.choice(n, size=count, replace=False)
                        rows = reports.copy()
                        rows[tcm_rows] = X[tcm_rows]
                        is_tcm = np.zeros(n, dtype=bool)
                        is_tcm[tcm_rows] = True
                        for strategy, estimator in estimators.items():
                            estimator.set_params(epsilon=d * epsilon, random_state=chunk_rng)
                            estimator.fit(rows, trust_group=is_tcm)
                            errors[-1][strategy][j, k, chunk] = (estimator.mean_ - target) ** 2
                bar.update(d)
    return errors


def mean_and_standard_error(samples):
    """Mean over the last axis and its standard error."""
    samples = np.asarray(samples)
    return samples.mean(axis=-1), samples.std(axis=-1, ddof=1) / np.sqrt(samples.shape[-1])


def ratio_and_standard_error(numerator, denominator):
    """``mean(numerator) / mean(denominator)`` over paired trials (last axis), with its SE.

    The standard error is the delta method's, which accounts for the correlation of
    the paired samples: ``Var(A / B) ~ (Var A - 2 R Cov(A, B) + R^2 Var B) / B^2``.
    """
    numerator, denominator = np.asarray(numerator), np.asarray(denominator)
    n_trials = numerator.shape[-1]
    a, b = numerator.mean(axis=-1), denominator.mean(axis=-1)
    da, db = numerator - a[..., None], denominator - b[..., None]
    var_a = (da**2).sum(axis=-1) / (n_trials - 1)
    var_b = (db**2).sum(axis=-1) / (n_trials - 1)
    cov = (da * db).sum(axis=-1) / (n_trials - 1)
    ratio = a / b
    variance = (var_a - 2.0 * ratio * cov + ratio**2 * var_b) / (n_trials * b**2)
    return ratio, np.sqrt(np.maximum(variance, 0.0))


def summarise_simulation(errors, strategy):
    """MSEs of every strategy and R, r of ``strategy``, with standard errors, per size.

    R divides the smaller of the TCM-only and Full-LM simulated MSEs by the strategy's
    (Def. 3.5), r the larger (Def. 5.1); the baseline is picked per cell from the
    simulation.

    Parameters
    ----------
    errors : list of dict
        The output of :func:`simulate_squared_errors`.
    strategy : str
        The hybrid strategy whose R and r are wanted.

    Returns
    -------
    summary : dict of str to ndarray of shape (len(sizes), len(epsilons), len(fractions))
        ``mse_<strategy>`` and ``mse_<strategy>_se`` for every simulated strategy, and
        ``R``, ``R_se``, ``r``, ``r_se``.
    """
    columns = {}
    for size in errors:
        cells = {}
        for name, samples in size.items():
            cells[f"mse_{name}"], cells[f"mse_{name}_se"] = mean_and_standard_error(samples)
        tcm, full_lm = size["tcm_only"], size["full_lm"]
        tcm_is_better = (tcm.mean(axis=-1) <= full_lm.mean(axis=-1))[..., None]
        better = np.where(tcm_is_better, tcm, full_lm)
        worse = np.where(tcm_is_better, full_lm, tcm)
        cells["R"], cells["R_se"] = ratio_and_standard_error(better, size[strategy])
        cells["r"], cells["r_se"] = ratio_and_standard_error(worse, size[strategy])
        for name, values in cells.items():
            columns.setdefault(name, []).append(values)
    return {name: np.stack(values) for name, values in columns.items()}


def round_to_multiple(values, multiple):
    """``values`` rounded to the nearest positive multiple of ``multiple``, sorted and unique."""
    rounded = np.maximum(np.round(np.asarray(values, dtype=float) / multiple), 1.0) * multiple
    return np.unique(rounded)


def describe_trials(counts):
    """``"100"`` or ``"100 to 1000"``: the trial counts of a table, for a summary."""
    low, high = int(np.min(counts)), int(np.max(counts))
    return f"{low}" if low == high else f"{low} to {high}"


def describe_agreement(simulated, standard_error, analytic):
    """How simulated values compare with analytic ones, in standard errors, for a summary."""
    z = np.abs(np.asarray(simulated) - analytic) / standard_error
    return (
        f"largest |z| {z.max():.2f}, {100 * np.mean(z <= 2):.0f}% of the {z.size} points "
        "within 2 SE"
    )
