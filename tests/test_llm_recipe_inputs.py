"""Recipe input seams (issues 18 and 22): CLI overrides typed against their fields, the dry run without
the data file, `llm recipes` errors that name the file and field, and the disk column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from extras import require

require("trl")

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "recipes/tiny/f-grpo.yaml"
F_GRPO = ROOT / "recipes/qwen2.5-7b/f-grpo.yaml"


def _one_line_error(result, *needles):
    assert result.exit_code == 2, result.stdout[-300:]
    assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0, result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


def test_string_overrides_keep_their_string(run_cli, tmp_path):
    from fgrpo_sim.llm.training.recipe import parse_overrides

    parsed = parse_overrides(["--save_strategy", "no", "--output_dir", "2024", "--report_to", "none",
                              "--resume_from_checkpoint", "true", "--chat_template_kwargs", "{enable_thinking: true}",
                              "--focal_gamma", "1", "--bf16", "false", "--focal_reward_func", "null"])
    assert parsed == {"save_strategy": "no", "output_dir": "2024", "report_to": "none", "resume_from_checkpoint": "true",
                      "chat_template_kwargs": {"enable_thinking": True}, "focal_gamma": 1, "bf16": False,
                      "focal_reward_func": None}
    result = run_cli("llm", "train", "--config", F_GRPO, "--dry-run", "--json", "--save_strategy", "no",
                     "--output_dir", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["config"]["save_strategy"] == "no"
    # in a recipe file YAML has already turned the word into false: say how to write it
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"extends: {TINY}\nsave_strategy: no\n")
    _one_line_error(run_cli("llm", "train", "--config", recipe, "--dry-run", "--json"), f"recipe {recipe}", "save_strategy",
                    'quote the word')


def test_dry_run_without_the_data_file_prints_the_resolved_config(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a fresh clone has no data/deepscaler.jsonl
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    result = run_cli("llm", "train", "--config", F_GRPO, "--dry-run", "--json", "--num-processes", "16")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["data_checked"] is False and out["train_rows"] == 39202
    assert result.stderr.strip().count("\n") == 0 and "was not read" in result.stderr
    assert (out["launch"]["generation_steps_per_epoch"], out["launch"]["optimizer_steps_per_epoch"]) == (153, 612)
    config = out["config"]  # what the method preset resolved, not only what the recipe wrote
    assert (config["loss_type"], config["epsilon"], config["epsilon_high"]) == ("dapo", 0.2, 0.2)
    assert config["focal_success_threshold"] == 0.5 and config["save_optimizer_state"] == "last"
    assert config["metrics_file"] == "metrics.jsonl" and config["save_strategy"] == "epoch"
    wandb = json.loads(run_cli("llm", "train", "--config", F_GRPO, "--dry-run", "--json", "--report_to", "wandb").stdout)
    assert wandb["config"]["report_to"] == "wandb" and wandb["config"]["metrics_file"] == "metrics.jsonl"
    cispo = json.loads(run_cli("llm", "train", "--config", ROOT / "recipes/qwen2.5-7b/cispo.yaml", "--dry-run", "--json").stdout)
    assert (cispo["config"]["loss_type"], cispo["config"]["epsilon_high"]) == ("cispo", 6.0)
    rows = run_cli("llm", "train", "--config", F_GRPO, "--dry-run", "--json", "--train-rows", "600")
    assert json.loads(rows.stdout)["launch"]["generation_steps_per_epoch"] == 2
    _one_line_error(run_cli("llm", "train", "--config", F_GRPO, "--dry-run", "--json", "--train-rows", "100"),
                    "has 100 prompts, fewer than one generation batch")
    _one_line_error(run_cli("llm", "train", "--config", F_GRPO, "--dry-run", "--json", "--train-rows", "0"), "--train-rows must be in")
    _one_line_error(run_cli("llm", "train", "--config", F_GRPO, "--train-rows", "600"), "--train-rows plans a --dry-run")
    # a file that exists is read and checked
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"problem": f"{i}+1=", "answer": str(i + 1)}) + "\n" for i in range(300)))
    read = json.loads(run_cli("llm", "train", "--config", F_GRPO, "--dry-run", "--json", "--train_data", data).stdout)
    assert read["data_checked"] is True and read["train_rows"] == 300


def _root(tmp_path: Path, text: str | bytes, name: str = "grpo.yaml") -> Path:
    root = tmp_path / "recipes"
    folder = root / "qwen2.5-7b"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "base.yaml").write_text("model: Qwen/Qwen2.5-7B\ntrain_data: d.jsonl\nnum_generations: 8\n")
    path = folder / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.mark.parametrize("text, needles", [
    ("extends: base.yaml\nnum_generations: [1, 2]\n", ["num_generations must be an integer"]),
    ("extends: base.yaml\nfocal_gamma: null\n", ["focal_gamma must be a number, got null"]),
    ("extends: 5\n", ["extends must be the path of a parent recipe, got 5"]),
    ("extends: base.yaml\nnum_generations: -0\n", ["num_generations must be in [2"]),
    ("extends: base.yaml\nnum_generations: abc\n", ["num_generations must be an integer, got 'abc'"]),
    ("extends: base.yaml\nmax_completion_length: 1.5\n", ["max_completion_length must be an integer"]),
    ("extends: base.yaml\nfocal_gamma: 0.5\nfocal_gamma: 1.0\n", ["line 3: key 'focal_gamma' is given twice"]),
    (b"extends: base.yaml\n# caf\xe9\n", ["line 2: not UTF-8"]),
])
def test_recipes_errors_name_the_file_and_field(run_cli, tmp_path, text, needles):
    path = _root(tmp_path, text)
    result = run_cli("llm", "recipes", "--root", path.parent.parent)
    _one_line_error(result, str(path), *needles)
    if text == "extends: 5\n":  # used to crash the dry run too
        _one_line_error(run_cli("llm", "train", "--config", path, "--dry-run", "--json"), str(path), "extends must be")


def test_recipes_refuses_bad_options_and_empty_roots(run_cli, tmp_path):
    _one_line_error(run_cli("llm", "recipes", "--decode-tokens-per-s", "inf"), "--decode-tokens-per-s must be in (0, inf)")
    (tmp_path / "empty").mkdir()
    _one_line_error(run_cli("llm", "recipes", "--root", tmp_path / "empty"), "has no recipes")
    # a field inherited from the base is named with the base's file
    path = _root(tmp_path, "extends: base.yaml\n")
    (path.parent / "base.yaml").write_text("model: Qwen/Qwen2.5-7B\ntrain_data: d.jsonl\nnum_generations: 1\n")
    _one_line_error(run_cli("llm", "recipes", "--root", path.parent.parent), str(path.parent / "base.yaml"),
                    "num_generations must be in [2")
    # the train command names the file for the config's own checks too, and the option for an override
    _one_line_error(run_cli("llm", "train", "--config", path, "--dry-run", "--json"), str(path.parent / "base.yaml"),
                    "num_generations must be in [2")
    bad = run_cli("llm", "train", "--config", TINY, "--dry-run", "--json", "--num_generations", "1")
    _one_line_error(bad, "num_generations must be in [2")
    assert "recipe " not in bad.stderr


def test_disk_estimate_is_printed_and_follows_the_formula(run_cli):
    from fgrpo_sim.llm.training.recipe_index import estimate_disk_gb

    # 7.6B float32: 30.4 GB weights; 10 epoch checkpoints + the final model, AdamW state kept once
    last = estimate_disk_gb(7.6, checkpoints=10, optimizer_state="last")
    assert last["weights_gb"] == pytest.approx(30.4) and last["checkpoint_gb"] == pytest.approx(91.2)
    assert last["run_gb"] == pytest.approx(11 * 30.4 + 2 * 30.4)
    assert estimate_disk_gb(7.6, checkpoints=10)["run_gb"] == pytest.approx(11 * 30.4 + 10 * 2 * 30.4)
    assert estimate_disk_gb(7.6, checkpoints=10, weight_bytes=2, optimizer_state="last")["run_gb"] == pytest.approx(
        last["run_gb"] / 2)
    rows = json.loads(run_cli("llm", "recipes", "--root", ROOT / "recipes", "--json").stdout)
    assert {r["disk_gb"] for r in rows if r["model"] == "qwen2.5-7b"} == {round(last["run_gb"])}
    text = run_cli("llm", "recipes", "--root", ROOT / "recipes", "--model", "qwen3-4b-base").stdout
    assert "GPU-h, 208 GB disk)" in text and "(S + 1) x P x b" in text
