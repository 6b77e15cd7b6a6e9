"""The `fgrpo` command line: a thin typer app over the library.

Each command group lives in `fgrpo_sim/commands/<group>.py` and keeps heavy imports (torch models,
trl, transformers) inside its functions, so `fgrpo --help` stays fast. Bad input of any kind ends as
one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import csv
import functools
import sys

import typer
import typer.main

try:  # typer >= 0.20 vendors click and raises the vendored click's exceptions
    from typer._click import exceptions as click_exceptions
except ImportError:  # older typer runs on the click package
    from click import exceptions as click_exceptions
# click >= 8.2 raises this for a bare group (`fgrpo theory`); older click prints the help and exits 0 itself
NO_ARGS_IS_HELP = getattr(click_exceptions, "NoArgsIsHelpError", ())

from fgrpo_sim import exit_130
from fgrpo_sim.commands import check, figures, llm, maze, passk, plan, simulate, theory
from fgrpo_sim.atomic_io import note_typed_path, typed_paths
from fgrpo_sim.extras import missing_extra_line

app = typer.Typer(
    name="fgrpo",
    help=(
        "F-GRPO toolkit (arXiv 2602.06717): derive the theory, simulate focal-weighted group RL, "
        "train and evaluate real models, and regenerate every figure."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# short_help: the one-line summaries of `fgrpo --help` (click cuts a long help at its first period,
# which lands inside "et al." or "Sec.")
app.add_typer(theory.app, name="theory", short_help="Tail-miss probability, its peak N*, m_gamma, derivations.")
app.add_typer(simulate.app, name="simulate", short_help="Categorical and population simulators -> result tables.")
app.add_typer(llm.app, name="llm", short_help="Prepare data, train and evaluate language models (TRL).")
app.add_typer(maze.app, name="maze", short_help="Single-solution Maze experiment (paper Fig 6 and 7).")
figures.register(app)
check.register(app)
passk.register(app)
plan.register(app)


def _fail(message: str) -> None:
    message = " ".join(str(message).split())  # one line, whatever the exception carried
    print(f"fgrpo: error: {message}", file=sys.stderr)
    sys.exit(2)


@functools.cache
def _command():
    """The click command tree of `app`, every path parameter guarded against an empty value. Built once per
    process (about 50 ms): `merge_repeated_options` and `main` both read it on every call."""
    command = typer.main.get_command(app)
    _guard_empty_paths(command)
    _set_placeholders(command)
    return command


def _set_placeholders(command) -> None:
    """Every option's `--help` placeholder from one scheme (commands/options.py: INTEGER, NUMBER, TEXT, PATH;
    INTEGERS, NUMBERS, NAMES for lists), whatever a typer release would print."""
    from fgrpo_sim.commands.options import placeholder

    for sub in getattr(command, "commands", {}).values():
        _set_placeholders(sub)
    for param in getattr(command, "params", []):
        if param.param_type_name == "option":  # arguments are shown by their names
            param.metavar = placeholder(param)


def _is_path_param(param) -> bool:
    """A parameter whose values are file or folder paths, whichever typer built it (click's `Path` type up to
    typer 0.28; from 0.29 on, typer converts itself and keeps the annotation)."""
    import typing
    from pathlib import Path

    if getattr(getattr(param, "type", None), "name", "") == "path":
        return True
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    return annotation is Path or Path in typing.get_args(annotation)


def _help_of(command, param) -> str:
    """A parameter's help text: click keeps it on options, typer >= 0.29 on arguments too; older typer keeps an
    argument's help only on the command function's `typer.Argument(...)` default, so read it there."""
    import inspect

    text = getattr(param, "help", None)
    if not text and getattr(command, "callback", None) is not None:
        try:
            default = inspect.signature(command.callback).parameters[param.name].default
        except (KeyError, TypeError, ValueError):
            default = None
        text = getattr(default, "help", None)
    return text or ""


def _names_a_model(command, param) -> bool:
    """A name that is loaded, a folder or a hub id (its help says "hub"): empty, it would be the current
    folder and fail far away with huggingface_hub's repo-id rules (`--model ''`, `prepare-data ''`)."""
    return "hub" in _help_of(command, param).lower()


