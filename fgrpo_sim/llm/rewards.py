"""Math reward: math-verify on the last \\boxed{} answer, safe in any thread, never hangs or crashes.

Before parsing, in both the answer and the reference (docs/evaluation.md, "Grading decisions"):
a LaTeX space or {,} followed by exactly three digits is read as a thousands separator ("1\\,000" =
"1{,}000" = "1,000" = 1000; "1\\,2" and "1,2" untouched); a number in E notation is that number ("1e3" =
1000, "2.5E-3" = 0.0025; math-verify reads "1e3" as 1 times Euler's e times 3); a chained inequality in
one variable is its interval ("-2 \\le x \\le 3" = "[-2,3]", "0 < x \\le 1" = "(0,1]"; math-verify credits
the interval for an inequality gold but not the reverse); an inequality in one variable, several joined by "or",
or a bound on |x| is its set ("x<0 \\text{ or } x>1" = "(-\\infty,0)\\cup(1,\\infty)", "|x| \\le 1" = "[-1,1]";
`inequality_sets`).

Safety layers, cheapest first:
1. A size pre-check: completions over `max_completion_chars`, boxed answers over `max_answer_chars`
   or nested deeper than `max_brace_depth` are rejected before any parsing (sympy can take
   exponential time on deeply nested input).
2. One deadline of `timeout` seconds for the whole check (gold parse + answer parse + compare).
   math-verify's own timeouts are switched off: they catch their own timeout exception and return
   "no parse" / "not equal", so a timeout would be scored as a wrong answer and an empty gold parse
   would be cached. Our deadline raises an exception math-verify cannot swallow (a BaseException
   from a SIGALRM interval timer), so it is counted as `timeout`, and nothing is cached.
   Signals work only in a main thread. Off the main thread (async reward functions, thread pools)
   the check goes to a pool of worker processes, each running math-verify in *its* main thread
   under the same deadline; a worker that has not answered `hard_timeout` seconds after the
   request (a hang in C code that no signal interrupts) is killed and a replacement starts at once
   in the background. Each thread takes its own idle worker (the pool grows to `max_workers`), so
   one hung check never holds up another thread.
3. Exceptions inside math-verify are raised to us (`raise_on_error=True`) and counted as `error`.

Every rejected or failed completion gets reward `reward_wrong` and is counted by status in
`MathVerifier.counts` (`MathVerifier.stats` gives a snapshot with every status); the TRL reward
function also logs the per-batch fraction of each status.

Time bounds of one `score` call: in a main thread, at most `timeout` seconds in math-verify. Off it,
at most `hard_timeout` seconds once a worker is running; a thread that finds no idle worker and the
pool full waits for one (each is busy at most `hard_timeout`); the first call of a new worker also
waits for its start-up (importing sympy and math-verify and one warm-up check, usually a few
seconds, at most `startup_timeout`; replacements of killed workers start before anyone needs
them). The first check of a process also runs one warm-up check outside the deadline, so lazy
initialisation is not charged to a real answer.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from fgrpo_sim.llm.inequality_sets import as_interval_set

#: Outcome of one completion; all but "correct" earn reward_wrong.
STATUSES = ("correct", "wrong", "no_answer", "too_long", "too_deep", "unparsable", "timeout", "error")
_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*")
_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?")
#: A LaTeX space or braced comma between digit groups ("1\\,000", "1\\ 000", "1~000", "1{,}000"): a
#: thousands separator only when exactly three digits follow it, so "1\\,2" and "1{,}5" keep their meaning.
#: math-verify reads a bare comma the same way itself ("1,000" = 1000, "1,2" a tuple).
_DIGIT_GROUP_SEP = re.compile(r"(?<=\d)(?:\\[,;: ]|\\thinspace\s*|~|\{,\})(?=\d{3}(?!\d))")
#: A number in E notation ("1e3", "2.5E-3"), not part of a longer token ("3e-2x" stays: e minus 2x).
_E_NOTATION = re.compile(r"(?<![\w.\\])(\d+(?:\.\d+)?|\.\d+)[eE]([-+]?\d+)(?![\w.])")
#: "a <= x <= b" in one variable (a and b without another comparison), "<" or "\le"/"\leq"/"\leqslant"/"≤".
_LESS = r"(?:<|\\leq?(?:slant)?(?![A-Za-z])|\u2264)"
_BOUND = rf"(?:(?!{_LESS}|>|\\geq?|=|\u2265).)+?"
_CHAINED = re.compile(rf"\s*(?P<low>{_BOUND})\s*(?P<low_op>{_LESS})\s*[A-Za-z]\s*"
                      rf"(?P<high_op>{_LESS})\s*(?P<high>{_BOUND})\s*")


@dataclass(frozen=True)
class Score:
    correct: bool
    status: str
    extracted: str | None = None


def iter_boxed(text: str, max_depth: int = 20):
    """(start, end, content, status) of each \\boxed{...}/\\fbox{...} of `text`, last first: status "ok"
    (content = what the braces enclose, matched; "\\boxed 5" without braces gives the next token) or
    "too_deep" (content None). Unclosed boxes are skipped."""
    for match in reversed(list(_BOX_RE.finditer(text))):
        start = match.end()
        if start >= len(text):
            continue
        if text[start] != "{":
            token = re.match(r"[^\s$]+", text[start:])
            if token and token.group(0).rstrip(".,;"):
                yield match.start(), start + token.end(), token.group(0).rstrip(".,;"), "ok"
            continue
        depth = 0
        for i in range(start, len(text)):
            ch = text[i]
            if ch == "{" and (i == 0 or text[i - 1] != "\\"):
                depth += 1
                if depth > max_depth:
                    yield match.start(), None, None, "too_deep"
                    break
            elif ch == "}" and text[i - 1] != "\\":
                depth -= 1
                if depth == 0:
                    yield match.start(), i + 1, text[start + 1 : i], "ok"
                    break
        # unbalanced: try an earlier box


def extract_last_boxed(text: str, max_depth: int = 20) -> tuple[str | None, str]:
    """(content of the last \\boxed{...}/\\fbox{...}, status): status is "ok", "no_answer" or "too_deep".

    Braces are matched (\\boxed{\\frac{1}{2}} -> \\frac{1}{2}); "\\boxed 5" (no braces) gives the next
    token. An unclosed box counts as no answer (an earlier closed box is used); so does an empty box
    (`\\boxed{4}\\boxed{}` gives 4: an empty box answers nothing, and would otherwise hide the answer before
    it); a box nested deeper than `max_depth` is "too_deep".
    """
    for _, _, content, status in iter_boxed(text, max_depth):
        if status == "ok" and not content.strip():
            continue
        return content, status
    return None, "no_answer"


def _completion_text(completion: Any) -> str:
    """TRL passes plain strings, or for conversational data a list of messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return "" if completion is None else str(completion)


