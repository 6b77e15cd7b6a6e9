"""Size, power and time of the candidate paired tests of a pass@k difference (issue 37), as one JSON object.

Candidates (model A minus model B, the same problems, independent samples):
  app-q          the paper's m-out-of-n subsampling percentile interval, as `paired_subsampling_test` implements it
  rescaled       the same subsampling rounds, re-centred on the full-n difference and scaled by
                 sqrt(m (n - 1) / (n (n - m))) (the subsample's finite-population spread -> the n-sample estimate's)
  u-statistic    z-test with the unbiased variance of the pass@k estimator (`paired_ustatistic_test`), no resampling
  bootstrap      each model's n samples of each problem resampled with replacement (counts ~ Binomial(n, c / n)),
                 the basic interval around the full-n difference
The three resampling tests use the same number of rounds and the same percentile p-value rule
(p = 2 min(1 + #{R <= 0}, 1 + #{R >= 0}) / (rounds + 1)).

Null draws: per draw, P problems with rates p_i ~ Beta(0.5, 0.5) (many problems near 0 or 1, as in LLM
evaluations), both models' correct counts ~ Binomial(n, p_i). Size = share of draws with p < alpha, at k = 1 and
k = m = min(256, n // 4) (App. Q's m, so every candidate tests the same k). Power: model A's rates p_i + shift
(clipped to [0, 1]). Every draw has its own seed (seed, n, draw): the output is deterministic. Time: one test at
the paper's scale (500 problems x n = 1024, k = 1 and 256, the default 50,000 rounds for the resampling tests).

Usage: python benchmarks/paired_test_calibration.py [--draws 1000] [--power-draws 400] [--rounds 1000]
       [--problems 100] [--ns 8,16,64,1024] [--seed 0] [--no-timing]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time

import numpy as np

from fgrpo_sim.metrics import paired_subsampling_test, paired_ustatistic_test, pass_at_k, subsample_size
from fgrpo_sim.metrics.passk import pass_at_k_table
from fgrpo_sim.metrics.subsampling import _histogram, _independent_histogram

CANDIDATES = ("app-q", "rescaled", "u-statistic", "bootstrap")


def _percentile_p(replicates: np.ndarray) -> np.ndarray:
    """[rounds, K] replicates of the difference -> two-sided percentile p-value per k (App. Q's rule)."""
    rounds = replicates.shape[0]
    low = np.count_nonzero(replicates <= 0, axis=0) + 1
    high = np.count_nonzero(replicates >= 0, axis=0) + 1
    return np.minimum(1.0, 2.0 * np.minimum(low, high) / (rounds + 1))


def _rescaled_p(n, c_a, c_b, ks, m, rounds, rng):
    """Subsampling rounds as App. Q draws them, then D + s (D*_m - D) with the finite-population scale s."""
    table = pass_at_k_table(m, ks).T
    hist_a = _independent_histogram(rng, n, c_a, m, rounds)
    hist_b = _independent_histogram(rng, n, c_b, m, rounds)
    sub = (hist_a - hist_b) @ table / n.size
    full = (pass_at_k(n[:, None], c_a[:, None], ks[None, :]) - pass_at_k(n[:, None], c_b[:, None], ks[None, :])).mean(0)
    n0 = int(n[0])
    scale = np.sqrt(m * (n0 - 1) / (n0 * (n0 - m)))
    return _percentile_p(full + scale * (sub - full))


def _bootstrap_p(n, c_a, c_b, ks, rounds, rng):
    """Samples resampled with replacement within each problem; basic interval around the full-n difference."""
    n0 = int(n[0])
    table = pass_at_k_table(n0, ks).T
    draws_a = rng.binomial(n0, c_a / n0, size=(rounds, n.size))
    draws_b = rng.binomial(n0, c_b / n0, size=(rounds, n.size))
    boot = (_histogram(draws_a, n0, rounds) - _histogram(draws_b, n0, rounds)) @ table / n.size
    full = (pass_at_k(n[:, None], c_a[:, None], ks[None, :]) - pass_at_k(n[:, None], c_b[:, None], ks[None, :])).mean(0)
    # the resampled estimate's mean is the plug-in pass@k, not the unbiased one: re-centre on the full-n difference
    return _percentile_p(full + (boot - boot.mean(axis=0)))


def _p_values(name, n, c_a, c_b, ks, m, rounds, seed_key):
    seed = int(np.random.SeedSequence(seed_key).generate_state(1)[0])  # one integer seed per (seed, n, draw)
    rng = np.random.default_rng(seed)
    if name == "app-q":
        return paired_subsampling_test(n, c_a, n, c_b, ks=ks, m=m, iterations=rounds, seed=seed).p_value
    if name == "rescaled":
        return _rescaled_p(n, c_a, c_b, ks, m, rounds, rng)
    if name == "u-statistic":
        return paired_ustatistic_test(n, c_a, n, c_b, ks=ks).p_value
    return _bootstrap_p(n, c_a, c_b, ks, rounds, rng)


def _draw(seed_key, problems, n, shift):
    rng = np.random.default_rng(seed_key)
    rates = rng.beta(0.5, 0.5, problems)
    c_b = rng.binomial(n, rates)
    c_a = rng.binomial(n, np.clip(rates + shift, 0.0, 1.0))
    return np.full(problems, n), c_a, c_b


def rejection_rates(n, draws, problems, rounds, alpha, seed, shift=0.0):
    """Per candidate: share of draws rejected at k = 1 and k = m, and the seconds its tests took in all."""
    m = subsample_size(n)
    ks = np.array(sorted({1, m}))
    rejected = {name: np.zeros(ks.size, dtype=int) for name in CANDIDATES}
    seconds = dict.fromkeys(CANDIDATES, 0.0)
    for draw in range(draws):
        n_arr, c_a, c_b = _draw((seed, n, draw, int(round(shift * 1e6))), problems, n, shift)
        for name in CANDIDATES:
            start = time.perf_counter()
            p = _p_values(name, n_arr, c_a, c_b, ks, m, rounds, (seed, n, draw))
            seconds[name] += time.perf_counter() - start
            rejected[name] += p < alpha
    return {name: {"ks": ks.tolist(), "rejection_rate": (rejected[name] / draws).tolist(),
                   "rejections": rejected[name].tolist(), "seconds_all_draws": round(seconds[name], 3)}
            for name in CANDIDATES}, m


def paper_scale_seconds(seed):
    """One test of each candidate at 500 problems x n = 1024, k = 1 and 256, 50,000 rounds where it resamples."""
    n_arr, c_a, c_b = _draw((seed, 1), 500, 1024, 0.02)
    ks = np.array([1, 256])
    out = {}
    for name in CANDIDATES:
        start = time.perf_counter()
        _p_values(name, n_arr, c_a, c_b, ks, 256, 50_000, (seed, 1))
        out[name] = round(time.perf_counter() - start, 3)
    return out


def _cpu_name() -> str:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000, help="null draws per n (size)")
    parser.add_argument("--power-draws", type=int, default=400, help="draws of the shifted alternative (power)")
    parser.add_argument("--rounds", type=int, default=1000, help="rounds of the resampling tests per draw")
    parser.add_argument("--problems", type=int, default=100)
    parser.add_argument("--ns", default="8,16,64,1024")
    parser.add_argument("--power-n", type=int, default=64)
    parser.add_argument("--shift", type=float, default=0.02, help="pass@1 shift of model A's per-problem rates")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-timing", action="store_true", help="skip the paper-scale timing")
    args = parser.parse_args()

    size = {}
    for n in (int(x) for x in args.ns.split(",")):
        rates, m = rejection_rates(n, args.draws, args.problems, args.rounds, args.alpha, args.seed)
        size[str(n)] = {"m": m, **rates}
    power, m = rejection_rates(args.power_n, args.power_draws, args.problems, args.rounds, args.alpha, args.seed,
                               shift=args.shift)
    report = {
        "benchmark": "paired_test_calibration",
        "alpha": args.alpha, "problems": args.problems, "rounds": args.rounds, "draws": args.draws,
        "rates": "p_i ~ Beta(0.5, 0.5), both models Binomial(n, p_i)",
        "size": size,
        "power": {"n": args.power_n, "m": m, "shift": args.shift, "draws": args.power_draws, **power},
        "paper_scale_seconds": None if args.no_timing else paper_scale_seconds(args.seed),
        "machine": f"{_cpu_name()}, {os.cpu_count()} CPUs, numpy {np.__version__}",
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
