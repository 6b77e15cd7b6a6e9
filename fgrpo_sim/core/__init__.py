"""The algorithm in pure torch: group statistics, advantages, focal weight and the policy losses.

Everything takes and returns torch tensors on any device and dtype; rewards are shaped [groups, N].
`focal_metrics` (the focal/* scalars both training stacks log) takes one value per group, returns floats.
The simulators and the LLM trainer call this package; nothing else re-implements it.
"""

from fgrpo_sim.core._checks import values_trusted
from fgrpo_sim.core.advantages import dr_grpo_advantages, grpo_advantages, rloo_advantages
from fgrpo_sim.core.focal import check_focal_smoothing, compute_advantages, focal_advantages, focal_weight, focal_weight_per_group
from fgrpo_sim.core.focal_metrics import focal_metrics
from fgrpo_sim.core.groups import active_groups, group_success_rate, smoothed_success_rate, success_rate_from_counts
from fgrpo_sim.core.losses import DEFAULT_CLIP, policy_loss

__all__ = [
    "group_success_rate",
    "success_rate_from_counts",
    "smoothed_success_rate",
    "active_groups",
    "grpo_advantages",
    "dr_grpo_advantages",
    "rloo_advantages",
    "focal_weight",
    "check_focal_smoothing",
    "focal_weight_per_group",
    "focal_advantages",
    "compute_advantages",
    "focal_metrics",
    "policy_loss",
    "DEFAULT_CLIP",
    "values_trusted",
]
