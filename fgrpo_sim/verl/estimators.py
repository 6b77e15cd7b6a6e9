"""Focal advantage estimators for verl: verl's own GRPO / RLOO advantage times g = (1 - mu_hat)^gamma.

verl computes the base advantage (its epsilon, its unbiased std, its `norm_adv_by_std_in_grpo`), then
every rollout of a prompt group is multiplied by that group's focal weight (paper Sec. 4). The group's
success rate mu_hat and the weight come from `fgrpo_sim.core`; this module only regroups verl's flat
batch (one row per rollout, `index` = the prompt's uid) into the [groups, N] rows core expects.

Settings, read from the algorithm config object verl hands to the estimator:
    focal_gamma           gamma >= 0 (0 = the unweighted estimator, bit for bit); required
    focal_smoothing       alpha >= 0: the weight's estimate (c + alpha) / (N + 2 alpha) (default 0 = c / N, the paper)
    focal_reward_correct  R_c, reward of a correct rollout (default 1.0)
    focal_reward_wrong    R_w, reward of a wrong rollout (default 0.0)
    focal_monitor_rho     rho in [0, 1] of the Lemma 3.1 tail-miss monitor (default 0.05)
    norm_adv_by_std_in_grpo  verl's own switch: False gives (focal) Dr. GRPO advantages

Dr. GRPO in verl is GRPO with `norm_adv_by_std_in_grpo=False` (plus its loss aggregation), so
`focal_grpo` with that switch is focal Dr. GRPO; no separate estimator is needed.

Groups may have different sizes (verl's multi-turn or filtered batches): groups of equal size are
stacked and handed to core together, so every group gets its own mu_hat over its own rollouts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from fgrpo_sim.verl.algo_config import algo_setting  # noqa: F401 (re-exported: older callers import it here)

#: Defaults of the focal settings; the launcher's config (config/focal_ppo_trainer.yaml) uses the same.
DEFAULTS = {"focal_gamma": 0.0, "focal_smoothing": 0.0, "focal_reward_correct": 1.0, "focal_reward_wrong": 0.0, "focal_monitor_rho": 0.05}

# Metrics of the latest focal advantage computation in this process; the launcher's trainer moves
# them into verl's metrics dict right after verl computed the advantages (see main_ppo.py).
_latest_metrics: dict[str, float] = {}


def focal_settings(config: Any) -> dict[str, float]:
    """The focal settings from verl's algorithm config, checked (ValueError naming the config key)."""
    from fgrpo_sim.validation import check_range

    # gamma has no silent default: a config that lost the key (e.g. converted to verl's AlgoConfig
    # dataclass, which has no such field) would otherwise quietly train plain GRPO.
    if algo_setting(config, "focal_gamma", None) is None:
        raise ValueError("algorithm.focal_gamma is missing from the algorithm config: launch with "
                         "`python -m fgrpo_sim.verl.main_ppo` (its config has it) or add +algorithm.focal_gamma=...")
    out = {key: algo_setting(config, key, default) for key, default in DEFAULTS.items()}
    check_range("algorithm.focal_gamma", out["focal_gamma"], 0.0)
    check_range("algorithm.focal_smoothing", out["focal_smoothing"], 0.0, np.inf, high_open=True)
    check_range("algorithm.focal_monitor_rho", out["focal_monitor_rho"], 0.0, 1.0)
    check_range("algorithm.focal_reward_correct", out["focal_reward_correct"])
    check_range("algorithm.focal_reward_wrong", out["focal_reward_wrong"])
    if float(out["focal_reward_correct"]) == float(out["focal_reward_wrong"]):
        raise ValueError("algorithm.focal_reward_correct must differ from algorithm.focal_reward_wrong, "
                         f"both are {float(out['focal_reward_correct']):g}")
    if bool(algo_setting(config, "use_kl_in_reward", False)):
        raise ValueError("focal estimators need outcome rewards to compute mu_hat, but "
                         "algorithm.use_kl_in_reward=True adds the KL penalty to token_level_rewards; "
                         "set it to False (the paper uses no KL) or use actor.use_kl_loss instead")
    return {key: float(value) for key, value in out.items()}


def group_rows(index: Any) -> list[np.ndarray]:
    """Row numbers of each prompt group, groups in order of first appearance in the batch."""
    groups: dict[Any, list[int]] = {}
    for row, uid in enumerate(np.asarray(index, dtype=object).tolist()):
        groups.setdefault(uid, []).append(row)
    return [np.asarray(rows, dtype=np.int64) for rows in groups.values()]


