"""`fgrpo_sim.llm.grade` on tables of right, wrong, malformed and adversarial completions per benchmark."""

from __future__ import annotations

import json
import textwrap

import pytest
from extras import require

from fgrpo_sim.llm.evaluation.grading import extract_choice, extract_choice_letter, grade, grade_detailed
from fgrpo_sim.llm.evaluation.ood_data import gpqa_record, load_ood_benchmark
from fgrpo_sim.rehearsal.inputs import STANDIN_FILES

# ---------------------------------------------------------------- GPQA-Diamond

GPQA_RAW = {"Record ID": "rec42", "Question": "Which particle carries the electromagnetic force?",
            "Correct Answer": "photon", "Incorrect Answer 1": "gluon", "Incorrect Answer 2": "W boson",
            "Incorrect Answer 3": "graviton"}

LETTER_CASES = [  # (completion, letter the grader must extract)
    ("Reasoning... so \\boxed{B}", "B"),
    ("\\boxed{\\text{C}}", "C"),
    ("\\boxed{(D)}", "D"),
    ("\\boxed{A) photon}", "A"),
    ("\\boxed{\\textbf{B}}", "B"),
    ("Answer: C", "C"),
    ("The answer is (A).", "A"),
    ("**Final Answer:** D", "D"),
    ("the final answer is $B$", "B"),
    ("Answer: A at first, but after checking, Answer: D", "D"),  # last phrase wins
    ("Answer: B\n...\\boxed{C}", "C"),  # a boxed letter beats an earlier phrase
    ("\\boxed{B} was wrong; corrected: \\boxed{A}", "A"),  # last box wins
    ("I think the answer is a photon", None),  # lower-case 'a' in prose is not a letter
    ("\\boxed{42}", None),  # a number is not a choice
    ("\\boxed{E}", None),  # out of range
    ("\\boxed{AB}", None),  # two letters
    ("", None),
    ("\\boxed{B", None),  # unclosed box, no phrase
    ("Answer: Because of symmetry", None),  # a word starting with B is not the letter B
    # one rule: the last explicit answer, box or phrase, counts
    ("\\boxed{D} at first.\nAfter checking the units again, Answer: A", "A"),
    ("\\boxed{C}\n\nAnswer: C", "C"),  # the same letter repeated is one answer
    ("Answer: C or D at first; then Answer: D", "D"),  # an earlier hedge is not the last answer
    ("The correct option is (B).", "B"),
    ("The correct choice is C.", "C"),
    ("so the best choice is D", "D"),
    ("The answer is B, not C.", "B"),
    ("Answer: B, since C ignores the spin.", "B"),  # a later letter that ends no list is prose
    ("The answer is not B", None),
    ("\\boxed{A = 5\\text{ m}^2}", None),  # a boxed quantity named A is not option A
    # lower-case letters count only after an answer phrase, alone or in brackets (issue 29; see below)
    ("\\boxed{d}", None),
    ("Answer: b = 2", None),  # after a phrase, a lower-case letter followed by more text is a quantity
    ("so v approaches \\boxed{c}", None),
    # the article "A" in prose is not option A
    ("A photon carries the force. Answer: B", "B"),
    ("Answer: B. A photon is massless.", "B"),
    ("Answer: B or A photon, which is massless", "B"),
    ("Answer: D, A photon being massless", "D"),
    ("Option A is wrong and option B is wrong", None),  # no answer phrase: naming options is not answering
]

HEDGES = [  # every answer naming two different letters is wrong, whatever the connective
    "\\boxed{C or D}", "\\boxed{B and C}", "Answer: D or A", "Answer: D, A", "\\boxed{A, C}",
    "\\boxed{C \\text{ or } D}", "\\boxed{\\text{B and C}}", "Answer: (C) or (D).", "Answer: C/D",
    "Answer: C & D", "The answer is either C or D.", "\\boxed{C} or \\boxed{D}", "$\\boxed{D}$, $\\boxed{A}$",
    "\\boxed{D}\n\nAnswer: D or A",  # the last explicit answer is the hedge
    "Answer: A, B, C or D",
]


@pytest.mark.parametrize("completion, letter", LETTER_CASES)
def test_gpqa_letter_extraction(completion, letter):
    assert extract_choice_letter(completion) == letter


@pytest.mark.parametrize("completion", HEDGES)
def test_gpqa_hedged_answer_is_wrong_even_with_the_right_letter(completion):
    letters = extract_choice(completion)
    assert len(letters) == 2 or letters == list("ABCD")
    for gold in letters:  # right whichever letter is the gold one: still wrong
        score = grade_detailed("gpqa_diamond", {"answer": gold}, completion)
        assert (score.correct, score.status, score.extracted) == (False, "wrong", ",".join(letters))
    assert extract_choice_letter(completion) is None


