"""One grading entry point for every benchmark of the paper: `grade(benchmark, record, completion) -> bool`.

`record` is one problem as the loaders return it (`fgrpo_sim.llm.data.load_benchmark` for math,
`fgrpo_sim.llm.ood_data.load_ood_benchmark` for the rest). `grade_detailed` returns the `Score`
(correct, status, extracted) that `fgrpo llm eval` writes.

* math (math500, aime24, aime25, amc23, minerva, olympiadbench, generic): math-verify on the last
  \\boxed{} through `fgrpo_sim.llm.rewards.MathVerifier` (unchanged).
* gpqa_diamond: the option letter from the last \\boxed{} (also \\boxed{\\text{B}}, \\boxed{(B)},
  \\boxed{B) text}), else the last "Answer: X" / "answer is (X)" / "**Answer:** X" phrase; correct when it
  equals the record's letter. No letter -> status no_answer.
* ifeval: the instruction checks of the `if-verifiable` package (a port of Google's IFEval checks);
  correct = every instruction passes in strict mode, i.e. prompt-level strict accuracy. A leading
  <think>...</think> block is removed first (the package does this). Sentence-count instructions need
  NLTK's "punkt_tab" data (`python -m nltk.downloader punkt_tab`): `grade` marks them status "error"
  without it, and `fgrpo llm eval --benchmark ifeval` refuses to start.
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

from fgrpo_sim.llm.prompts import benchmark_kind
from fgrpo_sim.llm.rewards import MathVerifier, Score, extract_last_boxed

SYNLOGIC_HELP = ("SynLogic grading needs a local checkout of its verifiers: "
                 "git clone https://github.com/MiniMax-AI/SynLogic and pass --synlogic-repo PATH "
                 "(or set SYNLOGIC_REPO)")

_LETTER_IN_BOX = re.compile(r"^\s*(?:\\text\{|\\textbf\{|\\mathrm\{)?\s*\(?\s*([A-D])\s*\)?\s*\}?\s*(?:[).:\s].*)?$",
                            re.DOTALL)
_ANSWER_PHRASES = re.compile(
    r"(?:final\s+answer|answer)\s*(?:is|:)?\s*[:*\s]*(?:option\s+|choice\s+)?\(?\s*\$?\s*([A-D])\s*\$?\s*\)?(?![A-Za-z])",
    re.IGNORECASE,
)


def extract_choice_letter(completion: str) -> str | None:
    """The multiple-choice letter A-D a completion commits to, or None.

    The last \\boxed{} wins when its content is a letter; otherwise the last answer phrase
    ("Answer: C", "the answer is (B)", "**Final answer:** D"). Lower-case letters are not accepted
    (too easily part of prose: "answer is a ...").
    """
    boxed, status = extract_last_boxed(completion)
    if status == "ok" and boxed is not None:
        match = _LETTER_IN_BOX.match(boxed)
        if match:
            return match.group(1)
    letters = [m.group(1) for m in _ANSWER_PHRASES.finditer(completion) if m.group(1).isupper()]
    return letters[-1] if letters else None


def grade_gpqa(record: dict[str, Any], completion: str) -> Score:
    letter = extract_choice_letter(completion)
    if letter is None:
        return Score(False, "no_answer", None)
    return Score(letter == record["answer"], "correct" if letter == record["answer"] else "wrong", letter)


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


def check_sentence_tokenizer() -> None:
    """ValueError (one line) unless NLTK's punkt_tab data, used by IFEval's sentence counts, is installed."""
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError:
        raise ValueError("IFEval's sentence-count checks need NLTK's punkt_tab data: "
                         "python -m nltk.downloader punkt_tab") from None


def grade_ifeval(record: dict[str, Any], completion: str) -> Score:
    registry = ifeval_registry()  # a clear error when the package is missing
    from if_verifiable.common import evaluate_instructions

    ids = record["instruction_id_list"]
    try:
        results, scores = evaluate_instructions(response=completion, instruction_id_list=ids,
                                                kwargs_list=record.get("kwargs") or [{} for _ in ids],
                                                prompt=record["problem"], instruction_registry=registry)
    except LookupError:  # NLTK data (punkt_tab) missing for sentence-count checks
        return Score(False, "error", None)
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
    """`Score(correct, status, extracted)` of one completion for one problem record of `benchmark`."""
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
        return synlogic_verifiers(str(repo)).score(record["task"], record["game_data"], completion)
    return _math_verifier(bool(fallback_last_number)).score(completion, record["answer"])


def grade(benchmark: str, record: dict[str, Any], completion: str, **options: Any) -> bool:
    """True when `completion` solves `record` of `benchmark` (options: synlogic_repo, fallback_last_number)."""
    return bool(grade_detailed(benchmark, record, completion, **options).correct)


class BenchmarkGrader:
    """The grader `fgrpo llm eval` uses: `score_record(record, completion) -> Score` for one benchmark."""

    def __init__(self, benchmark: str, *, synlogic_repo: str | None = None, fallback_last_number: bool = False):
        self.benchmark, self.options = benchmark, {"synlogic_repo": synlogic_repo,
                                                   "fallback_last_number": fallback_last_number}
        if benchmark_kind(benchmark) == "synlogic":  # fail before any model is loaded
            repo = synlogic_repo or os.environ.get("SYNLOGIC_REPO")
            if not repo:
                raise ValueError(SYNLOGIC_HELP)
            synlogic_verifiers(str(repo))
        elif benchmark_kind(benchmark) == "ifeval":
            ifeval_registry()
            check_sentence_tokenizer()

    def score_record(self, record: dict[str, Any], completion: str) -> Score:
        return grade_detailed(self.benchmark, record, completion, **self.options)
