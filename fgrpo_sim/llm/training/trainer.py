"""`FocalGRPOTrainer`: TRL's `GRPOTrainer` with the focal weight g = (1 - mu_hat)^gamma on each group.

Where the weight enters. TRL 1.16 computes advantages inside `_generate_and_score_completions` and
has no hook for reshaping them. Two small overrides do it without copying TRL code:

* `_calculate_rewards` is TRL's single place where rewards are computed; it returns them already
  gathered from every process (TRL needs whole groups for its own baseline). We keep that gathered
  tensor, so mu_hat is computed from the whole group even when a group's rollouts are spread over
  several processes.
* `_generate_and_score_completions` calls TRL's, then multiplies the returned local advantages by the
  weight of their group (using TRL's own process slice), and rewrites the advantages TRL logged for
  the completions table. `_compute_loss` reads `inputs["advantages"]`, i.e. the scaled ones, so the
  loss, the clip statistics and the logs all see g * A.

Success and mu_hat. One reward function defines success (`resolve_success_func`: `focal_reward_func`,
else the only one, else the one named `math`/`math_reward`); a rollout succeeds when its reward is
>= `focal_success_threshold` (default: the midpoint of R_w and R_c) and mu_hat is the group's fraction
of successes. Other reward functions (format, length penalties) shape TRL's advantage as usual but never
mu_hat. A success reward outside [R_w, R_c] stops training on the first batch with a one-line
ValueError (never clipped); a reward function that returned None for a rollout (TRL allows it) makes
that rollout a failure, still counted in the group's N. At focal_gamma = 0 the advantages are TRL's,
bit for bit, and no reward value can stop training: the rule then only feeds the logged metrics.

The weight, mu_hat and the logged focal metrics (tail-miss monitor included) come from `fgrpo_sim.core`,
the same functions verl's estimators call (nothing is re-implemented here).

Resume is the same run. Stock TRL 1.16 seeds its `RepeatSampler` once, so epoch e's prompt order is the
(e+1)-th permutation drawn from that generator; transformers 5 no longer replays the finished epochs on
resume and the sampler has no `set_epoch`, so a run resumed at an epoch boundary re-draws epoch 1's
order (it replays the first epoch's prompts) and a run resumed later in epoch 2+ draws the wrong one.
`EpochRepeatSampler` re-derives the permutation from (seed, epoch) in `set_epoch`, giving the stock
uninterrupted order, bit for bit, whatever epoch training starts in. TRL's micro-step counter `_step`
and its buffered generation batch (`steps_per_generation` > gradient_accumulation_steps) are not in a
checkpoint either: `_save_checkpoint` writes them to `fgrpo_resume_<rank>.pt` and `train` restores
them, so a checkpoint taken in the middle of a generation batch resumes with the same completions.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any

import torch
import trl
from trl import GRPOTrainer
from trl.trainer.utils import RepeatSampler

from fgrpo_sim.core import active_groups, focal_weight, group_success_rate
from fgrpo_sim.core.focal_metrics import focal_metrics, mean_tail_miss  # noqa: F401 (mean_tail_miss: re-exported)
from fgrpo_sim.llm.training.config import FocalGRPOConfig
from fgrpo_sim.llm.training.controls import apply_differential_smoothing, ds_enabled

#: TRL minor versions whose private methods (`_calculate_rewards`, `_generate_and_score_completions`,
#: `_logs["advantages"]`) this module was read against and tested with.
SUPPORTED_TRL_MINOR_VERSIONS = ("1.16",)
_ALLOW_ENV = "FGRPO_ALLOW_UNSUPPORTED_TRL"


def check_trl_version(version: str | None = None) -> str:
    """Raise RuntimeError unless TRL's version is one we support (override: env FGRPO_ALLOW_UNSUPPORTED_TRL=1)."""
    version = trl.__version__ if version is None else version
    minor = ".".join(version.split(".")[:2])
    if minor not in SUPPORTED_TRL_MINOR_VERSIONS and os.environ.get(_ALLOW_ENV) != "1":
        supported = ", ".join(f"{v}.x" for v in SUPPORTED_TRL_MINOR_VERSIONS)
        raise RuntimeError(
            f"FocalGRPOTrainer supports TRL {supported}, found trl {version}. It overrides private GRPOTrainer "
            f"methods that change between TRL releases; install a supported version "
            f"(pip install 'trl>=1.16,<1.17') or set {_ALLOW_ENV}=1 to try anyway at your own risk."
        )
    return version


