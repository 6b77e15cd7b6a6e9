"""Every quoted duration agrees with the measurements of benchmarks/RESULTS.md ("Command times"), through the
ranges benchmarks/timings.py computes from them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fgrpo_sim.recorded_times import RECORDED_TIMES

ROOT = Path(__file__).resolve().parent.parent


def _timings():
    """benchmarks/timings.py as a module (benchmarks/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("timings", ROOT / "benchmarks" / "timings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _quoted_table() -> dict[str, str]:
    """The "quoted as" column of RESULTS.md's small table (name | quoted as | command)."""
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    section = text.split("## Command times", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[1]
    return rows


def test_quoted_ranges_are_computed_from_the_measurement_rows():
    ranges = _timings().quoted_ranges()
    assert _quoted_table() == ranges, "copy `python benchmarks/timings.py --ranges` into RESULTS.md's quoted-as table"
    assert ranges == RECORDED_TIMES, "update fgrpo_sim/recorded_times.py from `python benchmarks/timings.py --ranges`"


def test_ranges_round_outwards_and_keep_the_reported_kind():
    timings = _timings()
    rows = timings.measurements("## Command times\n| `a` | d | m | 1 | 12.8 | - | yes | |\n"
                                "| `a` | d | m | 9 | ~69.8 | - | yes | |\n| `a` | d | m | 9 | 150-222 | - | no | |\n")
    assert [(r["low"], r["high"], r["about"], r["counted"]) for r in rows] == [
        (12.8, 12.8, False, True), (69.8, 69.8, True, True), (150, 222, False, False)]
    assert timings.quoted_range(rows[:2]) == "12-70 s"
    assert timings.quoted_range(rows[2:]) == "2.5-3.7 min"  # 222 s is 3.7 min exactly: not bumped
    assert timings.quoted_range(rows[:1]) == "about 13 s"
    assert timings.quoted_range([{"low": 1200, "high": 1200}, {"low": 10800, "high": 10800}]) == "20 min to 3 h"
    with pytest.raises(ValueError, match="wall 'soon'"):
        timings.measurements("## Command times\n| `a` | d | m | 1 | soon | - | yes | |\n")


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
