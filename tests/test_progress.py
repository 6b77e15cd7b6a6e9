"""Progress bars appear on a terminal only (issue 32: `make figures > log` wrote about 1,900 bar refreshes)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios

from children import ended, start
from fgrpo_sim.progress import bar, show_progress

SMALL_RUN = ["simulate", "population", "--steps", "5", "--prompts", "8", "--prompt-batch", "8", "--runs", "2",
             "--eval-every", "5"]


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_draws_on_a_terminal_and_stays_silent_elsewhere():
    terminal, log = FakeTerminal(), io.StringIO()
    for stream, drawn in ((terminal, True), (log, False)):
        assert show_progress(True, stream) is drawn
        for _ in bar(range(3), progress=True, file=stream, desc="steps"):
            pass
        assert ("steps" in stream.getvalue()) is drawn
    assert not show_progress(False, FakeTerminal())  # --no-progress wins on a terminal too


def _command(tmp_path, name: str) -> list[str]:
    return [sys.executable, "-m", "fgrpo_sim", *SMALL_RUN, "--out", str(tmp_path / name)]


ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}


def test_a_command_writes_bars_to_a_terminal_but_not_to_a_log(tmp_path):
    log = tmp_path / "stderr.log"
    with open(log, "wb") as fh:
        assert subprocess.run(_command(tmp_path, "a.csv"), stdout=subprocess.PIPE, stderr=fh, env=ENV,
                              timeout=300).returncode == 0
    assert b"\r" not in log.read_bytes()  # a log or CI console: no redraws
    leader, follower = pty.openpty()
    # a terminal 100 columns wide: a new pty has 0, into which tqdm draws nothing
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    child = start(_command(tmp_path, "b.csv"), stdout=subprocess.DEVNULL, stderr=follower, env=ENV)
    os.close(follower)  # the child holds its copy; reading ends when the child's closes
    seen = b""
    with ended(child):  # however the reading ends, no child is left running
        try:
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: the terminal's last writer closed, everything is read
                    break
                if not chunk:
                    break
                seen += chunk
        finally:
            os.close(leader)
        assert child.wait(timeout=300) == 0
    assert b"\r" in seen and b"it/s" in seen  # a terminal: the bars redraw
