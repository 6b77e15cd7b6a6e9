"""Training recipes: a YAML file of FocalGRPOConfig fields plus a few run keys, with command-line overrides.

Recipe keys (everything else must be a `FocalGRPOConfig` / `GRPOConfig` / `TrainingArguments` field):
    extends       path of a parent recipe (relative to this file); this file's keys win
    model         hub id, local folder, or "tiny" (the CPU smoke-test model of fgrpo_sim.llm.tiny)
    train_data    prepared JSONL (`fgrpo llm prepare-data`) or any file in the benchmark schema
    system_prompt system prompt prepended to each problem (default: the paper's)
    reward        "math" (math-verify on the last \\boxed{}, the paper's) or "math_last_number"
                  (falls back to the last number when there is no box; only for tiny smoke tests)
    model_seed    seed of the tiny model's initialisation (tiny only)
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from fgrpo_sim.llm.config import PAPER_SYSTEM_PROMPT

RUN_KEYS = {"model": None, "train_data": None, "system_prompt": PAPER_SYSTEM_PROMPT, "reward": "math", "model_seed": 0}
REWARDS = ("math", "math_last_number")


def load_recipe(path: str | Path, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The recipe's keys with `extends` resolved (parent first, child overrides)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"recipe not found: {path}")
    if path.resolve() in _chain:
        raise ValueError(f"recipe {path} extends itself (cycle: {' -> '.join(map(str, _chain))})")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"recipe {path} is not valid YAML: {exc}".replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise ValueError(f"recipe {path} must be a mapping of keys to values")
    parent = data.pop("extends", None)
    if parent is None:
        return data
    merged = load_recipe(path.parent / parent, _chain + (path.resolve(),))
    merged.update(data)
    return merged


def parse_overrides(args: list[str]) -> dict[str, Any]:
    """`--key value` / `--key=value` pairs (dashes or underscores); values parsed as YAML scalars."""
    import yaml

    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        token = args[i]
        if not token.startswith("--") or token == "--":
            raise ValueError(f"overrides must look like --field value or --field=value, got {token!r}")
        key, eq, value = token[2:].partition("=")
        if not eq:
            if i + 1 >= len(args) or args[i + 1].startswith("--"):
                raise ValueError(f"override --{key} needs a value")
            value = args[i + 1]
            i += 1
        i += 1
        try:
            out[key.replace("-", "_")] = yaml.safe_load(value) if value != "" else ""
        except yaml.YAMLError:
            out[key.replace("-", "_")] = value
    return out


def config_field_names() -> set[str]:
    from fgrpo_sim.llm.config import FocalGRPOConfig

    return {f.name for f in dataclasses.fields(FocalGRPOConfig) if f.init}


def split_recipe(recipe: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(run keys with defaults, FocalGRPOConfig keyword arguments); ValueError on unknown keys."""
    from fgrpo_sim.validation import check_choice

    fields = config_field_names()
    unknown = sorted(k for k in recipe if k not in fields and k not in RUN_KEYS)
    if unknown:
        raise ValueError(
            f"unknown recipe key {unknown[0]!r}: not a run key ({', '.join(RUN_KEYS)}) nor a FocalGRPOConfig field"
        )
    run = {k: recipe.get(k, default) for k, default in RUN_KEYS.items()}
    if not run["model"]:
        raise ValueError("recipe must set model (a hub id, a local folder, or 'tiny')")
    if not run["train_data"]:
        raise ValueError("recipe must set train_data (a prepared JSONL file; see `fgrpo llm prepare-data`)")
    check_choice("reward", run["reward"], REWARDS)
    config = {k: v for k, v in recipe.items() if k in fields}
    config.setdefault("output_dir", "runs/" + Path(str(run["model"])).name)
    return run, config
