"""Does Table 2's depth outcome survive our own choices? (issue 48's follow-up): the summary and checked reader.

`benchmarks/table2_depth_robustness.py` reruns `fgrpo simulate table2-depth` under other choices of ours (fresh
population seeds, SGD, the other maps logits = M theta, half and twice the steps), refitting only what the
pre-registration lets be fitted (the lr, scored by the fit's loss on Table 2's GRPO row) and predicting the nine
cells unchanged. Each alternative keeps its whole table2-depth record; `summarise_record` reduces a record to what
the docs compare (the GRPO dip's place and flanks, pass@1's RMS error to the paper's GRPO row, each prediction's
paired contrast with its interval, v2's verdict and its sign), and `check_robustness` re-derives that summary from
the record it sits beside, so a summary cannot drift from its record (a ValueError naming the file and field).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fgrpo_sim.validation import shorten

SCHEMA = "table2-depth-robustness-v1"
KEYS = ("schema", "baseline", "alternatives", "populations", "grid_populations", "command")


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def summarise_record(record: dict) -> dict:
    """What one table2-depth record says, in the comparison's terms (the record as read by its checked reader).

    `contrasts`: per prediction (its paper method and metric) the simulated contrast to GRPO at N = 8 with its
    paired interval, the paper's, v2's verdict, the sign of the simulated mean and whether the interval excludes 0
    on the paper's side (`same_sign`)."""
    dip = record["grpo_dip_points"]
    contrasts = []
    for p in record["predictions"]:
        c = p["contrast"]
        contrasts.append({"method": p["cell"]["method"], "metric": p["cell"]["metric"], "paper": c["paper"],
                          "predicted": c["predicted"], "ci_low": c["ci_low"], "ci_high": c["ci_high"],
                          "hit": c["hit"], "sign": _sign(c["predicted"]),
                          "same_sign": bool(c["ci_low"] > 0 if c["paper"] > 0 else c["ci_high"] < 0)})
    return {"dip_N": dip["dip_N"],
            "flanks": [{k: dip[side][k] for k in ("N", "points", "ci_low", "ci_high")} for side in ("left", "right")],
            "pass@1_rms": record["fitted"]["rms"]["pass@1"], "hits_v2": sum(c["hit"] for c in contrasts),
            "predictions": len(contrasts), "contrasts": contrasts}


def _entry(value: Any, where: str, name: str) -> dict:
    """One alternative (or the baseline): its record checked, its summary re-derived and compared."""
    from fgrpo_sim.sim.table2_depth_record import check_record

    if not isinstance(value, dict):
        raise ValueError(f"{where}: field {name!r} must be an object, got {shorten(value)}")
    for key in ("name", "record", "summary"):
        if key not in value:
            raise ValueError(f"{where}: field {name!r} has no {key!r}")
    if not isinstance(value["name"], str) or not value["name"].strip():
        raise ValueError(f"{where}: field {name}.name must be a non-empty text, got {shorten(value['name'])}")
    record = check_record(value["record"], f"{where} ({name}.record)")
    if record["schema"] == "table2-depth-v1":
        raise ValueError(f"{where}: field {name}.record must be a table2-depth-v2 record (with contrasts)")
    want = summarise_record(record)
    if value["summary"] != want:
        raise ValueError(f"{where}: field {name}.summary must be its record's (summarise_record), got "
                         f"{shorten(value['summary'])}")
    refit = value.get("refit")
    if refit is not None:  # the lr grid: the chosen lr is the grid's lowest loss, and the record ran it
        if (not isinstance(refit, dict) or not isinstance(refit.get("lrs"), list) or not refit["lrs"]
                or not isinstance(refit.get("losses"), list) or len(refit["losses"]) != len(refit["lrs"])):
            raise ValueError(f"{where}: field {name}.refit must hold lrs and losses, one each, got {shorten(refit)}")
        best = refit["lrs"][min(range(len(refit["lrs"])), key=lambda i: refit["losses"][i])]
        if not (refit.get("chosen") == best == record["fitted"].get("lr")):
            raise ValueError(f"{where}: field {name}.refit.chosen must be the lr of the lowest loss ({best:g}), "
                             f"the one its record ran, got {shorten(refit.get('chosen'))}")
        if refit.get("at_grid_edge") != (best in (refit["lrs"][0], refit["lrs"][-1])):
            raise ValueError(f"{where}: field {name}.refit.at_grid_edge must say whether the chosen lr is the "
                             f"grid's first or last, got {shorten(refit.get('at_grid_edge'))}")
    return {**value, "record": record}


def check_robustness(obj: Any, where: str) -> dict:
    """`obj` read from `where`, every alternative's record and summary checked; ValueError naming the field."""
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: must be a JSON object, got {shorten(obj)}")
    missing = [k for k in KEYS if k not in obj]
    if missing:
        raise ValueError(f"{where} is not a table2-depth robustness record (no {missing[0]!r})")
    if obj["schema"] != SCHEMA:
        raise ValueError(f"{where}: field 'schema' must be {SCHEMA}, got {shorten(obj['schema'])}")
    if not isinstance(obj["alternatives"], list) or not obj["alternatives"]:
        raise ValueError(f"{where}: field 'alternatives' must be a non-empty list, got {shorten(obj['alternatives'])}")
    out = dict(obj)
    out["baseline"] = _entry(obj["baseline"], where, "baseline")
    out["alternatives"] = [_entry(a, where, f"alternatives[{i}]") for i, a in enumerate(obj["alternatives"])]
    names = [a["name"] for a in out["alternatives"]]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: field 'alternatives' must name each alternative once, got {names}")
    for i, a in enumerate(out["alternatives"]):
        if a["record"]["populations"] != obj["populations"]:
            raise ValueError(f"{where}: field alternatives[{i}].record.populations must be {obj['populations']} "
                             f"(the run's), got {a['record']['populations']}")
    if not isinstance(obj["command"], str) or not obj["command"].strip():
        raise ValueError(f"{where}: field 'command' must be a non-empty text, got {shorten(obj['command'])}")
    return out


def read_robustness(path: str | Path) -> dict:
    """The robustness record at `path`, checked (`check_robustness`)."""
    from fgrpo_sim.jsonl import read_json_file

    return check_robustness(read_json_file(path, "table2-depth robustness record"), str(path))


__all__ = ["summarise_record", "check_robustness", "read_robustness", "SCHEMA", "KEYS"]
