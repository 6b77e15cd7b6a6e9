"""One vocabulary across commands (issues 32 and 39): the real command tree, walked option by option.

Group size is --n, the focal exponent --gamma, a list of seed values --seeds, a count of repeats --runs, k of
pass@k --k; a name that is a list anywhere is a list everywhere (one declared list type, options.list_option;
a command that runs one value of it says so); every command that prints a result has --json, whose output
has one shape whatever the count; one placeholder scheme; every long command has --progress/--no-progress;
--device defaults to auto. Last release's spellings still work, each with one deprecation line on stderr,
and are refused beside their new spelling.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from fgrpo_sim.cli import _command, _is_list_option

REPO = Path(__file__).resolve().parents[1]

#: Spellings that must not appear in any --help: each has a new name (commands/deprecated.py).
BANNED = {"--group-sizes", "--gammas", "--format", "--optimizers", "--pass-k"}

#: Commands that print no result of their own, and why (every other command must have --json).
NO_RESULT = {
    "figures": "writes figure files and names them",
    "llm rehearse": "a pipeline test: one line per stage, not a result",
    "llm export-verl": "writes a checkpoint folder",
    "maze show": "draws mazes as text pictures",
}

#: Commands that run for minutes or more: each shows progress bars, switchable.
LONG = {"figures", "check", "passk", "simulate categorical", "simulate population", "simulate group-size",
        "llm train", "llm eval", "llm dnll-rare", "llm report", "maze run"}

#: Concepts whose option is a list wherever it appears (a command that runs one value takes a list of one and
#: says why: validation.CommaList's `one`), never a list in one command and a single value in another.
LIST_CONCEPTS = ("--n", "--gamma", "--seeds", "--mu", "--tau", "--rho", "--optimizer", "--parametrisation", "--k")

#: Options that repeat instead of taking commas, and why (every other option given twice joins or overrides).
REPEATABLE = {("llm dnll-rare", "--model"): "model folders and hub ids may hold commas"}

#: The placeholder scheme of every --help (commands/options.py PLACEHOLDERS).
PLACEHOLDERS = {"INTEGER", "NUMBER", "TEXT", "PATH", "INTEGERS", "NUMBERS", "NAMES"}


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


def _annotation(command, param) -> str:
    """The command function's annotation of `param` as text (the modules use postponed annotations)."""
    annotation = inspect.signature(command.callback).parameters[param.name].annotation
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))


LEAVES = dict(_leaves())


def _where(predicate) -> list[tuple[str, str]]:
    """(command path, option) for every option of every command that `predicate(path, param)` selects: tests
    are generated for the options a rule applies to, so every instance asserts (issue 44: 81 of 138 did not)."""
    return sorted((path, p.opts[0]) for path, command in LEAVES.items() for p in _options(command)
                  if predicate(path, p))


def _param(path: str, option: str):
    return next(p for p in _options(LEAVES[path]) if p.opts[0] == option)


PROGRESS_OPTIONS = _where(lambda path, p: {"--progress", "--no-progress"} & set(_names(p)))
DEVICE_OPTIONS = _where(lambda path, p: "--device" in p.opts)
LIST_OPTIONS = _where(lambda path, p: _is_list_option(p))
SEQUENCE_OPTIONS = _where(lambda path, p: "Sequence" in _annotation(LEAVES[path], p))
CONCEPT_OPTIONS = _where(lambda path, p: p.opts[0] in LIST_CONCEPTS)
SEEDS_OPTIONS = _where(lambda path, p: p.opts[0] == "--seeds")
RUNS_OPTIONS = _where(lambda path, p: p.opts[0] == "--runs")
MULTIPLE_OPTIONS = _where(lambda path, p: p.multiple)
PLACEHELD_OPTIONS = _where(lambda path, p: not (p.is_flag or p.count))


def test_every_generated_list_holds_options():
    """Each rule below applies somewhere (a list that emptied would run no instance and prove nothing)."""
    for name, found in [("progress", PROGRESS_OPTIONS), ("device", DEVICE_OPTIONS), ("list", LIST_OPTIONS),
                        ("sequence", SEQUENCE_OPTIONS), ("concept", CONCEPT_OPTIONS), ("seeds", SEEDS_OPTIONS),
                        ("runs", RUNS_OPTIONS), ("multiple", MULTIPLE_OPTIONS), ("placeholder", PLACEHELD_OPTIONS)]:
        assert found, name
    assert {(path, option) for path, option in MULTIPLE_OPTIONS} == set(REPEATABLE)


