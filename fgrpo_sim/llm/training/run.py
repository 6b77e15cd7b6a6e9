"""Run a training recipe from Python: what `fgrpo llm train` does, callable as `train_recipe(...)`.

    from fgrpo_sim.llm.training.run import train_recipe
    result = train_recipe("recipes/tiny/f-grpo.yaml", ["--num_train_epochs", "2", "--max_steps", "-1",
                                                       "--output_dir", "runs/t", "--save_strategy", "epoch"])
    result = train_recipe("recipes/tiny/f-grpo.yaml", [..., "--resume_from_checkpoint", "last"])

`prepare_training` makes every check the run makes before a model is loaded (the CLI's `--dry-run`
stops after it); `train_recipe` then builds the model, the reward and the trainer, trains (resuming
when `resume_from_checkpoint` is set: a checkpoint folder, or `last` for the newest under output_dir)
and saves the final model. Extra `TrainerCallback`s go in `callbacks`, e.g.
`stop_after_checkpoint(K)`, which stops the run right after checkpoint-K as a SIGKILL would.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

#: The name TRL sees for the reward function `fgrpo llm train` builds (make_math_reward's default).
MATH_REWARD_NAME = "math_reward"
#: `resume_from_checkpoint` values meaning "the newest checkpoint-N under output_dir".
LAST_CHECKPOINT = ("last", "latest", "true", "True")


def resolve_data_path(value: str, recipe_path: Path) -> str:
    """A relative train_data path is taken from the current folder, else from the recipe's folder."""
    path = Path(value)
    if path.is_absolute() or path.exists():
        return str(path)
    beside = recipe_path.parent / path
    return str(beside) if beside.exists() else str(path)


def launch_world_size(num_processes: int | None) -> int:
    """The number of training processes: accelerate/torchrun's WORLD_SIZE, or --num-processes for planning."""
    from fgrpo_sim.llm.training.launch import world_size_from_env
    from fgrpo_sim.validation import check_integer

    env = world_size_from_env(dict(os.environ))
    if num_processes is not None:
        check_integer("--num-processes", num_processes, 1)
        if env is not None and env != num_processes:
            raise ValueError(f"--num-processes {num_processes} disagrees with the launcher's WORLD_SIZE={env}")
        return int(num_processes)
    return 1 if env is None else env


#: Files of which a checkpoint needs one to resume its optimizer (plain, FSDP, DeepSpeed layouts).
_OPTIMIZER_FILES = ("optimizer.pt", "optimizer.bin", "optimizer_0", "global_step*")


def _resumable(path: Path) -> bool:
    return (path / "trainer_state.json").is_file() and any(any(path.glob(name)) for name in _OPTIMIZER_FILES)


