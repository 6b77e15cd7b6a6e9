"""The built wheel, installed outside the clone, does what the clone does (issue 39).

The wheel is built once (pip, no build isolation: no network) and installed with --no-deps into a folder of its
own; every command then runs from an empty folder outside the repository with that folder first on the path, so
nothing the clone provides (its recipes/, its committed results) can stand in for what the wheel ships.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fgrpo_sim.packaged import recipes_root, resolve_shipped

REPO = Path(__file__).resolve().parents[1]

def _not_sources(folder: str, names: list[str]) -> set[str]:
    """What the copy of the repository leaves out: environments, caches, build and run outputs, git."""
    skipped = {n for n in names if n.startswith(".venv") or n.endswith(".egg-info")
               or n in ("__pycache__", ".pytest_cache", ".hypothesis")}
    if Path(folder) == REPO:
        skipped |= {".git", "build", "runs", "figures"} & set(names)  # top level only (fgrpo_sim/figures stays)
    return skipped


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """The wheel's file names, the folder it was installed into and an empty working folder outside the clone."""
    pytest.importorskip("setuptools", reason="building the wheel without network needs setuptools in this venv")
    root = tmp_path_factory.mktemp("wheel")
    # from a copy of the sources: setuptools builds in place and never empties its build/lib, so a file since
    # moved or deleted would still ride along in a wheel built from the working tree
    source = root / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=_not_sources)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(root / "dist"), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    wheel = next((root / "dist").glob("fgrpo_sim-*.whl"))
    site = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site),
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    work = root / "work"
    work.mkdir()
    return {"names": zipfile.ZipFile(wheel).namelist(), "site": site, "work": work}


def run_installed(installed: dict, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(installed["site"]), "MPLBACKEND": "Agg",
           "FGRPO_CACHE_DIR": str(installed["work"] / "cache")}
    return subprocess.run([sys.executable, *args], cwd=installed["work"], env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_installed_package_is_the_wheel_not_the_clone(installed):
    proc = run_installed(installed, "-c", "import fgrpo_sim; print(fgrpo_sim.__file__)")
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()).is_relative_to(installed["site"]), proc.stdout


