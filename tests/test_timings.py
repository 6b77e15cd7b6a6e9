"""Every quoted duration agrees with the one table of benchmarks/RESULTS.md ("Command times")."""

from __future__ import annotations

import re
from pathlib import Path

from fgrpo_sim.recorded_times import RECORDED_TIMES

ROOT = Path(__file__).resolve().parent.parent


def _table() -> dict[str, str]:
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    section = text.split("## Command times", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"\| `([a-z0-9-]+)` \|.*\| ([^|]+) \|$", line.strip())
        if match:
            rows[match.group(1)] = match.group(2).strip()
    return rows


def test_recorded_times_repeat_the_results_table():
    assert _table() == RECORDED_TIMES, "update fgrpo_sim/recorded_times.py from benchmarks/RESULTS.md"


def test_readme_quotes_the_table_and_nothing_else():
    readme = (ROOT / "README.md").read_text()
    for name in ("make-figures", "make-test", "fig2-full", "study", "maze-cpu", "rehearsal"):
        assert RECORDED_TIMES[name] in readme, f"README should quote {name} as {RECORDED_TIMES[name]!r}"
    for quote in RECORDED_TIMES.values():
        readme = readme.replace(quote, "")
    stray = re.findall(r"about \d+(?:\.\d+)? ?(?:s|sec|seconds|min|minutes|hours?)\b", readme)
    assert not stray, f"README quotes times not in the table: {stray}"


def test_help_texts_quote_the_table(run_cli):
    listing = run_cli("figures", "--list").stdout
    assert RECORDED_TIMES["fig2-full"] in listing
    maze_help = " ".join(run_cli("maze", "run", "--help").stdout.split())
    assert RECORDED_TIMES["maze-cpu"] in maze_help
