"""`fgrpo llm export-verl`: a real verl FSDP checkpoint (written by verl's FSDPCheckpointManager on CPU,
world size 1) -> a Hugging Face folder that `fgrpo llm eval` loads and samples from.

Also the other layout verl writes (full weights in huggingface/), bad folders, and the main venv's path
(no verl there: the command runs the merger with .venv-verl's interpreter).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from extras import require

require("verl")

from fgrpo_sim.llm.tiny import build_tiny, load_model_and_tokenizer, save_tiny  # noqa: E402
from fgrpo_sim.verl.fsdp_checkpoint import write_fsdp_checkpoint  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def verl_run(tmp_path_factory):
    """A verl run folder: trainer.default_local_dir/global_step_2/actor + latest_checkpointed_iteration.txt."""
    root = tmp_path_factory.mktemp("verl")
    model, tokenizer = build_tiny(seed=0)
    save_tiny(model, tokenizer, root / "tiny")
    trained = write_fsdp_checkpoint(root / "tiny", root / "run" / "global_step_2" / "actor", steps=2)
    (root / "run" / "latest_checkpointed_iteration.txt").write_text("2")
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return root, trained, start, tokenizer


@pytest.fixture
def export(run_cli):
    return lambda *args: run_cli("llm", "export-verl", *args)


def test_export_merges_verls_fsdp_shards_into_a_loadable_model(verl_run, tmp_path, export):
    root, trained, start, tokenizer = verl_run
    actor = root / "run" / "global_step_2" / "actor"
    assert {"fsdp_config.json", "model_world_size_1_rank_0.pt", "optim_world_size_1_rank_0.pt"} <= {p.name for p in actor.iterdir()}
    result = export(root / "run", tmp_path / "hf")
    assert result.exit_code == 0, result.stderr
    assert "verl.model_merger" in result.stdout
    model, tok = load_model_and_tokenizer(tmp_path / "hf")  # what `fgrpo llm eval` loads
    state = model.state_dict()
    assert set(state) >= set(trained) - {"lm_head.weight"}
    # the trained weights (2 AdamW steps away from the start), in the merger's bf16
    assert all(torch.equal(state[k].float(), trained[k].to(torch.bfloat16).float()) for k in trained if k in state)
    assert any(not torch.equal(trained[k], start[k]) for k in trained)
    assert tok("12+3=").input_ids == tokenizer("12+3=").input_ids  # the tokenizer verl saved, verbatim


def test_exported_checkpoint_runs_through_fgrpo_llm_eval(verl_run, tmp_path, export, run_cli):
    root, *_ = verl_run
    assert export(root / "run" / "global_step_2", tmp_path / "hf").exit_code == 0
    data = tmp_path / "bench.jsonl"
    data.write_text(json.dumps({"problem_id": "p0", "problem": "1+1", "answer": "2"}) + "\n")
    result = run_cli("llm", "eval", "--model", tmp_path / "hf", "--data", data, "--out", tmp_path / "eval.jsonl",
                     "--samples", "2", "--max-new-tokens", "4", "--no-progress")
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "eval.jsonl").read_text().splitlines()]
    assert [r["sample_index"] for r in rows] == [0, 1] and all(r["problem_id"] == "p0" for r in rows)


def test_export_copies_full_weights_verl_saved_in_huggingface(tmp_path, export):
    model, tokenizer = build_tiny(seed=1)
    hf = tmp_path / "global_step_5" / "actor" / "huggingface"
    save_tiny(model, tokenizer, hf)  # verl's checkpoint.save_contents=[..., hf_model]
    result = export(tmp_path / "global_step_5", tmp_path / "out")
    assert result.exit_code == 0 and "copied huggingface/" in result.stdout
    loaded, _ = load_model_and_tokenizer(tmp_path / "out")
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in model.state_dict().items() if k in loaded.state_dict())


def test_export_refuses_what_is_not_a_verl_checkpoint(verl_run, tmp_path, export):
    root, *_ = verl_run
    (tmp_path / "empty").mkdir()
    for args, message in (((tmp_path / "missing", tmp_path / "o1"), "not a folder"),
                          ((tmp_path / "empty", tmp_path / "o2"), "no huggingface/ folder"),
                          ((root / "tiny", tmp_path / "o3"), "no huggingface/ folder")):
        result = export(*args)
        assert result.exit_code == 2 and message in result.stderr and result.stderr.count("\n") == 1
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    result = export(root / "run", tmp_path / "full")
    assert result.exit_code == 2 and "not empty" in result.stderr
    assert not list(tmp_path.glob(".o*"))  # no temp folder left behind


def main_venv_python() -> str | None:
    candidate = os.environ.get("FGRPO_MAIN_PYTHON") or str(ROOT / ".venv" / "bin" / "python")
    return candidate if Path(candidate).is_file() else None


@pytest.mark.skipif(main_venv_python() is None, reason="no main .venv next to this checkout (set FGRPO_MAIN_PYTHON)")
def test_main_venv_runs_the_merger_in_the_verl_venv(verl_run, tmp_path):
    root, *_ = verl_run
    python = main_venv_python()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FGRPO_VERL_PYTHON": sys.executable}
    has_verl = subprocess.run([python, "-c", "import verl"], capture_output=True).returncode == 0
    assert not has_verl  # the point of the test: the main venv has no verl
    cmd = [python, "-m", "fgrpo_sim", "llm", "export-verl", str(root / "run"), str(tmp_path / "hf")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "hf" / "config.json").is_file()
    # no verl interpreter anywhere: one line naming make install-verl
    copy = tmp_path / "clone"
    shutil.copytree(ROOT / "fgrpo_sim", copy / "fgrpo_sim", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in env.items() if k != "FGRPO_VERL_PYTHON"} | {"PYTHONPATH": str(copy)}
    # run from tmp_path: `python -m` puts the working directory first on sys.path, and the repository root
    # (where a real .venv-verl may sit) would shadow the copy
    proc = subprocess.run(cmd[:-1] + [str(tmp_path / "hf2")], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "make install-verl" in proc.stderr
