"""Doc commands that claim to run do run, on a clone as written, and print what the doc shows.

Convention (DEVELOPERS.md, "Doc commands"): a fenced block right after a line `<!-- doc-test -->` holds
`$ fgrpo ...` commands, each followed by its verbatim output (a `fgrpo: error:` line: the command must
exit 2 with it); a line `... (WHAT is omitted)` stands for
any number of output lines and says so. `<!-- doc-test: slow -->` marks commands that take too long for
the suite: only their subcommand is checked to exist (`--help`). `<!-- doc-test: rtol=1e-6 -->` loosens the
float tolerance of one block. Commands run from the repository root.

Numbers are compared the way a reader compares them (the docs were recorded on one CPU and are checked on
others, whose libm and SIMD paths change the last digits of a float): text (runs of blanks as one) and integers
exactly; a float to a
relative tolerance (RTOL, 1e-12: closed forms), and never tighter than one unit in its last printed digit (a
value sitting on a rounding boundary may print either way on another CPU).
"""

from __future__ import annotations

import math
import re
import shlex
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- doc-test(?:: (slow|rtol=(\S+)))? -->$")
RTOL = 1e-12
# a number as a reader sees one: optional sign, digits with an optional fraction, an optional exponent; `inf`
# and `nan` too (numpy prints them). Letters or digits glued to the front ("log10", "fig2") stay text.
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])|(?<![\w])-?(?:inf|nan)(?!\w)")


def doc_commands() -> list[tuple[str, int, bool, float, str, list[str]]]:
    """(doc, line, slow, rtol, command, expected output lines) for every `$ ` line of a marked block."""
    found = []
    for doc in DOCS:
        lines = doc.read_text().splitlines()
        for i, line in enumerate(lines):
            match = MARKER.match(line.strip())
            if not match:
                continue
            assert lines[i + 1].startswith("```"), f"{doc.name}:{i + 1}: a doc-test marker must precede a fence"
            slow, rtol = match.group(1) == "slow", float(match.group(2) or RTOL)
            end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
            current = None
            for j in range(i + 2, end):
                if lines[j].startswith("$ "):
                    current = (doc.name, j + 1, slow, rtol, lines[j][2:], [])
                    found.append(current)
                elif current is not None:
                    current[5].append(lines[j])
    return found


def _is_float(token: str) -> bool:
    return any(c in token for c in ".eEin")  # a fraction, an exponent, inf or nan


def last_digit_unit(token: str) -> float:
    """One unit in the last printed digit of a float token: 0.711 -> 0.001, 6.791e-07 -> 1e-10."""
    exponent = Decimal(token).as_tuple().exponent
    return 0.0 if not isinstance(exponent, int) else float(Decimal(1).scaleb(exponent))


def numbers_match(expected: str, actual: str, rtol: float) -> bool:
    if not _is_float(expected) or not _is_float(actual):
        return expected == actual  # integers (and an integer against a float) exactly
    e, a = float(expected), float(actual)
    if math.isnan(e) or math.isinf(e):
        return expected.lstrip("+") == actual.lstrip("+")
    return abs(a - e) <= max(rtol * abs(e), last_digit_unit(expected) * (1 + 1e-6))  # float spacing at the unit


def _words(text: str) -> str:
    """Text as a reader compares it: a run of blanks counts once, blanks at either end not at all (a table's
    column is as wide as its widest value, which another CPU may print with more digits)."""
    return " ".join(text.split())


def line_matches(expected: str, actual: str, rtol: float = RTOL) -> bool:
    """Text between numbers exactly (up to the width of blank runs); numbers by `numbers_match`."""
    e_parts = [_words(p) for p in NUMBER.split(expected.rstrip())]
    a_parts = [_words(p) for p in NUMBER.split(actual.rstrip())]
    e_nums, a_nums = NUMBER.findall(expected), NUMBER.findall(actual)
    return (e_parts == a_parts and len(e_nums) == len(a_nums)
            and all(numbers_match(e, a, rtol) for e, a in zip(e_nums, a_nums)))


