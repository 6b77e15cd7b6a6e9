"""A module's mutation score from stratified samples: one seeded sample per stratum (a set of its files), combined.

sim/ has about 17,000 mutants at about 6 s each, too many to run whole on a 2-core machine, so its files are split
into strata (disjoint sets of files, together the whole module) and each stratum is sampled on its own with
`benchmarks/mutation.py --only PATTERNS --sample K --seed S`. This script reads those runs' JSON outputs and prints
one JSON object: each stratum's score and the module's stratified estimate,

    score = sum_h W_h p_h,  W_h = N_h / N,  p_h = caught_h / judged_h,

(N_h: the stratum's mutants, the run's "of"; judged: killed + timeout + survived + no test + suspicious +
segfault, as mutation.py counts them), with two 95% intervals:
* "jeffreys": each p_h drawn from its Jeffreys posterior Beta(caught + 1/2, not caught + 1/2), combined with the
  weights, 2.5% and 97.5% quantiles of 200,000 seeded draws. Near 100% a normal interval is too narrow on the high
  side; this one is not symmetric.
* "normal": score +- 1.96 sqrt(sum_h W_h^2 (1 - n_h/N_h) p_h (1 - p_h) / (n_h - 1)) (finite-population corrected).

--equivalents FILE (benchmarks/mutation_equivalent.md) leaves out of a stratum's sample every not-caught mutant the
file lists as equivalent (the score "without listed equivalents"); both scores are printed. A name counts as listed
when the file spells it whole, or as `_K` after its function's whole name (the file's shorthand); its open mutants
("Not killed and not equivalent") and "Not classified" sections are not counted.

--unchecked-timeouts not-caught counts as survived the timeouts of runs made before mutation.py re-judged each
timeout un-forked (its recheck_timeouts; such runs lack "timeouts_rechecked"): a lower bound for those runs.

--pool adds up several samples of a stratum (rounds drawn at different seeds, each after the tests written for the
rounds before): a conservative estimate of the latest round's code, since a mutant an earlier round missed may be
killed since, never the reverse (tests are only added).

Usage: python benchmarks/mutation_strata.py benchmarks/mutation_runs/sim-*-seed202.json
           [--equivalents benchmarks/mutation_equivalent.md] [--module-size 16729] [--pool]
           [--unchecked-timeouts caught|not-caught]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

NOT_CAUGHT = ("survived", "no_tests", "suspicious", "segfault")
_WHOLE = re.compile(r"`((?:fgrpo_sim\.)?[\w.ǁ]*?__mutmut_)(\d+)`")
_SHORT = re.compile(r"`_(\d+)`")


def listed_equivalents(text: str) -> set[str]:
    """Mutant names the equivalents file lists: whole names, and `_K` shorthands after the last whole name.

    Skipped: a "Not classified" section, the rest of a section after a line that starts "Not killed and not
    equivalent" (the file's open mutants, listed beside the equivalent ones with their reasons), and any "- " item
    or paragraph that says "not equivalent" (a mutant named there was killed later or no longer exists).
    """
    names: set[str] = set()
    for section in re.split(r"^(?=#)", text, flags=re.MULTILINE):
        if section.lower().startswith(("## not classified", "# not classified")):
            continue
        section = re.split(r"^Not killed and not equivalent", section, flags=re.MULTILINE)[0]
        # an item that says "not equivalent" (killed later, superseded) names a mutant without listing it
        items = re.split(r"^(?=- )|\n\s*\n", section, flags=re.MULTILINE)  # bullets and paragraphs
        section = "\n".join(item for item in items if "not equivalent" not in item.lower())
        base = None
        for token in re.finditer(r"`[^`\n]+`", section):
            whole = _WHOLE.fullmatch(token.group(0))
            if whole:
                base = whole.group(1)
                names.add(base + whole.group(2))
                continue
            short = _SHORT.fullmatch(token.group(0))
            if short and base:
                names.add(base + short.group(1))
    return names


def _is_listed(name: str, listed: set[str]) -> bool:
    # the file writes names with or without the package prefix, and a class method's `xǁClassǁmethod` whole
    return name in listed or any(name.endswith("." + entry) for entry in listed if not entry.startswith("fgrpo_sim"))


def stratum(run: dict, listed: set[str] | None = None) -> dict:
    """One sampled run's counts: caught, judged, its stratum size and score (equivalents left out if listed)."""
    if "sample" not in run or "error" in run:
        raise ValueError(f"run for {run.get('only')} is not a finished sampled run (no 'sample' block, or an error)")
    caught = run["killed"] + run["timeout"]
    judged = caught + sum(run[k] for k in NOT_CAUGHT)
    left_out = sorted(n for n in run.get("not_caught", []) if listed is not None and _is_listed(n, listed))
    judged -= len(left_out)
    if judged < 2:
        raise ValueError(f"stratum {run.get('only')}: judged must be >= 2 mutants, got {judged}")
    return {"only": run["only"], "seed": run["sample"]["seed"], "of": run["sample"]["of"], "sampled": judged,
            "caught": caught, "equivalent_left_out": left_out, "score": caught / judged}


