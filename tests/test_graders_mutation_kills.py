"""The graders' behaviour that mutation testing (benchmarks/mutation.py, module graders) found unchecked: GPQA
answers the letter rules must read one way, messages naming the missing field or parameter, size limits at their
bound, the math-verify deadline and warm-up, the worker pool's bookkeeping, and SynLogic checkouts side by side."""

from __future__ import annotations

import logging
import os
import signal
import sys
import textwrap
import threading
import time
import types

import pytest
from extras import require

from fgrpo_sim.llm import rewards
from fgrpo_sim.llm.evaluation.grading import (
    BenchmarkGrader,
    SynLogicVerifiers,
    extract_choice,
    extract_choice_letter,
    grade,
    grade_detailed,
)
from fgrpo_sim.llm.rewards import MathVerifier, extract_last_boxed, iter_boxed, make_math_reward

# ---------------------------------------------------------------- GPQA letters and values

#: Option B's own text names a letter: "Compound A" is that option, not option A.
COMPOUNDS = ["benzene", "Compound A", "toluene", "xylene"]


@pytest.mark.parametrize("completion, choices, letter", [
    ("\\boxed{[B] 5.2 eV}", None, "B"),  # a square-bracketed label may be followed by any option text
    ("The answer:\nB) Compound A, most likely", COMPOUNDS, "B"),  # option text on the next line names no A
    ("Answer: (b) Compound A, likely", COMPOUNDS, "B"),  # ... nor after a lower-case letter
    ("Option B is correct (Compound A), I think probably.", COMPOUNDS, "B"),  # ... nor after a prose commitment
    ("Answer: B, C is wrong.", None, "B"),  # a later letter that ends no list element is not a second answer
    ("Is it B or maybe D? No.\nOption C is correct.", None, "C"),  # another line's hedge is not this answer's
    ("(D) is the correct answer.", None, "D"),  # a bracketed letter committed in prose
    ("The answer is **6.4 eV (D)**.", None, "D"),  # bold around a value and its letter
    ("\\boxed{\\text{sodium chloride}}", ["sodium chloride", "sodium bromide", "potassium chloride", "water"], "A"),
    ("\\boxed{3.0 x 10^8 m/s}", ["3.0 \\times 10^{8} m/s", "1.5 \\times 10^{8} m/s", "3.0 m/s", "1.5 m/s"], "A"),
    ("\\boxed{10^{-3}}", ["10^{-3} m", "10^{-2} m", "10^{-1} m", "1 m"], "A"),  # a bare power of ten
])
def test_gpqa_letter_rules(completion, choices, letter):
    assert extract_choice_letter(completion, choices) == letter


def test_gpqa_lower_case_hedge_names_both_letters_upper_case():
    assert extract_choice("The answer is (c) or (d)") == ["C", "D"]


def test_gpqa_listed_values_stop_at_the_clause_end():
    choices = ["3.2 eV", "0.8 eV", "1.6 eV", "6.4 eV"]
    # "3.2 eV, 0.8 eV" names two options (a hedge); what follows the semicolon is another clause
    assert extract_choice("The answer is 3.2 eV, 0.8 eV; the rest is noise.", choices) == ["A", "B"]


def test_gpqa_a_fifth_choice_is_never_an_option():
    choices = ["3.2 eV", "0.8 eV", "1.6 eV", "6.4 eV", "9.9 eV"]  # only A-D are options
    assert extract_choice_letter("The answer is 1.6 eV, or maybe 9.9 eV.", choices) is None
    assert grade_detailed("gpqa", {"answer": "C", "choices": choices}, "The answer is 1.6 eV.").correct


# ---------------------------------------------------------------- records, names and missing completions

