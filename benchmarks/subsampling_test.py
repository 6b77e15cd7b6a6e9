"""Speed of the paired m-out-of-n subsampling test (paper App. Q) at the paper's scale.

Default workload: 500 problems x 1024 samples per model, m = 256, 50,000 rounds, k = 1, 2, 4, ..., 256.
Every problem is made "mixed" (0 < c < n) so that no problem is skipped as deterministic: this is
the worst case for the fast path. The reference is the direct implementation (draw m sample
indices per problem and model every round, count the correct ones, apply the estimator), timed on
a few rounds and extrapolated linearly to the full number of rounds.

Usage: python benchmarks/subsampling_test.py [--json] [--problems 500] [--samples 1024] [--m 256]
       [--iterations 50000] [--reference-rounds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from fgrpo_sim.metrics import paired_subsampling_test, pass_at_k


def _reference_seconds_per_round(correct_a, correct_b, m, ks, rounds, seed):
    rng = np.random.default_rng(seed)
    problems, samples = correct_a.shape
    ks = np.asarray(ks)
    start = time.perf_counter()
    for _ in range(rounds):
        means = []
        for correct in (correct_a, correct_b):
            idx = np.argsort(rng.random((problems, samples)), axis=1)[:, :m]
            x = np.take_along_axis(correct, idx, axis=1).sum(axis=1)
            means.append(pass_at_k(m, x[:, None], ks[None, :]).mean(axis=0))
        _ = means[0] - means[1]
    return (time.perf_counter() - start) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (default: also one JSON object)")
    parser.add_argument("--problems", type=int, default=500)
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--iterations", type=int, default=50_000)
    parser.add_argument("--reference-rounds", type=int, default=20, help="rounds of the direct method to time (0 = skip)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.samples
    mu = rng.beta(0.5, 0.5, args.problems)
    correct_a = rng.random((args.problems, n)) < np.clip(mu + 0.02, 0, 1)[:, None]
    correct_b = rng.random((args.problems, n)) < mu[:, None]
    for correct in (correct_a, correct_b):  # force 0 < c < n everywhere (worst case for the fast path)
        correct[:, 0], correct[:, 1] = True, False
    c_a, c_b = correct_a.sum(1), correct_b.sum(1)
    ns = np.full(args.problems, n)
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if k <= args.m]

    start = time.perf_counter()
    result = paired_subsampling_test(ns, c_a, ns, c_b, ks=ks, m=args.m, iterations=args.iterations, seed=args.seed)
    seconds = time.perf_counter() - start

    report = {
        "benchmark": "paired_subsampling_test",
        "seconds": round(seconds, 3),
        "iterations": args.iterations,
        "problems": args.problems,
        "samples": n,
        "m": args.m,
        "ks": ks,
        "mixed_problems": int(np.count_nonzero((c_a > 0) & (c_a < n)) + np.count_nonzero((c_b > 0) & (c_b < n))),
        "difference_k1": round(float(result.difference[0]), 6),
        "significant_k1": bool(result.significant[0]),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, numpy {np.__version__}",
    }
    if args.reference_rounds > 0:
        per_round = _reference_seconds_per_round(correct_a, correct_b, args.m, ks, args.reference_rounds, args.seed)
        report["reference"] = {
            "method": "direct index subsampling (argsort per problem per round), timed on "
            f"{args.reference_rounds} rounds and extrapolated",
            "seconds_per_round": round(per_round, 5),
            "extrapolated_seconds": round(per_round * args.iterations, 1),
            "speedup": round(per_round * args.iterations / seconds, 1),
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
