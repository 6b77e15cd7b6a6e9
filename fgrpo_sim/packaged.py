"""Files the package ships beside its code, found wherever pip put it (importlib.resources, not the clone).

- `recipes_root()`: the training recipes, `fgrpo_sim/recipes/<model>/<arm>.yaml` (a clone's top-level `recipes`
  is a link to that folder, so the paths the docs print work in a clone too).
- `committed_result(name)`: the committed results the figures and docs read, `fgrpo_sim/results/NAME`. The
  commands that regenerate them write there (docs/population.md, docs/maze.md), so there is one copy.
- `cache_dir()`: what is built once per machine (the compiled sampler), not shipped.
- `resolve_recipe(value)`: a recipe named on the command line. The user's own file wins; otherwise the name
  is looked up among the shipped recipes, with or without the `recipes/` prefix the docs print, so
  `fgrpo llm train --config qwen2.5-7b/f-grpo.yaml` works from any folder.
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


def resolve_recipe(value: str | Path) -> Path:
    """The recipe file VALUE names: the path itself when it exists, else a shipped recipe of that name.

    A missing name keeps the user's path, so the error ("recipe not found: VALUE") names what they typed.
    """
    path = Path(value)
    if path.exists() or path.is_absolute():
        return path
    parts = PurePosixPath(path.as_posix()).parts
    if parts and parts[0] == RECIPES_PREFIX:
        parts = parts[1:]
    shipped = recipes_root().joinpath(*parts) if parts and ".." not in parts else None
    return shipped if shipped is not None and shipped.is_file() else path
