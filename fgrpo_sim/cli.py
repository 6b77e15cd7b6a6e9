"""The `fgrpo` command line: a thin typer app over the library.

Each command group lives in `fgrpo_sim/commands/<group>.py` and keeps heavy imports (torch models,
trl, transformers) inside its functions, so `fgrpo --help` stays fast. Bad input of any kind ends as
one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import sys

import typer
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


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `fgrpo` console script."""
    try:
        result = app(args=argv, prog_name="fgrpo", standalone_mode=False)
    except click_exceptions.NoArgsIsHelpError as exc:  # `fgrpo theory` alone: show that group's help
        print(exc.format_message())
        sys.exit(0)
    except click_exceptions.UsageError as exc:  # unknown option, bad type, missing argument
        message = exc.format_message()
        if "unexpected extra argument" in message:  # `--n 4 8`: the space-separated list habit
            message += "; lists take commas, not spaces: write --n 4,8,16"
        _fail(message)
    except typer.Abort:
        print("fgrpo: aborted", file=sys.stderr)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (ValueError, OSError) as exc:  # OSError: a missing, unreadable or unwritable file or folder
        _fail(str(exc))
    except MemoryError as exc:  # e.g. a huge --bootstrap: say so in one line, not numpy's traceback
        _fail(f"out of memory ({exc or 'MemoryError'}); use smaller settings")
    except KeyboardInterrupt:
        print("fgrpo: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    main()
