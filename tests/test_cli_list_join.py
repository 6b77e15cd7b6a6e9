"""A list option given twice joins (`--gamma 1 --gamma 0` is `--gamma 1,0`), and the joined list meets every check
the list typed at once meets (issue 50): the parser's (a value twice, one value where one is taken) and the
command's (ranges, choices, counts). Every list option the CLI declares (options.list_option) is tried, found by
walking the command tree, so a new one is covered without being named here."""

from __future__ import annotations

import json

import pytest

from fgrpo_sim import cli
from fgrpo_sim.commands.options import list_parser

#: What each command needs besides the option under test (its required arguments and an output in tmp)
BASE = {
    "passk": ["passk", "{tmp}/r.jsonl"],
    "plan": ["plan", "--beta", "1,1"],
    "simulate categorical": ["simulate", "categorical", "--out", "{tmp}/o.csv", "--no-progress"],
    "simulate population": ["simulate", "population", "--out", "{tmp}/o.csv", "--no-progress"],
    "simulate group-size": ["simulate", "group-size", "--out", "{tmp}/o.csv", "--no-progress"],
    "simulate table2-depth": ["simulate", "table2-depth", "--out", "{tmp}/o.json", "--no-progress"],
    "llm report": ["llm", "report", "{tmp}/man.csv", "--out-dir", "{tmp}/rep", "--no-progress"],
    "maze run": ["maze", "run", "--out", "{tmp}/m", "--preset", "tiny", "--no-progress"],
    "maze compare": ["maze", "compare", "{tmp}/m", "{tmp}/m"],
}


def _list_options():
    found = []

    def walk(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])
        for param in getattr(command, "params", []):
            parser = list_parser(param)
            if parser is not None:
                value = parser(param.default)[0] if param.default is not None else ("x" if parser.kind is str else 1)
                found.append((" ".join(path), param.opts[0], str(value), "nope" if parser.kind is str else "-1"))

    walk(cli._command(), [])
    return found


LIST_OPTIONS = _list_options()


def test_the_walk_finds_the_list_options():
    names = {f"{path} {option}" for path, option, _, _ in LIST_OPTIONS}
    assert {"simulate group-size --gamma", "passk --k", "theory peak --rho", "maze compare --n"} <= names
    assert len(LIST_OPTIONS) >= 30


def _run(run_cli, tmp_path, path, *args):
    (tmp_path / "r.jsonl").write_text(json.dumps({"problem_id": "a", "n": 4, "c": 1}) + "\n")
    base = BASE.get(path, path.split())
    return run_cli(*[a.replace("{tmp}", str(tmp_path)) for a in base], *args)


@pytest.mark.parametrize("path, option, value, bad", LIST_OPTIONS, ids=[f"{p} {o}" for p, o, _, _ in LIST_OPTIONS])
def test_a_list_option_given_twice_is_checked_as_the_joined_list(run_cli, tmp_path, path, option, value, bad):
    twice = _run(run_cli, tmp_path, path, option, value, option, value)
    assert twice.exit_code == 2 and twice.stderr.count("\n") == 1, twice
    assert twice.stderr.startswith(f"fgrpo: error: {option} "), twice.stderr  # e.g. "--n lists 4 twice"
    joined = _run(run_cli, tmp_path, path, option, value, option, bad)
    typed = _run(run_cli, tmp_path, path, option, f"{value},{bad}")
    assert typed.exit_code == 2, typed  # the list typed at once is refused (a value out of range or of choices)
    assert (joined.exit_code, joined.stdout, joined.stderr) == (typed.exit_code, typed.stdout, typed.stderr)
