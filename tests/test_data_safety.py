"""Data safety of every output (docs/reliability.md): links and devices, locks between concurrent
writers (two real processes), resume that validates what it keeps, repeated list values, stale temp
files of killed runs, and non-scalar rows in `llm prepare-data`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pandas as pd
import pytest
from children import ended, start

import fgrpo_sim.atomic_io as atomic_io
from fgrpo_sim.atomic_io import atomic_path, check_writable, remove_stale_temp_files, write_text_atomic
from fgrpo_sim.output_lock import lock_path_for, output_lock
from fgrpo_sim.validation import parse_list

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
TINY_CATEGORICAL = ["--num-actions", "100", "--num-correct", "10", "--n", "2,4", "--seeds", "0",
                    "--steps", "4", "--stride", "2", "--no-progress"]


def _one_line_error(res, needle: str) -> None:
    assert res.exit_code == 2, (res.stdout, res.stderr)
    assert needle in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and res.stderr.strip().count("\n") == 0, res.stderr


def _python(code: str, *args: str) -> subprocess.Popen:
    """A second real process running `code` (stdout piped, so the test can wait for its first line); its
    signals at their defaults (children.start), ended by the test (`with ended(proc)`, or lock_holder)."""
    return start([sys.executable, "-c", code, *map(str, args)], env=ENV, cwd=ROOT,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _fgrpo(*args) -> subprocess.Popen:
    return start([sys.executable, "-m", "fgrpo_sim.cli", *map(str, args)], env=ENV, cwd=ROOT,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _read_until(stream, needle: str, timeout: float = 120.0) -> str:
    """Lines of `stream` up to the first containing `needle` (fails after `timeout` seconds or at EOF)."""
    import threading

    seen: list[str] = []
    found = threading.Event()

    def reader() -> None:
        for line in stream:
            seen.append(line)
            if needle in line:
                found.set()
                return
        found.set()

    threading.Thread(target=reader, daemon=True).start()
    assert found.wait(timeout) and seen and needle in seen[-1], "".join(seen)
    return "".join(seen)


HOLD_LOCK = """
import sys, time
from fgrpo_sim.output_lock import output_lock
with output_lock(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def lock_holder():
    """Start a process that holds OUT's lock for `seconds`; it is killed at the end of the test."""
    procs = []

    def start(out: Path, seconds: float = 60.0) -> subprocess.Popen:
        proc = _python(HOLD_LOCK, out, seconds)
        procs.append(proc)
        assert proc.stdout.readline().strip() == "locked", proc.stderr.read()
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


# --- outputs through links and devices --------------------------------------------------------------

def test_symlinked_output_is_written_through_to_its_target(tmp_path):
    real = tmp_path / "data" / "result.txt"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "latest.txt"
    link.symlink_to(real)
    write_text_atomic(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link is kept, not replaced by a file
    assert real.read_text() == "new\n"
    assert sorted(p.name for p in real.parent.iterdir()) == ["result.txt"]  # the temp file went next to the target
    dangling = tmp_path / "later.txt"
    dangling.symlink_to(tmp_path / "data" / "created.txt")
    write_text_atomic(dangling, "made\n")  # a link to a file not made yet: the target is created
    assert dangling.is_symlink() and (tmp_path / "data" / "created.txt").read_text() == "made\n"


def test_devices_fifos_and_folders_are_refused_untouched(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    link_to_null = tmp_path / "null.json"
    link_to_null.symlink_to("/dev/null")
    for path, needle in ((Path("/dev/null"), "/dev/null exists and is a device"),
                         (Path("/dev/full"), "/dev/full exists and is a device"),
                         (fifo, "pipe.csv exists and is a FIFO"),
                         (link_to_null, "is a device (through the link to /dev/null)"),
                         (tmp_path, "is a folder")):
        with pytest.raises(ValueError, match="give a"):
            check_writable(path, "--out")
        with pytest.raises(ValueError) as err:
            write_text_atomic(path, "x")
        assert needle in str(err.value)
    assert Path("/dev/null").is_char_device() and Path("/dev/full").is_char_device()
    assert fifo.is_fifo() and link_to_null.is_symlink()


def test_cli_refuses_a_device_or_fifo_out_with_one_line(run_cli, tmp_path):
    fifo = tmp_path / "r.csv"
    os.mkfifo(fifo)
    _one_line_error(run_cli("simulate", "categorical", "--out", fifo, *TINY_CATEGORICAL), "is a FIFO")
    results = tmp_path / "a.jsonl"
    results.write_text('{"problem_id": "p", "n": 4, "c": 1}\n')
    _one_line_error(run_cli("passk", results, "--out", "/dev/null"), "/dev/null exists and is a device")
    _one_line_error(run_cli("passk", results, "--out", "/dev/full"), "/dev/full exists and is a device")
    assert fifo.is_fifo()


# --- stale temp files --------------------------------------------------------------------------------

HOLD_TEMP = """
import sys, time
from fgrpo_sim.atomic_io import atomic_path
with atomic_path(sys.argv[1]) as tmp:
    tmp.write_text("half")
    print(tmp, flush=True)
    time.sleep(60)
"""


def test_leftover_of_a_killed_writer_is_removed_but_a_live_one_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic_io, "STALE_TEMP_AGE_S", 0.0)
    target = tmp_path / "fig.png"
    writer = _python(HOLD_TEMP, target)
    try:
        tmp = Path(writer.stdout.readline().strip())
        assert tmp.name.startswith(".fig.png.") and tmp.exists()
        assert remove_stale_temp_files(tmp_path) == [] and tmp.exists()  # a concurrent run's live temp file
        write_text_atomic(target, "mine\n")  # our own write of the same target leaves it alone too
        assert tmp.exists()
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.communicate()
    assert tmp.exists()  # the kill left it behind
    foreign = tmp_path / ".notes.txt"
    foreign.write_text("not ours")
    assert remove_stale_temp_files(tmp_path) == [tmp]
    assert not tmp.exists() and foreign.exists() and target.read_text() == "mine\n"


def test_young_temp_files_are_kept_and_a_write_cleans_its_own_leftovers(tmp_path):
    young = tmp_path / ".out.csv.abcd1234.tmp.csv"
    young.write_text("x")
    assert remove_stale_temp_files(tmp_path) == []  # could be a writer that has not locked it yet
    old = tmp_path / ".out.csv.zzzz9999.tmp.csv"
    old.write_text("x")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    other = tmp_path / ".other.csv.zzzz9999.tmp.csv"
    other.write_text("x")
    os.utime(other, (time.time() - 3600, time.time() - 3600))
    write_text_atomic(tmp_path / "out.csv", "a\n")
    assert not old.exists() and young.exists() and other.exists()  # only this target's stale leftovers


def test_figures_run_removes_hidden_temp_files_of_a_killed_run(run_cli, tmp_path):
    out, data = tmp_path / "figs", tmp_path / "data"
    out.mkdir()
    data.mkdir()
    leftovers = [out / ".fig2.png.k1ll3d00.tmp.png", out / ".fig1a.pdf.abcdefgh.tmp.pdf",
                 data / ".fig2-quick.parquet.q_w_e_r_.tmp.parquet"]
    for path in leftovers:
        path.write_bytes(b"half a figure")
        os.utime(path, (time.time() - 600, time.time() - 600))
    res = run_cli("figures", "fig1a", "--out", out, "--data-dir", data, "--no-progress")
    assert res.exit_code == 0, res.stderr
    assert not any(p.exists() for p in leftovers)
    assert sorted(p.name for p in out.iterdir()) == [".fgrpo-sim-outputs.json", "fig1a.pdf", "fig1a.png"]  # + manifest
    again = tmp_path / "again"
    assert run_cli("figures", "fig1a", "--out", again, "--data-dir", data, "--no-progress").exit_code == 0
    for name in ("fig1a.pdf", "fig1a.png"):  # same code, same figure: byte-identical files
        assert (again / name).read_bytes() == (out / name).read_bytes()


def test_population_table_is_byte_identical_for_the_same_seed(run_cli, tmp_path):
    args = ("simulate", "population", "--prompts", "24", "--n", "2,4", "--gamma", "0,0.5", "--steps", "4",
            "--prompt-batch", "8", "--runs", "2", "--eval-every", "2", "--device", "cpu", "--no-progress")
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    for out in (first, second):
        res = run_cli(*args, "--out", out)
        assert res.exit_code == 0, res.stderr
    assert first.read_bytes() == second.read_bytes()


# --- repeated list values ----------------------------------------------------------------------------

def test_parse_list_refuses_repeated_values():
    for text, kind, shown in (("0,0", int, "0"), ("1e3,1000", int, "1000"), ("0.5,0.50", float, "0.5"),
                              ("0,-0.0", float, "-0"), ("grpo,dapo,grpo", str, "grpo")):
        with pytest.raises(ValueError, match=rf"^--x lists {shown} twice; give each value once"):
            parse_list("--x", text, kind)
    assert parse_list("--beta", "1,1", float, unique=False) == [1.0, 1.0]


def test_cli_list_options_refuse_repeats_but_fixed_pairs_may_repeat(run_cli, tmp_path):
    _one_line_error(run_cli("simulate", "categorical", "--out", tmp_path / "r.csv", *TINY_CATEGORICAL,
                            "--seeds", "0,0"), "seeds lists 0 twice")
    assert not (tmp_path / "r.csv").exists()
    _one_line_error(run_cli("plan", "--beta", "1,4", "--n", "8,8"), "--n lists 8 twice")
    results = tmp_path / "a.jsonl"
    results.write_text('{"problem_id": "p", "n": 4, "c": 1}\n')
    _one_line_error(run_cli("passk", results, "--k", "1,1"), "--k lists 1 twice")
    res = run_cli("plan", "--beta", "1,1", "--n", "2,4")  # Beta(1, 1): a pair, not a list of choices
    assert res.exit_code == 0, res.stderr


# --- concurrent writers: the categorical table ---------------------------------------------------------

def test_second_categorical_writer_fails_naming_the_lock_or_waits(run_cli, tmp_path, lock_holder):
    out = tmp_path / "r.parquet"
    holder = lock_holder(out)
    res = run_cli("simulate", "categorical", "--out", out, *TINY_CATEGORICAL)
    _one_line_error(res, f"is being written by another run (it holds the lock {lock_path_for(out)})")
    assert not out.exists()
    waiter = _fgrpo("simulate", "categorical", "--out", out, *TINY_CATEGORICAL, "--wait")
    with ended(waiter):
        _read_until(waiter.stderr, f"waiting for another run writing {out}")
        time.sleep(0.5)
        assert waiter.poll() is None and not out.exists()  # queued behind the holder
        holder.kill()
        stdout, stderr = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, stderr
    assert len(pd.read_parquet(out)) == 2 * 2 * 3


def test_two_categorical_runs_with_different_settings_keep_both(tmp_path):
    out = tmp_path / "shared.csv"
    prepare = "from fgrpo_sim.cli import main\nimport fgrpo_sim.sim.categorical.run"
    args = [*TINY_CATEGORICAL, "--steps", "300", "--stride", "150", "--chunk-runs", "1", "--wait"]
    runs = [f"main(['simulate', 'categorical', '--out', {str(out)!r}, *{args!r}, '--lr', {lr!r}])"
            for lr in ("0.01", "0.02")]
    with _started_together(tmp_path, prepare, runs) as procs:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=180)
            assert proc.returncode == 0, stderr
    table = pd.read_csv(out, dtype={"config_id": str})
    assert table["config_id"].nunique() == 2
    assert table.groupby("config_id").size().tolist() == [12, 12]  # 2 N x 2 gamma x 3 recorded steps each
    assert not table.duplicated(["config_id", "group_size", "gamma", "seed", "step"]).any()


# --- resume validates what it keeps: the categorical table ------------------------------------------------

@pytest.fixture
def categorical_csv(run_cli, tmp_path):
    out = tmp_path / "r.csv"
    res = run_cli("simulate", "categorical", "--out", out, *TINY_CATEGORICAL)
    assert res.exit_code == 0, res.stderr
    return out


@pytest.mark.parametrize("damage, needle", [
    (lambda t: t.drop(columns=["entropy"]), "no column 'entropy'"),
    (lambda t: t.assign(group_size=t["group_size"].astype(object).where(t.index != 4, "abc")),
     "line 6: group_size = 'abc' is not an integer"),
    (lambda t: t.assign(seed=t["seed"].astype(float).where(t.index != 2, 0.5)), "line 4: seed = 0.5 is not an integer"),
    (lambda t: t.assign(q_pos=t["q_pos"].astype(object).where(t.index != 7, "lots")), "line 9: q_pos = 'lots' is not a finite number"),
    (lambda t: t.assign(config_id=t["config_id"].where(t.index != 1, None)), "line 3: config_id is empty"),
    (lambda t: pd.concat([t, t.iloc[[6]]], ignore_index=True), "line 14: it repeats line 8 (the same config_id, group_size, gamma, seed, step)"),
])
def test_resume_refuses_a_damaged_table_and_keeps_it(run_cli, categorical_csv, damage, needle):
    table = damage(pd.read_csv(categorical_csv, dtype={"config_id": str}))
    table.to_csv(categorical_csv, index=False)
    before = categorical_csv.read_bytes()
    res = run_cli("simulate", "categorical", "--out", categorical_csv, *TINY_CATEGORICAL, "--gamma", "0,1,2")
    _one_line_error(res, needle)
    assert str(categorical_csv) in res.stderr
    assert categorical_csv.read_bytes() == before  # nothing carried forward, nothing overwritten


def test_resume_of_a_sound_table_keeps_its_dtypes(run_cli, categorical_csv):
    res = run_cli("simulate", "categorical", "--out", categorical_csv, *TINY_CATEGORICAL, "--gamma", "0,1,2")
    assert res.exit_code == 0, res.stderr
    table = pd.read_csv(categorical_csv, dtype={"config_id": str})
    assert len(table) == 2 * 3 * 3 and table["group_size"].dtype.kind == "i" and table["q_pos"].dtype.kind == "f"


# --- the group-size table: a resume after an interruption equals the uninterrupted run ----------------------

GROUP_SIZE = ("simulate", "group-size", "--n", "2,4", "--runs", "1", "--populations", "2", "--steps", "3",
              "--eval-every", "2", "--optimizer", "adam", "--parametrisation", "axis,orthogonal", "--rare-mass", "0.1",
              "--gamma", "1", "--adam-lr", "0.01", "--device", "cpu", "--no-progress")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_group_size_resume_after_an_interruption_equals_the_uninterrupted_run(run_cli, tmp_path, monkeypatch, suffix):
    """Killed after its first chunk was saved (the file holds whole chunks: each save is atomic), the study
    resumes through the checked reader (issue 38) and ends with exactly the uninterrupted run's table."""
    from fgrpo_sim.sim import group_size_study as study

    whole, part = tmp_path / f"whole{suffix}", tmp_path / f"part{suffix}"
    assert run_cli(*GROUP_SIZE, "--out", whole).exit_code == 0
    train = study._train_chunk
    trained = []

    def dies_after_one_chunk(*args, **kwargs):
        if trained:
            raise KeyboardInterrupt  # Ctrl-C while the second chunk trains
        trained.append(args[1:3])
        return train(*args, **kwargs)

    monkeypatch.setattr(study, "_train_chunk", dies_after_one_chunk)
    assert run_cli(*GROUP_SIZE, "--out", part).exit_code == 130
    monkeypatch.setattr(study, "_train_chunk", train)
    read = pd.read_parquet if suffix == ".parquet" else pd.read_csv
    assert read(part)["chunk"].str.startswith("rare_correct_prob=1/adam/axis#").all()
    resumed = run_cli(*GROUP_SIZE, "--out", part)
    assert resumed.exit_code == 0, resumed.stderr
    pd.testing.assert_frame_equal(read(part), read(whole), check_exact=True)
    if suffix == ".csv":
        assert part.read_bytes() == whole.read_bytes()


# --- llm eval: locking and resume validation (a stub sampler: no model needed) --------------------------

PROBLEMS = [{"problem_id": f"p{i}", "problem": f"{i}+1", "answer": str(i + 1)} for i in range(3)]


class _StubSampler:
    def generate(self, problems, seed):
        return [("\\boxed{1}", 3, True) for _ in problems]


def _eval(out: Path, n: int = 2, problems=PROBLEMS, sampler=None, **kw):
    from fgrpo_sim.llm.evaluation.evaluate import EvalSettings, run_eval

    settings = EvalSettings(model="stub", data="bench.jsonl", benchmark="generic", n=n, batch_size=2)
    return run_eval(settings, problems, out, sampler=sampler or _StubSampler(), progress=False, **kw)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("bad_line, needle", [
    ({"problem_id": "other-benchmark-7", "sample_index": 0, "correct": True},
     "line 7: problem_id 'other-benchmark-7' is not a problem of this benchmark file"),
    ({"problem_id": "p1", "sample_index": 5, "correct": False}, "line 7: sample_index 5 is outside [0, n) with n = 3"),
    ({"problem_id": "p1", "sample_index": 1, "correct": True}, "line 7: it repeats problem 'p1' sample 1 of line 4"),
    ({"problem_id": "p1", "sample_index": "1", "correct": True}, "line 7: sample_index '1' is not an integer"),
    ({"problem_id": "p1", "sample_index": 0, "correct": "yes"}, "line 7: correct 'yes' is not true/false"),
    ([1, 2], "line 7: a JSON list, not an object"),
])
def test_eval_resume_refuses_foreign_out_of_range_and_repeated_lines(tmp_path, bad_line, needle):
    out = tmp_path / "samples.jsonl"
    _eval(out)
    with open(out, "a") as fh:
        fh.write(json.dumps(bad_line) + "\n")
    before = out.read_bytes()
    with pytest.raises(ValueError) as err:
        _eval(out, n=3)
    assert str(err.value).startswith(f"cannot resume {out}: {needle}")
    assert out.read_bytes() == before


def test_eval_resume_accepts_a_smaller_n_and_limit_later(tmp_path):
    out = tmp_path / "samples.jsonl"
    _eval(out, n=4)
    summary = _eval(out, n=2, problems=PROBLEMS[:1], known_problem_ids={p["problem_id"] for p in PROBLEMS})
    assert summary["generated_now"] == 0 and summary["samples"] == 2
    summary = _eval(out, n=3)  # lines up to sample 3 were written with n = 4: still valid (meta keeps n_max)
    assert summary["generated_now"] == 0 and len(_lines(out)) == 12


def test_eval_out_through_a_link_and_to_a_device(run_cli, tmp_path):
    real = tmp_path / "store" / "samples.jsonl"
    real.parent.mkdir()
    link = tmp_path / "samples.jsonl"
    link.symlink_to(real)
    _eval(link)
    assert link.is_symlink() and len(_lines(real)) == 6
    assert lock_path_for(link) == real.parent / ".samples.jsonl.lock"  # beside the file really written
    assert sorted(p.name for p in real.parent.iterdir()) == ["samples.jsonl"]  # the lock file went with the run
    arith = ROOT / "recipes" / "tiny" / "arith.jsonl"
    res = run_cli("llm", "eval", "--model", "tiny", "--data", arith, "--out", "/dev/null", "--no-progress")
    _one_line_error(res, "/dev/null exists and is a device")


def test_second_eval_writer_fails_naming_the_lock(tmp_path, lock_holder):
    out = tmp_path / "samples.jsonl"
    lock_holder(out)
    with pytest.raises(ValueError, match=r"is being written by another run \(it holds the lock .*\.samples\.jsonl\.lock\)"):
        _eval(out)
    assert not out.exists()


class _SlowStubSampler(_StubSampler):
    def generate(self, problems, seed):
        time.sleep(0.02)  # long enough that two runs started together overlap
        return super().generate(problems, seed)


# Both processes import everything, say "ready", and start only when the test creates the GO file, so
# their read-modify-write windows overlap: without the lock both would write every sample.
TOGETHER = """
import sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
{prepare}
print("ready", flush=True)
while not Path({go!r}).exists():
    time.sleep(0.01)
{run}
"""


@contextlib.contextmanager
def _started_together(tmp_path: Path, prepare: str, runs: list[str]) -> Iterator[list[subprocess.Popen]]:
    """One process per code in `runs`, all released at the same moment once every one is ready; all ended
    when the block is left, however (children.ended)."""
    go = tmp_path / "GO"
    procs = [_python(TOGETHER.format(tests=str(Path(__file__).parent), go=str(go), prepare=prepare, run=run))
             for run in runs]
    with ended(*procs):
        for proc in procs:
            _read_until(proc.stdout, "ready")
        go.touch()
        yield procs


def test_two_eval_processes_on_one_out_write_each_sample_once(tmp_path):
    out = tmp_path / "samples.jsonl"
    prepare = "import json\nimport test_data_safety as t"
    run = (f"print(json.dumps(t._eval(Path({str(out)!r}), n=40, wait_for_lock=True, "
           "sampler=t._SlowStubSampler())))")
    summaries = []
    with _started_together(tmp_path, prepare, [run, run]) as procs:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=180)
            assert proc.returncode == 0, stderr
            summaries.append(json.loads(stdout.strip().splitlines()[-1]))
    keys = [(r["problem_id"], r["sample_index"]) for r in _lines(out)]
    assert len(keys) == len(set(keys)) == 3 * 40
    assert sorted(s["generated_now"] for s in summaries) == [0, 120]  # the second found everything done


