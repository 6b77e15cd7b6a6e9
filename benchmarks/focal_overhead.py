"""Step-time overhead of focal weighting against stock TRL GRPO at the same config (tiny Qwen2, CPU).

Two measurements in one run, printed as one JSON object:

* end_to_end: optimizer-step wall times of `FocalGRPOTrainer` (gamma = 0.5) and stock `GRPOTrainer`,
  same config and seed, run in lockstep in one process: two threads take turns step by step
  (S F, F S, S F, ...), so each focal step has a stock neighbour measured under the same machine
  load. Reports the median step time of each, the per-step paired ratio focal/stock (median,
  interquartile range, bootstrap 95% interval of the median) and overhead = median ratio - 1.
  To make the two workloads identical, the learning rate is 0 (the optimizer still runs its full
  update, so weights never diverge) and every completion has exactly max_completion_length tokens
  (min_new_tokens = max_completion_length), whatever tokens the sampler draws.
* instrumented: time spent inside the focal code itself (`_apply_focal_weight` and the reward stash)
  divided by the focal trainer's step time. This isolates exactly what focal weighting adds and
  resolves far below 1%.

Usage: python benchmarks/focal_overhead.py --json [--steps 200 --threads 1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _reward(completions, **kwargs):
    return [float(len(c) > 0 and ord(c[0]) % 2 == 0) for c in completions]


def _make_trainer(kind: str, steps: int, out_dir: str, batch: int, completion_length: int):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from fgrpo_sim.llm.training.config import FocalGRPOConfig
    from fgrpo_sim.llm.tiny import build_tiny
    from fgrpo_sim.llm.training.trainer import FocalGRPOTrainer

    common = dict(
        output_dir=out_dir, per_device_train_batch_size=batch, num_generations=4, max_completion_length=completion_length,
        max_steps=steps, logging_steps=10_000, report_to="none", gradient_checkpointing=False, save_strategy="no",
        warmup_steps=0, learning_rate=0.0, generation_kwargs={"min_new_tokens": completion_length}, bf16=False, use_cpu=True, seed=0, disable_tqdm=True,
        loss_type="dapo", epsilon=0.2, epsilon_high=0.2, weight_decay=0.01, lr_scheduler_type="constant_with_warmup",
    )
    dataset = Dataset.from_list([{"prompt": f"{i}+{i}=", "answer": str(2 * i)} for i in range(64)])
    model, tokenizer = build_tiny(seed=0)
    if kind == "focal":
        args = FocalGRPOConfig(method="grpo", focal_gamma=0.5, **common)
        cls = FocalGRPOTrainer
    else:
        args, cls = GRPOConfig(**common), GRPOTrainer
    return cls(model=model, reward_funcs=_reward, args=args, train_dataset=dataset, processing_class=tokenizer)


class _Turnstile:
    """Lets two trainer threads run their optimizer steps strictly in a given order."""

    def __init__(self, order: list[str]):
        self.order, self.index = order, 0
        self.cv = threading.Condition()

    def wait_turn(self, kind: str) -> None:
        with self.cv:
            if not self.cv.wait_for(lambda: self.index >= len(self.order) or self.order[self.index] == kind, 600):
                raise RuntimeError("lockstep benchmark stalled")

    def done(self) -> None:
        with self.cv:
            self.index += 1
            self.cv.notify_all()


def _run_lockstep(steps: int, warmup: int, batch: int, completion_length: int) -> dict:
    """Per-step times of both variants (after warmup) and the seconds spent in focal code per focal step."""
    from transformers import TrainerCallback

    total = steps + warmup
    order = []
    for i in range(total):
        order += ["stock", "focal"] if i % 2 == 0 else ["focal", "stock"]
    turnstile = _Turnstile(order)
    times = {"stock": [], "focal": []}
    focal_seconds: list[float] = []

    class StepTimer(TrainerCallback):
        def __init__(self, kind):
            self.kind, self._t = kind, 0.0

        def on_step_begin(self, args, state, control, **kw):
            turnstile.wait_turn(self.kind)
            self._t = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times[self.kind].append(time.perf_counter() - self._t)
            turnstile.done()

    tmp = tempfile.TemporaryDirectory()
    trainers = {kind: _make_trainer(kind, total, f"{tmp.name}/{kind}", batch, completion_length)
                for kind in ("stock", "focal")}
    for kind, trainer in trainers.items():
        trainer.add_callback(StepTimer(kind))
    apply = trainers["focal"]._apply_focal_weight

    def timed_apply(output, gathered):
        t = time.perf_counter()
        result = apply(output, gathered)
        focal_seconds.append(time.perf_counter() - t)
        return result

    trainers["focal"]._apply_focal_weight = timed_apply
    errors = []

    def train(trainer):
        try:
            trainer.train()
        except BaseException as exc:  # surface it in the main thread
            errors.append(exc)
            turnstile.done()

    threads = [threading.Thread(target=train, args=(t,)) for t in trainers.values()]
    with contextlib.redirect_stdout(sys.stderr):  # TRL prints its final log line; keep stdout pure JSON
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    tmp.cleanup()
    if errors:
        raise errors[0]
    return {"stock": times["stock"][warmup:], "focal": times["focal"][warmup:], "focal_code": focal_seconds[warmup:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="timed optimizer steps per variant (default 200)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first (default 5)")
    parser.add_argument("--batch", type=int, default=16, help="rollouts per step (default 16 = 4 prompts x 4)")
    parser.add_argument("--completion-length", type=int, default=16, help="max completion tokens (default 16)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output anyway)")
    args = parser.parse_args()

    import numpy as np
    import torch
    import trl

    torch.set_num_threads(args.threads)
    run = _run_lockstep(args.steps, args.warmup, args.batch, args.completion_length)
    stock, focal = np.array(run["stock"]), np.array(run["focal"])
    ratio = focal / stock
    rng = np.random.default_rng(0)
    boot = np.median(rng.choice(ratio, size=(2000, ratio.size), replace=True), axis=1)
    share = np.array(run["focal_code"]) / focal

    result = {
        "benchmark": "focal_overhead",
        "config": {"timed_steps": args.steps, "warmup_steps": args.warmup, "rollouts_per_step": args.batch,
                   "completion_tokens": args.completion_length, "torch_threads": args.threads,
                   "model": "tiny Qwen2 (fgrpo_sim.llm.tiny, ~22k params)", "focal_gamma": 0.5, "loss_type": "dapo",
                   "learning_rate": 0.0},
        "end_to_end": {
            "median_step_seconds_stock": float(np.median(stock)),
            "median_step_seconds_focal": float(np.median(focal)),
            "paired_ratio_median": float(np.median(ratio)),
            "paired_ratio_q25": float(np.quantile(ratio, 0.25)),
            "paired_ratio_q75": float(np.quantile(ratio, 0.75)),
            "paired_ratio_median_ci95": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))],
            "overhead_percent": float(100 * (np.median(ratio) - 1)),
        },
        "instrumented": {
            "focal_code_seconds_per_step_median": float(np.median(run["focal_code"])),
            "focal_code_share_of_step_percent_median": float(100 * np.median(share)),
            "focal_code_share_of_step_percent_q90": float(100 * np.quantile(share, 0.9)),
        },
        "target_percent": 1.0,
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "torch": torch.__version__, "trl": trl.__version__},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
