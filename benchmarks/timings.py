"""Wall time of the commands whose durations the README, the docs and `--help` quote.

    .venv/bin/python benchmarks/timings.py make-figures make-test    # one JSON line per command
    .venv/bin/python benchmarks/timings.py rehearsal
    .venv/bin/python benchmarks/timings.py --list
    python benchmarks/timings.py --ranges    # the "quoted as" range per command, from RESULTS.md's rows

Every time quoted elsewhere points to the "Command times" table of benchmarks/RESULTS.md, and that
table is filled from this script's output (tests/test_timings.py checks that the quotes agree with
it). Each command starts from nothing cached: figures get a fresh --data-dir, so the quick simulations
run as on a fresh clone; the venv is assumed installed (`make` itself would reinstall it). The load
average before and after is printed so that a measurement on a busy machine can be labelled as such.
Run from the repository root.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import re
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"

PYTHON = sys.executable


def _fgrpo(*args: str) -> list[str]:
    return [PYTHON, "-m", "fgrpo_sim.cli", *args]


# name -> (what it stands for, command builder taking a scratch folder)
COMMANDS = {
    "make-figures": ("`make figures` (default figure set, nothing cached)",
                     lambda tmp: _fgrpo("figures", "--out", f"{tmp}/figures", "--data-dir", f"{tmp}/data",
                                        "--no-progress")),
    # `make test` itself: the main suite in .venv, then the verl tests in .venv-verl (both venvs installed)
    "make-test": ("`make test` (main suite in .venv, verl tests in .venv-verl; venvs installed)",
                  lambda tmp: ["make", "test"]),
    # a fresh clone of the committed tree: both venvs created and installed, then both test runs (as CI does)
    "fresh-make-test": ("`make test` on a fresh clone (both venvs installed from scratch, then the tests)",
                        lambda tmp: ["bash", "-c", f"git clone -q . {tmp}/clone && cd {tmp}/clone && CI=true make test"]),
    "fig2-full": ("`fgrpo figures fig2-full` (136 runs x 1000 steps x 128,000 actions, nothing cached)",
                  lambda tmp: _fgrpo("figures", "fig2-full", "--out", f"{tmp}/figures", "--data-dir", f"{tmp}/data",
                                     "--no-progress")),
    "check": ("`fgrpo check` (65 Monte Carlo checks)", lambda tmp: _fgrpo("check")),
    # `make rehearsal` without make's venv check: the verl stage runs when .venv-verl exists here
    "rehearsal": ("`make rehearsal` (fgrpo llm rehearse, verl stage in .venv-verl; venvs installed)",
                  lambda tmp: _fgrpo("llm", "rehearse", "--out", f"{tmp}/rehearsal")),
    "study": ("`fgrpo simulate categorical --study` (24 settings)",
              lambda tmp: _fgrpo("simulate", "categorical", "--study", "--out", f"{tmp}/study.parquet",
                                 "--no-progress")),
    # the committed record's command (issue 48), written into the scratch folder instead of fgrpo_sim/results
    "table2-depth": ("`fgrpo simulate table2-depth` (fitted population, 20 populations x 5 N x 3 methods)",
                     lambda tmp: _fgrpo("simulate", "table2-depth", "--out", f"{tmp}/table2-depth.json", "--device",
                                        "cpu", "--no-progress")),
    "maze-cpu": ("`fgrpo maze run --preset cpu --n 4,8,16 --gamma 0,0.5,1 --runs 3`",
                 lambda tmp: _fgrpo("maze", "run", "--yes", "--preset", "cpu", "--n", "4,8,16", "--gamma", "0,0.5,1",
                                    "--runs", "3", "--out", f"{tmp}/maze", "--no-progress")),
}


def time_command(name: str) -> dict:
    """Run one named command in a fresh scratch folder; wall seconds, CPU seconds of the children, load."""
    what, build = COMMANDS[name]
    with tempfile.TemporaryDirectory(prefix=f"fgrpo-timing-{name}-") as tmp:
        load_before = os.getloadavg()
        before = os.times()
        start = time.perf_counter()
        result = subprocess.run(build(tmp), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        after = os.times()
    return {"name": name, "command": what, "wall_seconds": round(wall, 1),
            "cpu_seconds": round((after.children_user - before.children_user)
                                 + (after.children_system - before.children_system), 1),
            "exit_code": result.returncode, "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(),
            "machine": platform.processor() or platform.machine(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "stderr_tail": result.stderr[-300:] if result.returncode else ""}


def measurements(text: str) -> list[dict]:
    """The rows of RESULTS.md's "Command times" measurement table: name, wall (low, high seconds), about, counted."""
    section = text.split("## Command times", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 8 or not cells[0].startswith("`"):
            continue  # not a measurement row (the header, the "quoted as" table)
        wall = cells[4]
        match = re.fullmatch(r"(~?)(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?", wall)
        if not match:
            raise ValueError(f"RESULTS.md, Command times: wall {wall!r} of {cells[0]} is not seconds, ~seconds or a-b")
        low = float(match.group(2))
        rows.append({"name": cells[0].strip("`"), "low": low, "high": float(match.group(3) or low),
                     "about": bool(match.group(1)), "counted": cells[6] == "yes"})
    return rows


def _rounded(seconds: float, unit: str, up: bool) -> str:
    """Seconds in `unit` (s, min, h), rounded outwards: one decimal under 10 units, whole units from 10."""
    value = seconds / {"s": 1, "min": 60, "h": 3600}[unit]
    scale = 1 if value >= 10 else 10
    value = (math.ceil if up else math.floor)(value * scale - 1e-9 * (1 if up else -1)) / scale
    return f"{value:g}"


def quoted_range(rows: list[dict]) -> str:
    """'12-70 s', '3.2-15 min', '20 min to 3 h' or 'about 30 min': smallest to largest wall time of `rows`."""
    low, high = min(r["low"] for r in rows), max(r["high"] for r in rows)
    unit = "s" if high < 120 else "min" if high < 7200 else "h"
    if low == high:
        return f"about {_rounded(high, unit, up=True)} {unit}"
    low_unit = unit if unit != "h" or low >= 3600 else "min"
    if low_unit != unit:
        return f"{_rounded(low, low_unit, up=False)} {low_unit} to {_rounded(high, unit, up=True)} {unit}"
    return f"{_rounded(low, unit, up=False)}-{_rounded(high, unit, up=True)} {unit}"


def quoted_ranges(text: str | None = None) -> dict[str, str]:
    """The "quoted as" range of each command, from the rows of RESULTS.md counted in its range."""
    rows = [r for r in measurements(RESULTS.read_text() if text is None else text) if r["counted"]]
    return {name: quoted_range([r for r in rows if r["name"] == name]) for name in dict.fromkeys(r["name"] for r in rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help=f"commands to time, from: {', '.join(COMMANDS)}")
    parser.add_argument("--list", action="store_true", help="list the commands and exit")
    parser.add_argument("--ranges", action="store_true", help="print each command's quoted range from RESULTS.md and exit")
    args = parser.parse_args()
    if args.ranges:
        for name, quote in quoted_ranges().items():
            print(f"{name:<16} {quote}")
        return
    if args.list or not args.names:
        for name, (what, _) in COMMANDS.items():
            print(f"{name:<13} {what}")
        return
    unknown = [n for n in args.names if n not in COMMANDS]
    if unknown:
        parser.error(f"unknown command(s) {', '.join(unknown)}; choose from {', '.join(COMMANDS)}")
    if not Path("fgrpo_sim").is_dir():
        parser.error("run from the repository root")
    for name in args.names:
        print(json.dumps(time_command(name)), flush=True)


if __name__ == "__main__":
    main()
