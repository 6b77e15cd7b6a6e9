"""Signals (issue 43): Ctrl-C while the command line is still importing ends as Ctrl-C anywhere else does (one
line, exit 130), and the tests that signal a child set the child's dispositions themselves, so they pass when
`make test` runs with SIGINT ignored (a background job of a script), and leave no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from children import ended, start
from fgrpo_sim import INTERRUPTED_LINE

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}

#: `python -m fgrpo_sim passk ...` with Ctrl-C arriving while the command line imports typer: the moment a real
#: Ctrl-C in the first second lands in, made deterministic
INTERRUPTED_IMPORT = """
import builtins, runpy, sys
real_import = builtins.__import__
def interrupted(name, *args, **kwargs):
    if name == "typer":
        raise KeyboardInterrupt
    return real_import(name, *args, **kwargs)
builtins.__import__ = interrupted
sys.argv = ["fgrpo", "passk", "r.jsonl"]
runpy.run_module("fgrpo_sim", run_name="__main__", alter_sys=True)
"""


def test_ctrl_c_while_the_command_line_imports_is_one_line_and_exit_130():
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT], capture_output=True, text=True, env=ENV,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 130, done.stderr
    assert done.stderr.splitlines() == [INTERRUPTED_LINE]  # no KeyboardInterrupt traceback


def test_the_console_script_enters_through_the_guarded_import():
    import tomllib

    import fgrpo_sim.__main__ as entry  # importing it runs nothing

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["fgrpo"] == "fgrpo_sim.__main__:run" and callable(entry.run)


REPORT_SIGINT = ("import signal; h = signal.getsignal(signal.SIGINT); "
                 "print('ignored' if h == signal.SIG_IGN else 'KeyboardInterrupt' if h is signal.default_int_handler else h)")


@pytest.fixture
def sigint_ignored():
    """This test process with SIGINT ignored, as a background job of a script starts it."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def test_children_start_with_sigint_at_its_default_whatever_the_test_inherited(sigint_ignored):
    inherited = subprocess.run([sys.executable, "-c", REPORT_SIGINT], capture_output=True, text=True, timeout=60)
    assert inherited.stdout.strip() == "ignored"  # why children.start exists: Python keeps SIG_IGN
    child = start([sys.executable, "-c", REPORT_SIGINT], stdout=subprocess.PIPE, text=True)
    with ended(child):
        out, _ = child.communicate(timeout=60)
    assert out.strip() == "KeyboardInterrupt"  # Ctrl-C is a KeyboardInterrupt there


def test_ended_kills_and_reaps_a_child_when_the_test_fails():
    child = start([sys.executable, "-c", "import time; time.sleep(600)"])
    with pytest.raises(AssertionError), ended(child):
        raise AssertionError("the test failed while its child ran")
    assert child.returncode == -signal.SIGKILL


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if text.encode() in cmdline:
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="lists processes through /proc")
def test_the_test_that_interrupts_a_run_passes_with_sigint_ignored(tmp_path):
    """`make test &` from a script: pytest and everything it starts inherit SIGINT ignored. The test that sends
    a real run SIGINT must still pass, and leave no process behind (its run mentions the base temp folder)."""
    base = tmp_path / "base"
    test = "tests/test_bad_input_corpus.py::test_sigint_of_a_real_run_prints_where_it_resumes"
    ignoring = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
                                 str(base), test], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    with ended(ignoring):
        out, _ = ignoring.communicate(timeout=400)
    left = _processes_mentioning(str(base))
    for pid in left:  # never leave them running, even when the assertion below fails
        os.kill(pid, signal.SIGKILL)
    assert ignoring.returncode == 0, out
    assert left == [], "a test left a process running"


#: A module run as `python -m` (as CI and the tests run the command line) that runs `fgrpo ARGS` with a real
#: SIGINT landing while code built by exec() runs inside the locked run: the moment of the CI flake, when Ctrl-C
#: came as a lazy import built a namedtuple (collections.namedtuple evals a string; dataclasses exec one)
CTRL_C_IN_EXEC = """
import sys
import fgrpo_sim.sim.categorical.run as categorical_run
from fgrpo_sim.__main__ import run

def simulate_chunk(*args, **kwargs):
    exec("import os, signal\\nos.kill(os.getpid(), signal.SIGINT)\\nwhile True: pass")

categorical_run.simulate_chunk = simulate_chunk
sys.argv = ["fgrpo", *sys.argv[1:]]
run()
"""


def test_ctrl_c_inside_exec_built_code_of_a_python_m_run_still_exits_130(tmp_path):
    """CPython flags a KeyboardInterrupt that leaves a string's exec()/eval() and no later catch clears the
    flag: under `python -m`, a caught Ctrl-C and sys.exit(130) then died by SIGINT (-2) after the one line."""
    (tmp_path / "ctrl_c_in_exec.py").write_text(CTRL_C_IN_EXEC)
    out = tmp_path / "t.csv"
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(tmp_path), ENV["PYTHONPATH"]])}
    child = start([sys.executable, "-m", "ctrl_c_in_exec", "simulate", "categorical", "--out", str(out), "--n", "4",
                   "--seeds", "0", "--steps", "10", "--num-actions", "20", "--num-correct", "2", "--no-progress"],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    with ended(child):
        _, err = child.communicate(timeout=120)
    assert child.returncode == 130, err
    assert err.splitlines() == [f"fgrpo: interrupted; the finished work is kept in {out}: run the same command "
                                "again to resume from it"]
