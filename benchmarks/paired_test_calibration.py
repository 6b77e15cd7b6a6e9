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

--grid (issue 45): the default conditional test (and the u-statistic z-test beside it, k <= n / 2) over the
range a user can ask for: problems 5..1000, n 2..1024, k = 1, n / 4, n / 2, n, three rate laws under the null
(mid: p_i ~ U(0.2, 0.8); mostly 0/1: p_i ~ Beta(0.2, 0.2); degenerate: 80% of problems at rate exactly 0 or 1,
the rest U(0, 1)), and power against model A's rates + --grid-shift on the mid law. Size is the share of draws
rejected among those given a verdict (the conditional test says "no test" where no split can differ; the share
is recorded), with a Clopper-Pearson 95% interval. Usage: ... --grid [--grid-draws 600] [--grid-draws-mid 400]
[--grid-draws-large 100] [--grid-rounds 999] [--grid-rounds-large 199] [--grid-power-draws 200]
[--grid-problems 5,10,30,100,1000] [--grid-ns 2,8,64,1024]
--grid-merge BASE NEW...: BASE's record with its points replaced by NEW's points of the same (problems, n, law,
shift) (a rerun of some cells at more draws; each point keeps its own `draws`), printed as one record.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
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


LAWS = ("mid", "mostly 0/1", "degenerate")


