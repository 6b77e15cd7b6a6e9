"""Which options the user typed, and refusing those that conflict or that a mode would ignore.

click fills every option with its default, so a command cannot tell `--no-system-prompt` alone from
`--system-prompt x --no-system-prompt` by the values; the parameter source can. An option given on the
command line that would be dropped in silence is an error naming it.
"""

from __future__ import annotations

import typer


def given(ctx: typer.Context, name: str) -> bool:
    """Was the parameter `name` given on the command line (not its default)?"""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def flag(ctx: typer.Context, name: str) -> str:
    """The option's spelling(s) as the help shows them, e.g. --resume/--no-resume."""
    param = next(p for p in ctx.command.params if p.name == name)
    return "/".join(param.opts + param.secondary_opts)


def refuse_together(ctx: typer.Context, first: str, *others: str, why: str = "give only one") -> None:
    """ValueError when `first` and one of `others` were both given (e.g. --system-prompt and --no-system-prompt)."""
    if not given(ctx, first):
        return
    for other in others:
        if given(ctx, other):
            raise ValueError(f"{flag(ctx, first)} and {flag(ctx, other)} conflict; {why}")


def refuse_unused(ctx: typer.Context, names, why: str) -> None:
    """ValueError "OPTION `why`" for the first of `names` given on the command line, which the mode at hand
    would ignore (`why`, e.g. "is not used with --study")."""
    for name in names:
        if given(ctx, name):
            raise ValueError(f"{flag(ctx, name)} {why}")


def list_option(default, name: str, kind: type = float, *, help: str, unique: bool = True, **options):
    """A comma-separated list option (`--n 4,8,16`): the command receives a list (validation.CommaList), help
    names the element type (INTEGERS, NUMBERS, NAMES) on every typer."""
    from fgrpo_sim.validation import CommaList

    parser = CommaList(name, kind, unique=unique)
    return typer.Option(default, name, parser=parser, metavar=parser.__name__.upper(), help=help, **options)
