"""skhybrid's TCM-only mean against diffprivlib's ``tools.mean``, in one interleaved run.

diffprivlib needs an older scikit-learn than skhybrid, so it runs in a side
environment: ``python benchmarks/bench_diffprivlib.py [VENV]`` creates ``VENV``
(default ``~/.cache/skhybrid-bench/diffprivlib``) with diffprivlib 0.6.6 and
scikit-learn 1.6 on first use. For each n, rounds alternate between the libraries;
each round times a few calls after a warm-up call (diffprivlib inside its own process,
start-up and imports excluded), and the table gives the minimum over the rounds and
the median of the per-round ratios. Both compute an epsilon-DP mean of n values in
[0, 1] with Laplace noise: skhybrid's ``HybridMeanEstimator("tcm_only")`` (clipping,
exact fixed-point sums, secure discrete Laplace noise; by default it also releases a
private variance at 5% of the budget, ``variance="private"``) and diffprivlib's
``tools.mean`` (clipping, a float sum, its own Laplace sampler). The column "mean only"
is skhybrid with the variance given (``variance=1 / 12``): the same single release as
diffprivlib's.

skhybrid computes the hybrid mean's sums by its C extension (``_skhybrid_native``,
built at install where a C compiler is found) in every process, from its first fit.
Without the extension, it sums every input by numpy's passes until they would have cost
the process about the load of numba's kernels (0.4 s; the first-fit rule,
``skhybrid.utils._sums._compiled``), then by numba's kernels. The three tiers are
measured separately, each pinned for the whole table (a benchmark-only setting of that
rule's private state): "C extension" is what every process gets where skhybrid was
installed with a compiler (CI's machines and this one); "numpy's passes" what a
short-lived process gets without the extension (a CLI call, a joblib worker: any
process in its first 0.4 s of numpy's passes, about 20,000 default fits of 1e3 values,
2,900 of 1e5); "numba's kernels" what a long-running one gets without it.
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


def pin_tier(tier):
    """Pin the moment sums to the C extension (``"native"``), to numpy's passes
    (``"numpy"``) or to numba's kernels (``"compiled"``)."""
    from skhybrid.utils import _sums

    if tier == "native" and _sums._NATIVE_MOMENTS is None:
        raise SystemExit("the C extension _skhybrid_native is not built: reinstall skhybrid "
                         "with a C compiler (python -m pip install .)")
    _sums._tier["native"] = tier == "native"
    _sums._tier["compiled"] = tier == "compiled"
    if tier == "numpy":  # never switch (the later tiers do not read the rule's limit)
        _sums._NUMPY_SECONDS_BEFORE_COMPILED = float("inf")


def skhybrid_seconds(n, variance="private"):
    from skhybrid import HybridMeanEstimator

    X = np.random.default_rng(0).uniform(0, 1, (n, 1))
    estimator = HybridMeanEstimator("tcm_only", epsilon=1.0, bounds=(0.0, 1.0),
                                    variance=variance)
    estimator.fit(X)  # warm-up
    best = float("inf")
    for _ in range(CALLS):
        start = time.perf_counter()
        estimator.fit(X)
        best = min(best, time.perf_counter() - start)
    return best


def main(venv_path=None):
    python = side_environment(venv_path or Path.home() / ".cache" / "skhybrid-bench"
                              / "diffprivlib")
    print(f"{ROUNDS} interleaved rounds of {CALLS} calls; epsilon = 1, [0, 1]; load average "
          f"{os.getloadavg()[0]:.2f}")
    for tier, title in (("native", "C extension"), ("numpy", "numpy's passes (no extension)"),
                        ("compiled", "numba's kernels (no extension)")):
        pin_tier(tier)
        print(f"\nskhybrid: {title}\n")
        print("| n | skhybrid tcm_only | mean only | diffprivlib tools.mean | skhybrid / "
              "diffprivlib: minima, median | mean only / diffprivlib: minima, median |")
        print("| --- | --- | --- | --- | --- | --- |")
        for n in SIZES:
            times = np.array([[skhybrid_seconds(n), skhybrid_seconds(n, 1.0 / 12.0),
                               diffprivlib_seconds(python, n)] for _ in range(ROUNDS)])
            low = times.min(axis=0)
            ours = f"{low[0] / low[2]:.2f}x, {np.median(times[:, 0] / times[:, 2]):.2f}x"
            known = f"{low[1] / low[2]:.2f}x, {np.median(times[:, 1] / times[:, 2]):.2f}x"
            print(f"| {n:,} | {1e3 * low[0]:.3f} ms | {1e3 * low[1]:.3f} ms | "
                  f"{1e3 * low[2]:.3f} ms | {ours} | {known} |")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