def _guard_empty_paths(command) -> None:
    """Refuse `--out ''` and a positional `''` where a path is expected: Path("") is Path("."), so the command
    would write into (or read) the current folder. A value typed with a trailing "/" is noted
    (atomic_io.note_typed_path): a file output spelled as a folder is refused wherever it is checked. What typer does with an empty string has changed between
    releases, so the check wraps each path parameter's `process_value`, which every release calls with the raw
    command-line value."""
    for sub in getattr(command, "commands", {}).values():
        _guard_empty_paths(sub)
    for param in getattr(command, "params", []):
        if not (_is_path_param(param) or _names_a_model(command, param)) or "process_value" in vars(param):
            continue

        def process_value(ctx, value, _param=param, _process=param.process_value):
            raw = value if isinstance(value, (list, tuple)) else [value]
            if any(isinstance(v, str) and not v.strip() for v in raw):
                name = _param.opts[0] if _param.param_type_name == "option" else (_param.metavar or _param.name.upper())
                raise ValueError(f"{name} is empty; give a path" + ("" if _is_path_param(_param) else " or a hub id"))
            for v in raw:  # "D/new/" becomes Path("D/new"): keep the slash's meaning for atomic_io.check_writable
                note_typed_path(v)
            return _process(ctx, value)

        param.process_value = process_value


def _leaf_command(argv: list[str]):
    """The click command that `argv` names and the index of its first own argument."""
    command = _command()
    i = 0
    while hasattr(command, "commands") and i < len(argv) and argv[i] in command.commands:
        command = command.commands[argv[i]]
        i += 1
    return command, i


def _is_list_option(param) -> bool:
    """A comma-separated list option (`--n 4,8,16`): one declared with options.list_option."""
    from fgrpo_sim.commands.options import list_parser

    return list_parser(param) is not None


def apply_deprecated_spellings(argv: list[str]) -> list[str]:
    """`argv` with last release's option spellings (`--gammas`, `--group-sizes`, ...) renamed, each noted once
    on stderr: see commands/deprecated.py."""
    from fgrpo_sim.commands.deprecated import rewrite_deprecated

    command, start = _leaf_command(argv)
    if hasattr(command, "commands"):
        return argv
    return rewrite_deprecated(argv, tuple(argv[:start]), start)


class _OldSpelling:
    """What the argv walk needs of an old option that stands for flags (`llm recipes --format json`): it
    takes a value, and it is no list."""

    is_flag = count = multiple = False

    def __init__(self, name: str):
        self.name, self.opts = name, [name]


def _option_uses(argv: list[str], start: int, by_name: dict):
    """(index, width, spelling, parameter, value) of each option in argv[start:] up to `--` (value None for a
    flag); `by_name` maps each spelling to its click parameter."""
    i = start
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        param = by_name.get(name) if token.startswith("-") and token != "-" else None
        if param is None:
            i += 1
            continue
        if getattr(param, "is_flag", False) or getattr(param, "count", False):
            yield i, 1, name, param, None
            i += 1
            continue
        if not eq:
            if i + 1 >= len(argv):
                return  # click reports the missing value
            value = argv[i + 1]
        yield i, 1 if eq else 2, name, param, value
        i += 1 if eq else 2


def _spellings(command, path: tuple[str, ...]) -> dict:
    """Every option spelling of `command` -> its click parameter, last release's spellings
    (commands/deprecated.py) included: an old name that became one option maps to that option's parameter."""
    from fgrpo_sim.commands.deprecated import RENAMED

    by_name = {opt: p for p in command.params if p.param_type_name == "option"
               for opt in [*p.opts, *getattr(p, "secondary_opts", [])]}
    for old, new in RENAMED.get(path, {}).items():
        by_name[old] = by_name[new] if isinstance(new, str) else _OldSpelling(old)
    return by_name


def merge_repeated_options(argv: list[str]) -> list[str]:
    """One rule for a list option given twice: its values join (`--n 4 --n 8` is `--n 4,8`, so a value
    repeated across them is refused like `4,4`), in every command, as `theory` always did; click would
    keep only the last. A single-value option given twice keeps the last (the usual override of a
    script's default); options declared repeatable (`llm dnll-rare --model`) are left to click.
    An option given in its old spelling and its new one (`--gammas 0 --gamma 1`) is refused, naming both:
    read before the old spellings are rewritten, while the two can still be told apart."""
    from fgrpo_sim.commands.deprecated import refuse_old_with_new

    command, start = _leaf_command(argv)
    if hasattr(command, "commands"):
        return argv
    uses = list(_option_uses(argv, start, _spellings(command, tuple(argv[:start]))))
    refuse_old_with_new(tuple(argv[:start]), [spelling for _, _, spelling, _, _ in uses])
    seen: dict[str, list[tuple]] = {}  # a list option's name -> its uses (index, width, spelling, param, value)
    for use in uses:
        if use[4] is not None and _is_list_option(use[3]):
            seen.setdefault(use[3].name, []).append(use)
    drop: set[int] = set()
    replace: dict[int, list[str]] = {}
    for param_uses in seen.values():
        if len(param_uses) < 2:
            continue
        first = param_uses[0]
        replace[first[0]] = [first[2], ",".join(u[4] for u in param_uses)]
        drop.update(j for u in param_uses for j in range(u[0], u[0] + u[1]))
    if not drop:
        return argv
    merged: list[str] = []
    for j, token in enumerate(argv):
        if j in replace:
            merged.extend(replace[j])
        elif j not in drop:
            merged.append(token)
    return merged