# --- llm prepare-data: non-scalar and non-finite rows ------------------------------------------------------

def test_prepare_data_counts_non_scalar_and_non_finite_rows_as_bad(tmp_path):
    from fgrpo_sim.llm.training.data import prepare_deepscaler

    rows = [{"problem": "1+1", "answer": "2"},
            {"problem": ["1+2", "2+2"], "answer": "3"},
            {"problem": "2+3", "answer": {"value": 5}},
            {"problem": "2+4", "answer": ["6", "7"]},
            {"problem": "2+5", "answer": float("nan")},
            {"problem": "2+6", "answer": float("inf")},
            {"problem": "2+7", "answer": ["9"]},
            {"problem": "2+8", "answer": 10},
            {"problem": "2+9", "answer": True}]
    src = tmp_path / "raw.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))  # json writes NaN/Infinity, as some dumps do
    kept, report = prepare_deepscaler(src, system_prompt=None)
    assert [r["answer"] for r in kept] == ["2", "9", "10"]
    assert len(report.bad_rows) == 6 and report.rows_read == 9
    messages = "\n".join(report.bad_rows)
    for needle in ("row 2 has a problem that is a list of 2 items", "row 3 has an answer that is a dict",
                   "row 4 has an answer that is a list of 2 items", "row 5 has an answer nan, not a finite number",
                   "row 6 has an answer inf", "row 9 has an answer that is a bool"):
        assert needle in messages, messages


