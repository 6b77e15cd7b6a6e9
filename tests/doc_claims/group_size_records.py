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
