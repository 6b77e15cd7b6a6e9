"""One grading entry point for every benchmark of the paper: `grade(benchmark, record, completion) -> bool`.

`record` is one problem as the loaders return it (`fgrpo_sim.llm.evaluation.data.load_benchmark` for math,
`fgrpo_sim.llm.evaluation.ood_data.load_ood_benchmark` for the rest). `grade_detailed` returns the `Score`
(correct, status, extracted) that `fgrpo llm eval` writes.

Benchmark names are matched ignoring case, '-' and '_' (GPQA-Diamond, gpqa, IFEval, SynLogic, MATH-500:
`fgrpo_sim.llm.evaluation.prompts.canonical_benchmark`); an unknown name is a ValueError, never a math grade.

* math (math500, aime24, aime25, amc23, minerva, olympiadbench, generic): math-verify on the last
  \\boxed{} through `fgrpo_sim.llm.rewards.MathVerifier` (unchanged).
* gpqa_diamond: the last explicit answer counts, a \\boxed{} letter (also \\boxed{\\text{B}}, \\boxed{(B)},
  \\boxed{B) any option text}), a box holding exactly one option's text (\\boxed{5.2 eV}), or an answer
  phrase ("Answer: X", "the answer is (X)", "**Final answer:** X", "Answer:" with X alone on the next line),
  whichever comes last; correct when it names exactly the record's letter. An answer naming two letters
  ("C or D", "A, C") is wrong, also when the second stands later on its line beside a hedging word
  ("Answer: D (or possibly C)", "\\boxed{C} or maybe \\boxed{D}"); a box's number is compared with the
  options' numbers ("5.0" = "5", \\dfrac, Unicode minus, "2.4e-3", a unit left out), exactly one must match;
  lower-case letters count only after a phrase, alone or in brackets; no letter -> status no_answer.
  Rules and reasons: `extract_choice`, docs/evaluation.md.
* ifeval: the instruction checks of the `if-verifiable` package (a port of Google's IFEval checks) on a
  record in the public schema (prompt, instruction_id_list, kwargs) or the loader's (problem for prompt);
  correct = every instruction passes in strict mode, i.e. prompt-level strict accuracy. A leading
  <think>...</think> block is removed first (the package does this). The instructions of
  `NLTK_INSTRUCTIONS` need NLTK's "punkt_tab" data (`python -m nltk.downloader punkt_tab`): `grade` marks
  them status "error" without it, and `fgrpo llm eval --benchmark ifeval` refuses to start when its file
  has one of them (and starts offline, with no NLTK data, when it has none).
* synlogic: the task's verifier from a local checkout of https://github.com/MiniMax-AI/SynLogic
  (`synlogic_repo=` or the SYNLOGIC_REPO environment variable), called as that repository does:
  `task2verifier.verifier_classes[task]().verify(base.data.Data.from_json_dict(game_data), completion)`.
  Correct when the verifier returns True or a score >= 1. Its prints are swallowed.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from fgrpo_sim.llm.evaluation.prompts import GPQA_LETTERS as LETTERS, benchmark_kind
from fgrpo_sim.llm.rewards import MathVerifier, Score, iter_boxed

SYNLOGIC_HELP = ("SynLogic grading needs a local checkout of its verifiers: "
                 "git clone https://github.com/MiniMax-AI/SynLogic and pass --synlogic-repo PATH "
                 "(or set SYNLOGIC_REPO)")

#: LaTeX and markdown wrappers around an option letter: \text{B}, $B$, **B**, \mathrm{(B)}, C \text{ or } D.
_MARKUP = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mathit|operatorname)\s*\{|\\(?:quad|qquad)\b|"
                     r"\\[,;:! ]|[{}$*~]")
_FIRST_LETTER = re.compile(r"\s*(?:(?i:either|both|option|choice)\s+)?[(\[]?\s*([A-D])\s*[)\]]?(?![A-Za-z0-9])")
_MORE_LETTER = re.compile(r"\s*(,|/|\\?&|(?i:and/or|and|or|nor|versus|vs)\b\.?)\s*"
                          r"(?:(?i:also|maybe|possibly|perhaps|either|both|option|choice)\s+)*"
                          r"[(\[]?\s*([A-D])\s*[)\]]?(?![A-Za-z0-9])")
#: After "B, C" the C must end a list element ("Answer: B, C is wrong" names only B).
_ELEMENT_END = re.compile(r"\s*(?:$|[.,;:!?)\]/&]|(?i:and|or|nor)\b)")
#: "A" followed by a lower-case word is the article ("B or A photon"), not option A.
_ARTICLE = re.compile(r"\s+(?!(?i:and|or|nor)\b)[a-z]")
#: What may follow the letters inside a box: nothing, the option's text ("A) photon", "B. text") or a word.
_BOX_TAIL = re.compile(r"\s*(?:$|[).:\]]|[-\u2013\u2014]\s|\s[A-Za-z(])")
#: The text between two boxes that makes them one answer: \boxed{B} or \boxed{C}, \boxed{C} or maybe \boxed{D},
#: \boxed{D} (or possibly \boxed{C}).
_BOX_JOIN = re.compile(r"(?=.*[^\s(])\s*\(?\s*(?:,|/|&)?\s*(?:(?i:and/or|and|or|nor)\b)?\s*"
                       r"(?:(?i:maybe|possibly|perhaps|also|alternatively|probably|likely|even)\b\s*)*")
#: A word that offers another option beside the answer ("Answer: D (or possibly C)", "D. C is also plausible").
_HEDGE_WORD = re.compile(r"\b(?i:or|maybe|possibly|possible|perhaps|alternatively|might|could|also|likely|"
                         r"probably|plausible|either|unsure|uncertain)\b")
#: An option letter standing alone in the rest of an answer's line: "C", "(C)", "C.", "\boxed C" (markup gone).
_STANDING_LETTER = re.compile(r"(?:(?<=^)|(?<=[\s(\[,;:/]))[(\[]?([A-D])[)\]]?(?=$|[\s.,;:!?)\]])|\(([a-d])\)")
#: Before a letter, words that exclude it rather than offer it ("not C", "rather than C", "unlike B").
_EXCLUDED_BEFORE = re.compile(r"\b(?i:not|than|instead\s+of|unlike|except|excluding|over)\s+"
                              r"(?:(?i:option|choice)\s+)?[(\[]?$")
#: After a letter, words that exclude it ("C is wrong", "B is ruled out").
_EXCLUDED_AFTER = re.compile(r"[)\]]?\s+(?i:is|are)\s+(?:\w+\s+)?(?i:wrong|incorrect|ruled\s+out|excluded|"
                             r"eliminated|not|impossible|false)\b")
#: After the letters on the line below an answer phrase ("Answer:\nC"): nothing, punctuation, or ")" + text.
_LINE_TAIL = re.compile(r"\s*(?:$|[).:\]])")
#: A lower-case letter counts only right after an answer phrase and only when it cannot be prose: in brackets
#: ("the answer is (c)") or alone at the end of the line ("Answer: c", "The answer is c.").
_LOWER_LETTER = re.compile(r"\s*(?:[(\[]\s*([a-d])\s*[)\]]|([a-d])\s*[.!]?\s*$)")
_LOWER_MORE = re.compile(r"\s*(?:,|/|&|(?i:and/or|and|or|nor))\s*[(\[]\s*([a-dA-D])\s*[)\]]")
_ANSWER_PHRASE = re.compile(
    r"\b(?i:final\s+answer|(?:correct|right|best)\s+(?:answer|option|choice)|answer)\b\s*"
    r"(?:\*\*\s*)?(?:(?i:is|would\s+be|should\s+be|must\s+be|will\s+be)\b\s*"
    r"(?:(?i:therefore|thus|clearly|likely|probably|definitely)\s+)?[:=]?|[:=])"
)


#: A committed answer in prose: "option C is correct", "choice (B) is the right one", "(D) is the correct answer".
_PROSE_COMMIT = re.compile(r"(?:\b(?i:option|choice)\s+[(\[]?([A-D])[)\]]?|[(\[]([A-D])[)\]])\s+(?i:is)\s+"
                           r"(?i:the\s+)?(?i:correct|right)\b")
#: Before a prose commitment, words that make it a supposition ("if option C is correct, ...").
_SUPPOSED = re.compile(r"\b(?i:if|whether|assume|assuming|suppose|supposing|unless)\b[^.;:!?]*$")
#: Where the value after an answer phrase ends: a comma, semicolon, a sentence's full stop, or "because" etc.
_VALUE_CLAUSE_END = re.compile(r"[,;]|\.(?=\s|$)|\s(?i:because|since|as|which|so|given)\b")
#: A value followed by its option's letter in brackets: "6.4 eV (D)".
_TRAILING_LETTER = re.compile(r"(?P<value>.*?)\s*[(\[]\s*(?P<letter>[A-D])\s*[)\]]\s*")


def _prose_commitments(completion: str, choices: list[str] | None) -> list[tuple[int, list[str]]]:
    """(position, letters) of each "option C is correct" not under an "if"; the letters its line offers beside
    it with a hedging word are added ("either option B or option C is correct" is a hedge)."""
    found = []
    for match in _PROSE_COMMIT.finditer(completion):
        line_start = completion.rfind("\n", 0, match.start()) + 1
        before = completion[line_start:match.start()]
        if _SUPPOSED.search(before) or re.search(r"\b(?i:not|never)\s*$", before):
            continue
        line = completion[line_start:].partition("\n")[0]
        offered = _offered_letters(line[:match.start() - line_start] + " " + line[match.end() - line_start:], choices)
        found.append((match.start(), [match.group(1) or match.group(2), *offered]))
    return found


def _prose_value(line: str, choices: list[str] | None) -> list[str] | None:
    """The letters of an answer phrase's line that gives a value, with or without its letter: "The answer is
    1.6 eV." (the value of exactly one option), "Answer: 6.4 eV (D)". A value of another option than the letter
    beside it, or another option's value offered with a hedging word after it ("1.6 eV, or maybe 6.4 eV"), makes
    two letters (a hedge); a hedging word naming no option's value gives no answer. None: no value named."""
    end = _VALUE_CLAUSE_END.search(line)
    clause, rest = (line[:end.start()], line[end.start():]) if end else (line, "")
    clause = clause.strip().strip("*").strip()
    tagged = _TRAILING_LETTER.fullmatch(clause)
    letters = [tagged["letter"]] if tagged else []
    value = _value_letter(tagged["value"] if tagged else clause, choices) if (tagged["value"] if tagged else clause) else None
    if not (value or tagged):
        return None
    letters = list(dict.fromkeys(letters + (value or [])))
    listed = re.match(r"\s*[,;/]\s*(?:(?i:and|or)\s+)?", rest)
    if listed:  # "3.2 eV, 0.8 eV": a list of values names each
        following = rest[listed.end():]
        stop = _VALUE_CLAUSE_END.search(following)
        letters += _value_letter(following[:stop.start()] if stop else following, choices) or []
        letters = list(dict.fromkeys(letters))
    if _HEDGE_WORD.search(_plain(rest)):
        key = _value_key(rest)
        others = [LETTERS[i] for i, c in enumerate((choices or [])[:4]) if _value_key(str(c)) and _value_key(str(c)) in key]
        others += _offered_letters(rest, choices)
        if not [x for x in others if x not in letters]:
            return None  # a hedge naming no option: no committed answer
        letters += others
    return letters