# --- maze: a resumed results folder reuses only sound pieces ------------------------------------------------

def test_maze_resume_refuses_damaged_or_foreign_pieces(tmp_path, lock_holder):
    from fgrpo_sim.maze.experiment import run_experiment, run_file
    from fgrpo_sim.maze.presets import get_preset

    preset = get_preset("tiny")
    out = tmp_path / "maze"
    (out / "seed0").mkdir(parents=True)
    (out / "config.json").write_text(json.dumps(preset.to_dict()))
    piece = run_file(out, 0, 4, 1.0)
    scores = {"1": 0.5, "128": 0.6, "256": 0.7}
    good = {"seed": 0, "N": 4, "gamma": 1.0, "seconds": 1.0, "curve": [],
            "heldout": {"pass_at_k": scores, "exact_pass_at_k": scores}}
    for damaged, needle in (({**good, "N": 8}, "N 8 / gamma 1.0 do not match the file name"),
                            ({**good, "seed": 3}, "seed 3 does not match its folder seed0"),
                            ({**good, "heldout": {"pass_at_k": {"1": "high"}}}, "not a table of probabilities"),
                            ("[1, 2", "is not readable JSON")):
        piece.write_text(damaged if isinstance(damaged, str) else json.dumps(damaged))
        with pytest.raises(ValueError) as err:
            run_experiment(preset, out, progress=False, log=lambda m: None)
        assert str(err.value).startswith(f"cannot resume {out}: {piece}") and needle in str(err.value)
    lock_holder(out / "config.json")  # a second `maze run` on the same folder is refused, naming the lock
    with pytest.raises(ValueError, match=r"is being written by another run \(it holds the lock .*\.config\.json\.lock\)"):
        run_experiment(preset, out, progress=False, log=lambda m: None)


