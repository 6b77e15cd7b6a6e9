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


def list_option(default, name: str, kind: type = float, *, help: str, unique: bool = True, words: tuple = (),
                one: str | None = None, **options):
    """A comma-separated list option (`--n 4,8,16`), the CLI's one list type: the command receives a list
    (validation.CommaList). `words`: whole values that stand for a list (`passk --k auto`); `one`: why this
    command takes a single value of a name that is a list where a command sweeps it (`--optimizer`)."""
    from fgrpo_sim.validation import CommaList

    parser = CommaList(name, kind, unique=unique, words=words, one=one)
    return typer.Option(default, name, parser=parser, metavar=placeholder(parser), help=help, **options)


def focal_smoothing_option(more: str = ""):
    """`--focal-smoothing ALPHA`, one value on every command that takes --gamma (the weight's estimate)."""
    return typer.Option(0.0, "--focal-smoothing", help="alpha >= 0 (finite) of the smoothed success estimate "
                        "(c + alpha) / (N + 2 alpha) in the focal weight (1 - mu)^gamma; 0 (default) = the paper's "
                        "raw rate c / N." + more)


def list_parser(param):
    """The validation.CommaList that parses click parameter `param`, or None: the one place that says which
    options are lists (cli.merge_repeated_options joins a list option given twice). typer >= 0.29 keeps the
    parser on the parameter's type descriptor, older typer wraps it in click's FuncParamType."""
    from fgrpo_sim.validation import CommaList

    info = getattr(getattr(param, "type_descriptor", None), "parameter_info", None)
    for parser in (getattr(info, "parser", None), getattr(getattr(param, "type", None), "func", None)):
        if isinstance(parser, CommaList):
            return parser
    return None


#: `--help` placeholders, one scheme on every typer (0.16 printed INTEGER and TEXT, 0.29 prints <int> and
#: <list[str]>): a single value by its kind, a list by its elements' (a list that takes one value here too).
PLACEHOLDERS = {int: "INTEGER", float: "NUMBER", str: "TEXT", "path": "PATH", "integers": "INTEGERS",
                "numbers": "NUMBERS", "names": "NAMES"}


def placeholder(param_or_parser) -> str | None:
    """The placeholder of a list parser or a click option (None for a flag, which takes no value)."""
    from fgrpo_sim.validation import CommaList

    if isinstance(param_or_parser, CommaList):
        return PLACEHOLDERS[param_or_parser.__name__]
    param = param_or_parser
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    parser = list_parser(param)
    if parser is not None:
        return placeholder(parser)
    return PLACEHOLDERS[_value_kind(param)]


def _value_kind(param):
    """int, float, str or "path": what one value of `param` is, on every typer (click's type names before
    typer 0.29, the annotation from then on)."""
    import typing
    from pathlib import Path

    name = getattr(getattr(param, "type", None), "name", "")
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    inner = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    if name == "path" or Path in inner:
        return "path"
    if name == "integer" or int in inner:
        return int
    if name == "float" or float in inner:
        return float
    return str


#: `--executor`, `--ray-address`, `--ray-cpus`: one vocabulary on the three simulate commands (issue 47)
EXECUTOR_NAMES = ("executor", "ray_address", "ray_cpus")


def executor_option():
    return typer.Option("local", "--executor", help="Where the chunks run: local (this process, one after "
                        "another) or ray (one Ray task per chunk; needs the cluster extra). The table is the same.")


def ray_address_option():
    return typer.Option(None, "--ray-address", help="With --executor ray: the cluster to join, HOST:PORT as "
                        "`ray start --head` prints it (default: RAY_ADDRESS, else a local Ray is started).")


def ray_cpus_option():
    return typer.Option(None, "--ray-cpus", help="With --executor ray and no cluster address: CPUs of the "
                        "local Ray (chunks at a time), in [1, 100000]; default all of this machine's.")


def make_executor(ctx: typer.Context, executor: str, ray_address, ray_cpus):
    """The sim.executor.Executor the options ask for; a Ray option given with --executor local is refused."""
    from fgrpo_sim.sim.executor import Executor
    from fgrpo_sim.validation import check_choice, options_named

    check_choice("--executor", executor, ("local", "ray"))
    if executor == "local":
        refuse_unused(ctx, ("ray_address", "ray_cpus"), "needs --executor ray")
    if ray_cpus is not None and ray_address is not None:
        raise ValueError("--ray-cpus sizes a local Ray; a cluster at --ray-address has its own CPUs: give only one")
    with options_named(ray_cpus="--ray-cpus"):
        return Executor(executor, address=ray_address, cpus=ray_cpus)
