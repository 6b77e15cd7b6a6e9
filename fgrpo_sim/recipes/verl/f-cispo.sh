#!/usr/bin/env bash
# F-CISPO, Qwen2.5-7B, N = 8: CISPO's loss and clip, focal GRPO advantage with gamma = 1.0.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
launch "${CISPO_LOSS[@]}" \
  algorithm.adv_estimator=focal_grpo \
  algorithm.focal_gamma=1.0 \
  trainer.experiment_name=qwen2.5-7b-f-cispo \
  "$@"