def test_wheel_ships_every_recipe_and_committed_result(installed):
    names = set(installed["names"])
    shipped = {p.relative_to(REPO).as_posix() for folder in ("fgrpo_sim/recipes", "fgrpo_sim/results")
               for p in (REPO / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert shipped and not shipped - names, sorted(shipped - names)


def test_recipes_list_from_outside_the_clone(installed):
    pytest.importorskip("yaml")
    proc = run_installed(installed, "-m", "fgrpo_sim", "llm", "recipes", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert {r["model"] for r in rows} == {"qwen2.5-7b", "qwen3-4b-base", "llama-3.2-3b-instruct"}
    assert any(r["command"] == "fgrpo llm train --config recipes/qwen2.5-7b/f-grpo.yaml" for r in rows)


def test_dry_run_resolves_a_shipped_recipe_by_name(installed):
    pytest.importorskip("trl")
    proc = run_installed(installed, "-m", "fgrpo_sim", "llm", "train", "--config", "qwen2.5-7b/f-grpo.yaml",
                         "--dry-run", "--json", "--num-processes", "16")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert plan["config"]["focal_gamma"] == 0.5
    assert plan["config"]["gradient_accumulation_steps"] is not None


# How a name resolves (in this process: no wheel needed)

def test_a_recipe_name_resolves_with_or_without_the_docs_prefix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shipped = recipes_root() / "qwen2.5-7b" / "f-grpo.yaml"
    assert resolve_shipped("qwen2.5-7b/f-grpo.yaml") == shipped
    assert resolve_shipped("recipes/qwen2.5-7b/f-grpo.yaml") == shipped


def test_a_users_own_recipe_wins_over_the_shipped_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    own = Path("recipes/qwen2.5-7b/f-grpo.yaml")
    own.parent.mkdir(parents=True)
    own.write_text("extends: base.yaml\n")
    assert resolve_shipped(str(own)) == own


def test_a_missing_recipe_keeps_what_the_user_typed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_shipped("qwen2.5-7b/no-such.yaml") == Path("qwen2.5-7b/no-such.yaml")
    assert resolve_shipped("../qwen2.5-7b/f-grpo.yaml") == Path("../qwen2.5-7b/f-grpo.yaml")


def test_figures_that_read_committed_results_draw(installed):
    """The default figures whose data is a committed result (not a simulation run on the spot)."""
    out = installed["work"] / "figures"
    proc = run_installed(installed, "-m", "fgrpo_sim", "figures", "population-group-size", "population-group-size-grid",
                         "fig6-maze", "fig7-maze", "table2-depth", "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    for name in ("population-group-size", "population-group-size-grid", "fig6-maze", "fig7-maze", "table2-depth"):
        assert (out / f"{name}.png").stat().st_size > 10_000, name
    assert not (installed["work"] / "runs").exists(), "a figure ran its experiment instead of reading the results"


def test_a_committed_record_prints_from_outside_the_clone(installed):
    """The docs' group-size tables come from `--from RECORD`; a wheel user gets the same table by name."""
    proc = run_installed(installed, "-m", "fgrpo_sim", "simulate", "group-size", "--from",
                         "population-group-size.jsonl", "--rare-mass", "0.02", "--markdown", "--brief")
    assert proc.returncode == 0, proc.stderr
    assert "|Adam, orthogonal|" in proc.stdout


def test_theory_numbers_come_from_the_shipped_generated_source(installed):
    """The lambdified closed forms are package modules (theory/_generated/), not a cache: the wheel carries every
    one, and a theory command needs no sympy to derive and writes nothing to the cache folder (issue 43)."""
    from fgrpo_sim.theory import lambdified

    shipped = {Path(n).stem for n in installed["names"] if n.startswith("fgrpo_sim/theory/_generated/")}
    assert set(lambdified.DERIVATIONS) <= shipped
    proc = run_installed(installed, "-m", "fgrpo_sim", "theory", "tail-miss", "--n", "8", "--mu", "0.5", "--tau",
                         "0.05", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["probability"] == pytest.approx(0.95**8 - 0.45**8 - 0.5**8, rel=1e-12)
    assert not list((installed["work"] / "cache").glob("fgrpo-sim/lambdified-*"))


def test_a_users_own_simulation_draws_from_outside_the_clone(installed):
    """Issue 46: `fgrpo figures fig2 --from my.csv` after `fgrpo simulate categorical --out my.csv`, from the wheel."""
    sim = run_installed(installed, "-m", "fgrpo_sim", "simulate", "categorical", "--out", "my.csv", "--n", "2,64",
                        "--seeds", "0", "--steps", "20", "--num-actions", "500", "--num-correct", "50", "--device",
                        "cpu", "--no-progress")
    assert sim.returncode == 0, sim.stderr
    out = installed["work"] / "own-figures"
    proc = run_installed(installed, "-m", "fgrpo_sim", "figures", "fig2", "--from", "my.csv", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert (out / "fig2.png").stat().st_size > 10_000


def test_shipped_data_and_a_near_miss_by_name_from_outside_the_clone(installed):
    """Issue 46: `tiny/arith.jsonl` is found by name wherever a path is taken, like `--config tiny/f-grpo.yaml`;
    a misspelt recipe name gets the shipped name it resembles."""
    pytest.importorskip("math_verify")
    proc = run_installed(installed, "-m", "fgrpo_sim", "llm", "prepare-data", "tiny/arith.jsonl", "--out",
                         "prepared.jsonl", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_read"] == len((recipes_root() / "tiny" / "arith.jsonl").read_text().splitlines())
    pytest.importorskip("trl")
    typo = run_installed(installed, "-m", "fgrpo_sim", "llm", "train", "--config", "qwen2.5-7b/f-grp.yaml", "--dry-run")
    assert typo.returncode == 2 and "did you mean qwen2.5-7b/f-grpo.yaml?" in typo.stderr, typo.stderr