def _plain(text: str) -> str:
    return _MARKUP.sub(" ", text.replace("\\&", "&"))


def _letters_at(text: str) -> tuple[list[str], int] | None:
    """(option letters named at the start of `text`, where they end), or None when it names none.

    "B" -> [B]; "C or D", "A, C", "B and C", "D/A" -> both letters. Only upper-case A-D standing alone count.
    """
    first = _FIRST_LETTER.match(text)
    if not first:
        return None
    letters, end = [first.group(1)], first.end()
    while (more := _MORE_LETTER.match(text, end)) is not None:
        rest = text[more.end():]
        if (more.group(1) == "," and not _ELEMENT_END.match(rest)) or (more.group(2) == "A" and _ARTICLE.match(rest)):
            break
        letters.append(more.group(2))
        end = more.end()
    return letters, end


def _closed(plain: str, found: tuple[list[str], int]) -> bool:
    """The letters end with a bracket ("A)", "(A)"): the option's label as shown, so any option text may follow
    ("A) 5.2 eV", "(C) 4.5 \\times 10^{-3}", "B) 2-methylbutane")."""
    return plain[:found[1]].rstrip().endswith((")", "]"))


def _lower_letters_at(text: str) -> list[str] | None:
    """Upper-cased letters of a lower-case answer after an answer phrase (see `_LOWER_LETTER`), or None."""
    first = _LOWER_LETTER.match(text)
    if not first:
        return None
    letters, end = [(first.group(1) or first.group(2)).upper()], first.end()
    while first.group(1) and (more := _LOWER_MORE.match(text, end)) is not None:  # "(c) or (d)": a hedge
        letters.append(more.group(1).upper())
        end = more.end()
    return letters


