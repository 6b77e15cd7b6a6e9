#!/usr/bin/env bash
# GRPO low-LR control (paper Table 3): GRPO at N = 8, lr 6.8e-7 = 1e-6 x m_0.5 (`fgrpo theory lr-multiplier
# --gamma 0.5`), the TRL recipe's value (recipes/qwen2.5-7b/grpo-low-lr.yaml).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
launch "${GRPO_LOSS[@]}" \
  algorithm.adv_estimator=grpo \
  algorithm.focal_gamma=0.0 \
  actor_rollout_ref.actor.optim.lr=6.8e-7 \
  trainer.experiment_name=qwen2.5-7b-grpo-low-lr \
  "$@"
