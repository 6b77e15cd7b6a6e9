"""`--json` output shared by the commands: one JSON object on stdout, tables as lists of records, through the
package's one JSON writer (`fgrpo_sim.jsonl`: NaN and infinities as null, numpy scalars as numbers)."""

from __future__ import annotations

import typer

from fgrpo_sim.jsonl import dumps, finite_or_none


def records(frame) -> list[dict]:
    """Rows of a pandas DataFrame as dicts (numbers as numbers, NaN as null)."""
    return [finite_or_none(row) for row in frame.to_dict(orient="records")]


def emit_json(payload: dict) -> None:
    """Print `payload` as one JSON line; what JSON lacks (a Path, a Timestamp) as its text."""
    typer.echo(dumps(payload, default=str))
