"""`python -m fgrpo_sim.rehearsal.probe LOG ARGS...`: run `fgrpo ARGS...` and log each generation batch.

The rehearsal trains through this wrapper so that it can compare the prompt order of a resumed run with an
uninterrupted one: before handing ARGS to the real CLI, it wraps `FocalGRPOTrainer._generate_and_score_completions`
to append one JSON line per call to LOG, {"step": global step, "problem_ids": [...]}, flushed before the
batch is generated (a SIGKILL loses no line). Nothing else changes: same command, same code, same arguments.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Callable


def install(log: str) -> None:
    from fgrpo_sim.llm.training.trainer import FocalGRPOTrainer

    original = FocalGRPOTrainer._generate_and_score_completions

    def logged(self, inputs):
        line = {"step": int(self.state.global_step), "problem_ids": [str(x.get("problem_id")) for x in inputs]}
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        return original(self, inputs)

    FocalGRPOTrainer._generate_and_score_completions = logged


def run_package_main(argv: list[str]) -> None:
    """`python -m fgrpo_sim ARGV` in this process: the package's own entry point (its `__main__`), found by
    name, so the rehearsal imports nothing of the command line above it (tests/test_import_graph.py)."""
    import runpy

    saved, sys.argv = sys.argv, ["fgrpo", *argv]
    try:
        runpy.run_module("fgrpo_sim", run_name="__main__", alter_sys=True)
    finally:
        sys.argv = saved


def main(argv: list[str] | None = None, run_cli: Callable[[list[str]], None] = run_package_main) -> None:
    """Log each generation batch to LOG = argv[0], then run `fgrpo argv[1:]` through `run_cli` (the entry
    point handed down, as the driver takes it; by default the package's `__main__`)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        sys.exit("usage: python -m fgrpo_sim.rehearsal.probe LOG FGRPO_ARGS...")
    install(argv[0])
    run_cli(argv[1:])


if __name__ == "__main__":
    main()
