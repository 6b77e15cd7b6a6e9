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
