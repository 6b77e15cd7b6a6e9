#!/usr/bin/env bash
# Data for every recipe here: DeepScaleR as the paper used it (duplicates with conflicting answers dropped,
# prompts over 1024 tokens dropped; `fgrpo llm prepare-data`), then verl's parquet format with the
# answer as reward_model.ground_truth. Usage: recipes/verl/prepare-data.sh [SOURCE] [OUT_DIR]
# SOURCE: a local DeepScaleR file or the hub id (needs network); MODEL: the tokenizer that counts prompt
# tokens (the policy's). Extra `fgrpo llm prepare-data` options: PREPARE_ARGS.
set -euo pipefail
SOURCE=${1:-agentica-org/DeepScaleR-Preview-Dataset}
OUT_DIR=${2:-data/verl}
MODEL=${MODEL:-Qwen/Qwen2.5-7B}
source "$(dirname "${BASH_SOURCE[0]}")/python.sh"
mkdir -p "${OUT_DIR}"
"${PYTHON}" -m fgrpo_sim.cli llm prepare-data "${SOURCE}" --out "${OUT_DIR}/deepscaler.jsonl" --tokenizer "${MODEL}" ${PREPARE_ARGS:-}
"${PYTHON}" -m fgrpo_sim.verl.prepare_data "${OUT_DIR}/deepscaler.jsonl" --out-dir "${OUT_DIR}"
