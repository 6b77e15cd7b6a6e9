"""Result tables as aligned text: rich's `Table`, plain (no box, never wrapped or cropped, no markup), so a
table reads the same in a terminal, a pipe, a log or the docs' doc tests."""

from __future__ import annotations

import sys
from typing import Iterable, Sequence


def echo_table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, left: Sequence[int] = ()) -> None:
    """Print `rows` (cells already formatted as text) under `headers`, columns right-aligned except `left`."""
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="", show_edge=False)
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i in left else "right", no_wrap=True)
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    # wide enough that rich never crops a cell (COLUMNS is ignored); no colour even where FORCE_COLOR asks;
    # markup and highlighting off: cells hold "[a, b]" intervals
    console = Console(width=10_000, color_system=None, markup=False, highlight=False, emoji=False)
    with console.capture() as captured:
        console.print(table)
    for line in captured.get().splitlines():  # rich pads a left-aligned last column: no trailing blanks
        print(line.rstrip(), file=sys.stdout)


def echo_fields(payload: dict) -> None:
    """A nested result (what `--json` prints) as readable "key  value" lines, one per leaf, nested keys
    joined with dots (`dropped.conflicting_answers  3`), a list of plain values on one line."""
    rows = list(_leaves(payload))
    width = max((len(key) for key, _ in rows), default=0)
    for key, value in rows:
        print(f"{key:<{width}}  {value}".rstrip(), file=sys.stdout)


def _leaves(value, prefix: str = ""):
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, (list, tuple)) and any(isinstance(item, (dict, list, tuple)) for item in value):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{prefix}.{index}" if prefix else str(index))
    elif isinstance(value, (list, tuple)):
        yield prefix, ", ".join(_text(item) for item in value)
    else:
        yield prefix, _text(value)


def _text(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "null" if value is None else str(value)
