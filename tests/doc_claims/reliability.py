"""docs/reliability.md: the exit statuses the command line gives and the limits the code enforces."""

from __future__ import annotations

import contextlib
import io

from doc_census import Claim, Given


def _exit_status(run) -> int:
    """The status `run` exits with, its stderr line swallowed."""
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            run()
        except SystemExit as stop:
            return stop.code
    raise AssertionError(f"{run} did not exit")


def _bad_input() -> str:
    from fgrpo_sim.cli import main

    return f"0 ok; **{_exit_status(lambda: main(['maze', 'show', '--size', '8']))}** bad input"


def _interrupted() -> str:
    from fgrpo_sim.cli import _interrupted  # what main does on Ctrl-C (KeyboardInterrupt or typer's 130)

    return f"{_exit_status(_interrupted)} on Ctrl-C"


def _temp_age() -> str:
    from fgrpo_sim.atomic_io import STALE_TEMP_AGE_S

    return f"delete our unlocked temp files at least {STALE_TEMP_AGE_S:g} s old"


def _temp_age_without_lock() -> str:
    from fgrpo_sim.atomic_io import STALE_TEMP_AGE_NO_LOCK_S

    return f"stale temp files are removed only after {STALE_TEMP_AGE_NO_LOCK_S / 3600:g} hours"


def _beta() -> str:
    from fgrpo_sim.planner import QUADRATURE_SHAPE_MIN

    return f"`plan` names `--beta` below {QUADRATURE_SHAPE_MIN:g}"


def _temperature() -> str:
    from fgrpo_sim.llm.evaluation.evaluate import MAX_TEMPERATURE, MIN_TEMPERATURE

    return f"temperature 0 (greedy) or in [{MIN_TEMPERATURE:g}, {MAX_TEMPERATURE:g}]"


CLAIMS = [
    Claim(_bad_input, source="fgrpo_sim.cli.main on a bad option value (`maze show --size 8`)"),
    Claim(_interrupted, source="fgrpo_sim.cli._interrupted, what main runs on Ctrl-C"),
    Claim(_temp_age, source="atomic_io.STALE_TEMP_AGE_S"),
    Claim(_temp_age_without_lock, source="atomic_io.STALE_TEMP_AGE_NO_LOCK_S"),
    Claim(_beta, source="planner.QUADRATURE_SHAPE_MIN"),
    Claim(_temperature, source="llm.evaluation.evaluate.MIN_TEMPERATURE / MAX_TEMPERATURE"),
]

GIVEN: list[Given] = []
