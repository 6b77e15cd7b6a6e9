"""Sources shared by the LLM pages' claims (llm.md, recipes.md, verl.md): the TRL recipes as `fgrpo llm train`
resolves them, the verl scripts' Hydra keys as they pass them, the cost estimator of `fgrpo llm recipes`.

Every helper reads the shipped files (fgrpo_sim/recipes/...), so a page quoting a setting fails when the
recipe or script changes, and vice versa. Cached: the TRL import behind the recipe loader is paid once."""

from __future__ import annotations

import re
import shlex
from functools import cache
from typing import Any

from doc_census import ROOT

RECIPES = ROOT / "fgrpo_sim" / "recipes"
VERL = RECIPES / "verl"


@cache
def recipe(path: str) -> dict[str, Any]:
    """A TRL recipe (path under fgrpo_sim/recipes/), `extends` resolved and every key cast, as training reads it."""
    from fgrpo_sim.llm.training.recipe import cast_recipe, load_recipe_sources

    return cast_recipe(*load_recipe_sources(RECIPES / path))


@cache
def recipe_rows() -> tuple[dict[str, Any], ...]:
    """The rows `fgrpo llm recipes` prints (arm, N, the GPU-hour estimate), from the same code."""
    from fgrpo_sim.llm.training.recipe_index import arm_row, recipe_index

    return tuple(arm_row(arm) for arm in recipe_index())


def row(model: str, arm: str) -> dict[str, Any]:
    return next(r for r in recipe_rows() if r["model"] == model and r["arm"] == arm)


def sci(value: float) -> str:
    """1e-06 as a page writes it: 1e-6 (6.8e-07: 6.8e-7)."""
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa.removesuffix('.0')}e{int(exponent)}"


# --- verl scripts -------------------------------------------------------------------------------------------

def _uncommented(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


@cache
def _common() -> tuple[dict[str, str], dict[str, list[str]]]:
    """common.sh's environment defaults (MODEL=${MODEL:-...}) and its arrays (PAPER_ARGS, GRPO_LOSS, ...)."""
    text = _uncommented((VERL / "common.sh").read_text())
    env = dict(re.findall(r"^(\w+)=\$\{\1:-([^}]*)\}$", text, re.M))
    arrays = {name: shlex.split(body) for name, body in re.findall(r"^(\w+)=\((.*?)\)$", text, re.M | re.S)}
    return env, arrays


def verl_env(name: str) -> str:
    """The default of an environment knob of the scripts (NNODES, GPUS_PER_NODE, N, ...)."""
    return _common()[0][name]


@cache
def verl_keys(script: str) -> dict[str, str]:
    """The Hydra overrides `recipes/verl/SCRIPT.sh` passes to verl, later ones winning (as Hydra reads them)."""
    env, arrays = _common()
    text = _uncommented((VERL / f"{script}.sh").read_text()).replace("\\\n", " ")
    launch = re.search(r"^launch (.*)$", text, re.M).group(1)
    tokens = list(arrays["PAPER_ARGS"])
    for token in shlex.split(launch):
        array = re.fullmatch(r"\$\{(\w+)\[@\]\}", token)
        tokens += arrays[array.group(1)] if array else [token]
    keys = {}
    for token in tokens:
        if "=" in token:
            key, value = token.split("=", 1)
            keys[key] = re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], value)
    return keys


def verl_actor(script: str, key: str) -> str:
    return verl_keys(script)[f"actor_rollout_ref.actor.{key}"]


def config_default(name: str) -> Any:
    """A field's default in FocalGRPOConfig (what a recipe gets when it does not set the key)."""
    import dataclasses

    from fgrpo_sim.llm.training.config import FocalGRPOConfig

    return next(f.default for f in dataclasses.fields(FocalGRPOConfig) if f.name == name)


def paper_gpus() -> int:
    """The paper's GPUs as the verl scripts launch them: NNODES x GPUS_PER_NODE (2 x 8 = 16 H100)."""
    return int(verl_env("NNODES")) * int(verl_env("GPUS_PER_NODE"))


def base(key: str) -> Any:
    """A value of recipes/qwen2.5-7b/base.yaml, the paper's shared settings every recipe extends."""
    return recipe("qwen2.5-7b/base.yaml")[key]


def gpu_gb() -> int:
    """The GPU memory the launch arithmetic budgets for (an 80 GB H100)."""
    from fgrpo_sim.llm.training.launch import GPU_MEMORY_BYTES

    return GPU_MEMORY_BYTES // 10**9


def m_gamma(gamma: float) -> float:
    from fgrpo_sim.theory import lr_multiplier

    return float(lr_multiplier(gamma))


@cache
def node_gpus() -> int | set[int]:
    """The GPUs of one node as both accelerate configs launch them (a set when they disagree: no claim matches)."""
    import yaml

    counts = {yaml.safe_load((RECIPES / "accelerate" / f"{name}.yaml").read_text())["num_processes"]
              for name in ("zero3", "fsdp")}
    return counts.pop() if len(counts) == 1 else counts
