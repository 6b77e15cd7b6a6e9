"""Child processes that tests start: each child's signal dispositions set by the test, never inherited, and
the child ended however the test ends (issue 43).

`make test` started in the background from a script runs with SIGINT ignored: POSIX starts such jobs with
SIG_IGN, children inherit it, and Python then installs no KeyboardInterrupt handler. A child that a test sends
SIGINT would ignore it, the test would wait out its timeout, and the child would run on. `start` resets the
signals a test may send (SIGINT, SIGTERM) to their defaults in the child before it execs; `ended` kills and
reaps the child when the test leaves, passing or failing, so no test leaves a process behind.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from typing import Iterator

#: The signals a test sends a child, at their default disposition there whatever the test process inherited
SENT = (signal.SIGINT, signal.SIGTERM)


def _default_dispositions() -> None:
    for sig in SENT:
        signal.signal(sig, signal.SIG_DFL)


def start(args: list[str], **popen) -> subprocess.Popen:
    """subprocess.Popen(args, **popen), with SENT at their defaults in the child (preexec_fn, before exec)."""
    return subprocess.Popen(args, preexec_fn=_default_dispositions, **popen)


@contextlib.contextmanager
def ended(*procs: subprocess.Popen) -> Iterator[None]:
    """Inside: the test. On leaving, however: every child still running is killed, and every child reaped."""
    try:
        yield
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        for proc in procs:
            with contextlib.suppress(ValueError, OSError, subprocess.TimeoutExpired):
                proc.communicate(timeout=60)  # closes its pipes; a stream another thread reads may be closed
            proc.wait()