def _value_key(text: str) -> str:
    """An option's text or a box's content, compared ignoring markup, spaces, case and a final period."""
    return re.sub(r"\s+|\\(?:left|right)\b", "", _plain(text)).lower().rstrip(".")


#: A number as options and answers write it: 5, -0.25, .5, \frac{3}{4}, 2.4e-3, 2.4\times10^{-3}, 10^{-3}, then
#: a unit or nothing. Applied to `_number_text`'s output (no spaces, one spelling of fraction, times, minus).
_NUMBER = re.compile(
    r"(?P<sign>[-+]?)(?:(?P<mant>\d+(?:\.\d*)?|\.\d+)|\\frac\{(?P<num>\d+(?:\.\d+)?)\}\{(?P<den>\d+(?:\.\d+)?)\})?"
    r"(?:[eE](?P<exp>[-+]?\d+)|(?(mant)\\times|(?(num)\\times|))10\^\{?(?P<pow>[-+]?\d+)\}?)?"  # \times after a number
    r"(?P<unit>(?:[A-Za-z%\u00b0\u00c5\u03bc][^\d\\=<>^]*)?)")


def _number_text(text: str) -> str:
    """`text` with one spelling of each way a number is written: \\dfrac and \\tfrac as \\frac, a Unicode minus
    as "-", x and \\cdot between a number and a power of ten as \\times, no spaces or markup."""
    text = re.sub(r"\\[dt]frac(?![A-Za-z])", r"\\frac", text).replace("\u2212", "-").replace("\u00d7", "\\times ")
    text = re.sub(r"\^\s*\{?\s*\\circ\s*\}?", "\u00b0", text)  # 90^\circ = 90\u00b0
    # a unit to the power -1 after a separator divides: m\,s^{-1} = m s^-1 = \text{m}\cdot\text{s}^{-1} = m/s
    # (before the spaces go)
    text = re.sub(r"\\(?:text|mathrm|rm|mbox)\s*\{([A-Za-z]+)\}", r" \1", text)
    text = re.sub(r"(?:\\[,;: ]|\\cdot|\s|\u00b7)+([A-Za-z]+)\s*(?:\^\s*\{\s*-\s*1\s*\}|\^\s*-\s*1|\u207b\u00b9)", r"/\1", text)
    # \left. and \right. (the null delimiters) go with their full stop: left behind, "\left. 3 eV \right." read 0.3 eV
    text = re.sub(r"\\(?:left|right)(?:\.|(?![A-Za-z]))|\\[!,;: ]", "", re.sub(r"\\cdot(?![A-Za-z])", r"\\times", text))
    text = re.sub(r"\s+|\$", "", re.sub(r"\\(?:text|mathrm|rm|mbox)\s*\{([^{}]*)\}", r"\1", text))
    return re.sub(r"(?<=\d)x(?=10\^)", r"\\times", text)  # 3.0 x 10^8


