"""docs/recipes.md: the big table is generated (`fgrpo llm recipes --markdown`); the prose's settings come from
the recipe YAMLs as training resolves them, the accelerate configs, the disk formula of recipe_index and the
code's constants (lr_multiplier, the dynamics defaults, the Llama template date)."""

from __future__ import annotations

from functools import cache

from doc_census import Claim, Given
from doc_claims._llm_sources import base, config_default, gpu_gb, m_gamma, node_gpus, paper_gpus, recipe, sci



@cache
def _disk() -> dict[str, float]:
    """recipe_index's disk arithmetic for one float32 parameter (P = 1e-9 billion, b = 4 bytes)."""
    from fgrpo_sim.llm.training.recipe_index import DTYPE_BYTES, estimate_disk_gb

    return estimate_disk_gb(1.0, checkpoints=1, weight_bytes=DTYPE_BYTES["float32"]) | {"b": DTYPE_BYTES["float32"]}


def _disk_per_model() -> str:
    """`fgrpo llm recipes --json`'s disk_gb, one value per model (the sentence says so: checked here)."""
    from doc_claims._llm_sources import recipe_rows

    disk = {}
    for r in recipe_rows():
        disk.setdefault(r["model"], set()).add(r["disk_gb"])
    assert all(len(values) == 1 for values in disk.values()), disk
    (qwen,), (llama,), (qwen3,) = disk["qwen2.5-7b"], disk["llama-3.2-3b-instruct"], disk["qwen3-4b-base"]
    return f"{qwen} GB per Qwen2.5-7B run, {llama} per Llama-3.2-3B, {qwen3} per Qwen3-4B"


def _ks(n: int) -> str:
    from fgrpo_sim.llm.training.dynamics import default_ks

    ks = default_ks(n)
    return f"{ks[0]}, {ks[1]}, {ks[2]}, ..., {ks[-1]}"


def _ema() -> float:
    from fgrpo_sim.figures.llm_dynamics import PAPER_EMA

    return PAPER_EMA


def _llama_date() -> str:
    from fgrpo_sim.llm.evaluation.prompts import LLAMA_KNOWLEDGE_DATE

    return LLAMA_KNOWLEDGE_DATE


CLAIMS = [
    Claim(lambda: f"Paper: {paper_gpus()} H100 {gpu_gb()} GB", source="recipes/verl/common.sh NNODES x GPUS_PER_NODE; "
          "fgrpo_sim.llm.training.launch.GPU_MEMORY_BYTES"),
    Claim(lambda: f"recipes: {node_gpus()} GPUs, bf16", source="recipes/accelerate/{zero3,fsdp}.yaml num_processes"),
    Claim(lambda: f"AdamW ({base('adam_beta1')}, {base('adam_beta2')}), wd {base('weight_decay')} (not biases, norms), "
                  f"{base('num_train_epochs'):g} epochs, {base('batch_prompts')} prompts x N = "
                  f"{base('num_generations')}, "
                  f"mini-batch {base('mini_batch_prompts')}, {base('num_iterations')} PPO epoch, top-p {base('top_p')}",
          source="recipes/qwen2.5-7b/base.yaml"),
    Claim(lambda: f"no top-k, {base('max_completion_length')} tokens, reward {base('reward_correct'):g}/"
                  f"{base('reward_wrong'):g}",
          source="recipes/qwen2.5-7b/base.yaml top_k, max_completion_length, reward_*"),
    Claim(lambda: f"A resumable checkpoint is {_disk()['checkpoint_gb'] / _disk()['weights_gb']:g} x P x b "
                  f"(P parameters, b = {_disk()['b']} bytes",
          source="recipe_index.estimate_disk_gb checkpoint_gb / weights_gb; DTYPE_BYTES['float32']"),
    Claim(lambda: f"(S + 1) x P x b + {(_disk()['run_gb'] - 2 * _disk()['weights_gb']) / _disk()['weights_gb']:g} "
                  f"x P x b x R",
          source="recipe_index.estimate_disk_gb run_gb at S = R = 1: (S + 1) x P x b + the moments"),
    Claim(_disk_per_model, source="`fgrpo llm recipes --json` disk_gb (recipe_index.estimate_disk_gb) per model"),
    Claim(lambda: f"(Qwen2.5-7B, N = {base('num_generations')}, gamma = 0)",
          source="recipes/qwen2.5-7b/base.yaml num_generations"),
    Claim(lambda: f"`learning_rate: {sci(recipe('qwen2.5-7b/grpo-low-lr.yaml')['learning_rate'])}`|"
                  f"{sci(base('learning_rate'))} x m_0.5, m_0.5 = {m_gamma(0.5):.3f}",
          source="recipes/qwen2.5-7b/{grpo-low-lr,base}.yaml learning_rate; fgrpo_sim.theory.lr_multiplier(0.5)"),
    Claim(lambda: f"(sweep {sci(recipe('qwen2.5-7b/grpo-entropy-1e-4.yaml')['entropy_coef'])})|loss",
          source="recipes/qwen2.5-7b/grpo-entropy-1e-4.yaml entropy_coef"),
    Claim(lambda: f"(sweep {sci(recipe('qwen2.5-7b/grpo-kl-1e-2.yaml')['beta'])})|beta",
          source="recipes/qwen2.5-7b/grpo-kl-1e-2.yaml beta"),
    Claim(lambda: f"{sci(recipe('qwen2.5-7b/ds-grpo.yaml')['ds_gamma_correct'])} is our start",
          source="recipes/qwen2.5-7b/ds-grpo.yaml ds_gamma_correct"),
    Claim(lambda: f"{recipe('qwen3-4b-base/base.yaml')['max_completion_length']:,}-token responses",
          source="recipes/qwen3-4b-base/base.yaml max_completion_length"),
    Claim(lambda: f'"Cutting Knowledge Date: {_llama_date()}" header',
          source="fgrpo_sim.llm.evaluation.prompts.LLAMA_KNOWLEDGE_DATE"),
    Claim(lambda: f"optimizer steps (paper: {config_default('dynamics_every')}), and step 0",
          source="FocalGRPOConfig.dynamics_every's default"),
    Claim(lambda: f"paper: {config_default('dynamics_num_generations')}; pass@k for k = "
                  f"{_ks(config_default('dynamics_num_generations'))}",
          source="FocalGRPOConfig.dynamics_num_generations's default; dynamics.default_ks"),
    Claim(lambda: f"EMA {_ema()}", source="fgrpo_sim.figures.llm_dynamics.PAPER_EMA"),
]

GIVEN = [
    Given("Gai et al. 2025", why="a citation's year"),
]
