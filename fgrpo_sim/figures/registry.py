"""The figure registry behind `fgrpo figures`.

Each figure is two pure functions: `compute(options) -> data` and `draw(data) -> matplotlib Figure`,
so the numbers can be inspected (or cached, or tested) apart from the drawing. A figure module in
this package registers its figures with `add_figure(...)` at import time; `load_all()` imports every module here.
Figure modules must keep heavy imports (transformers, trl) inside their compute functions.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from fgrpo_sim.ownership import OutputFolder


@dataclass(frozen=True)
class FigureOptions:
    """Settings every compute function receives; figures ignore what does not concern them."""

    full: bool = False  # the paper's exact (slow) grid instead of the quick preset
    device: str = "auto"
    seed: int = 0
    progress: bool = True
    data_dir: Path | None = None  # where a figure may find/cache its results (e.g. simulation tables)
    yes: bool = False  # the user confirmed (--yes) a computation that would take days


@dataclass(frozen=True)
class FigureSpec:
    name: str
    description: str
    compute: Callable[[FigureOptions], Any]
    draw: Callable[[Any], Any]
    in_default_set: bool = True  # figures needing hours of compute can opt out of `fgrpo figures`
    # preflight(options) runs for every selected figure before any is computed; it raises ValueError
    # (one line, naming the command to run instead) when compute would start days of work unconfirmed
    preflight: Callable[[FigureOptions], None] | None = None
    # load(path) -> data: draw the user's own output file instead of computing (`fgrpo figures NAME --from FILE`);
    # a file that is not the right output is a one-line ValueError naming it and the column or row at fault
    load: Callable[[Path], Any] | None = None


FIGURES: dict[str, FigureSpec] = {}

# Modules of this package that are helpers, not figure definitions.
_NOT_FIGURE_MODULES = {"registry", "style", "from_file"}


def add_figure(name: str, description: str, compute, draw, *, in_default_set: bool = True, preflight=None,
               load=None) -> None:
    """Register a figure from its compute and draw functions (and an optional preflight check, and an optional
    loader of the user's own output file for --from)."""
    if name in FIGURES:
        raise ValueError(f"figure name {name!r} registered twice")
    FIGURES[name] = FigureSpec(name, description, compute, draw, in_default_set, preflight, load)


def load_all() -> dict[str, FigureSpec]:
    """Import every figure module of this package so that its figures register."""
    import fgrpo_sim.figures as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name not in _NOT_FIGURE_MODULES and not info.name.startswith("_"):
            importlib.import_module(f"{pkg.__name__}.{info.name}")
    return FIGURES


def figure_files(name: str) -> list[str]:
    """The files figure NAME is saved as."""
    return [f"{name}.png", f"{name}.pdf"]


def figure_folder(out_dir: str | Path, force: bool = False) -> OutputFolder:
    """`fgrpo figures --out`: an output folder under the overwrite rule (its manifest lists our figures)."""
    return OutputFolder(out_dir, "--out", force=force)


def save_figure(fig, out_dir: str | Path, name: str, dpi: int = 150, *, force: bool = False) -> list[Path]:
    """Save `fig` as NAME.png (at `dpi`) and NAME.pdf in `out_dir`, each written atomically; a file of
    that name which this tool did not write there is refused unless `force` (ownership.OutputFolder)."""
    folder = figure_folder(out_dir, force)
    files = figure_files(name)
    folder.check(files)  # both before either is written
    paths = []
    for file in files:
        ext = file.rsplit(".", 1)[1]
        target = Path(out_dir) / file
        with folder.path(file) as tmp:
            # no creation date and no matplotlib version in the file: regenerating an unchanged figure leaves
            # the file byte for byte unchanged (tests/test_figure_determinism.py)
            metadata = {"CreationDate": None, "Creator": None, "Producer": None} if ext == "pdf" else {"Software": None}
            fig.savefig(tmp, dpi=dpi, bbox_inches="tight", format=ext, metadata=metadata)
        paths.append(target)
    return paths
