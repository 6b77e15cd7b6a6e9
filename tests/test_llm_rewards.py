"""math_reward: math-verify on the last \\boxed{}, tricky answers, hostile completions, threads, timeouts."""

from __future__ import annotations

import threading
import time

import pytest
from extras import require

require("math_verify")

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
    # thousands separators: a LaTeX space or {,} before a group of exactly three digits
    ("\\boxed{1\\,000}", "1000", True, "correct"),
    ("\\boxed{1{,}000}", "1000", True, "correct"),
    ("\\boxed{1\\,000\\,000}", "1000000", True, "correct"),
    ("\\boxed{1\\ 000}", "1000", True, "correct"),
    ("\\boxed{12\\,345.5}", "12345.5", True, "correct"),
    ("\\boxed{1000}", "1\\,000", True, "correct"),  # the reference may carry the separator too
    ("\\boxed{1,000}", "1{,}000", True, "correct"),
    ("\\boxed{1\\,000}", "100", False, "wrong"),
    # ... and not before other group sizes: tuples, intervals and lists keep their meaning
    ("\\boxed{1,2}", "12", False, "wrong"),
    ("\\boxed{1,2}", "1, 2", True, "correct"),
    ("\\boxed{(1,2)}", "(1,2)", True, "correct"),
    ("\\boxed{(1,2)}", "12", False, "wrong"),
    ("\\boxed{[1,2]}", "[1, 2]", True, "correct"),
    ("\\boxed{1,00}", "100", False, "wrong"),
    ("\\boxed{1,0000}", "10000", False, "wrong"),
    ("\\boxed{1\\,00}", "100", False, "wrong"),
    ("\\boxed{1\\,0000}", "10000", False, "wrong"),
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
    assert logged["math/correct"] == 0.25 and logged["math/no_answer"] == 0.5
    assert reward.verifier.counts["wrong"] == 1
    assert math_reward(["\\boxed{2}"], answer=["2"]) == [1.0]
    # what a trainer checks against its config: the name that defines success and the two values
    assert reward.__name__ == "math" and math_reward.__name__ == "math"
    assert (reward.reward_correct, reward.reward_wrong) == (1.0, -1.0)
    stats = reward.verifier.stats
    assert stats["correct"] == 1 and stats["wrong"] == 1 and stats["no_answer"] == 2 and stats["timeout"] == 0
    assert stats["total"] == 4


def _hang(*args, **kwargs):
    time.sleep(60)  # a math-verify call that never returns in time


def test_main_thread_hang_is_a_timeout_within_the_deadline(monkeypatch):
    import math_verify

    from fgrpo_sim.llm import rewards

    rewards._warm_up()  # lazy initialisation done before the patch (it runs outside the deadline)
    v = MathVerifier(timeout=1.0)
    monkeypatch.setattr(math_verify, "verify", _hang)
    start = time.monotonic()
    score = v.score("\\boxed{3}", "3")
    elapsed = time.monotonic() - start
    assert score.status == "timeout" and not score.correct
    assert elapsed < 15  # the deadline is 1 s; generous for a loaded machine, far below the 60 s hang
    assert v.stats["timeout"] == 1 and v.stats["wrong"] == 0


def test_math_verify_errors_count_as_error_not_wrong(monkeypatch):
    import math_verify

    def broken(*args, **kwargs):
        raise RuntimeError("sympy blew up")

    from fgrpo_sim.llm import rewards

    rewards._warm_up()

    v = MathVerifier()
    real_verify = math_verify.verify
    monkeypatch.setattr(math_verify, "verify", broken)
    assert v.score("\\boxed{3}", "3").status == "error"
    assert v.stats["error"] == 1 and v.stats["wrong"] == 0

    calls = []

    def first_pair_breaks(gold, target, **kwargs):  # a failing pair must not hide a later matching one
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("one comparison failed")
        return real_verify(gold, target, **kwargs)

    monkeypatch.setattr(math_verify, "verify", first_pair_breaks)
    assert v.score("\\boxed{3}", "3").status == "correct" and len(calls) >= 2


def test_gold_parse_that_timed_out_is_not_cached_as_empty(monkeypatch):
    import math_verify

    from fgrpo_sim.llm import rewards

    real_parse = math_verify.parse
    gold = "\\frac{7}{9}"

    def slow_gold(text, *args, **kwargs):
        if gold in text:
            _hang()
        return real_parse(text, *args, **kwargs)

    rewards._warm_up()
    rewards._parse_gold.cache_clear()
    v = MathVerifier(timeout=1.0)
    monkeypatch.setattr(math_verify, "parse", slow_gold)
    assert v.score("\\boxed{7/9}", gold).status == "timeout"
    monkeypatch.setattr(math_verify, "parse", real_parse)
    assert v.score("\\boxed{7/9}", gold).status == "correct"  # parsed afresh, not an empty cached parse


def test_off_main_thread_a_hung_worker_is_killed_and_holds_up_no_other_thread():
    v = MathVerifier(timeout=2.0, hard_timeout=5.0, max_workers=4)
    results = {}

    def timed(key, fn):
        start = time.monotonic()
        results[key] = fn()
        results[key + "_seconds"] = time.monotonic() - start

    def warm_up():  # a worker that has started, so the timings below exclude imports
        results["first"] = v.score("\\boxed{\\frac{2}{4}}", "1/2")

    thread = threading.Thread(target=warm_up)
    thread.start()
    thread.join(timeout=120)
    # a hang that ignores signals (as inside C code): the parent kills the worker after hard_timeout
    blocked = threading.Thread(target=timed, args=("blocked", lambda: v._workers.call({"kind": "block", "seconds": 60})))
    # a hang that obeys signals: the worker's own deadline answers "timeout" and the worker lives on
    slow = threading.Thread(target=timed, args=("slow", lambda: v._workers.call({"kind": "sleep", "seconds": 60})))
    blocked.start()
    slow.start()
    blocked.join(timeout=120)
    slow.join(timeout=120)
    after = threading.Thread(target=timed, args=("after", lambda: v.score("\\boxed{3}", "4")))
    after.start()
    after.join(timeout=120)
    v.close()
    assert results["first"].status == "correct"
    assert results["blocked"] == "timeout" and results["blocked_seconds"] < 30
    assert results["slow"] == "timeout" and results["slow_seconds"] < 30
    assert results["after"].status == "wrong"  # the pool still answers after a kill


def test_bad_limits_are_rejected():
    with pytest.raises(ValueError, match="timeout"):
        MathVerifier(timeout=0)
    with pytest.raises(ValueError, match="hard_timeout"):
        MathVerifier(timeout=5, hard_timeout=5)
    with pytest.raises(ValueError, match="max_brace_depth"):
        MathVerifier(max_brace_depth=0)
