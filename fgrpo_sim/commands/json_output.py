"""`--json` output shared by the commands: one JSON object on stdout, tables as lists of records."""

from __future__ import annotations

import json
import math

import typer


def _plain(value):
    """numpy scalars as plain numbers, anything else JSON lacks (a Path, a Timestamp) as text."""
    return value.item() if hasattr(value, "item") else str(value)


def _no_nan(value):
    """NaN and infinities as null: JSON has neither, and strict readers refuse Python's NaN token."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_no_nan(v) for v in value]
    return value


def records(frame) -> list[dict]:
    """Rows of a pandas DataFrame as dicts (numbers as numbers, NaN as null)."""
    return [{k: _no_nan(_plain(v) if hasattr(v, "item") else v) for k, v in row.items()}
            for row in frame.to_dict(orient="records")]


def emit_json(payload: dict) -> None:
    """Print `payload` as one JSON line."""
    typer.echo(json.dumps(_no_nan(payload), default=_plain))
