"""The paper's result tables as shipped CSV (a copy of the checked transcription; README.md here says how).

The files are byte-for-byte the ones `check_tables.py` (in this folder, standard library only) checks;
tests/test_paper_tables.py compares them with the project's shared copy when it exists. This module
maps the row ids of `fgrpo_sim/llm/evaluation/paper_results.csv` (the report's `paper_row`) to the per-benchmark
numbers of Tables 1, 10 and 11 and to the pass@k curves of Tables 12-14, in the report's benchmark names.
"""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The report's benchmark names -> the paper's column names (Tables 1/10/11; Tables 12-14 print AMC23).
BENCHMARK_NAMES = {"math500": "MATH500", "aime24": "AIME24", "aime25": "AIME25", "amc23": "AMC", "minerva": "Minerva",
                   "olympiadbench": "Olympiad", "ifeval": "IFEval", "synlogic": "SynLogic", "gpqa_diamond": "GPQA"}
_CURVE_NAMES = {**BENCHMARK_NAMES, "amc23": "AMC23"}
#: paper_results.csv's model keys -> the tables' model names.
MODELS = {"qwen2.5-7b": "Qwen2.5-7B", "qwen3-4b-base": "Qwen3-4B-Base", "llama-3.2-3b-instruct": "Llama-3.2-3B-Instruct"}
#: Table 3 row ids -> Table 11's method label (the same runs; Table 3 prints only averages).
_TABLE3_TO_11 = {"GRPO-lowLR": "GRPO low-LR", "GRPO-H": "GRPO (H)", "GRPO-KL": "GRPO (KL)", "DS-GRPO": "DS-GRPO",
                 "F-GRPO": "F-GRPO"}


@lru_cache(maxsize=None)
def read_table(name: str) -> tuple[dict[str, str], ...]:
    """The rows of one shipped CSV (e.g. "table10_group_size_per_benchmark.csv") as dicts of strings."""
    path = HERE / name
    if not path.is_file():
        raise ValueError(f"paper table must be one of {', '.join(sorted(p.name for p in HERE.glob('*.csv')))}, "
                         f"got {name!r}")
    with open(path, newline="", encoding="utf-8") as fh:
        return tuple(csv.DictReader(fh))


def table2():
    """Table 2 (Qwen2.5-7B group-size sweep and F-GRPO at N = 8): the rows of main_results.csv with setting
    group_size_sweep, as a DataFrame (value in percent for pass@k, nats for delta_nll_rare)."""
    import pandas as pd

    rows = pd.read_csv(HERE / "main_results.csv")
    return rows[rows["setting"] == "group_size_sweep"].reset_index(drop=True)


def is_table_row_id(row_id: str) -> bool:
    """True for ids of the shipped scheme, TABLE:MODEL:LABEL (paper_results.csv); a user's own CSV may use others."""
    parts = row_id.split(":")
    return len(parts) == 3 and parts[1] in MODELS


def _split_row_id(row_id: str) -> tuple[str, str, str]:
    parts = row_id.split(":")
    if len(parts) != 3 or parts[1] not in MODELS:
        raise ValueError(f"paper_row must look like table1:qwen2.5-7b:GRPO, got {row_id!r}")
    return parts[0], MODELS[parts[1]], parts[2]


def _source(row_id: str) -> tuple[str, dict[str, str]] | None:
    """(file, column filter) of the per-benchmark rows behind a paper row id; None when the paper has none."""
    table, model, label = _split_row_id(row_id)
    if table == "table1":
        return "main_results.csv", {"table": "1", "model": model, "method": label}
    if table == "table2" and "-N" in label:  # Table 2's per-benchmark breakdown is Table 10
        method, size = label.rsplit("-N", 1)
        return "table10_group_size_per_benchmark.csv", {"model": model, "method": method, "group_size": size}
    if table == "table3" and label in _TABLE3_TO_11:  # Table 3's is Table 11
        return "table11_controls_per_benchmark.csv", {"model": model, "method": _TABLE3_TO_11[label]}
    return None  # Table 6: averages only


def per_benchmark(row_id: str) -> dict[str, tuple[float, float]]:
    """benchmark (report name) -> the paper's (pass@1, pass@256) in % for a paper row; {} for Table 6 rows."""
    source = _source(row_id)
    if source is None:
        return {}
    name, where = source
    names = {v: k for k, v in BENCHMARK_NAMES.items()}
    cells: dict[str, dict[str, float]] = {}
    for row in read_table(name):
        if all(row[k] == v for k, v in where.items()) and row["scope"] in names:
            cells.setdefault(names[row["scope"]], {})[row["metric"]] = float(row["value"])
    if not cells:
        raise ValueError(f"paper_row {row_id!r} matches no row of {name}")
    return {bench: (m["pass@1"], m["pass@256"]) for bench, m in cells.items()}


def curve_source(row_id: str) -> tuple[str, str] | None:
    """(model, method) of Tables 12-14 for a paper row that is one of their runs (Table 1, or Table 2 at N = 8)."""
    table, model, label = _split_row_id(row_id)
    if table == "table1":
        return model, label
    if table == "table2" and label.endswith("-N8"):  # the same runs as Table 1 (check_tables.py checks 14)
        return model, label[: -len("-N8")]
    return None


def passk_curve(model: str, method: str, benchmarks: list[str]) -> dict[int, float]:
    """k -> the paper's pass@k (%) averaged over `benchmarks` (report names), Tables 12-14; {} if none present."""
    wanted = {_CURVE_NAMES[b] for b in benchmarks if b in _CURVE_NAMES}
    by_k: dict[int, list[float]] = {}
    for row in read_table("table12_14_passk_curves.csv"):
        if row["model"] == model and row["method"] == method and row["benchmark"] in wanted:
            by_k.setdefault(int(row["k"]), []).append(float(row["value"]))
    return {k: sum(v) / len(v) for k, v in sorted(by_k.items()) if len(v) == len(wanted)}
