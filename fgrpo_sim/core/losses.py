"""Token-level policy losses (paper App. B): GRPO clip, DAPO clip-higher and CISPO.

All three take per-token log-probabilities under the current policy (`logp`, with gradient) and
under the policy that sampled the rollouts (`old_logp`, treated as a constant), a 0/1 token `mask`
and advantages per sequence ([batch]) or per token ([batch, T]); F-variants simply pass focal
advantages g * A. There is no KL term (the paper uses none).

Per-token objective, with ratio r = exp(logp - old_logp):

* ``grpo`` / ``dapo``: ``min(r A, clip(r, 1 - eps_low, 1 + eps_high) A)``; GRPO uses eps 0.2 / 0.2,
  DAPO's clip-higher 0.2 / 0.28. The two differ only for tokens with A > 0 and 1.2 < r <= 1.28.
* ``cispo``: ``sg(w) * A * logp`` with the importance weight ``w`` clipped and stop-gradient, so the
  gradient is ``w * A * grad logp`` for every token (no token is dropped, unlike PPO clipping).

CISPO clip convention. The frameworks disagree:

* verl (which the paper trained with) clips two-sided, ``w = clip(r, 1 - eps_low, 1 + eps_high)``;
* TRL caps only from above and reads ``epsilon_high`` as the cap itself, ``w = min(r, epsilon_high)``
  (so TRL's recommended 5.0 is a cap at 5, not at 1 + 5 = 6).

Our default is ``cispo_clip="two_sided"`` with the paper's eps_low = 1.0, eps_high = 5.0, i.e.
``w = clip(r, 0, 6)``: it is the paper's formula and its training framework. With eps_low = 1.0 the
lower bound 0 never binds (r > 0), so two-sided and ``"upper"`` (``w = min(r, 1 + eps_high)``) give
identical losses here; they differ only when a caller picks eps_low < 1. A caller that wants TRL's
exact numbers passes ``cispo_clip="upper", eps_high=trl_epsilon_high - 1``.

The loss returned is the negative objective, aggregated over unmasked tokens:

* ``token_mean`` (DAPO style, the paper's setting): sum over all tokens / number of tokens;
* ``sequence_mean`` (original GRPO): mean over tokens within each sequence, then over sequences
  that have at least one token.
"""

from __future__ import annotations

from typing import Any

import torch

from fgrpo_sim.core._checks import as_float_tensor, check_scalar, values_checked
from fgrpo_sim.validation import check_choice

METHODS = ("grpo", "dapo", "cispo")
AGGREGATIONS = ("token_mean", "sequence_mean")
CISPO_CLIPS = ("two_sided", "upper")
#: (eps_low, eps_high) used when the caller passes None: the paper's settings.
DEFAULT_CLIP = {"grpo": (0.2, 0.2), "dapo": (0.2, 0.28), "cispo": (1.0, 5.0)}
_MAX_LOG_RATIO = 20.0


def _check_inputs(logp: Any, old_logp: Any, advantages: Any, mask: Any):
    if not isinstance(logp, torch.Tensor) or not logp.is_floating_point():
        raise ValueError("logp must be a floating-point torch tensor shaped [batch, T]")
    if logp.dim() != 2:
        raise ValueError(f"logp must be shaped [batch, T], got shape {tuple(logp.shape)}")
    old_logp = as_float_tensor("old_logp", old_logp, like=logp)
    if old_logp.shape != logp.shape:
        raise ValueError(f"old_logp must have the shape of logp {tuple(logp.shape)}, got {tuple(old_logp.shape)}")
    mask = torch.as_tensor(mask, device=logp.device)
    if mask.shape != logp.shape:
        raise ValueError(f"mask must have the shape of logp {tuple(logp.shape)}, got {tuple(mask.shape)}")
    if mask.dtype != torch.bool:
        if values_checked() and not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError("mask must contain only 0/1 (or bool) values")
        mask = mask != 0
    advantages = as_float_tensor("advantages", advantages, like=logp)
    if advantages.shape == logp.shape[:1]:
        advantages = advantages[:, None]
    elif advantages.shape != logp.shape:
        raise ValueError(
            f"advantages must be shaped [batch] = [{logp.shape[0]}] or [batch, T] = {list(logp.shape)}, "
            f"got {list(advantages.shape)}"
        )
    for name, t in (("logp", logp), ("old_logp", old_logp)):
        if values_checked() and not bool(torch.isfinite(t[mask]).all()):
            raise ValueError(f"{name} must be finite on unmasked tokens")
    if values_checked() and not bool(torch.isfinite(advantages).all()):
        raise ValueError("advantages must be finite")
    return old_logp.to(device=logp.device, dtype=logp.dtype), advantages.to(logp.device, logp.dtype), mask