def _number_value(text: str) -> tuple[float, str] | None:
    """(value, unit) of an option or box that is a number with an optional unit ("5.2 eV" -> (5.2, "eV"));
    None for anything else, and for a power of ten beyond +-300 (10.0 ** 309 overflows, and below 10^-323 every
    value is 0.0, so such values would all be equal)."""
    import math

    match = _NUMBER.fullmatch(_number_text(text))
    if not match or not (match["mant"] or match["num"] or match["pow"]):
        return None
    if match["mant"]:
        base = float(match["mant"])
    elif match["num"]:
        if not float(match["den"]):
            return None
        base = float(match["num"]) / float(match["den"])
    else:
        base = 1.0  # 10^{-3}
    power = int(match["exp"] or match["pow"] or 0)
    if abs(power) > 300:
        return None
    value = (-1 if match["sign"] == "-" else 1) * base * 10.0 ** power
    return (value, match["unit"].rstrip(".")) if math.isfinite(value) else None


def _same_number(answer: tuple[float, str], option: tuple[float, str]) -> bool:
    """Equal values (to 1e-9 relative: 5.0 = 5, 2.4e-3 = 2.4 \\times 10^{-3}) and the same unit, or a unit the
    answer leaves out ("5.2" for "5.2 eV")."""
    import math

    return math.isclose(answer[0], option[0], rel_tol=1e-9, abs_tol=0.0) and answer[1] in ("", option[1])


