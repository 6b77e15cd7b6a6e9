"""The paper's controls of Table 3 / Table 11 (Sec. 5.6, App. L.2) on the same trainer.

Four controls, all at N = 8 on Qwen2.5-7B, all GRPO with gamma = 0 in the paper:

| control     | what changes                            | where it lives                                       |
| ----------- | --------------------------------------- | ---------------------------------------------------- |
| GRPO low-LR | learning_rate 6.8e-7 = 1e-6 x m_0.5     | recipe only (`fgrpo theory lr-multiplier --gamma 0.5`) |
| GRPO-H      | entropy bonus, coefficient 1e-3         | TRL 1.16's own `entropy_coef` (see below)            |
| GRPO-KL     | KL penalty to the reference, beta 1e-3  | TRL's own `beta` (k3 estimator, reference model)     |
| DS-GRPO     | differential smoothing (Gai et al. 2025) | this module: `ds_grpo_advantages`, hooked before the focal weight |

Entropy bonus (TRL 1.16 `GRPOTrainer._compute_loss`): with `entropy_coef = c` the loss of each
micro-batch becomes ``L_policy - c * H / G`` where H is the *mean per-token entropy* (nats) of the
micro-batch's completion tokens (``(entropies * mask).sum() / mask.sum()``), G the gradient accumulation
steps, and gradients flow through H. It is added after the policy term is aggregated, so it composes
with the focal weight (which only scales the advantages inside L_policy) and with the paper's token-mean
aggregation (TRL's loss_type "dapo"), and it does not depend on gamma. verl's
``actor_rollout_ref.actor.entropy_coeff`` is the same coefficient: verl subtracts
``entropy_coeff * agg_loss(entropy, loss_agg_mode)`` and with ``loss_agg_mode=token-mean`` that is the
token mean too (over the mini-batch instead of each micro-batch; equal when micro-batches hold equal
token counts).

KL (TRL ``beta``): per token ``exp(ref - logp) - (ref - logp) - 1`` (the k3 estimator) times beta is added
to the per-token loss before token-mean aggregation; the frozen reference is the initial model. In verl:
``actor.use_kl_loss=True actor.kl_loss_coef=BETA actor.kl_loss_type=low_var_kl`` (same estimator, clamped
to [-10, 10] there). beta = 0 builds no reference model and is GRPO exactly.

Differential smoothing (Gai, Zeng, Zhang, Raghunathan, arXiv 2511.19942). Source note: the paper's
own PDF/HTML could not be read from this workplace (only its abstract); the rule below is taken from two
independent secondary write-ups of the paper that agree with each other and with its abstract ("any
reward modification ... only needs to be applied on the correct trajectories"). Its reward rule
(numbered Eq. 4 in those write-ups) is

    r_DS(tau) = r(tau) - gamma_p * log pi_base(tau)   if tau is correct
    r_DS(tau) = r(tau) + gamma_n * log pi_base(tau)   otherwise,            gamma_p, gamma_n >= 0,

and DS-GRPO (Eq. 6 there) applies it at the advantage level with the behaviour policy:

    A_i^DS = A_i - gamma_p * log pi_old(y_i | x)   if r_i = 1
    A_i^DS = A_i + gamma_n * log pi_old(y_i | x)   otherwise,

with A_i the usual group-normalised GRPO advantage and log pi_old(y_i | x) the completion's summed
token log-probability under the policy that sampled it. The F-GRPO paper's control (Sec. 5.6) is
"reward modification on correct trajectories only", i.e. gamma_n = 0 (`ds_gamma_incorrect`, default 0).
Neither paper's coefficient is given in the F-GRPO paper, so recipes must set `ds_gamma_correct`
explicitly. With a focal weight the order is g * A^DS: the focal weight scales the method's whole
advantage once (paper Sec. 4: A is replaced by g * A).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

#: `ds_logprob` choices: "sum" = log pi(y|x) as the rule writes it; "mean" = per-token mean (ours, not the paper's).
DS_LOGPROB_MODES = ("sum", "mean")


def _check_gammas(gamma_correct: float, gamma_incorrect: float) -> None:
    for name, value in (("ds_gamma_correct", gamma_correct), ("ds_gamma_incorrect", gamma_incorrect)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not (0.0 <= float(value) < float("inf")):
            raise ValueError(f"{name} must be in [0, inf), got {value!r}")


def differential_smoothing_rewards(
    rewards: torch.Tensor, log_prob: torch.Tensor, correct: torch.Tensor,
    gamma_correct: float, gamma_incorrect: float = 0.0,
) -> torch.Tensor:
    """Reward-level differential smoothing (the rule written as Eq. 4 above), elementwise.

    r - gamma_p * log pi(tau) on correct trajectories, r + gamma_n * log pi(tau) on the others.
    `log_prob` is the trajectory's log-probability (<= 0), so a correct but unlikely trajectory gains most.
    """
    _check_gammas(gamma_correct, gamma_incorrect)
    correct = correct.bool()
    shift = torch.where(correct, -float(gamma_correct) * log_prob, float(gamma_incorrect) * log_prob)
    return rewards + shift.to(rewards.dtype)


def ds_grpo_advantages(
    advantages: torch.Tensor, log_prob: torch.Tensor, correct: torch.Tensor,
    gamma_correct: float, gamma_incorrect: float = 0.0,
) -> torch.Tensor:
    """DS-GRPO advantages (Eq. 6 above): A - gamma_p log pi_old(y|x) if correct, A + gamma_n log pi_old(y|x) else."""
    return differential_smoothing_rewards(advantages, log_prob, correct, gamma_correct, gamma_incorrect)


def check_control_fields(config: Any) -> None:
    """Validate the controls' config fields (called from FocalGRPOConfig.__post_init__)."""
    _check_gammas(config.ds_gamma_correct, config.ds_gamma_incorrect)
    config.ds_gamma_correct = float(config.ds_gamma_correct)
    config.ds_gamma_incorrect = float(config.ds_gamma_incorrect)
    if config.ds_logprob not in DS_LOGPROB_MODES:
        raise ValueError(f"ds_logprob must be one of {', '.join(DS_LOGPROB_MODES)}, got {config.ds_logprob!r}")
    coef = getattr(config, "entropy_coef", 0.0)
    if not isinstance(coef, (int, float)) or not (-float("inf") < float(coef) < float("inf")):
        raise ValueError(f"entropy_coef must be a finite number, got {coef!r}")