# --- math-verify calls under one deadline (main thread of this process or of a worker) ---------

class _Deadline(BaseException):
    """Raised by our SIGALRM handler. A BaseException, so math-verify's `except Exception` cannot swallow it."""


def _raise_deadline(signum, frame):
    raise _Deadline()


def _call_with_deadline(fn, seconds: float):
    """fn() with a SIGALRM interval timer of `seconds` (main thread only); raises _Deadline on overrun."""
    previous = signal.signal(signal.SIGALRM, _raise_deadline)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def _parse_config():
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    # box at priority 0, beside math-verify's phrase "final answer is ... I hope": the box ends last, so the whole box
    # is read, and that phrase inside it is a remark, not the answer (tests/test_grader_kills_open.py)
    return [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]


def _quiet_math_verify() -> None:
    """math-verify warns once that its own timeouts are off; we enforce ours (see the module doc)."""
    import math_verify.grader
    import math_verify.parser

    math_verify.parser.TIMEOUT_WARNING_SHOWN = True
    math_verify.grader.TIMEOUT_WARNING_SHOWN = True


def _parse(boxed_content: str):
    from math_verify import parse

    content = _DIGIT_GROUP_SEP.sub("", boxed_content)  # math-verify reads "1\\,000" as 1 times 000
    content = _E_NOTATION.sub(r"\1\\times 10^{\2}", content)
    if chained := _CHAINED.fullmatch(content):
        content = (f"{'(' if chained['low_op'] == '<' else '['}{chained['low']},{chained['high']}"
                   f"{')' if chained['high_op'] == '<' else ']'}")
    elif (as_set := as_interval_set(content)) is not None:  # x < 0 or x > 1, |x| <= 1, x <= 2: their sets
        content = as_set
    return parse("\\boxed{" + content + "}", extraction_config=_parse_config(), parsing_timeout=None,
                 raise_on_error=True)


@lru_cache(maxsize=65536)
def _parse_gold(answer: str):
    """Cached parse of a reference answer. A timeout raises _Deadline, which lru_cache does not cache."""
    return _parse(answer)


