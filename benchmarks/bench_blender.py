"""Benchmark: BlenderHeavyHitters fit time on synthetic search logs.

Run by hand: ``python benchmarks/bench_blender.py [n_users ...]`` (default 1 million and
10 million users, 5% opt-in, epsilon = 4, delta = 1e-6, M = 50). For each size it prints
the fit time with a seeded generator and with the default secure randomness, the time of
the clients' randomizer alone (:meth:`BlenderClient.privatize` on every client) and of
``fit_reports`` on those reports, and the NDCG of the head list.

Everything is vectorised: records are packed into one integer per (query, url) pair
(``np.unique`` on integers for the opt-in counts), clients are mapped to head-list cells
by ``searchsorted``, and LocalAlg is one inverse-CDF draw per client, with one
``searchsorted`` per head-list row.
"""

import sys
import time

import numpy as np

from skhybrid.datasets import make_search_logs
from skhybrid.heavy_hitters import BlenderHeavyHitters


def _best_of(function, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main(sizes=(1_000_000, 10_000_000)):
    for n_users in sizes:
        X = make_search_logs(n_users, random_state=0)
        is_optin = np.random.default_rng(1).random(n_users) < 0.05
        trust_group = np.where(is_optin, "tcm", "lm")
        params = {"epsilon": 4.0, "delta": 1e-6, "max_records": 50}

        seeded = BlenderHeavyHitters(**params, random_state=2)
        seeded_time = _best_of(lambda: seeded.fit(X, trust_group=is_optin))
        strings_time = _best_of(lambda: seeded.fit(X, trust_group=trust_group))
        secure = BlenderHeavyHitters(**params)
        secure_time = _best_of(lambda: secure.fit(X, trust_group=is_optin))

        # The two phases of a deployment: opt-in users, then the clients' own reports.
        phases = BlenderHeavyHitters(**params, random_state=3).fit(X[is_optin])
        client = phases.make_client()
        clients = X[~is_optin]
        reports = client.privatize(clients, random_state=4)
        privatize_time = _best_of(lambda: client.privatize(clients, random_state=4))
        reports_time = _best_of(lambda: phases.fit_reports(reports))

        print(f"{n_users:,} users, 5% opt-in, epsilon=4, delta=1e-6, M=50")
        for label, seconds in [
            ("fit, boolean trust_group, seeded", seeded_time),
            ("fit, string trust_group, seeded", strings_time),
            ("fit, boolean trust_group, secure randomness", secure_time),
            (f"BlenderClient.privatize on {len(clients):,} clients", privatize_time),
            ("fit_reports on their reports", reports_time),
        ]:
            print(f"  {label + ':':<52}{seconds:8.3f} s")
        print(f"  head list: {len(seeded.head_list_)} records from "
              f"{seeded.n_candidates_} candidates; NDCG {seeded.score(X):.4f}")

if __name__ == "__main__":
    main(tuple(int(arg) for arg in sys.argv[1:]) or (1_000_000, 10_000_000))