def test_gpqa_last_explicit_answer_decides_and_a_repeat_stays_correct():
    early_box = "\\boxed{D}\nWait, that ignores the spin. Answer: A"
    assert grade("gpqa_diamond", {"answer": "A"}, early_box)
    assert not grade("gpqa_diamond", {"answer": "D"}, early_box)
    for repeat in ("\\boxed{C} ... Answer: C", "Answer: C\n\\boxed{C}", "Answer: C or C"):
        assert grade_detailed("gpqa_diamond", {"answer": "C"}, repeat).status == "correct"
    assert grade_detailed("gpqa_diamond", {"answer": "D"}, "\\boxed{d}").status == "no_answer"


def test_gpqa_grade_uses_the_recorded_shuffled_letter():
    record = gpqa_record(GPQA_RAW, 1, "x")
    gold = record["answer"]
    assert record["choices"][ord(gold) - 65] == "photon"
    assert record["choice_order"][ord(gold) - 65] == 0  # index 0 = the correct answer before shuffling
    assert sorted(record["choice_order"]) == [0, 1, 2, 3]
    wrong = next(letter for letter in "ABCD" if letter != gold)
    assert grade("gpqa_diamond", record, f"\\boxed{{{gold}}}")
    assert not grade("gpqa_diamond", record, f"\\boxed{{{wrong}}}")
    assert not grade("gpqa_diamond", record, "photon")  # the option text is not the letter
    assert grade_detailed("gpqa_diamond", record, "no idea").status == "no_answer"
    assert grade_detailed("gpqa_diamond", record, f"Answer: {wrong}").extracted == wrong


def test_gpqa_order_is_stable_per_id_and_differs_between_ids(tmp_path):
    first, again = gpqa_record(GPQA_RAW, 1, "x"), gpqa_record(dict(GPQA_RAW), 7, "y")
    assert first["choice_order"] == again["choice_order"] and first["shuffle_seed"] == again["shuffle_seed"]
    orders = {tuple(gpqa_record({**GPQA_RAW, "Record ID": f"r{i}"}, 1, "x")["choice_order"]) for i in range(40)}
    assert len(orders) > 5  # the seed depends on the id: the correct option is not always in one place
    letters = {gpqa_record({**GPQA_RAW, "Record ID": f"r{i}"}, 1, "x")["answer"] for i in range(40)}
    assert letters == set("ABCD")
    path = tmp_path / "gpqa.jsonl"
    path.write_text(json.dumps({"problem_id": "s1", "question": "Q?", "correct_answer": "yes",
                                "incorrect_answers": ["no", "maybe", "never"]}) + "\n")
    (row,) = load_ood_benchmark("gpqa_diamond", path)
    assert "A) " in row["problem"] and "D) " in row["problem"] and row["choices"][ord(row["answer"]) - 65] == "yes"
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist([GPQA_RAW]), tmp_path / "gpqa.parquet")  # the hub's file format
    (from_parquet,) = load_ood_benchmark("gpqa_diamond", tmp_path / "gpqa.parquet")
    assert from_parquet == gpqa_record(GPQA_RAW, 1, "x")
    path.write_text(json.dumps({"question": "Q?", "correct_answer": "yes", "incorrect_answers": ["no"]}) + "\n")
    with pytest.raises(ValueError, match="row 1 needs exactly 3 incorrect answers"):
        load_ood_benchmark("gpqa_diamond", path)


# ---------------------------------------------------------------- IFEval

LONG = ("i really like to eat a banana every morning because it gives me energy for the whole day "
        "and it tastes good with some yogurt and honey.")


def _ifeval(ids, kwargs, prompt="Follow the instructions."):
    return {"problem_id": "k", "problem": prompt, "answer": "", "instruction_id_list": ids, "kwargs": kwargs}


IFEVAL_CASES = [  # (instruction ids, kwargs, completion, prompt-level strict result)
    (["change_case:english_lowercase"], [{}], LONG, True),
    (["change_case:english_lowercase"], [{}], LONG.capitalize(), False),
    (["change_case:english_capital"], [{}], LONG.upper(), True),
    (["keywords:existence"], [{"keywords": ["banana", "honey"]}], LONG, True),
    (["keywords:existence"], [{"keywords": ["mango"]}], LONG, False),
    (["keywords:forbidden_words"], [{"forbidden_words": ["apple"]}], LONG, True),
    (["keywords:forbidden_words"], [{"forbidden_words": ["banana"]}], LONG, False),
    (["length_constraints:number_words"], [{"num_words": 10, "relation": "at least"}], LONG, True),
    (["length_constraints:number_words"], [{"num_words": 10, "relation": "less than"}], LONG, False),
    (["detectable_format:json_format"], [{}], '{"fruit": "banana"}', True),
    (["detectable_format:json_format"], [{}], "fruit = banana", False),
    (["punctuation:no_comma"], [{}], "no commas here at all", True),
    (["punctuation:no_comma"], [{}], "one, two", False),
    (["startend:end_checker"], [{"end_phrase": "Any other questions?"}], "Done. Any other questions?", True),
    (["startend:end_checker"], [{"end_phrase": "Any other questions?"}], "Any other questions? Done.", False),
    (["detectable_format:number_bullet_lists"], [{"num_bullets": 2}], "* one\n* two", True),
    (["detectable_format:number_bullet_lists"], [{"num_bullets": 2}], "* one\n* two\n* three", False),
    (["startend:quotation"], [{}], '"quoted answer"', True),
    # several instructions: prompt-level strict needs every one
    (["change_case:english_lowercase", "keywords:existence"], [{}, {"keywords": ["banana"]}], LONG, True),
    (["change_case:english_lowercase", "keywords:existence"], [{}, {"keywords": ["kiwi"]}], LONG, False),
    # malformed / adversarial
    (["punctuation:no_comma"], [{}], "", False),  # empty answer passes nothing
    (["punctuation:no_comma"], [{}], "<think>a, b, c</think>clean answer", True),  # thinking is stripped
    (["punctuation:no_comma"], [{}], "<think>never closed, thinking", False),  # only thinking: no answer
    (["keywords:existence"], [{"keywords": ["banana"]}], "BANANA!", True),  # the checker is case-insensitive
]