def _law_rates(rng, law, problems):
    if law == "mid":
        return rng.uniform(0.2, 0.8, problems)
    if law == "mostly 0/1":
        return rng.beta(0.2, 0.2, problems)
    rates = rng.uniform(0.0, 1.0, problems)
    stuck = rng.random(problems) < 0.8
    return np.where(stuck, (rng.random(problems) < 0.5).astype(float), rates)


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> list[float]:
    """The exact binomial interval of a rejection rate."""
    from scipy.stats import beta

    tail = (1 - level) / 2
    low = 0.0 if successes == 0 else float(beta.ppf(tail, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(beta.ppf(1 - tail, successes + 1, trials - successes))
    return [low, high]


def _rates_entry(rejected, tested):
    return [{"rejections": int(r), "verdicts": int(t), "rate": (r / t) if t else None,
             "ci95": clopper_pearson(int(r), int(t)) if t else None} for r, t in zip(rejected, tested)]


def grid_point(problems, n, law, draws, rounds, alpha, seed, shift=0.0):
    """One (problems, n, law) point: the conditional and u-statistic tests' rejections at k = 1, n/4, n/2, n."""
    from fgrpo_sim.metrics import paired_conditional_test

    ks = np.array(sorted({1, max(1, n // 4), max(1, n // 2), n}))
    u_ks = ks[2 * ks <= n]
    rejected, tested = np.zeros(ks.size, dtype=int), np.zeros(ks.size, dtype=int)
    u_rejected = np.zeros(u_ks.size, dtype=int)
    start = time.perf_counter()
    for draw in range(draws):
        rng = np.random.default_rng((seed, problems, n, LAWS.index(law), draw, int(round(shift * 1e6))))
        rates = _law_rates(rng, law, problems)
        c_b = rng.binomial(n, rates)
        c_a = rng.binomial(n, np.clip(rates + shift, 0.0, 1.0))
        n_arr = np.full(problems, n)
        res = paired_conditional_test(n_arr, c_a, n_arr, c_b, ks, alpha=alpha, rounds=rounds, seed=draw)
        rejected += res.significant
        tested += res.tested
        if u_ks.size:
            u_rejected += paired_ustatistic_test(n_arr, c_a, n_arr, c_b, u_ks, alpha=alpha).significant
    return {"problems": problems, "n": n, "law": law, "shift": shift, "draws": draws, "ks": ks.tolist(),
            "conditional": _rates_entry(rejected, tested),
            "no_test_share": ((draws - tested) / draws).tolist(),
            "u_statistic": {"ks": u_ks.tolist(), **{"per_k": _rates_entry(u_rejected, [draws] * u_ks.size)}},
            "seconds": round(time.perf_counter() - start, 2)}


def run_grid(args) -> dict:
    points = []
    problems_list = [int(x) for x in args.grid_problems.split(",")]
    for problems in problems_list:
        draws = args.grid_draws if problems <= 30 else args.grid_draws_mid if problems <= 100 else args.grid_draws_large
        rounds = args.grid_rounds if problems <= 100 else args.grid_rounds_large
        for n in (int(x) for x in args.grid_ns.split(",")):
            for law in LAWS:
                points.append({**grid_point(problems, n, law, draws, rounds, args.alpha, args.seed), "rounds": rounds})
                print(json.dumps(points[-1]), file=sys.stderr, flush=True)
            power_draws = min(args.grid_power_draws, draws)
            points.append({**grid_point(problems, n, "mid", power_draws, rounds, args.alpha, args.seed,
                                        shift=args.grid_shift), "rounds": rounds})
            print(json.dumps(points[-1]), file=sys.stderr, flush=True)
    return {"benchmark": "paired_test_calibration --grid", "alpha": args.alpha,
            "laws": {"mid": "p_i ~ U(0.2, 0.8)", "mostly 0/1": "p_i ~ Beta(0.2, 0.2)",
                     "degenerate": "80% of p_i exactly 0 or 1 (half each), the rest U(0, 1)"},
            "size_range": _size_range(points), "points": points,
            "machine": f"{_cpu_name()}, {os.cpu_count()} CPUs, numpy {np.__version__}"}


def _size_range(points: list[dict]) -> list[float]:
    sizes = [e["rate"] for p in points if p["shift"] == 0 for e in p["conditional"] if e["verdicts"]]
    return [min(sizes), max(sizes)]


def _key(point: dict) -> tuple:
    return point["problems"], point["n"], point["law"], point["shift"]


def merge_grid(base: dict, *reruns: dict) -> dict:
    """BASE with every point that a rerun holds replaced by the rerun's (same problems, n, law, shift; the
    order of BASE kept, a point BASE lacks appended): more draws for some cells without rerunning the grid."""
    if any(r["alpha"] != base["alpha"] for r in reruns):
        raise ValueError("every rerun must use the base record's alpha")
    newer = {_key(p): p for r in reruns for p in r["points"]}
    points = [newer.pop(_key(p), p) for p in base["points"]] + list(newer.values())
    machines = sorted({base["machine"], *(r["machine"] for r in reruns)})
    return {**base, "size_range": _size_range(points), "machine": "; ".join(machines), "points": points}


def print_grid(record: dict) -> None:
    """One point per line: the committed record diffs by point."""
    record = dict(record)
    points = record.pop("points")
    print(json.dumps(record)[:-1] + ', "points": [\n' + ",\n".join(json.dumps(p) for p in points) + "\n]}")


def _cell(entry: dict | None) -> str:
    if entry is None:
        return "-"
    if not entry["verdicts"]:
        return "no test"
    low, high = entry["ci95"]
    return f"{100 * entry['rate']:.1f}% ({entry['rejections']}/{entry['verdicts']}) [{100 * low:.1f}, {100 * high:.1f}]"


def _by_k(point: dict, entries: list, ks: list) -> list[str]:
    """Cells for k = 1, n/4, n/2, n; a k equal to an earlier column's (n = 2: n/4 = n/2 = 1) is '='."""
    n = point["n"]
    cells, seen = [], set()
    for k in (1, max(1, n // 4), max(1, n // 2), n):
        cells.append("=" if k in seen else _cell(entries[ks.index(k)]) if k in ks else "-")
        seen.add(k)
    return cells


def grid_markdown(record: dict) -> str:
    """The RESULTS.md tables of a --grid record: size per (problems, n, law) and k, power per (problems, n)."""
    head = "| problems | n | law | draws | k = 1 | k = n/4 | k = n/2 | k = n | no test (k = 1) | u-statistic, k = n/2 |"
    lines = [head, "| " + " | ".join(["---"] * 10) + " |"]
    pooled = [0, 0]
    for p in record["points"]:
        if p["shift"]:
            continue
        u = p["u_statistic"]
        u_cell = _cell(u["per_k"][u["ks"].index(max(1, p["n"] // 2))]) if max(1, p["n"] // 2) in u["ks"] else "-"
        lines.append(f"| {p['problems']:,} | {p['n']} | {p['law']} | {p['draws']:,} | "
                     + " | ".join(_by_k(p, p["conditional"], p["ks"]))
                     + f" | {100 * p['no_test_share'][0]:.1f}% | {u_cell} |")
        for e in p["conditional"]:
            pooled[0] += e["rejections"]
            pooled[1] += e["verdicts"]
    lines += ["", f"Pooled over every size cell: {pooled[0]:,} rejections in {pooled[1]:,} verdicts "
              f"({100 * pooled[0] / pooled[1]:.2f}%).", "", *band_lines(record), "",
              "| problems | n | power k = 1 | k = n/4 | k = n/2 | k = n | u-statistic, k = 1 |",
              "| " + " | ".join(["---"] * 7) + " |"]
    for p in record["points"]:
        if not p["shift"]:
            continue
        u = p["u_statistic"]
        lines.append(f"| {p['problems']:,} | {p['n']} | " + " | ".join(_by_k(p, p["conditional"], p["ks"]))
                     + f" | {_cell(u['per_k'][0]) if u['ks'] else '-'} |")
    return "\n".join(lines)


BAND = (0.035, 0.065)  # issue 45's band for the size at alpha = 0.05


def size_cells(record: dict) -> list[dict]:
    """Every size cell with a verdict: (problems, n, law, draws, k) and its conditional-test entry; a k repeated
    at n = 2 (n/4 = n/2 = 1) once."""
    return [{"problems": p["problems"], "n": p["n"], "law": p["law"], "draws": p["draws"], "k": k, **e}
            for p in record["points"] if not p["shift"] for k, e in zip(p["ks"], p["conditional"]) if e["verdicts"]]


def band_verdict(cell: dict, band=BAND) -> str:
    """'inside': the 95% interval lies within the band; 'outside': it lies wholly above or below it (a size
    the draws show to differ); 'open': it crosses an edge (too few verdicts to tell)."""
    low, high = cell["ci95"]
    if band[0] <= low and high <= band[1]:
        return "inside"
    return "outside" if high < band[0] or low > band[1] else "open"


def band_lines(record: dict) -> list[str]:
    """Per number of draws: how many size cells' 95% intervals lie inside the band, outside it, or cross an
    edge; the cells not inside are named for the largest draws (the cells rerun to show the band)."""
    cells = size_cells(record)
    lines = [f"Band {100 * BAND[0]:.1f}-{100 * BAND[1]:.1f}% (95% interval of each size cell):"]
    for draws in sorted({c["draws"] for c in cells}, reverse=True):
        group = [c for c in cells if c["draws"] == draws]
        verdicts = [band_verdict(c) for c in group]
        contain = sum(1 for c, v in zip(group, verdicts) if v != "inside" and c["ci95"][0] <= 0.05 <= c["ci95"][1])
        lines.append(f"- {draws:,} draws: {len(group)} cells, {verdicts.count('inside')} inside, "
                     f"{verdicts.count('outside')} outside, {verdicts.count('open')} crossing an edge "
                     f"({contain} of the {len(group) - verdicts.count('inside')} not inside contain 5%).")
    top = max(c["draws"] for c in cells)
    rest = [c for c in cells if c["draws"] == top and band_verdict(c) != "inside"]
    if rest:
        lines.append(f"- Not inside, at {top:,} draws: " + "; ".join(
            f"{c['problems']}/{c['n']}/{c['law']}/k = {c['k']}: {_cell(c)} {band_verdict(c)}" for c in rest) + ".")
    return lines


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
    parser.add_argument("--grid", action="store_true", help="issue 45's grid of the default conditional test")
    parser.add_argument("--grid-draws", type=int, default=600, help="null draws per point, up to 30 problems")
    parser.add_argument("--grid-draws-mid", type=int, default=400, help="null draws per point, 31-100 problems")
    parser.add_argument("--grid-draws-large", type=int, default=100, help="null draws per point above 100 problems")
    parser.add_argument("--grid-rounds", type=int, default=999, help="the conditional test's Monte Carlo rounds")
    parser.add_argument("--grid-rounds-large", type=int, default=199,
                        help="its rounds above 100 problems (the size is exact at any rounds; time)")
    parser.add_argument("--grid-power-draws", type=int, default=200)
    parser.add_argument("--grid-shift", type=float, default=0.1, help="power: model A's rates + this (mid law)")
    parser.add_argument("--grid-problems", default="5,10,30,100,1000")
    parser.add_argument("--grid-markdown", metavar="RECORD", help="print the RESULTS.md tables of a --grid record")
    parser.add_argument("--grid-ns", default="2,8,64,1024")
    parser.add_argument("--grid-merge", nargs="+", metavar="RECORD",
                        help="print the first --grid record with its points replaced by the later records' points")
    args = parser.parse_args()
    if args.grid_markdown:
        with open(args.grid_markdown) as fh:
            print(grid_markdown(json.load(fh)))
        return
    if args.grid_merge:
        base, *reruns = (json.loads(open(path).read()) for path in args.grid_merge)
        print_grid(merge_grid(base, *reruns))
        return
    if args.grid:
        print_grid(run_grid(args))
        return

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
