"""Read the committed benchmark record (benchmarks/RESULTS.md) as the pages' claims quote it: one section's table
as rows of cells, and its prose, so that a claim takes a number from the row a page cites instead of copying it."""

from __future__ import annotations

import re
from functools import cache

from doc_census import ROOT

RESULTS = ROOT / "benchmarks" / "RESULTS.md"


@cache
def section(heading: str) -> str:
    """The text of the `## ` section whose heading starts with `heading` (up to the next `## `)."""
    parts = re.split(r"^## ", RESULTS.read_text(), flags=re.M)
    found = [p for p in parts if p.startswith(heading)]
    if len(found) != 1:
        raise ValueError(f"benchmarks/RESULTS.md must have one section '## {heading}...', found {len(found)}")
    return found[0]


@cache
def table(heading: str) -> tuple[dict[str, str], ...]:
    """The first markdown table of a section: one dict per row, header -> cell, bold marks removed."""
    lines = [line.strip() for line in section(heading).splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip().replace("**", "") for cell in line.strip("|").split("|")])
    header, body = rows[0], [r for r in rows[1:] if not set("".join(r)) <= set("-: ")]
    return tuple(dict(zip(header, r)) for r in body)


def percent(cell: str) -> float:
    """'4.0%' -> 4.0 (the record prints shares in percent)."""
    match = re.fullmatch(r"([\d.]+)%", cell)
    if not match:
        raise ValueError(f"a RESULTS.md share must read like '4.0%', got {cell!r}")
    return float(match.group(1))


def number_in(text: str, pattern: str) -> float:
    """The number captured by `pattern`'s one group in `text` (commas of thousands dropped)."""
    match = re.search(pattern, text)
    if not match:
        raise ValueError(f"benchmarks/RESULTS.md no longer reads {pattern!r}")
    return float(match.group(1).replace(",", ""))
