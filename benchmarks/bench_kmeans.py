"""HybridKMeans per Lloyd iteration against scikit-learn's KMeans, on the same threads.

``python benchmarks/bench_kmeans.py [--threads 2] [--rounds 7] [--quick]``

Cases: 1e5 and 1e6 points x 2 and 10 features, k = 3 and 10, every user tcm
(``strategy="tcm_only"``, boolean labels) or 5% of them (``strategy="hybrid"``). The
calls timed are exactly::

    KMeans(k, init=init, n_init=1, max_iter=iterations, tol=0, algorithm="lloyd").fit(X)
    HybridKMeans(k, epsilon=7.0, n_iter=iterations, strategy=strategy, bounds=(0, 1),
                 init=init, n_jobs=threads, random_state=0).fit(X, trust_group=is_tcm)

both under ``threadpool_limits(threads)`` (scikit-learn's OpenMP and BLAS threads, and
HybridKMeans' through ``n_jobs``). A fit's time per iteration is the time from the end
of its first iteration to the end of its last, over their number: its fixed costs
(validation, scikit-learn's copy of X, the lm users' reports) are outside it. The two
fits run in turn in each round, each after 20 ms of quiet, after a warm-up; printed:
HybridKMeans' quickest time per iteration, and the ratio's min / median / max over the
rounds. Goals (issue 49): tcm_only <= 1.3x, hybrid <= 2.5x.

Then the peak memory a fit allocates (tracemalloc, in a fresh process) over the input's
size at 1e6 x 10, k = 10 (goal: <= 1.5x), and the CPU seconds of a first HybridKMeans
fit in a fresh process (300,000 x 2, 3 clusters; the import not counted).
"""

import argparse
import os
import subprocess
import sys
import textwrap
import time
import warnings
from contextlib import contextmanager

import numpy as np
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from skhybrid.cluster import HybridKMeans

SETTLE_SECONDS = 0.02


@contextmanager
def iteration_marks():
    """While in it, the end of every Lloyd iteration is time-stamped in the list yielded:
    scikit-learn's (each ``lloyd_iter_chunked_dense`` that updates the centres) and
    HybridKMeans' (each ``_next_centres``, the last step of its iterations). Both are
    module globals the fits look up at each call, so the fits run unchanged."""
    import sklearn.cluster._kmeans as theirs

    import skhybrid.cluster._kmeans as ours

    marks = []

    def marked(function, counted=lambda kwargs: True):
        def call(*args, **kwargs):
            result = function(*args, **kwargs)
            if counted(kwargs):
                marks.append(time.perf_counter())
            return result
        return call

    originals = theirs.lloyd_iter_chunked_dense, ours._next_centres
    theirs.lloyd_iter_chunked_dense = marked(
        originals[0], lambda kwargs: kwargs.get("update_centers", True))
    ours._next_centres = marked(originals[1])
    try:
        yield marks
    finally:
        theirs.lloyd_iter_chunked_dense, ours._next_centres = originals


def iteration_times(n, n_features, k, strategy, threads, rounds, rng):
    """Per round, (scikit-learn's, HybridKMeans') time per iteration."""
    X = rng.uniform(0, 1, size=(n, n_features))
    init = rng.uniform(0, 1, size=(k, n_features))
    is_tcm = np.ones(n, bool) if strategy == "tcm_only" else rng.random(n) < 0.05
    iterations = 11 if n >= 1_000_000 else 21

    def lloyd():
        KMeans(k, init=init, n_init=1, max_iter=iterations, tol=0, algorithm="lloyd").fit(X)

    def private():
        HybridKMeans(k, epsilon=7.0, n_iter=iterations, strategy=strategy, bounds=(0, 1),
                     init=init, n_jobs=threads, random_state=0).fit(X, trust_group=is_tcm)

    times = np.empty((rounds, 2))
    with threadpool_limits(threads), iteration_marks() as marks:
        lloyd()
        private()
        for round_ in range(rounds):
            for column, fit in enumerate((lloyd, private)):
                time.sleep(SETTLE_SECONDS)
                marks.clear()
                fit()
                times[round_, column] = (marks[-1] - marks[0]) / (len(marks) - 1)
    return times


def in_fresh_process(code):
    """The last line a fresh Python process prints after running ``code``."""
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True,
                            capture_output=True, text=True)
    return result.stdout.strip().splitlines()[-1]


def peak_memory(strategy):
    """Peak memory a fit allocates over the input's size, 1e6 x 10, k = 10."""
    return float(in_fresh_process(f"""
        import tracemalloc, warnings
        import numpy as np
        from skhybrid import HybridKMeans
        warnings.simplefilter("ignore")
        rng = np.random.default_rng(0)
        X = rng.uniform(0, 1, size=(1_000_000, 10))
        is_tcm = rng.random(1_000_000) < (1.0 if {strategy!r} == "tcm_only" else 0.05)
        fit = lambda: HybridKMeans(10, epsilon=7.0, n_iter=3, strategy={strategy!r},
                                   bounds=(0, 1), random_state=0).fit(X, trust_group=is_tcm)
        fit()
        tracemalloc.start()
        fit()
        print(tracemalloc.get_traced_memory()[1] / X.nbytes)
    """))


def first_fit_seconds():
    """CPU seconds of a fresh process's first HybridKMeans fit, 300,000 x 2, k = 3."""
    return float(in_fresh_process("""
        import time, warnings
        import numpy as np
        from skhybrid import HybridKMeans
        warnings.simplefilter("ignore")
        rng = np.random.default_rng(0)
        X = rng.uniform(0, 1, size=(300_000, 2))
        trust = np.where(rng.random(300_000) < 0.05, "tcm", "lm")
        start = time.process_time()
        HybridKMeans(3, bounds=(0, 1), random_state=0).fit(X, trust_group=trust)
        print(time.process_time() - start)
    """))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="1e5 points only")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    load = os.getloadavg()[0]
    print(f"{'case':44s} {'ms/iter':>8s} {'min':>6s} {'median':>6s} {'max':>6s}  goal")
    for n in [100_000] if args.quick else [100_000, 1_000_000]:
        for n_features in (2, 10):
            for k in (3, 10):
                for strategy, goal in (("tcm_only", 1.3), ("hybrid", 2.5)):
                    times = iteration_times(n, n_features, k, strategy, args.threads,
                                            args.rounds, rng)
                    ratios = times[:, 1] / times[:, 0]
                    case = f"{strategy}, {n:,} x {n_features}, k={k}"
                    print(f"{case:44s} {1e3 * times[:, 1].min():8.2f} {ratios.min():6.2f} "
                          f"{np.median(ratios):6.2f} {ratios.max():6.2f}  <= {goal}x",
                          flush=True)
    for strategy in ("tcm_only", "hybrid"):
        print(f"peak memory of a {strategy} fit, 1e6 x 10, k=10: "
              f"{peak_memory(strategy):.2f}x the input (<= 1.5x)", flush=True)
    print(f"first fit in a fresh process, 300,000 x 2, k=3: {first_fit_seconds():.3f} s CPU")
    print(f"load average: {load:.2f} before, {os.getloadavg()[0]:.2f} after, "
          f"{os.cpu_count()} cores, {args.threads} threads")


if __name__ == "__main__":
    main()
