"""Math reward: math-verify on the last \\boxed{} answer, safe in any thread, never hangs or crashes.

Safety layers, cheapest first:
1. A size pre-check: completions over `max_completion_chars`, boxed answers over `max_answer_chars`
   or nested deeper than `max_brace_depth` are rejected before any parsing (sympy can take
   exponential time on deeply nested input).
2. A time limit on math-verify itself. math-verify's own timeout uses `signal.alarm`, which works
   only in the main thread. In the main thread we use it; in any other thread (async reward
   functions, thread pools) the parse/verify call goes to a small guarded worker process that runs
   math-verify in *its* main thread, and is killed and restarted if it overruns `hard_timeout`.
3. Any exception inside math-verify is caught.

Every rejected or failed completion gets reward `reward_wrong` and is counted by status in
`MathVerifier.counts`; the TRL reward function also logs the per-batch fraction of each status.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

#: Outcome of one completion; all but "correct" earn reward_wrong.
STATUSES = ("correct", "wrong", "no_answer", "too_long", "too_deep", "unparsable", "timeout", "error")
_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*")
_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Score:
    correct: bool
    status: str
    extracted: str | None = None


def extract_last_boxed(text: str, max_depth: int = 20) -> tuple[str | None, str]:
    """(content of the last \\boxed{...}/\\fbox{...}, status): status is "ok", "no_answer" or "too_deep".

    Braces are matched (\\boxed{\\frac{1}{2}} -> \\frac{1}{2}); "\\boxed 5" (no braces) gives the next
    token. An unclosed box counts as no answer.
    """
    matches = list(_BOX_RE.finditer(text))
    for match in reversed(matches):
        start = match.end()
        if start >= len(text):
            continue
        if text[start] != "{":
            token = re.match(r"[^\s$]+", text[start:])
            if token and token.group(0).rstrip(".,;"):
                return token.group(0).rstrip(".,;"), "ok"
            continue
        depth = 0
        for i in range(start, len(text)):
            ch = text[i]
            if ch == "{" and (i == 0 or text[i - 1] != "\\"):
                depth += 1
                if depth > max_depth:
                    return None, "too_deep"
            elif ch == "}" and text[i - 1] != "\\":
                depth -= 1
                if depth == 0:
                    return text[start + 1 : i], "ok"
        # unbalanced: try an earlier box
    return None, "no_answer"


def _completion_text(completion: Any) -> str:
    """TRL passes plain strings, or for conversational data a list of messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return "" if completion is None else str(completion)


# --- math-verify calls (run in the main thread of this process or of the worker) -----------------

def _parse_config():
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    return [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]


@lru_cache(maxsize=65536)
def _parse_gold(answer: str, timeout: int | None):
    from math_verify import parse

    return parse("\\boxed{" + answer + "}", extraction_config=_parse_config(), parsing_timeout=timeout)


def _verify_in_main_thread(answer: str, boxed: str, timeout: int | None) -> str:
    """"correct" / "wrong" / "unparsable" / "timeout" / "error" (math-verify with signal timeouts)."""
    from math_verify import parse, verify

    try:
        gold = _parse_gold(answer, timeout)
        pred = parse("\\boxed{" + boxed + "}", extraction_config=_parse_config(), parsing_timeout=timeout)
        if not gold or not pred:
            return "unparsable"
        return "correct" if verify(gold, pred, timeout_seconds=timeout) else "wrong"
    except TimeoutError:
        return "timeout"
    except Exception:  # noqa: BLE001 - a hostile completion must never stop training
        return "error"


def _worker_loop(timeout: int) -> None:
    """Worker process: JSON lines in on stdin, one status per line out on stdout.

    math-verify runs in this process's main thread, so its signal timeouts work.
    """
    import json
    import sys
    import time

    for line in sys.stdin:
        request = json.loads(line)
        if request["kind"] == "sleep":  # lets the tests simulate a hung parse
            time.sleep(request["seconds"])
            status = "correct"
        else:
            status = _verify_in_main_thread(request["answer"], request["boxed"], timeout)
        sys.stdout.write(status + "\n")
        sys.stdout.flush()


