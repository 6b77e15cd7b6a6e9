"""The graders' behaviour that samples E and F of the mutation run with the fixed harness (benchmarks/mutation.py,
module graders, seeds 5 and 6) found unchecked: the answer phrase's 300-character window and the next line under
it, hedges and commitments on a line below the first, overflowing values, a unit's letters, an unbraced box of
punctuation, the completion-length bound, IFEval's blank completion, extract_last_boxed's depth limit,
make_math_reward's own verifier, and a SynLogic verifier's "no"."""

from __future__ import annotations

from extras import require
from test_graders_mutation_kills import GAME, _checkout, fresh_imports  # noqa: F401 (a fixture)

from fgrpo_sim.llm.evaluation.grading import SynLogicVerifiers, extract_choice, extract_choice_letter, grade_detailed
from fgrpo_sim.llm.rewards import MathVerifier, Score, extract_last_boxed, iter_boxed, make_math_reward


def test_answer_phrase_reads_300_characters_after_it():
    # "Answer:" then the letter alone on a later line: found within the window, not one character beyond it
    assert extract_choice_letter("Answer:" + "\n" * 299 + "C") == "C"
    assert extract_choice_letter("Answer:" + "\n" * 300 + "C") is None


def test_letter_on_the_next_line_is_read_alone_when_more_lines_follow():
    # the first non-blank line under "The answer:" is the answer; the reasoning after it is another line
    assert extract_choice_letter("The answer:\n\nC\nThis follows from the spin.") == "C"


def test_hedge_on_a_commitment_below_the_first_line():
    # the line's offset must not shift what follows the commitment: "or maybe D" is still read as a hedge
    assert extract_choice("Intro line here.\nOption C is correct, or maybe D.") == ["C", "D"]


def test_values_that_overflow_match_no_option():
    # 9e308 and 8e308 are both infinite as floats; infinity is no value, so they never compare equal
    choices = ["800000000 \\times 10^{300}", "1 m", "2 m", "3 m"]
    assert extract_choice_letter("\\boxed{900000000 \\times 10^{300}}", choices) is None


def test_a_units_letters_are_kept_only_its_full_stop_is_dropped():
    # "5.0 X" is option B's value and unit; with the X dropped it would match A's "5 Y" as well (ambiguous)
    assert extract_choice_letter("\\boxed{5.0 X}", ["5 Y", "5 X", "1 m", "2 m"]) == "B"


def test_unbraced_box_of_punctuation_is_no_box():
    assert list(iter_boxed("\\boxed .")) == []  # a sentence's full stop after \boxed is no answer


def test_completion_of_exactly_the_size_limit_is_graded():
    text = "\\boxed{4}"
    assert MathVerifier(max_completion_chars=len(text)).score(text, "4").status == "correct"
    assert MathVerifier(max_completion_chars=len(text) - 1).score(text, "4").status == "too_long"


def test_ifeval_blank_completion_is_a_boolean_miss():
    require("if_verifiable")
    record = {"problem_id": "k", "problem": "p", "answer": "", "instruction_id_list": ["punctuation:no_comma"],
              "kwargs": [{}]}
    score = grade_detailed("ifeval", record, "   ")  # if-verifiable returns no results for a blank response
    assert score.status == "no_answer"
    assert score.correct is False  # a bool, not None: accuracies sum these


def test_letter_just_before_a_bracketed_commitment_is_offered():
    # "B" ends where "(D) is the correct answer" starts: the line is read with a space in the commitment's place,
    # so B still stands alone and, with "Maybe", is a hedge
    assert extract_choice("Maybe B(D) is the correct answer.") == ["D", "B"]


# ---------------------------------------------------------------- from sample F (seed 6)


def test_commitment_below_the_first_line_reads_only_its_own_line_before_it():
    # on line 2 nothing stands before "Option C"; "Boron" is a word, not option B: read the line to its end, not
    # cut after 2 x 14 characters (the line's offset counted twice), where the "B" of "Boron" would stand alone
    assert extract_choice("Let me think.\nOption C is correct, maybe Boron.") == ["C"]


def test_extract_last_boxed_passes_its_depth_limit_on():
    assert extract_last_boxed("\\boxed{\\frac{1}{2}}", max_depth=1) == (None, "too_deep")
    assert extract_last_boxed("\\boxed{\\frac{1}{2}}", max_depth=2) == ("\\frac{1}{2}", "ok")


def test_math_reward_builds_its_own_verifier_when_given_none():
    reward = make_math_reward()
    assert isinstance(reward.verifier, MathVerifier)


def test_synlogic_verifier_saying_no_is_graded_wrong(tmp_path, fresh_imports):
    repo = _checkout(tmp_path / "repo", "return False")
    assert SynLogicVerifiers(repo).score("parity", GAME, "x") == Score(False, "wrong", None)  # the status counted
