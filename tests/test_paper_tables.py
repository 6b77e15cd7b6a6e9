"""The paper tables shipped in fgrpo_sim/paper_tables: the checked copy, self-consistent, and the one source of
the report's paper averages (fgrpo_sim/llm/evaluation/paper_results.csv must agree with them number for number)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fgrpo_sim.llm.evaluation.report import load_paper_results
from fgrpo_sim.paper_tables import HERE, MODELS, curve_source, per_benchmark, passk_curve, read_table

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "paper-tables"
SHIPPED = ["README.md", "check_tables.py", "main_results.csv", "table06_gamma_sweep.csv", "table07_selected_gamma.csv",
           "table10_group_size_per_benchmark.csv", "table11_controls_per_benchmark.csv", "table12_14_passk_curves.csv"]


def test_shipped_copy_equals_the_shared_tables_byte_for_byte():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} not present (a user's clone has only the shipped copy)")
    assert sorted(p.name for p in SHARED.iterdir() if p.is_file()) == sorted(SHIPPED)
    for name in SHIPPED:
        assert (HERE / name).read_bytes() == (SHARED / name).read_bytes(), f"{name} differs from {SHARED / name}"


def test_shipped_copy_passes_its_own_checks():
    result = subprocess.run([sys.executable, str(HERE / "check_tables.py")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "42/42 checks passed" in result.stdout


def test_package_data_ships_the_tables():
    text = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert '"fgrpo_sim.paper_tables" = ["*.csv", "README.md", "check_tables.py"]' in text


def _average(file: str, model: str, method: str, scope: str, metric: str, **where: str) -> float:
    rows = [r for r in read_table(file) if r["model"] == model and r["method"] == method and r["scope"] == scope
            and r["metric"] == metric and all(r[k] == v for k, v in where.items())]
    assert len(rows) == 1, (file, model, method, scope, metric, where)
    return float(rows[0]["value"])


def test_paper_results_csv_agrees_with_the_shipped_tables():
    """Every average (and dNLL) of paper_results.csv is the shipped tables' number: one source of truth."""
    keys = {"math_pass1": ("math_avg", "pass@1"), "math_pass256": ("math_avg", "pass@256"),
            "ood_pass1": ("ood_avg", "pass@1"), "ood_pass256": ("ood_avg", "pass@256")}
    checked = 0
    for row_id, entry in load_paper_results().items():
        table, model_key, label = row_id.split(":")
        model = MODELS[model_key]
        for key, (scope, metric) in keys.items():
            if entry[key] is None:
                continue
            if table == "table6":
                base, gamma = label.split("-g")
                value = _average("table06_gamma_sweep.csv", model, entry["method"], scope, metric, base_method=base,
                                 gamma="0" if gamma == "0" else f"{float(gamma):.1f}")
            elif table == "table2":
                method, size = label.rsplit("-N", 1)
                value = _average("main_results.csv", model, method, scope, metric, table="2", group_size=size)
            else:
                method = {"GRPO-lowLR": "GRPO low-LR"}.get(label, label)
                value = _average("main_results.csv", model, method, scope, metric, table=table[-1])
            assert entry[key] == value, (row_id, key)
            checked += 1
        if entry["dnll_rare"] is not None:
            method, size = label.rsplit("-N", 1)
            assert entry["dnll_rare"] == _average("main_results.csv", model, method, "rare_correct_trajectories",
                                                  "delta_nll_rare", table="2", group_size=size)
    assert checked == 4 * 41  # 41 rows, every one with all four averages


def test_per_benchmark_rows_and_curves():
    # Table 10 is Table 2's breakdown; its N = 8 rows equal Table 1 (check_tables.py check 6)
    assert per_benchmark("table2:qwen2.5-7b:GRPO-N8") == per_benchmark("table1:qwen2.5-7b:GRPO")
    assert per_benchmark("table2:qwen2.5-7b:GRPO-N2")["amc23"] == (51.9, 97.0)
    assert per_benchmark("table3:qwen2.5-7b:F-GRPO") == per_benchmark("table1:qwen2.5-7b:F-GRPO")
    assert per_benchmark("table6:qwen2.5-7b:GRPO-g1") == {}
    assert set(per_benchmark("table1:llama-3.2-3b-instruct:F-DAPO")) == {
        "math500", "aime24", "aime25", "amc23", "minerva", "olympiadbench", "ifeval", "synlogic", "gpqa_diamond"}
    with pytest.raises(ValueError, match="must look like"):
        per_benchmark("my own row")
    assert curve_source("table2:qwen2.5-7b:F-GRPO-N8") == ("Qwen2.5-7B", "F-GRPO")
    assert curve_source("table2:qwen2.5-7b:GRPO-N4") is None and curve_source("table3:qwen2.5-7b:DS-GRPO") is None
    curve = passk_curve("Qwen2.5-7B", "F-GRPO", ["amc23", "math500"])
    assert list(curve) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    # k = 1 and 256 are Table 1's per-benchmark numbers (AMC23 in Tables 12-14 = AMC in Table 1)
    table1 = per_benchmark("table1:qwen2.5-7b:F-GRPO")
    assert curve[1] == pytest.approx((table1["amc23"][0] + table1["math500"][0]) / 2)
    assert curve[256] == pytest.approx((table1["amc23"][1] + table1["math500"][1]) / 2)
    assert passk_curve("Qwen2.5-7B", "F-GRPO", ["my_benchmark"]) == {}
