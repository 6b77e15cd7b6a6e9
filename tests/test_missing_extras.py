"""A command run without its extra says so in one line, with the install command, and exits 2 (issue 39).

`make figures` builds .venv with the base dependencies only; the LLM commands and `maze run` then used to die
with a 30-line ModuleNotFoundError (exit 1). Each command here runs in a subprocess whose importer refuses every
package of the llm extra, as a base install would.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fgrpo_sim.extras import EXTRA_OF, missing_extra_line

REPO = Path(__file__).resolve().parents[1]
BLOCKER = """
import importlib.abc, sys
BLOCKED = set(sys.argv[1].split(","))

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:  # what the import system raises for an absent package
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
import importlib.util
_find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: (None if name.split(".")[0] in BLOCKED
                                                      else _find_spec(name, package))
from fgrpo_sim.cli import main
sys.argv = ["fgrpo", *sys.argv[2:]]
main()
"""
LLM_MODULES = ",".join(m for m, extra in EXTRA_OF.items() if extra == "llm")
INSTALL = 'pip install "fgrpo-sim[llm]" (in a clone: make install)'

COMMANDS = {
    "llm train": ["llm", "train", "--config", "qwen2.5-7b/f-grpo.yaml", "--dry-run"],
    "llm recipes": ["llm", "recipes"],
    "llm prepare-data": ["llm", "prepare-data", "deepscaler.json", "--out", "prepared.jsonl"],
    "llm rehearse": ["llm", "rehearse", "--out", "rehearsal"],
    "llm eval": ["llm", "eval", "--model", "some/model", "--data", "problems.jsonl", "--out", "eval"],
    "llm dnll-rare": ["llm", "dnll-rare", "--trajectories", "problems.jsonl", "--base", "some/model",
                      "--model", "some/model"],
    "maze run": ["maze", "run", "--yes", "--preset", "cpu", "--out", "maze"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_without_its_extra_is_one_line_and_exit_2(name, tmp_path):
    (tmp_path / "problems.jsonl").write_text('{"problem": "1+1", "answer": "2", "completion": "2", "correct": true}\n')
    (tmp_path / "deepscaler.json").write_text('[{"problem": "1+1", "answer": "2"}]\n')
    proc = subprocess.run([sys.executable, "-c", BLOCKER, LLM_MODULES, *COMMANDS[name]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert re.fullmatch(r"fgrpo: error: this command needs the llm extra \(\w+ is not installed\): .*", lines[0])
    assert lines[0].endswith(INSTALL)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deepscaler.json", "problems.jsonl"], "it wrote files"


def test_a_missing_module_of_no_extra_keeps_its_traceback():
    assert missing_extra_line("fgrpo_sim.no_such_module") is None
    assert missing_extra_line(None) is None
    assert missing_extra_line("transformers.models.qwen2").startswith("this command needs the llm extra (transformers ")


def _top_level_modules() -> dict[str, list[str]]:
    """distribution name (normalised) -> its top-level modules, for the installed distributions"""
    out: dict[str, list[str]] = {}
    for module, dists in importlib.metadata.packages_distributions().items():
        for dist in dists:
            out.setdefault(re.sub(r"[-_.]+", "-", dist).lower(), []).append(module)
    return out


def test_every_installed_extra_requirement_has_a_module_in_the_table():
    """A dependency added to an extra in pyproject.toml must be in EXTRA_OF, or its absence goes back to a
    traceback. Checked for the extras' distributions installed in this environment."""
    modules = _top_level_modules()
    requirements = importlib.metadata.requires("fgrpo-sim") or []
    checked = 0
    for requirement in requirements:
        found = re.search(r"extra\s*==\s*['\"]([\w-]+)['\"]", requirement)
        if found is None or found.group(1) == "dev":
            continue
        dist = re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)).lower()
        if dist not in modules:
            continue  # not installed here
        ours = [m for m in modules[dist] if m in EXTRA_OF]  # (verl re-lists llm's transformers: llm names it)
        assert ours, f"{dist} (extra {found.group(1)}) brings {modules[dist]}: add its module to fgrpo_sim/extras.py"
        checked += 1
    assert checked >= 5  # the llm extra at least (make test installs it)
