"""The README's quickstart runs as written (issue 32): the Python example trains, the install line names
extras that exist, the verl keys are the ones the verl recipes use, and the citation files agree with
pyproject.toml.

Convention (DEVELOPERS.md, "Doc commands"): a ```python block right after `<!-- doc-test: python -->` is
run as a script in an empty folder, with the repository on PYTHONPATH, and must exit 0.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.extras import require

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def python_blocks(text: str) -> list[str]:
    """The code of every ```python block marked `<!-- doc-test: python -->`."""
    blocks = re.findall(r"^<!-- doc-test: python -->\n```python\n(.*?)^```$", text, flags=re.M | re.S)
    return blocks


def quickstart() -> str:
    return README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]


def test_the_quickstart_holds_a_marked_python_example():
    blocks = python_blocks(quickstart())
    assert len(blocks) == 1, "the README quickstart needs one <!-- doc-test: python --> block"
    assert "FocalGRPOTrainer" in blocks[0] and "focal_gamma" in blocks[0]
    assert len(blocks[0].strip().splitlines()) <= 16, "a quickstart example a reader takes in at a glance"


def test_the_quickstart_python_example_trains(tmp_path):
    for module in ("trl", "datasets", "transformers"):
        require(module)
    (code,) = python_blocks(quickstart())
    script = tmp_path / "quickstart.py"
    script.write_text(code + "\nprint('FINAL', trainer.state.global_step, "
                             "[h['focal/gamma'] for h in trainer.state.log_history if 'focal/gamma' in h][-1])\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    # -W error: a FutureWarning the example prints (issue 39: transformers' deprecated checkpointing names) fails it
    done = subprocess.run([sys.executable, "-W", "error::FutureWarning", str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    # the steps the example asks for ran, with focal weighting on, and the run folder is where it says
    steps = int(re.search(r"max_steps=(\d+)", code).group(1))
    gamma = float(re.search(r"focal_gamma=([\d.]+)", code).group(1))
    assert f"FINAL {steps} {gamma}" in done.stdout
    assert (tmp_path / "runs" / "quickstart").is_dir()


def test_the_install_line_names_extras_that_exist():
    """The quickstart opens with one install route (`make install`, a target the Makefile has); the pip route
    beside it names extras pyproject.toml defines and a constraints file that exists."""
    first = next(line for line in quickstart().splitlines() if line.strip() and not line.startswith(("#", "`")))
    assert first.split("#")[0].strip() == "make install", "the quickstart opens with one install line"
    assert re.search(r"^install:", (ROOT / "Makefile").read_text(), re.M)
    pips = re.findall(r"pip install ([^`]+)`", quickstart())
    assert pips, "the quickstart gives the pip route too"
    for line in pips:
        extras = re.search(r'\[([\w,]+)\]', line).group(1).split(",")
        assert set(extras) <= set(PYPROJECT["project"]["optional-dependencies"]), line
    for name in re.findall(r"-c (\S+)", quickstart()):
        assert (ROOT / name).is_file(), name


def test_the_verl_lines_name_a_launcher_that_takes_them():
    """Issue 39: the bare keys failed under verl's own launcher (`Key 'focal_gamma' is not in struct`): ours takes
    them as they are, verl's with a `+` (tests/test_verl_plugin.py composes both)."""
    lines = [line for line in quickstart().splitlines() if "algorithm.focal_gamma" in line]
    assert lines and all(line.startswith("python -m fgrpo_sim.verl.main_ppo algorithm.")
                         or (line.startswith("python -m verl.trainer.main_ppo ") and " +algorithm.focal_gamma=" in line)
                         for line in lines), lines


def test_the_verl_keys_are_the_recipe_keys():
    """The two keys the quickstart gives are what recipes/verl/f-grpo.sh passes, and the plugin defines them."""
    keys = set(re.findall(r"(algorithm\.[\w.]+=\S+)", quickstart()))
    assert len(keys) == 2, keys
    recipe = (ROOT / "recipes" / "verl" / "f-grpo.sh").read_text()
    plugin = "\n".join(p.read_text() for p in (ROOT / "fgrpo_sim" / "verl").rglob("*.py"))
    for key in keys:
        assert key in recipe, key
        name, value = key.split("=")
        assert name.split(".")[-1] in plugin and (value.replace(".", "").isdigit() or value in plugin), key


def test_licence_and_citation_agree_with_pyproject():
    version = PYPROJECT["project"]["version"]
    assert PYPROJECT["project"]["license"] == {"text": "MIT"}
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert str(cff["version"]) == version and cff["license"] == "MIT"
    bib = README.split("## Citation", 1)[1].split("\n## ", 1)[0]
    entries = re.findall(r"^@\w+\{[\w]+,.*?^\}$", bib, flags=re.M | re.S)
    assert len(entries) == 2, "BibTeX for the paper and for the toolkit"
    for entry in entries:
        assert entry.count("{") == entry.count("}"), entry
    assert "2602.06717" in entries[0] and f"version = {{{version}}}" in entries[1]
    paper = cff["preferred-citation"]
    assert [a["family-names"] for a in paper["authors"]][0] in entries[0]
