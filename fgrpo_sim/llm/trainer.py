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

The weight and mu_hat come from `fgrpo_sim.core` (nothing is re-implemented here).
"""

from __future__ import annotations

import os
from typing import Any

import torch
import trl
from trl import GRPOTrainer

from fgrpo_sim.core import active_groups, focal_weight, group_success_rate
from fgrpo_sim.llm.config import FocalGRPOConfig
from fgrpo_sim.llm.controls import apply_differential_smoothing

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


def success_rewards(
    rewards_per_func: torch.Tensor,
    reward_weights: torch.Tensor,
    reward_func_names: list[str],
    focal_reward_func: str | None,
) -> torch.Tensor:
    """The per-completion reward that defines success for mu_hat, shape [rows]; NaN where unscorable.

    Default: TRL's weighted sum over reward functions (the reward its group baseline uses).
    """
    if focal_reward_func is not None:
        if focal_reward_func not in reward_func_names:
            raise ValueError(
                f"focal_reward_func must be one of {', '.join(reward_func_names)}, got {focal_reward_func!r}"
            )
        return rewards_per_func[:, reward_func_names.index(focal_reward_func)]
    weights = reward_weights.to(rewards_per_func.device, rewards_per_func.dtype)
    rewards = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
    rewards[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
    return rewards


def group_focal_statistics(
    rewards: torch.Tensor, num_generations: int, gamma: float, reward_correct: float, reward_wrong: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(focal weight, mu_hat, active) per group from the gathered rewards [groups * N] (NaN = unscorable).

    An unscorable completion is left out of its group's mean, as TRL leaves it out of its baseline
    (its own advantage is 0 either way); a group with no scorable completion gets mu_hat from R_w.
    """
    grouped = rewards.view(-1, num_generations).float()
    nan = torch.isnan(grouped)
    if bool(nan.any()):
        row_mean = torch.nanmean(grouped, dim=1, keepdim=True)
        row_mean = torch.nan_to_num(row_mean, nan=float(reward_wrong))
        grouped = torch.where(nan, row_mean.expand_as(grouped), grouped)
    mu_hat = group_success_rate(grouped, reward_correct, reward_wrong)
    return focal_weight(mu_hat, gamma), mu_hat, active_groups(grouped)


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
        if args.focal_reward_func is not None and args.focal_reward_func not in self.reward_func_names:
            raise ValueError(
                f"focal_reward_func must be one of {', '.join(self.reward_func_names)}, got {args.focal_reward_func!r}"
            )

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
        """Scale TRL's local advantages by their group's weight; log the focal statistics."""
        args: FocalGRPOConfig = self.args
        mode = "train" if self.model.training else "eval"
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        rewards = success_rewards(
            gathered_rewards, self.reward_weights, list(self.reward_func_names), args.focal_reward_func
        )
        weight, mu_hat, active = group_focal_statistics(
            rewards, num_generations, args.focal_gamma, args.reward_correct, args.reward_wrong
        )
        row_weight = weight.repeat_interleave(num_generations)  # one entry per gathered completion

        advantages = output["advantages"]
        n_local = advantages.shape[0]
        start = self.accelerator.process_index * n_local  # TRL's own process slice
        local_weight = row_weight[start : start + n_local].to(advantages.device, advantages.dtype)
        if advantages.dim() > 1:
            local_weight = local_weight.view(-1, *([1] * (advantages.dim() - 1)))
        output["advantages"] = advantages * local_weight

        self._rescale_logged_advantages(row_weight)
        self._log_focal_metrics(mode, weight, mu_hat, active)
        return output

    def _rescale_logged_advantages(self, row_weight: torch.Tensor) -> None:
        """TRL appended the gathered (unweighted) advantages to its completions log; weight them too."""
        logged = self._logs["advantages"]
        k = min(len(logged), row_weight.numel())
        tail = [logged.pop() for _ in range(k)][::-1]
        scaled = torch.tensor(tail, dtype=torch.float64) * row_weight[row_weight.numel() - k :].double().cpu()
        logged.extend(scaled.tolist())

    def _log_focal_metrics(self, mode: str, weight: torch.Tensor, mu_hat: torch.Tensor, active: torch.Tensor) -> None:
        # One device-to-host copy, then plain Python over one value per group: on a small model a
        # handful of tiny tensor (or numpy) reductions per step would cost more than the weighting.
        w, mu, act = torch.stack([weight.float(), mu_hat.float(), active.float()]).tolist()
        groups = len(w)
        n_active = sum(act)
        metrics = self._metrics[mode]
        metrics["focal/weight_mean"].append(sum(w) / groups)
        metrics["focal/frac_active_groups"].append(n_active / groups)
        # mean weight over groups that carry a gradient; NaN (skipped by TRL's log) when there are none
        weight_active = sum(wi for wi, ai in zip(w, act) if ai) / n_active if n_active else float("nan")
        metrics["focal/weight_mean_active"].append(weight_active)
        metrics["focal/mu_hat_mean"].append(sum(mu) / groups)
        metrics["focal/mu_hat_frac_zero"].append(sum(m == 0 for m in mu) / groups)
        metrics["focal/mu_hat_frac_low"].append(sum(0 < m <= 0.5 for m in mu) / groups)
        metrics["focal/mu_hat_frac_high"].append(sum(0.5 < m < 1 for m in mu) / groups)
        metrics["focal/mu_hat_frac_one"].append(sum(m == 1 for m in mu) / groups)
