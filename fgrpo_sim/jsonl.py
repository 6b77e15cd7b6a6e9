"""Reading JSON-lines input files with errors that name the file and line (shared by every reader).

`read_json_objects(path)` returns (line number, object) pairs for the non-blank lines; a missing file,
a folder, bytes that are not UTF-8, a line that is not JSON or not a JSON object each raise ValueError
("FILE line L: ..."), which the CLI prints as one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def read_text_file(path: str | os.PathLike, what: str = "file") -> str:
    """The UTF-8 text of `path`; ValueError naming `what` and the path when it is missing, a folder or binary."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{what} not found: {path}")
    if path.is_dir():
        raise ValueError(f"{what} is a folder, not a file: {path}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start}); expected JSON lines") from None


def parse_json_objects(path: str | os.PathLike, text: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number from 1, object) for each non-blank line of `text`, read from `path`."""
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} line {number}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        except RecursionError:  # e.g. 100,000 nested brackets: Python's parser recurses once per level
            raise ValueError(f"{path} line {number}: JSON nested too deeply to read (expected a flat record)") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path} line {number}: expected a JSON object, got {type(record).__name__}")
        rows.append((number, record))
    return rows


def read_json_objects(path: str | os.PathLike, what: str = "file") -> list[tuple[int, dict[str, Any]]]:
    """(line number from 1, object) for each non-blank line of the JSON-lines file `path`."""
    return parse_json_objects(path, read_text_file(path, what))


__all__ = ["read_text_file", "parse_json_objects", "read_json_objects"]
