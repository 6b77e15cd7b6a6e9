"""The overwrite rule where files are written (issue 38; docs/reliability.md, "overwrite rule"):

- a file a command writes, alone or inside an output folder, is replaced only if this tool made it, also when
  the name is a link to a file elsewhere; else exit 2 naming --force, and the file stays as it was;
- folder outputs (`figures --out`, `llm report --out-dir`, `maze run --out`) know their files by a hidden
  manifest, so a second run replaces its own files, and the committed figures/ folder counts as ours;
- a multi-file output is judged whole before its first file is written: a refusal leaves nothing behind;
- readers never write (`maze table FOLDER`).

The bad inputs of each class are also cases of tests/test_bad_input_corpus.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from test_bad_input_corpus import (EVAL, FOREIGN_PNG, PASSK_OK, REPORT, VERL_CHECKPOINT, _write_files, maze_folder,
                                   manifest, run_case)

REPO = Path(__file__).resolve().parent.parent


def _run(tmp: Path, args: list[str], capsys) -> tuple[int, str]:
    """(exit code, stderr) of the command, run as the corpus runs its cases."""
    outcome, code, err = run_case(tmp, args, {}, capsys)
    assert outcome == "exit", err
    return code, err


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


PASSK = ["passk", "{tmp}/r.jsonl", "--k", "1", "--bootstrap", "0"]
FIGURE = ["figures", "fig4", "--out", "{tmp}/figs"]
MAZE_RUN = ["maze", "run", "--preset", "tiny", "--out", "{tmp}/m", "--no-progress"]

# (id, command, its input files, the output name that is made a link to someone's file outside the folder)
LINKED = [
    ("passk-plot", [*PASSK, "--plot", "{tmp}/out/plot.png"], {"r.jsonl": PASSK_OK}, "out/plot.png"),
    ("eval-meta", EVAL, {"d.jsonl": '{"problem": "1+1?", "answer": "2"}\n'}, "out.jsonl.meta.json"),
    ("report-table-md", REPORT, manifest(), "rep/table.md"),
    ("figures-png", FIGURE, {}, "figs/fig4.png"),
    ("maze-summary", MAZE_RUN, {}, "m/summary.json"),
]


@pytest.mark.parametrize("case_id, args, files, link", LINKED, ids=[c[0] for c in LINKED])
def test_a_link_to_someone_elses_file_is_not_replaced(tmp_path, capsys, case_id, args, files, link):
    _write_files(tmp_path, files)
    theirs = tmp_path / "elsewhere" / "theirs.bin"
    theirs.parent.mkdir()
    theirs.write_bytes(b"someone's data\n")
    (tmp_path / link).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / link).symlink_to(theirs)
    code, err = _run(tmp_path, args, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    if case_id in FOLDER_CASES:  # inside an output folder a link is never written through, --force or not
        assert f"{tmp_path / link} is a link (to {theirs}); a file in an output folder is never written" in err
    else:
        assert "exists and was not written by this command; pass --force" in err
    assert theirs.read_bytes() == b"someone's data\n"
    assert (tmp_path / link).is_symlink()


FOLDER_CASES = ("report-table-md", "figures-png", "maze-summary")
REPORT_FORCE = [*REPORT, "--force"]
FIGURE_FORCE = [*FIGURE, "--force"]


def _outside(tmp: Path) -> Path:
    theirs = tmp / "elsewhere" / "theirs.txt"
    theirs.parent.mkdir(exist_ok=True)
    theirs.write_bytes(b"someone's data\n")
    return theirs


def _folder_of(args: list[str], tmp: Path) -> Path:
    return Path(args[args.index("--out-dir" if "--out-dir" in args else "--out") + 1].replace("{tmp}", str(tmp)))


@pytest.mark.parametrize("args", [FIGURE_FORCE, REPORT_FORCE], ids=["figures", "report"])
def test_a_manifest_that_is_a_link_out_is_refused_even_with_force(tmp_path, capsys, args):
    """Issue 43: with --force the manifest update wrote JSON through the link into someone's file."""
    from fgrpo_sim.ownership import MANIFEST

    _write_files(tmp_path, manifest())
    theirs = _outside(tmp_path)
    folder = _folder_of(args, tmp_path)
    folder.mkdir()
    (folder / MANIFEST).symlink_to(theirs)
    code, err = _run(tmp_path, args, capsys)
    assert code == 2 and err.strip().splitlines() == [
        f"fgrpo: error: {args[args.index(str(folder).replace(str(tmp_path), '{tmp}')) - 1]} {folder / MANIFEST} is a "
        f"link (to {theirs}); its manifest in an output folder is never written through a link: remove the link, or "
        "choose another folder"], err
    assert theirs.read_bytes() == b"someone's data\n"
    assert sorted(p.name for p in folder.iterdir()) == [MANIFEST]  # nothing written before the refusal