#: transformers' deprecated checkpointing names that TRL 1.16 itself calls during training (trl/models/utils.py)
_TRL_DEPRECATED_CALLS = ("is_gradient_checkpointing", "gradient_checkpointing_enable", "gradient_checkpointing_disable")


def _ignore_trls_checkpointing_warnings() -> None:
    """Ignore transformers' FutureWarning for each of `_TRL_DEPRECATED_CALLS`: that exact message, raised in
    transformers.modeling_utils, nothing else (a caller's own warning, even in the same words, still shows)."""
    # No config avoids it: trl/models/utils.py:136 and :407 (TRL 1.16) read is_gradient_checkpointing per generation
    for old in _TRL_DEPRECATED_CALLS:
        new = old.replace("gradient", "activation")
        message = f"`{old}` is deprecated and will be removed in v6. Use `{new}` instead."
        warnings.filterwarnings("ignore", message=re.escape(message) + r"\Z", category=FutureWarning,
                                module=r"transformers\.modeling_utils\Z")


#: Names that make a reward function the default success function when there are several
#: (`make_math_reward` names its function "math"; "math_reward" is its older name, still accepted).
DEFAULT_SUCCESS_FUNC_NAMES = ("math", "math_reward")


def resolve_success_func(reward_func_names: list[str], focal_reward_func: str | None) -> int:
    """Index of the reward function whose output defines success for mu_hat.

    `focal_reward_func` picks it by name; else the only reward function; else the one named `math` or
    `math_reward`. ValueError (naming the options) when none qualifies.
    """
    names = list(reward_func_names)
    options = ", ".join(repr(n) for n in names)
    if focal_reward_func is not None:
        if focal_reward_func not in names:
            raise ValueError(f"focal_reward_func must be one of {options}, got {focal_reward_func!r}")
        return names.index(focal_reward_func)
    if len(names) == 1:
        return 0
    matches = [i for i, n in enumerate(names) if n in DEFAULT_SUCCESS_FUNC_NAMES]
    if len(matches) == 1:
        return matches[0]
    why = "none is named 'math' or 'math_reward'" if not matches else "several are named 'math'/'math_reward'"
    raise ValueError(
        f"focal_reward_func must name the reward function that defines success ({len(names)} reward functions: "
        f"{options}; {why}), e.g. FocalGRPOConfig(focal_reward_func={names[0]!r})"
    )


def check_declared_reward_values(func: Any, name: str, reward_correct: float, reward_wrong: float) -> None:
    """A success function that declares its `reward_wrong` / `reward_correct` attributes must use R_w and R_c.

    `make_math_reward` declares them; this catches e.g. reward_wrong = -1 with a 0/1 function, which would
    otherwise make every wrong rollout (reward 0 >= threshold 0) count as a success.
    """
    if not (hasattr(func, "reward_wrong") and hasattr(func, "reward_correct")):
        return
    wrong, correct = float(func.reward_wrong), float(func.reward_correct)
    if (wrong, correct) != (float(reward_wrong), float(reward_correct)):
        raise ValueError(
            f"reward function {name!r} returns {wrong:g} for a wrong and {correct:g} for a correct answer, but "
            f"reward_wrong={reward_wrong:g} and reward_correct={reward_correct:g}; set them to {wrong:g} and "
            f"{correct:g} (or pick another success function with focal_reward_func)"
        )


