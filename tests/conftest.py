"""Shared test set-up: headless matplotlib, build folders for tool caches, and an in-process CLI runner."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs a fixed set of examples, so a red build always points at a reproducible case; local runs
# keep exploring new random examples (a failure there prints its seed to replay).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent
_BUILD = Path(tempfile.gettempdir()) / "fgrpo-sim-test-build"
for var, sub in [("MPLCONFIGDIR", "mpl"), ("IPYTHONDIR", "ipython"), ("JUPYTER_CONFIG_DIR", "jupyter/config"),
                 ("JUPYTER_DATA_DIR", "jupyter/data"), ("JUPYTER_RUNTIME_DIR", "jupyter/runtime")]:
    os.environ.setdefault(var, str(_BUILD / sub))
    Path(os.environ[var]).mkdir(parents=True, exist_ok=True)
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("FGRPO_CACHE_DIR", str(_BUILD / "cache"))  # compiled sampler: not in the home folder
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@contextlib.contextmanager
def transformers_bars_restored():
    """Turn transformers' progress bars back on afterwards if they were on before (not imported yet: on)."""
    before = sys.modules.get("transformers.utils.logging")
    was_on = before is None or before.is_progress_bar_enabled()
    try:
        yield
    finally:
        hf_logging = sys.modules.get("transformers.utils.logging")
        if was_on and hf_logging is not None and not hf_logging.is_progress_bar_enabled():
            hf_logging.enable_progress_bar()


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys):
    """Run `fgrpo ARGS...` in-process through the real entry point; returns exit code and captured output."""
    from fgrpo_sim.cli import main

    def _run(*args: str) -> CliResult:
        capsys.readouterr()
        # `llm ... --no-progress` switches transformers' bars off process-wide: undo it for the next call
        with transformers_bars_restored():
            try:
                main([str(a) for a in args])
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return _run


@pytest.fixture(autouse=True)
def _restore_transformers_progress_bars():
    """Commands and the rehearsal switch transformers' bars off process-wide (on purpose: their output is
    the stage lines); a test that called them in-process must not hand that switch to the next test of its
    worker (which test runs next depends on how pytest-xdist shares out the files)."""
    with transformers_bars_restored():
        yield


@pytest.fixture(autouse=True)
def _close_figures():
    """pyplot keeps every figure a test draws until closed; close them after each test (only where pyplot is
    already imported: most tests never draw)."""
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")
