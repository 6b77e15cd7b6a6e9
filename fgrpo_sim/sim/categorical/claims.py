"""Fig 2's three claims with 10 seeds and bootstrap intervals (the README and docs/categorical.md quote them).

    python -m fgrpo_sim.sim.categorical.claims [--out runs/categorical-claims.parquet] [--seeds 10] [--json]

`--json` prints the claims as one JSON object (intervals as [estimate, low, high]); that record is committed as
fgrpo_sim/results/categorical-claims.json, which the docs' Fig 2 numbers are checked against.

The paper's grid (17 N x gamma 0, 1, default setting, 1000 steps) with seeds 0..S-1; a run costs under a
second here (340 runs in 149 s, benchmarks/RESULTS.md), so the claims get 10 seeds rather than the paper's 4
(its plot). Every interval is a 95%
percentile bootstrap over seeds (`fgrpo_sim.metrics.bootstrap`); differences are paired by seed (runs with
equal seed share their random streams, `CategoricalConfig`). Claims:
1. Q_pos rises at every N: final minus start, per N and gamma.
2. M_ret is non-monotonic in N (gamma 0): both ends of the grid minus the N with the lowest mean M_ret.
3. gamma = 1 retains more: M_ret(gamma 1) - M_ret(gamma 0) per N.
The table is resumable (run_grid); rerunning with the same --out only prints.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

DEFAULT_OUT = Path("runs/categorical-claims.parquet")
DEFAULT_SEEDS = 10  # the paper plots 4; a run costs under a second, so the claims get 10 (docs/categorical.md)


def final_by_seed(table: pd.DataFrame, metric: str, gamma: float) -> pd.DataFrame:
    """[seeds, N] of `metric` at the last step for one gamma (rows ordered by seed, columns by N)."""
    last = table[(table["step"] == table["step"].max()) & (table["gamma"] == gamma)]
    return last.pivot(index="seed", columns="group_size", values=metric).sort_index().sort_index(axis=1)


def claims(table: pd.DataFrame) -> dict:
    """The three claims' intervals from a grid table with gammas 0 and 1 and >= 2 seeds."""
    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci, bootstrap_paired_difference_ci

    start = float(table[table["step"] == 0]["q_pos"].mean())
    m0, m1 = final_by_seed(table, "m_ret", 0.0), final_by_seed(table, "m_ret", 1.0)
    rows = []
    for n in m0.columns:
        row = {"N": int(n)}
        for gamma in (0.0, 1.0):
            q = final_by_seed(table, "q_pos", gamma)[n].to_numpy()
            row[f"q_pos_rise_g{gamma:g}"] = bootstrap_mean_ci(q - start)
            row[f"m_ret_g{gamma:g}"] = bootstrap_mean_ci((m0 if gamma == 0 else m1)[n].to_numpy())
        row["m_ret_g1_minus_g0"] = bootstrap_paired_difference_ci(m1[n].to_numpy(), m0[n].to_numpy())
        rows.append(row)
    low_n = int(m0.mean().idxmin())
    ends = {int(n): bootstrap_paired_difference_ci(m0[n].to_numpy(), m0[low_n].to_numpy())
            for n in (m0.columns[0], m0.columns[-1])}
    return {"start_q_pos": start, "seeds": int(len(m0)), "rows": rows, "lowest_n": low_n, "ends_minus_lowest": ends}


def report(result: dict) -> str:
    """The claims as text: one line per N, then the three verdicts."""
    lines = [f"{result['seeds']} seeds; 95% percentile bootstrap over seeds (differences paired by seed); "
             f"start Q_pos {result['start_q_pos']:.4f}",
             f"{'N':>7}  {'Q_pos rise g0':>26}  {'Q_pos rise g1':>26}  {'M_ret g0':>26}  {'M_ret g1':>26}  "
             f"{'M_ret g1 - g0':>27}"]
    for r in result["rows"]:
        lines.append(f"{r['N']:>7}  {r['q_pos_rise_g0']!s:>26}  {r['q_pos_rise_g1']!s:>26}  {r['m_ret_g0']!s:>26}  "
                     f"{r['m_ret_g1']!s:>26}  {r['m_ret_g1_minus_g0']!s:>27}")
    rises = [r[f"q_pos_rise_g{g}"] for r in result["rows"] for g in (0, 1)]
    lines.append(f"claim 1, Q_pos rises at every N: {'yes' if all(i.low > 0 for i in rises) else 'no'} "
                 f"(smallest lower bound {min(i.low for i in rises):+.4f})")
    ends = result["ends_minus_lowest"]
    verdict = "yes" if all(i.low > 0 for i in ends.values()) else "not shown (an interval includes 0)"
    lines.append(f"claim 2, M_ret (gamma 0) non-monotonic in N: {verdict}; lowest mean at N = {result['lowest_n']}; "
                 + "; ".join(f"N = {n} minus N = {result['lowest_n']}: {i}" for n, i in ends.items()))
    diffs = [(r["N"], r["m_ret_g1_minus_g0"]) for r in result["rows"]]
    above = [n for n, i in diffs if i.low > 0]
    below = [n for n, i in diffs if i.high < 0]
    zero = [n for n, i in diffs if i.includes_zero]
    lines.append(f"claim 3, gamma = 1 retains more: interval above 0 at N = {above or 'none'}; below 0 at "
                 f"N = {below or 'none'}; includes 0 at N = {zero or 'none'}")
    return "\n".join(lines)


def as_record(result: dict) -> dict:
    """The claims as plain JSON values: each interval [estimate, low, high], its confidence once."""
    def plain(value):
        if hasattr(value, "estimate"):
            return [value.estimate, value.low, value.high]
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return {"interval": "95% percentile bootstrap over seeds (differences paired by seed)", **plain(result)}


def main(argv: list[str] | None = None) -> int:
    from fgrpo_sim.sim.categorical.config import CategoricalConfig
    from fgrpo_sim.sim.categorical.run import run_grid
    from fgrpo_sim.validation import check_integer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="grid table (.parquet), resumed if present")
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS,
                        help=f"seeds 0..S-1, S in [2, 1000] (default {DEFAULT_SEEDS})")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the claims as one JSON object")
    args = parser.parse_args(argv)
    try:
        seeds = int(check_integer("--seeds", args.seeds, 2, 1000))
        config = CategoricalConfig(stride=10).with_(seeds=tuple(range(seeds)))
        table = run_grid(config, args.out, resume=True, progress=not args.no_progress)
    except ValueError as exc:
        parser.exit(2, f"error: {exc}\n")
    if args.json:
        from fgrpo_sim import jsonl

        print(jsonl.dumps(as_record(claims(table))))
    else:
        print(report(claims(table)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
