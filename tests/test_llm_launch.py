"""Launch arithmetic (fgrpo_sim/llm/training/launch.py) and `fgrpo llm train --dry-run`: the paper's 256/64-prompt
layout on 8, 16 and 32 GPUs for every group size, warmup in optimizer steps, memory flag, and dry-run
refusing exactly what the real run refuses (issues #10 and #14)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from extras import require

require("trl")

from fgrpo_sim.llm.training.launch import (  # noqa: E402
    GROUP_SIZE_SWEEP,
    logits_memory,
    plan_batches,
    world_size_from_env,
)

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "recipes/qwen2.5-7b/f-grpo.yaml"
TINY = ROOT / "recipes/tiny/f-grpo.yaml"


def _prompts(path: Path, rows: int) -> Path:
    path.write_text("".join(json.dumps({"problem_id": f"p{i}", "problem": f"{i}+1=", "answer": str(i + 1)}) + "\n"
                            for i in range(rows)))
    return path


@pytest.fixture(scope="module")
def paper_sized_data(tmp_path_factory):
    """39,202 prompts, the size of the paper's filtered DeepScaleR."""
    return _prompts(tmp_path_factory.mktemp("data") / "deepscaler.jsonl", 39202)


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    """600 prompts: two generation batches of 256 (the rest is dropped by TRL's sampler)."""
    return _prompts(tmp_path_factory.mktemp("data") / "small.jsonl", 600)


@pytest.mark.parametrize("world_size", [8, 16, 32])
@pytest.mark.parametrize("n", GROUP_SIZE_SWEEP)
def test_layout_for_every_group_size_and_gpu_count(n, world_size):
    per_device = 2 if n == 2 else 4  # the group-size recipes' values
    plan = plan_batches(world_size, n, per_device)
    # one optimizer update = 64 prompts x N completions, one generation step = 256 prompts x N
    assert plan.per_device_train_batch_size * world_size * plan.gradient_accumulation_steps == 64 * n
    assert plan.generation_batch_size == 256 * n
    # TRL: generation_batch_size = per_device x world x steps_per_generation (micro-batches)
    assert plan.steps_per_generation * per_device * world_size == plan.generation_batch_size
    assert plan.steps_per_generation == 4 * plan.gradient_accumulation_steps and plan.updates_per_generation == 4
    assert plan.warmup_steps() == 60
    assert plan.steps_per_epoch() == (153, 612)  # floor(39202 / 256) generation batches, 4 updates each


def test_layout_refuses_with_the_right_value():
    with pytest.raises(ValueError, match=r"gradient_accumulation_steps must be 8 on 16 processes .* got 16"):
        plan_batches(16, 8, 4, gradient_accumulation_steps=16)
    with pytest.raises(ValueError, match=r"set per_device_train_batch_size to one of 1, 2, 4 \(e.g. "
                                         r"--per_device_train_batch_size 4\); or, keeping per_device_train_batch_size "
                                         r"8, launch on 1, 2, 4, 8, 16 processes$"):
        plan_batches(32, 2, 8)
    # a process count that divides no update (issue 46: "allows per_device_train_batch_size in {}"): which counts do
    with pytest.raises(ValueError, match=r"no per_device_train_batch_size works on 12 processes \(12 does not divide "
                                         r"512\); or, keeping per_device_train_batch_size 4, launch on 1, 2, 4, 8, 16, "
                                         r"32, 64, 128 processes$"):
        plan_batches(12, 8, 4)
    with pytest.raises(ValueError, match="generation_batch_size must be 2048"):
        plan_batches(8, 8, 4, generation_batch_size=1024)
    with pytest.raises(ValueError, match="world_size must be in"):
        plan_batches(0, 8, 4)
    # two PPO epochs per batch (TRL's num_iterations): twice the updates, so 15 generation steps = 120 updates
    assert plan_batches(8, 8, 4, num_iterations=2).warmup_steps() == 120


def test_logits_memory_numbers_and_flag():
    small = logits_memory(4, 8192, 152064)
    assert small.full_bf16 == 2 * 4 * 8192 * 152064 and small.full_fp32 == 2 * small.full_bf16
    assert small.trl_tile == 2 * 4096 * 32768 and small.warning() is None  # 19.9 GB in float32 fits
    big = logits_memory(32, 8192, 152064)  # 159.5 GB in float32
    message = big.warning()
    assert "32 completions x 8192 tokens x 152064 vocabulary" in message and "159.5 GB in float32" in message


def test_world_size_from_env():
    assert world_size_from_env({}) is None and world_size_from_env({"WORLD_SIZE": "16"}) == 16
    with pytest.raises(ValueError, match="WORLD_SIZE must be an integer"):
        world_size_from_env({"WORLD_SIZE": "x"})


@pytest.mark.parametrize("n", GROUP_SIZE_SWEEP)
def test_dry_run_prints_the_arithmetic_for_every_recipe_and_gpu_count(run_cli, small_data, n, monkeypatch):
    recipe = ROOT / f"recipes/qwen2.5-7b/group-size/grpo-n{n}.yaml"
    for world_size in (8, 16, 32):
        monkeypatch.setenv("WORLD_SIZE", str(world_size))  # as accelerate launch / torchrun set it
        result = run_cli("llm", "train", "--config", recipe, "--dry-run", "--json", "--train_data", small_data)
        assert result.exit_code == 0, result.stderr
        out = json.loads(result.stdout)
        launch, config = out["launch"], out["config"]
        assert out["world_size"] == world_size
        assert config["per_device_train_batch_size"] * world_size * config["gradient_accumulation_steps"] == 64 * n
        assert config["generation_batch_size"] == launch["generation_batch_size"] == 256 * n
        assert launch["updates_per_generation"] == 4 and launch["warmup_steps"] == 60
        assert launch["warmup_generation_steps"] == 15
        assert (launch["generation_steps_per_epoch"], launch["optimizer_steps_per_epoch"]) == (2, 8)
        assert launch["logits_gb_per_device"]["full_fp32"] < 80