def _verify_status(answer: str, boxed: str) -> str:
    """"correct" / "wrong" / "unparsable" / "error" (no deadline here).

    math-verify compares every (gold, prediction) pair of the two parses and accepts any match; we
    loop over the pairs ourselves so that one pair that raises neither hides a later match (as
    `raise_on_error=True` over the whole lists would) nor passes for a wrong answer (as the default
    does): an answer with no matching pair and at least one failed comparison is an "error".
    """
    from math_verify import verify

    gold = _parse_gold(answer)
    pred = _parse(boxed)
    if not gold or not pred:
        return "unparsable"
    failed = False
    for g in gold:
        for t in pred:
            try:
                if verify(g, t, timeout_seconds=None, raise_on_error=True):
                    return "correct"
            except Exception:  # noqa: BLE001 - counted, and the other pairs still get their chance
                failed = True
    return "error" if failed else "wrong"


_warmed_up = False


def _warm_up() -> None:
    """One known-safe check outside any deadline: the first check of a process builds math-verify's and
    sympy's lazy state (grammars, caches), which can take seconds on a busy machine and must not be
    charged to a real answer's deadline."""
    global _warmed_up
    if not _warmed_up:
        _quiet_math_verify()
        try:
            _call_with_deadline(lambda: _verify_status("\\frac{1}{2}", "0.5"), _WARM_UP_SECONDS)
        except (_Deadline, Exception):  # noqa: BLE001 - a broken install shows up on the real checks
            pass
        _warmed_up = True


#: Deadline of the one warm-up check (it is not a user's answer; it only must not hang forever).
_WARM_UP_SECONDS = 30.0


def _verify_in_main_thread(answer: str, boxed: str, timeout: float) -> str:
    """"correct" / "wrong" / "unparsable" / "timeout" / "error", at most `timeout` seconds."""
    _warm_up()
    try:
        return _call_with_deadline(lambda: _verify_status(answer, boxed), timeout)
    except _Deadline:
        return "timeout"
    except Exception:  # noqa: BLE001 - a hostile completion must never stop training
        return "error"


def _worker_request(request: dict, timeout: float) -> str:
    if request["kind"] == "sleep":  # test hook: a check that overruns but obeys signals
        return _call_with_deadline_status(lambda: time.sleep(request["seconds"]), timeout)
    if request["kind"] == "block":  # test hook: a hang no signal interrupts (like one inside C code)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(request["seconds"])
        return "correct"
    return _verify_in_main_thread(request["answer"], request["boxed"], timeout)


def _call_with_deadline_status(fn, timeout: float) -> str:
    try:
        _call_with_deadline(fn, timeout)
    except _Deadline:
        return "timeout"
    return "correct"


def _worker_loop(timeout: float) -> None:
    """Worker process: "ready" once math-verify is imported, then JSON lines in, one status per line out."""
    import json

    _warm_up()  # pay the imports and lazy initialisation before saying "ready"
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        sys.stdout.write(_worker_request(json.loads(line), timeout) + "\n")
        sys.stdout.flush()


class _Worker:
    """One worker process (`python -m fgrpo_sim.llm.rewards --worker T`; no fork of a process that may hold
    CUDA state, no re-import of the user's main script). Used by one thread at a time."""

    def __init__(self, timeout: float):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fgrpo_sim.llm.rewards", "--worker", repr(float(timeout))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0,
        )
        self.ready = False
        self._buffer = b""

    def read_line(self, deadline: float) -> str | None:
        """One line from the worker before `deadline` (time.monotonic), else None."""
        import select

        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:  # the worker died
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace").strip()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process that survives SIGKILL
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass


