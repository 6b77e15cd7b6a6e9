"""`python -m fgrpo_sim.verl.rehearsal`: every verl stage that runs on CPU, one line each, and its manifest.

One run of the whole module (Ray included, about a minute), then the manifest is checked against the
files on disk; bad options are one line and exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from extras import require

require("verl")

ROOT = Path(__file__).resolve().parent.parent
STAGES = ["model", "prepare-data", "config", "reward", "estimator", "checkpoint", "export", "train"]


def run(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "fgrpo_sim.verl.rehearsal", *map(str, args)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=900)


def test_rehearsal_runs_every_cpu_stage_and_writes_its_manifest(tmp_path):
    proc = run("--out", "r", "--samples", "2", cwd=tmp_path)  # relative, as `make rehearsal` passes it
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert [line.split()[1] for line in lines[:-1]] == STAGES and all(line.startswith("[verl] ") for line in lines)
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    status = {s["name"]: s["status"] for s in manifest["stages"]}
    assert status == {**dict.fromkeys(STAGES[:-1], "ok"), "train": "skipped"} and manifest["ok"]
    assert "GPU" in manifest["stages"][-1]["detail"]
    assert "verl's vanilla policy loss" in manifest["stages"][STAGES.index("checkpoint")]["detail"]
    assert manifest["files"] and all(Path(f).is_file() and Path(f).is_relative_to(tmp_path / "r") for f in manifest["files"])
    exported = Path(manifest["exported_model"])
    assert exported.is_absolute() and exported == (tmp_path / "r" / "exported").resolve()
    assert (exported / "config.json").is_file() and str(exported / "model.safetensors") in manifest["files"]
    assert any(f.endswith("train.parquet") for f in manifest["files"])
    graded = [json.loads(x) for x in (tmp_path / "r" / "verl-reward" / "graded.jsonl").read_text().splitlines()]
    assert len(graded) == 4 * 3 and all(g["acc"] == 1.0 for g in graded if not g["sampled"])


def test_rehearsal_options_are_checked_in_one_line(tmp_path):
    for args in (("--out", tmp_path / "r", "--samples", "0"), ("--out", tmp_path / "r", "--data", tmp_path / "none.jsonl")):
        proc = run(*args, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and proc.stderr.startswith("error:")
