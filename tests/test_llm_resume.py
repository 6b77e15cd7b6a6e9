"""Resume is the same run (issue 18): a 2-epoch tiny run stopped right after a checkpoint and resumed from
it sees the same prompts in every generation batch and ends with the same parameters as the run that
was never interrupted. Stock TRL 1.16 replays epoch 1's prompt order after an epoch-boundary resume and
regenerates a generation batch that a mid-batch checkpoint cut in two."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl")

from transformers import TrainerCallback  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "recipes/tiny/f-grpo.yaml"


class _Killed(Exception):
    """Stands in for SIGKILL: raised right after checkpoint-K is written, so nothing after it survives."""


class _KillAfterSave(TrainerCallback):
    def __init__(self, step: int):
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise _Killed


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """An uninterrupted run and two killed-and-resumed ones, each with its generation batches' prompts."""
    from fgrpo_sim.llm import trainer as trainer_module
    from fgrpo_sim.llm.run import train_recipe

    tmp = tmp_path_factory.mktemp("resume")
    data = tmp / "arith16.jsonl"
    data.write_text("".join((ROOT / "recipes/tiny/arith.jsonl").read_text().splitlines(keepends=True)[:16]))
    # 16 prompts, 8 per generation batch, 2 optimizer steps per generation batch: 4 steps an epoch, 8 in all
    base = ["--train_data", str(data), "--num_train_epochs", "2", "--max_steps", "-1", "--steps_per_generation", "2",
            "--save_strategy", "steps", "--save_steps", "1", "--logging_steps", "100", "--report_to", "none"]
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
            with pytest.raises(_Killed):
                train_recipe(TINY, base + ["--output_dir", folder], callbacks=[_KillAfterSave(kill_at)], no_progress=True)
            before = [b for b in batches if b[0] < kill_at]
            batches.clear()
            resumed = train_recipe(TINY, base + ["--output_dir", folder, "--resume_from_checkpoint", "last"],
                                   no_progress=True)
            assert resumed.summary["resumed_from"].endswith(f"checkpoint-{kill_at}")
            out[kill_at] = ([p.detach().clone() for p in resumed.trainer.model.parameters()], before + list(batches))
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
    result = run_cli("llm", "train", "--config", TINY, "--dry-run", "--output_dir", tmp_path / "run",
                     "--resume_from_checkpoint", "last")
    assert result.exit_code == 2 and "no checkpoint-N folder under output_dir" in result.stderr
    half = tmp_path / "run" / "checkpoint-3"
    half.mkdir(parents=True)  # a save killed before trainer_state.json
    result = run_cli("llm", "train", "--config", TINY, "--dry-run", "--output_dir", tmp_path / "run",
                     "--resume_from_checkpoint", half)
    assert result.exit_code == 2 and "not a checkpoint folder" in result.stderr
    (half / "trainer_state.json").write_text(json.dumps({"global_step": 3}))
    ok = run_cli("llm", "train", "--config", TINY, "--dry-run", "--output_dir", tmp_path / "run",
                 "--resume_from_checkpoint", "last")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["config"]["resume_from_checkpoint"].endswith("checkpoint-3")
