"""Docs a reader finishes: README.md and docs/*.md stay short, and point only where a reader can go.

A guide names the command that prints a result (and shows a doc-tested excerpt) instead of pasting
measurements, which keeps the pages at most 100,000 characters together. Internal issue numbers ("issue 28",
"#27") name a tracker a reader of the clone or the wheel cannot open: the docs say the why in words.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_CHARACTERS = 100_000

ISSUE_NUMBER = re.compile(r"\b[Ii]ssues? \d+|(?<![\w&])#\d+\b")


def prose(text: str) -> str:
    """The text a reader reads as words: fenced blocks, inline code, link targets and HTML comments dropped
    (a `#` there is a shell comment, an anchor or Markdown, not an issue)."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.M | re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.sub(r"\]\([^)\s]*\)", "]", text)


def test_readme_and_docs_stay_at_most_100k_characters():
    sizes = {page.relative_to(ROOT).as_posix(): len(page.read_text(encoding="utf-8")) for page in PAGES}
    total = sum(sizes.values())
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:3]
    assert total <= MAX_CHARACTERS, f"README + docs hold {total:,} characters (largest: {largest})"


def test_no_page_names_an_internal_issue_number():
    found = [f"{page.relative_to(ROOT)}: {match.group(0)!r} in {line.strip()[:80]!r}"
             for page in PAGES for line in prose(page.read_text(encoding="utf-8")).splitlines()
             for match in ISSUE_NUMBER.finditer(line)]
    assert not found, found


def test_the_issue_pattern_skips_code_and_anchors():
    assert ISSUE_NUMBER.search(prose("fixed in issue 28.")) and ISSUE_NUMBER.search(prose("(issues 21, 28)"))
    assert ISSUE_NUMBER.search(prose("see #27 for why"))
    assert not ISSUE_NUMBER.search(prose("`x  # 3 runs` and [t](a.md#5-notes) and &#160;\n```\n# 1\n#2\n```\n"))


def test_readme_figures_keep_their_labels_readable():
    """A figure shares a row (a table cell of a two-column grid, about 440 px on GitHub) only when it is
    narrow enough that its 9-point labels stay legible there; wide figures (fig2-full, fig3) get a full row."""
    from PIL import Image

    shared = [target for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("|")
              for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", line)]
    too_wide = {t: Image.open(ROOT / t).size[0] for t in shared if Image.open(ROOT / t).size[0] > 1100}
    assert not too_wide, f"figures squeezed into a grid cell (px wide): {too_wide}"
