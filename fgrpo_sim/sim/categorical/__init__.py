"""The categorical-policy simulator of paper Sec. 5.1 / App. J, one room per stage of a run.

Read in this order, each module importing only the ones before it:
  config    `CategoricalConfig`: one setting, validated; its `config_id` keys resumed tables
  run       `run_grid`: a grid of runs in chunks into a tidy table (parquet/CSV), resumable
  engine    `CategoricalBatch`: many runs advancing as one [runs, actions] program (torch backend)
  kernel    the native CPU backend: `native` (fused step driven from Python), `sampling` (exact
            multinomial counts, backend choice, compiled `kernel.c`)
and beside them `study` (which open settings reproduce Fig 2's claims; uses run).

Names load lazily, so `from fgrpo_sim.sim.categorical import CategoricalConfig` does not import torch.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "CategoricalConfig": "config",
    "run_grid": "run",
    "CategoricalBatch": "engine",
    "METRICS": "engine",
    "run_study": "study",
    "claims_table": "study",
}
# Names this path held when it was one module (sim/categorical.py); kept importable, not the public face.
_FORMER_MODULE_NAMES = {"initial_logits": "engine", "resolve_device": "engine"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name) or _FORMER_MODULE_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'fgrpo_sim.sim.categorical' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
