"""The `fgrpo` command line: a thin typer app over the library.

Each command group lives in `fgrpo_sim/commands/<group>.py` and keeps heavy imports (torch models,
trl, transformers) inside its functions, so `fgrpo --help` stays fast. Bad input of any kind ends as
one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import csv
import sys

import typer
import typer.main
from typer._click import exceptions as click_exceptions  # typer >= 0.20 vendors click

from fgrpo_sim.commands import check, figures, llm, maze, passk, plan, simulate, theory

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


def _leaf_command(argv: list[str]):
    """The click command that `argv` names and the index of its first own argument."""
    command = typer.main.get_command(app)
    i = 0
    while hasattr(command, "commands") and i < len(argv) and argv[i] in command.commands:
        command = command.commands[argv[i]]
        i += 1
    return command, i


def _is_list_option(param) -> bool:
    """A comma-separated list option (`--n 4,8,16`): every such option says "comma" in its help."""
    import re

    return re.search(r"\bcomma(-separated)?\b", (getattr(param, "help", None) or "").lower()) is not None


def _is_path_option(param) -> bool:
    import typing
    from pathlib import Path

    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    return annotation is Path or Path in typing.get_args(annotation)


def _names_a_file_or_model(param) -> bool:
    """A path, or a name that is loaded (its help says "hub id"): empty, it would mean the current folder
    (Path("") is ".") and fail far away ("a folder, not a file: .", huggingface_hub's repo-id rules)."""
    return _is_path_option(param) or "hub" in (getattr(param, "help", None) or "").lower()


def _argument_name(param) -> str:
    return getattr(param, "metavar", None) or param.name.upper()  # as the usage line shows it: RESULTS


def _refuse_empty_arguments(command, argv: list[str], start: int, by_name: dict) -> None:
    """An empty positional argument that names a file or a model: one line naming it, at once."""
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    position, i = 0, start
    while i < len(argv):
        token = argv[i]
        if token == "--":
            rest = argv[i + 1:]
            break
        param = by_name.get(token.partition("=")[0]) if token.startswith("-") and token != "-" else None
        if param is not None:
            takes_value = not (getattr(param, "is_flag", False) or getattr(param, "count", False) or "=" in token)
            i += 2 if takes_value else 1
            continue
        if not token.startswith("-") or token == "-":
            if position < len(arguments) and token == "" and _names_a_file_or_model(arguments[position]):
                raise ValueError(f"{_argument_name(arguments[position])} is empty; give a path")
            position += 1
        i += 1
    else:
        return
    for token in rest:  # after "--" every token is positional
        if position < len(arguments) and token == "" and _names_a_file_or_model(arguments[position]):
            raise ValueError(f"{_argument_name(arguments[position])} is empty; give a path")
        position += 1


def merge_repeated_options(argv: list[str]) -> list[str]:
    """One rule for a list option given twice: its values join (`--n 4 --n 8` is `--n 4,8`, so a value
    repeated across them is refused like `4,4`), in every command, as `theory` always did; click would
    keep only the last. A single-value option given twice keeps the last (the usual override of a
    script's default); options declared repeatable (`llm dnll-rare --model`) are left to click."""
    command, start = _leaf_command(argv)
    if hasattr(command, "commands"):
        return argv
    by_name = {opt: p for p in command.params if p.param_type_name == "option"
               for opt in [*p.opts, *getattr(p, "secondary_opts", [])]}
    _refuse_empty_arguments(command, argv, start, by_name)
    seen: dict[str, list[tuple[int, int, str, str]]] = {}  # param name -> (first index, count, spelling, value)
    i = start
    while i < len(argv):
        token = argv[i]
        if token == "--":
            break
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        param = by_name.get(name) if token.startswith("-") and token != "-" else None
        if param is None or getattr(param, "is_flag", False) or getattr(param, "count", False):
            i += 1
            continue
        width = 1 if eq else 2
        if not eq:
            if i + 1 >= len(argv):
                break  # click reports the missing value
            value = argv[i + 1]
        if value == "" and _names_a_file_or_model(param):  # Path("") is ".": it would write into the current folder
            raise ValueError(f"{name} is empty; give a path" + (" or a hub id" if not _is_path_option(param) else ""))
        if not param.multiple:
            seen.setdefault(param.name, []).append((i, width, name, value))
        i += width
    drop: set[int] = set()
    replace: dict[int, list[str]] = {}
    for uses in seen.values():
        if len(uses) < 2:
            continue
        values = [u[3] for u in uses]
        if _is_list_option(by_name[uses[0][2]]):
            first = uses[0]
            replace[first[0]] = [first[2], ",".join(values)]
            drop.update(j for u in uses[1:] for j in range(u[0], u[0] + u[1]))
            drop.update(range(first[0], first[0] + first[1]))
    if not drop:
        return argv
    merged: list[str] = []
    for j, token in enumerate(argv):
        if j in replace:
            merged.extend(replace[j])
        elif j not in drop:
            merged.append(token)
    return merged


def _interrupted() -> None:
    from fgrpo_sim.output_lock import last_locked_output

    resumable = last_locked_output()
    if resumable is not None:
        where = f"the finished work is kept in {resumable}: run the same command again to resume from it"
    else:
        where = "outputs are replaced only when complete, so none is half-written: run the command again"
    print(f"fgrpo: interrupted; {where}", file=sys.stderr)
    sys.exit(130)


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
    """Entry point of the `fgrpo` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _printable_names()
    try:
        argv = merge_repeated_options(argv)
        result = app(args=argv, prog_name="fgrpo", standalone_mode=False)
    except click_exceptions.NoArgsIsHelpError as exc:  # `fgrpo theory` alone: show that group's help
        print(exc.format_message())
        sys.exit(0)
    except click_exceptions.UsageError as exc:  # unknown option, bad type, missing argument
        message = exc.format_message()
        if "unexpected extra argument" in message:  # `--n 4 8`: the space-separated list habit
            message += "; lists take commas, not spaces: write --n 4,8,16"
        _fail(message)
    except typer.Abort:  # a declined prompt or end of input (typer reports Ctrl-C as a returned 130, below)
        print("fgrpo: aborted", file=sys.stderr)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except ValueError as exc:
        _fail(str(exc))
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
