"""Files the package ships beside its code, found wherever pip put it (importlib.resources, not the clone).

- `recipes_root()`: the training recipes, `fgrpo_sim/recipes/<model>/<arm>.yaml` (a clone's top-level `recipes`
  is a link to that folder, so the paths the docs print work in a clone too).
- `committed_result(name)`: the committed results the figures and docs read, `fgrpo_sim/results/NAME`. The
  commands that regenerate them write there (docs/population.md, docs/maze.md), so there is one copy.
- `cache_dir()`: what is built once per machine (the compiled sampler), not shipped.
- `resolve_shipped(value)`: a recipe or data file named on the command line (`--config`, `--data`, prepare-data's
  SOURCE). The user's own file wins; otherwise the name is looked up among the shipped files, with or without
  the `recipes/` prefix the docs print, so `fgrpo llm train --config qwen2.5-7b/f-grpo.yaml` and
  `fgrpo llm eval --data tiny/arith.jsonl` work from any folder. `did_you_mean(value)`: the closest shipped name
  (difflib) for the error of a name that is neither.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path, PurePosixPath

#: The prefix the docs and `fgrpo llm recipes` print before a shipped recipe's name.
RECIPES_PREFIX = "recipes"


def _package_folder(name: str) -> Path:
    # A wheel installs as plain files, so the Traversable is a real folder; a zipped install is not supported
    # (setuptools builds no zip-safe egg of this package).
    return Path(str(files("fgrpo_sim").joinpath(name)))


def cache_dir() -> Path:
    """Where the package keeps what it builds once per machine (the compiled sampler, in a private folder):
    $FGRPO_CACHE_DIR, else $XDG_CACHE_HOME or ~/.cache, then fgrpo-sim."""
    base = os.environ.get("FGRPO_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fgrpo-sim"


def recipes_root() -> Path:
    """The folder of shipped recipes."""
    return _package_folder("recipes")


def committed_result(name: str) -> Path:
    """A committed result file shipped with the package (it may be absent only in a broken install)."""
    return _package_folder("results") / name


def _shipped_parts(value: str | Path) -> tuple[str, ...]:
    """VALUE's path parts below the shipped folder (the docs' `recipes/` prefix dropped)."""
    parts = PurePosixPath(Path(value).as_posix()).parts
    return parts[1:] if parts and parts[0] == RECIPES_PREFIX else parts


def resolve_shipped(value: str | Path) -> Path:
    """The recipe or data file VALUE names: the path itself when it exists, else a shipped file of that name.

    A missing name keeps the user's path, so the error ("recipe not found: VALUE") names what they typed.
    """
    path = Path(value)
    if path.exists() or path.is_absolute():
        return path
    parts = _shipped_parts(path)
    shipped = recipes_root().joinpath(*parts) if parts and ".." not in parts else None
    return shipped if shipped is not None and shipped.is_file() else path


def did_you_mean(value: str | Path) -> str:
    """"; did you mean NAME?" for the shipped file (same suffix) whose name is closest to VALUE, else ""."""
    import difflib

    root, suffix = recipes_root(), Path(value).suffix
    names = sorted(p.relative_to(root).as_posix() for p in root.rglob(f"*{suffix}") if p.is_file())
    close = difflib.get_close_matches("/".join(_shipped_parts(value)), names, n=1, cutoff=0.6)
    if not close:
        return ""
    typed_prefix = PurePosixPath(Path(value).as_posix()).parts[:1] == (RECIPES_PREFIX,)
    return f"; did you mean {RECIPES_PREFIX + '/' if typed_prefix else ''}{close[0]}?"
