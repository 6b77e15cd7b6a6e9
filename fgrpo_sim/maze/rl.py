"""On-policy RL on mazes through the project's `FocalGRPOTrainer` (TRL GRPOTrainer + focal weight).

gamma = 0 is plain GRPO (the focal weight is then exactly 1); gamma > 0 is F-GRPO. One policy update per
generation step (on-policy), token-mean clipped loss (method "grpo"), no KL, temperature 1.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from typing import Callable, Sequence

from fgrpo_sim.maze.generator import Maze
from fgrpo_sim.maze.tokenizer import prompt_text, target_text
from fgrpo_sim.validation import check_integer, check_range


@dataclass(frozen=True)
class RLSettings:
    steps: int
    prompts_per_step: int
    group_size: int  # N
    gamma: float
    lr: float
    max_completion_length: int
    warmup_steps: int = 0
    weight_decay: float = 0.0
    seed: int = 0
    focal_smoothing: float = 0.0  # alpha of the weight's success estimate (c + alpha) / (N + 2 alpha); 0 = c / N


def maze_dataset(mazes: Sequence[Maze]):
    """A datasets.Dataset with a text `prompt` (grid) and the `target` completion the reward checks."""
    from datasets import Dataset

    return Dataset.from_dict({"prompt": [prompt_text(m) for m in mazes], "target": [target_text(m) for m in mazes]})


def train_rl(model, tokenizer, mazes: Sequence[Maze], settings: RLSettings, *,
             on_step: Callable[[int, object], dict] | None = None, eval_every: int = 0,
             progress: bool = True, output_dir: str | None = None, device: str = "cpu") -> list[dict]:
    """Run `settings.steps` GRPO / F-GRPO updates; returns one record per step.

    Each record holds TRL's logged training reward (mean over the step's N * prompts_per_step rollouts)
    and the focal statistics; when `on_step` is given it is called at step 0 and every `eval_every`
    steps with (step, model) and its dict is merged into that step's record (e.g. held-out pass@K).
    """
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    from fgrpo_sim.llm import FocalGRPOConfig, FocalGRPOTrainer
    from fgrpo_sim.maze.reward import make_trl_reward

    check_integer("steps", settings.steps, 1, 10**7)
    check_integer("prompts_per_step", settings.prompts_per_step, 1, 10**6)
    check_integer("group_size", settings.group_size, 2, 10**5)
    check_range("gamma", settings.gamma, 0.0, None)
    check_range("lr", settings.lr, 0.0, 1.0, low_open=True)

    records: dict[int, dict] = {}

    class _Recorder(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            if on_step is not None:
                records.setdefault(0, {"step": 0}).update(on_step(0, model))

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs:
                rec = records.setdefault(state.global_step, {"step": state.global_step})
                rec["train_reward"] = float(logs["reward"])
                for key in ("focal/weight_mean", "focal/frac_active_groups", "focal/mu_hat_frac_zero",
                            "focal/mu_hat_frac_one", "completions/mean_length"):
                    if key in logs:
                        rec[key.split("/")[-1]] = float(logs[key])

        def on_step_end(self, args, state, control, **kw):
            step = state.global_step
            if on_step is not None and eval_every and (step % eval_every == 0 or step == settings.steps):
                records.setdefault(step, {"step": step}).update(on_step(step, model))

    with tempfile.TemporaryDirectory(prefix="maze-rl-") as tmp:
        config = FocalGRPOConfig(
            output_dir=output_dir or tmp,
            method="grpo",
            focal_gamma=float(settings.gamma),
            focal_smoothing=float(settings.focal_smoothing),
            learning_rate=settings.lr,
            weight_decay=settings.weight_decay,
            warmup_steps=settings.warmup_steps,
            lr_scheduler_type="constant_with_warmup",
            max_steps=settings.steps,
            per_device_train_batch_size=settings.prompts_per_step * settings.group_size,
            num_generations=settings.group_size,
            gradient_accumulation_steps=1,
            num_iterations=1,
            beta=0.0,
            temperature=1.0,
            max_completion_length=settings.max_completion_length,
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            use_cpu=device == "cpu",
            bf16=False,
            seed=settings.seed,
            data_seed=settings.seed,
            disable_tqdm=False,
            dataloader_num_workers=0,
        )
        trainer = FocalGRPOTrainer(
            model=model,
            reward_funcs=[make_trl_reward(tokenizer)],
            args=config,
            train_dataset=maze_dataset(mazes),
            processing_class=tokenizer,
            callbacks=[_Recorder()],
        )
        # TRL prints every log dict when its progress bar is off; keep stdout for our own one-line reports.
        trainer.remove_callback(PrinterCallback)
        from fgrpo_sim.progress import show_progress

        if not show_progress(progress):  # bars on a terminal only (fgrpo_sim/progress.py)
            trainer.remove_callback(ProgressCallback)
        trainer.train()  # FocalGRPOTrainer keeps TRL's deprecated checkpointing calls quiet
    model.eval()
    return [records[k] for k in sorted(records)]
