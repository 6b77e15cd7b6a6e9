"""Recorded wall times that `--help` and `fgrpo figures --list` quote.

The one source is the "Command times" table of benchmarks/RESULTS.md (filled from
`benchmarks/timings.py`); these strings repeat its "quoted as" column because an installed package
cannot read that file. tests/test_timings.py fails when the table, this dict, the README or the help
texts disagree, so updating a range means: the table, then this dict (the test names what else to fix).
"""

from __future__ import annotations

RECORDED_TIMES = {
    "make-figures": "0.5-12 min",
    "make-test": "3-15 min",
    "fig2-full": "1-11 min",
    "study": "about 30 min",
    "maze-cpu": "20 min to hours",
    "check": "12-70 s",
    "fresh-make-test": "6-19 min",
    "rehearsal": "1.3-6 min",
}


def quoted(name: str) -> str:
    """'<range> on 2 CPU cores' for a command of the table, e.g. quoted('fig2-full')."""
    return f"{RECORDED_TIMES[name]} on 2 CPU cores"
