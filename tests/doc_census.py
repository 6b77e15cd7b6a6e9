"""The census of numbers in README.md and docs/*.md: every number a reader sees is tested, generated or declared.

A page's readable text is its prose plus the comments of its plain code blocks (`cmd  # 24 min`). Each number in
it must be accounted for by one of (tests/test_doc_numbers.py enforces it, DEVELOPERS.md states it):

- **code**: inside `inline code` or a link target, or a fenced block's command part (what a reader types);
- **doc-test / generated**: inside a `<!-- doc-test -->` block (tests/test_doc_commands.py runs it) or between
  `<!-- generated: fgrpo ARGS -->` and `<!-- /generated -->` (the command's output, compared and rewritten by
  `make docs`);
- **claim**: inside a phrase that a page's claims module (tests/doc_claims/PAGE.py) computes from its source
  (a closed form, a committed result, a benchmark record, a paper table, a code default) and finds in the page;
- **given**: inside a phrase that module declares with its reason (a setting the reader picks, a quoted paper
  setting with no table to check it against, an example value);
- **name**: a reference (Fig 2, Table 2, Lemma 3.1, Sec. 5.1, App. L.2, arXiv ...), a version (TRL 1.16), a
  list's numeral, an exit status (exit 2), or the integers 0 and 1 (formulas: (1 - mu_hat)^gamma, [0, 1]).

A claim's numbers must equal, as decimals, what its source computes at the page's precision (2.30 reads as 2.3,
2.4 does not): a claim formats values that are deterministic (committed files, closed forms far from a rounding
boundary), so one unit in the last printed digit is already an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from test_doc_commands import NUMBER as COMMAND_NUMBER

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# a number as a reader reads one: 128,000 is one number, 4.0-6.2% two (4.0 and 6.2), 2^17 the base 2 (the
# exponent is part of the same quantity), 6.3e-5 one; in a name (ZeRO-3, Llama-3.2-3B, 16-bit,
# pass@256: a metric's name, its k a setting) none
NUMBER = re.compile(r"(?<![\w.^@])(?<![A-Za-z]-)[-+]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+\.\d+|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w]|\.\d|-[A-Za-z])")
# a page's references and versions: the number names something, it does not measure it
_NAMED_BY = (r"(?:Figs?\.?|Figures?|Tables?|Lemma|Props?\.|Secs?\.|Apps?\.|Eqs?\.|arXiv|[Nn]otebooks?|"
             r"Algorithm|[Ff]loors?|Theorem|Corollary)")
REFERENCE = re.compile(_NAMED_BY + r"\s+(?:[A-Z]?[\d.]+(?:,\s*|\s*/\s*|\s+and\s+|\s+or\s+|-))*[A-Z]?\.?$")
VERSION = re.compile(r"(?:TRL|verl|transformers|Python|antlr4?|torch|vLLM|hydra-core|sglang|pyarrow|numpy|scipy|"
                     r"sympy|pandas|math-verify|DeepSpeed|CUDA|accelerate|datasets)\s+$")
EXIT = re.compile(r"\bexit(?:s| code| status)?\s+(?:code\s+)?$")
CODE = re.compile(r"`[^`]*`|\]\([^)]*\)|<[A-Za-z/!][^>]*>")  # a tag starts with a letter, / or !; "x <= 2" is prose
GENERATED = re.compile(r"^<!-- generated: (fgrpo .+) -->$")
GENERATED_END = "<!-- /generated -->"
DOC_TEST = re.compile(r"^<!-- doc-test(?::[^>]*)? -->$")
_LIST_NUMERAL = re.compile(r"^(\s*)\d+\.(?= )")
_COMMENT = re.compile(r"(?:^|\s)#\s+(.*)$")  # a shell comment in a code block: words a reader reads


@dataclass(frozen=True)
class Claim:
    """A phrase whose numbers come from a source: `phrase()` computes the text as the page must read."""
    phrase: Callable[[], str]
    source: str  # where the numbers come from, for the reader of a failure


@dataclass(frozen=True)
class Given:
    """A phrase whose numbers are inputs or quotes, with the reason they are not computed."""
    phrase: str
    why: str


def readable_text(page: Path) -> str:
    """The page as a reader reads it, blanks collapsed: prose lines and code-block comments; doc-test blocks and
    generated regions are left out (their own tests check every number in them)."""
    lines, kept, i = page.read_text().splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        if DOC_TEST.match(line.strip()) and i + 1 < len(lines) and lines[i + 1].startswith("```"):
            i = _fence_end(lines, i + 1) + 1
            continue
        if GENERATED.match(line.strip()):
            i = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == GENERATED_END) + 1
            continue
        if line.startswith("```"):
            end = _fence_end(lines, i)
            if not re.match(r"```(?:python|csv|bibtex|yaml|json)", line):  # programs and data: all typed input
                kept += [m.group(1) for row in lines[i + 1:end] if (m := _COMMENT.search(row))]
            i = end + 1
            continue
        kept.append(_LIST_NUMERAL.sub(r"\1-", line))
        i += 1
    return " ".join("\n".join(kept).split())


def _fence_end(lines: list[str], start: int) -> int:
    return next(j for j in range(start + 1, len(lines)) if lines[j].startswith("```"))


def number_spans(text: str) -> list[tuple[int, int]]:
    """The numbers the census counts: outside code, links and tags, and not a name (see the module text)."""
    masked = [(m.start(), m.end()) for m in CODE.finditer(text)]
    spans = []
    for m in NUMBER.finditer(text):
        if any(a <= m.start() < b for a, b in masked) or m.group(0).lstrip("+-") in ("0", "1"):
            continue
        before = text[max(0, m.start() - 60):m.start()]
        if REFERENCE.search(before) or VERSION.search(before) or EXIT.search(before):
            continue
        spans.append((m.start(), m.end()))
    return spans


def _phrase_pattern(phrase: str) -> re.Pattern:
    """The phrase with each number free: its text must match as written, its numbers are compared apart."""
    phrase = " ".join(phrase.split())
    parts, last = [], 0
    for m in COMMAND_NUMBER.finditer(phrase):
        parts += [re.escape(phrase[last:m.start()]), r"([-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)"]
        last = m.end()
    parts.append(re.escape(phrase[last:]))
    return re.compile("".join(parts))


def _same_number(expected: str, actual: str) -> bool:
    if "inf" in expected or "nan" in expected or "inf" in actual or "nan" in actual:
        return expected.lstrip("+") == actual.lstrip("+")
    return Decimal(expected) == Decimal(actual)


def find_phrase(text: str, phrase: str) -> tuple[int, int] | None:
    """Where `phrase` reads in `text`, every number equal as a decimal; None when nowhere."""
    pattern = _phrase_pattern(phrase)
    expected = COMMAND_NUMBER.findall(" ".join(phrase.split()))
    for m in pattern.finditer(text):
        if all(_same_number(e, a) for e, a in zip(expected, m.groups())):
            return m.start(), m.end()
    return None


def nearest_line(text: str, phrase: str) -> str:
    """The page's sentence sharing most words with the phrase: what a failure shows beside the expected text."""
    words = set(phrase.split())
    sentences = re.split(r"(?<=[.;:])\s", text)
    return max(sentences, key=lambda s: len(words & set(s.split())), default="")


