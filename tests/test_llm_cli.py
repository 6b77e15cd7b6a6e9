"""`fgrpo llm train/eval/prepare-data` end to end on the tiny model (CPU, offline), then `fgrpo passk`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from extras import require

require("trl")

ROOT = Path(__file__).resolve().parent.parent
ARITH = ROOT / "recipes" / "tiny" / "arith.jsonl"
EVAL_ARGS = ["--benchmark", "generic", "--limit", "3", "--max-new-tokens", "6", "--no-system-prompt",
             "--fallback-last-number", "--batch-size", "8", "--no-progress"]


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    from fgrpo_sim.llm.tiny import build_tiny, save_tiny

    model, tokenizer = build_tiny(seed=0)
    return save_tiny(model, tokenizer, tmp_path_factory.mktemp("tiny") / "model")


def _records(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_eval_then_passk_then_resume_with_more_samples(run_cli, tiny_model_dir, tmp_path):
    out = tmp_path / "samples.jsonl"
    result = run_cli("llm", "eval", "--model", tiny_model_dir, "--data", ARITH, "--out", out, "--samples", "4", *EVAL_ARGS)
    assert result.exit_code == 0, result.stderr
    records = _records(out)
    assert len(records) == 12
    assert {(r["problem_id"], r["sample_index"]) for r in records} == {
        (f"arith-{p}", i) for p in range(3) for i in range(4)}
    assert all(isinstance(r["correct"], bool) and r["status"] for r in records)
    assert "pass@1" in result.stdout and "pass@4" in result.stdout

    passk = run_cli("passk", out)
    assert passk.exit_code == 0, passk.stderr
    assert "3 problems, n = 4 samples per problem, 12 samples in all" in passk.stdout
    correct = sum(r["correct"] for r in records)
    first_row = next(line for line in passk.stdout.splitlines() if line.split()[:1] == ["1"])
    assert float(first_row.split()[1]) == pytest.approx(correct / 12, abs=1e-4)

    again = run_cli("llm", "eval", "--model", tiny_model_dir, "--data", ARITH, "--out", out, "--samples", "6", *EVAL_ARGS,
                    "--json")
    assert again.exit_code == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["generated_now"] == 6 and summary["samples"] == 18
    keys = [(r["problem_id"], r["sample_index"]) for r in _records(out)]
    assert len(keys) == len(set(keys)) == 18
    assert _records(out)[:12] == records  # earlier samples untouched

    changed = run_cli("llm", "eval", "--model", tiny_model_dir, "--data", ARITH, "--out", out, "--samples", "6",
                      *EVAL_ARGS, "--temperature", "0.5")
    assert changed.exit_code == 2 and "cannot resume" in changed.stderr and "temperature" in changed.stderr


def test_interrupted_eval_resumes_without_double_counting(tiny_model_dir, tmp_path):
    from fgrpo_sim.llm.evaluation.data import load_benchmark
    from fgrpo_sim.llm.evaluation.evaluate import EvalSettings, run_eval

    problems = load_benchmark("generic", ARITH, limit=2)
    settings = EvalSettings(model=str(tiny_model_dir), data=str(ARITH), benchmark="generic", n=5,
                            max_new_tokens=4, batch_size=3, fallback_last_number=True)
    out = tmp_path / "run.jsonl"

    def stop(batches):
        if batches == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_eval(settings, problems, out, progress=False, on_batch=stop)
    assert len(_records(out)) == 6
    with open(out, "a") as fh:  # a kill in the middle of a write leaves a torn line
        fh.write('{"problem_id": "arith-1", "sample_ind')
    summary = run_eval(settings, problems, out, progress=False)
    keys = [(r["problem_id"], r["sample_index"]) for r in _records(out)]
    assert sorted(keys) == sorted((p["problem_id"], i) for p in problems for i in range(5))
    assert summary["generated_now"] == 4 and summary["samples"] == 10


def test_train_tiny_recipe_from_the_cli(run_cli, tmp_path):
    import warnings

    out = tmp_path / "run"
    with warnings.catch_warnings(record=True) as caught:  # "always": the suite's own filters do not hide them here
        warnings.simplefilter("always")
        result = run_cli("llm", "train", "--config", ROOT / "recipes/tiny/f-grpo.yaml", "--no-progress",
                         "--max_steps", "2", "--logging-steps=1", "--output_dir", out,
                         "--per_device_train_batch_size", "8", "--json")
    assert result.exit_code == 0, result.stderr
    # TRL 1.16 reads transformers' deprecated gradient_checkpointing names every step; training keeps that quiet
    assert not [w for w in caught if issubclass(w.category, FutureWarning) and "checkpointing" in str(w.message)]
    summary = json.loads(result.stdout[result.stdout.index("{\n"):])
    assert summary["steps"] == 2 and 0.0 <= summary["last_focal_weight_mean"] <= 1.0
    assert sum(summary["reward_statuses"].values()) == 2 * 8
    from fgrpo_sim.llm.tiny import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer(out)
    assert len(tokenizer) == model.config.vocab_size == 99


# The Table 3 controls change lr / beta on purpose; tests/test_llm_protocol.py checks them.
QWEN_RECIPES = sorted(p for p in (ROOT / "recipes/qwen2.5-7b").rglob("*.yaml")
                      if p.name != "base.yaml" and not p.stem.startswith(("grpo-low-lr", "grpo-kl")))


def test_qwen_recipes_resolve_to_paper_settings(run_cli, tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"problem": f"{i}+1=", "answer": str(i + 1)}) + "\n" for i in range(256)))
    expected_gamma = {"grpo": 0.0, "dapo": 0.0, "cispo": 0.0, "f-grpo": 0.5, "f-dapo": 0.5, "f-cispo": 1.0}
    assert {p.stem for p in QWEN_RECIPES} >= set(expected_gamma) | {f"grpo-n{n}" for n in (2, 4, 8, 16, 32)}
    for path in QWEN_RECIPES:
        dry = run_cli("llm", "train", "--config", path, "--dry-run", "--num-processes", "8", "--train_data", data,
                      "--json")
        assert dry.exit_code == 0, (path, dry.stderr)
        out = json.loads(dry.stdout)
        run, config = out["run"], out["config"]
        assert run["model"] == "Qwen/Qwen2.5-7B" and run["reward"] == "math"
        assert config["learning_rate"] == 1e-6 and config["beta"] == 0.0
        assert config["warmup_steps"] == 60 == 15 * out["launch"]["updates_per_generation"]  # 15 verl steps
        assert config["num_train_epochs"] == 10 and config["max_completion_length"] == 8192
        assert config["temperature"] == 1.0
        n = config.get("num_generations")
        assert config["generation_batch_size"] == 256 * n  # 256 prompts per generation step
        # mini-batch of 64 prompts on 8 GPUs
        assert config["per_device_train_batch_size"] * 8 * config["gradient_accumulation_steps"] == 64 * n
        if path.stem in expected_gamma:
            assert n == 8 and config["focal_gamma"] == expected_gamma[path.stem]
    dry = run_cli("llm", "train", "--config", ROOT / "recipes/qwen2.5-7b/f-cispo.yaml", "--dry-run", "--focal_gamma", "2",
                  "--train_data", data, "--json")
    assert dry.exit_code == 0 and json.loads(dry.stdout)["config"]["focal_gamma"] == 2


def test_cli_errors_are_one_line(run_cli, tmp_path):
    recipe = ROOT / "recipes/tiny/f-grpo.yaml"
    bad = run_cli("llm", "train", "--config", recipe, "--dry-run", "--focal_gama", "1")
    assert bad.exit_code == 2 and "unknown recipe key 'focal_gama'" in bad.stderr and bad.stderr.count("\n") == 1
    missing = run_cli("llm", "train", "--config", tmp_path / "none.yaml")
    assert missing.exit_code == 2 and "recipe not found" in missing.stderr
    bad_gamma = run_cli("llm", "train", "--config", recipe, "--focal_gamma", "-1", "--max_steps", "1")
    assert bad_gamma.exit_code == 2 and "focal_gamma must be in [0, inf)" in bad_gamma.stderr
    bad_n = run_cli("llm", "eval", "--model", "tiny", "--data", ARITH, "--out", tmp_path / "x.jsonl", "--samples", "0")
    assert bad_n.exit_code == 2 and "--samples must be in [1, inf]" in bad_n.stderr


def test_prepare_data_cli(run_cli, tmp_path):
    out = tmp_path / "prepared.jsonl"
    result = run_cli("llm", "prepare-data", ARITH, "--out", out, "--tokenizer", "tiny", "--max-prompt-tokens", "90",
                     "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["kept"] == len(_records(out)) > 0 and summary["rows_read"] == 64
    assert summary["kept"] + sum(summary["dropped"].values()) == summary["rows_read"]
    assert summary["dropped"].get("prompt too long", 0) == summary["too_long"]


def test_dnll_rare_on_eval_output(run_cli, tiny_model_dir, tmp_path):
    from fgrpo_sim.llm.tiny import build_tiny, save_tiny

    other = save_tiny(*build_tiny(seed=1), tmp_path / "other")
    samples = tmp_path / "s.jsonl"
    assert run_cli("llm", "eval", "--model", tiny_model_dir, "--data", ARITH, "--out", samples, "--samples", "8",
                   "--save-completions", *EVAL_ARGS).exit_code == 0
    records = _records(samples)
    if not any(r["correct"] for r in records):  # keep the test about dNLL, not about the random model's luck
        records[0]["correct"] = True
        samples.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = run_cli("llm", "dnll-rare", "--trajectories", samples, "--data", ARITH, "--base", tiny_model_dir,
                     "--model", tiny_model_dir, "--model", other, "--top-fraction", "0.5", "--no-system-prompt", "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    n_correct = sum(r["correct"] for r in records)
    assert out["correct"] == n_correct and out["selected"] == max(1, round(0.5 * n_correct))
    assert out["models"][str(tiny_model_dir)]["dnll_rare"] == pytest.approx(0.0, abs=1e-6)
    assert out["models"][str(other)]["dnll_rare"] != pytest.approx(0.0, abs=1e-4)


def test_eval_and_train_refuse_bad_paths_and_leave_nothing(run_cli, tiny_model_dir, tmp_path):
    recipe = ROOT / "recipes/tiny/f-grpo.yaml"
    foreign = tmp_path / "mine.jsonl"
    foreign.write_text('{"problem_id": 1, "n": 4, "c": 1}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cases = [
        (["--model", tiny_model_dir, "--data", ARITH, "--out", foreign], "it has no mine.jsonl.meta.json"),
        (["--model", tiny_model_dir, "--data", empty, "--out", tmp_path / "o1.jsonl"], "no problems"),
        (["--model", tiny_model_dir, "--data", tmp_path, "--out", tmp_path / "o2.jsonl"], "is a folder"),
        (["--model", tiny_model_dir, "--data", ARITH, "--out", blocker / "o.jsonl"], "is a file, not a folder"),
        (["--model", tmp_path / "no_model", "--data", ARITH, "--out", tmp_path / "o3.jsonl"], "no such model folder"),
    ]
    for args, needle in cases:
        result = run_cli("llm", "eval", *args, *EVAL_ARGS)
        assert result.exit_code == 2 and needle in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0
    assert foreign.read_text() == '{"problem_id": 1, "n": 4, "c": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.jsonl", "file", "mine.jsonl"]  # no meta files
    for extra, needle in ((["--num_generations", "0"], "num_generations must be in [2, inf]"),
                          (["--output_dir", blocker], "output_dir")):
        result = run_cli("llm", "train", "--config", recipe, "--max_steps", "1", "--no-progress", *extra)
        assert result.exit_code == 2 and needle in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0  # no library warnings


def test_dnll_rare_and_prepare_data_check_options_first(run_cli, tmp_path):
    empty = tmp_path / "traj.jsonl"
    empty.write_text("")
    base = ["--base", "tiny", "--model", "tiny"]
    bad = run_cli("llm", "dnll-rare", "--trajectories", tmp_path / "missing.jsonl", *base, "--top-fraction", "0")
    assert bad.exit_code == 2 and "top_fraction must be in (0, 1]" in bad.stderr
    none = run_cli("llm", "dnll-rare", "--trajectories", empty, "--base", tmp_path / "no_model", "--model", "tiny")
    assert none.exit_code == 2 and "no correct trajectory" in none.stderr  # before trying to load any model
    blocker = tmp_path / "file"
    blocker.write_text("x")
    prep = run_cli("llm", "prepare-data", ARITH, "--out", blocker / "out.jsonl")
    assert prep.exit_code == 2 and prep.stderr.startswith("fgrpo: error: --out ") and "is a file" in prep.stderr


def test_shipped_data_is_found_by_name_from_any_folder(run_cli, tiny_model_dir, tmp_path, monkeypatch):
    """`--data tiny/arith.jsonl` (and prepare-data's SOURCE, dnll-rare's --data) find the shipped file from a folder
    without it, as `--config tiny/f-grpo.yaml` does (issue 46); a near miss names the shipped file."""
    monkeypatch.chdir(tmp_path)
    for name in ("tiny/arith.jsonl", "recipes/tiny/arith.jsonl"):
        result = run_cli("llm", "eval", "--model", tiny_model_dir, "--data", name, "--out", "s.jsonl", "--samples", "2",
                         *EVAL_ARGS)
        assert result.exit_code == 0, result.stderr
        assert {r["problem_id"] for r in _records(tmp_path / "s.jsonl")} == {f"arith-{p}" for p in range(3)}
    prepared = run_cli("llm", "prepare-data", "tiny/arith.jsonl", "--out", "p.jsonl", "--json")
    assert prepared.exit_code == 0 and json.loads(prepared.stdout)["rows_read"] == len(ARITH.read_text().splitlines())
    for args, typed, meant in ((("llm", "eval", "--model", "tiny", "--data", "tiny/arth.jsonl", "--out", "x.jsonl"),
                                "tiny/arth.jsonl", "tiny/arith.jsonl"),
                               (("llm", "prepare-data", "recipes/tiny/arith.json", "--out", "y.jsonl"),
                                "recipes/tiny/arith.json", None),
                               (("llm", "train", "--config", "tiny/f-grpp.yaml", "--dry-run"), "tiny/f-grpp.yaml",
                                "tiny/f-grpo.yaml")):
        result = run_cli(*args)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
        assert f"not found: {typed}" in result.stderr
        assert (f"did you mean {meant}?" in result.stderr) if meant else "did you mean" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl", "s.jsonl", "s.jsonl.meta.json"]
