"""Tests that need an optional extra say which one, and how loud a missing extra is depends on the environment.

`make test` installs `dev,llm,notebooks` and says so in FGRPO_TEST_EXTRAS: there, a missing package of a
promised extra is a broken install and fails the test. Anywhere else (a GPU image with its own packages, a
user's partial install) the test is skipped with the line that installs the extra.
"""

from __future__ import annotations

import importlib
import os

import pytest

from fgrpo_sim.extras import EXTRA_OF


def promised_extras() -> set[str]:
    return {e.strip() for e in os.environ.get("FGRPO_TEST_EXTRAS", "").split(",") if e.strip()}


def require(module: str):
    """Import `module` (a package of one of the project's extras) or fail/skip naming the extra."""
    extra = EXTRA_OF[module]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        line = f"needs the {extra} extra ({module}: {exc}); install it with: pip install -e '.[{extra}]'"
        if extra in promised_extras():
            pytest.fail(f"FGRPO_TEST_EXTRAS promises '{extra}' but {line}", pytrace=False)
        pytest.skip(line, allow_module_level=True)