class _GuardedWorker:
    """One lazily started worker process; killed and restarted when a call overruns its hard timeout.

    Started with `python -m fgrpo_sim.llm.rewards` (not multiprocessing), so it neither forks a process
    that may hold CUDA state nor re-imports the user's main script.
    """

    def __init__(self, timeout: int, hard_timeout: float):
        self.timeout, self.hard_timeout = timeout, hard_timeout
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None

    def _start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "fgrpo_sim.llm.rewards", "--worker", str(self.timeout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
        )

    def _stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(timeout=5)
        self._proc = None

    def call(self, request: dict, startup_grace: float = 60.0) -> str:
        import json
        import select

        with self._lock:
            fresh = self._proc is None or self._proc.poll() is not None
            if fresh:
                self._stop()
                self._start()
            try:
                self._proc.stdin.write(json.dumps(request) + "\n")
                self._proc.stdin.flush()
                # The first call also pays for the worker's imports (sympy, math-verify).
                ready, _, _ = select.select([self._proc.stdout], [], [], self.hard_timeout + (startup_grace if fresh else 0.0))
                if ready:
                    status = self._proc.stdout.readline().strip()
                    if status in STATUSES:
                        return status
            except (OSError, ValueError):
                pass
            self._stop()  # overran, died or answered nonsense: start afresh next time
            return "timeout"

    def close(self) -> None:
        with self._lock:
            self._stop()


@dataclass
class MathVerifier:
    """Scores completions against reference answers; thread-safe; counts outcomes by status.

    Parameters: `timeout` seconds for each math-verify parse/compare (integer, signal based),
    `hard_timeout` seconds before a worker-process call is abandoned (off the main thread only),
    and the size limits of the pre-check. `fallback_last_number` (off in the paper's setting) scores
    the last number of a completion that has no box: only for smoke tests with tiny random models,
    which never write \\boxed{}.
    """

    timeout: int = 5
    hard_timeout: float = 20.0
    max_completion_chars: int = 200_000
    max_answer_chars: int = 1_000
    max_brace_depth: int = 20
    fallback_last_number: bool = False
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self):
        from fgrpo_sim.validation import check_integer, check_range

        check_integer("timeout", self.timeout, 1)
        check_range("hard_timeout", self.hard_timeout, 0.0, low_open=True)
        check_integer("max_completion_chars", self.max_completion_chars, 1)
        check_integer("max_answer_chars", self.max_answer_chars, 1)
        check_integer("max_brace_depth", self.max_brace_depth, 1)
        self._count_lock = threading.Lock()
        self._worker = _GuardedWorker(int(self.timeout), float(self.hard_timeout))

    def score(self, completion: Any, answer: Any) -> Score:
        result = self._score(_completion_text(completion), "" if answer is None else str(answer).strip())
        with self._count_lock:
            self.counts[result.status] += 1
        return result

    def _score(self, text: str, answer: str) -> Score:
        if not answer:
            return Score(False, "unparsable")
        if len(text) > self.max_completion_chars:
            return Score(False, "too_long")
        boxed, status = extract_last_boxed(text, self.max_brace_depth)
        if boxed is None and status == "no_answer" and self.fallback_last_number:
            numbers = _NUMBER_RE.findall(text[-self.max_answer_chars :])
            boxed = numbers[-1] if numbers else None
        if boxed is None:
            return Score(False, status)
        boxed = boxed.strip()
        if not boxed:
            return Score(False, "no_answer")
        if len(boxed) > self.max_answer_chars:
            return Score(False, "too_long", boxed[:50])
        if threading.current_thread() is threading.main_thread():
            status = _verify_in_main_thread(answer, boxed, int(self.timeout))
        else:
            status = self._worker.call({"kind": "verify", "answer": answer, "boxed": boxed})
        return Score(status == "correct", status, boxed)

    def close(self) -> None:
        """Stop the worker process, if one was started (it is a daemon and dies with us anyway)."""
        self._worker.close()


def make_math_reward(
    reward_correct: float = 1.0, reward_wrong: float = 0.0, verifier: MathVerifier | None = None, name: str = "math_reward"
):
    """A TRL reward function: `f(completions, answer, **kwargs) -> list[float]` (dataset column `answer`).

    Logs the fraction of each status per batch through TRL's `log_metric` (as `<name>/<status>`).
    """
    verifier = verifier if verifier is not None else MathVerifier()

    def reward(completions, answer, **kwargs) -> list[float]:
        scores = [verifier.score(c, a) for c, a in zip(completions, answer, strict=True)]
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and scores:
            tally = Counter(s.status for s in scores)
            for status in STATUSES:
                log_metric(f"{name}/{status}", tally[status] / len(scores))
        return [reward_correct if s.correct else reward_wrong for s in scores]

    reward.__name__ = name
    reward.verifier = verifier  # type: ignore[attr-defined]
    # (wrong, correct): FocalGRPOTrainer checks them against reward_wrong / reward_correct before training
    reward.reward_values = (reward_wrong, reward_correct)  # type: ignore[attr-defined]
    return reward


#: Default TRL reward function (1.0 correct, 0.0 otherwise), as in the paper.
math_reward = make_math_reward()


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--worker":
    _worker_loop(int(sys.argv[2]))
