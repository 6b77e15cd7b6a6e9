"""docs/llm.md: the method presets and config defaults from fgrpo_sim.llm.training.config, the paper's settings
from the recipe YAMLs, the launch layout from base.yaml, the cost from the estimator `fgrpo llm recipes` uses
(recipe_index.estimate_gpu_hours), m_gamma from fgrpo_sim.theory.lr_multiplier."""

from __future__ import annotations

import inspect
from functools import cache

from doc_census import Claim, Given
from doc_claims._llm_sources import (base, config_default, gpu_gb, m_gamma, node_gpus, paper_gpus, recipe, recipe_rows,
                                     row, sci, verl_actor)


def _preset(method: str, key: str):
    from fgrpo_sim.llm.training.config import METHOD_PRESETS

    return METHOD_PRESETS[method][key]


def _max_prompt_tokens() -> int:
    from fgrpo_sim.llm.training.data import prepare_deepscaler

    return inspect.signature(prepare_deepscaler).parameters["max_prompt_tokens"].default


def _m(gamma: float) -> str:
    value = m_gamma(gamma)
    return f"{value:.3f}" if gamma == 0.5 else f"{value:.4g}"  # 0.679 as App. N prints it; 0.5, 0.3125 are exact


def _math_reward() -> str:
    from fgrpo_sim.llm.rewards import math_reward

    return f"{math_reward.reward_correct} or {math_reward.reward_wrong}"


def _bytes_per_parameter() -> int:
    """AdamW training in TRL 1.16's default float32: weights, gradients and the two moments, each 4 bytes."""
    from fgrpo_sim.llm.training.recipe_index import DTYPE_BYTES

    return (1 + 1 + 2) * DTYPE_BYTES["float32"]


def _group_size_layout() -> str:
    """batch_prompts / mini_batch_prompts of every Table 2 recipe (one pair when the sweep keeps them)."""
    pairs = sorted({(recipe(r["recipe"].removeprefix("recipes/"))["batch_prompts"],
                     recipe(r["recipe"].removeprefix("recipes/"))["mini_batch_prompts"])
                    for r in recipe_rows() if r["paper"] == "Table 2"})
    return "; ".join(f"{a} / {b}" for a, b in pairs)


@cache
def _cost() -> dict[str, float]:
    """The estimator's split for the N = 8 Qwen2.5-7B GRPO recipe, with the recipe's own values (as arm_row)."""
    from fgrpo_sim.llm.training.recipe_index import MODEL_PARAMS_B, estimate_gpu_hours

    values = recipe("qwen2.5-7b/grpo.yaml")
    return estimate_gpu_hours(MODEL_PARAMS_B[values["model"]], values["num_generations"],
                              values["max_completion_length"], epochs=values["num_train_epochs"],
                              with_reference=values["beta"] != 0) | {"n": values["num_generations"]}


def _table1_qwen() -> str:
    runs = [r["est_gpu_h"] for r in recipe_rows() if r["model"] == "qwen2.5-7b" and r["paper"].startswith("Table 1")]
    count = {6: "six"}.get(len(runs), str(len(runs)))
    return f"about {round(sum(runs), -2):,.0f} H100-hours for the {count} runs of Table 1"


