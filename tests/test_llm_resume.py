"""Resume is the same run (issue 18): a 2-epoch tiny run stopped right after a checkpoint and resumed from
it sees the same prompts in every generation batch and ends with the same parameters as the run that
was never interrupted. Stock TRL 1.16 replays epoch 1's prompt order after an epoch-boundary resume and
regenerates a generation batch that a mid-batch checkpoint cut in two."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from extras import require

require("trl")

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "recipes/tiny/f-grpo.yaml"


def _metrics(folder: Path) -> list[tuple[int, float, float | None]]:
    """(step, loss, reward) of each step logged to metrics.jsonl (reward on generation steps only)."""
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss"], r.get("reward")) for r in rows if "loss" in r]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """An uninterrupted run and two killed-and-resumed ones, each with its generation batches' prompts."""
    from fgrpo_sim.llm.training import trainer as trainer_module
    from fgrpo_sim.llm.training.run import CheckpointReached, stop_after_checkpoint, train_recipe

    tmp = tmp_path_factory.mktemp("resume")
    data = tmp / "arith16.jsonl"
    data.write_text("".join((ROOT / "recipes/tiny/arith.jsonl").read_text().splitlines(keepends=True)[:16]))
    # 16 prompts, 8 per generation batch, 2 optimizer steps per generation batch: 4 steps an epoch, 8 in all
    base = ["--train_data", str(data), "--num_train_epochs", "2", "--max_steps", "-1", "--steps_per_generation", "2",
            "--save_strategy", "steps", "--save_steps", "1", "--logging_steps", "1", "--report_to", "none"]
    batches: list[tuple[int, list[str]]] = []
    original = trainer_module.FocalGRPOTrainer._generate_and_score_completions

    def recording(self, inputs):
        batches.append((self.state.global_step, [row["prompt"][-1]["content"] for row in inputs]))
        return original(self, inputs)

    mp = pytest.MonkeyPatch()
    mp.setattr(trainer_module.FocalGRPOTrainer, "_generate_and_score_completions", recording)
    out = {}
    try:
        full = train_recipe(TINY, base + ["--output_dir", str(tmp / "full")], no_progress=True)
        out["full"] = ([p.detach().clone() for p in full.trainer.model.parameters()], list(batches))
        for kill_at in (4, 5):  # the epoch boundary; the middle of a generation batch in epoch 2
            batches.clear()
            folder = str(tmp / f"killed-at-{kill_at}")
            with pytest.raises(CheckpointReached):  # stands in for SIGKILL right after checkpoint-K is written
                train_recipe(TINY, base + ["--output_dir", folder, "--save_optimizer_state", "last"],
                             callbacks=[stop_after_checkpoint(kill_at)], no_progress=True)
            before = [b for b in batches if b[0] < kill_at]
            out[f"metrics-at-kill-{kill_at}"] = _metrics(Path(folder))
            out[f"checkpoints-{kill_at}"] = sorted(p.parent.name for p in Path(folder).glob("checkpoint-*/optimizer.pt"))
            batches.clear()
            resumed = train_recipe(TINY, base + ["--output_dir", folder, "--resume_from_checkpoint", "last"],
                                   no_progress=True)
            assert resumed.summary["resumed_from"].endswith(f"checkpoint-{kill_at}")
            out[kill_at] = ([p.detach().clone() for p in resumed.trainer.model.parameters()], before + list(batches))
            out[f"metrics-{kill_at}"] = _metrics(Path(folder))
        out["metrics-full"] = _metrics(tmp / "full")
        out["folder"] = tmp
    finally:
        mp.undo()
    return out


@pytest.mark.parametrize("kill_at", [4, 5], ids=["epoch-boundary", "mid-generation-batch"])
def test_resumed_run_is_the_uninterrupted_run(runs, kill_at):
    import torch

    full_params, full_batches = runs["full"]
    params, resumed_batches = runs[kill_at]
    assert len(full_batches) == 4 and [b[0] for b in full_batches] == [0, 2, 4, 6]
    # epoch 2 is a new permutation, not a replay of epoch 1
    assert sorted(full_batches[0][1] + full_batches[1][1]) == sorted(full_batches[2][1] + full_batches[3][1])
    assert full_batches[:2] != full_batches[2:]
    assert resumed_batches == full_batches
    diff = max(float((a - b).abs().max()) for a, b in zip(full_params, params))
    assert diff <= 1e-6, f"resumed run ends {diff:g} away from the uninterrupted one"


def test_resume_refuses_a_folder_that_is_not_a_checkpoint(run_cli, tmp_path):
    def dry(checkpoint):
        return run_cli("llm", "train", "--config", TINY, "--dry-run", "--json", "--output_dir", tmp_path / "run",
                       "--resume_from_checkpoint", checkpoint)

    result = dry("last")
    assert result.exit_code == 2 and "no resumable checkpoint-N folder under output_dir" in result.stderr
    done = tmp_path / "run" / "checkpoint-3"
    done.mkdir(parents=True)  # a save killed before trainer_state.json
    result = dry(done)
    assert result.exit_code == 2 and "not a checkpoint folder" in result.stderr
    (done / "trainer_state.json").write_text(json.dumps({"global_step": 3}))
    result = dry(done)  # weights only: transformers would start a fresh optimizer silently
    assert result.exit_code == 2 and "holds weights only" in result.stderr
    (done / "optimizer.pt").write_bytes(b"")
    killed_while_saving = tmp_path / "run" / "checkpoint-4"
    killed_while_saving.mkdir()
    (killed_while_saving / "optimizer.pt").write_bytes(b"")  # no trainer_state.json: the save did not finish
    ok = dry("last")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["config"]["resume_from_checkpoint"] == str(done)


def test_metrics_survive_the_kill_and_read_as_one_run(runs):
    full = runs["metrics-full"]
    assert [m[0] for m in full] == list(range(1, 9))
    for kill_at in (4, 5):
        assert runs[f"metrics-at-kill-{kill_at}"] == full[:kill_at]  # written as logged, before any final save
        assert runs[f"metrics-{kill_at}"] == full  # the resumed run replaced nothing twice


def test_only_the_newest_checkpoint_keeps_optimizer_state_and_all_load_for_eval(runs):
    from fgrpo_sim.llm.tiny import load_model_and_tokenizer

    for kill_at in (4, 5):
        assert runs[f"checkpoints-{kill_at}"] == [f"checkpoint-{kill_at}"]
    folder = runs["folder"] / "killed-at-5"
    weights_only = folder / "checkpoint-2"
    assert not list(weights_only.glob("optimizer*")) and not list(weights_only.glob("rng_state*"))
    model, tokenizer = load_model_and_tokenizer(weights_only)  # what `fgrpo llm eval --model` calls
    assert len(tokenizer) == model.config.vocab_size
