"""One vocabulary across commands (issue 32): the real command tree, walked option by option.

Group size is --n, the focal exponent --gamma, a list of seed values --seeds, a count of repeats --runs;
every option whose help says "comma-separated" takes a list; every command that prints a result has
--json; every long command has --progress/--no-progress; --device defaults to auto. Last release's
spellings still work, each with one deprecation line on stderr.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from fgrpo_sim.cli import _command, _is_list_option

REPO = Path(__file__).resolve().parents[1]

#: Spellings that must not appear in any --help: each has a new name (commands/deprecated.py).
BANNED = {"--group-sizes", "--gammas", "--format", "--optimizers"}

#: Commands that print no result of their own, and why (every other command must have --json).
NO_RESULT = {
    "figures": "writes figure files and names them",
    "llm train": "trains and writes checkpoints; --dry-run already prints JSON",
    "llm prepare-data": "writes a data file",
    "llm dnll-rare": "its result is always JSON",
    "llm rehearse": "a pipeline test: one line per stage, not a result",
    "llm export-verl": "writes a checkpoint folder",
    "maze show": "draws mazes as text pictures",
}

#: Commands that run for minutes or more: each shows progress bars, switchable.
LONG = {"figures", "check", "passk", "simulate categorical", "simulate population", "simulate group-size",
        "llm train", "llm eval", "llm dnll-rare", "llm report", "maze run"}

#: Options of a concept that takes several values, where one command takes exactly one, and why.
SINGLE_BY_NATURE = {
    ("maze compare", "--n"): "a paired comparison of two runs at one group size",
    ("simulate population", "--rho"): "one population's rare share (sweep --n and --gamma instead)",
}

#: Concepts whose option takes a list wherever it appears (unless SINGLE_BY_NATURE says why not).
LIST_CONCEPTS = ("--n", "--gamma", "--seeds", "--mu", "--tau", "--rho")


def _leaves(command=None, path=()):
    command = command or _command()
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from _leaves(sub, (*path, name))
    else:
        yield " ".join(path), command


def _options(command):
    return [p for p in command.params if p.param_type_name == "option"]


def _names(param) -> list[str]:
    return [*param.opts, *getattr(param, "secondary_opts", [])]


LEAVES = dict(_leaves())


def test_the_walk_sees_every_command():
    assert {"theory tail-miss", "simulate categorical", "llm eval", "llm recipes", "maze run", "check"} <= set(LEAVES)
    assert set(NO_RESULT) <= set(LEAVES) and LONG <= set(LEAVES)


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_no_banned_spelling_in_help(path):
    names = {name for p in _options(LEAVES[path]) for name in _names(p)}
    assert not names & BANNED, f"fgrpo {path}: {sorted(names & BANNED)} has a new name"


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_progress_is_a_pair(path):
    for param in _options(LEAVES[path]):
        names = _names(param)
        if "--no-progress" in names or "--progress" in names:
            assert param.opts == ["--progress"] and param.secondary_opts == ["--no-progress"], (path, names)
            assert param.default is True, f"fgrpo {path}: progress is on by default"


@pytest.mark.parametrize("path", sorted(LONG))
def test_long_commands_have_progress_pair(path):
    assert any(_names(p) == ["--progress", "--no-progress"] for p in _options(LEAVES[path])), path


@pytest.mark.parametrize("path", sorted(set(LEAVES) - set(NO_RESULT)))
def test_result_commands_have_json(path):
    assert any(p.opts == ["--json"] and p.is_flag for p in _options(LEAVES[path])), f"fgrpo {path} lacks --json"


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_device_defaults_to_auto(path):
    for param in _options(LEAVES[path]):
        if "--device" in param.opts:
            assert param.default == "auto", f"fgrpo {path} --device defaults to {param.default!r}"


def _annotation(command, param) -> str:
    """The command function's annotation of `param` as text (the modules use postponed annotations)."""
    annotation = inspect.signature(command.callback).parameters[param.name].annotation
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_comma_separated_options_take_text(path):
    """An option whose help promises a comma-separated list must reach the command as text (or repeated
    text), which the command splits: an int or float option would refuse "4,8" before the command runs."""
    command = LEAVES[path]
    for param in _options(command):
        if _is_list_option(param):
            annotation = _annotation(command, param)
            assert "str" in annotation or "Sequence" in annotation, f"fgrpo {path} {param.opts[0]}: help says comma-separated"


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_list_options_use_the_one_list_type(run_cli, path):
    """Every option the command receives as a list is parsed by validation.CommaList (list_option), whose
    rules (no empty element, no repeat) hold everywhere; a bad value fails while click parses."""
    command = LEAVES[path]
    for param in _options(command):
        if "Sequence" in _annotation(command, param):
            assert _is_list_option(param), f"fgrpo {path} {param.opts[0]}: a list option's help says comma-separated"
            result = run_cli(*path.split(), param.opts[0], "1,1")  # click converts it before any work
            assert result.exit_code == 2
            assert result.stderr == f"fgrpo: error: {param.opts[0]} lists 1 twice; give each value once, got '1,1'\n"


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_list_concepts_take_lists(path):
    for param in _options(LEAVES[path]):
        name = param.opts[0]
        if name in LIST_CONCEPTS and (path, name) not in SINGLE_BY_NATURE:
            assert _is_list_option(param), f"fgrpo {path} {name} must take a comma-separated list"


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_seeds_are_seed_values_and_runs_a_count(path):
    for param in _options(LEAVES[path]):
        if param.opts[0] == "--seeds":
            assert _is_list_option(param) and "seed" in param.help.lower(), path
        if param.opts[0] == "--runs":
            assert not _is_list_option(param) and "int" in _annotation(LEAVES[path], param), path