@pytest.mark.parametrize("args, name", [(FIGURE, "fig4.png"), (REPORT, "table.md")], ids=["figures", "report"])
def test_a_listed_entry_that_links_out_is_not_written_through(tmp_path, capsys, args, name):
    """Issue 43: a forged entry (a link to someone's file, whose hash the manifest lists) was written through."""
    from fgrpo_sim.ownership import MANIFEST, _sha256

    _write_files(tmp_path, manifest())
    theirs = _outside(tmp_path)
    folder = _folder_of(args, tmp_path)
    folder.mkdir()
    (folder / name).symlink_to(theirs)
    (folder / MANIFEST).write_text(json.dumps({"written_by": "fgrpo-sim", "files": {name: _sha256(theirs)}}))
    for force in ([], ["--force"]):
        code, err = _run(tmp_path, [*args, *force], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"{folder / name} is a link (to {theirs}); a file in an output folder is never written through" in err
        assert theirs.read_bytes() == b"someone's data\n"
        assert sorted(p.name for p in folder.iterdir()) == sorted([MANIFEST, name])


@pytest.mark.parametrize("planted", ["link", "folder"])
@pytest.mark.parametrize("args", [FIGURE, REPORT], ids=["figures", "report"])
@pytest.mark.parametrize("existing", [False, True], ids=["new-folder", "existing-folder"])
def test_a_planted_manifest_lock_is_refused_before_the_first_write(tmp_path, capsys, planted, args, existing):
    """Issue 43: fig4.png / table.md was written first, then the manifest update failed with a raw errno,
    leaving the file unlisted (and, in an existing folder, only after the work was done)."""
    from fgrpo_sim.atomic_io import hidden_name
    from fgrpo_sim.ownership import MANIFEST

    _write_files(tmp_path, manifest())
    folder = _folder_of(args, tmp_path)
    if existing:
        code, err = _run(tmp_path, args, capsys)
        assert code == 0, err
    theirs = _outside(tmp_path)
    lock = folder / hidden_name(MANIFEST, ".lock")
    lock.parent.mkdir(exist_ok=True)
    if planted == "link":
        lock.symlink_to(theirs)
    else:
        lock.mkdir()
    before = _snapshot(folder)
    code, err = _run(tmp_path, args, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{lock} is a {planted}" in err and ("remove the link" if planted == "link" else "remove it") in err
    assert "Errno" not in err
    assert _snapshot(folder) == before  # nothing written, nothing left unlisted
    assert theirs.read_bytes() == b"someone's data\n"


def test_a_fifo_manifest_is_refused_without_hanging(tmp_path, capsys):
    """Issue 43: a FIFO named .fgrpo-sim-outputs.json made `figures --out` hang in its open. A helper thread
    feeds any reader that does open it (the old code), so a regression fails on its message instead of hanging."""
    import contextlib
    import threading

    from fgrpo_sim.ownership import MANIFEST

    folder = tmp_path / "figs"
    folder.mkdir()
    fifo = folder / MANIFEST
    os.mkfifo(fifo)
    done = threading.Event()

    def feed():
        while not done.is_set():
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO until a reader has it open
            except OSError:
                done.wait(0.05)
                continue
            with contextlib.suppress(OSError):
                os.write(fd, b"{}")
            os.close(fd)  # and on: a reader may open it again

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        code, err = _run(tmp_path, FIGURE_FORCE, capsys)
    finally:
        done.set()
        feeder.join()
    assert code == 2 and err.strip().splitlines() == [
        f"fgrpo: error: --out {fifo} is a FIFO, where its manifest belongs; remove it, or choose another folder"]
    assert sorted(p.name for p in folder.iterdir()) == [MANIFEST]


@pytest.mark.parametrize("planted", ["link", "folder"])
def test_a_planted_output_lock_is_refused_and_never_followed(tmp_path, capsys, planted):
    """The lock of a resumable output (output_lock: `.out.csv.lock`) that is a link or a folder is refused in
    one line before the run; a link is never followed to someone's file."""
    from test_bad_input_corpus import CAT

    theirs = _outside(tmp_path)
    lock = tmp_path / ".out.csv.lock"
    lock.symlink_to(theirs) if planted == "link" else lock.mkdir()
    code, err = _run(tmp_path, CAT, capsys)
    assert code == 2 and err.strip().splitlines() == [
        f"fgrpo: error: --out {tmp_path}/out.csv: its lock file {lock} is a {planted}, not one this tool made; "
        "remove it and run again"], err
    assert theirs.read_bytes() == b"someone's data\n"
    assert not (tmp_path / "out.csv").exists()


def test_a_refused_report_writes_none_of_its_files(tmp_path, capsys):
    """selection.json is a folder (or table.tex someone's): judged before table.md is written."""
    _write_files(tmp_path, {**manifest(), "rep/selection.json/keep.txt": "x"})
    code, err = _run(tmp_path, REPORT, capsys)
    assert code == 2 and "selection.json is a folder" in err
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == ["selection.json"]


def test_a_refused_figure_writes_neither_file(tmp_path, capsys):
    _write_files(tmp_path, {"figs/fig4.pdf": "%PDF mine\n"})
    code, err = _run(tmp_path, [*FIGURE, "fig1a"], capsys)  # fig1a would come first: nothing is drawn either
    assert code == 2 and "fig4.pdf exists and was not written by this command" in err
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["fig4.pdf"]


def test_maze_table_only_reads_its_folder(tmp_path, capsys):
    """Not even its own summary.json: the folder's files are byte for byte what they were (a read-only
    results folder works), and a stray summary.json is neither read nor replaced."""
    _write_files(tmp_path, {**maze_folder(), "m/summary.json": "my notes\n"})
    before = _snapshot(tmp_path / "m")
    code, err = _run(tmp_path, ["maze", "table", "{tmp}/m"], capsys)
    assert code == 0, err
    assert _snapshot(tmp_path / "m") == before
    assert not list((tmp_path / "m").glob(".*"))


def test_our_own_outputs_are_replaced_on_a_second_run(tmp_path, capsys):
    """passk --plot, llm report --out-dir and figures --out, each twice into the same place: exit 0."""
    _write_files(tmp_path, {**manifest(), "r.jsonl": PASSK_OK})
    for args in ([*PASSK, "--plot", "{tmp}/p.png"], REPORT[:-2] + ["--no-progress"], FIGURE):
        for _ in range(2):
            code, err = _run(tmp_path, args, capsys)
            assert code == 0, (args, err)
    from fgrpo_sim.ownership import MANIFEST, is_our_png

    assert is_our_png(tmp_path / "p.png")
    recorded = json.loads((tmp_path / "rep" / MANIFEST).read_text())["files"]
    assert sorted(recorded) == sorted(p.name for p in (tmp_path / "rep").iterdir() if p.name != MANIFEST)


def test_a_changed_file_in_an_output_folder_is_no_longer_ours(tmp_path):
    """The manifest records content: an edited file is the user's now; force replaces it."""
    from fgrpo_sim.ownership import OutputFolder

    folder = OutputFolder(tmp_path / "d", "--out-dir")
    folder.write_text("table.md", "ours\n")
    folder.write_text("table.md", "ours again\n")  # our own: replaced
    (tmp_path / "d" / "table.md").write_text("edited by hand\n")
    with pytest.raises(ValueError, match="--out-dir .*table.md exists and was not written by this command; pass --force"):
        folder.check(["table.md"])
    with pytest.raises(ValueError, match="pass --force"):
        folder.write_text("table.md", "ours\n")
    assert (tmp_path / "d" / "table.md").read_text() == "edited by hand\n"
    OutputFolder(tmp_path / "d", "--out-dir", force=True).write_text("table.md", "ours\n")
    folder.check(["table.md"])  # recorded again: ours


def test_a_maze_folder_written_before_manifests_is_still_ours(tmp_path):
    """Its summary.json and timings.json are recognised by their keys."""
    from fgrpo_sim.maze.experiment import REWRITTEN, results_folder

    _write_files(tmp_path, {"m/summary.json": {"preset": {}, "sft": {}, "cells": []}, "m/timings.json": {"cells": []}})
    results_folder(tmp_path / "m").check(REWRITTEN)


def test_the_committed_figures_count_as_ours():
    """`make figures-commit` (fgrpo figures --out figures) on a fresh clone replaces the committed copies,
    made before manifests existed: figures/ holds the manifest of exactly those files."""
    from fgrpo_sim.figures.registry import figure_folder
    from fgrpo_sim.ownership import MANIFEST

    folder = REPO / "figures"
    files = sorted(p.name for p in folder.iterdir() if p.suffix in (".png", ".pdf"))
    assert sorted(json.loads((folder / MANIFEST).read_text())["files"]) == files
    figure_folder(folder).check(files)


def test_export_verl_refuses_a_dangling_link_out_in_one_line(tmp_path, capsys):
    _write_files(tmp_path, VERL_CHECKPOINT)
    (tmp_path / "hf").symlink_to(tmp_path / "nowhere" / "hf")
    code, err = _run(tmp_path, ["llm", "export-verl", "{tmp}/ck", "{tmp}/hf"], capsys)
    assert code == 2 and err.strip().splitlines() == [
        f"fgrpo: error: OUT {tmp_path}/hf is a link to {tmp_path}/nowhere/hf, which is not an existing folder; "
        "give a new folder"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_the_atomic_writer_enforces_the_rule(tmp_path):
    """A writer that passes its recogniser cannot replace someone's file, checked or not by its command."""
    from fgrpo_sim.atomic_io import write_text_atomic

    theirs = tmp_path / "notes.json"
    theirs.write_text("mine\n")
    with pytest.raises(ValueError, match="--out .*notes.json exists and was not written by this command; pass --force"):
        write_text_atomic(theirs, "{}", is_ours=lambda p: False, name="--out")
    assert theirs.read_text() == "mine\n" and os.listdir(tmp_path) == ["notes.json"]
    write_text_atomic(theirs, "{}", is_ours=lambda p: False, force=True)
    assert theirs.read_text() == "{}"


#: Writers that pass no recogniser, and why they cannot replace someone's file. A new writer passes
#: `is_ours=` (or writes through an ownership.OutputFolder), or is listed here with its reason.
UNCHECKED_WRITERS = {
    "fgrpo_sim/maze/experiment.py": "config.json (a foreign or other-settings one is refused first) and pieces "
                                    "(written only where none exists)",
    "fgrpo_sim/llm/training/metrics_log.py": "trims the trainer's own metrics.jsonl of a resumed run",
    "fgrpo_sim/llm/training/data.py": "llm prepare-data --out: check_replaceable in the command, before work",
    "fgrpo_sim/rehearsal/driver.py": "llm rehearse --out: refused unless new or empty",
    "fgrpo_sim/rehearsal/inputs.py": "llm rehearse --out: refused unless new or empty",
    "fgrpo_sim/verl/rehearsal.py": "inside the rehearsal's own new folder",
    "fgrpo_sim/sim/categorical/run.py": "simulate categorical --out: resumes only a categorical table (checked row by row)",
    "fgrpo_sim/commands/simulate_population.py": "--out: check_replaceable in the command, before work",
    "fgrpo_sim/ownership.py": "the folder's own manifest (refused first when not ours)",
    "fgrpo_sim/sim/population_resume.py": "simulate population --out: check_replaceable in the command, before work; "
                                          "its hidden sidecar (.OUT.fgrpo-population.json) is refused first when a link",
    "fgrpo_sim/sim/smoothing_study.py": "python -m fgrpo_sim.sim.smoothing_study RECORD: a module command that "
                                        "regenerates one committed record (docs/population.md), no CLI output",
}


def test_every_atomic_writer_passes_a_recogniser_or_says_why_not():
    import ast

    writers = {"atomic_path", "write_text_atomic", "write_bytes_atomic"}
    unchecked = set()
    for path in sorted((REPO / "fgrpo_sim").rglob("*.py")):
        rel = str(path.relative_to(REPO))
        if rel == "fgrpo_sim/atomic_io.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in writers:
                if not any(k.arg in ("is_ours", None) for k in node.keywords):  # None: **rule passed on
                    unchecked.add(rel)
    assert unchecked <= set(UNCHECKED_WRITERS), sorted(unchecked - set(UNCHECKED_WRITERS))
    assert set(UNCHECKED_WRITERS) <= unchecked, "listed but now checked: " + ", ".join(set(UNCHECKED_WRITERS) - unchecked)