def last_resumable_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest `checkpoint-N` under output_dir that a resume can use: saved to the end (its
    trainer_state.json is written last) and holding optimizer state. A run killed while saving leaves a
    newer folder without trainer_state.json; it is passed over."""
    import re

    folder = Path(output_dir)
    if not folder.is_dir():
        return None
    numbered = [(int(m.group(1)), p) for p in folder.iterdir()
                if p.is_dir() and (m := re.fullmatch(r"checkpoint-(\d+)", p.name))]
    return next((p for _, p in sorted(numbered, reverse=True) if _resumable(p)), None)


def resolve_checkpoint(value: str | None, output_dir: str) -> str | None:
    """The checkpoint folder to resume from, checked now (before any model is loaded).

    `last` (or `latest` / `true`) is `last_resumable_checkpoint(output_dir)`; anything else must be a
    folder holding TRL's `trainer_state.json` and optimizer state (a killed save leaves a folder without
    the first; `save_optimizer_state: last` leaves older checkpoints without the second).
    """
    if value in (None, "", "False", "false"):
        return None
    if value in LAST_CHECKPOINT:
        found = last_resumable_checkpoint(output_dir)
        if found is None:
            raise ValueError(f"resume_from_checkpoint {value}: no resumable checkpoint-N folder under output_dir "
                             f"{output_dir}")
        return str(found)
    path = Path(value)
    if not (path / "trainer_state.json").is_file():
        raise ValueError(f"resume_from_checkpoint {value} is not a checkpoint folder (no trainer_state.json in it)")
    if not _resumable(path):
        # transformers would silently start a fresh optimizer: not the same run
        raise ValueError(f"resume_from_checkpoint {value} holds weights only (save_optimizer_state='last' kept the "
                         f"optimizer state in the newest checkpoint): resume from that one, or use "
                         f"--model {value} to start a new run from these weights")
    return str(path)


def prepare_training(config: str | Path, overrides: Sequence[str] = (), *, num_processes: int | None = None,
                     no_progress: bool = False, dry_run: bool = False, train_rows: int | None = None) -> dict[str, Any]:
    """Everything the real run checks before it loads a model; `--dry-run` stops right after this.

    Recipe + overrides cast to the field types, batch layout for the world size, FocalGRPOConfig
    (gamma, N, method, success rule fields, learning rate, seed), the success function, output_dir
    writable, the checkpoint to resume from, train_data read. A dry run reads train_data when it exists
    and `train_rows` is not given; otherwise it plans with `train_rows` rows (default: the paper's
    39,202) and `data_checked` is False.
    """
    from fgrpo_sim.atomic_io import check_writable_dir
    from fgrpo_sim.llm.training.config import FocalGRPOConfig
    from fgrpo_sim.llm.training.launch import PAPER_TRAIN_ROWS, describe, logits_memory, model_dimensions, plan_batches
    from fgrpo_sim.llm.training.recipe import cast_recipe, load_recipe_sources, parse_overrides, split_recipe
    from fgrpo_sim.llm.training.trainer import check_trl_version, resolve_success_func
    from fgrpo_sim.packaged import resolve_shipped
    from fgrpo_sim.validation import check_integer

    config = resolve_shipped(config)
    if train_rows is not None:
        check_integer("--train-rows", train_rows, 1)
    recipe, sources = load_recipe_sources(config)
    given = parse_overrides(list(overrides))
    recipe.update(given)
    run, fields = split_recipe(cast_recipe(recipe, {k: v for k, v in sources.items() if k not in given}))
    run["train_data"] = resolve_data_path(str(run["train_data"]), config)
    from fgrpo_sim.progress import show_progress

    if not show_progress(not no_progress):  # TRL's bar only on a terminal; in a log it prints one line per log
        fields["disable_tqdm"] = True
    world_size = launch_world_size(num_processes)
    plan = None
    if run["batch_prompts"] is not None or run["mini_batch_prompts"] is not None:
        if run["batch_prompts"] is None or run["mini_batch_prompts"] is None:
            raise ValueError("batch_prompts and mini_batch_prompts must be set together (paper: 256 and 64)")
        if fields.get("steps_per_generation") is not None:
            raise ValueError("steps_per_generation must be unset when batch_prompts/mini_batch_prompts derive the layout")
        plan = plan_batches(
            world_size, 8 if fields.get("num_generations") is None else fields["num_generations"],  # TRL's default N
            fields.get("per_device_train_batch_size", 8),
            batch_prompts=run["batch_prompts"], mini_batch_prompts=run["mini_batch_prompts"],
            gradient_accumulation_steps=fields.get("gradient_accumulation_steps"),
            generation_batch_size=fields.get("generation_batch_size"), num_iterations=fields.get("num_iterations", 1),
        )
        fields["gradient_accumulation_steps"] = plan.gradient_accumulation_steps
        fields["generation_batch_size"] = plan.generation_batch_size
    check_trl_version()
    try:
        args = FocalGRPOConfig(**fields)
    except ValueError as exc:  # "FIELD must ...": name the recipe file that set FIELD
        field = str(exc).split(" ", 1)[0]
        if field in sources and field not in given:
            raise ValueError(f"recipe {sources[field]}: {exc}") from None
        raise
    if args.focal_gamma > 0:  # the trainer checks this again; here it fails before any model is loaded
        resolve_success_func([MATH_REWARD_NAME], args.focal_reward_func)
    check_writable_dir(args.output_dir, "output_dir")
    args.resume_from_checkpoint = resolve_checkpoint(args.resume_from_checkpoint, args.output_dir)
    read_data = not dry_run or (train_rows is None and Path(run["train_data"]).is_file())
    dataset = None
    if read_data:
        from fgrpo_sim.llm.training.data import load_prepared

        dataset = load_prepared(run["train_data"], run["system_prompt"])
        rows = len(dataset)
    else:
        rows = PAPER_TRAIN_ROWS if train_rows is None else int(train_rows)
    if plan is not None and rows < plan.batch_prompts:
        raise ValueError(f"train_data {run['train_data']} has {rows} prompts, fewer than one generation batch of "
                         f"batch_prompts = {plan.batch_prompts}: TRL would train 0 steps")
    memory = None
    dims = model_dimensions(str(run["model"]))
    if dims is not None and args.max_completion_length:
        memory = logits_memory(args.per_device_train_batch_size, args.max_completion_length, dims[0])
        warning = memory.warning()
        if warning:
            print(warning, file=sys.stderr)
    launch = describe(plan, args.warmup_steps, rows, memory) if plan is not None else None
    return {"run": run, "fields": fields, "args": args, "dataset": dataset, "launch": launch,
            "world_size": world_size, "memory": memory, "train_rows": rows, "data_checked": read_data}


def resolved_trl_config(args: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """The recipe's fields plus what FocalGRPOConfig resolved (method presets, defaults that matter for the run).

    Still valid FocalGRPOConfig keyword arguments (each resolved value passed back gives the same config);
    TRL's derived `steps_per_generation` is left out because it may not be given with generation_batch_size.
    """
    derived = ("loss_type", "epsilon", "epsilon_high", "focal_success_threshold", "gradient_accumulation_steps",
               "save_strategy", "save_total_limit", "save_only_model", "save_optimizer_state", "metrics_file",
               "resume_from_checkpoint", "vllm_importance_sampling_correction")
    out = dict(fields)
    for name in derived:
        if hasattr(args, name):
            value = getattr(args, name)
            out[name] = getattr(value, "value", value)  # enums as their string
    if out.get("epsilon_high") is None and out.get("epsilon") is not None:  # TRL clips above at epsilon when unset
        out["epsilon_high"] = out["epsilon"]
    return out


class CheckpointReached(Exception):
    """Raised by the `stop_after_checkpoint(step)` callback once checkpoint-step is saved."""


def stop_after_checkpoint(step: int) -> Any:
    """A TrainerCallback that raises CheckpointReached right after checkpoint-`step` is written: the run stops
    as a SIGKILL at that moment would leave it (for resume rehearsals and tests)."""
    from transformers import TrainerCallback

    class _Stop(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == step:
                raise CheckpointReached(step)

    return _Stop()


@dataclass
class TrainResult:
    """What `train_recipe` returns: the printed summary and the trainer (its model, state and log)."""

    summary: dict[str, Any]
    trainer: Any


def train_recipe(config: str | Path, overrides: Sequence[str] = (), *, callbacks: Sequence[Any] = (),
                 num_processes: int | None = None, no_progress: bool = False,
                 prepared: dict[str, Any] | None = None) -> TrainResult:
    """Train from a recipe (`fgrpo llm train` without the printing); see the module doc."""
    if prepared is None:
        prepared = prepare_training(config, overrides, num_processes=num_processes, no_progress=no_progress)
    run, args, dataset = prepared["run"], prepared["args"], prepared["dataset"]

    from fgrpo_sim.llm.training.dynamics import callback_from_config
    from fgrpo_sim.llm.rewards import MathVerifier, make_math_reward
    from fgrpo_sim.llm.tiny import build_tiny, load_tokenizer, save_tiny
    from fgrpo_sim.llm.training.trainer import FocalGRPOTrainer

    if run["model"] == "tiny":
        model, tokenizer = build_tiny(seed=int(run["model_seed"]))
        if args.beta != 0.0:  # GRPO-KL: TRL loads the reference from a folder
            from fgrpo_sim.llm.training.controls import save_reference_for_kl

            save_reference_for_kl(model, tokenizer, Path(args.output_dir) / "kl-reference")
    else:
        model, tokenizer = str(run["model"]), load_tokenizer(str(run["model"]))
    verifier = MathVerifier(fallback_last_number=run["reward"] == "math_last_number")
    reward = make_math_reward(args.reward_correct, args.reward_wrong, verifier=verifier, name=MATH_REWARD_NAME)
    trainer = FocalGRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=dataset,
                               processing_class=tokenizer)
    dynamics = callback_from_config(args, run["system_prompt"], fallback_last_number=run["reward"] == "math_last_number")
    if dynamics is not None:  # paper App. P: held-out pass@k every dynamics_every steps
        trainer.add_callback(dynamics)
    for callback in callbacks:
        trainer.add_callback(callback)
    trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)  # quiet about TRL's checkpointing calls
    trainer.save_model(args.output_dir)
    summary: dict[str, Any] = {}
    if trainer.accelerator.is_main_process:
        if run["model"] == "tiny":
            save_tiny(trainer.model, tokenizer, args.output_dir)
        history = [h for h in trainer.state.log_history if "reward" in h]
        last = history[-1] if history else {}
        summary = {
            "output_dir": args.output_dir,
            "steps": trainer.state.global_step,
            "resumed_from": args.resume_from_checkpoint,
            "last_reward": last.get("reward"),
            "last_focal_weight_mean": last.get("focal/weight_mean"),
            "last_frac_active_groups": last.get("focal/frac_active_groups"),
            "last_tail_miss_mean": last.get("focal/tail_miss_mean"),
            "reward_statuses": dict(verifier.counts),
        }
    return TrainResult(summary, trainer)