def focal_group_weights(scores: torch.Tensor, index: Any, settings: dict[str, float]):
    """Per-row focal weight [batch], plus per-group (size, mu_hat, weight, active) arrays for metrics.

    `scores` are the outcome rewards, one per rollout (verl's token_level_rewards summed over tokens).
    """
    from fgrpo_sim.core import active_groups, focal_weight, group_success_rate

    scores = scores.detach().to(torch.float64).cpu()
    groups = group_rows(index)
    row_weight = torch.ones_like(scores)
    sizes = np.array([len(rows) for rows in groups], dtype=np.int64)
    mu_hat = np.zeros(len(groups))
    weight = np.ones(len(groups))
    active = np.zeros(len(groups), dtype=bool)
    for size in np.unique(sizes):
        members = np.flatnonzero(sizes == size)
        rows = np.stack([groups[g] for g in members])  # [groups of this size, size]
        rewards = scores[torch.from_numpy(rows)]
        try:
            mu = group_success_rate(rewards, settings["focal_reward_correct"], settings["focal_reward_wrong"])
        except ValueError as exc:
            raise ValueError(f"{exc}; set algorithm.focal_reward_correct / algorithm.focal_reward_wrong to the "
                             "reward function's values (the focal weight needs binary-like outcome rewards)") from None
        g = focal_weight(mu, settings["focal_gamma"], settings["focal_smoothing"], int(size))
        row_weight[torch.from_numpy(rows)] = g[:, None].expand_as(rewards)
        mu_hat[members] = mu.numpy()
        weight[members] = g.numpy()
        active[members] = active_groups(rewards).numpy()
    return row_weight, {"size": sizes, "mu_hat": mu_hat, "weight": weight, "active": active}


def focal_metrics(groups: dict[str, np.ndarray], settings: dict[str, float]) -> dict[str, float]:
    """Scalars for verl's metrics dict: `fgrpo_sim.core.focal_metrics`, the ones TRL's trainer logs too."""
    from fgrpo_sim.core.focal_metrics import focal_metrics as core_focal_metrics

    return core_focal_metrics(groups["weight"], groups["mu_hat"], groups["active"], groups["size"],
                              gamma=settings["focal_gamma"], rho=settings["focal_monitor_rho"])


def pop_focal_metrics() -> dict[str, float]:
    """The metrics of the latest focal advantage computation in this process (then forgotten)."""
    out = dict(_latest_metrics)
    _latest_metrics.clear()
    return out


def _weighted(base_name: str, token_level_rewards, response_mask, index, config, base_kwargs):
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    if index is None:
        raise ValueError("focal estimators need the prompt uid of every rollout (verl's `uid` / `index`)")
    settings = focal_settings(config)
    advantages, returns = get_adv_estimator_fn(base_name)(
        token_level_rewards=token_level_rewards, response_mask=response_mask, index=index, config=config, **base_kwargs
    )
    row_weight, groups = focal_group_weights(token_level_rewards.sum(dim=-1), index, settings)
    _latest_metrics.clear()
    _latest_metrics.update(focal_metrics(groups, settings))
    if settings["focal_gamma"] == 0.0:  # g == 1 exactly; skip the multiply so gamma = 0 is verl's output itself
        return advantages, returns
    row_weight = row_weight.to(device=advantages.device, dtype=advantages.dtype)[:, None]
    return advantages * row_weight, returns * row_weight


def compute_focal_grpo_outcome_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray | None = None,
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool | None = None,
    config: Any = None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """F-GRPO: verl's `compute_grpo_outcome_advantage` times the focal weight of each group.

    verl's generic estimator path passes no `norm_adv_by_std_in_grpo`, so, like verl's other GRPO
    variants, it is read from the config (default True) unless given explicitly.
    """
    if norm_adv_by_std_in_grpo is None:
        norm_adv_by_std_in_grpo = bool(algo_setting(config, "norm_adv_by_std_in_grpo", True))
    return _weighted("grpo", token_level_rewards, response_mask, index, config,
                     {"epsilon": epsilon, "norm_adv_by_std_in_grpo": norm_adv_by_std_in_grpo})


def compute_focal_rloo_outcome_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray | None = None,
    epsilon: float = 1e-6,
    config: Any = None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Focal RLOO: verl's `compute_rloo_outcome_advantage` times the focal weight of each group."""
    return _weighted("rloo", token_level_rewards, response_mask, index, config, {"epsilon": epsilon})


def _functions() -> dict[str, Any]:
    from fgrpo_sim.verl.ds_grpo import compute_ds_grpo_outcome_advantage

    return {"focal_grpo": compute_focal_grpo_outcome_advantage, "focal_rloo": compute_focal_rloo_outcome_advantage,
            "ds_grpo": compute_ds_grpo_outcome_advantage}


def register_focal_estimators() -> list[str]:
    """Register the focal estimators and ds_grpo with verl's registry (idempotent); returns their names.

    Call it in every process that computes advantages: the launcher does so inside verl's TaskRunner
    actor. A different function already registered under one of our names is an error, as in verl.
    """
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

    for name, fn in _functions().items():
        existing = ADV_ESTIMATOR_REGISTRY.get(name)
        if existing is None:
            register_adv_est(name)(fn)
        elif getattr(existing, "__qualname__", None) != fn.__qualname__ or existing.__module__ != fn.__module__:
            raise ValueError(f"verl already has an advantage estimator named {name!r}: {existing!r}")
    return list(_functions())


__all__ = [
    "DEFAULTS",
    "focal_settings",
    "focal_group_weights",
    "focal_metrics",
    "pop_focal_metrics",
    "compute_focal_grpo_outcome_advantage",
    "compute_focal_rloo_outcome_advantage",
    "register_focal_estimators",
]
