"""skhybrid's central mean against diffprivlib's ``tools.mean``, in one interleaved run.

diffprivlib needs an older scikit-learn than skhybrid, so it runs in a side
environment: ``python benchmarks/bench_diffprivlib.py [VENV]`` creates ``VENV``
(default ``~/.cache/skhybrid-bench/diffprivlib``) with diffprivlib 0.6.6 and
scikit-learn 1.6 on first use. For each n, ``ROUNDS`` rounds run the three calls in
turn (a busy moment slows all of them); each round times ``CALLS`` calls after a
warm-up call and keeps the fastest (diffprivlib inside its own process, start-up and
imports excluded). The table gives each call's minimum over the rounds and the
per-round ratios to diffprivlib: min / median / max.

The calls, on n values uniform in [0, 1], epsilon = 1, bounds (0, 1):

- diffprivlib: ``tools.mean(X, epsilon=1.0, bounds=(0.0, 1.0))``;
- mean only, the single central-mean release diffprivlib's is:
  ``HybridMeanEstimator("tcm_only", epsilon=1.0, bounds=(0.0, 1.0), variance=1 / 12).fit(X)``;
- the default fit, as a user writes it without trust groups (every user tcm):
  ``HybridMeanEstimator(epsilon=1.0, bounds=(0.0, 1.0)).fit(X)`` (strategy "kvh" and a
  private variance at 5% of the budget: the square codes are summed too).

Then, alone: the default hybrid fit of 1e6 users with the README's labels,
``HybridMeanEstimator(epsilon=1.0, bounds=(0.0, 1.0)).fit(X, trust_group=np.where(mask,
"tcm", "lm"))`` with 5% tcm, beside the same fit with the boolean mask.
"""

import os
import subprocess
import sys
import textwrap
import time
import venv
from pathlib import Path

import numpy as np

ROUNDS = 5
CALLS = 3
SIZES = [1_000, 10_000, 100_000, 1_000_000, 10_000_000]

_DIFFPRIVLIB = textwrap.dedent("""
    import sys, time, warnings
    import numpy as np
    from diffprivlib.tools import mean
    warnings.simplefilter("ignore")
    n, calls = int(sys.argv[1]), int(sys.argv[2])
    X = np.random.default_rng(0).uniform(0, 1, n)
    mean(X, epsilon=1.0, bounds=(0.0, 1.0))  # warm-up
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        mean(X, epsilon=1.0, bounds=(0.0, 1.0))
        best = min(best, time.perf_counter() - start)
    print(best)
""")


def side_environment(path):
    """The side environment's Python, created with diffprivlib on first use."""
    path = Path(path)
    python = path / "bin" / "python"
    if not python.exists():
        venv.create(path, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "diffprivlib==0.6.6",
                        "scikit-learn>=1.6,<1.7"], check=True)
    return str(python)


def diffprivlib_seconds(python, n):
    out = subprocess.run([python, "-c", _DIFFPRIVLIB, str(n), str(CALLS)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def best_seconds(fit):
    fit()  # warm-up
    best = float("inf")
    for _ in range(CALLS):
        start = time.perf_counter()
        fit()
        best = min(best, time.perf_counter() - start)
    return best


def mean_only(X):
    from skhybrid import HybridMeanEstimator

    return HybridMeanEstimator("tcm_only", epsilon=1.0, bounds=(0.0, 1.0),
                               variance=1.0 / 12.0).fit(X)


def default_fit(X, trust_group=None):
    from skhybrid import HybridMeanEstimator

    return HybridMeanEstimator(epsilon=1.0, bounds=(0.0, 1.0)).fit(X, trust_group=trust_group)


def ratios(ours, theirs):
    per_round = ours / theirs
    return (f"{per_round.min():.2f} / {np.median(per_round):.2f} / "
            f"{per_round.max():.2f}")


def main(venv_path=None):
    import warnings

    warnings.simplefilter("ignore")
    python = side_environment(venv_path or Path.home() / ".cache" / "skhybrid-bench"
                              / "diffprivlib")
    print(f"{ROUNDS} interleaved rounds of {CALLS} calls; epsilon = 1, bounds (0, 1); "
          f"load average {os.getloadavg()[0]:.2f}\n")
    print("| n | mean only | default fit | diffprivlib tools.mean | mean only / diffprivlib "
          "(min / median / max) | default fit / diffprivlib (min / median / max) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in SIZES:
        X = np.random.default_rng(0).uniform(0, 1, (n, 1))
        times = np.array([[best_seconds(lambda: mean_only(X)),
                           best_seconds(lambda: default_fit(X)),
                           diffprivlib_seconds(python, n)] for _ in range(ROUNDS)])
        low = times.min(axis=0)
        print(f"| {n:,} | {1e3 * low[0]:.3f} ms | {1e3 * low[1]:.3f} ms | "
              f"{1e3 * low[2]:.3f} ms | {ratios(times[:, 0], times[:, 2])} | "
              f"{ratios(times[:, 1], times[:, 2])} |")

    n = 1_000_000
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (n, 1))
    mask = rng.random(n) < 0.05
    labels = np.where(mask, "tcm", "lm")
    times = np.array([[best_seconds(lambda: default_fit(X, labels)),
                       best_seconds(lambda: default_fit(X, mask))] for _ in range(ROUNDS)])
    low = times.min(axis=0)
    print(f"\nDefault hybrid fit, {n:,} users, 5% tcm: with np.where(mask, 'tcm', 'lm') "
          f"{1e3 * low[0]:.2f} ms, with the boolean mask {1e3 * low[1]:.2f} ms (ratio "
          f"{ratios(times[:, 0], times[:, 1])})")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
