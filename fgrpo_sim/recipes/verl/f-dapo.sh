#!/usr/bin/env bash
# F-DAPO, Qwen2.5-7B, N = 8: DAPO's loss and clip, focal GRPO advantage with gamma = 0.5.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
launch "${DAPO_LOSS[@]}" \
  algorithm.adv_estimator=focal_grpo \
  algorithm.focal_gamma=0.5 \
  trainer.experiment_name=qwen2.5-7b-f-dapo \
  "$@"