def _value_letter(content: str, choices: list[str] | None) -> list[str] | None:
    """[letter] when a box holds the text of exactly one option (\\boxed{5.2 eV} for "A) 5.2 eV") or, compared as
    numbers, the value of exactly one option (\\boxed{5.0} for "5", \\dfrac for \\frac, 2.4e-3 for
    2.4 \\times 10^{-3}, the unit left out); else None."""
    if not choices:
        return None
    key = _value_key(content)
    matches = [LETTERS[i] for i, choice in enumerate(choices[:4]) if key and _value_key(str(choice)) == key]
    if not matches and (answer := _number_value(content)) is not None:
        values = [_number_value(str(choice)) for choice in choices[:4]]
        matches = [LETTERS[i] for i, value in enumerate(values) if value is not None and _same_number(answer, value)]
    return matches if len(matches) == 1 else None


def _offered_letters(rest: str, choices: list[str] | None) -> list[str]:
    """Other option letters the rest of an answer's line offers beside it: any letter standing alone there
    when a hedging word is there too ("Answer: D (or possibly C)", "The answer is D, or perhaps C.",
    "Answer: D. Although C is possible."). Not a letter it excludes ("D, not C", "C is wrong"), the article
    ("or A photon"), an option's own text, or a letter in reasoning without a hedge ("B, since C ignores
    the spin")."""
    for choice in choices or ():
        if str(choice).strip():
            rest = rest.replace(str(choice), " ")  # "Answer: (C) Compound A" names no option A
    plain = _plain(rest)
    if not _HEDGE_WORD.search(plain):
        return []
    offered = []
    for match in _STANDING_LETTER.finditer(plain):
        letter = (match.group(1) or match.group(2)).upper()
        article = match.group(1) == "A" and not match.group(0).startswith(("(", "[")) and _ARTICLE.match(plain, match.end())
        if article or _EXCLUDED_BEFORE.search(plain[:match.start()]) or _EXCLUDED_AFTER.match(plain, match.end()):
            continue
        offered.append(letter)
    return offered


def _explicit_answers(completion: str, choices: list[str] | None = None) -> list[tuple[int, list[str]]]:
    """(position, letters) of every explicit answer: each \\boxed{} whose content is option letters (boxes
    joined by "or", "and", "," count as one answer) or the text of exactly one of `choices`, and each answer
    phrase followed by letters (on its line, or alone on the next line)."""
    answers = []
    boxes = [(start, end, content) for start, end, content, status in iter_boxed(completion) if status == "ok"]
    previous_end = None
    for start, end, content in reversed(boxes):  # iter_boxed gives the last box first
        plain = _plain(content)
        found = _letters_at(plain)
        if not (found and (_BOX_TAIL.match(plain[found[1]:]) or _closed(plain, found))):
            value = _value_letter(content, choices)
            found = (value, len(plain)) if value else None
        if found:
            rest = completion[end:].partition("\n")[0][:300]
            between = completion[previous_end:start] if previous_end is not None else "\n"
            if _BOX_JOIN.fullmatch(_plain(between)):
                answers[-1][1].extend(found[0])  # \boxed{B} or \boxed{C}: one hedged answer
            elif "\n" not in between and _HEDGE_WORD.search(_plain(between + rest)):
                answers[-1][1].extend(found[0])  # \boxed{D}, though \boxed{B} is possible: one line, a hedge
            else:
                answers.append((start, list(found[0])))
            answers[-1][1].extend(_offered_letters(rest, choices))
            previous_end = end
        else:
            previous_end = None
    for phrase in _ANSWER_PHRASE.finditer(completion):
        line, _, below = completion[phrase.end(): phrase.end() + 300].partition("\n")
        plain = _plain(line)
        found = _letters_at(plain)
        letters = found[0] + _offered_letters(plain[found[1]:], choices) if found else None
        if letters is None and not plain.strip():  # "Answer:\nC": the letter alone on the next non-blank line
            nxt = _plain(next((text for text in below.split("\n") if _plain(text).strip()), ""))
            found = _letters_at(nxt)
            if found and (_LINE_TAIL.match(nxt[found[1]:]) or _closed(nxt, found)):
                letters = found[0] + _offered_letters(nxt[found[1]:], choices)
        if letters is None:
            letters = _lower_letters_at(plain)
            letters = letters + _offered_letters(plain, choices) if letters else None
        if letters is None:  # "The answer is 1.6 eV.", "Answer: 6.4 eV (D)"
            letters = _prose_value(line, choices)
        if letters:
            answers.append((phrase.start(), letters))
    answers += _prose_commitments(completion, choices)
    return sorted(answers, key=lambda answer: answer[0])


