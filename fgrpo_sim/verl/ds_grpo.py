"""DS-GRPO (the paper's Table 3 control) as a verl advantage estimator, `adv_estimator=ds_grpo`.

The maths is the TRL trainer's, not a second derivation: verl's own GRPO advantage A (its epsilon, std,
`norm_adv_by_std_in_grpo`) goes through `fgrpo_sim.llm.training.controls.ds_grpo_advantages` (Eq. 6 there):

    A_DS = A - ds_gamma_correct * log pi_old(y|x)     if the rollout is correct
    A_DS = A + ds_gamma_incorrect * log pi_old(y|x)   otherwise

log pi_old(y|x) is the rollout's summed token log-probability under the policy that sampled it (verl's
`old_log_probs` summed over the response mask; `ds_logprob=mean` divides by the response length, as in
TRL). Correct means outcome reward >= (focal_reward_correct + focal_reward_wrong) / 2, the TRL trainer's
default success threshold.

Settings (`algorithm.*`, in the launcher's config): `ds_gamma_correct` (>= 0, required > 0 or
ds_gamma_incorrect > 0 with this estimator), `ds_gamma_incorrect` (>= 0, default 0: correct
trajectories only, the F-GRPO paper's control), `ds_logprob` ("sum" | "mean").

verl hands its generic estimators no log-probabilities, so the launcher passes them: inside the
TaskRunner actor it wraps the `compute_advantage` that verl's v1 trainer calls, and for ds_grpo sets
`old_log_probs` for the duration of the call (`install_old_log_probs_passing`). Called any other way
without `old_log_probs`, the estimator refuses to run instead of returning plain GRPO.
"""

from __future__ import annotations

import contextvars
from typing import Any

import numpy as np
import torch

from fgrpo_sim.verl.algo_config import algo_setting as _get

DS_DEFAULTS = {"ds_gamma_correct": 0.0, "ds_gamma_incorrect": 0.0, "ds_logprob": "sum"}

_old_log_probs: contextvars.ContextVar[torch.Tensor | None] = contextvars.ContextVar("fgrpo_ds_old_log_probs",
                                                                                     default=None)


def ds_settings(config: Any) -> dict[str, Any]:
    """DS-GRPO settings from verl's algorithm config, checked with the TRL control's own rules."""
    from fgrpo_sim.llm.training.controls import DS_LOGPROB_MODES, _check_gammas

    out = {key: _get(config, key, default) for key, default in DS_DEFAULTS.items()}
    try:
        _check_gammas(out["ds_gamma_correct"], out["ds_gamma_incorrect"])
    except ValueError as exc:
        raise ValueError(f"algorithm.{exc}") from None
    if out["ds_logprob"] not in DS_LOGPROB_MODES:
        raise ValueError(f"algorithm.ds_logprob must be one of {', '.join(DS_LOGPROB_MODES)}, got {out['ds_logprob']!r}")
    if not (out["ds_gamma_correct"] or out["ds_gamma_incorrect"]):
        raise ValueError("adv_estimator=ds_grpo needs algorithm.ds_gamma_correct > 0 (or ds_gamma_incorrect > 0); "
                         "with both 0 it is plain GRPO: use adv_estimator=grpo")
    return {"ds_gamma_correct": float(out["ds_gamma_correct"]), "ds_gamma_incorrect": float(out["ds_gamma_incorrect"]),
            "ds_logprob": out["ds_logprob"]}


def compute_ds_grpo_outcome_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray | None = None,
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool | None = None,
    config: Any = None,
    old_log_probs: torch.Tensor | None = None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """DS-GRPO: verl's GRPO advantage shifted by Eq. 6 per rollout (broadcast over its response tokens)."""
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    from fgrpo_sim.llm.training.controls import ds_grpo_advantages

    if old_log_probs is None:
        old_log_probs = _old_log_probs.get()
    if old_log_probs is None:
        raise ValueError("adv_estimator=ds_grpo needs the rollouts' old_log_probs, which verl passes to no estimator: "
                         "launch with `python -m fgrpo_sim.verl.main_ppo` (v1 trainer), which hands them over")
    if index is None:
        raise ValueError("ds_grpo needs the prompt uid of every rollout (verl's `uid` / `index`)")
    settings = ds_settings(config)
    if norm_adv_by_std_in_grpo is None:
        norm_adv_by_std_in_grpo = bool(_get(config, "norm_adv_by_std_in_grpo", True))
    advantages, _ = get_adv_estimator_fn("grpo")(
        token_level_rewards=token_level_rewards, response_mask=response_mask, index=index, epsilon=epsilon,
        norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo, config=config)
    mask = response_mask.to(torch.float64)
    length = mask.sum(dim=-1).clamp(min=1.0)
    per_rollout = (advantages.to(torch.float64) * mask).sum(dim=-1) / length  # verl's GRPO: one value per rollout
    log_prob = (old_log_probs.to(torch.float64) * mask).sum(dim=-1)
    if settings["ds_logprob"] == "mean":
        log_prob = log_prob / length
    threshold = (float(_get(config, "focal_reward_correct", 1.0)) + float(_get(config, "focal_reward_wrong", 0.0))) / 2
    correct = token_level_rewards.sum(dim=-1) >= threshold
    shifted = ds_grpo_advantages(per_rollout, log_prob, correct.to(per_rollout.device),
                                 settings["ds_gamma_correct"], settings["ds_gamma_incorrect"])
    out = (shifted[:, None] * mask).to(advantages.dtype)
    return out, out


def compute_advantage_with_old_log_probs(compute_advantage):
    """Wrap verl's `compute_advantage(data, adv_estimator, ...)` so ds_grpo sees the batch's old_log_probs."""
    if getattr(compute_advantage, "_fgrpo_passes_old_log_probs", False):
        return compute_advantage

    def wrapped(data, adv_estimator, *args, **kwargs):
        if str(adv_estimator) != "ds_grpo":
            return compute_advantage(data, adv_estimator, *args, **kwargs)
        keys = set(data.batch.keys())
        # verl's bypass mode skips the old-policy recomputation: then the rollout's own log-probs are pi_old
        name = "old_log_probs" if "old_log_probs" in keys else "rollout_log_probs" if "rollout_log_probs" in keys else None
        log_probs = data.batch[name] if name else None
        token = _old_log_probs.set(log_probs)
        try:
            return compute_advantage(data, adv_estimator, *args, **kwargs)
        finally:
            _old_log_probs.reset(token)

    wrapped._fgrpo_passes_old_log_probs = True
    return wrapped


def install_old_log_probs_passing() -> None:
    """In this process, let verl's v1 trainer hand old_log_probs to ds_grpo (see the module doc)."""
    from verl.trainer.ppo.v1 import utils as v1_utils

    v1_utils.compute_advantage = compute_advantage_with_old_log_probs(v1_utils.compute_advantage)


__all__ = ["DS_DEFAULTS", "ds_settings", "compute_ds_grpo_outcome_advantage", "compute_advantage_with_old_log_probs",
           "install_old_log_probs_passing"]
