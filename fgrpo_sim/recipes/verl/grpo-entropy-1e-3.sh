#!/usr/bin/env bash
# GRPO-H control (paper Table 3): entropy bonus 1e-3, token-mean (recipes/qwen2.5-7b/grpo-entropy-1e-3.yaml;
# verl subtracts entropy_coeff x the token-mean entropy of the mini-batch, TRL of each micro-batch).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
launch "${GRPO_LOSS[@]}" \
  algorithm.adv_estimator=grpo \
  algorithm.focal_gamma=0.0 \
  actor_rollout_ref.actor.entropy_coeff=1.0e-3 \
  trainer.experiment_name=qwen2.5-7b-grpo-entropy-1e-3 \
  "$@"
