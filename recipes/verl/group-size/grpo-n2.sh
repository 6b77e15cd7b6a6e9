#!/usr/bin/env bash
# Group-size sweep (paper Table 2): GRPO with N = 2 rollouts per prompt; 256 prompts a step and a
# 64-prompt mini-batch as at N = 8 (verl counts both in prompts). F-GRPO at N = 8 is ../f-grpo.sh.
set -euo pipefail
N=2
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
launch "${GRPO_LOSS[@]}" \
  algorithm.adv_estimator=grpo \
  algorithm.focal_gamma=0.0 \
  trainer.experiment_name=qwen2.5-7b-grpo-n2 \
  "$@"