@pytest.mark.parametrize("ids, kwargs, completion, expected", IFEVAL_CASES)
def test_ifeval_prompt_level_strict(ids, kwargs, completion, expected):
    require("if_verifiable")
    assert grade("ifeval", _ifeval(ids, kwargs), completion) is expected


def test_ifeval_loader_rejects_unknown_instructions_and_keeps_kwargs(tmp_path):
    require("if_verifiable")
    path = tmp_path / "ifeval.jsonl"
    rows = [{"key": 1000, "prompt": "Write in lowercase.", "instruction_id_list": ["change_case:english_lowercase"],
             "kwargs": [{"num_words": None}]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (row,) = load_ood_benchmark("ifeval", path)
    assert row["problem_id"] == "1000" and row["instruction_id_list"] == ["change_case:english_lowercase"]
    rows[0]["instruction_id_list"] = ["made_up:check"]
    path.write_text(json.dumps(rows[0]) + "\n")
    with pytest.raises(ValueError, match="unknown IFEval instruction 'made_up:check'"):
        load_ood_benchmark("ifeval", path)


# ---------------------------------------------------------------- SynLogic (fake checkout, real layout)

# SynLogic's base classes as the rehearsal's stand-in checkout writes them (one copy), plus two tasks of our own.
FAKE_FILES = {
    **{name: STANDIN_FILES[name] for name in ("base/data.py", "base/verifier.py")},
    "games/tasks/game_of_24/scripts/game_of_24_verifier.py": """
        import re
        from base.verifier import Verifier

        class GameOf24Verifier(Verifier):
            def verify(self, data, test_solution):
                answer = self.extract_answer(test_solution)
                print("Extracted answer:", answer)  # the real verifiers print; the grader must swallow it
                if re.sub(r"[0-9+*/()\\s-]", "", answer):
                    return False
                used = sorted(int(x) for x in re.findall(r"[0-9]+", answer))
                if used != sorted(data.metadata["numbers"]):
                    return False
                return abs(eval(answer) - data.metadata["result"]) < 1e-9
    """,
    "games/tasks/sudoku/scripts/sudoku_verifier.py": """
        from base.verifier import Verifier

        class SudokuVerifier(Verifier):
            def verify(self, data, test_solution):
                answer = self.extract_answer(test_solution).replace(" ", "")
                if answer == "crash":
                    raise RuntimeError("verifier bug")
                return 1.0 if answer == data.answer else 0
    """,
    "task2verifier.py": """
        import os
        import sys
        print(os.path.dirname(os.path.abspath(__file__)))
        sys.path.append(os.path.dirname(os.path.abspath(__file__)))
        from games.tasks.game_of_24.scripts.game_of_24_verifier import GameOf24Verifier
        from games.tasks.sudoku.scripts.sudoku_verifier import SudokuVerifier

        verifier_classes = {"game_of_24": GameOf24Verifier, "sudoku": SudokuVerifier}
    """,
}


@pytest.fixture(scope="module")
def synlogic_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("SynLogic")
    for rel, text in FAKE_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    return root


G24 = {"problem_id": "g1", "problem": "Use 3 3 8 8 to make 24.", "answer": "8/(3-8/3)", "task": "game_of_24",
       "game_data": {"question": "q", "answer": "8/(3-8/3)", "metadata": {"numbers": [3, 3, 8, 8], "result": 24}}}
SUDOKU = {"problem_id": "s1", "problem": "Solve.", "answer": "123", "task": "sudoku",
          "game_data": {"question": "q", "answer": "123", "metadata": {}}}

SYNLOGIC_CASES = [
    (G24, "<answer>8/(3-8/3)</answer>", True),
    (G24, "thinking... <answer> 8 / (3 - 8 / 3) </answer>", True),
    (G24, "<think>try <answer>8/(3-8/3)</answer></think>then <answer>8*3</answer>", False),  # after </think> only
    (G24, "<answer>8*3</answer>", False),  # 24 but wrong numbers
    (G24, "<answer>3+3+8+8</answer>", False),
    (G24, "8/(3-8/3)", False),  # no answer tags
    (G24, "<answer>__import__('os')</answer>", False),  # letters refused before eval
    (G24, "", False),
    (G24, "<answer></answer>", False),
    (SUDOKU, "<answer>123</answer>", True),  # a score of 1.0 counts as correct
    (SUDOKU, "<answer>1 2 3</answer>", True),
    (SUDOKU, "<answer>124</answer>", False),  # a score of 0
    (SUDOKU, "<answer>123", False),  # unclosed tag
    (SUDOKU, "<answer>crash</answer>", False),  # a verifier exception is a wrong answer (status error)
    (SUDOKU, "<answer>321</answer>", False),
]


@pytest.mark.parametrize("record, completion, expected", SYNLOGIC_CASES)
def test_synlogic_calls_the_checkout_verifiers(synlogic_repo, record, completion, expected, capsys):
    assert grade("synlogic", record, completion, synlogic_repo=str(synlogic_repo)) is expected
    assert capsys.readouterr().out == ""  # the repository's prints do not leak into our output


def test_synlogic_statuses_and_errors(synlogic_repo, tmp_path, monkeypatch):
    assert grade_detailed("synlogic", SUDOKU, "<answer>crash</answer>", synlogic_repo=str(synlogic_repo)).status == "error"
    with pytest.raises(ValueError, match="task 'zebra' has no verifier"):
        grade("synlogic", {**SUDOKU, "task": "zebra"}, "x", synlogic_repo=str(synlogic_repo))
    monkeypatch.delenv("SYNLOGIC_REPO", raising=False)
    with pytest.raises(ValueError) as info:
        grade("synlogic", SUDOKU, "<answer>123</answer>")
    message = str(info.value)
    assert "\n" not in message and "git clone https://github.com/MiniMax-AI/SynLogic" in message
    assert "--synlogic-repo" in message
    with pytest.raises(ValueError, match="is not a SynLogic checkout"):
        grade("synlogic", SUDOKU, "x", synlogic_repo=str(tmp_path))
    monkeypatch.setenv("SYNLOGIC_REPO", str(synlogic_repo))
    assert grade("synlogic", SUDOKU, "<answer>123</answer>")


def test_synlogic_loader_reads_game_data_forms(tmp_path):
    game = {"question": "Sort: b a", "answer": "a b", "difficulty": 1, "metadata": {"k": 1}}
    rows = [
        {"task": "word_sorting", "question": "Sort: b a", "game_data": game},
        {"data_source": "word_sorting", "prompt": [{"role": "user", "content": "Sort: b a"}],
         "extra_info": {"game_data_str": json.dumps(game)}, "id": "x2"},
        {"task": "word_sorting", "game_data_str": json.dumps(game)},
    ]
    path = tmp_path / "synlogic.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_ood_benchmark("synlogic", path)
    assert [r["problem"] for r in loaded] == ["Sort: b a"] * 3
    assert [r["problem_id"] for r in loaded] == ["synlogic-1", "x2", "synlogic-3"]
    assert all(r["task"] == "word_sorting" and r["game_data"] == game and r["answer"] == "a b" for r in loaded)
    path.write_text(json.dumps({"task": "word_sorting", "question": "q"}) + "\n")
    with pytest.raises(ValueError, match="row 1 needs task"):
        load_ood_benchmark("synlogic", path)


# ---------------------------------------------------------------- math goes through the existing verifier

@pytest.mark.parametrize("completion, answer, expected", [
    ("so \\boxed{\\frac{1}{2}}", "0.5", True),
    ("\\boxed{3}", "4", False),
    ("no box", "4", False),
])
def test_math_benchmarks_use_math_verify(completion, answer, expected):
    require("math_verify")
    for benchmark in ("math500", "aime24", "generic"):
        assert grade(benchmark, {"answer": answer}, completion) is expected


def test_real_synlogic_checkout_when_given():
    """Runs only with FGRPO_TEST_SYNLOGIC_REPO set to a clone of https://github.com/MiniMax-AI/SynLogic (not in CI)."""
    import os

    repo = os.environ.get("FGRPO_TEST_SYNLOGIC_REPO")
    if not repo:
        pytest.skip("set FGRPO_TEST_SYNLOGIC_REPO to a SynLogic clone to run this check")
    from fgrpo_sim.llm.evaluation.grading import synlogic_verifiers

    assert len(synlogic_verifiers(repo).classes) > 30
    game24 = {"task": "mathador", "game_data": {"question": "q", "answer": "", "metadata": {
        "numbers": [3, 3, 8, 8], "operators": ["+", "-", "*", "/"], "result": 24}}}
    assert grade("synlogic", game24, "```python\n8/(3-8/3)\n```", synlogic_repo=repo)
    assert not grade("synlogic", game24, "```python\n8*3\n```", synlogic_repo=repo)
    yes = {"task": "bbh_causal_judgement", "game_data": {"question": "q", "answer": "Yes", "metadata": {}}}
    assert grade("synlogic", yes, "<answer>Yes</answer>", synlogic_repo=repo)
    assert not grade("synlogic", yes, "<answer>No</answer>", synlogic_repo=repo)


def test_ifeval_eval_needs_sentence_data(monkeypatch):
    """Without NLTK's punkt_tab an IFEval run would grade sentence counts as errors: refuse up front."""
    require("if_verifiable")
    import nltk

    from fgrpo_sim.llm.evaluation.grading import BenchmarkGrader

    def missing(*args, **kwargs):
        raise LookupError("no punkt_tab")

    monkeypatch.setattr(nltk.data, "find", missing)
    with pytest.raises(ValueError, match="python -m nltk.downloader punkt_tab"):
        BenchmarkGrader("ifeval")
    record = _ifeval(["length_constraints:number_sentences"], [{"num_sentences": 1, "relation": "at least"}])
    monkeypatch.setattr(nltk.data, "load", missing)
    assert grade_detailed("ifeval", record, "One sentence.").status == "error"


# ---------------------------------------------------------------- benchmark names

@pytest.mark.parametrize("name", ["gpqa", "GPQA", "gpqa_diamond", "gpqa-diamond", "GPQA-Diamond", "GPQA Diamond"])
def test_gpqa_names_use_the_gpqa_grader(name):
    assert grade(name, {"answer": "B"}, "Answer: B")  # under math-verify the letter B is no answer
    assert grade_detailed(name, {"answer": "B"}, "\\boxed{C or B}").status == "wrong"


def test_benchmark_names_ignore_case_and_unknown_names_are_refused(synlogic_repo):
    from fgrpo_sim.llm.evaluation.prompts import benchmark_kind, canonical_benchmark

    assert [benchmark_kind(n) for n in ("IFEval", "if-eval", "SynLogic", "syn_logic", "MATH-500", "AIME24")] == \
        ["ifeval", "ifeval", "synlogic", "synlogic", "math", "math"]
    assert canonical_benchmark("OlympiadBench") == "olympiadbench" and canonical_benchmark("Generic") == "generic"
    assert grade("SynLogic", SUDOKU, "<answer>123</answer>", synlogic_repo=str(synlogic_repo))
    require("if_verifiable")
    assert grade("IFEval", _ifeval(["punctuation:no_comma"], [{}]), "no commas")
    require("math_verify")
    assert grade("MATH500", {"answer": "4"}, "\\boxed{4}")
    for unknown in ("gpqa_main", "ifeval2", "mmlu", ""):
        with pytest.raises(ValueError) as info:  # never graded as math by default
            grade(unknown, {"answer": "B"}, "Answer: B")
        message = str(info.value)
        assert "\n" not in message and "gpqa_diamond" in message and "math500" in message and "ifeval" in message


def test_loaders_and_prompts_take_the_same_spellings(tmp_path):
    from fgrpo_sim.llm.evaluation.ood_data import load_any_benchmark
    from fgrpo_sim.llm.evaluation.prompts import prompt_spec

    path = tmp_path / "gpqa.jsonl"
    path.write_text(json.dumps(GPQA_RAW) + "\n")
    assert load_any_benchmark("GPQA-Diamond", path) == load_ood_benchmark("gpqa", path) == [gpqa_record(GPQA_RAW, 1, str(path))]
    assert prompt_spec("qwen3-base", "IFEval").chat_template_kwargs == {"enable_thinking": False}
    with pytest.raises(ValueError, match="benchmark must be one of"):
        prompt_spec("qwen3-base", "gpqa-main")
    with pytest.raises(ValueError, match="benchmark must be one of gpqa_diamond, ifeval, synlogic"):
        load_ood_benchmark("math500", path)


# ---------------------------------------------------------------- issue 29: held-out cases

#: GPQA options are shown as "A) text" and many are numbers: the option text after the letter, whatever it
#: starts with, keeps the letter (these graded no_answer before: only "A) photon", a letter-initial text, did).
NUMERIC_CHOICES = ["5.2 eV", "4", "2-methylbutane", "$4.5 \\times 10^{-3}$"]
OPTION_TEXT_CASES = [
    ("\\boxed{A) 5.2 eV}", "A"), ("\\boxed{(A) 5.2 eV}", "A"), ("\\boxed{B) 4}", "B"),
    ("\\boxed{B) 2-methylbutane}", "B"), ("\\boxed{B) $10^{-4}$ eV}", "B"),
    ("Final Answer: \\boxed{(C) 4.5 \\times 10^{-3}}", "C"), ("\\boxed{A) photon}", "A"),
    ("\\boxed{C) 5.2 eV}", "C"),  # the letter decides, even when the text is another option's
]


@pytest.mark.parametrize("completion, letter", OPTION_TEXT_CASES)
def test_gpqa_box_with_letter_and_any_option_text(completion, letter):
    assert extract_choice_letter(completion) == letter
    record = {"answer": letter, "choices": NUMERIC_CHOICES}
    assert grade_detailed("gpqa_diamond", record, completion).status == "correct"


#: Decided (docs/evaluation.md, "GPQA answers"): the letter on the line below an answer phrase counts when
#: it stands alone; a lower-case letter counts after an answer phrase when it stands alone at the end of the
#: line or in brackets; a box holding one option's text (no letter) is that option.
DECIDED_CASES = [
    ("Answer:\nC", "C"), ("**Answer:**\n\n**C**", "C"), ("Final answer:\nC) 2-methylbutane", "C"),
    ("Answer:\nA photon is massless, so D", None),  # a sentence below the phrase is not a letter
    ("The answer is (c).", "C"), ("Answer: c", "C"), ("the answer is d.", "D"), ("The answer is (c) or (d).", None),
    ("Answer: c = 3e8 m/s, so ...", None), ("I think the answer is a photon", None),
    ("\\boxed{c}", None),  # in a box without a phrase, a lone c is the speed of light as often as option C
    ("\\boxed{5.2 eV}", "A"), ("\\boxed{5.2\\,\\text{eV}}", "A"), ("\\boxed{4}", "B"),
    ("\\boxed{4.5 \\times 10^{-3}}", "D"), ("\\boxed{7 eV}", None), ("\\boxed{2-Methylbutane.}", "C"),
]


@pytest.mark.parametrize("completion, letter", DECIDED_CASES)
def test_gpqa_next_line_lower_case_and_option_value(completion, letter):
    assert extract_choice_letter(completion, NUMERIC_CHOICES) == letter
    status = grade_detailed("gpqa_diamond", {"answer": letter or "A", "choices": NUMERIC_CHOICES}, completion).status
    assert status == ("correct" if letter else ("wrong" if "or (d)" in completion else "no_answer"))


def test_gpqa_value_matching_two_options_is_no_answer():
    record = {"answer": "A", "choices": ["5.2 eV", "5.2\\,eV", "3 eV", "1 eV"]}  # same after normalisation
    assert grade_detailed("gpqa_diamond", record, "\\boxed{5.2 eV}").status == "no_answer"
    assert grade_detailed("gpqa_diamond", {"answer": "A"}, "\\boxed{5.2 eV}").status == "no_answer"  # no choices


def test_math_empty_box_is_not_an_answer():
    """A trailing empty box used to hide the answer before it (graded no_answer)."""
    require("math_verify")
    assert grade_detailed("math500", {"answer": "4"}, "\\boxed{4}\\boxed{}").status == "correct"
    assert grade_detailed("math500", {"answer": "4"}, "so \\boxed{4}. \\boxed{ }").status == "correct"
    assert grade_detailed("math500", {"answer": "4"}, "\\boxed{}").status == "no_answer"


@pytest.mark.parametrize("name", ["math", "Math", "MATH-500", "math-500", "math_500"])
def test_math_names_are_aliases_of_the_math_grader(name):
    from fgrpo_sim.llm.evaluation.prompts import benchmark_kind

    assert benchmark_kind(name) == "math"
    require("math_verify")
    assert grade(name, {"answer": "4"}, "\\boxed{4}") and not grade(name, {"answer": "4"}, "\\boxed{5}")


def test_math_alias_keeps_unknown_names_errors():
    for unknown in ("maths", "mathematics", "math501"):
        with pytest.raises(ValueError, match="benchmark must be one of .*also gpqa, math"):
            grade(unknown, {"answer": "4"}, "\\boxed{4}")


@pytest.mark.parametrize("completion, answer, expected", [
    ("\\boxed{(-\\infty,2]}", "x \\le 2", True),  # an interval answer for an inequality gold: accepted
    ("\\boxed{0.\\overline{3}}", "\\frac13", False),  # repeating decimals: missed, not added
    ("\\boxed{\\frac{1}{3}}", "0.\\overline{3}", False),
])
def test_math_verify_equivalences_documented(completion, answer, expected):
    """docs/evaluation.md names these misses; the project keeps math-verify's verdict (the training reward is
    the same function, so eval and reward agree). A math-verify upgrade that changes one fails here."""
    require("math_verify")
    assert grade("math500", {"answer": answer}, completion) is expected


# ---------------------------------------------------------------- issue 37: hedges anywhere on the line, values as numbers

#: An answer that offers a second option anywhere on its line is a hedge (wrong whichever letter is gold): the
#: issue's three cases first, then our own. Each graded the first letter or the last box before.
LINE_HEDGES = [
    "Answer: D (or possibly C)", "The answer is D, or perhaps C.", "\\boxed{C} or maybe \\boxed{D}",
    "Answer: D. Although C is possible.", "The answer is D; C is also plausible.", "Answer: D, but C could also work",
    "\\boxed{D} (or possibly \\boxed{C})", "\\boxed{D}, though \\boxed{B} is possible", "\\boxed{B}, maybe A",
    "**Final answer:** (B), or alternatively (D)", "The answer is (c), or perhaps (d)", "Answer:\nC) 2-methylbutane, or maybe D",
    "Answer: D, not C, though B might also work",
]

#: A second letter that the line excludes, or names in reasoning without a hedging word, is not a hedge.
LINE_COMMITS = [
    ("The answer is B, not C.", "B"), ("Answer: B, since C ignores the spin.", "B"), ("Answer: D; C is wrong.", "D"),
    ("Answer: D rather than C", "D"), ("Answer: D, or possibly a photon", "D"), ("Answer: D or possibly A photon", "D"),
    ("\\boxed{B} was wrong; corrected: \\boxed{A}", "A"), ("\\boxed{C}\nor maybe not; \\boxed{D}", "D"),
]


@pytest.mark.parametrize("completion", LINE_HEDGES)
def test_gpqa_hedge_anywhere_on_the_answer_line_is_wrong(completion):
    letters = extract_choice(completion)
    assert len(letters) == 2
    for gold in letters:
        assert grade_detailed("gpqa_diamond", {"answer": gold}, completion).status == "wrong"


@pytest.mark.parametrize("completion, letter", LINE_COMMITS)
def test_gpqa_a_letter_excluded_or_in_reasoning_is_no_hedge(completion, letter):
    assert extract_choice_letter(completion) == letter


#: An option's value written another way is that option, compared as a number, when exactly one option has it.
VALUE_CHOICES = ["5", "\\frac{3}{4}", "\u22122.5 eV", "$2.4 \\times 10^{-3}$ M"]
VALUE_CASES = [
    ("\\boxed{5.0}", "A"), ("\\boxed{5.00}", "A"), ("\\boxed{\\dfrac{3}{4}}", "B"), ("\\boxed{\\tfrac34}", None),
    ("\\boxed{0.75}", "B"), ("\\boxed{-2.5 eV}", "C"), ("\\boxed{-2.5}", "C"), ("\\boxed{\u22122.5\\,\\text{eV}}", "C"),
    ("\\boxed{2.5 eV}", None),  # the sign matters
    ("\\boxed{-2.5 meV}", None),  # another unit is another value
    ("\\boxed{2.4e-3}", "D"), ("\\boxed{2.4 \\cdot 10^{-3}\\ \\text{M}}", "D"), ("\\boxed{0.0024}", "D"),
    ("\\boxed{2.4 \u00d7 10^{-3}}", "D"), ("\\boxed{2.5 \\times 10^{-3}}", None), ("\\boxed{5.01}", None),
]


@pytest.mark.parametrize("completion, letter", VALUE_CASES)
def test_gpqa_option_value_compared_as_a_number(completion, letter):
    assert extract_choice_letter(completion, VALUE_CHOICES) == letter


def test_gpqa_value_of_two_options_is_still_no_answer():
    record = {"answer": "A", "choices": ["5 eV", "5 meV", "3", "1"]}  # "5" drops the unit of both
    assert grade_detailed("gpqa_diamond", record, "\\boxed{5}").status == "no_answer"
    assert grade_detailed("gpqa_diamond", record, "\\boxed{5 eV}").status == "correct"
    record = {"answer": "A", "choices": ["0.5", "\\frac{1}{2}", "3", "1"]}  # one value written two ways
    assert grade_detailed("gpqa_diamond", record, "\\boxed{\\dfrac{1}{2}}").status == "no_answer"


@pytest.mark.parametrize("completion, answer, expected", [
    # decided (docs/evaluation.md, "Grading decisions"): a chained inequality in one variable is its interval
    ("\\boxed{-2 \\le x \\le 3}", "[-2,3]", True), ("\\boxed{-2 \\leq x \\leq 3}", "[-2,3]", True),
    ("\\boxed{[-2,3]}", "-2 \\le x \\le 3", True), ("\\boxed{-2 < x \\le 3}", "(-2,3]", True),
    ("\\boxed{-2 < x < 3}", "[-2,3]", False),  # open is not closed
    ("\\boxed{1 \\le x \\le 2 \\le y}", "[1,2]", False),  # not one chained inequality
    # decided: E notation is the number it writes (math-verify read "1e3" as 1 * e * 3)
    ("\\boxed{1e3}", "1000", True), ("\\boxed{1e+3}", "1000", True), ("\\boxed{2.5e-3}", "0.0025", True),
    ("\\boxed{1e4}", "1000", False), ("\\boxed{3e}", "3e", True),
])
def test_math_grading_decisions(completion, answer, expected):
    require("math_verify")
    assert grade("math500", {"answer": answer}, completion) is expected


# ---------------------------------------------------------------- issue 45: committed prose answers, values with units

#: Options as GPQA shows them (in the shown order, A-D); fresh cases of our own after the issue's four.
PROSE_CHOICES = ["3.2 eV", "0.8 eV", "1.6 eV", "6.4 eV"]
SPEED_CHOICES = ["0.12 m/s", "0.48 m/s", "0.24 m/s", "2.4 m/s"]
PROSE_COMMITS = [
    ("After eliminating the others, option C is correct.", PROSE_CHOICES, "C"),  # the four
    ("The answer is 1.6 eV.", PROSE_CHOICES, "C"),
    ("Answer: 6.4 eV (D)", PROSE_CHOICES, "D"),
    ("\\boxed{0.24\\,\\mathrm{m\\,s^{-1}}}", SPEED_CHOICES, "C"),
    ("Option (B) is the correct answer.", PROSE_CHOICES, "B"),  # ours from here
    ("Choice A is right: the gap doubles.", PROSE_CHOICES, "A"),
    ("The answer is 0.8 eV because the gap halves.", PROSE_CHOICES, "B"),
    ("The final answer is $1.6\\ \\text{eV}$.", PROSE_CHOICES, "C"),
    ("\\boxed{0.24 m s^{-1}}", SPEED_CHOICES, "C"),
    ("\\boxed{2.4\\ \\text{m}\\cdot\\text{s}^{-1}}", SPEED_CHOICES, "D"),
    ("Option C is not correct; option D is correct.", PROSE_CHOICES, "D"),
    ("If option C is correct, the energy doubles. It does not, so option A is correct.", PROSE_CHOICES, "A"),
    ("Answer: 0.48 m/s (B).", SPEED_CHOICES, "B"),
]
#: Still refused: hedges between options in prose or as values, a value and a letter that disagree, a supposition,
#: a value no option has or a unit another option's.
PROSE_REFUSED = [
    ("Either option B or option C is correct.", PROSE_CHOICES),
    ("The answer is B or maybe C.", PROSE_CHOICES),
    ("The answer is 1.6 eV, or perhaps 6.4 eV.", PROSE_CHOICES),
    ("The answer is 3.2 eV, 0.8 eV", PROSE_CHOICES),
    ("Answer: 6.4 eV (C)", PROSE_CHOICES),  # the value is D's, the letter C's: two options named
    ("Answer: 2.4 m/s (D), or possibly 0.24 m/s", SPEED_CHOICES),
    ("If option C is correct, then the energy doubles.", PROSE_CHOICES),
    ("The answer is 1.6 eV or 6.4 eV.", PROSE_CHOICES),
    ("The answer is 2.0 eV.", PROSE_CHOICES),
    ("\\boxed{0.24\\,\\mathrm{km\\,s^{-1}}}", SPEED_CHOICES),
    ("\\boxed{0.24\\,\\mathrm{m\\,s^{-2}}}", SPEED_CHOICES),
]


@pytest.mark.parametrize("completion, choices, letter", PROSE_COMMITS)
def test_gpqa_committed_prose_answer_is_credited(completion, choices, letter):
    assert extract_choice_letter(completion, choices) == letter
    record = {"answer": letter, "choices": choices}
    assert grade_detailed("gpqa_diamond", record, completion).status == "correct"
    other = "A" if letter != "A" else "B"
    assert grade_detailed("gpqa_diamond", {**record, "answer": other}, completion).status == "wrong"


@pytest.mark.parametrize("completion, choices", PROSE_REFUSED)
def test_gpqa_prose_hedges_and_mismatches_are_not_credited(completion, choices):
    assert extract_choice_letter(completion, choices) is None
    for gold in "ABCD":
        assert not grade_detailed("gpqa_diamond", {"answer": gold, "choices": choices}, completion).correct


#: Decided (docs/evaluation.md, "Grading decisions"; fgrpo_sim/llm/inequality_sets.py): an inequality in one
#: variable, several joined by "or", or a bound on |x| is the set it describes, both ways. math-verify alone
#: graded the first four (the issue's two, each way) and `x \le 2` for `(-\infty,2]` wrong.
INEQUALITY_SETS = [
    ("x<0 \\text{ or } x>1", "(-\\infty,0)\\cup(1,\\infty)", True),
    ("(-\\infty,0)\\cup(1,\\infty)", "x<0 \\text{ or } x>1", True),
    ("|x| \\le 1", "[-1,1]", True), ("[-1,1]", "|x| \\le 1", True),
    ("x \\le 2", "(-\\infty,2]", True), ("x \\ge 3", "[3,\\infty)", True), ("1 < x", "(1,\\infty)", True),
    ("x > 0 \\text{ or } x < -1", "(-\\infty,-1)\\cup(0,\\infty)", True), ("x < 0 \\lor x > 1", "x<0 \\text{ or } x>1", True),
    ("|x| > 2", "(-\\infty,-2)\\cup(2,\\infty)", True), ("\\left| x \\right| \\leq \\frac{1}{2}", "[-\\frac12,\\frac12]", True),
    ("|x| < 1", "[-1,1]", False),  # open is not closed
    ("x<0 \\text{ or } x>2", "(-\\infty,0)\\cup(1,\\infty)", False),  # another bound
    ("x<0 \\text{ or } y>1", "(-\\infty,0)\\cup(1,\\infty)", False),  # two variables: not one set, left as written
    ("|x| \\ge 1", "[-1,1]", False),
]


@pytest.mark.parametrize("completion, answer, expected", INEQUALITY_SETS)
def test_math_inequalities_are_their_sets(completion, answer, expected):
    require("math_verify")
    assert grade("math500", {"answer": answer}, f"\\boxed{{{completion}}}") is expected


def test_inequality_sets_rewrites_only_one_variable():
    from fgrpo_sim.llm.inequality_sets import as_interval_set

    assert as_interval_set("|x| < a+b") == "(-(a+b),a+b)"
    assert as_interval_set("x \\le 2 \\text{ or } x \\ge 5") == "(-\\infty,2]\\cup[5,\\infty)"
    for untouched in ("4", "a < b", "x < 0 \\text{ and } x > -1", "x = 2", "x<0 \\text{ or } y>1", "x^2 < 4"):
        assert as_interval_set(untouched) is None, untouched