def test_the_walk_sees_every_command():
    assert {"theory tail-miss", "simulate categorical", "llm eval", "llm recipes", "maze run", "check"} <= set(LEAVES)
    assert set(NO_RESULT) <= set(LEAVES) and LONG <= set(LEAVES)


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_no_banned_spelling_in_help(path):
    names = {name for p in _options(LEAVES[path]) for name in _names(p)}
    assert not names & BANNED, f"fgrpo {path}: {sorted(names & BANNED)} has a new name"


@pytest.mark.parametrize("path, option", PROGRESS_OPTIONS)
def test_progress_is_a_pair(path, option):
    param = _param(path, option)
    assert param.opts == ["--progress"] and param.secondary_opts == ["--no-progress"], (path, _names(param))
    assert param.default is True, f"fgrpo {path}: progress is on by default"


@pytest.mark.parametrize("path", sorted(LONG))
def test_long_commands_have_progress_pair(path):
    assert any(_names(p) == ["--progress", "--no-progress"] for p in _options(LEAVES[path])), path


@pytest.mark.parametrize("path", sorted(set(LEAVES) - set(NO_RESULT)))
def test_result_commands_have_json(path):
    assert any(p.opts == ["--json"] and p.is_flag for p in _options(LEAVES[path])), f"fgrpo {path} lacks --json"


@pytest.mark.parametrize("path, option", DEVICE_OPTIONS)
def test_device_defaults_to_auto(path, option):
    param = _param(path, option)
    assert param.default == "auto", f"fgrpo {path} --device defaults to {param.default!r}"


@pytest.mark.parametrize("path, option", LIST_OPTIONS)
def test_comma_separated_options_take_text(path, option):
    """An option whose help promises a comma-separated list must reach the command as text (or repeated
    text), which the command splits: an int or float option would refuse "4,8" before the command runs."""
    annotation = _annotation(LEAVES[path], _param(path, option))
    assert "str" in annotation or "Sequence" in annotation, f"fgrpo {path} {option}: help says comma-separated"


@pytest.mark.parametrize("path, option", SEQUENCE_OPTIONS)
def test_list_options_use_the_one_list_type(run_cli, path, option):
    """Every option the command receives as a list is parsed by validation.CommaList (list_option), whose
    rules (no empty element, no repeat) hold everywhere; a bad value fails while click parses."""
    assert _is_list_option(_param(path, option)), f"fgrpo {path} {option}: a list option's help says comma-separated"
    result = run_cli(*path.split(), option, "1,1")  # click converts it before any work
    assert result.exit_code == 2
    assert result.stderr == f"fgrpo: error: {option} lists 1 twice; give each value once, got '1,1'\n"


@pytest.mark.parametrize("path, option", CONCEPT_OPTIONS)
def test_list_concepts_take_lists(path, option):
    assert _is_list_option(_param(path, option)), f"fgrpo {path} {option} must take a comma-separated list"


@pytest.mark.parametrize("path, option", SEEDS_OPTIONS)
def test_seeds_are_seed_values(path, option):
    param = _param(path, option)
    assert _is_list_option(param) and "seed" in param.help.lower(), path


@pytest.mark.parametrize("path, option", RUNS_OPTIONS)
def test_runs_is_a_count(path, option):
    param = _param(path, option)
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


# ---------------------------------------------------------------- issue 39: one vocabulary, finished

@pytest.mark.parametrize("path, option", MULTIPLE_OPTIONS)
def test_only_declared_options_repeat(path, option):
    """One list type: a list option takes commas (and joins when given twice); click's `multiple` is left to
    the options REPEATABLE names (theory's options were repeatable text, split by a parser of its own)."""
    assert (path, option) in REPEATABLE, f"fgrpo {path} {option}: declare it with list_option"


def test_list_options_are_known_by_their_declaration_not_their_help():
    """cli's argv pre-parser asks the option's CommaList, not its help text: "comma" in a help makes no list
    (`--beta 'A,B'` is one pair), and a list option whose help never says "comma" is still one."""
    import copy

    plain = next(p for p in _options(LEAVES["simulate population"]) if p.opts == ["--beta"])
    worded = copy.copy(plain)
    worded.help = "A comma-separated pair A,B."
    assert not _is_list_option(worded)
    rho = next(p for p in _options(LEAVES["simulate population"]) if p.opts == ["--rho"])
    assert "comma" not in rho.help.lower() and _is_list_option(rho)


@pytest.mark.parametrize("path, option", PLACEHELD_OPTIONS)
def test_one_placeholder_scheme(path, option):
    """Every option's placeholder comes from one scheme on every typer (typer 0.29 alone printed <int>,
    <list[str]> on the numeric --n, and the list type INTEGERS)."""
    param = _param(path, option)
    assert param.metavar in PLACEHOLDERS, (path, param.opts, param.metavar)
    assert param.metavar.endswith("S") == _is_list_option(param), (path, param.opts, param.metavar)


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_no_typer_placeholder_in_help(run_cli, path):
    import re

    result = run_cli(*path.split(), "--help")
    options = [line for line in result.stdout.splitlines() if line.lstrip().startswith("--")]
    assert result.exit_code == 0 and options, path  # --help itself is one
    typed = re.findall(r"<[a-z\[\]]+>", "\n".join(options))  # typer 0.29's own placeholders (<int>, <list[str]>)
    assert not typed, f"fgrpo {path} --help: {typed}"