# Ours, not concurrent.futures/multiprocessing.Pool: neither kills one worker hung in C code, the rest serving on.
class _WorkerPool:
    """Idle workers for threads other than the main one; the lock guards only the lists, never a call."""

    def __init__(self, timeout: float, hard_timeout: float, startup_timeout: float, max_workers: int):
        self.timeout, self.hard_timeout = timeout, hard_timeout
        self.startup_timeout, self.max_workers = startup_timeout, max_workers
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._count = 0  # workers alive or starting, idle or busy

    def _take(self) -> _Worker:
        with self._cond:
            while True:
                if self._idle:
                    return self._idle.pop()
                if self._count < self.max_workers:
                    self._count += 1
                    break
                self._cond.wait()
        try:
            return _Worker(self.timeout)
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _give_back(self, worker: _Worker) -> None:
        with self._cond:
            self._idle.append(worker)
            self._cond.notify()

    def _replace(self, worker: _Worker) -> None:
        """Kill a worker that overran or died; start its replacement now, so the next call need not wait."""
        worker.kill()
        try:
            fresh = _Worker(self.timeout)
        except OSError:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            return
        self._give_back(fresh)

    def call(self, request: dict) -> str:
        import json

        worker = self._take()
        if not worker.ready:
            line = worker.read_line(time.monotonic() + self.startup_timeout)
            if line != "ready":
                self._replace(worker)
                return "error"  # the worker could not start (math-verify missing or too slow to import)
            worker.ready = True
        try:
            worker.proc.stdin.write((json.dumps(request) + "\n").encode())
            worker.proc.stdin.flush()
            status = worker.read_line(time.monotonic() + self.hard_timeout)
        except (OSError, ValueError):  # a closed pipe: the request or its answer was lost, no check overran
            self._replace(worker)
            return "error"
        if status in STATUSES:
            self._give_back(worker)
            return status
        overran = status is None and worker.alive()
        self._replace(worker)
        return "timeout" if overran else "error"

    def close(self) -> None:
        with self._cond:
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for worker in idle:
            worker.kill()


@dataclass
class MathVerifier:
    """Scores completions against reference answers; thread-safe; counts outcomes by status.

    Parameters: `timeout` seconds for one check (gold parse + answer parse + compare; fractions
    allowed), `hard_timeout` seconds before a worker-process check is abandoned and its worker killed
    (off the main thread only; must be > `timeout`), `startup_timeout` seconds for a new worker to
    import math-verify, `max_workers` worker processes at most, and the size limits of the
    pre-check. `fallback_last_number` (off in the paper's setting) scores the last number of a
    completion that has no box: only for smoke tests with tiny random models, which never write
    \\boxed{}.
    """

    timeout: float = 5.0
    hard_timeout: float = 10.0
    startup_timeout: float = 60.0
    max_workers: int = 8
    max_completion_chars: int = 200_000
    max_answer_chars: int = 1_000
    max_brace_depth: int = 20
    fallback_last_number: bool = False
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self):
        from fgrpo_sim.validation import check_integer, check_range

        check_range("timeout", self.timeout, 0.0, low_open=True)
        check_range("hard_timeout", self.hard_timeout, float(self.timeout), low_open=True)
        check_range("startup_timeout", self.startup_timeout, 0.0, low_open=True)
        check_integer("max_workers", self.max_workers, 1)
        check_integer("max_completion_chars", self.max_completion_chars, 1)
        check_integer("max_answer_chars", self.max_answer_chars, 1)
        check_integer("max_brace_depth", self.max_brace_depth, 1)
        self._count_lock = threading.Lock()
        self._workers = _WorkerPool(float(self.timeout), float(self.hard_timeout), float(self.startup_timeout),
                                    int(self.max_workers))

    @property
    def stats(self) -> dict[str, int]:
        """Counts of every status so far (zeros included) and their total, for training/eval logs."""
        with self._count_lock:
            snapshot = {status: int(self.counts[status]) for status in STATUSES}
        snapshot["total"] = sum(snapshot.values())
        return snapshot

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
            status = _verify_in_main_thread(answer, boxed, float(self.timeout))
        else:
            status = self._workers.call({"kind": "verify", "answer": answer, "boxed": boxed})
        return Score(status == "correct", status, boxed)

    def close(self) -> None:
        """Stop the idle worker processes (they also exit when this process does: their stdin closes)."""
        self._workers.close()


def make_math_reward(
    reward_correct: float = 1.0, reward_wrong: float = 0.0, verifier: MathVerifier | None = None, name: str = "math"
):
    """A TRL reward function: `f(completions, answer, **kwargs) -> list[float]` (dataset column `answer`).

    Its `__name__` is `name` ("math": the reward that defines success for the focal weight by default),
    and it carries `reward_correct`, `reward_wrong` (the two values it returns) and `verifier` (whose
    `stats` count outcomes), so a trainer can check them against its config. Logs the fraction of each
    status per batch through TRL's `log_metric` (as `<name>/<status>`).
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
    # FocalGRPOTrainer checks these against its config's reward_wrong / reward_correct before training
    reward.reward_correct = float(reward_correct)  # type: ignore[attr-defined]
    reward.reward_wrong = float(reward_wrong)  # type: ignore[attr-defined]
    return reward


#: Default TRL reward function (1.0 correct, 0.0 otherwise), as in the paper.
math_reward = make_math_reward()


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--worker":
    _worker_loop(float(sys.argv[2]))