def check_success_rewards(rewards: torch.Tensor, name: str, reward_correct: float, reward_wrong: float,
                          options: list[str]) -> None:
    """Every scored reward of the success function lies in [R_w, R_c] (NaN = None is allowed); one sync."""
    if bool(((rewards >= reward_wrong) & (rewards <= reward_correct) | torch.isnan(rewards)).all()):
        return
    bad = rewards[~((rewards >= reward_wrong) & (rewards <= reward_correct) | torch.isnan(rewards))][0].item()
    raise ValueError(
        f"reward function {name!r} (the focal success function) returned {bad:g}, outside "
        f"[reward_wrong, reward_correct] = [{reward_wrong:g}, {reward_correct:g}]; set reward_wrong/reward_correct "
        f"to its range, pick another with focal_reward_func (one of {', '.join(options)}), or use focal_gamma 0"
    )


def group_focal_statistics(
    rewards: torch.Tensor, num_generations: int, gamma: float, threshold: float, focal_smoothing: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(focal weight, mu_hat, active) per group from the success function's gathered rewards [groups * N].

    A rollout succeeds when its reward is >= `threshold`; mu_hat is the group's fraction of successes (the
    weight's estimate is (successes + alpha) / (N + 2 alpha) with `focal_smoothing` alpha > 0; mu_hat stays raw).
    NaN (the reward function returned None: it could not score the rollout) is not a success, and the
    rollout still counts in the group's N. `active` is the paper's event A_N: the group mixes successes and
    failures (with extra reward functions TRL can still give an all-fail group a gradient).
    """
    grouped = rewards.view(-1, num_generations).float()
    success = (grouped >= threshold).float()  # NaN >= t is False: None is a failure
    mu_hat = group_success_rate(success, 1.0, 0.0)
    return focal_weight(mu_hat, gamma, focal_smoothing, num_generations), mu_hat, active_groups(success)


class EpochRepeatSampler(RepeatSampler):
    """TRL's RepeatSampler whose permutation is a function of (seed, epoch): epoch e uses the (e+1)-th
    permutation of a generator seeded with `seed`, the order stock TRL gives an uninterrupted run."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self):
        if self.shuffle and self.seed is not None:
            self.generator.manual_seed(self.seed)
            for _ in range(self.epoch):  # the draws stock TRL made for the earlier epochs
                torch.randperm(self.num_samples, generator=self.generator)
        return super().__iter__()


#: Per-process file in a checkpoint holding TRL's micro-step counter and buffered generation batch.
RESUME_FILE = "fgrpo_resume_{rank}.pt"
#: What a checkpoint holds only for resuming (plain, FSDP and DeepSpeed layouts); the weights, config and
#: tokenizer stay, so the folder remains loadable by `fgrpo llm eval`.
RESUME_ONLY = ("optimizer.pt", "optimizer.bin", "optimizer_0", "scheduler.pt", "scaler.pt", "rng_state*.pth",
               "fgrpo_resume_*.pt", "global_step*", "latest")


def prune_resume_state(checkpoint: str | os.PathLike) -> list[str]:
    """Remove a checkpoint's resume-only files (RESUME_ONLY); returns the names removed."""
    import shutil
    from pathlib import Path

    removed = []
    for pattern in RESUME_ONLY:
        for path in sorted(Path(checkpoint).glob(pattern)):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
            removed.append(path.name)
    return removed


class FocalGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose advantages are g(x) * A with g = (1 - mu_hat(x))^gamma (paper Sec. 4).

    Same constructor as `trl.GRPOTrainer`; `args` must be a `FocalGRPOConfig` (or None for defaults).
    """

    def __init__(self, model: Any, reward_funcs: Any = None, args: FocalGRPOConfig | None = None, *rest, **kwargs):
        check_trl_version()
        if args is None:
            name = model if isinstance(model, str) else getattr(getattr(model, "config", None), "_name_or_path", "model")
            args = FocalGRPOConfig(output_dir=f"{str(name).rstrip('/').split('/')[-1] or 'model'}-FGRPO")
        if not isinstance(args, FocalGRPOConfig):
            raise TypeError(
                f"args must be a FocalGRPOConfig (it carries focal_gamma and the method presets), got {type(args).__name__}"
            )
        self._focal_gathered_rewards: torch.Tensor | None = None
        super().__init__(model, reward_funcs, args, *rest, **kwargs)
        if args.metrics_file:
            from fgrpo_sim.llm.training.metrics_log import MetricsLog

            self.add_callback(MetricsLog(os.path.join(args.output_dir, args.metrics_file)))
        self._focal_success_index = self._resolve_success_rule(args)
        self._focal_warned = False

    def _get_train_sampler(self, dataset=None):
        sampler = super()._get_train_sampler(dataset)
        if type(sampler) is not RepeatSampler:  # a TRL that changed its sampler: keep it rather than guess
            return sampler
        return EpochRepeatSampler(
            data_source=sampler.data_source, mini_repeat_count=sampler.mini_repeat_count,
            batch_size=sampler.batch_size, repeat_count=sampler.repeat_count, shuffle=sampler.shuffle, seed=sampler.seed,
        )

    def _save_checkpoint(self, model, trial):
        # Written before TRL's own files, so a checkpoint whose trainer_state.json exists (the mark of a
        # finished save that resume looks for) always has it.
        if not self.args.save_only_model:
            from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

            folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
            os.makedirs(folder, exist_ok=True)
            state = {"step": self._step, "buffered_inputs": self._buffered_inputs}
            torch.save(state, os.path.join(folder, RESUME_FILE.format(rank=self.accelerator.process_index)))
        super()._save_checkpoint(model, trial)
        if self.args.save_optimizer_state == "last" and self.args.should_save:
            self._prune_older_checkpoints(self._get_output_dir(trial=trial))

    def _prune_older_checkpoints(self, run_dir: str) -> None:
        """Every checkpoint but the newest keeps only what evaluation needs (save_optimizer_state='last')."""
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

        newest = f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
        for entry in os.scandir(run_dir):
            if entry.is_dir() and entry.name.startswith(f"{PREFIX_CHECKPOINT_DIR}-") and entry.name != newest:
                prune_resume_state(entry.path)

    def train(self, resume_from_checkpoint=None, *args, **kwargs):
        checkpoint = resume_from_checkpoint
        if isinstance(checkpoint, bool) and checkpoint:
            from transformers.trainer_utils import get_last_checkpoint

            checkpoint = get_last_checkpoint(self.args.output_dir)
        if isinstance(checkpoint, (str, os.PathLike)):
            self._restore_generation_state(str(checkpoint))
        with warnings.catch_warnings():
            # TRL 1.16 reads, and with checkpointing on (its default) toggles, checkpointing around every generation
            # through names transformers 5 deprecated: TRL's call sites, never the user's. Only inside training.
            _ignore_trls_checkpointing_warnings()
            return super().train(resume_from_checkpoint, *args, **kwargs)

    def _restore_generation_state(self, checkpoint: str) -> None:
        """TRL's `_step` and buffered generation batch as they were when the checkpoint was saved."""
        path = os.path.join(checkpoint, RESUME_FILE.format(rank=self.accelerator.process_index))
        if os.path.isfile(path):
            state = torch.load(path, map_location=self.accelerator.device, weights_only=False)
            self._step, self._buffered_inputs = int(state["step"]), state["buffered_inputs"]
            return
        # A checkpoint from before this file existed: the counter follows from the step (one micro-batch
        # per accumulation step); a buffer taken mid-generation is regenerated, so that batch differs.
        import json

        state_file = os.path.join(checkpoint, "trainer_state.json")
        if not os.path.isfile(state_file):  # not a checkpoint: transformers' own resume reports it
            return
        with open(state_file, encoding="utf-8") as fh:
            global_step = int(json.load(fh).get("global_step", 0))
        self._step = global_step * self.args.gradient_accumulation_steps
        self._buffered_inputs = None

    def _resolve_success_rule(self, args: FocalGRPOConfig) -> int | None:
        """Which reward function defines success, checked before training starts.

        gamma > 0: a problem is a ValueError now. gamma = 0: the weight is 1 whatever mu_hat is, so the rule
        only feeds the logged focal metrics; a problem becomes one warning and those metrics are not logged.
        """
        names = list(self.reward_func_names)
        try:
            index = resolve_success_func(names, args.focal_reward_func)
            check_declared_reward_values(self.reward_funcs[index], names[index], args.reward_correct, args.reward_wrong)
            return index
        except ValueError as exc:
            if args.focal_gamma > 0 or ds_enabled(args):  # DS-GRPO needs the success rule too (controls.py)
                raise
            warnings.warn(f"focal metrics off (focal_gamma = 0 trains as stock TRL): {exc}", stacklevel=3)
            return None

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        # Already gathered over processes by TRL: the whole groups, in TRL's row order.
        self._focal_gathered_rewards = rewards_per_func
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        self._focal_gathered_rewards = None
        output = super()._generate_and_score_completions(inputs)
        gathered = self._focal_gathered_rewards
        self._focal_gathered_rewards = None
        if gathered is None:
            raise RuntimeError(
                "FocalGRPOTrainer: TRL produced advantages without calling _calculate_rewards; this TRL version "
                "is not supported by the focal override"
            )
        # Controls (paper Table 3): DS-GRPO reshapes A before the focal weight scales it (g * A^DS); no-op when off.
        output = apply_differential_smoothing(self, output, gathered)
        return self._apply_focal_weight(output, gathered)

    def _apply_focal_weight(self, output: dict, gathered_rewards: torch.Tensor) -> dict:
        """Scale TRL's local advantages by their group's weight; log the focal statistics.

        At gamma = 0 the advantages are TRL's, untouched, and no reward can raise: the metrics are logged
        when the success function's rewards fit the rule and skipped (one warning) when they do not.
        """
        args: FocalGRPOConfig = self.args
        index = self._focal_success_index
        if index is None:
            return output
        mode = "train" if self.model.training else "eval"
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        names = list(self.reward_func_names)
        rewards = gathered_rewards[:, index]
        try:
            check_success_rewards(rewards, names[index], args.reward_correct, args.reward_wrong, names)
        except ValueError as exc:
            if args.focal_gamma > 0:
                raise
            if not self._focal_warned:
                warnings.warn(f"focal metrics skipped for this batch: {exc}", stacklevel=2)
                self._focal_warned = True
            return output
        weight, mu_hat, active = group_focal_statistics(
            rewards, num_generations, args.focal_gamma, args.focal_success_threshold, args.focal_smoothing
        )
        if args.focal_gamma > 0:
            row_weight = weight.repeat_interleave(num_generations)  # one entry per gathered completion
            advantages = output["advantages"]
            n_local = advantages.shape[0]
            start = self.accelerator.process_index * n_local  # TRL's own process slice
            local_weight = row_weight[start : start + n_local].to(advantages.device, advantages.dtype)
            if advantages.dim() > 1:
                local_weight = local_weight.view(-1, *([1] * (advantages.dim() - 1)))
            output["advantages"] = advantages * local_weight
            self._rescale_logged_advantages(row_weight)
        none_frac = float(torch.isnan(rewards).float().mean())
        self._log_focal_metrics(mode, weight, mu_hat, active, num_generations, none_frac)
        return output

    def _rescale_logged_advantages(self, row_weight: torch.Tensor) -> None:
        """TRL appended the gathered (unweighted) advantages to its completions log; weight them too."""
        logged = self._logs["advantages"]
        k = min(len(logged), row_weight.numel())
        tail = [logged.pop() for _ in range(k)][::-1]
        scaled = torch.tensor(tail, dtype=torch.float64) * row_weight[row_weight.numel() - k :].double().cpu()
        logged.extend(scaled.tolist())

    def _log_focal_metrics(self, mode: str, weight: torch.Tensor, mu_hat: torch.Tensor, active: torch.Tensor,
                           num_generations: int, none_frac: float) -> None:
        # One device-to-host copy, then core's plain-Python metrics over one value per group: on a small
        # model a handful of tiny tensor reductions per step would cost more than the weighting itself.
        w, mu, act = torch.stack([weight.float(), mu_hat.float(), active.float()]).tolist()
        metrics = self._metrics[mode]
        for key, value in focal_metrics(w, mu, act, num_generations, gamma=self.args.focal_gamma,
                                        rho=self.args.focal_monitor_rho).items():
            metrics[key].append(value)
        metrics["focal/success_none_frac"].append(none_frac)  # TRL's reward functions may return None
