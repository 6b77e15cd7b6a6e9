"""Recorded wall times that `--help` and `fgrpo figures --list` quote.

The one source is the "Command times" measurements of benchmarks/RESULTS.md; these strings repeat the ranges
`python benchmarks/timings.py --ranges` computes from them because an installed package
cannot read that file. tests/test_timings.py fails when the table, this dict, the README or the help
texts disagree, so updating a range means: a row in the table, then this dict (the test names what else to fix).
"""

from __future__ import annotations

RECORDED_TIMES = {
    "make-figures": "2.2-2.3 min",
    "make-test": "3.2-15 min",
    "fig2-full": "0.7-12 min",
    "study": "about 30 min",
    "maze-cpu": "20 min to 3 h",
    "check": "12-70 s",
    "fresh-make-test": "about 7.5 min",
    "rehearsal": "1.2-5.8 min",
    "table2-depth": "about 16 s",
}


def quoted(name: str) -> str:
    """'<range> on 2 CPU cores' for a command of the table, e.g. quoted('fig2-full')."""
    return f"{RECORDED_TIMES[name]} on 2 CPU cores"
