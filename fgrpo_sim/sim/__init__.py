"""Simulators of the paper's toy settings and Monte Carlo checks of its theory.

Categorical simulation (Sec. 5.1, App. J), the subpackage `categorical`: `CategoricalConfig`,
`CategoricalBatch` (the batched engine), `run_grid` (a grid of runs into a tidy, resumable table).
Theory checks: `estimate_tail_miss` and the other estimators of `montecarlo`, `run_checks` (what
`fgrpo check` runs). Names load lazily, so importing this package does not import torch.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

_EXPORTS = {
    "CategoricalConfig": "fgrpo_sim.sim.categorical.config",
    "CategoricalBatch": "fgrpo_sim.sim.categorical.engine",
    "METRICS": "fgrpo_sim.sim.categorical.engine",
    "run_grid": "fgrpo_sim.sim.categorical.run",
    "estimate_tail_miss": "fgrpo_sim.sim.montecarlo",
    "estimate_sampled_masses": "fgrpo_sim.sim.montecarlo",
    "estimate_unsampled_square_mass": "fgrpo_sim.sim.montecarlo",
    "run_checks": "fgrpo_sim.sim.checks",
    "sample_counts_native": "fgrpo_sim.sim.categorical.sampling",
    "sample_counts_torch": "fgrpo_sim.sim.categorical.sampling",
}

__all__ = sorted(_EXPORTS)

#: Module paths from before the categorical engine became a subpackage (issue 23) -> where they live now.
MOVED_MODULES = {
    "fgrpo_sim.sim.categorical_config": "fgrpo_sim.sim.categorical.config",
    "fgrpo_sim.sim.categorical_native": "fgrpo_sim.sim.categorical.native",
    "fgrpo_sim.sim.categorical_run": "fgrpo_sim.sim.categorical.run",
    "fgrpo_sim.sim.categorical_study": "fgrpo_sim.sim.categorical.study",
    "fgrpo_sim.sim.sampling": "fgrpo_sim.sim.categorical.sampling",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path as the very module object of its new path, not a copy of its names: code that
    monkeypatches `fgrpo_sim.sim.categorical_run.simulate_chunk` or imports a private helper from an old
    path keeps working. A finder rather than stub files at the old paths, so that no file sits where the
    moved one was and git follows the move when merging branches that edited the old file."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED_MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None  # a placeholder; exec_module swaps in the real module

    def exec_module(self, module):
        # the import system returns whatever sys.modules holds under the name once this returns
        sys.modules[module.__name__] = importlib.import_module(MOVED_MODULES[module.__name__])


if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'fgrpo_sim.sim' has no attribute {name!r}")
