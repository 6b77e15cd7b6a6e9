"""docs/verl.md: the scripts' settings from the Hydra keys recipes/verl/*.sh pass (parsed, common.sh included),
the TRL side from the recipes and method presets, the focal keys' defaults from fgrpo_sim.verl."""

from __future__ import annotations

import inspect

from doc_census import Claim, Given
from doc_claims._llm_sources import recipe, recipe_rows, sci, verl_actor, verl_env, verl_keys


def _gpus() -> tuple[int, int]:
    keys = verl_keys("grpo")
    return int(keys["trainer.nnodes"]), int(keys["trainer.n_gpus_per_node"])


def _gammas(base: str) -> str:
    return f"{float(verl_keys(base)['algorithm.focal_gamma']):g} / {verl_keys('f-' + base)['algorithm.focal_gamma']}"


def _clips(script: str) -> str:
    low, high = verl_actor(script, "clip_ratio_low"), verl_actor(script, "clip_ratio_high")
    return f"`clip_ratio_low={low} clip_ratio_high={high}`"


def _steps_of() -> int:
    """verl steps are generation batches of train_batch_size prompts, each split into mini-batches."""
    keys = verl_keys("grpo")
    return int(keys["data.train_batch_size"]) // int(keys["actor_rollout_ref.actor.ppo_mini_batch_size"])


def _cispo_clip() -> str:
    from fgrpo_sim.llm.training.config import METHOD_PRESETS

    low, high = float(verl_actor("cispo", "clip_ratio_low")), float(verl_actor("cispo", "clip_ratio_high"))
    return f"[{1 - low:g}, {1 + high:g}] both sides in verl, {METHOD_PRESETS['cispo']['epsilon_high']:g} above in TRL"


def _reward_values() -> str:
    from fgrpo_sim.verl.reward import compute_score

    defaults = inspect.signature(compute_score).parameters
    return f"math-verify, {defaults['reward_correct'].default} / {defaults['reward_wrong'].default})"


def _monitor_rho() -> float:
    from fgrpo_sim.verl.estimators import DEFAULTS

    return DEFAULTS["focal_monitor_rho"]


def _table2_ns() -> str:
    return ", ".join(str(n) for n in sorted(r["num_generations"] for r in recipe_rows() if r["paper"] == "Table 2"))


CLAIMS = [
    Claim(lambda: f"Ray, {_gpus()[0] * _gpus()[1]} H100; App. L.2",
          source="recipes/verl/common.sh NNODES x GPUS_PER_NODE"),
    Claim(lambda: f"run: {_gpus()[0]} nodes x {_gpus()[1]} GPUs, Ray cluster up first",
          source="recipes/verl/common.sh trainer.nnodes, trainer.n_gpus_per_node"),
    Claim(lambda: f"`loss_mode=vanilla`, {_clips('grpo')}|{_gammas('grpo')}|",
          source="recipes/verl/{grpo,f-grpo}.sh clip_ratio_*, algorithm.focal_gamma"),
    Claim(lambda: f"vanilla, {_clips('dapo')} (clip-higher only, no dynamic sampling or overlong shaping)|"
                  f"{_gammas('dapo')}|", source="recipes/verl/{dapo,f-dapo}.sh clip_ratio_*, algorithm.focal_gamma"),
    Claim(lambda: f"`loss_mode=cispo`, {_clips('cispo')}|{_gammas('cispo')}|",
          source="recipes/verl/{cispo,f-cispo}.sh clip_ratio_*, algorithm.focal_gamma"),
    Claim(lambda: f"(N = {_table2_ns()}; Table 2)",
          source="the Table 2 arms of `fgrpo llm recipes` (group-size/*.yaml)"),
    Claim(lambda: f"`actor.optim.lr={verl_actor('grpo-low-lr', 'optim.lr')}` (TRL's "
                  f"{sci(recipe('qwen2.5-7b/base.yaml')['learning_rate'])} x m_0.5)",
          source="recipes/verl/grpo-low-lr.sh, recipes/qwen2.5-7b/base.yaml learning_rate"),
    Claim(lambda: f"(mini-batch {verl_actor('grpo', 'ppo_mini_batch_size')} in prompts, "
                  f"{verl_actor('grpo', 'optim.lr_warmup_steps')} warmup steps",
          source="recipes/verl/common.sh ppo_mini_batch_size, lr_warmup_steps"),
    Claim(lambda: f"`rollout.name=sglang`, {_gpus()[0]} nodes x {_gpus()[1]} GPUs", source="recipes/verl/common.sh"),
    Claim(_reward_values, source="fgrpo_sim.verl.reward.compute_score's reward_correct / reward_wrong defaults"),
    Claim(lambda: f"saves every rows // {verl_keys('grpo')['data.train_batch_size']} steps",
          source="recipes/verl/common.sh data.train_batch_size"),
    Claim(lambda: f"`focal_monitor_rho` ({_monitor_rho()})", source="fgrpo_sim.verl.estimators.DEFAULTS"),
    Claim(lambda: f"(warmup: TRL's {recipe('qwen2.5-7b/base.yaml')['warmup_steps']} updates = verl's "
                  f"{verl_actor('grpo', 'optim.lr_warmup_steps')} steps of {_steps_of()})",
          source="recipes/qwen2.5-7b/base.yaml warmup_steps; common.sh lr_warmup_steps, train_batch_size / "
                 "ppo_mini_batch_size"),
    Claim(_cispo_clip, source="recipes/verl/cispo.sh clip_ratio_low/high; METHOD_PRESETS['cispo'] (TRL)"),
    Claim(lambda: f"one {verl_env('GPUS_PER_NODE')}-GPU node", source="recipes/verl/common.sh GPUS_PER_NODE"),
]

GIVEN: list[Given] = []