def test_dry_run_num_processes_and_refusals(run_cli, paper_sized_data, small_data, tmp_path, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    ok = run_cli("llm", "train", "--config", RECIPE, "--dry-run", "--json", "--num-processes", "16", "--train_data",
                 paper_sized_data)
    assert ok.exit_code == 0 and json.loads(ok.stdout)["config"]["gradient_accumulation_steps"] == 8
    launch = json.loads(ok.stdout)["launch"]
    assert (launch["train_rows"], launch["generation_steps_per_epoch"], launch["optimizer_steps_per_epoch"]) == (
        39202, 153, 612)
    data = ["--train_data", small_data]
    too_few = run_cli("llm", "train", "--config", RECIPE, "--dry-run", "--json", "--train_data", _prompts(tmp_path / "f.jsonl", 100))
    assert too_few.exit_code == 2 and "has 100 prompts, fewer than one generation batch" in too_few.stderr
    for extra, needle in [
        (["--num-processes", "16", "--gradient_accumulation_steps", "16"], "gradient_accumulation_steps must be 8 on 16"),
        (["--num-processes", "32", "--per_device_train_batch_size", "3"], "set per_device_train_batch_size to one of 1, 2, 4, 8, 16 (e.g. --per_device_train_batch_size 2)"),
        (["--num-processes", "12"], "no per_device_train_batch_size works on 12 processes"),
        (["--num-processes", "0"], "--num-processes must be in [1"),
        (["--num_generations", "0"], "num_generations must be in [2, inf], got 0"),
        (["--batch_prompts", "100"], "batch_prompts (100) must be a multiple of mini_batch_prompts (64)"),
    ]:
        bad = run_cli("llm", "train", "--config", RECIPE, "--dry-run", "--json", *data, *extra)
        assert bad.exit_code == 2 and needle in bad.stderr, bad.stderr
        assert bad.stderr.count("\n") == 1
    monkeypatch.setenv("WORLD_SIZE", "8")
    clash = run_cli("llm", "train", "--config", RECIPE, "--dry-run", "--json", "--num-processes", "16", *data)
    assert clash.exit_code == 2 and "disagrees with the launcher's WORLD_SIZE=8" in clash.stderr
    # 32 completions of 8192 tokens per device: flagged with the numbers, still planned (TRL 1.16 tiles the logits)
    big = run_cli("llm", "train", "--config", RECIPE, "--dry-run", "--json", "--per_device_train_batch_size", "64", *data)
    assert big.exit_code == 0 and "64 completions x 8192 tokens x 152064 vocabulary" in big.stderr


BAD_VALUES = [
    (["--learning_rate", "nan"], "learning_rate must be a finite number, got 'nan'"),
    (["--max_steps", "abc"], "max_steps must be an integer, got 'abc'"),
    (["--focal_gamma", "-1"], "focal_gamma must be in [0, inf)"),
    (["--focal_gamma", "nan"], "focal_gamma must be a finite number"),
    (["--focal_gamma", "inf"], "focal_gamma must be a finite number"),
    (["--num_generations", "0"], "num_generations must be in [2, inf]"),
    (["--method", "foo"], "method must be one of"),
    (["--bf16", "maybe"], "bf16 must be true or false"),
    (["--reward_wrong", "1"], "reward_correct must be greater than reward_wrong"),
    (["--focal_success_threshold", "0"], "focal_success_threshold must be in (0, 1]"),
    (["--focal_reward_func", "format"], "focal_reward_func must be one of 'math_reward', got 'format'"),
    # torch's AdamW and numpy's seeding refuse these only once the model is loaded (issue 22)
    (["--learning_rate", "-1"], "learning_rate must be in [0, inf), got -1"),
    (["--seed", "1e30"], "seed must be in [0, 2^32 - 1]"),
    (["--seed", "-1"], "seed must be in [0, 2^32 - 1]"),
    (["--adam_beta1", "1"], "adam_beta1 must be in [0, 1)"),
    (["--weight_decay", "-0.1"], "weight_decay must be in [0, inf)"),
]


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "real-run"])
def test_dry_run_refuses_what_the_real_run_refuses(run_cli, tmp_path, dry):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cases = BAD_VALUES + [(["--output_dir", blocker], "output_dir")]
    if not dry:  # a dry run plans without the data file (test_dry_run_without_the_data_file)
        cases.append((["--train_data", "no/such/file.jsonl"], "not found"))
    for extra, needle in cases:
        args = ["llm", "train", "--config", TINY, "--max_steps", "1", "--no-progress", "--output_dir",
                tmp_path / "out", *extra]
        result = run_cli(*args, *(["--dry-run"] if dry else []))
        assert result.exit_code == 2 and needle in result.stderr, (extra, result.stderr)
        assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0
    assert not (tmp_path / "out").exists()  # nothing trained, nothing written


def test_dry_run_accepts_the_tiny_recipe_without_a_layout(run_cli, tmp_path):
    result = run_cli("llm", "train", "--config", TINY, "--dry-run", "--json", "--output_dir", tmp_path / "out",
                     "--max_steps", "3", "--learning_rate", "1e-3")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["launch"] is None and out["config"]["max_steps"] == 3 and out["config"]["learning_rate"] == 0.001