def policy_loss(
    logp: torch.Tensor,
    old_logp: Any,
    advantages: Any,
    mask: Any,
    method: str = "grpo",
    eps_low: float | None = None,
    eps_high: float | None = None,
    aggregation: str = "token_mean",
    cispo_clip: str = "two_sided",
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Policy loss (negative surrogate objective) and detached statistics; see the module docstring.

    Shapes: logp, old_logp, mask [batch, T]; advantages [batch] or [batch, T]. eps_low in [0, 1] and
    eps_high >= 0 default to DEFAULT_CLIP[method] (grpo 0.2/0.2, dapo 0.2/0.28, cispo 1.0/5.0).
    Masked-out positions may hold anything (even -inf); they get neither loss nor gradient.
    log r is clamped to [-20, 20] against overflow (no effect on any realistic ratio).

    Stats (0-dim detached tensors, token-level over unmasked tokens):
    ``clip_fraction_low`` / ``clip_fraction_high`` / ``clip_fraction``: for grpo/dapo the tokens whose
    clipped branch is active (r < 1 - eps_low with A < 0, r > 1 + eps_high with A > 0: their gradient
    is zero); for cispo the tokens whose importance weight was clipped (gradient kept, weight capped).
    ``ratio_mean``, ``ratio_min``, ``ratio_max``, ``approx_kl`` (k3 estimate of KL(old || new)) and
    ``num_tokens``.
    """
    check_choice("method", method, METHODS)
    check_choice("aggregation", aggregation, AGGREGATIONS)
    check_choice("cispo_clip", cispo_clip, CISPO_CLIPS)
    default_low, default_high = DEFAULT_CLIP[method]
    eps_low = check_scalar("eps_low", default_low if eps_low is None else eps_low, 0.0, 1.0)
    eps_high = check_scalar("eps_high", default_high if eps_high is None else eps_high, 0.0)
    old_logp, advantages, mask = _check_inputs(logp, old_logp, advantages, mask)

    zero = torch.zeros((), dtype=logp.dtype, device=logp.device)
    # Replace masked positions before exp(): a NaN there would otherwise poison the gradient (0 * NaN).
    logp_safe = torch.where(mask, logp, zero)
    old_safe = torch.where(mask, old_logp.detach(), zero)
    # Overflow guard (as verl does): |log r| > 20 means r beyond 5e8, where exp() would overflow float16/32
    # into inf and turn the loss into inf; the clamp changes nothing for any realistic ratio.
    log_ratio = torch.clamp(logp_safe - old_safe, -_MAX_LOG_RATIO, _MAX_LOG_RATIO)
    ratio = torch.exp(log_ratio)
    lower, upper = 1.0 - eps_low, 1.0 + eps_high

    if method in ("grpo", "dapo"):
        unclipped = ratio * advantages
        clipped = torch.clamp(ratio, lower, upper) * advantages
        objective = torch.minimum(unclipped, clipped)
        clipped_low = (ratio < lower) & (advantages < 0)
        clipped_high = (ratio > upper) & (advantages > 0)
    else:  # cispo: stop-gradient clipped importance weight times A times log-prob
        ratio_const = ratio.detach()
        if cispo_clip == "two_sided":
            weight = torch.clamp(ratio_const, lower, upper)
            clipped_low = ratio_const < lower
        else:
            weight = torch.clamp(ratio_const, max=upper)
            clipped_low = torch.zeros_like(mask)
        clipped_high = ratio_const > upper
        objective = weight * advantages * logp_safe

    token_loss = torch.where(mask, -objective, zero)
    mask_f = mask.to(logp.dtype)
    tokens_per_seq = mask_f.sum(dim=1)
    num_tokens = tokens_per_seq.sum()
    if aggregation == "token_mean":
        loss = token_loss.sum() / num_tokens.clamp(min=1.0)
    else:
        has_tokens = tokens_per_seq > 0
        per_seq = token_loss.sum(dim=1) / tokens_per_seq.clamp(min=1.0)
        loss = per_seq.sum() / has_tokens.sum().clamp(min=1).to(logp.dtype)

    with torch.no_grad():
        denom = num_tokens.clamp(min=1.0)
        r = ratio.detach()
        low = (clipped_low & mask).to(logp.dtype).sum() / denom
        high = (clipped_high & mask).to(logp.dtype).sum() / denom
        any_token = num_tokens > 0
        big, small = torch.finfo(logp.dtype).max, torch.finfo(logp.dtype).min
        stats = {
            "clip_fraction_low": low,
            "clip_fraction_high": high,
            "clip_fraction": ((clipped_low | clipped_high) & mask).to(logp.dtype).sum() / denom,
            "ratio_mean": (r * mask_f).sum() / denom,
            "ratio_min": torch.where(any_token, torch.where(mask, r, big).min(), zero),
            "ratio_max": torch.where(any_token, torch.where(mask, r, small).max(), zero),
            "approx_kl": (torch.where(mask, (r - 1.0) - log_ratio.detach(), zero)).sum() / denom,
            "num_tokens": num_tokens,
        }
    return loss, stats


__all__ = ["policy_loss", "DEFAULT_CLIP", "METHODS", "AGGREGATIONS", "CISPO_CLIPS"]
