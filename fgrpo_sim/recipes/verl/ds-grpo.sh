#!/usr/bin/env bash
# DS-GRPO control (paper Table 3): A - ds_gamma_correct x log pi_old(y|x) on correct rollouts only
# (fgrpo_sim/verl/ds_grpo.py, the TRL control's Eq. 6). 1e-3 is recipes/qwen2.5-7b/ds-grpo.yaml's
# starting value, not the paper's (the F-GRPO paper gives none).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
launch "${GRPO_LOSS[@]}" \
  algorithm.adv_estimator=ds_grpo \
  algorithm.focal_gamma=0.0 \
  algorithm.ds_gamma_correct=1.0e-3 \
  algorithm.ds_gamma_incorrect=0.0 \
  algorithm.ds_logprob=sum \
  trainer.experiment_name=qwen2.5-7b-ds-grpo \
  "$@"
