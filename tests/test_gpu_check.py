"""benchmarks/gpu_check.sh (run on a GPU machine only): its shell parses, make names it, its summary reads the logs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_check_summary import summarize  # noqa: E402


def test_the_script_parses_and_make_runs_it():
    subprocess.run(["bash", "-n", str(ROOT / "benchmarks" / "gpu_check.sh")], check=True)
    assert "bash benchmarks/gpu_check.sh" in (ROOT / "Makefile").read_text()


def test_the_summary_reads_each_stage_log(tmp_path):
    stages = [("torch_step", "ok", "12", ""), ("check", "ok", "30", ""), ("population", "ok", "9", ""),
              ("llm_eval", "failed (exit 2)", "3", ""), ("tests", "timed out after 90 s", "90", ""),
              ("group_size", "skipped", "0", "no --device option yet")]
    (tmp_path / "stages.tsv").write_text("".join("\t".join(s) + "\n" for s in stages))
    (tmp_path / "torch_step.log").write_text('warming up\n{"ops_per_step": 38, "syncs_per_step": 0}\n')
    (tmp_path / "check.log").write_text(json.dumps([{"name": "a", "passed": True}, {"name": "b", "passed": False}],
                                                   indent=1))
    (tmp_path / "population.log").write_text('{"device": "cuda"}\n{"device": "cpu"}\n')
    (tmp_path / "llm_eval.log").write_text("Traceback ...\nValueError: boom\n")
    (tmp_path / "tests.log").write_text("....\n==== 812 passed, 3 skipped in 88.1s ====\n")
    summary = summarize(tmp_path, 150.4)
    stage = summary["stages"]
    assert stage["torch_step"]["result"] == {"ops_per_step": 38, "syncs_per_step": 0}
    assert stage["check"]["result"] == {"checks": 2, "passed": 1}
    assert [r["device"] for r in stage["population"]["result"]] == ["cuda", "cpu"]
    assert stage["llm_eval"]["log_tail"][-1] == "ValueError: boom"
    assert stage["tests"]["pytest"] == "812 passed, 3 skipped in 88.1s"
    assert stage["group_size"] == {"status": "skipped", "seconds": 0, "note": "no --device option yet"}
    assert summary["seconds"] == 150 and summary["ok"] is False
