"""math_reward: math-verify on the last \\boxed{}, tricky answers, hostile completions, threads, timeouts."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("math_verify")

from fgrpo_sim.llm.rewards import MathVerifier, extract_last_boxed, make_math_reward, math_reward  # noqa: E402

TRICKY = [
    # (completion, reference answer, expected correct, expected status)
    ("so the answer is \\boxed{\\frac{1}{2}}", "1/2", True, "correct"),
    ("\\boxed{\\dfrac12}", "\\frac{1}{2}", True, "correct"),
    ("\\boxed{\\tfrac{3}{4}}", "0.75", True, "correct"),
    ("\\boxed{0.5}", "\\frac12", True, "correct"),
    ("\\boxed{1/3}", "\\frac{2}{6}", True, "correct"),
    ("\\boxed{5\\text{ cm}}", "5", True, "correct"),
    ("\\boxed{90^\\circ}", "90", True, "correct"),
    ("\\boxed{10\\%}", "10", True, "correct"),
    ("\\boxed{1,000}", "1000", True, "correct"),
    ("\\boxed{2\\sqrt{2}}", "\\sqrt{8}", True, "correct"),
    ("\\boxed{x=3}", "3", True, "correct"),
    ("first \\boxed{1}, finally \\boxed{2}", "2", True, "correct"),   # the LAST box counts
    ("first \\boxed{1}, finally \\boxed{2}", "1", False, "wrong"),
    ("\\boxed{\\frac{1}{3}}", "\\frac{1}{2}", False, "wrong"),
    ("\\boxed 7.", "7", True, "correct"),
    ("the answer is 7", "7", False, "no_answer"),                     # no box at all
    ("\\boxed{}", "7", False, "no_answer"),
    ("\\boxed{7", "7", False, "no_answer"),                          # never closed
    ("\\boxed{" + "{" * 60 + "1" + "}" * 60 + "}", "1", False, "too_deep"),
    ("\\boxed{" + "1+" * 2000 + "1}", "2001", False, "too_long"),
    ("x" * 300_000 + "\\boxed{1}", "1", False, "too_long"),
]


@pytest.fixture(scope="module")
def verifier():
    v = MathVerifier()
    yield v
    v.close()


@pytest.mark.parametrize("completion, answer, correct, status", TRICKY, ids=range(len(TRICKY)))
def test_tricky_cases(verifier, completion, answer, correct, status):
    score = verifier.score(completion, answer)
    assert (score.correct, score.status) == (correct, status)


def test_extract_last_boxed_matches_braces():
    assert extract_last_boxed("a \\boxed{\\frac{1}{2}} b") == ("\\frac{1}{2}", "ok")
    assert extract_last_boxed("\\boxed{a} \\fbox{b}") == ("b", "ok")
    assert extract_last_boxed("\\boxed{\\{1\\}}") == ("\\{1\\}", "ok")
    assert extract_last_boxed("\\boxed{1} \\boxed{2") == ("1", "ok")  # unclosed last box: fall back to an earlier one
    assert extract_last_boxed("nothing") == (None, "no_answer")


def test_reward_function_for_trl_counts_and_logs():
    logged = {}
    reward = make_math_reward(reward_correct=1.0, reward_wrong=-1.0, verifier=MathVerifier())
    completions = [[{"role": "assistant", "content": "\\boxed{4}"}], "\\boxed{5}", "no idea", None]
    values = reward(completions, answer=["4", "4", "4", "4"], log_metric=lambda k, v: logged.__setitem__(k, v))
    assert values == [1.0, -1.0, -1.0, -1.0]
    assert logged["math_reward/correct"] == 0.25 and logged["math_reward/no_answer"] == 0.5
    assert reward.verifier.counts["wrong"] == 1
    assert math_reward(["\\boxed{2}"], answer=["2"]) == [1.0]


def test_off_main_thread_uses_guarded_worker_and_survives_a_hang():
    v = MathVerifier(hard_timeout=1.0)
    results = {}

    def work():
        results["first"] = v.score("\\boxed{\\frac{2}{4}}", "1/2")
        start = time.monotonic()
        results["hung"] = v._worker.call({"kind": "sleep", "seconds": 30})  # a parse that never returns
        results["hung_seconds"] = time.monotonic() - start
        results["after"] = v.score("\\boxed{3}", "4")

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(timeout=120)
    v.close()
    assert not thread.is_alive()
    assert results["first"].status == "correct"
    assert results["hung"] == "timeout" and results["hung_seconds"] < 10
    assert results["after"].status == "wrong"  # a fresh worker took over


def test_bad_limits_are_rejected():
    with pytest.raises(ValueError, match="timeout"):
        MathVerifier(timeout=0)
    with pytest.raises(ValueError, match="max_brace_depth"):
        MathVerifier(max_brace_depth=0)
