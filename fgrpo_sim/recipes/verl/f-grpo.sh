#!/usr/bin/env bash
# F-GRPO, Qwen2.5-7B, N = 8: GRPO x (1 - mu_hat)^0.5 (gamma picked for this model, paper Sec. 5.3).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
launch "${GRPO_LOSS[@]}" \
  algorithm.adv_estimator=focal_grpo \
  algorithm.focal_gamma=0.5 \
  trainer.experiment_name=qwen2.5-7b-f-grpo \
  "$@"