def test_missing_field_messages_name_the_benchmark_and_the_fields():
    with pytest.raises(ValueError, match=r"^math500 record has no field 'answer' \(fields: none\)$"):
        grade("math500", {}, "\\boxed{1}")
    require("if_verifiable")
    with pytest.raises(ValueError, match=r"^ifeval record has no field 'prompt' or 'problem' \(fields: "):
        grade("ifeval", {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}, "x")
    with pytest.raises(ValueError, match=r"^ifeval record has no field 'instruction_id_list' \(fields: prompt\)$"):
        grade("ifeval", {"prompt": "p"}, "x")
    with pytest.raises(ValueError, match=r"'instruction_id_list' must be a non-empty list of ids, got \[1\]"):
        grade("ifeval", {"prompt": "p", "instruction_id_list": [1], "kwargs": [{}]}, "x")


def _ifeval(ids):
    return {"problem_id": "k", "problem": "p", "answer": "", "instruction_id_list": ids, "kwargs": [{}] * len(ids)}


def test_ifeval_missing_completion_is_an_empty_answer():
    require("if_verifiable")
    record = _ifeval(["punctuation:no_comma"])
    assert grade_detailed("ifeval", record, None) == grade_detailed("ifeval", record, "")
    assert grade_detailed("ifeval", record, None).status == "no_answer"  # not the text "None", which has no comma


def test_ifeval_an_instruction_the_package_skipped_is_never_a_pass(monkeypatch):
    require("if_verifiable")
    import if_verifiable.common

    real = if_verifiable.common.evaluate_instructions

    def skips_the_second(*, instruction_id_list, kwargs_list, **kwargs):
        return real(instruction_id_list=instruction_id_list[:1], kwargs_list=kwargs_list[:1], **kwargs)

    monkeypatch.setattr(if_verifiable.common, "evaluate_instructions", skips_the_second)
    score = grade_detailed("ifeval", _ifeval(["punctuation:no_comma", "change_case:english_lowercase"]), "clean")
    assert (score.correct, score.status) == (False, "error")


# ---------------------------------------------------------------- SynLogic checkouts (fake, real layout)

def _checkout(root, verify_body, data_extra="", on_import=""):
    files = {
        "base/__init__.py": "",
        "base/data.py": f"""
            class Data:
                def __init__(self, question, answer, metadata=None, **kwargs):
                    self.question, self.answer, self.metadata = question, answer, metadata
                    {data_extra or "pass"}

                @classmethod
                def from_json_dict(cls, json_dict):
                    return cls(**json_dict)
        """,
        "games/tasks/parity/scripts/parity_verifier.py": f"""
            class ParityVerifier:
                def verify(self, data, test_solution):
                    {verify_body}
        """,
        "task2verifier.py": f"""
            import sys
            {on_import or "pass"}
            from games.tasks.parity.scripts.parity_verifier import ParityVerifier

            verifier_classes = {{"parity": ParityVerifier, "zeta": ParityVerifier}}
        """,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip())
    return root


GAME = {"question": "q", "answer": "even", "metadata": {}}


