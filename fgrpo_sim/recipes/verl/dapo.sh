#!/usr/bin/env bash
# DAPO, Qwen2.5-7B, N = 8: clip-higher 0.2 / 0.28, token-mean (no dynamic sampling, no overlong shaping).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
launch "${DAPO_LOSS[@]}" \
  algorithm.adv_estimator=grpo \
  algorithm.focal_gamma=0.0 \
  trainer.experiment_name=qwen2.5-7b-dapo \
  "$@"
