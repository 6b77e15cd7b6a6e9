#!/usr/bin/env bash
# Group-size sweep (paper Table 2): GRPO with N rollouts per prompt, N in {2, 4, 8, 16, 32}; 256 prompts a
# step and a 64-prompt mini-batch as at N = 8 (verl counts both in prompts). F-GRPO at N = 8 is f-grpo.sh.
# Usage: recipes/verl/group-size.sh N [verl overrides]
set -euo pipefail
if [[ $# -lt 1 || ! "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: usage: $0 N [verl overrides] (N = rollouts per prompt, a positive integer; the paper: 2 4 8 16 32), got '${1:-}'" >&2
  exit 2
fi
N=$1
shift
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
launch "${GRPO_LOSS[@]}" \
  algorithm.adv_estimator=grpo \
  algorithm.focal_gamma=0.0 \
  "trainer.experiment_name=qwen2.5-7b-grpo-n${N}" \
  "$@"
