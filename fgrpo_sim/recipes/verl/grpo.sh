#!/usr/bin/env bash
# GRPO, Qwen2.5-7B, N = 8 (paper Table 1 baseline): verl's GRPO advantage, clip 0.2 / 0.2.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
launch "${GRPO_LOSS[@]}" \
  algorithm.adv_estimator=grpo \
  algorithm.focal_gamma=0.0 \
  trainer.experiment_name=qwen2.5-7b-grpo \
  "$@"
