"""One module per page of README.md and docs/*.md (README.md: readme.py, docs/core-and-metrics.md:
core_and_metrics.py), each with CLAIMS (phrases computed from their source) and GIVEN (phrases declared, with the
reason): together with the page's code, doc-test blocks and generated regions they account for every number the
page shows (tests/doc_census.py, tests/test_doc_numbers.py)."""

from __future__ import annotations

import importlib
from pathlib import Path


def module_name(page: Path) -> str:
    return "readme" if page.name == "README.md" else page.stem.replace("-", "_")


def claims_of(page: Path):
    """(CLAIMS, GIVEN) of a page's module; a page without one has none (and the census names each number)."""
    try:
        module = importlib.import_module(f"doc_claims.{module_name(page)}")
    except ModuleNotFoundError as error:
        if error.name != f"doc_claims.{module_name(page)}":
            raise
        return [], []
    return list(module.CLAIMS), list(getattr(module, "GIVEN", []))
