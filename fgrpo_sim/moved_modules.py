"""Old module paths keep importing after a move (issue 23): `fgrpo_sim.llm.config` is still the config.

A finder rather than stub files at the old paths, so that no file sits where the moved one was and git
follows each move when merging branches that edited the old file. An old path imports as the very module
object of its new path, not a copy of its names: code that monkeypatches
`fgrpo_sim.sim.categorical_run.simulate_chunk` or imports a private helper from an old path keeps working.
A module that was split in two (`fgrpo_sim.llm.data`) imports as a module that looks each name up in its
parts, in order. Package code itself uses the new paths only (tests/test_import_graph.py).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types

#: old path -> new path, or the new paths of the parts of a split module (names looked up in that order)
MOVED_MODULES: dict[str, str | tuple[str, ...]] = {
    # the categorical engine became the subpackage sim.categorical
    "fgrpo_sim.sim.categorical_config": "fgrpo_sim.sim.categorical.config",
    "fgrpo_sim.sim.categorical_native": "fgrpo_sim.sim.categorical.native",
    "fgrpo_sim.sim.categorical_run": "fgrpo_sim.sim.categorical.run",
    "fgrpo_sim.sim.categorical_study": "fgrpo_sim.sim.categorical.study",
    "fgrpo_sim.sim.sampling": "fgrpo_sim.sim.categorical.sampling",
    # the LLM half became two rooms, training and evaluation, over the shared rewards, hub and tiny
    **{f"fgrpo_sim.llm.{name}": f"fgrpo_sim.llm.training.{name}" for name in (
        "config", "trainer", "controls", "launch", "recipe", "recipe_index", "run", "dynamics", "metrics_log")},
    **{f"fgrpo_sim.llm.{name}": f"fgrpo_sim.llm.evaluation.{name}" for name in (
        "ood_data", "prompts", "grading", "evaluate", "report", "diagnostics")},
    "fgrpo_sim.llm.data": ("fgrpo_sim.llm.training.data", "fgrpo_sim.llm.evaluation.data"),
    # the rehearsal drives the command line, so it lives beside it
    "fgrpo_sim.llm.rehearsal": "fgrpo_sim.rehearsal.driver",
    "fgrpo_sim.llm.rehearsal_checks": "fgrpo_sim.rehearsal.checks",
    "fgrpo_sim.llm.rehearsal_data": "fgrpo_sim.rehearsal.inputs",
    "fgrpo_sim.llm.rehearsal_probe": "fgrpo_sim.rehearsal.probe",
}


def _split_module(name: str, parts: tuple[str, ...]) -> types.ModuleType:
    modules = [importlib.import_module(p) for p in parts]
    module = types.ModuleType(name, f"Old path of a split module: its names now live in {', '.join(parts)}.")

    def __getattr__(attr: str):
        for part in modules:
            if hasattr(part, attr):
                return getattr(part, attr)
        raise AttributeError(f"module {name!r} (now {', '.join(parts)}) has no attribute {attr!r}")

    module.__getattr__ = __getattr__
    module.__all__ = sorted({n for m in modules for n in getattr(m, "__all__", [k for k in vars(m) if not k.startswith("_")])})
    return module


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED_MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None  # a placeholder; exec_module swaps in the real module

    def exec_module(self, module):
        # the import system returns whatever sys.modules holds under the name once this returns
        target = MOVED_MODULES[module.__name__]
        if isinstance(target, str):
            sys.modules[module.__name__] = importlib.import_module(target)
        else:
            sys.modules[module.__name__] = _split_module(module.__name__, target)


def install() -> None:
    """Put the finder last on sys.meta_path (once): real files are always found first."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
