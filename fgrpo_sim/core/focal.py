"""Focal weighting (paper Sec. 4): g = (1 - mu_hat)^gamma, one scalar per prompt group.

It multiplies every advantage of the group; rewards, clipping bounds and importance weights are
untouched, and gamma = 0 recovers the unweighted method exactly.

`focal_smoothing` = alpha >= 0 replaces the paper's raw rate X / N by (X + alpha) / (N + 2 alpha) inside the
weight only (`groups.smoothed_success_rate`); the advantages keep the raw rewards. alpha = 0 (the default, the
paper's estimate) takes the very same code path as before, so it is unchanged bit for bit.
"""

from __future__ import annotations

from typing import Any

import torch

from fgrpo_sim.core._checks import as_float_tensor, check_rewards, check_scalar, values_checked
from fgrpo_sim.core.advantages import ESTIMATORS
from fgrpo_sim.core.groups import group_success_rate, smoothed_success_rate
from fgrpo_sim.validation import check_choice


def check_focal_smoothing(focal_smoothing: Any, group_size: Any = None) -> float:
    """alpha as a float >= 0 (finite); a smoothing > 0 needs the group size N it smooths against."""
    alpha = check_scalar("focal_smoothing", focal_smoothing, 0.0)
    if alpha > 0.0:
        if group_size is None:
            raise ValueError("group_size must be given with focal_smoothing > 0 (mu = (X + alpha) / (N + 2 alpha))")
        size = torch.as_tensor(group_size)
        if not bool((size >= 1).all()):  # NaN fails too
            raise ValueError(f"group_size must be >= 1, got {size.flatten()[~(size.flatten() >= 1)][0].item():g}")
    return alpha


def focal_weight(mu_hat: Any, gamma: float, focal_smoothing: float = 0.0, group_size: Any = None) -> torch.Tensor:
    """g = (1 - mu)^gamma, elementwise; mu_hat = X / N in [0, 1], gamma >= 0.

    mu = mu_hat by default (the paper); with `focal_smoothing` alpha > 0, mu = (N mu_hat + alpha) / (N + 2 alpha)
    for group size `group_size` = N. gamma = 0 returns exactly ones, also at mu_hat = 1 (the 0^0 = 1
    convention of the unweighted method).
    """
    mu_hat = as_float_tensor("mu_hat", mu_hat)
    gamma = check_scalar("gamma", gamma, 0.0)
    alpha = check_focal_smoothing(focal_smoothing, group_size)
    if values_checked() and not bool(((mu_hat >= 0) & (mu_hat <= 1)).all()):  # one sync; NaN fails both
        bad = mu_hat[~((mu_hat >= 0) & (mu_hat <= 1))].flatten()[0].item()
        raise ValueError(f"mu_hat must be in [0, 1], got {bad:g}")
    if gamma == 0.0:
        return torch.ones_like(mu_hat)
    return torch.pow(1.0 - smoothed_success_rate(mu_hat, group_size, alpha), gamma)


def focal_weight_per_group(mu_hat: torch.Tensor, gamma: torch.Tensor, focal_smoothing: float = 0.0,
                           group_size: Any = None) -> torch.Tensor:
    """g = (1 - mu)^gamma with a gamma per group (tensors that broadcast), unchecked: no host sync.

    For simulators whose mu_hat = X / N lies in [0, 1] by construction and whose gammas and smoothing were
    checked once; mu as in `focal_weight`. torch.pow(x, 0) = 1, so gamma = 0 gives exactly 1 (also at
    mu_hat = 1), as `focal_weight` does.
    """
    return torch.pow(1.0 - smoothed_success_rate(mu_hat, group_size, focal_smoothing), gamma)


def focal_advantages(advantages: Any, mu_hat: Any, gamma: float, focal_smoothing: float = 0.0) -> torch.Tensor:
    """A^F = g[:, None] * A for advantages [groups, N] and mu_hat [groups] (N, for the smoothing, from A)."""
    advantages = as_float_tensor("advantages", advantages)
    if advantages.dim() != 2:
        raise ValueError(f"advantages must be shaped [groups, N], got shape {tuple(advantages.shape)}")
    mu_hat = as_float_tensor("mu_hat", mu_hat, like=advantages)
    if mu_hat.shape != advantages.shape[:1]:
        raise ValueError(f"mu_hat must be shaped [groups] = [{advantages.shape[0]}], got shape {tuple(mu_hat.shape)}")
    weight = focal_weight(mu_hat, gamma, focal_smoothing, advantages.shape[1])
    weight = weight.to(device=advantages.device, dtype=advantages.dtype)
    return weight[:, None] * advantages


def compute_advantages(
    rewards: Any,
    estimator: str = "grpo",
    gamma: float = 0.0,
    reward_correct: float = 1.0,
    reward_wrong: float = 0.0,
    eps: float = 1e-6,
    unbiased_std: bool = False,
    focal_smoothing: float = 0.0,
) -> torch.Tensor:
    """Convenience: advantages of `estimator` ("grpo", "dr_grpo", "rloo") times the focal weight.

    mu_hat is computed from the whole group's rewards; a caller that splits a group across processes
    must gather the group first, or the weight would differ between its shards.
    """
    check_choice("estimator", estimator, tuple(ESTIMATORS))
    rewards = check_rewards(rewards)
    if estimator == "grpo":
        adv = ESTIMATORS[estimator](rewards, eps=eps, unbiased_std=unbiased_std)
    else:
        adv = ESTIMATORS[estimator](rewards)
    mu_hat = group_success_rate(rewards, reward_correct, reward_wrong)
    return focal_advantages(adv, mu_hat, gamma, focal_smoothing)


__all__ = ["focal_weight", "focal_advantages", "compute_advantages", "check_focal_smoothing"]
