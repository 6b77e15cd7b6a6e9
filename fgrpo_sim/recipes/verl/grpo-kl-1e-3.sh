#!/usr/bin/env bash
# GRPO-KL control (paper Table 3): KL loss to the initial model, beta 1e-3, k3 estimator (verl's low_var_kl,
# TRL's beta; recipes/qwen2.5-7b/grpo-kl-1e-3.yaml). verl builds a reference model for it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
launch "${GRPO_LOSS[@]}" \
  algorithm.adv_estimator=grpo \
  algorithm.focal_gamma=0.0 \
  actor_rollout_ref.actor.use_kl_loss=True \
  actor_rollout_ref.actor.kl_loss_coef=1.0e-3 \
  actor_rollout_ref.actor.kl_loss_type=low_var_kl \
  actor_rollout_ref.ref.strategy=fsdp2 \
  trainer.experiment_name=qwen2.5-7b-grpo-kl-1e-3 \
  "$@"