def extract_choice(completion: str, choices: list[str] | None = None) -> list[str]:
    """The distinct option letters of the completion's last explicit answer, in order (empty: no answer).

    Explicit answers are \\boxed{} letters (\\boxed{B}, \\boxed{\\text{B}}, \\boxed{(B)}, \\boxed{B) text}) and
    answer phrases ("Answer: C", "the answer is (B)", "**Final answer:** D", "The correct option is (B).",
    "Answer:" with the letter alone on the next line). With `choices` (the option texts, in shown order), a
    box holding the text of exactly one option is that option (the paper's prompt never asks for a letter).
    The one written last counts, box or phrase. Two or more letters ("C or D", "A, C", "B and C") are a
    hedge. A lower-case letter counts only after an answer phrase, in brackets or alone at the line's end
    ("the answer is (c)", "Answer: c"): elsewhere a lone c is usually a quantity (the speed of light) and
    "a" the article.
    """
    answers = _explicit_answers(completion, choices)
    return list(dict.fromkeys(answers[-1][1])) if answers else []


def extract_choice_letter(completion: str, choices: list[str] | None = None) -> str | None:
    """The one option letter A-D the completion's last explicit answer commits to; None for no answer or
    a hedge naming two letters (see `extract_choice`)."""
    letters = extract_choice(completion, choices)
    return letters[0] if len(letters) == 1 else None


def _field(record: dict[str, Any], benchmark: str, *names: str) -> Any:
    """The first of `names` in `record`; a ValueError naming the field when none is there."""
    for name in names:
        if name in record and record[name] is not None:
            return record[name]
    raise ValueError(f"{benchmark} record has no field {' or '.join(map(repr, names))} "
                     f"(fields: {', '.join(map(str, record)) or 'none'})")


def grade_gpqa(record: dict[str, Any], completion: str) -> Score:
    gold = str(_field(record, "gpqa_diamond", "answer")).strip()
    choices = record.get("choices")
    letters = extract_choice(completion, list(choices) if isinstance(choices, (list, tuple)) else None)
    if not letters:
        return Score(False, "no_answer", None)
    if len(letters) > 1:  # a hedge is wrong even when it names the right letter
        return Score(False, "wrong", ",".join(letters))
    return Score(letters[0] == gold, "correct" if letters[0] == gold else "wrong", letters[0])


@lru_cache(maxsize=1)
def ifeval_registry() -> dict[str, Any]:
    """IFEval instruction id -> checker class, from the if-verifiable package."""
    try:
        from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT
    except ImportError:
        raise ValueError("IFEval grading needs the if-verifiable package: pip install 'fgrpo-sim[llm]' "
                         "(or pip install if-verifiable)") from None
    import langdetect

    langdetect.DetectorFactory.seed = 0  # the language checks use langdetect, random unless seeded
    return dict(INSTRUCTION_DICT)


