"""F-GRPO / F-DAPO / F-CISPO on TRL, in two rooms over three shared modules:

    training/     config, trainer, controls (the paper's Table 3 baselines), launch arithmetic, recipes,
                  run (what `fgrpo llm train` does), the held-out pass@k callback, metrics log,
                  DeepScaleR preparation
    evaluation/   benchmark loaders (math and OOD), prompts, graders, evaluate (pass@k files), report,
                  diagnostics (dNLL_rare)
    rewards.py    the math-verify reward, shared: training rewards with it, evaluation grades with it
    hub.py        offline-safe hub checks;  tiny.py  tiny models and tokenizers, model loading

Training imports evaluation (the held-out pass@k callback evaluates), never the other way round. The
names below load lazily, so `import fgrpo_sim.llm` does not pull in TRL or transformers.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "FocalGRPOConfig": "fgrpo_sim.llm.training.config",
    "METHOD_PRESETS": "fgrpo_sim.llm.training.config",
    "PAPER_SYSTEM_PROMPT": "fgrpo_sim.llm.training.config",
    "FocalGRPOTrainer": "fgrpo_sim.llm.training.trainer",
    "check_trl_version": "fgrpo_sim.llm.training.trainer",
    "train_recipe": "fgrpo_sim.llm.training.run",
    "prepare_training": "fgrpo_sim.llm.training.run",
    "math_reward": "fgrpo_sim.llm.rewards",
    "MathVerifier": "fgrpo_sim.llm.rewards",
    "prepare_deepscaler": "fgrpo_sim.llm.training.data",
    "load_benchmark": "fgrpo_sim.llm.evaluation.data",
    "grade": "fgrpo_sim.llm.evaluation.grading",
    "grade_detailed": "fgrpo_sim.llm.evaluation.grading",
    "load_ood_benchmark": "fgrpo_sim.llm.evaluation.ood_data",
    "prompt_spec": "fgrpo_sim.llm.evaluation.prompts",
    "detect_family": "fgrpo_sim.llm.evaluation.prompts",
    "build_tiny": "fgrpo_sim.llm.tiny",
    "build_char_tokenizer": "fgrpo_sim.llm.tiny",
    "build_tiny_qwen2": "fgrpo_sim.llm.tiny",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'fgrpo_sim.llm' has no attribute {name!r}")
