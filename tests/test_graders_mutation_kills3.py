"""The graders' behaviour that the open mutants of samples D-F and the whole-module mutation run (benchmarks/mutation.py,
module graders, n-grade3) found unchecked: the +-300 bound on a power of ten, \\left. and \\right. around a number,
a control word read as its whole run of letters, units after text markup, values near the largest float, the
angstrom sign, hedges and letters around boxes and answer phrases, an escaped ampersand, Score.correct as a bool,
a SynLogic checkout's files, prints, message and place on sys.path, and the worker pool's count, lost requests and
reads near a deadline."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
from extras import require
from test_graders_mutation_kills import (  # noqa: F401 (fixtures)
    GAME,
    _checkout,
    _in_thread,
    _reader,
    fresh_imports,
    stand_in,
)

from fgrpo_sim.llm import rewards
from fgrpo_sim.llm.evaluation.grading import (
    SynLogicVerifiers,
    _number_value,
    extract_choice_letter,
    grade_gpqa,
    ifeval_instructions,
)


def test_powers_of_ten_are_read_up_to_300_either_way():
    # the bound is _number_value's documented rule (beyond it floats overflow or all read 0.0), at its edge
    assert _number_value("10^{300}") == (pytest.approx(1e300, rel=1e-12), "")
    assert _number_value("-2 \\times 10^{-300} m") == (pytest.approx(-2e-300, rel=1e-12), "m")
    assert _number_value("10^{301}") is None
    assert _number_value("10^{-301}") is None
    assert _number_value("2.5e-301") is None
    # so a box at 10^{-301} is matched to no option by value (its text differs from every option's)
    assert extract_choice_letter("\\boxed{1.0 \\times 10^{-301}}", ["10^{-301}", "1 m", "2 m", "3 m"]) is None


def test_null_delimiters_leave_no_full_stop_behind():
    # "\left." and "\right." are LaTeX's invisible delimiters: the number between them is 3 eV, not .3 eV
    assert _number_value("\\left. 3\\text{ eV} \\right.") == (pytest.approx(3.0), "eV")
    assert _number_value("\\left.2.5\\right.") == (pytest.approx(2.5), "")
    choices = ["0.3 eV", "3 eV", "30 eV", "300 eV"]
    assert extract_choice_letter("The energy is \\boxed{\\left. 3\\text{ eV} \\right.}", choices) == "B"
    # the brackets of \left( ... \right) stay, and a bracketed number is no number
    assert _number_value("\\left(5\\right)") is None


def test_a_control_word_is_its_whole_run_of_letters():
    # TeX reads "\leftV" as one (unknown) command, not \left before a unit V; a text holding it is no number
    assert _number_value("5 \\leftV") is None
    assert _number_value("5 \\rightV") is None
    assert _number_value("5 \\left V") == (pytest.approx(5.0), "V")


@pytest.mark.parametrize("lost", [BrokenPipeError("the worker closed its stdin"), ValueError("closed file")])
def test_a_request_that_never_reached_its_worker_is_an_error_not_a_timeout(stand_in, lost):  # noqa: F811
    def fail(data):
        raise lost

    pool = rewards._WorkerPool(1.0, 2.0, 3.0, max_workers=1)
    pool.call({"kind": "verify", "answer": "1", "boxed": "1"})  # starts the one worker, now idle
    broken = stand_in.made[0]
    broken.proc.stdin.write = fail  # the worker is alive (poll() is None), but the pipe to it is gone
    # "timeout" means a check overran hard_timeout; this one never started
    assert pool.call({"kind": "verify", "answer": "1", "boxed": "1"}) == "error"
    assert broken.killed and len(stand_in.made) == 2  # replaced at once
    assert pool.call({"kind": "verify", "answer": "1", "boxed": "1"}) == "correct"  # the replacement serves


# ---------------------------------------------------------------- survivors of the whole-module run

def test_a_unit_written_with_a_negative_power_after_text_markup():
    # \text{J}\cdot\text{K}^{-1} is J/K: the markup goes first, so upper-case units divide as lower-case ones do
    for written in ("5\\,\\text{J}\\cdot\\text{K}^{-1}", "5\\,\\mathrm{J}\\,\\mathrm{K}^{-1}", "5 J K^{-1}"):
        assert _number_value(written) == (pytest.approx(5.0), "J/K"), written
    choices = ["5 J/K", "5 J", "50 J/K", "0.5 J/K"]
    assert extract_choice_letter("\\boxed{5\\,\\text{J}\\cdot\\text{K}^{-1}}", choices) == "A"


@pytest.mark.parametrize("sign", ["", "-"])
def test_values_near_the_largest_float_are_read_and_matched(sign):
    # 10^8 x 10^300 = 1e308 is finite (the largest float is 1.8e308): read, and equal to 10^9 x 10^299
    assert _number_value(f"{sign}100000000 \\times 10^{{300}}") == (pytest.approx(float(f"{sign}1e308")), "")
    choices = [f"{sign}1000000000 \\times 10^{{299}}", "1 m", "2 m", "3 m"]
    assert extract_choice_letter(f"\\boxed{{{sign}100000000 \\times 10^{{300}}}}", choices) == "A"


def test_the_angstrom_sign_and_the_letter_a_ring_are_one_text():
    # U+212B ANGSTROM SIGN lower-cases to the same letter as U+00C5 (what options write), so the texts match
    choices = ["1.5 \u00c5", "2.5 \u00c5", "3.5 \u00c5", "4.5 \u00c5"]
    assert extract_choice_letter("\\boxed{1.5 \u212b}", choices) == "A"
    assert extract_choice_letter("\\boxed{3.5 \u212b}", choices) == "C"


def test_a_box_is_hedged_only_on_its_own_line():
    # a hedge on a later line of reasoning is not part of the boxed answer ("Maybe C" below \boxed{B})
    completion = "\\boxed{B}\nMaybe C would be picked by someone who ignores the spin."
    assert extract_choice_letter(completion) == "B"
    assert extract_choice_letter("\\boxed{B} or maybe C") is None  # on the box's line it is a hedge


def test_a_blank_option_does_not_hide_a_hedge():
    # a blank option's text is no text to cut out of the answer's line
    assert extract_choice_letter("Answer: D (or possibly C)", ["1 eV", "", "3 eV", "4 eV"]) is None
    assert extract_choice_letter("Answer: D", ["1 eV", "", "3 eV", "4 eV"]) == "D"


def test_a_letter_ruled_out_after_a_hedging_word_is_not_offered():
    assert extract_choice_letter("Answer: D (perhaps C is ruled out too)") == "D"
    assert extract_choice_letter("Answer: D (perhaps C)") is None


def test_an_escaped_ampersand_is_an_ampersand():
    # "\&" joins two letters as "&" does, and an option written with "\&" is the text written with "&"
    assert extract_choice_letter("\\boxed{B \\& C}") is None
    choices = ["salt \\& water", "sand", "oil", "ice"]
    assert extract_choice_letter("\\boxed{salt & water}", choices) == "A"
    assert extract_choice_letter("\\boxed{sand \\& oil}", ["salt", "sand & oil", "oil", "ice"]) == "B"


def test_no_answer_is_scored_false_not_none():
    # callers sum and average `correct`: it is a bool on every path
    score = grade_gpqa({"answer": "A", "choices": ["1", "2", "3", "4"]}, "I cannot decide.")
    assert score.status == "no_answer" and score.correct is False and score.extracted is None


@pytest.mark.parametrize("missing", ["task2verifier.py", "base/data.py"])
def test_a_synlogic_checkout_needs_both_of_its_files(tmp_path, fresh_imports, missing):  # noqa: F811
    repo = _checkout(tmp_path / "repo", "return True")
    (repo / missing).unlink()
    with pytest.raises(ValueError, match="is not a SynLogic checkout"):
        SynLogicVerifiers(repo)


def test_a_synlogic_verifier_that_prints_or_crashes(tmp_path, fresh_imports, capsys):  # noqa: F811
    # print() and sys.stdout.write() alike: our stdout is swallowed, not taken away (None would break write())
    printed = "print('checking the parity') or __import__('sys').stdout.write('parity checked') > 0"
    talks = SynLogicVerifiers(_checkout(tmp_path / "talks", f"return {printed}"))
    assert talks.score("parity", GAME, "x") == rewards.Score(True, "correct", None)
    assert capsys.readouterr().out == ""  # a verifier's prints do not reach our output
    crashes = SynLogicVerifiers(_checkout(tmp_path / "crashes", "raise RuntimeError('odd output')"))
    score = crashes.score("parity", GAME, "x")
    assert score.status == "error" and score.correct is False  # a bool, summed by callers


def test_an_unknown_synlogic_task_names_eight_known_ones(tmp_path, fresh_imports):  # noqa: F811
    repo = _checkout(tmp_path / "many", "return True")
    tasks = [f"task{i}" for i in range(10)]
    (repo / "task2verifier.py").write_text(
        "from games.tasks.parity.scripts.parity_verifier import ParityVerifier\n"
        f"verifier_classes = {{name: ParityVerifier for name in {tasks!r}}}\n")
    with pytest.raises(ValueError) as info:
        SynLogicVerifiers(repo).score("zebra", GAME, "x")
    assert f"(known: {', '.join(tasks[:8])}, ...)" in str(info.value)
    assert f"has no verifier in {repo.resolve()} " in str(info.value)  # which checkout was asked


def test_the_checkout_comes_before_the_users_own_folder(tmp_path, fresh_imports):  # noqa: F811
    # sys.path[0] is the user's script folder (or the working folder), where a package named `base` is common
    shadow = tmp_path / "project" / "base"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    (shadow / "data.py").write_text("class Data:\n    pass\n")
    sys.path.insert(0, str(shadow.parent))
    repo = _checkout(tmp_path / "repo", "return data.answer == 'even'")
    verifiers = SynLogicVerifiers(repo)
    assert Path(inspect.getfile(verifiers.data_class)).resolve() == (repo / "base" / "data.py").resolve()
    assert verifiers.score("parity", GAME, "x").correct


def test_an_options_text_after_a_box_offers_no_letters():
    # "either A or B" is option D's own text, not a hedge between A and B
    choices = ["compound A", "compound B", "neither A nor B", "either A or B"]
    assert extract_choice_letter("The product is \\boxed{D}, either A or B.", choices) == "D"
    assert extract_choice_letter("The product is \\boxed{D}, either A or B.") is None  # without the options


def test_the_line_below_an_answer_phrase_is_read_only_when_the_phrase_ends_its_line():
    # "Answer:\nC" is an answer; "The answer is not obvious.\nA) ..." is reasoning about option A, not one
    assert extract_choice_letter("The answer is not obvious.\nA) ignores the spin, so it cannot be right.") is None
    assert extract_choice_letter("Answer: B\nA) was my first guess, but it ignores the spin.") == "B"
    assert extract_choice_letter("Answer:\nA) was my first guess.") == "A"


def test_a_pool_of_two_counts_both_busy_workers(stand_in):  # noqa: F811
    pool = rewards._WorkerPool(1.0, 2.0, 3.0, max_workers=2)
    first, second = pool._take(), pool._take()
    assert first is not second and len(stand_in.made) == 2
    third, waited = _in_thread(pool._take)
    third.join(timeout=0.5)  # both workers busy, the pool full: the third thread waits, no third worker starts
    assert third.is_alive() and len(stand_in.made) == 2
    pool._give_back(second)
    third.join(timeout=30)
    assert waited.get("value") is second and len(stand_in.made) == 2


def test_read_line_with_half_a_second_left_still_reads(monkeypatch):
    # a line already waiting is read however little time is left (but some is): a deadline, not a margin
    worker, write = _reader()
    os.write(write, b"correct\n")
    monkeypatch.setattr(rewards, "time", types.SimpleNamespace(monotonic=lambda: 100.0))
    assert worker.read_line(100.5) == "correct"
    os.close(write)


def test_the_deadline_timer_is_off_after_the_call():
    import signal

    # a timer left running would fire SIGALRM later, into whatever handler the caller had (by default: exit)
    assert rewards._call_with_deadline(lambda: 7, 30.0) == 7
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    with pytest.raises(rewards._Deadline):
        rewards._call_with_deadline(lambda: time.sleep(5), 0.05)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_kill_ends_a_worker_that_ignores_its_input():
    # a worker hung in C code never reads the closed stdin: only SIGKILL ends it
    worker = rewards._Worker.__new__(rewards._Worker)
    worker.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        worker.kill()
        assert worker.proc.poll() is not None
    finally:
        if worker.proc.poll() is None:
            worker.proc.kill()
            worker.proc.wait()


def test_math_verifier_limits_name_their_parameter_and_range():
    for kwargs, message in [
        ({"timeout": 0}, "timeout must be in (0, inf], got 0"),
        ({"timeout": 5, "hard_timeout": 5}, "hard_timeout must be in (5, inf], got 5"),
        ({"max_brace_depth": 0}, "max_brace_depth must be in [1, inf], got 0"),
    ]:
        with pytest.raises(ValueError) as info:
            rewards.MathVerifier(**kwargs)
        assert str(info.value) == message
    assert rewards.MathVerifier(max_brace_depth=1).max_brace_depth == 1  # one level of braces is allowed


def test_ifeval_instructions_keep_the_prompt_and_take_a_none_kwargs_entry():
    require("if_verifiable")
    record = {"prompt": "Write a haiku.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [None]}
    assert ifeval_instructions(record) == ("Write a haiku.", ["punctuation:no_comma"], [{}])
    with pytest.raises(ValueError) as info:  # an entry that is no dict, in a one-line message of 300 characters
        ifeval_instructions({**record, "kwargs": ["x" * 1000]})
    assert str(info.value).startswith("ifeval record field 'kwargs' must be a list of 1 dicts")
    assert len(str(info.value)) == 300


def test_math_verifier_applies_its_own_brace_depth():
    nested = "\\boxed{{{1}}}"  # three levels of braces
    assert rewards.MathVerifier(max_brace_depth=2).score(nested, "1").status == "too_deep"


def test_the_last_number_fallback_with_no_number_is_no_answer():
    score = rewards.MathVerifier(fallback_last_number=True).score("I do not know.", "5")
    assert score == rewards.Score(False, "no_answer")


def test_boxes_before_an_unbraced_box_are_still_found():
    assert [content for _, _, content, _ in rewards.iter_boxed("\\boxed{1} and then \\boxed 2")] == ["2", "1"]
    # an unbraced box of punctuation answers nothing: the box before it is the answer
    assert rewards.extract_last_boxed("\\boxed{4}, so \\boxed .") == ("4", "ok")