#: The IFEval instructions whose checks use NLTK's punkt_tab data (if-verifiable's NumberOfSentences counts
#: sentences with the punkt tokenizer, CapitalWordFrequencyChecker splits words with nltk.word_tokenize).
#: tests/test_llm_grading.py runs every registered check without the data to keep this list exact.
NLTK_INSTRUCTIONS = ("length_constraints:number_sentences", "change_case:capital_word_frequency")


def check_sentence_tokenizer() -> None:
    """ValueError (one line) unless NLTK's punkt_tab data, used by `NLTK_INSTRUCTIONS`, is installed."""
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError:
        raise ValueError(f"IFEval instructions {' and '.join(NLTK_INSTRUCTIONS)} need NLTK's punkt_tab data: "
                         "python -m nltk.downloader punkt_tab") from None


def ifeval_instructions(record: dict[str, Any]) -> tuple[str, list[str], list[dict[str, Any]]]:
    """(prompt, instruction ids, kwargs per instruction) of an IFEval record, in the public schema (key,
    prompt, instruction_id_list, kwargs) or as `load_ood_benchmark` returns it (problem for prompt).

    kwargs entries drop their None fields (the hub copy lists every field of every instruction) and read
    integral floats as ints (a pandas export writes 3 as 3.0). A missing field, a length mismatch or an
    instruction the checker does not know is a one-line ValueError.
    """
    prompt = _field(record, "ifeval", "prompt", "problem")
    ids = _field(record, "ifeval", "instruction_id_list")
    kwargs = _field(record, "ifeval", "kwargs")
    if not isinstance(ids, (list, tuple)) or not ids or not all(isinstance(i, str) for i in ids):
        raise ValueError(f"ifeval record field 'instruction_id_list' must be a non-empty list of ids, got {ids!r}")
    if not isinstance(kwargs, (list, tuple)) or len(kwargs) != len(ids) or \
            not all(k is None or isinstance(k, dict) for k in kwargs):
        raise ValueError(f"ifeval record field 'kwargs' must be a list of {len(ids)} dicts (one per instruction), "
                         f"got {kwargs!r}"[:300])
    unknown = [i for i in ids if i not in ifeval_registry()]
    if unknown:
        raise ValueError(f"unknown IFEval instruction {unknown[0]!r}")
    cleaned = [{key: int(value) if isinstance(value, float) and value.is_integer() else value
                for key, value in (k or {}).items() if value is not None} for k in kwargs]
    return str(prompt), list(ids), cleaned


def _nltk_data_missing(error: LookupError) -> bool:
    """NLTK raises a plain LookupError for missing data; KeyError and IndexError are LookupErrors too."""
    return type(error) is LookupError


def grade_ifeval(record: dict[str, Any], completion: str) -> Score:
    prompt, ids, kwargs = ifeval_instructions(record)  # also: a clear error when the package is missing
    from if_verifiable.common import evaluate_instructions

    try:
        results, scores = evaluate_instructions(response=completion, instruction_id_list=ids, kwargs_list=kwargs,
                                                prompt=prompt, instruction_registry=ifeval_registry())
    except LookupError as error:
        if not _nltk_data_missing(error):
            raise
        return Score(False, "error", None)  # punkt_tab missing (fgrpo llm eval refuses to start without it)
    if not results:
        return Score(False, "no_answer", None)
    if len(results) != len(ids):  # the package skips ids it does not know; never count that as a pass
        return Score(False, "error", None)
    passed = all(r.strict_pass for r in results)
    return Score(passed, "correct" if passed else "wrong", f"{sum(r.strict_pass for r in results)}/{len(ids)}")


