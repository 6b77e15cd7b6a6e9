"""F-GRPO / F-DAPO / F-CISPO on TRL: trainer, config, math rewards, data loaders and evaluation.

Attributes are imported lazily, so `import fgrpo_sim.llm` does not pull in TRL or transformers.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "FocalGRPOConfig": "fgrpo_sim.llm.config",
    "METHOD_PRESETS": "fgrpo_sim.llm.config",
    "PAPER_SYSTEM_PROMPT": "fgrpo_sim.llm.config",
    "FocalGRPOTrainer": "fgrpo_sim.llm.trainer",
    "check_trl_version": "fgrpo_sim.llm.trainer",
    "train_recipe": "fgrpo_sim.llm.run",
    "prepare_training": "fgrpo_sim.llm.run",
    "math_reward": "fgrpo_sim.llm.rewards",
    "MathVerifier": "fgrpo_sim.llm.rewards",
    "prepare_deepscaler": "fgrpo_sim.llm.data",
    "load_benchmark": "fgrpo_sim.llm.data",
    "grade": "fgrpo_sim.llm.grading",
    "grade_detailed": "fgrpo_sim.llm.grading",
    "load_ood_benchmark": "fgrpo_sim.llm.ood_data",
    "prompt_spec": "fgrpo_sim.llm.prompts",
    "detect_family": "fgrpo_sim.llm.prompts",
    "build_tiny": "fgrpo_sim.llm.tiny",
    "build_char_tokenizer": "fgrpo_sim.llm.tiny",
    "build_tiny_qwen2": "fgrpo_sim.llm.tiny",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'fgrpo_sim.llm' has no attribute {name!r}")
