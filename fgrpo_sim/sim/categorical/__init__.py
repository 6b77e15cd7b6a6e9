"""The categorical-policy simulator of paper Sec. 5.1 / App. J, one room per stage of a grid run.

A config travels top to bottom:
  config    `CategoricalConfig`: one setting, validated (its `config_id` keys resumed tables);
            `resolve_device`
  run       `run_grid`: the config's runs in chunks into a tidy table (parquet/CSV), resumable
  engine    `CategoricalBatch`: a chunk of runs advancing as one [runs, actions] program (torch backend
            in place; the native backend through the kernel)
  kernel    `native` (the fused CPU step driven from Python) and `sampling` (exact multinomial counts,
            which backend runs where, compiling and loading `kernel.c` on first use)
`study` sits beside `run`: which open settings reproduce Fig 2's claims, one run_grid per setting.

Imports point down only: run -> config, engine; engine -> config, kernel; study -> config, run; config
-> kernel once, inside `backend()` (a config's id says whether this machine runs it natively).
tests/test_import_graph.py keeps it so. Names load lazily: `from fgrpo_sim.sim.categorical import
CategoricalConfig` does not import torch.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "CategoricalConfig": "config",
    "resolve_device": "config",
    "run_grid": "run",
    "CategoricalBatch": "engine",
    "METRICS": "engine",
    "run_study": "study",
    "claims_table": "study",
}
# A name this path held when it was one module (sim/categorical.py); kept importable, not the public face.
_FORMER_MODULE_NAMES = {"initial_logits": "engine"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name) or _FORMER_MODULE_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'fgrpo_sim.sim.categorical' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