def _without_repeated_name(message: str) -> str:
    """click's "Invalid value for '--n': --n lists 4 twice" as "--n lists 4 twice": a list option's parser
    (validation.CommaList) names the option itself. typer >= 0.20 converts with pydantic, which puts
    "Value error, " before the parser's words; it goes too."""
    import re

    match = re.match(r"Invalid value for '([^']+)': (?:Value error, )?", message)
    if match and message[match.end():].startswith(match.group(1) + " "):
        return message[match.end():]
    return message


def _interrupted() -> None:
    from fgrpo_sim import INTERRUPTED_LINE
    from fgrpo_sim.output_lock import last_locked_output

    resumable = last_locked_output()
    if resumable is not None:
        line = (f"fgrpo: interrupted; the finished work is kept in {resumable}: run the same command again to "
                "resume from it")
    else:
        line = INTERRUPTED_LINE
    print(line, file=sys.stderr)
    exit_130()


def _os_error(exc: OSError) -> str:
    """An OSError as one line that names the file (a full disk's write error carries no file name)."""
    import errno

    text = str(exc)
    if exc.errno == errno.ENOSPC and not exc.filename:
        text = f"no space left on device while writing an output ({exc.strerror})"
    return text


def _printable_names() -> None:
    """A legal non-UTF-8 file name reaches Python with lone surrogates (surrogateescape); printing it
    ("wrote NAME") must not fail after the work, so stdout escapes them as stderr already does."""
    import contextlib

    with contextlib.suppress(AttributeError, ValueError, OSError):  # a stream that cannot be reconfigured
        sys.stdout.reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> None:
    """The command line, once imported (the `fgrpo` console script and `python -m fgrpo_sim` enter through
    `fgrpo_sim.__main__.run`, which also turns Ctrl-C during this module's imports into the one line)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _printable_names()
    try:
        argv = apply_deprecated_spellings(merge_repeated_options(argv))
        # obj: what a command may call back, without importing this module (the rehearsal runs `fgrpo` commands)
        with typed_paths():  # what a path's typed spelling says (a trailing "/": a folder), for this call only
            result = _command().main(args=argv, prog_name="fgrpo", standalone_mode=False, obj={"run_cli": main})
    except NO_ARGS_IS_HELP as exc:  # `fgrpo theory` alone: show that group's help
        print(exc.format_message())
        sys.exit(0)
    except click_exceptions.UsageError as exc:  # unknown option, bad type, missing argument
        message = _without_repeated_name(exc.format_message())
        if "unexpected extra argument" in message:  # `--n 4 8`: the space-separated list habit
            message += "; lists take commas, not spaces: write --n 4,8,16"
        _fail(message)
    except typer.Abort:  # a declined prompt or end of input (typer reports Ctrl-C as a returned 130, below)
        print("fgrpo: aborted", file=sys.stderr)
        exit_130()
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except ValueError as exc:
        _fail(str(exc))
    except ModuleNotFoundError as exc:  # a command of an extra, run without it: one line naming the extra
        line = missing_extra_line(exc.name)
        if line is None:
            raise
        _fail(line)
    except csv.Error as exc:  # a CSV parse error outside csv_rows (which names file and line): still one line
        _fail(f"cannot read a CSV input: {exc}")
    except OSError as exc:  # a missing, unreadable or unwritable file or folder
        _fail(_os_error(exc))
    except MemoryError as exc:  # e.g. a huge --bootstrap: say so in one line, not numpy's traceback
        _fail(f"out of memory ({exc or 'MemoryError'}); use smaller settings")
    except KeyboardInterrupt:
        _interrupted()
    if result == 130:  # typer's core catches Ctrl-C and *returns* 130 (standalone_mode=False): say so
        _interrupted()
    sys.exit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    main()