def _matches(expected: list[str], actual: list[str], rtol: float = RTOL) -> bool:
    """Line by line (trailing blanks ignored); an `... (` line matches any run of lines."""
    def trim(rows):
        rows = [r.rstrip() for r in rows]
        while rows and not rows[-1]:
            rows.pop()
        return rows

    expected, actual = trim(expected), trim(actual)

    def match(i: int, j: int) -> bool:
        if i == len(expected):
            return j == len(actual)
        if expected[i].startswith("... ("):
            return any(match(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and line_matches(expected[i], actual[j], rtol) and match(i + 1, j + 1)

    return match(0, 0)


def _float_tokens(row: str) -> list[re.Match]:
    return [m for m in NUMBER.finditer(row) if _is_float(m.group(0)) and "n" not in m.group(0)]


def _cpu_noise(token: str, rtol: float) -> str:
    """The token as another CPU could print it: its last two digits changed where they lie below rtol
    (a full-precision float), else its last digit moved by one (a rounded value on a rounding boundary)."""
    mantissa = re.split(r"[eE]", token)[0]
    spots = [i for i, c in enumerate(mantissa) if c.isdigit()]
    chars = list(token)
    if last_digit_unit(token) * 99 <= rtol * abs(float(token)):
        i, j = spots[-2:]
        new = (int(chars[i] + chars[j]) + 37) % 100
        chars[i], chars[j] = f"{new:02d}"
    else:
        d = int(chars[spots[-1]])
        chars[spots[-1]] = str(d + 1 if d < 9 else d - 1)
    return "".join(chars)


def with_cpu_noise(expected: list[str], rtol: float) -> list[str]:
    """Every float of the expected output perturbed in the digits another CPU may change (a test of the test)."""
    def row_noise(row: str) -> str:
        for m in reversed(_float_tokens(row)):
            row = row[:m.start()] + _cpu_noise(m.group(0), rtol) + row[m.end():]
        return row

    return [row if row.startswith("... (") else row_noise(row) for row in expected]


def planted_errors(expected: list[str], rtol: float):
    """The expected output with one float moved by ten times its tolerance, for each float in turn."""
    for r, row in enumerate(expected):
        for m in _float_tokens(row):
            value = float(m.group(0))
            moved = value + 10 * max(rtol * abs(value), last_digit_unit(m.group(0)))
            yield m.group(0), [*expected[:r], row[:m.start()] + _same_digits(moved, m.group(0)) + row[m.end():],
                               *expected[r + 1:]]


def _same_digits(value: float, token: str) -> str:
    """`value` printed with `token`'s decimals (0.1180 moved by 0.001 is 0.1190, not 0.119, whose coarser
    last digit would make the moved value match again); exponent forms as repr."""
    if re.search(r"[eE]", token) or "." not in token:
        return repr(value)
    return f"{value:.{len(token.split('.')[1])}f}"


COMMANDS = doc_commands()


def test_marked_blocks_exist_and_elisions_say_so():
    docs = {c[0] for c in COMMANDS}
    assert {"README.md", "theory.md"} <= docs  # maze.md's table is a generated region (make docs)
    for doc, line, _, _, _, output in COMMANDS:
        for row in output:
            assert row.strip() != "...", f"{doc}:{line}: write '... (what is omitted)', not a bare '...'"


@pytest.mark.parametrize("doc, line, slow, rtol, command, expected", COMMANDS,
                         ids=[f"{c[0]}:{c[1]}" for c in COMMANDS])
def test_doc_command_runs_as_written(run_cli, monkeypatch, doc, line, slow, rtol, command, expected):
    argv = shlex.split(command)
    assert argv[0] == "fgrpo", f"{doc}:{line}: marked blocks hold fgrpo commands"
    monkeypatch.chdir(ROOT)
    if slow:
        path = [a for a in argv[1:][:2] if not a.startswith("-")]
        path = path[:next((k for k, a in enumerate(argv[1:3]) if a.startswith("-")), 2)]
        result = run_cli(*path, "--help")
        assert result.exit_code == 0 and "Usage" in result.stdout, f"{doc}:{line}: {path} is not a command"
        return
    result = run_cli(*argv[1:])
    refused = any(row.startswith("fgrpo: error:") for row in expected)  # a doc showing an error message
    assert result.exit_code == (2 if refused else 0), f"{doc}:{line}: {command}\n{result.stderr}"
    actual = (result.stdout + result.stderr).splitlines()
    assert _matches(expected, actual, rtol), f"{doc}:{line}: {command} printed\n" + "\n".join(actual)
    # a test of the test: the digits another CPU may print differently do not matter, any larger change does
    assert _matches(with_cpu_noise(expected, rtol), actual, rtol), f"{doc}:{line}: CPU-level digits compared"
    for token, planted in planted_errors(expected, rtol):
        assert not _matches(planted, actual, rtol), f"{doc}:{line}: {token} moved by 10x its tolerance still matched"


@pytest.mark.parametrize("expected, actual, same", [
    ("x = 13.506196874919787", "x = 13.506196874919791", True),   # last digits of a root finder: CPU noise
    ("x = 13.506196874919787", "x = 13.506196874939787", False),  # 1.5e-12 relative: over 1e-12
    ("Pr 0.711 and 0.6578326688", "Pr 0.712 and 0.6578326689", True),  # one unit in the last printed digit
    ("Pr 0.711", "Pr 0.713", False), ("N = 14", "N = 15", False), ("N = 14", "N = 14.0", False),
    ("lr 1e-06 -> 6.791e-07", "lr 1e-06 -> 6.792e-07", True), ("lr 1e-06 -> 6.791e-07", "lr 1e-06 -> 6.793e-07", False),
    ("log10 -inf", "log10 -inf", True), ("log10 -inf", "log10 inf", False), ("fig2 = 3", "fig3 = 3", False),
    ("[mu = 0.3, tau = 0.003]", "[mu = 0.3, tau = 0.003]", True), ("a 0.5 b", "a 0.5 c", False),
    # a table column as wide as its widest value: another CPU's longer float shifts the blanks, not the words
    ("   4       0.711  0.875", "   4    0.7110000001  0.875", True), ("N  Pr(B)", "N Pr (B)", False),
])
def test_numbers_are_compared_the_way_a_reader_compares_them(expected, actual, same):
    assert line_matches(expected, actual) is same


def test_elisions_match_any_run_of_lines_and_numbers_inside_them():
    expected = ["head 1.5", "... (rows omitted)", "tail 0.25"]
    assert _matches(expected, ["head 1.5", "a", "b 9", "tail 0.25"])
    assert _matches(expected, ["head 1.5", "tail 0.25"])
    assert not _matches(expected, ["head 1.5", "a", "tail 0.35"])


def test_gpu_cost_in_the_docs_is_the_recipe_index_estimate(run_cli):
    """One number, one source: docs/llm.md quotes what `fgrpo llm recipes` estimates."""
    from fgrpo_sim.llm.training.recipe_index import estimate_gpu_hours

    n8, n32 = estimate_gpu_hours(7.6, 8, 8192), estimate_gpu_hours(7.6, 32, 8192)
    text = " ".join((ROOT / "docs" / "llm.md").read_text().split())
    assert f"about {n8['gpu_h']:.0f} H100-hours per N = 8" in text
    assert f"({n8['generation_gpu_h']:.0f} generating, {n8['training_gpu_h']:.0f} training)" in text
    assert f"about {n8['wall_h_on_16']:.0f} hours on 16 H100s" in text and f"(about {n32['gpu_h']:,.0f})" in text
    assert f"about {round(6 * n8['gpu_h'], -2):,.0f} H100-hours for the six runs" in text
    assert f"(~{n8['gpu_h']:.0f} GPU-h, " in run_cli("llm", "recipes").stdout


def test_readme_evaluates_the_folder_the_recipe_trains_into():
    import yaml

    from fgrpo_sim.packaged import resolve_shipped

    readme = (ROOT / "README.md").read_text()
    train = re.search(r"fgrpo llm train --config (\S+)", readme).group(1)
    output_dir = yaml.safe_load((ROOT / train).read_text())["output_dir"]
    assert f"fgrpo llm eval --model {output_dir} " in readme
    llm = (ROOT / "docs" / "llm.md").read_text()
    train = re.search(r"fgrpo llm train --config ((?:recipes/)?tiny/f-grpo.yaml)(.*)", llm)  # a shipped name
    override = re.search(r"--output_dir (\S+)", train.group(2))
    recipe = resolve_shipped(train.group(1))
    trained = override.group(1) if override else yaml.safe_load(recipe.read_text())["output_dir"]
    assert f"fgrpo llm eval --model {trained} " in llm
