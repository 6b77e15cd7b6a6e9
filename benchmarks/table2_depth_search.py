"""The search behind Table 2's depth (issue 48): what sets the GRPO dip's depth and place; prints/writes JSON.

Three stages, every run through `sim.table2_depth.run_setting` (the group-size study's engine, rows keyed by
their own seeds), GRPO and F-GRPO rows only (the low-LR control is not needed to find the dip):

1. a coarse grid over the free parameters that docs/population.md pre-registered (rare mass, rare-only share,
   offset scale, Adam's lr, steps), `--grid-populations` population draws each, scored by the pre-registered
   loss against the GRPO row of Table 2;
2. the `--refine` best grid settings again at `--populations` draws; the lowest loss is the fit;
3. one factor at a time around the fit (each property of `DepthSetting`, the others at the fit's values), at
   `--populations` draws: the dip's place and both flanks (95% t intervals over populations) and dNLL_rare per N.

A dip is "deep" when both flanks (pass@256 at N = 2 and N = 32 minus the lowest N, points) are at least
DEEP = 6 points, the paper's smaller flank rounded down. The summary counts, per value of each property, the grid
settings whose dip is deep and those whose lowest N is 8.

Usage: python benchmarks/table2_depth_search.py [--out fgrpo_sim/results/table2-depth-search.json]
       [--grid-populations 4] [--populations 10] [--refine 6] [--tiny]   (run it with nice -n 5 on a shared box)
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from dataclasses import asdict, replace

GRID = {"rare_mass": (0.005, 0.01, 0.02, 0.04), "rare_only_share": (0.3, 0.4, 0.5), "offset_scale": (1.0, 2.0),
        "lr": (0.01, 0.02, 0.03, 0.05), "steps": (200, 400)}
#: one factor at a time around the fit: multipliers of the fit's value (integers rounded), or fixed values
OFAT = {"rare_mass": (0.25, 0.5, 2.0, 4.0), "rare_only_share": (0.5, 0.75, 1.25, 1.5), "rare_strategies": (2, 8, 12),
        "offset_scale": (0.5, 0.75, 1.5), "lr": (1 / 3, 0.5, 2.0, 3.0), "steps": (0.5, 2.0, 4.0),
        "prompt_batch": (0.25, 0.5, 2.0)}
FIXED_OFAT = {"rare_strategies"}  # values, not multipliers
DEEP = 6.0
TINY_GRID = {"rare_mass": (0.01, 0.02), "rare_only_share": (0.4,), "offset_scale": (1.0,), "lr": (0.03,),
             "steps": (20,)}


def evaluate(setting, populations: int, intervals: bool = True) -> dict:
    """One setting's GRPO row beside the paper: loss, dip and per N each metric's mean (with its 95% t interval
    over populations where `intervals`; the grid keeps means only, so the committed file stays small)."""
    from fgrpo_sim.sim import table2_depth as t2

    frame = t2.run_setting(setting, populations, controls=False)
    grpo = frame[frame["method"] == "GRPO"]
    rows = t2.summarise(grpo)
    targets = t2.fit_targets()
    return {"setting": asdict(setting), "populations": populations, "loss": t2.fit_loss(rows, targets),
            "rms": t2.fit_rms(rows, targets), "dip": t2.dip_points(grpo),
            "grpo": [{"N": r["N"], **{m: r[m] if intervals else round(r[m]["mean"], 4) for m in t2.METRICS}}
                     for r in rows]}


def depth(result: dict) -> float:
    """The smaller flank (points): both sides of the dip at least this deep."""
    return min(result["dip"]["left"]["points"], result["dip"]["right"]["points"])


def ofat_values(name: str, value, factors) -> list:
    if name in FIXED_OFAT:
        return [v for v in factors if v != value]
    out = [type(value)(round(value * f)) if isinstance(value, int) else round(value * f, 6) for f in factors]
    if name == "rare_only_share":
        out = [min(v, 1.0) for v in out]
    return sorted({v for v in out if v != value and v > 0})


def summary(grid: list[dict], axes: dict) -> dict:
    """Per property value: how many grid settings dip deep (both flanks >= DEEP) and how many are lowest at N = 8."""
    out = {}
    for name in axes:
        out[name] = [{"value": v, "settings": sum(r["setting"][name] == v for r in grid),
                      "deep": sum(r["setting"][name] == v and depth(r) >= DEEP for r in grid),
                      "lowest_at_8": sum(r["setting"][name] == v and r["dip"]["dip_N"] == 8 for r in grid)}
                     for v in axes[name]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="write the JSON here (atomic) as well as printing it")
    parser.add_argument("--grid-populations", type=int, default=4)
    parser.add_argument("--populations", type=int, default=10)
    parser.add_argument("--refine", type=int, default=6)
    parser.add_argument("--tiny", action="store_true", help="a two-setting grid of 20 steps (the test's run)")
    args = parser.parse_args()

    from fgrpo_sim.atomic_io import write_text_atomic
    from fgrpo_sim.jsonl import dumps
    from fgrpo_sim.sim.table2_depth import DepthSetting

    grid_axes = TINY_GRID if args.tiny else GRID
    start, load_before = time.perf_counter(), os.getloadavg()
    base = DepthSetting()
    grid = []
    combos = list(itertools.product(*grid_axes.values()))
    for i, values in enumerate(combos):
        grid.append(evaluate(replace(base, **dict(zip(grid_axes, values))), args.grid_populations, intervals=False))
        print(f"grid {i + 1}/{len(combos)} loss {grid[-1]['loss']:.0f}", file=sys.stderr, flush=True)
    best = sorted(grid, key=lambda r: r["loss"])[:args.refine]
    refined = [evaluate(DepthSetting(**r["setting"]), args.populations) for r in best]
    fit = min(refined, key=lambda r: r["loss"])
    fitted = DepthSetting(**fit["setting"])
    ofat = []
    for name, factors in OFAT.items():
        if args.tiny and name != "lr":
            continue
        for value in ofat_values(name, getattr(fitted, name), factors):
            ofat.append({"property": name, "value": value,
                         **evaluate(replace(fitted, **{name: value}), args.populations)})
            print(f"ofat {name}={value} dip at {ofat[-1]['dip']['dip_N']}", file=sys.stderr, flush=True)
    command = "python benchmarks/table2_depth_search.py " + " ".join(sys.argv[1:])
    record = {"schema": "table2-depth-search-v1", "command": command.strip(), "deep_points": DEEP,
              "grid_axes": grid_axes, "grid": grid, "refined": refined, "fit": fit, "ofat": ofat,
              "summary": summary(grid, grid_axes),
              "deep_settings": [r["setting"] for r in grid if depth(r) >= DEEP],
              "wall_seconds": round(time.perf_counter() - start, 1),
              "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)]}
    text = dumps(record, indent=1) + "\n"
    if args.out:
        write_text_atomic(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
