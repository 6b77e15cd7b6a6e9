"""The checked reader of a Table 2 depth record (`fgrpo simulate table2-depth`, schema table2-depth-v1).

The figure, the notebook and the docs read the record through `read_record`: every field they use is typed and
in range before any is drawn or quoted, and the record's own promises are checked (a ValueError naming the file
and the field otherwise): the fit targets are GRPO-row cells only, every interval holds its estimate
(ci_low <= predicted <= ci_high), each simulated row has the three metrics, the dip's N is one of the rows' N.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fgrpo_sim.validation import file_number, shorten

SCHEMA = "table2-depth-v1"
KEYS = ("schema", "fit_targets", "fitted", "simulated_rows", "predictions", "grpo_dip_points", "populations",
        "seeding", "command")
METRICS = ("pass@1", "pass@256", "dnll_rare")
#: the slack a float's last digits may need (JSON round trip keeps them; the t interval's own arithmetic may not)
SLACK = 1e-9


def _dict(value: Any, where: str, name: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: field {name!r} must be an object, got {shorten(value)}")
    return value


def _list(value: Any, where: str, name: str, least: int = 1) -> list:
    if not isinstance(value, list) or len(value) < least:
        raise ValueError(f"{where}: field {name!r} must be a list of at least {least}, got {shorten(value)}")
    return value


def _text(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: field {name!r} must be a non-empty text, got {shorten(value)}")
    return value


def _metric_range(metric: str) -> tuple[float | None, float | None]:
    return (0.0, 100.0) if metric.startswith("pass@") else (None, None)


def _ordered(low: float, mid: float, high: float, where: str, name: str) -> None:
    if not (low - SLACK <= mid <= high + SLACK):
        raise ValueError(f"{where}: field {name!r} must hold ci_low <= estimate <= ci_high, got "
                         f"{low:g} <= {mid:g} <= {high:g}")


def _interval(value: Any, where: str, name: str, metric: str, mean: str = "mean") -> dict:
    value = _dict(value, where, name)
    low, high = _metric_range(metric)
    # the estimate lies in the metric's range; a t interval over few populations may reach past it (finite only)
    out = {k: file_number(value.get(k), where, f"field {name}.{k!r}", *((low, high) if k == mean else (None, None)))
           for k in (mean, "ci_low", "ci_high")}
    _ordered(out["ci_low"], out[mean], out["ci_high"], where, name)
    return out


def _cell(value: Any, where: str, name: str) -> dict:
    value = _dict(value, where, name)
    out = {"model": _text(value.get("model"), where, f"{name}.model"),
           "method": _text(value.get("method"), where, f"{name}.method"),
           "N": file_number(value.get("N"), where, f"field {name}.N", 1, None, integer=True),
           "metric": _text(value.get("metric"), where, f"{name}.metric")}
    if out["metric"] not in METRICS:
        raise ValueError(f"{where}: field {name}.metric must be one of {', '.join(METRICS)}, got {out['metric']!r}")
    return out


def check_record(obj: Any, where: str) -> dict:
    """`obj` read from `where` with every field the readers use checked and converted; ValueError naming it."""
    obj = _dict(obj, where, "record")
    missing = [k for k in KEYS if k not in obj]
    if missing:
        raise ValueError(f"{where} is not a table2-depth record (no {missing[0]!r})")
    if obj["schema"] != SCHEMA:
        raise ValueError(f"{where}: field 'schema' must be {SCHEMA!r}, got {shorten(obj['schema'])}")
    record = dict(obj)
    targets = []
    for i, t in enumerate(_list(obj["fit_targets"], where, "fit_targets")):
        cell = _cell(t, where, f"fit_targets[{i}]")
        if cell["method"] != "GRPO":  # the pre-registration: only the GRPO row of Table 2 is fitted
            raise ValueError(f"{where}: field fit_targets[{i}].method must be GRPO (only Table 2's GRPO row is "
                             f"fitted), got {cell['method']!r}")
        low, high = _metric_range(cell["metric"])
        targets.append({**t, **cell, "value": file_number(t.get("value"), where, f"field fit_targets[{i}].value",
                                                          low, high)})
    record["fit_targets"] = targets
    rows = []
    for i, r in enumerate(_list(obj["simulated_rows"], where, "simulated_rows")):
        r = _dict(r, where, f"simulated_rows[{i}]")
        rows.append({**r, "method": _text(r.get("method"), where, f"simulated_rows[{i}].method"),
                     "gamma": file_number(r.get("gamma"), where, f"field simulated_rows[{i}].gamma", 0, None),
                     "N": file_number(r.get("N"), where, f"field simulated_rows[{i}].N", 1, None, integer=True),
                     **{m: _interval(r.get(m), where, f"simulated_rows[{i}].{m}", m) for m in METRICS}})
    record["simulated_rows"] = rows
    preds = []
    for i, p in enumerate(_list(obj["predictions"], where, "predictions", least=0)):
        p = _dict(p, where, f"predictions[{i}]")
        cell = _cell(p.get("cell"), where, f"predictions[{i}].cell")
        got = _interval(p, where, f"predictions[{i}]", cell["metric"], mean="predicted")
        low, high = _metric_range(cell["metric"])
        hit = p.get("hit")
        if not isinstance(hit, bool):
            raise ValueError(f"{where}: field predictions[{i}].hit must be true or false, got {shorten(hit)}")
        preds.append({**p, "cell": cell, **got, "hit": hit,
                      "paper": file_number(p.get("paper"), where, f"field predictions[{i}].paper", low, high)})
    record["predictions"] = preds
    dip = _dict(obj["grpo_dip_points"], where, "grpo_dip_points")
    ns = {r["N"] for r in rows if r["method"] == "GRPO"}
    dip_n = file_number(dip.get("dip_N"), where, "field grpo_dip_points.dip_N", 1, None, integer=True)
    if dip_n not in ns:
        raise ValueError(f"{where}: field grpo_dip_points.dip_N must be one of the GRPO rows' N "
                         f"({', '.join(map(str, sorted(ns)))}), got {dip_n}")
    flanks = {}
    for side in ("left", "right"):
        f = _dict(dip.get(side), where, f"grpo_dip_points.{side}")
        flanks[side] = {"N": file_number(f.get("N"), where, f"field grpo_dip_points.{side}.N", 1, None, integer=True),
                        **_interval(f, where, f"grpo_dip_points.{side}", "points", mean="points")}
    record["grpo_dip_points"] = {"dip_N": dip_n, **flanks}
    record["populations"] = file_number(obj["populations"], where, "field 'populations'", 2, None, integer=True)
    record["fitted"] = _dict(obj["fitted"], where, "fitted")
    for key in ("seeding", "command"):
        record[key] = _text(obj[key], where, key)
    return record


def read_record(path: str | Path) -> dict:
    """The record at `path`, checked (`check_record`)."""
    from fgrpo_sim.jsonl import read_json_file

    return check_record(read_json_file(path, "table2-depth record"), str(path))


def is_record(path: str | Path) -> bool:
    """Is the file at `path` one of this command's records (the overwrite rule: replace only our own)?"""
    try:
        from fgrpo_sim.jsonl import read_json_file

        obj = read_json_file(path, "table2-depth record")
    except (ValueError, OSError):
        return False
    return isinstance(obj, dict) and obj.get("schema") == SCHEMA


__all__ = ["read_record", "check_record", "is_record", "SCHEMA", "KEYS"]
