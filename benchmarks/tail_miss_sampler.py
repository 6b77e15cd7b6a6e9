"""Throughput of the Monte Carlo tail-miss estimator (`fgrpo_sim.sim.estimate_tail_miss`).

Prints one JSON object: groups per second for several (N, mu, tau), next to a reference that draws
both binomials for every group with torch (the straightforward way), timed in the same run.
Target from the issue: at least 3e6 groups per second on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import torch

from fgrpo_sim.sim import estimate_tail_miss

CASES = [(8, 0.5, 0.05), (64, 0.3, 0.003), (4096, 0.64, 6.3e-5)]


def reference_estimate(n: int, mu: float, tau: float, trials: int, seed: int) -> float:
    """Two torch binomial draws per group, no short-cut for groups that already hit E."""
    gen = torch.Generator().manual_seed(seed)
    n_t = torch.full((trials,), float(n), dtype=torch.float64)
    x_e = torch.binomial(n_t, torch.full_like(n_t, tau), generator=gen)
    x_c = torch.binomial(n_t - x_e, torch.full_like(n_t, (mu - tau) / (1 - tau)), generator=gen)
    return float(((x_e == 0) & (x_c > 0) & (x_c < n)).double().mean())


def best_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000_000, help="groups per timed estimate (default 1e7)")
    parser.add_argument("--repeats", type=int, default=3, help="timings per case; the fastest is kept (default 3)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the only output format)")
    args = parser.parse_args()
    if args.trials < 1 or args.repeats < 1:
        parser.error("--trials and --repeats must be >= 1")

    cases = []
    for n, mu, tau in CASES:
        ours = best_seconds(lambda: estimate_tail_miss(n, mu, tau, trials=args.trials, seed=1), args.repeats)
        ref_trials = min(args.trials, 2_000_000)
        ref = best_seconds(lambda: reference_estimate(n, mu, tau, ref_trials, seed=1), args.repeats)
        cases.append({
            "n": n, "mu": mu, "tau": tau, "trials": args.trials,
            "groups_per_second": args.trials / ours,
            "reference_groups_per_second": ref_trials / ref,
            "speedup": (args.trials / ours) / (ref_trials / ref),
        })
    print(json.dumps({
        "cases": cases,
        "min_groups_per_second": min(c["groups_per_second"] for c in cases),
        "torch_threads": torch.get_num_threads(),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
    }))


if __name__ == "__main__":
    main()