def test_benchmark_answer_lists_only_olympiadbench_takes_the_first_item(tmp_path):
    from fgrpo_sim.llm.evaluation.data import load_benchmark

    src = tmp_path / "bench.jsonl"
    src.write_text(json.dumps({"id": "a", "question": "x?", "final_answer": ["$3$", "$5$"]}) + "\n")
    assert load_benchmark("olympiadbench", src)[0]["answer"] == "3"
    with pytest.raises(ValueError, match=r"row 1 has an answer that is a list of 2 items"):
        load_benchmark("generic", src)


def test_lock_file_is_removed_on_release_and_a_killed_holders_file_is_reused(tmp_path, lock_holder):
    out = tmp_path / "r.csv"
    with output_lock(out) as lock:
        assert lock.exists()
        with pytest.raises(ValueError, match="is being written by another run"):  # a second descriptor
            with output_lock(out):
                pass
    assert not lock.exists() and list(tmp_path.iterdir()) == []
    holder = lock_holder(out)
    holder.kill()
    holder.wait()
    assert lock.exists()  # a killed run leaves its (unlocked) sidecar behind ...
    with output_lock(out):  # ... which the next run locks at once
        pass
    assert not lock.exists()


def test_a_native_run_alone_has_the_same_metrics_as_inside_a_batch():
    """docs/reliability.md: same seed, same bytes, whatever else is in the batch (native backend), the
    entropy column included (it was formed by a batched product whose blocking followed the batch shape)."""
    from fgrpo_sim.sim.categorical import CategoricalBatch
    from fgrpo_sim.sim.categorical.config import CategoricalConfig
    from fgrpo_sim.sim.categorical.sampling import native_available

    if not native_available():
        pytest.skip("no C compiler: the native backend is what guarantees batch independence")
    for dtype in ("float32", "float64"):
        config = CategoricalConfig(num_actions=128_000, num_correct=10_000, dtype=dtype, device="cpu", sampler="native")

        def metrics(sizes, gammas, seeds):
            batch = CategoricalBatch(config, sizes, gammas, seeds)
            for _ in range(3):
                batch.step()
            return {name: values[0].item() for name, values in batch.metrics().items()}

        alone = metrics([8], [0.0], [0])
        among = metrics([8] + [16] * 30, [0.0] + [1.0] * 30, [0] + list(range(1, 31)))
        assert alone == among, dtype