def unchecked_timeouts_not_caught(run: dict) -> dict:
    """The run with its timeouts counted as survived when mutation.py did not judge them again un-forked (runs made
    before recheck_timeouts: no "timeouts_rechecked" key): a forked child that hangs on a copied lock is a timeout
    to mutmut whatever the mutant does, so those timeouts bound the score from above, and this from below."""
    if "timeouts_rechecked" in run:
        return run
    return {**run, "survived": run["survived"] + run["timeout"], "timeout": 0}


def pool_runs(runs: list[dict]) -> list[dict]:
    """One run per stratum: counts and not-caught names added up, the stratum's size from its last run."""
    pooled: dict[tuple, dict] = {}
    for run in runs:
        key = tuple(run.get("only") or ())
        if "sample" not in run or "error" in run:
            raise SystemExit(f"mutation_strata.py: error: run for {run.get('only')} is not a finished sampled run")
        if key not in pooled:
            pooled[key] = {**run, "sample": {**run["sample"], "seeds": [run["sample"]["seed"]]},
                           "not_caught": list(run.get("not_caught", []))}
            continue
        into = pooled[key]
        for k in ("killed", "timeout", *NOT_CAUGHT):
            into[k] += run[k]
        into["not_caught"] += run.get("not_caught", [])
        into["sample"]["seeds"].append(run["sample"]["seed"])
        into["sample"]["of"] = run["sample"]["of"]
    return list(pooled.values())


def combine(strata: list[dict], draws: int = 200_000, seed: int = 0) -> dict:
    """The stratified estimate and its two 95% intervals (module docstring)."""
    sizes = np.array([s["of"] for s in strata], dtype=float)
    n = np.array([s["sampled"] for s in strata], dtype=float)
    caught = np.array([s["caught"] for s in strata], dtype=float)
    weights = sizes / sizes.sum()
    p = caught / n
    score = float(weights @ p)
    var = float(np.sum(weights**2 * (1 - n / sizes) * p * (1 - p) / (n - 1)))
    rng = np.random.default_rng(seed)
    posterior = rng.beta(caught + 0.5, n - caught + 0.5, size=(draws, len(strata))) @ weights
    low, high = np.quantile(posterior, [0.025, 0.975])
    return {"score": score, "jeffreys": [float(low), float(high)],
            "normal": [max(0.0, score - 1.959964 * var**0.5), min(1.0, score + 1.959964 * var**0.5)],
            "mutants": int(sizes.sum()), "sampled": int(n.sum())}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", help="mutation.py JSON outputs, one sampled run per stratum")
    parser.add_argument("--equivalents", help="benchmarks/mutation_equivalent.md: also score without listed ones")
    parser.add_argument("--pool", action="store_true", help="add up the samples of a stratum (rounds drawn at "
                        "different seeds): a conservative estimate of the latest round's code, whose tests are a "
                        "superset of the earlier rounds'")
    parser.add_argument("--module-size", type=int, help="the module's mutant count: the strata must add up to it")
    parser.add_argument("--unchecked-timeouts", choices=("caught", "not-caught"), default="caught",
                        help="how to count the timeouts of runs made before mutation.py judged them again un-forked: "
                        "as mutmut did (caught), or as survived (the lower bound)")
    args = parser.parse_args(argv)
    runs = [run for path in args.runs for run in json.loads(Path(path).read_text())["runs"]]
    if args.unchecked_timeouts == "not-caught":
        runs = [unchecked_timeouts_not_caught(run) for run in runs]
    patterns = [tuple(run.get("only") or ()) for run in runs]
    if len(set(patterns)) != len(patterns) and not args.pool:
        sys.exit("mutation_strata.py: error: two runs sample the same stratum (the same --only patterns); "
                 "--pool adds them up")
    if args.pool:
        runs = pool_runs(runs)
    total = sum(run.get("sample", {}).get("of", 0) for run in runs)
    if args.module_size is not None and total != args.module_size:
        sys.exit(f"mutation_strata.py: error: the strata hold {total} mutants, not --module-size {args.module_size}: "
                 "they must be disjoint and cover the module")
    try:
        plain = [stratum(run) for run in runs]
        out = {"strata": plain, "all_mutants_counted": combine(plain)}
        if args.equivalents:
            listed = listed_equivalents(Path(args.equivalents).read_text(encoding="utf-8"))
            without = [stratum(run, listed) for run in runs]
            out["strata_without_equivalents"] = without
            out["without_listed_equivalents"] = combine(without)
    except ValueError as err:
        sys.exit(f"mutation_strata.py: error: {err}")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
