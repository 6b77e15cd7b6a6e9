"""A Maze summary read back (a finished run's `summary.json` in a figure's --data-dir, or the committed
maze-results.json): every field the figures and tables read, checked before use, so a damaged or hand-edited
record is one line naming the file and field, never a traceback or a figure drawn from NaN (docs/reliability.md:
every record read back goes through a checked reader)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fgrpo_sim.validation import file_number, shorten

#: pass@k intervals are t intervals over seeds: their bounds may leave [0, 1]; a mean may not.
_PROBABILITY = (0.0, 1.0)
_DIFFERENCE = (-1.0, 1.0)


def _object(value: Any, where: str, name: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: {name} must be a JSON object, got {shorten(value)}")
    return value


def _list(value: Any, where: str, name: str, *, empty: bool = True) -> list:
    if not isinstance(value, list) or (not empty and not value):
        raise ValueError(f"{where}: {name} must be a {'' if empty else 'non-empty '}list, got {shorten(value)}")
    return value


def _stats(table: Any, where: str, name: str, bounds: tuple[float, float]) -> None:
    """{k: {mean, lo, hi, n, values}}: k a whole number, mean and values in `bounds`, lo <= mean <= hi."""
    for k, stat in _object(table, where, name).items():
        if not (isinstance(k, str) and k.isdigit()):
            raise ValueError(f"{where}: {name} keys must be k values (whole numbers), got {shorten(k)}")
        field = f"{name}.{k}"
        stat = _object(stat, where, field)
        mean = file_number(stat.get("mean"), where, f"{field}.mean", *bounds)
        for end in ("lo", "hi"):
            if stat.get(end) is not None:
                bound = file_number(stat[end], where, f"{field}.{end}")
                if (end == "lo" and bound > mean) or (end == "hi" and bound < mean):
                    raise ValueError(f"{where}: {field}.{end} must lie on its side of the mean {mean:g}, got {bound:g}")
        file_number(stat.get("n"), where, f"{field}.n", 0, None, integer=True)
        for i, v in enumerate(_list(stat.get("values", []), where, f"{field}.values")):
            file_number(v, where, f"{field}.values[{i}]", *bounds)


def _curve(curve: Any, where: str, name: str) -> None:
    for i, point in enumerate(_list(curve, where, name, empty=False)):
        point = _object(point, where, f"{name}[{i}]")
        file_number(point.get("step"), where, f"{name}[{i}].step", 0, None, integer=True)
        for key, value in point.items():
            if key == "step":
                continue
            values = value if isinstance(value, list) else [value]  # "pass@1_seeds": one value per seed
            for v in values:
                if key.startswith(("pass@", "exact_pass@")):
                    file_number(v, where, f"{name}[{i}].{key}", *_PROBABILITY)
                else:
                    file_number(v, where, f"{name}[{i}].{key}")


def check_summary(data: Any, path: str | Path) -> dict:
    """`data` (a parsed summary) when every field the Maze figures and tables read is sound; else a ValueError
    "PATH: FIELD must be ..., got X"."""
    where = str(path)
    data = _object(data, where, "the summary")
    preset = _object(data.get("preset"), where, "preset")
    file_number(preset.get("seeds"), where, "preset.seeds", 1, None, integer=True)
    file_number(preset.get("size"), where, "preset.size", 1, None, integer=True)
    file_number(preset.get("eval_samples"), where, "preset.eval_samples", 1, None, integer=True)
    if not isinstance(preset.get("name"), str):
        raise ValueError(f"{where}: preset.name must be a string, got {shorten(preset.get('name'))}")
    if "sft" in data:
        _stats(_object(data["sft"], where, "sft").get("pass_at_k", {}), where, "sft.pass_at_k", _PROBABILITY)
    seen = set()
    for i, cell in enumerate(_list(data.get("cells"), where, "cells", empty=False)):
        name = f"cells[{i}]"
        cell = _object(cell, where, name)
        n = file_number(cell.get("N"), where, f"{name}.N", 1, None, integer=True)
        gamma = file_number(cell.get("gamma"), where, f"{name}.gamma", 0, None)
        if (n, gamma) in seen:
            raise ValueError(f"{where}: {name} repeats N {n} / gamma {gamma:g}")
        seen.add((n, gamma))
        for j, seed in enumerate(_list(cell.get("seeds"), where, f"{name}.seeds", empty=False)):
            file_number(seed, where, f"{name}.seeds[{j}]", 0, None, integer=True)
        _stats(cell.get("pass_at_k"), where, f"{name}.pass_at_k", _PROBABILITY)
        if not cell["pass_at_k"]:
            raise ValueError(f"{where}: {name}.pass_at_k must list at least one k, got none")
        _stats(cell.get("exact_pass_at_k", {}), where, f"{name}.exact_pass_at_k", _PROBABILITY)
        _stats(cell.get("minus_grpo", {}), where, f"{name}.minus_grpo", _DIFFERENCE)
        _curve(cell.get("curve"), where, f"{name}.curve")
    return data
