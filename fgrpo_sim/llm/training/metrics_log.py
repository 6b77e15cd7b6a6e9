"""`MetricsLog`: every dict the trainer logs, appended as one JSON line to OUTPUT_DIR/metrics.jsonl.

TRL's own record (`trainer_state.json`'s log_history) is written only with a checkpoint, so a run that
dies between checkpoints loses its curves; this file has every logged step as soon as it is logged (no
dependency, unlike TensorBoard or wandb, which `--report_to` still adds). Each line is
{"step": global step, "epoch": ..., **logs}; non-finite numbers are written as null (standard JSON).
A run resumed from checkpoint-K first drops the lines after step K (it trains those steps again), so
the file always reads as one run. `fgrpo figures llm-dynamics` reads `dynamics.jsonl` and
`trainer_state.json`; this file holds the training metrics (reward, loss, focal/*).
"""

from __future__ import annotations

import json
from pathlib import Path

from transformers import TrainerCallback

from fgrpo_sim import jsonl


class MetricsLog(TrainerCallback):
    def __init__(self, path: str | Path):
        self.path = Path(path)

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero or not self.path.is_file():
            return
        from fgrpo_sim.atomic_io import write_text_atomic

        kept = []
        for line in self.path.read_text(encoding="utf-8", errors="replace").split("\n"):
            try:
                record = json.loads(line)
            except ValueError:  # a blank line, or the half-written last line of a killed run
                continue
            if isinstance(record, dict) and isinstance(record.get("step"), int) and record["step"] <= state.global_step:
                kept.append(line + "\n")
        write_text_atomic(self.path, "".join(kept))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        record = {"step": state.global_step, "epoch": state.epoch, **logs}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(jsonl.dumps(record, default=str) + "\n")  # non-finite numbers as null, nested too