class SynLogicVerifiers:
    """The verifier classes of a SynLogic checkout (its task2verifier.verifier_classes)."""

    def __init__(self, repo: str | Path):
        root = Path(repo).expanduser().resolve()
        if not (root / "task2verifier.py").is_file() or not (root / "base" / "data.py").is_file():
            raise ValueError(f"--synlogic-repo {repo} is not a SynLogic checkout (no task2verifier.py and "
                             f"base/data.py); {SYNLOGIC_HELP}")
        # The checkout's top-level packages (task2verifier, base, games, corpus) are imported by name; drop
        # any copies already imported from another checkout so this one's verifiers are used.
        for name in [m for m in sys.modules if m.split(".")[0] in ("task2verifier", "base", "games", "corpus")]:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if not file or not Path(file).resolve().is_relative_to(root):
                del sys.modules[name]
        if str(root) in sys.path:
            sys.path.remove(str(root))
        sys.path.insert(0, str(root))
        with contextlib.redirect_stdout(io.StringIO()):  # task2verifier prints its folder on import
            self.classes = importlib.import_module("task2verifier").verifier_classes
            self.data_class = importlib.import_module("base.data").Data
        self.root = root

    def score(self, task: str, game_data: dict[str, Any], completion: str) -> Score:
        if task not in self.classes:
            raise ValueError(f"SynLogic task {task!r} has no verifier in {self.root} "
                             f"(known: {', '.join(sorted(self.classes)[:8])}, ...)")
        data = self.data_class.from_json_dict(dict(game_data))
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                result = self.classes[task]().verify(data, completion)
        except Exception:  # a verifier crash on odd model output is a wrong answer, counted apart
            return Score(False, "error", None)
        correct = result is True or (isinstance(result, (int, float)) and not isinstance(result, bool) and result >= 1)
        return Score(bool(correct), "correct" if correct else "wrong", None)


@lru_cache(maxsize=4)
def synlogic_verifiers(repo: str) -> SynLogicVerifiers:
    return SynLogicVerifiers(repo)


@lru_cache(maxsize=2)
def _math_verifier(fallback_last_number: bool) -> MathVerifier:
    return MathVerifier(fallback_last_number=fallback_last_number)


def grade_detailed(benchmark: str, record: dict[str, Any], completion: str, *, synlogic_repo: str | None = None,
                   fallback_last_number: bool = False) -> Score:
    """`Score(correct, status, extracted)` of one completion for one problem record of `benchmark` (any
    spelling `fgrpo_sim.llm.evaluation.prompts.canonical_benchmark` knows; an unknown name is a ValueError)."""
    kind = benchmark_kind(benchmark)
    completion = "" if completion is None else str(completion)
    if kind == "gpqa":
        return grade_gpqa(record, completion)
    if kind == "ifeval":
        return grade_ifeval(record, completion)
    if kind == "synlogic":
        repo = synlogic_repo or os.environ.get("SYNLOGIC_REPO")
        if not repo:
            raise ValueError(SYNLOGIC_HELP)
        return synlogic_verifiers(str(repo)).score(_field(record, "synlogic", "task"),
                                                   _field(record, "synlogic", "game_data"), completion)
    return _math_verifier(bool(fallback_last_number)).score(completion, _field(record, benchmark, "answer"))


def grade(benchmark: str, record: dict[str, Any], completion: str, **options: Any) -> bool:
    """True when `completion` solves `record` of `benchmark` (options: synlogic_repo, fallback_last_number)."""
    return bool(grade_detailed(benchmark, record, completion, **options).correct)


class BenchmarkGrader:
    """The grader `fgrpo llm eval` uses: `score_record(record, completion) -> Score` for one benchmark.

    Checks up front what grading will need, before any model is loaded: the SynLogic checkout; for IFEval
    the checker package, and NLTK's punkt_tab only when one of `problems` (all when not given) has an
    instruction in `NLTK_INSTRUCTIONS`, so a file without them evaluates offline with no NLTK data.
    """

    def __init__(self, benchmark: str, *, synlogic_repo: str | None = None, fallback_last_number: bool = False,
                 problems: list[dict[str, Any]] | None = None):
        self.benchmark, self.options = benchmark, {"synlogic_repo": synlogic_repo,
                                                   "fallback_last_number": fallback_last_number}
        kind = benchmark_kind(benchmark)  # an unknown name fails here, not after the model loaded
        if kind == "synlogic":
            repo = synlogic_repo or os.environ.get("SYNLOGIC_REPO")
            if not repo:
                raise ValueError(SYNLOGIC_HELP)
            synlogic_verifiers(str(repo))
        elif kind == "ifeval":
            ifeval_registry()
            if problems is None or any(i in NLTK_INSTRUCTIONS for p in problems
                                       for i in p.get("instruction_id_list") or ()):
                check_sentence_tokenizer()

    def score_record(self, record: dict[str, Any], completion: str) -> Score:
        return grade_detailed(self.benchmark, record, completion, **self.options)