def unaccounted(text: str, covered: list[tuple[int, int]]) -> list[str]:
    """Each counted number outside every covered span, with the words around it."""
    out = []
    for a, b in number_spans(text):
        if not any(s <= a and b <= e for s, e in covered):
            out.append(f"{text[a:b]!r} in '...{text[max(0, a - 50):b + 30]}...'")
    return out


def generated_regions(page: Path) -> list[tuple[int, str, list[str]]]:
    """(line, command, lines between the markers) for every generated region of a page."""
    lines, found = page.read_text().splitlines(), []
    for i, line in enumerate(lines):
        match = GENERATED.match(line.strip())
        if match:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == GENERATED_END)
            found.append((i + 1, match.group(1), lines[i + 1:end]))
    return found


def regenerate(page: Path) -> bool:
    """Rewrite each generated region of a page with its command's output (run from the repository root);
    True when the page changed. `make docs` calls this for every page."""
    import contextlib
    import io
    import shlex
    import sys

    from fgrpo_sim.cli import main

    lines, out, i = page.read_text().splitlines(keepends=True), [], 0
    while i < len(lines):
        out.append(lines[i])
        match = GENERATED.match(lines[i].strip())
        i += 1
        if not match:
            continue
        end = next(j for j in range(i, len(lines)) if lines[j].strip() == GENERATED_END)
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            try:
                main(shlex.split(match.group(1))[1:])
            except SystemExit as stop:
                if stop.code not in (0, None):
                    sys.exit(f"{page.name}: `{match.group(1)}` exited {stop.code}")
        out.append(stdout.getvalue().rstrip("\n") + "\n")
        i = end
    text = "".join(out)
    changed = text != page.read_text()
    if changed:  # atomically: a page is never left half-written
        temp = page.with_name(f".{page.name}.tmp")
        temp.write_text(text)
        temp.replace(page)
    return changed


if __name__ == "__main__":
    import os

    os.chdir(ROOT)
    for changed_page in [p for p in PAGES if regenerate(p)]:
        print(f"regenerated {changed_page.relative_to(ROOT)}")
