"""Every number in README.md and docs/*.md is tested, generated or declared (tests/doc_census.py says how).

A failure names the number and its words: put it in a claim (computed from its source) in tests/doc_claims/PAGE.py,
declare it there as given (an input, with the reason), or let a doc-test block or generated region show it.
"""

from __future__ import annotations

import re
import shlex

import pytest

from doc_census import (PAGES, ROOT, Claim, find_phrase, generated_regions, nearest_line, number_spans,
                        readable_text, unaccounted)
from doc_claims import claims_of
from test_doc_commands import _matches

CLAIMS = [(page, i, claim) for page in PAGES for i, claim in enumerate(claims_of(page)[0])]
GIVEN = [(page, given) for page in PAGES for given in claims_of(page)[1]]
REGIONS = [(page, *region) for page in PAGES for region in generated_regions(page)]


def _covered(page, text):
    claims, given = claims_of(page)
    spans = [find_phrase(text, claim.phrase()) for claim in claims]
    spans += [find_phrase(text, g.phrase) for g in given]
    return [s for s in spans if s is not None]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_number_is_accounted_for(page):
    text = readable_text(page)
    missing = unaccounted(text, _covered(page, text))
    assert not missing, (f"{page.name}: {len(missing)} numbers neither tested, generated nor declared "
                         f"(tests/doc_claims/):\n" + "\n".join(missing))


@pytest.mark.parametrize("page, index, claim", CLAIMS, ids=[f"{p.name}:{i}" for p, i, _ in CLAIMS])
def test_claim_reads_as_its_source_computes(page, index, claim: Claim):
    text, phrase = readable_text(page), claim.phrase()
    assert find_phrase(text, phrase) is not None, (
        f"{page.name}: from {claim.source} the page should read\n  {phrase}\nnearest:\n  {nearest_line(text, phrase)}")
    # a test of the test: the phrase's first number moved by one unit in its last digit no longer matches
    number = re.search(r"(?<![\w.])\d+(?:\.\d+)?", phrase)
    if number:
        token = number.group(0)
        planted = phrase[:number.start()] + _moved(token) + phrase[number.end():]
        assert find_phrase(text, planted) is None, f"{page.name}: {token} moved still matched"


def _moved(token: str) -> str:
    """A number moved by one unit in its last digit (4.0 -> 4.1, 128,000 -> 128,001, 6.3e-5 -> 6.4e-5)."""
    mantissa, _, exponent = token.partition("e") if "e" in token else token.partition("E")
    digits = [i for i, c in enumerate(mantissa) if c.isdigit()]
    chars = list(mantissa)
    chars[digits[-1]] = str((int(chars[digits[-1]]) + 1) % 10)
    return "".join(chars) + (token[len(mantissa):] if exponent else "")


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_number_moved_by_one_unit_fails_a_check(page):
    """A test of the census: each counted number, changed in its last digit, makes some claim or given phrase
    unreadable (a phrase found twice, say, would let one copy drift unchecked)."""
    text = readable_text(page)
    claims, given = claims_of(page)
    phrases = [claim.phrase() for claim in claims] + [g.phrase for g in given]
    unchecked = []
    for a, b in number_spans(text):
        mutated = text[:a] + _moved(text[a:b]) + text[b:]
        if all(find_phrase(mutated, phrase) is not None for phrase in phrases):
            unchecked.append(f"{text[a:b]!r} in '...{text[max(0, a - 50):b + 30]}...'")
    assert not unchecked, f"{page.name}: numbers no check notices when moved:\n" + "\n".join(unchecked)


@pytest.mark.parametrize("page, given", GIVEN, ids=[f"{p.name}:{g.phrase[:30]}" for p, g in GIVEN])
def test_given_phrase_is_on_its_page(page, given):
    assert given.why.strip(), "a given phrase says why it is not computed"
    text = readable_text(page)
    span = find_phrase(text, given.phrase)
    assert span is not None, f"{page.name}: no longer reads {given.phrase!r}"
    # a given accounts for numbers the census counts; one covering none (a name, a reference) is padding
    assert any(span[0] <= a and b <= span[1] for a, b in number_spans(text)), f"{given.phrase!r} holds no counted number"


@pytest.mark.parametrize("page, line, command, shown", REGIONS, ids=[f"{r[0].name}:{r[1]}" for r in REGIONS])
def test_generated_region_is_what_its_command_prints(run_cli, monkeypatch, page, line, command, shown):
    monkeypatch.chdir(ROOT)
    result = run_cli(*shlex.split(command)[1:])
    assert result.exit_code == 0, f"{page.name}:{line}: {command}\n{result.stderr}"
    assert _matches(shown, result.stdout.splitlines()), f"{page.name}:{line}: stale; run `make docs`"


def test_the_census_counts_what_a_reader_reads(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Fig 2 and Table 1, 6 and Lemma 3.1 (TRL 1.16): exit 2 at 0 and 1.\n"
                    "A dip of 2.3 points at N = 16, `--lr 0.5` [x](a-2.md) <a id=\"m3\"></a>.\n"
                    "0 <= tau <= 5 <!-- 8 --> on ZeRO-3, Llama-3.2-3B, 16-bit, pass@256\n"
                    "```\nfgrpo x --n 8   # takes 24 min\n```\n"
                    "<!-- generated: fgrpo y -->\n|7|\n<!-- /generated -->\n"
                    "<!-- doc-test -->\n```\n$ fgrpo z\n9\n```\n1. a list\n")
    text = readable_text(page)
    assert [t.split("'")[1] for t in unaccounted(text, [])] == ["2.3", "16", "5", "24"]
    assert unaccounted(text, [find_phrase(text, "2.3 points at N = 16"), find_phrase(text, "24 min"),
                                  find_phrase(text, "tau <= 5")]) == []
    assert find_phrase(text, "2.4 points") is None and find_phrase(text, "2.30 points") is not None
    assert find_phrase(text, "2.3 points at N = 17") is None
