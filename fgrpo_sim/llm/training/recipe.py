"""Training recipes: a YAML file of FocalGRPOConfig fields plus a few run keys, with command-line overrides.

Recipe keys (everything else must be a `FocalGRPOConfig` / `GRPOConfig` / `TrainingArguments` field):
    extends       path of a parent recipe (relative to this file); this file's keys win
    model         hub id, local folder, or "tiny" (the CPU smoke-test model of fgrpo_sim.llm.tiny)
    train_data    prepared JSONL (`fgrpo llm prepare-data`) or any file in the benchmark schema
    system_prompt system prompt prepended to each problem (default: the paper's)
    reward        "math" (math-verify on the last \\boxed{}, the paper's) or "math_last_number"
                  (falls back to the last number when there is no box; only for tiny smoke tests)
    model_seed    seed of the tiny model's initialisation (tiny only)
    batch_prompts       prompts per generation step (paper: 256); with mini_batch_prompts, `fgrpo llm train`
    mini_batch_prompts  prompts per optimizer update (paper: 64) derives generation_batch_size and
                        gradient_accumulation_steps from the world size (fgrpo_sim/llm/training/launch.py)

Every value (recipe or override) is cast to its field's type before anything runs: "abc" for an int
field, or NaN/inf for a float field, is a one-line ValueError naming the field.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

# the paper's prompt from where it is defined, not through config.py: that imports TRL, which listing recipes
# (`fgrpo llm recipes`) must not need (issue 46)
from fgrpo_sim.llm.evaluation.prompts import MATH_INSTRUCTION as PAPER_SYSTEM_PROMPT

RUN_KEYS = {"model": None, "train_data": None, "system_prompt": PAPER_SYSTEM_PROMPT, "reward": "math", "model_seed": 0,
            "batch_prompts": None, "mini_batch_prompts": None}
#: Types of the run keys, for `cast_value` (the config fields take theirs from FocalGRPOConfig).
RUN_KEY_TYPES = {"model": str, "train_data": str, "system_prompt": str | None, "reward": str, "model_seed": int,
                 "batch_prompts": int | None, "mini_batch_prompts": int | None}
REWARDS = ("math", "math_last_number")


def _read_yaml(path: Path) -> Any:
    """The YAML document in `path`: UTF-8 (a BOM is fine), no key twice in one mapping; errors name the file."""
    import yaml

    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ValueError(f"recipe {path} line {line}: not UTF-8 text (byte {exc.start})") from None
    try:
        return yaml.load(text, Loader=_unique_key_loader())
    except yaml.YAMLError as exc:
        raise ValueError(f"recipe {path} is not valid YAML: {exc}".replace("\n", " ")) from None
    except _DuplicateKey as exc:
        raise ValueError(f"recipe {path} line {exc.line}: key {exc.key!r} is given twice") from None


class _DuplicateKey(Exception):
    def __init__(self, key: Any, line: int):
        super().__init__(key)
        self.key, self.line = key, line


@functools.lru_cache(maxsize=1)
def _unique_key_loader():
    """Built on first use, so importing this module does not import yaml."""
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last silently)."""

    def construct_mapping(loader, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if isinstance(key, (str, int, float, bool)) or key is None:
                if key in seen:
                    raise _DuplicateKey(key, key_node.start_mark.line + 1)
                seen.add(key)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return Loader


def load_recipe(path: str | Path, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The recipe's keys with `extends` resolved (parent first, child overrides)."""
    return load_recipe_sources(path, _chain)[0]


def load_recipe_sources(path: str | Path, _chain: tuple[Path, ...] = ()) -> tuple[dict[str, Any], dict[str, Path]]:
    """(the recipe's keys with `extends` resolved, the file that set each key): errors can name the file."""
    path = Path(path)
    if not path.is_file():
        from fgrpo_sim.packaged import did_you_mean

        raise FileNotFoundError(f"recipe not found: {path}{did_you_mean(path)}")
    if path.resolve() in _chain:
        raise ValueError(f"recipe {path} extends itself (cycle: {' -> '.join(map(str, _chain))})")
    data = _read_yaml(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f"recipe {path} must be a mapping of keys to values")
    bad_key = next((k for k in data if not isinstance(k, str)), None)
    if bad_key is not None or None in data:
        raise ValueError(f"recipe {path}: keys must be field names, got {bad_key!r}")
    parent = data.pop("extends", None)
    sources = {key: path for key in data}
    if parent is None:
        return data, sources
    if not isinstance(parent, str) or not parent.strip():
        raise ValueError(f"recipe {path}: extends must be the path of a parent recipe, got {parent!r}")
    merged, parent_sources = load_recipe_sources(path.parent / parent, _chain + (path.resolve(),))
    merged.update(data)
    parent_sources.update(sources)
    return merged, parent_sources


def parse_overrides(args: list[str]) -> dict[str, Any]:
    """`--key value` / `--key=value` pairs (dashes or underscores), each value typed against its field.

    A value is read as a YAML scalar (numbers, true/false, null, [lists], {maps}) unless the field takes
    a string and YAML would read something else: `--save_strategy no` stays the string "no" (YAML reads
    it as false), `--output_dir 2024` stays "2024".
    """
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
        key = key.replace("-", "_")
        try:
            parsed = yaml.safe_load(value) if value != "" else ""
        except yaml.YAMLError:
            parsed = value
        out[key] = value if _keeps_string(key, parsed) else parsed
    return out


def _keeps_string(key: str, parsed: Any) -> bool:
    """True when `key` takes a string and the YAML reading of its command-line value is not of its type."""
    hint = _field_hints().get(key)
    if hint is None or isinstance(parsed, str):
        return False
    members = _union_members(hint)
    if not any(m is str or isinstance(m, type) and issubclass(m, str) for m in members):
        return False
    return not any(_admits(m, parsed) for m in members)


def _union_members(hint: Any) -> tuple[Any, ...]:
    import types
    import typing

    union = isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
    return typing.get_args(hint) if union else (hint,)


def _admits(member: Any, value: Any) -> bool:
    import typing

    if value is None:
        return member is type(None)
    origin = typing.get_origin(member) or member
    if not isinstance(origin, type) or isinstance(value, bool) and origin is not bool:
        return False
    return isinstance(value, origin)


def _field_hints() -> dict[str, Any]:
    import dataclasses
    import typing

    from fgrpo_sim.llm.training.config import FocalGRPOConfig

    hints = typing.get_type_hints(FocalGRPOConfig)
    names = {f.name for f in dataclasses.fields(FocalGRPOConfig) if f.init}
    return {**{k: v for k, v in hints.items() if k in names}, **RUN_KEY_TYPES}


def _scalar_kinds(hint: Any) -> tuple[set[type], bool]:
    """(the bool/int/float/str members of a type hint, whether None is allowed); empty for other types."""
    import types
    import typing

    members = typing.get_args(hint) if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union \
        else (hint,)
    allows_none = type(None) in members
    kinds = {m for m in members if m in (bool, int, float, str)}
    if any(m not in (bool, int, float, str, type(None)) for m in members):
        return set(), allows_none  # enums, dicts, lists, Literal: left to the config's own checks
    return kinds, allows_none


def cast_value(name: str, value: Any, hint: Any) -> Any:
    """`value` as the field's scalar type: ints from integral numbers or digit strings, finite floats, bools."""
    import math

    kinds, allows_none = _scalar_kinds(hint)
    members = _union_members(hint)
    if isinstance(value, bool) and bool not in members and any(
            m is str or isinstance(m, type) and issubclass(m, str) for m in members):
        raise ValueError(f"{name} must be a string, got {value!r}: YAML reads unquoted no/yes/on/off/true/false as "
                         f"true or false, so quote the word (e.g. {name}: \"no\")")
    if value is None:
        if allows_none or not kinds:
            return None
        kind = next(iter(kinds))
        raise ValueError(f"{name} must be {_KIND_TEXT.get(kind, kind.__name__)}, got null")
    if not kinds or type(value) in kinds or str in kinds and len(kinds) > 1:
        if float in kinds and isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        return value
    if kinds == {str}:
        if isinstance(value, (bool, int, float)):
            return str(value)  # e.g. --output_dir 2024 parsed as a YAML number
        raise ValueError(f"{name} must be a string, got {value!r}")
    if kinds == {bool}:
        raise ValueError(f"{name} must be true or false, got {value!r}")
    if int in kinds and float not in kinds:
        number = _as_number(value)
        if number is None or isinstance(number, bool) or not math.isfinite(number) or number != int(number):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        return int(number)
    if float in kinds:
        number = _as_number(value)
        if number is None or isinstance(number, bool):
            raise ValueError(f"{name} must be a number, got {value!r}")
        if not math.isfinite(number):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        return float(number) if kinds == {float} or not float(number).is_integer() else number
    return value


_KIND_TEXT = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _as_number(value: Any) -> float | int | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return None
    return None


def cast_recipe(recipe: dict[str, Any], sources: dict[str, Path] | None = None) -> dict[str, Any]:
    """Every known key cast to its type (`cast_value`); unknown keys are left for `split_recipe` to name.

    `sources` (from `load_recipe_sources`) maps a key to the file that set it, named in the error.
    """
    import dataclasses
    import typing

    from fgrpo_sim.llm.training.config import FocalGRPOConfig

    hints = typing.get_type_hints(FocalGRPOConfig)
    fields = {f.name for f in dataclasses.fields(FocalGRPOConfig) if f.init}
    out = {}
    for key, value in recipe.items():
        hint = RUN_KEY_TYPES.get(key, hints.get(key) if key in fields else None)
        try:
            out[key] = value if hint is None else cast_value(key, value, hint)
        except ValueError as exc:
            if sources and key in sources:
                raise ValueError(f"recipe {sources[key]}: {exc}") from None
            raise
    return out


def config_field_names() -> set[str]:
    from fgrpo_sim.llm.training.config import FocalGRPOConfig

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