@pytest.fixture
def fresh_imports(monkeypatch):
    """sys.path and the checkouts' top-level modules as they were before the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    tops = ("task2verifier", "base", "games", "corpus")
    before = {name: module for name, module in sys.modules.items() if name.split(".")[0] in tops}
    yield
    for name in [name for name in sys.modules if name.split(".")[0] in tops]:
        del sys.modules[name]
    sys.modules.update(before)


def test_synlogic_second_checkout_replaces_the_first_ones_modules(tmp_path, fresh_imports, capsys):
    one = _checkout(tmp_path / "one", "return False")
    two = _checkout(tmp_path / "two", "return getattr(data, 'origin', None) == 'two'",
                    data_extra="self.origin = 'two'", on_import="sys.stdout.write('loaded two\\n')")
    assert not SynLogicVerifiers(one).score("parity", GAME, "x").correct
    sys.modules["corpus"] = types.ModuleType("corpus")  # a module of that name with no __file__ at all
    verifiers = SynLogicVerifiers(two)  # its task2verifier, base.data and games, not the first checkout's
    assert verifiers.score("parity", GAME, "x").correct
    assert "corpus" not in sys.modules
    assert capsys.readouterr().out == ""  # what the checkout writes on import is swallowed
    again = SynLogicVerifiers(two)  # the same checkout twice in one process (already on sys.path)
    assert again.score("parity", GAME, "x").correct
    assert sys.path.count(str(two.resolve())) == 1


def test_benchmark_grader_reads_the_checkout_from_the_environment(tmp_path, fresh_imports, monkeypatch):
    repo = _checkout(tmp_path / "env", "return data.answer == 'even'")
    monkeypatch.setenv("SYNLOGIC_REPO", str(repo))
    grader = BenchmarkGrader("synlogic")
    assert grader.score_record({"task": "parity", "game_data": GAME}, "x").correct


# ---------------------------------------------------------------- math: boxes, limits, statuses

def test_iter_boxed_default_depth_is_twenty():
    nested = lambda depth: "\\boxed{" + "{" * (depth - 1) + "1" + "}" * (depth - 1) + "}"  # noqa: E731
    assert [status for *_, status in iter_boxed(nested(20))] == ["ok"]
    assert [status for *_, status in iter_boxed(nested(21))] == ["too_deep"]


def test_unbraced_box_keeps_an_answer_named_x():
    assert extract_last_boxed("so \\boxed X.") == ("X", "ok")


@pytest.fixture(scope="module")
def verifier():
    require("math_verify")
    v = MathVerifier()
    yield v
    v.close()


def test_statuses_of_empty_reference_unparsable_answer_and_length_bound(verifier):
    assert verifier.score("\\boxed{1}", "") == rewards.Score(False, "unparsable")
    assert verifier.score("\\boxed{1}", None).status == "unparsable"
    assert verifier.score("\\boxed{\\text{}}", "4").status == "unparsable"  # parses to nothing
    exact = MathVerifier(max_answer_chars=3)
    assert exact.score("\\boxed{100}", "100").status == "correct"  # exactly the limit is allowed
    assert exact.score("\\boxed{1000}", "1000").status == "too_long"
    tiny = MathVerifier(max_completion_chars=1)
    assert tiny.score(None, "4").status == "no_answer"  # a missing completion is empty, not a long text
    assert tiny.score([{"role": "assistant"}], "4").status == "no_answer"  # ... and so is a message without content


def test_fallback_last_number_scores_an_unboxed_answer():
    require("math_verify")
    v = MathVerifier(fallback_last_number=True)
    assert v.score("the answer is 7", "7").status == "correct"
    assert MathVerifier().score("the answer is 7", "7").status == "no_answer"


@pytest.mark.parametrize("option, value", [("startup_timeout", 0), ("max_workers", 0),
                                           ("max_completion_chars", 0), ("max_answer_chars", 0)])
def test_bad_limits_name_the_parameter_and_range(option, value):
    low = "(0" if option == "startup_timeout" else "[1"
    with pytest.raises(ValueError, match=rf"^{option} must be in \{low}, inf\], got 0$"):
        MathVerifier(**{option: value})


def test_reward_refuses_answers_of_another_length():
    require("math_verify")
    reward = make_math_reward(verifier=MathVerifier())
    with pytest.raises(ValueError):
        reward(["\\boxed{1}", "\\boxed{2}"], answer=["1"])


def test_a_crash_inside_math_verify_parse_is_an_error(monkeypatch, verifier):
    import math_verify.parser

    def crash(*args, **kwargs):
        raise RuntimeError("parser bug")

    rewards._warm_up()
    monkeypatch.setattr(math_verify.parser, "extract_target_from_pred", crash)
    score = verifier.score("\\boxed{17/19}", "17/19")
    assert (score.correct, score.status) == (False, "error")  # raised to us, not an empty parse ("unparsable")


def test_a_hang_inside_a_comparison_meets_our_deadline(monkeypatch):
    require("math_verify")
    import math_verify.grader

    def hang(*args, **kwargs):
        time.sleep(60)

    rewards._warm_up()
    monkeypatch.setattr(math_verify.grader, "sympy_expr_eq", hang)
    # math-verify's own timeout (signal.alarm, 5 s) would replace ours and call the hang a failed comparison
    assert MathVerifier(timeout=1.0).score("\\boxed{23/29}", "23/29").status == "timeout"


def test_math_verify_timeout_warnings_stay_quiet(monkeypatch, caplog, verifier):
    import math_verify.grader
    import math_verify.parser

    monkeypatch.setattr(math_verify.parser, "TIMEOUT_WARNING_SHOWN", False)
    monkeypatch.setattr(math_verify.grader, "TIMEOUT_WARNING_SHOWN", False)
    rewards._quiet_math_verify()
    with caplog.at_level(logging.WARNING):
        assert verifier.score("\\boxed{31/37}", "31/37").status == "correct"
    assert not [r for r in caplog.records if "Timeout is disabled" in r.getMessage()]


def test_warm_up_runs_once_per_process_before_the_first_check(monkeypatch):
    require("math_verify")
    calls = []
    real = rewards._verify_status
    monkeypatch.setattr(rewards, "_verify_status", lambda answer, boxed: calls.append((answer, boxed)) or
                        real(answer, boxed))
    monkeypatch.setattr(rewards, "_warmed_up", False)
    v = MathVerifier()
    assert v.score("\\boxed{3}", "3").correct and v.score("\\boxed{4}", "4").correct
    assert calls == [("\\frac{1}{2}", "0.5"), ("3", "3"), ("4", "4")]


# ---------------------------------------------------------------- the worker's requests, run in this process

def test_worker_requests_in_the_main_thread():
    require("math_verify")
    assert rewards._worker_request({"kind": "verify", "answer": "1/2", "boxed": "0.5"}, 5.0) == "correct"
    assert rewards._worker_request({"kind": "sleep", "seconds": 0}, 5.0) == "correct"
    assert rewards._worker_request({"kind": "sleep", "seconds": 30}, 0.2) == "timeout"
    try:
        assert rewards._worker_request({"kind": "block", "seconds": 0}, 5.0) == "correct"
        assert signal.SIGALRM in signal.pthread_sigmask(signal.SIG_BLOCK, set())  # it blocked the alarm
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})


# ---------------------------------------------------------------- the worker pool, with stand-in workers

class _Proc:
    def __init__(self):
        self.stdin = types.SimpleNamespace(write=lambda data: None, flush=lambda: None)

    def poll(self):
        return None


class _StandIn:
    """A worker that answers `reply` to every request; a construction raises OSError where `plan` says True."""
    made: list = []
    plan: list = []
    reply = "correct"
    starts = True  # False: it never says "ready" (read_line answers `reply` to the start-up wait too)

    def __init__(self, timeout):
        if _StandIn.plan and _StandIn.plan.pop(0):
            raise OSError("cannot start")
        _StandIn.made.append(self)
        self.ready, self.proc, self.killed = _StandIn.starts, _Proc(), False

    def read_line(self, deadline):
        return _StandIn.reply

    def alive(self):
        return True

    def kill(self):
        self.killed = True


@pytest.fixture
def stand_in(monkeypatch):
    _StandIn.made, _StandIn.plan, _StandIn.reply, _StandIn.starts = [], [], "correct", True
    monkeypatch.setattr(rewards, "_Worker", _StandIn)
    return _StandIn


def _in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as error:  # noqa: BLE001 - handed to the test
            out["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_pool_never_runs_more_than_max_workers(stand_in):
    pool = rewards._WorkerPool(1.0, 2.0, 3.0, max_workers=1)
    stand_in.plan = [True]
    failed, start = _in_thread(pool._take)
    failed.join(timeout=30)
    assert isinstance(start.get("error"), OSError)  # a worker that could not start does not count
    first, got = _in_thread(pool._take)
    first.join(timeout=30)
    assert got.get("value") is stand_in.made[0]
    second, waited = _in_thread(pool._take)
    second.join(timeout=0.5)  # the one worker is busy: the second thread waits for it
    pool._give_back(got["value"])
    second.join(timeout=30)
    assert waited.get("value") is stand_in.made[0] and len(stand_in.made) == 1


def test_pool_reply_that_is_no_status_is_an_error(stand_in):
    stand_in.reply = "garbage"
    pool = rewards._WorkerPool(1.0, 2.0, 3.0, max_workers=1)
    assert pool.call({"kind": "verify", "answer": "1", "boxed": "1"}) == "error"
    assert stand_in.made[0].killed and len(stand_in.made) == 2  # replaced at once


# ---------------------------------------------------------------- reading the worker's lines

def _reader():
    read, write = os.pipe()
    worker = rewards._Worker.__new__(rewards._Worker)
    worker.proc, worker._buffer = types.SimpleNamespace(stdout=os.fdopen(read, "rb", buffering=0)), b""
    return worker, write


def test_read_line_joins_chunks_and_keeps_the_next_line():
    import fcntl
    import termios

    worker, write = _reader()
    os.write(write, b"rea")

    def rest_once_drained():  # the second chunk only after the first was read
        while fcntl.ioctl(worker.proc.stdout.fileno(), termios.FIONREAD, b"\0\0\0\0") != b"\0\0\0\0":
            threading.Event().wait(0.01)
        os.write(write, b"dy\none\ntwo\n\xff\xfe\n")

    writer = threading.Thread(target=rest_once_drained, daemon=True)
    writer.start()
    assert worker.read_line(time.monotonic() + 30) == "ready"
    assert worker.read_line(time.monotonic() + 30) == "one"
    assert worker.read_line(time.monotonic() + 30) == "two"
    assert worker.read_line(time.monotonic() + 30) == "\ufffd\ufffd"  # bytes that are not UTF-8: replaced
    writer.join(timeout=30)
    os.close(write)


def test_read_line_at_its_deadline_reads_nothing(monkeypatch):
    worker, write = _reader()
    os.write(write, b"late\n")
    monkeypatch.setattr(rewards, "time", types.SimpleNamespace(monotonic=lambda: 100.0))
    assert worker.read_line(100.0) is None  # the deadline has come: no more waiting, no more reading
    os.close(write)


def test_a_worker_starts_without_warnings():
    require("math_verify")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        worker = rewards._Worker(1.0)
    worker.kill()


# ---------------------------------------------------------------- sample B's survivors (seed 2)

@pytest.mark.parametrize("completion, choices, letters", [
    ("Answer:", None, []),  # an answer phrase with nothing after it, on its line or below
    ("Answer:\n\n", None, []),
    ("\\boxed{90°}", ["90^\\circ", "45^\\circ", "30^\\circ", "60^\\circ"], ["A"]),  # ^\circ is a degree sign
    ("\\boxed{90^{\\circ}}", ["90°", "45°", "30°", "60°"], ["A"]),
    ("Let me see.\nIs it B or maybe D? No.\nOption C is correct.", None, ["C"]),  # only its own line counts
    ("\nOption C is correct, or maybe B.", None, ["C", "B"]),  # a completion opening with a line break
    ("The answer is 1.6 eV, or maybe not.", ["1.6 eV", "0.8 eV", "3.2 eV", ""], []),  # a blank option is no value
])
def test_gpqa_answers_of_sample_b(completion, choices, letters):
    assert extract_choice(completion, choices) == letters


def test_more_missing_field_messages():
    with pytest.raises(ValueError, match=r"^gpqa_diamond record has no field 'answer' \(fields: choices\)$"):
        grade("GPQA-Diamond", {"choices": ["a", "b", "c", "d"]}, "Answer: A")
    require("if_verifiable")
    with pytest.raises(ValueError, match=r"'instruction_id_list' must be a non-empty list of ids, got \[\]$"):
        grade("ifeval", {"prompt": "p", "instruction_id_list": [], "kwargs": []}, "x")


def test_synlogic_record_fields_are_named(tmp_path, fresh_imports):
    repo = str(_checkout(tmp_path / "fields", "return True"))
    with pytest.raises(ValueError, match=r"^synlogic record has no field 'task' \(fields: none\)$"):
        grade("synlogic", {}, "x", synlogic_repo=repo)
    with pytest.raises(ValueError, match=r"^synlogic record has no field 'game_data' \(fields: task\)$"):
        grade("synlogic", {"task": "parity"}, "x", synlogic_repo=repo)


def test_options_reach_the_math_grader():
    require("math_verify")
    record = {"answer": "7"}
    assert grade("math", record, "the answer is 7", fallback_last_number=True)
    assert not grade("math", record, "the answer is 7")
    grader = BenchmarkGrader("math", fallback_last_number=True)
    assert grader.score_record(record, "the answer is 7").correct
    assert grader.score_record(record, "\\boxed{7}").correct


def test_sentence_data_check_finds_punkt_tab_where_nltk_looks(tmp_path, monkeypatch):
    require("if_verifiable")
    import nltk

    from fgrpo_sim.llm.evaluation.grading import check_sentence_tokenizer

    (tmp_path / "data" / "tokenizers" / "punkt_tab" / "english").mkdir(parents=True)
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "data")])
    check_sentence_tokenizer()  # installed: no error
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "empty")])
    with pytest.raises(ValueError, match=r"^IFEval instructions length_constraints:number_sentences and "
                       r"change_case:capital_word_frequency need NLTK's punkt_tab data: "
                       r"python -m nltk\.downloader punkt_tab$"):
        check_sentence_tokenizer()


class _Text:
    def __str__(self):
        return "\\boxed{4}"


@pytest.mark.parametrize("completion, status", [
    (_Text(), "correct"),  # any other object is read as its text
    ([], "no_answer"),  # an empty conversation
    ([{"role": "assistant", "content": "\\boxed{4}"}], "correct"),  # a conversation: its last message
])
def test_completion_forms(completion, status):
    require("math_verify")
    assert MathVerifier(max_completion_chars=20).score(completion, "4").status == status


def test_score_reports_the_extracted_answer(verifier):
    assert verifier.score("so \\boxed{ 5 }", "5") == rewards.Score(True, "correct", "5")


def test_worker_loop_says_ready_then_one_status_per_request(monkeypatch):
    require("math_verify")
    import io
    import json

    requests = [{"kind": "sleep", "seconds": 0}, {"kind": "verify", "answer": "2", "boxed": "3"}]
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(json.dumps(r) + "\n" for r in requests)))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    rewards._worker_loop(5.0)
    assert out.getvalue() == "ready\ncorrect\nwrong\n"


def test_pool_serves_on_after_a_replacement_failed_to_start(stand_in):
    pool = rewards._WorkerPool(1.0, 2.0, 3.0, max_workers=1)
    stand_in.plan, stand_in.reply = [False, True], "garbage"  # the replacement of the first worker cannot start
    assert pool.call({"kind": "verify", "answer": "1", "boxed": "1"}) == "error"
    stand_in.reply = "correct"
    later, answer = _in_thread(lambda: pool.call({"kind": "verify", "answer": "1", "boxed": "1"}))
    later.join(timeout=30)  # the pool forgot the worker that never started: a fresh one serves this call
    assert answer.get("value") == "correct" and len(stand_in.made) == 2


# ---------------------------------------------------------------- sample C's survivors (seed 3)

ENERGIES = ["5.2 eV", "1.6 eV", "0.8 eV", "6.4 eV"]


@pytest.mark.parametrize("completion, choices, letters", [
    ("\\boxed{B}" + " maybe" + " " * 294 + "C", None, ["B"]),  # the box's line is read for 300 characters
    ("The answer is (c), (d)", None, ["C", "D"]),  # a bracketed lower-case list, no hedging word
    ("\\boxed{1.0 \\times 10^{300}}", ["10^{300}", "10^{299}", "10^{298}", "10^{297}"], ["A"]),
    ("\\boxed{5.20 eV.}", ENERGIES, ["A"]),  # a sentence's full stop after the unit
    ("Answer: A (photon), probably; not gluon (B).", ["photon", "gluon", "W boson", "graviton"], ["A"]),
    ("Not option C is correct.", None, []),  # a negated commitment is no answer
    ("Option C is correct.\nEarlier I was unsure whether B or maybe D fits, but I checked every step.", None, ["C"]),
    ("The answer is 1.6 eV, or maybe 6.4 eV", ENERGIES, ["B", "D"]),  # a hedge between two options' values
    ("\\boxed{(1, 2)}", ["\\left(1, 2\\right)", "(2, 1)", "(1, 1)", "(2, 2)"], ["A"]),  # \left \right ignored
    ("\\boxed{B} at first; then \\boxed{" + "{" * 25 + "C" + "}" * 25 + "}", None, ["B"]),  # too deep: earlier box
])
def test_gpqa_answers_of_sample_c(completion, choices, letters):
    assert extract_choice(completion, choices) == letters


def test_messages_list_every_field_and_task(tmp_path, fresh_imports):
    with pytest.raises(ValueError, match=r"\(fields: question, problem\)$"):
        grade("math500", {"question": "q", "problem": "p"}, "\\boxed{1}")
    repo = _checkout(tmp_path / "tasks", "return True")
    with pytest.raises(ValueError, match=r"task 'nope' has no verifier in .* \(known: parity, zeta, \.\.\.\)$"):
        SynLogicVerifiers(repo).score("nope", GAME, "x")


def test_ifeval_extracted_counts_the_instructions_passed():
    require("if_verifiable")
    ids = ["punctuation:no_comma", "change_case:english_lowercase"]
    assert grade_detailed("ifeval", _ifeval(ids), "all lower, with a comma").extracted == "1/2"


def test_benchmark_grader_has_no_fallback_by_default():
    require("math_verify")
    assert not BenchmarkGrader("math").score_record({"answer": "7"}, "the answer is 7").correct


def test_unclosed_or_trailing_boxes_fall_back_to_an_earlier_one():
    assert extract_last_boxed("\\boxed{4} and then \\boxed") == ("4", "ok")


def test_a_crash_inside_a_comparison_is_an_error(monkeypatch, verifier):
    import math_verify.grader

    def crash(*args, **kwargs):
        raise RuntimeError("sympy bug")

    rewards._warm_up()
    monkeypatch.setattr(math_verify.grader, "sympy_expr_eq", crash)
    # the two spellings differ as strings, so only the crashing sympy comparison could match them
    assert verifier.score("\\boxed{\\frac{1}{4}}", "0.25").status == "error"  # not "wrong"


def test_too_long_answer_reports_its_first_50_characters():
    v = MathVerifier(max_answer_chars=60)
    answer = "1+" * 40 + "1"
    assert v.score("\\boxed{" + answer + "}", "41") == rewards.Score(False, "too_long", answer[:50])


def test_pool_stays_within_max_workers_after_a_failed_replacement(stand_in):
    pool = rewards._WorkerPool(1.0, 2.0, 3.0, max_workers=1)
    stand_in.plan, stand_in.reply = [False, True], "garbage"
    assert pool.call({"kind": "verify", "answer": "1", "boxed": "1"}) == "error"
    stand_in.reply = "correct"
    first, got = _in_thread(pool._take)
    first.join(timeout=30)
    second, waited = _in_thread(pool._take)
    second.join(timeout=0.5)  # one worker at most: the second thread waits
    pool._give_back(got["value"])
    second.join(timeout=30)
    assert waited.get("value") is got["value"] and len(stand_in.made) == 2


def test_a_closed_pool_starts_new_workers_when_used_again(stand_in):
    pool = rewards._WorkerPool(1.0, 2.0, 3.0, max_workers=1)
    assert pool.call({"kind": "verify", "answer": "1", "boxed": "1"}) == "correct"
    pool.close()
    assert stand_in.made[0].killed
    again, answer = _in_thread(lambda: pool.call({"kind": "verify", "answer": "1", "boxed": "1"}))
    again.join(timeout=30)
    assert answer.get("value") == "correct" and len(stand_in.made) == 2


def test_a_crashing_worker_writes_nothing_to_our_stderr(capfd):
    require("math_verify")
    worker = rewards._Worker(1.0)
    try:
        assert worker.read_line(time.monotonic() + 120) == "ready"
        worker.proc.stdin.write(b"not json\n")
        worker.proc.stdin.flush()
        assert worker.read_line(time.monotonic() + 60) is None  # it died on the bad line
        worker.proc.wait(timeout=60)
    finally:
        worker.kill()
    assert capfd.readouterr().err == ""


# ---------------------------------------------------------------- sample D's survivors (seed 4)

@pytest.mark.parametrize("completion, choices, letters", [
    ("\\boxed{42}, that is \\boxed{B}", None, ["B"]),  # after a box that is no answer
    ("Answer: B, or maybe (A) photon", None, ["B", "A"]),  # a bracketed A is the option, not the article
    ("Answer: B, or maybe [A] photon", None, ["B", "A"]),
    ("The answer is 1.6 eV, or maybe Compound D.", ["1.6 eV", "Compound D", "0.8 eV", "6.4 eV"], ["A", "B"]),
    ("The answer is X-ray.", ["gamma ray", "X-ray", "UV light", "radio wave"], ["B"]),
    ("\\boxed{9.9 eV}", ["3.2 eV", "0.8 eV", "1.6 eV", "6.4 eV", "9.9 eV"], []),  # a fifth choice is no option
    ("\\boxed C and \\boxed{D}", None, ["C", "D"]),  # an unbraced box joined to a later one: a hedge
])
def test_gpqa_answers_of_sample_d(completion, choices, letters):
    assert extract_choice(completion, choices) == letters


def test_ifeval_without_sentence_data_is_not_correct(monkeypatch):
    require("if_verifiable")
    import nltk

    def missing(*args, **kwargs):
        raise LookupError("no punkt_tab")

    monkeypatch.setattr(nltk.data, "load", missing)
    record = {"problem_id": "k", "problem": "p", "answer": "", "instruction_id_list":
              ["length_constraints:number_sentences"], "kwargs": [{"num_sentences": 1, "relation": "at least"}]}
    assert grade_detailed("ifeval", record, "One sentence.") == rewards.Score(False, "error", None)


def test_synlogic_grader_checks_its_checkout_up_front_and_names_correct(tmp_path, fresh_imports, monkeypatch):
    monkeypatch.delenv("SYNLOGIC_REPO", raising=False)
    with pytest.raises(ValueError, match="git clone https://github.com/MiniMax-AI/SynLogic"):
        BenchmarkGrader("synlogic")  # before any model is loaded
    repo = _checkout(tmp_path / "named", "return True")
    grader = BenchmarkGrader("synlogic", synlogic_repo=str(repo))
    assert grader.score_record({"task": "parity", "game_data": GAME}, "x") == rewards.Score(True, "correct", None)


def test_chained_strict_inequality_is_an_open_interval(verifier):
    assert verifier.score("\\boxed{0 < x < 1}", "(0,1)").status == "correct"
    assert verifier.score("\\boxed{0 < x < 1}", "(0,1]").status == "wrong"


def test_extract_last_boxed_default_depth_is_twenty():
    nested = "\\boxed{" + "{" * 20 + "1" + "}" * 20 + "}"  # 21 levels with the box's own
    assert extract_last_boxed(nested) == (None, "too_deep")


def test_reward_counts_on_the_verifier_it_was_given():
    require("math_verify")
    mine = MathVerifier()
    reward = make_math_reward(verifier=mine)
    assert reward(["\\boxed{1}", "no box"], answer=["1", "1"]) == [1.0, 0.0]
    assert reward.verifier is mine and mine.stats["total"] == 2


def test_pool_worker_that_never_says_ready_is_an_error(stand_in):
    stand_in.starts, stand_in.reply = False, None
    pool = rewards._WorkerPool(1.0, 2.0, 3.0, max_workers=1)
    assert pool.call({"kind": "verify", "answer": "1", "boxed": "1"}) == "error"
    assert stand_in.made[0].killed
