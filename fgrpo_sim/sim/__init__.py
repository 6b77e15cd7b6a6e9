"""Simulators of the paper's toy settings and Monte Carlo checks of its theory.

Categorical simulation (Sec. 5.1, App. J), the subpackage `categorical`: `CategoricalConfig`,
`CategoricalBatch` (the batched engine), `run_grid` (a grid of runs into a tidy, resumable table).
Theory checks: `estimate_tail_miss` and the other estimators of `montecarlo`, `run_checks` (what
`fgrpo check` runs). Names load lazily, so importing this package does not import torch.
"""

from __future__ import annotations

import importlib

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



def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'fgrpo_sim.sim' has no attribute {name!r}")
