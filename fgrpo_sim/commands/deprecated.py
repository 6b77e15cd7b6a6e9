"""Old option spellings, kept working for one release (issue 32: one vocabulary across commands).

One table, applied to the command line before click parses it, so that `--help` shows only the new names
and no command carries hidden options of its own. Each old spelling used prints one line on stderr,
`fgrpo: deprecated: --gammas is now --gamma; the old spelling goes in 0.2`, and then means exactly what it
meant before (`maze run --seeds 3` was a count of runs and stays one: it becomes `--runs 3`, never a seed list).

An old spelling and its new one in one call (`--gammas 0 --gamma 1`, `--format json --json`) are refused in one
line naming both (cli.merge_repeated_options asks before the rewrite, while the two can be told apart): joined
or overridden, one of them would be dropped or doubled in silence. Likewise a figure named twice, in any
spellings (`fgrpo figures peak_map peak-map`), is refused: it would be built twice.
"""

from __future__ import annotations

import sys

#: The release that drops the old spellings.
REMOVED_IN = "0.2"

#: command path -> old option -> new option, or {old value: new tokens} where the old option's value picks
#: the new spelling (`llm recipes --format json` is `--json`).
RENAMED: dict[tuple[str, ...], dict[str, str | dict[str, list[str]]]] = {
    ("simulate", "categorical"): {"--group-sizes": "--n", "--gammas": "--gamma"},
    ("simulate", "population"): {"--pass-k": "--k"},  # k of pass@k is --k in every command
    ("simulate", "group-size"): {"--seeds": "--runs",  # was a count of batch seeds per population
                                 "--optimizers": "--optimizer"},  # the simulators' name, here a list
    ("maze", "run"): {"--seeds": "--runs"},  # was a count: seeds 0..S-1
    ("llm", "eval"): {"--n": "--samples"},  # samples per problem; --n is the group size elsewhere
    ("llm", "recipes"): {"--format": {"text": [], "markdown": ["--markdown"], "json": ["--json"]}},
}


#: figure names before the one spelling (kebab-case, like the commands): `fgrpo figures NAME` still takes them
RENAMED_FIGURES = {"fig6_maze": "fig6-maze", "fig7_maze": "fig7-maze", "peak_map": "peak-map",
                   "population_frontier": "population-frontier", "population_rare_mass": "population-rare-mass",
                   "population_shared": "population-shared"}


def _notice(old: str, new: str, noun: str = "spelling") -> None:
    print(f"fgrpo: deprecated: {old} is now {new}; the old {noun} goes in {REMOVED_IN}", file=sys.stderr)


def new_spellings(path: tuple[str, ...], old: str) -> list[str]:
    """The option(s) that `old` stands for in command `path` (none where it is no old spelling there)."""
    new = RENAMED.get(path, {}).get(old)
    if new is None:
        return []
    return [new] if isinstance(new, str) else list(dict.fromkeys(t for tokens in new.values() for t in tokens))


def refuse_old_with_new(path: tuple[str, ...], spellings: list[str]) -> None:
    """ValueError naming both when an old spelling and its new one are given together (`spellings`: the
    options of one call as typed, in order)."""
    for old in dict.fromkeys(spellings):
        for new in new_spellings(path, old):
            if new in spellings:
                raise ValueError(f"{old} is the old spelling of {new}; give only {new}, not both")


def current_figure_names(names: list[str]) -> list[str]:
    """Figure names today: old ones from RENAMED_FIGURES translated, one deprecation line per old name
    however often it is given; a figure named twice, in any spellings, is refused first (it would be built
    twice)."""
    current = [RENAMED_FIGURES.get(name, name) for name in names]
    for i, name in enumerate(current):
        if name in current[:i]:
            given = list(dict.fromkeys(n for n, c in zip(names, current) if c == name))
            spelled = f" (as {' and '.join(given)})" if len(given) > 1 else ""
            raise ValueError(f"NAME lists figure {name} twice{spelled}; give each figure once")
    for name in dict.fromkeys(names):
        if name in RENAMED_FIGURES:
            _notice(f"figure {name}", RENAMED_FIGURES[name], noun="name")
    return current


def rewrite_deprecated(argv: list[str], path: tuple[str, ...], start: int) -> list[str]:
    """`argv` with the old spellings of command `path` (its own arguments begin at `start`) replaced by the
    new ones, one deprecation line on stderr per old spelling used."""
    renamed = RENAMED.get(path)
    if not renamed:
        return argv
    out = list(argv[:start])
    noticed: set[str] = set()
    i = start
    while i < len(argv):
        token = argv[i]
        if token == "--":  # everything after is an argument, not an option
            out.extend(argv[i:])
            break
        old, eq, value = token.partition("=")
        new = renamed.get(old) if token.startswith("--") else None
        if new is None:
            out.append(token)
            i += 1
            continue
        if isinstance(new, str):
            out.append(new + eq + value)
            if old not in noticed:
                _notice(old, new)
            noticed.add(old)
            i += 1
            continue
        if not eq:  # the value is the next token
            if i + 1 >= len(argv):
                raise ValueError(f"{old} needs a value: one of {', '.join(new)}")
            value = argv[i + 1]
            i += 1
        if value not in new:
            raise ValueError(f"{old} must be one of {', '.join(new)}, got {value!r}")
        tokens = new[value]
        spelled = f"{old} {value}"
        if spelled not in noticed:
            _notice(spelled, " ".join(tokens) or "the default (no option)")
        noticed.add(spelled)
        out.extend(tokens)
        i += 1
    return out
