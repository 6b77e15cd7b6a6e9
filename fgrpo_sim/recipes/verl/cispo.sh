#!/usr/bin/env bash
# CISPO, Qwen2.5-7B, N = 8: verl's loss_mode=cispo, IS clip 1.0 / 5.0 (ratio kept in [0, 6]).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
launch "${CISPO_LOSS[@]}" \
  algorithm.adv_estimator=grpo \
  algorithm.focal_gamma=0.0 \
  trainer.experiment_name=qwen2.5-7b-cispo \
  "$@"
