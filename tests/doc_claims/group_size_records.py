"""The sources README.md and docs/population.md both quote: the committed group-size records
(fgrpo_sim/results/population-group-size*.jsonl), the paper's Table 2 GRPO row, and the population simulators' k."""

from __future__ import annotations

from functools import cache

from doc_census import ROOT
from doc_claims.code_defaults import field_default

RESULTS = ROOT / "fgrpo_sim" / "results"
STUDY = "population-group-size.jsonl"
HELDOUT = "population-group-size-heldout.jsonl"


@cache
def records(name: str) -> tuple[dict, ...]:
    """Every setting's report in the committed record `name` (fgrpo_sim/results/NAME)."""
    from fgrpo_sim.jsonl import read_json_objects

    return tuple(obj for _, obj in read_json_objects(RESULTS / name))


def record(name: str, **setting) -> dict:
    """The one report of `name` whose keys equal `setting`."""
    found = [r for r in records(name) if all(r[k] == v for k, v in setting.items())]
    assert len(found) == 1, f"{name}: {len(found)} records for {setting}"
    return found[0]


@cache
def table2_grpo() -> dict[int, float]:
    """The paper's Table 2 (Qwen2.5-7B): GRPO's math-average pass@256 per N."""
    from fgrpo_sim.paper_tables import read_table

    return {int(r["group_size"]): float(r["value"]) for r in read_table("main_results.csv")
            if (r["table"], r["method"], r["scope"], r["metric"]) == ("2", "GRPO", "math_avg", "pass@256")}


def table2_flanks() -> tuple[float, float]:
    """Table 2's dip in points, in flank order: GRPO at the smallest N minus its lowest, then the largest N minus
    its lowest (rounded to the table's one decimal: 75.0 - 64.1 is 10.899999... in binary)."""
    grpo = table2_grpo()
    lowest = min(grpo.values())
    return round(grpo[min(grpo)] - lowest, 1), round(grpo[max(grpo)] - lowest, 1)


def population_k() -> int:
    """The largest k the population simulators evaluate (TrainSpec.pass_k)."""
    return max(field_default("fgrpo_sim/sim/population.py", "TrainSpec", "pass_k"))


# The dips of the record this one replaced (issue 36's per-setting seeding, before issue 44 keyed the counts by
# the row; that file is `git show 4f7abea~1:fgrpo_sim/results/population-group-size.jsonl`), quoted because the
# file is gone from the tree: (rare_correct_prob, optimizer, parametrisation, rare_mass, base_lr) -> lowest N.
# SGD's axis and orthogonal rows are one run (identical by construction), so SGD orthogonal stands for both.
EARLIER_DIPS = {(0.25, "adam", "axis", 0.02, 0.01): 8, (0.25, "adam", "dense", 0.02, 0.01): 32,
                (0.25, "adam", "orthogonal", 0.02, 0.01): 16, (1.0, "adam", "dense", 0.005, 0.01): 128,
                (1.0, "adam", "orthogonal", 0.005, 0.01): 64, (1.0, "adam", "orthogonal", 0.02, 0.01): 16,
                (1.0, "sgd", "orthogonal", 0.02, 2.0): 8}


def _key(r: dict) -> tuple:
    return (r["rare_correct_prob"], r["optimizer"], r["parametrisation"], r["rare_mass"], r["base_lr"])


def dip_changes() -> dict[str, list[tuple[tuple, int, int | None]]]:
    """The earlier record's dips against this record's, per setting: 'kept' (same N), 'moved' (another N) and
    'undone' (no dip now), each (setting, earlier N, N now); 'new': settings that dip now and did not."""
    now = {_key(r): (r["observed_lowest_N"] if r["dip"] else None) for r in records(STUDY)
           if not (r["optimizer"] == "sgd" and r["parametrisation"] == "axis")}
    out = {"kept": [], "moved": [], "undone": [], "new": []}
    for key, before in EARLIER_DIPS.items():
        after = now[key]
        out["kept" if after == before else "undone" if after is None else "moved"].append((key, before, after))
    out["new"] = [(key, None, n) for key, n in now.items() if n is not None and key not in EARLIER_DIPS]
    return out


def setting_name(key: tuple) -> str:
    """'Adam orthogonal, rare mass 0.02' (', rare-worse' when the rare strategies are not the best ones)."""
    rare_p, optimizer, kind, mass, _ = key
    kind = "axis = orthogonal" if optimizer == "sgd" and kind == "orthogonal" else kind
    return f"{'Adam' if optimizer == 'adam' else 'SGD'} {kind}, rare mass {mass:g}{'' if rare_p == 1 else ', rare-worse'}"
