"""Is a resumed run the interrupted run? Train the tiny recipe for 2 epochs uninterrupted, train it again
stopped right after checkpoint-K (an exception raised in `on_save`, as a SIGKILL would leave it), resume
with `--resume_from_checkpoint last`, and compare the prompts of every generation batch and the final
parameters. `--stock` puts TRL 1.16's own sampler and checkpointing back (what FocalGRPOTrainer did
before issue 18), to measure the difference the fix makes in the same run of this script.

    .venv/bin/python benchmarks/resume_check.py                 # kill after checkpoint-16 (the epoch boundary)
    .venv/bin/python benchmarks/resume_check.py --stock
    .venv/bin/python benchmarks/resume_check.py --kill-at 5 --rows 16 --steps-per-generation 2

Prints one JSON object: generation batches, how many match the uninterrupted run, how many of epoch 2's
batches repeat epoch 1's, the largest parameter difference, wall seconds and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "recipes/tiny/f-grpo.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kill-at", type=int, default=16, help="checkpoint step after which the run is stopped")
    parser.add_argument("--rows", type=int, default=64, help="training prompts (first rows of recipes/tiny/arith.jsonl)")
    parser.add_argument("--steps-per-generation", type=int, default=None, help="TRL steps_per_generation")
    parser.add_argument("--stock", action="store_true", help="TRL 1.16's own sampler and checkpointing")
    opts = parser.parse_args()

    from trl import GRPOTrainer

    from fgrpo_sim.llm.training import trainer as trainer_module
    from fgrpo_sim.llm.training.run import CheckpointReached, stop_after_checkpoint, train_recipe

    cls = trainer_module.FocalGRPOTrainer
    if opts.stock:
        for name in ("_get_train_sampler", "_save_checkpoint", "train"):
            setattr(cls, name, getattr(GRPOTrainer, name))
    batches: list[tuple[int, list[str]]] = []
    original = cls._generate_and_score_completions

    def recording(self, inputs):
        batches.append((self.state.global_step, [row["prompt"][-1]["content"] for row in inputs]))
        return original(self, inputs)

    cls._generate_and_score_completions = recording
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "arith.jsonl"
        data.write_text("".join((ROOT / "recipes/tiny/arith.jsonl").read_text().splitlines(keepends=True)[:opts.rows]))
        base = ["--train_data", str(data), "--num_train_epochs", "2", "--max_steps", "-1", "--save_strategy", "steps",
                "--save_steps", "1", "--logging_steps", "1000", "--metrics_file", "null"]
        if opts.steps_per_generation:
            base += ["--steps_per_generation", str(opts.steps_per_generation)]
        full = train_recipe(TINY, base + ["--output_dir", f"{tmp}/full", "--save_strategy", "no"], no_progress=True)
        full_params = [p.detach().clone() for p in full.trainer.model.parameters()]
        full_batches = list(batches)
        batches.clear()
        try:
            train_recipe(TINY, base + ["--output_dir", f"{tmp}/cut"], callbacks=[stop_after_checkpoint(opts.kill_at)],
                         no_progress=True)
            raise SystemExit(f"the run never saved checkpoint-{opts.kill_at}")
        except CheckpointReached:
            pass
        combined = [b for b in batches if b[0] < opts.kill_at]
        batches.clear()
        resumed = train_recipe(TINY, base + ["--output_dir", f"{tmp}/cut", "--resume_from_checkpoint", "last"],
                               no_progress=True)
        combined += batches
        diff = max(float((a - b).abs().max()) for a, b in zip(full_params, resumed.trainer.model.parameters()))
    half = len(combined) // 2
    print(json.dumps({
        "stock": opts.stock, "kill_at": opts.kill_at, "rows": opts.rows, "generation_batches": len(full_batches),
        "batches_equal_to_uninterrupted": sum(a == b for a, b in zip(full_batches, combined)),
        "epoch2_batches_repeating_epoch1": sum(a[1] == b[1] for a, b in zip(combined[:half], combined[half:])),
        "max_abs_param_diff": diff, "wall_s": round(time.perf_counter() - start, 1),
        "load_avg_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }))


if __name__ == "__main__":
    main()