CLAIMS = [
    Claim(lambda: f"drops prompts over {_max_prompt_tokens()} tokens", source="prepare_deepscaler's max_prompt_tokens"),
    Claim(lambda: f"|{_preset('grpo', 'epsilon')}|{_preset('grpo', 'epsilon_high') or 'unset'}: TRL clips at "
                  "`epsilon`|",
          source="METHOD_PRESETS['grpo'] (TRL's GRPOConfig defaults; epsilon_high None)"),
    Claim(lambda: f"|dapo|`dapo`|{_preset('dapo', 'epsilon')}|{_preset('dapo', 'epsilon_high')}|",
          source="METHOD_PRESETS['dapo']"),
    Claim(lambda: f"|{_preset('cispo', 'epsilon_high')}: the paper's [1 - {verl_actor('cispo', 'clip_ratio_low')}, "
                  f"1 + {verl_actor('cispo', 'clip_ratio_high')}] as TRL's cap",
          source="METHOD_PRESETS['cispo'] epsilon_high; recipes/verl/common.sh CISPO_LOSS clip_ratio_low/high"),
    Claim(lambda: f"the paper's wd {base('weight_decay')}, constant LR {sci(base('learning_rate'))} after "
                  f"{base('warmup_steps')} warmup steps", source="recipes/qwen2.5-7b/base.yaml"),
    Claim(lambda: f"`focal_monitor_rho` ({config_default('focal_monitor_rho')})",
          source="FocalGRPOConfig.focal_monitor_rho's default"),
    Claim(lambda: f"`fgrpo theory lr-multiplier --gamma G`: {_m(0.5)} at 0.5, {_m(1)} at 1, {_m(2)} at 2",
          source="fgrpo_sim.theory.lr_multiplier(0.5, 1, 2)"),
    Claim(lambda: f"`\\fbox{{}}`, {_math_reward()}", source="fgrpo_sim.llm.rewards.math_reward.reward_correct/_wrong"),
    Claim(lambda: f"(the paper's {paper_gpus()} H100s)", source="recipes/verl/common.sh NNODES x GPUS_PER_NODE"),
    Claim(lambda: f"`generation_batch_size`|{base('batch_prompts')} prompts x N|",
          source="recipes/qwen2.5-7b/base.yaml batch_prompts"),
    Claim(lambda: f"`gradient_accumulation_steps`|{base('mini_batch_prompts')} x N / (per-device",
          source="recipes/qwen2.5-7b/base.yaml mini_batch_prompts"),
    Claim(lambda: f"`steps_per_generation`|{base('batch_prompts') // base('mini_batch_prompts')} x accumulation|",
          source="recipes/qwen2.5-7b/base.yaml batch_prompts / mini_batch_prompts"),
    Claim(lambda: f"`updates_per_generation`|{base('batch_prompts')} / {base('mini_batch_prompts')} (x",
          source="recipes/qwen2.5-7b/base.yaml"),
    Claim(lambda: f"floor(rows / {base('batch_prompts')}), 4x that",
          source="recipes/qwen2.5-7b/base.yaml batch_prompts"),
    Claim(lambda: f"The group-size sweep keeps {_group_size_layout()} (our reading)",
          source="recipes/qwen2.5-7b/group-size/*.yaml batch_prompts / mini_batch_prompts"),
    Claim(lambda: f"warned about above {gpu_gb()} GB in float32",
          source="launch.GPU_MEMORY_BYTES (LogitsMemory.warning)"),
    Claim(lambda: f"~{_bytes_per_parameter()} bytes per parameter", source="recipe_index.DTYPE_BYTES['float32'] x "
          "(weights, gradients, two AdamW moments)"),
    Claim(lambda: f"one node of {node_gpus()} x {gpu_gb()} GB minimum",
          source="recipes/accelerate/zero3.yaml num_processes; launch.GPU_MEMORY_BYTES"),
    Claim(lambda: f"about {row('qwen2.5-7b', 'grpo')['est_gpu_h']} H100-hours per N = {_cost()['n']} Qwen2.5-7B run "
                  f"({_cost()['generation_gpu_h']:.0f} generating, {_cost()['training_gpu_h']:.0f} training)",
          source="recipe_index.estimate_gpu_hours for recipes/qwen2.5-7b/grpo.yaml (the recipes table's row)"),
    Claim(lambda: f"about {_cost()['gpu_h'] / paper_gpus():.0f} hours on {paper_gpus()} H100s",
          source="recipe_index.estimate_gpu_hours / the paper's GPUs (recipes/verl/common.sh)"),
    Claim(_table1_qwen, source="the sum of `fgrpo llm recipes`'s Qwen2.5-7B Table 1 rows"),
    Claim(lambda: f"N = {row('qwen2.5-7b', 'group-size/grpo-n32')['num_generations']} "
                  f"(about {row('qwen2.5-7b', 'group-size/grpo-n32')['est_gpu_h']:,})",
          source="`fgrpo llm recipes`'s row of recipes/qwen2.5-7b/group-size/grpo-n32.yaml"),
]

GIVEN = [
    Given("((R_w + R_c) / 2;", why="a definition: the midpoint of the two rewards"),
    Given("low `frac_active_groups` (say below 0.2)", why="an example threshold for the reader, not a computed one"),
    Given("Evaluation at n = 1024", why="the paper's samples per problem (Sec. 5), quoted; `fgrpo llm eval` "
          "defaults to 16"),
]
