"""Group statistics: the empirical success rate mu_hat and which groups carry any learning signal.

Rewards are shaped [groups, N]: one row per prompt, one column per rollout of that prompt.
"""

from __future__ import annotations

from typing import Any

import torch

from fgrpo_sim.core._checks import as_float_tensor, check_rewards, check_rewards_between, check_scalar


def group_success_rate(rewards: Any, reward_correct: float = 1.0, reward_wrong: float = 0.0) -> torch.Tensor:
    """mu_hat = (mean R - R_w) / (R_c - R_w) per group, shape [groups] (paper Sec. 4).

    With binary rewards this is X / N, the fraction of correct rollouts. It is the plain group mean:
    no smoothing, no moving average. Rewards must lie between `reward_wrong` and `reward_correct`
    (partial credit in between is allowed); the result is clamped to [0, 1] only to remove
    floating-point rounding.
    """
    r_c = check_scalar("reward_correct", reward_correct)
    r_w = check_scalar("reward_wrong", reward_wrong)
    if r_c == r_w:
        raise ValueError(f"reward_correct must differ from reward_wrong, both are {r_c:g}")
    rewards = check_rewards_between(rewards, min(r_c, r_w), max(r_c, r_w))
    mu_hat = (rewards.mean(dim=1) - r_w) / (r_c - r_w)
    return mu_hat.clamp(0.0, 1.0)


def success_rate_from_counts(correct_counts: Any, group_size: Any) -> torch.Tensor:
    """mu_hat = X / N from per-group correct counts X (for simulators that never build reward rows).

    `group_size` is a number or a tensor broadcastable against `correct_counts`; 0 <= X <= N is checked.
    """
    counts = torch.as_tensor(correct_counts)
    size = torch.as_tensor(group_size, device=counts.device)
    if counts.is_floating_point() and not bool((counts == counts.round()).all()):
        raise ValueError("correct_counts must be integers")
    if size.is_floating_point() and not bool((size == size.round()).all()):
        raise ValueError("group_size must be an integer")
    if bool((size < 1).any()):
        raise ValueError(f"group_size must be >= 1, got {size.min().item():g}")
    if bool((counts < 0).any()) or bool((counts > size).any()):
        raise ValueError("correct_counts must be in [0, group_size]")
    dtype = counts.dtype if counts.is_floating_point() else torch.get_default_dtype()
    return counts.to(dtype) / size.to(dtype)


def smoothed_success_rate(mu_hat: torch.Tensor, group_size: Any, focal_smoothing: float = 0.0) -> torch.Tensor:
    """mu = (N mu_hat + alpha) / (N + 2 alpha) = (X + alpha) / (N + 2 alpha): additive smoothing of X / N.

    alpha = `focal_smoothing` >= 0 (checked by the caller); alpha = 0 returns `mu_hat` itself, untouched, so the
    paper's raw rate stays bit for bit what it was. alpha = 0.5 is the Jeffreys-style estimate some write-ups
    use: it keeps mu inside (0, 1), so a group with every rollout correct still gets a weight > 0.
    `group_size` is N (a number or a tensor broadcastable against mu_hat).
    """
    if focal_smoothing == 0.0:
        return mu_hat
    n = torch.as_tensor(group_size, dtype=mu_hat.dtype, device=mu_hat.device)
    return (n * mu_hat + focal_smoothing) / (n + 2.0 * focal_smoothing)


def active_groups(rewards: Any) -> torch.Tensor:
    """Bool [groups]: True where the rewards of a group are not all equal (only those get a gradient)."""
    rewards = check_rewards(rewards)
    return (rewards != rewards[:, :1]).any(dim=1)


__all__ = ["group_success_rate", "success_rate_from_counts", "smoothed_success_rate", "active_groups", "as_float_tensor"]