@pytest.mark.parametrize("args", [
    ["theory", "tail-miss", "--n", "{count}", "--mu", "0.5"],
    ["theory", "peak", "--rho", "{count}"],
    ["theory", "lr-multiplier", "--gamma", "{count}"],
])
def test_json_has_one_shape_whatever_the_count(run_cli, args):
    """--json prints JSON Lines, one object per row with the same keys, for one value and for several (it
    printed an object for one row and a list for several, and tail-miss's n was a number or a list)."""
    shapes = []
    for values in ("1", "1,2"):
        value = values if "--n" in args else ",".join(f"0.{v}" for v in values.split(","))
        result = run_cli(*[value if a == "{count}" else a for a in args], "--json")
        assert result.exit_code == 0, result.stderr
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(rows) == len(values.split(",")) and all(isinstance(row, dict) for row in rows)
        assert all(not isinstance(v, list) for row in rows for v in row.values())
        shapes.append({tuple(row) for row in rows})
    assert shapes[0] == shapes[1] and len(shapes[0]) == 1


def test_k_is_one_name(run_cli, tmp_path):
    """k of pass@k is --k in every command; `simulate population --pass-k` still works for a release."""
    common = ["simulate", "population", "--prompts", "4", "--prompt-batch", "2", "--steps", "1", "--runs", "1",
              "--n", "2", "--gamma", "0", "--no-progress", "--device", "cpu", "--json"]
    new = run_cli(*common, "--out", tmp_path / "new.csv", "--k", "1,2")
    old = run_cli(*common, "--out", tmp_path / "old.csv", "--pass-k", "1,2")
    assert new.exit_code == old.exit_code == 0, (new.stderr, old.stderr)
    _one_deprecation(old.stderr, "--pass-k", "--k")
    assert "pass@2" in json.loads(new.stdout)["summary"][0] and json.loads(old.stdout) == {
        **json.loads(new.stdout), "out": str(tmp_path / "old.csv")}


@pytest.mark.parametrize("path, option, values, why", [
    ("simulate population", "--optimizer", "adam,sgd", "one --lr fits one optimizer"),
    ("simulate population", "--parametrisation", "axis,dense", "one population per call"),
    ("simulate population", "--rho", "0.1,0.2", "one population per call"),
    ("simulate categorical", "--optimizer", "adam,sgd", "--study sweeps optimizers"),
    ("maze compare", "--n", "4,8", "one group size"),
    ("llm report", "--k", "8,16", "one large k"),
])
def test_a_list_name_where_one_value_runs_says_why(run_cli, tmp_path, path, option, values, why):
    args = {"simulate population": ["--out", tmp_path / "p.csv"], "simulate categorical": ["--out", tmp_path / "c.csv"],
            "maze compare": [tmp_path, tmp_path, "--gamma-a", "1"], "llm report": [tmp_path / "m.csv", "--out-dir",
                                                                                 tmp_path / "r"]}[path]
    result = run_cli(*path.split(), *args, option, values)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"fgrpo: error: {option} takes one value here (") and why in result.stderr
    assert result.stderr.count("\n") == 1


def test_the_grpo_baseline_rule_is_one_rule(run_cli, tmp_path):
    """gamma 0 (the unweighted baseline) always runs, listed or not, in both population commands, and both
    --help texts say so: group-size refused --gamma 0,0.5, population --gamma 0.5 dropped GRPO in silence."""
    from fgrpo_sim.commands.simulate_population import BASELINE_RULE

    for path in ("simulate population", "simulate group-size"):
        gamma = next(p for p in _options(LEAVES[path]) if p.opts == ["--gamma"])
        assert BASELINE_RULE in gamma.help, path
    result = run_cli("simulate", "population", "--out", tmp_path / "p.csv", "--prompts", "4", "--prompt-batch", "2",
                     "--steps", "1", "--runs", "1", "--n", "2", "--gamma", "0.5", "--no-low-lr", "--no-progress",
                     "--device", "cpu", "--json")
    assert result.exit_code == 0, result.stderr
    assert {row["variant"] for row in json.loads(result.stdout)["summary"]} == {"GRPO", "F-GRPO gamma=0.5"}
    # group-size accepts 0 in the list (the error is the next check's, not --gamma's) and needs an exponent > 0
    listed = run_cli("simulate", "group-size", "--out", tmp_path / "g.csv", "--gamma", "0,0.5", "--populations", "1")
    assert listed.exit_code == 2 and "populations" in listed.stderr and "gamma" not in listed.stderr
    alone = run_cli("simulate", "group-size", "--out", tmp_path / "g.csv", "--gamma", "0")
    assert alone.exit_code == 2 and "--gamma must list an exponent > 0" in alone.stderr