def test_help_shows_only_new_names(run_cli):
    for path in ("simulate categorical", "llm eval", "llm recipes", "maze run", "simulate group-size"):
        result = run_cli(*path.split(), "--help")
        assert result.exit_code == 0, result.stderr
        for old in BANNED:
            assert old not in result.stdout, (path, old)


def _one_deprecation(stderr: str, old: str, new: str) -> None:
    notes = [line for line in stderr.splitlines() if line.startswith("fgrpo: deprecated:")]
    assert notes == [f"fgrpo: deprecated: {old} is now {new}; the old spelling goes in 0.2"], stderr


def test_old_categorical_spellings_run_as_before(run_cli, tmp_path):
    common = ["--seeds", "0", "--steps", "2", "--num-actions", "4", "--num-correct", "1", "--backend", "torch",
              "--device", "cpu", "--no-progress", "--json"]
    new = run_cli("simulate", "categorical", "--out", tmp_path / "new.csv", "--n", "2,4", "--gamma", "0,1", *common)
    old = run_cli("simulate", "categorical", "--out", tmp_path / "old.csv", "--group-sizes", "2", "--group-sizes=4",
                  "--gammas", "0,1", *common)
    assert new.exit_code == old.exit_code == 0, (new.stderr, old.stderr)
    assert new.stderr == ""
    notes = [line for line in old.stderr.splitlines() if "deprecated" in line]
    assert notes == ["fgrpo: deprecated: --group-sizes is now --n; the old spelling goes in 0.2",
                     "fgrpo: deprecated: --gammas is now --gamma; the old spelling goes in 0.2"]
    assert json.loads(old.stdout)["final_means"] == json.loads(new.stdout)["final_means"]


@pytest.mark.parametrize("args, old, new, needle", [
    # the old count keeps its meaning: it becomes --runs (checked before any work), never a list of seeds
    (["maze", "run", "--preset", "tiny", "--seeds", "0"], "--seeds", "--runs", "--runs must be in [1, 100], got 0"),
    (["simulate", "group-size", "--out", "{tmp}/g.csv", "--seeds", "0"], "--seeds", "--runs", "--runs must be in"),
    # the simulators' name for the optimizer (a list here): the old spelling's values are checked under the new one
    (["simulate", "group-size", "--out", "{tmp}/g.csv", "--optimizers", "rmsprop"], "--optimizers", "--optimizer",
     "--optimizer must be"),
    (["llm", "eval", "--model", "tiny", "--data", "{tmp}/d.jsonl", "--out", "{tmp}/o.jsonl", "--n", "0"],
     "--n", "--samples", "--samples must be in [1, inf], got 0"),
])
def test_old_count_spellings_keep_their_meaning(run_cli, tmp_path, args, old, new, needle):
    result = run_cli(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.exit_code == 2
    _one_deprecation(result.stderr, old, new)
    errors = [line for line in result.stderr.splitlines() if line.startswith("fgrpo: error:")]
    assert len(errors) == 1 and needle in errors[0], result.stderr


@pytest.mark.parametrize("value, flags", [("json", ["--json"]), ("markdown", ["--markdown"]), ("text", [])])
def test_recipes_format_is_the_new_flags(run_cli, value, flags):
    new = run_cli("llm", "recipes", "--root", REPO / "recipes", *flags)
    old = run_cli("llm", "recipes", "--root", REPO / "recipes", "--format", value)
    assert new.exit_code == old.exit_code == 0, old.stderr
    assert old.stdout == new.stdout
    _one_deprecation(old.stderr, f"--format {value}", " ".join(flags) or "the default (no option)")


def test_recipes_old_format_refuses_an_unknown_value(run_cli):
    result = run_cli("llm", "recipes", "--format", "xml")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "--format must be one of text, markdown, json" in result.stderr