def test_the_committed_categorical_study_is_read_through_the_checked_reader(tmp_path, monkeypatch):
    """Issue 43: a packaged record is read back like a resume (sim.result_table): the committed final means read
    as they are, and a damaged copy is refused naming file and line before the figure draws it."""
    import pandas as pd

    from fgrpo_sim.figures import categorical
    from fgrpo_sim.figures.registry import FigureOptions
    from fgrpo_sim.sim.categorical.study import read_final_means

    committed = categorical.COMMITTED_STUDY
    pd.testing.assert_frame_equal(read_final_means(committed), pd.read_csv(committed), check_dtype=False)
    lines = committed.read_text().splitlines()
    head = lines[0].split(",")
    for column, value, why in (("q_pos", "nan", "q_pos = nan is not a finite number"),
                               ("q_pos", "1.5", "q_pos = 1.5 is not in [0, 1]"),
                               ("group_size", "two", "group_size = 'two' is not an integer")):
        fields = lines[4].split(",")
        fields[head.index(column)] = value
        damaged = tmp_path / "categorical-study.csv"
        damaged.write_text("\n".join([*lines[:4], ",".join(fields), *lines[5:]]) + "\n")
        monkeypatch.setattr(categorical, "COMMITTED_STUDY", damaged)
        with pytest.raises(ValueError, match=f"cannot read {damaged} line 5: {re.escape(why)}; .*reinstall fgrpo-sim"):
            categorical.load_study(FigureOptions(data_dir=str(tmp_path / "none")))