@pytest.mark.parametrize("path, old", [(path, old) for path, renamed in __import__(
    "fgrpo_sim.commands.deprecated", fromlist=["RENAMED"]).RENAMED.items() for old in renamed])
def test_old_spelling_beside_its_new_one_is_refused(path, old):
    """Every row of commands/deprecated.py: the old spelling and the new one in one call are refused naming
    both, whichever comes first (they were rewritten to one name, then joined or overridden)."""
    from fgrpo_sim.cli import merge_repeated_options
    from fgrpo_sim.commands.deprecated import RENAMED, new_spellings

    value = "json" if isinstance(RENAMED[path][old], dict) else "1"
    news = new_spellings(path, old)
    assert news and old not in news  # every row names a new spelling, other than the old one
    for new in news:
        takes_value = not next(p for p in _options(LEAVES[" ".join(path)]) if new in p.opts).is_flag
        given = [new, "2"] if takes_value else [new]
        for argv in ([*path, old, value, *given], [*path, *given, f"{old}={value}"]):
            with pytest.raises(ValueError, match=f"^{old} is the old spelling of {new}; give only {new}, not both$"):
                merge_repeated_options(argv)


def test_an_old_spelling_given_twice_joins_with_one_notice(run_cli, tmp_path):
    common = ["--seeds", "0", "--steps", "2", "--num-actions", "4", "--num-correct", "1", "--backend", "torch",
              "--device", "cpu", "--no-progress", "--json", "--n", "2"]
    result = run_cli("simulate", "categorical", "--out", tmp_path / "t.csv", *common, "--gammas", "0", "--gammas", "1")
    assert result.exit_code == 0, result.stderr
    _one_deprecation(result.stderr, "--gammas", "--gamma")
    assert sorted(row["gamma"] for row in json.loads(result.stdout)["final_means"]) == [0, 1]


@pytest.mark.parametrize("path", ["llm prepare-data", "llm train", "llm dnll-rare"])
def test_json_only_commands_read_as_text_by_default(path):
    """llm train / prepare-data / dnll-rare printed JSON only: a readable default now, JSON with --json."""
    assert any(p.opts == ["--json"] and p.is_flag and p.default is False for p in _options(LEAVES[path])), path


def test_prepare_data_prints_lines_then_json_with_the_flag(run_cli, tmp_path):
    import re

    source = tmp_path / "s.jsonl"
    source.write_text("".join(json.dumps({"problem": f"{i}+1?", "answer": str(i + 1)}) + "\n" for i in range(3))
                      + json.dumps({"problem": "", "answer": "1"}) + "\n")
    text = run_cli("llm", "prepare-data", source, "--out", tmp_path / "a.jsonl")
    assert text.exit_code == 0, text.stderr
    lines = dict(line.split(None, 1) for line in text.stdout.splitlines())
    data = run_cli("llm", "prepare-data", source, "--out", tmp_path / "b.jsonl", "--json")
    assert data.exit_code == 0, data.stderr
    report = json.loads(data.stdout)
    assert lines["rows_read"] == str(report["rows_read"]) == "4" and lines["kept"] == str(report["kept"]) == "3"
    for reason, count in report["dropped"].items():  # nested keys joined with dots, one line each
        assert re.search(rf"^dropped\.{re.escape(reason)} +{count}$", text.stdout, re.M), text.stdout


def test_passk_json_has_one_shape_for_one_file_and_several(run_cli, tmp_path):
    """`passk --json` printed an object for one file and {"files": [...]} for several: JSON Lines now, one
    object per file with the same keys (--out holds the same lines)."""
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps({"problem_id": f"p{i}", "n": 4, "c": i}) + "\n" for i in range(4)))
    copy = tmp_path / "s.jsonl"  # a second file: one file given twice is refused (issue 50)
    copy.write_text(results.read_text())
    keys = []
    for files in ([results], [results, copy]):
        out = tmp_path / f"out{len(files)}.jsonl"
        result = run_cli("passk", *files, "--k", "1,2", "--bootstrap", "10", "--json", "--out", out)
        assert result.exit_code == 0, result.stderr
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(rows) == len(files) and out.read_text() == result.stdout
        keys.append({tuple(row) for row in rows})
    assert keys[0] == keys[1] and len(keys[0]) == 1
