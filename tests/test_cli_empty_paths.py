"""An empty path (`--out ''`, a positional `''`) is refused by name in every command, for every path parameter.

Path("") is Path("."): let through, `figures --out ''` would write into the current folder. What typer hands a
command for an empty string has changed between releases (typer 0.26-0.28 passed Path(".") on), so this walks
the real command tree rather than trusting one spelling (the guard: `fgrpo_sim.cli._guard_empty_paths`)."""

from __future__ import annotations

import pytest

from fgrpo_sim import cli


def _path_parameters():
    found = []

    def walk(command, prefix):
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*prefix, name])
        if getattr(command, "commands", None):
            return
        positionals = [p for p in command.params if p.param_type_name == "argument"]
        for param in command.params:
            if not cli._is_path_param(param):
                continue
            if param.param_type_name == "option":
                found.append((" ".join(prefix) + " " + param.opts[0], [*prefix, param.opts[0], ""]))
            else:  # the arguments before it get a placeholder value, this one the empty string
                before = ["x"] * positionals.index(param)
                found.append((" ".join(prefix) + " " + param.name.upper(), [*prefix, *before, ""]))

    walk(cli._command(), [])
    return found


PATH_PARAMETERS = _path_parameters()


def test_the_walk_finds_options_and_positional_paths():
    names = {name for name, _ in PATH_PARAMETERS}
    assert {"figures --out", "passk RESULTS", "plan SUCCESS_RATES", "simulate population --out"} <= names
    assert len(PATH_PARAMETERS) >= 20


@pytest.mark.parametrize("name, argv", PATH_PARAMETERS, ids=[n for n, _ in PATH_PARAMETERS])
def test_an_empty_path_is_refused_by_name_and_nothing_is_written(run_cli, tmp_path, monkeypatch, name, argv):
    monkeypatch.chdir(tmp_path)
    result = run_cli(*argv)
    shown = name.split()[-1]
    assert result.exit_code == 2, (name, result.stdout, result.stderr)
    assert result.stderr.strip() == f"fgrpo: error: {shown} is empty; give a path", name
    assert list(tmp_path.iterdir()) == [], f"{name}: wrote into the current folder"