def ds_enabled(config: Any) -> bool:
    return bool(getattr(config, "ds_gamma_correct", 0.0) or getattr(config, "ds_gamma_incorrect", 0.0))


def _completion_log_prob(trainer: Any, output: dict, mode: str) -> torch.Tensor:
    """log pi_old(y|x) per local completion: TRL's sampling-time log-probs when it kept them, else one no-grad pass."""
    mask = output["completion_mask"].float()
    per_token = output.get("old_per_token_logps")
    if per_token is None:
        prompt_ids, completion_ids = output["prompt_ids"], output["completion_ids"]
        input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attention_mask = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        batch_size = trainer.args.per_device_train_batch_size if mode == "train" else trainer.args.per_device_eval_batch_size
        with torch.no_grad():
            per_token, _ = trainer._get_per_token_logps_and_entropies(
                trainer.model, input_ids, attention_mask, completion_ids.size(1), batch_size
            )[:2]
    total = (per_token.float() * mask).sum(dim=1)
    if trainer.args.ds_logprob == "mean":
        total = total / mask.sum(dim=1).clamp(min=1.0)
    return total


def apply_differential_smoothing(trainer: Any, output: dict, gathered_rewards: torch.Tensor) -> dict:
    """Trainer hook: replace TRL's local advantages A by A^DS before the focal weight; no-op when DS is off."""
    args = trainer.args
    if not ds_enabled(args):
        return output
    mode = "train" if trainer.model.training else "eval"
    # the trainer resolved the success function at construction (it refuses DS-GRPO without one)
    rewards = gathered_rewards[:, trainer._focal_success_index]
    correct = rewards >= args.focal_success_threshold  # the trainer's success rule; NaN (unscorable) is not correct
    advantages = output["advantages"]
    n_local = advantages.shape[0]
    start = trainer.accelerator.process_index * n_local  # TRL's own process slice
    local_correct = correct[start : start + n_local].to(advantages.device)
    log_prob = _completion_log_prob(trainer, output, mode).to(advantages.device, advantages.dtype)
    shifted = ds_grpo_advantages(advantages if advantages.dim() == 1 else advantages[:, 0], log_prob,
                                 local_correct, args.ds_gamma_correct, args.ds_gamma_incorrect)
    output["advantages"] = shifted if advantages.dim() == 1 else shifted.unsqueeze(1).expand_as(advantages).clone()
    metrics = trainer._metrics[mode]
    metrics["ds/log_prob_mean"].append(float(log_prob.mean()))
    metrics["ds/advantage_shift_mean"].append(float((shifted - (advantages if advantages.dim() == 1 else advantages[:, 0])).mean()))
    return output


def save_reference_for_kl(model: Any, tokenizer: Any, folder: str | Path) -> Path:
    """Give an in-memory model (the tiny one) a folder TRL can load its KL reference from.

    TRL 1.16 builds the frozen reference for beta > 0 from `model.config._name_or_path`; a model built in
    memory has none, so we save its initial weights to `folder` and point the config there.
    """
    from fgrpo_sim.llm.tiny import save_tiny

    path = save_tiny(model, tokenizer, folder)
    model.config._name_or_path = str(path)
    return path
