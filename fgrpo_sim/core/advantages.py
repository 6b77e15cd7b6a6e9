"""Group-relative advantage estimators: GRPO, Dr. GRPO and RLOO, all shaped [groups, N].

Groups whose rewards are all equal get exactly zero advantage (set explicitly: the mean of equal
floats need not reproduce the float, and the GRPO std would divide 0 by eps).
"""

from __future__ import annotations

from typing import Any

import torch

from fgrpo_sim.core._checks import check_rewards, check_scalar
from fgrpo_sim.core.groups import active_groups


def _zero_inactive(advantages: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
    return torch.where(active_groups(rewards)[:, None], advantages, torch.zeros_like(advantages))


def grpo_advantages(rewards: Any, eps: float = 1e-6, unbiased_std: bool = False) -> torch.Tensor:
    """A_i = (R_i - mean R) / (std R + eps) within each group.

    `unbiased_std=False` uses the population std (divide by N), as the paper's formulas for binary
    rewards (|A+| = sqrt((1-mu)/mu)) assume; TRL and verl use the unbiased std (divide by N - 1).
    """
    rewards = check_rewards(rewards)
    eps = check_scalar("eps", eps, 0.0)
    centred = rewards - rewards.mean(dim=1, keepdim=True)
    if rewards.shape[1] == 1:  # a single rollout is always an inactive group
        return torch.zeros_like(rewards)
    std = rewards.std(dim=1, keepdim=True, correction=1 if unbiased_std else 0)
    return _zero_inactive(centred / (std + eps), rewards)


def dr_grpo_advantages(rewards: Any) -> torch.Tensor:
    """Dr. GRPO: A_i = R_i - mean R (mean-centred, no std normalisation)."""
    rewards = check_rewards(rewards)
    return _zero_inactive(rewards - rewards.mean(dim=1, keepdim=True), rewards)


def rloo_advantages(rewards: Any) -> torch.Tensor:
    """RLOO: A_i = R_i - mean_{j != i} R_j = N / (N - 1) * (R_i - mean R). Needs N >= 2."""
    rewards = check_rewards(rewards)
    n = rewards.shape[1]
    if n < 2:
        raise ValueError(f"rewards must have group size N >= 2 for RLOO, got N = {n}")
    loo_mean = (rewards.sum(dim=1, keepdim=True) - rewards) / (n - 1)
    return _zero_inactive(rewards - loo_mean, rewards)


ESTIMATORS = {"grpo": grpo_advantages, "dr_grpo": dr_grpo_advantages, "rloo": rloo_advantages}

__all__ = ["grpo_advantages", "dr_grpo_advantages", "rloo_advantages", "ESTIMATORS"]
