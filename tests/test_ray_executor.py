"""`--executor ray` on the three simulate commands (issue 47), on a local Ray with 2 CPUs and no GPU.

Each command's table (and what it prints) under Ray equals the local run's byte for byte; a run interrupted
after its first chunk keeps that chunk and the same command resumes with the others only; a worker killed
mid-task has its chunk rerun, nothing counted twice (population: tests/test_population_resume.py has the local
executor's resume). One Ray session serves the module (Ray takes seconds to
start); the commands join it (sim.executor.connect). The errors (no Ray, no GPU, an unreachable address, a
Ray option without --executor ray) are one line, exit 2. Chunks finishing in reverse order (a stand-in for Ray,
no Ray needed) still give the local file: the driver saves them in the local order.
"""

from __future__ import annotations

import socket

import pytest

from tests.extras import require

CATEGORICAL = ("simulate", "categorical", "--num-actions", "60", "--num-correct", "6", "--n", "4,8", "--gamma", "0,1",
               "--seeds", "0,1", "--steps", "12", "--stride", "4", "--chunk-runs", "2", "--no-progress")
GROUP_SIZE = ("simulate", "group-size", "--n", "4,8", "--rare-mass", "0.02", "--gamma", "1", "--optimizer", "adam,sgd",
              "--parametrisation", "axis,orthogonal", "--adam-lr", "0.01", "--sgd-lr", "2", "--populations", "2",
              "--runs", "1", "--steps", "6", "--eval-every", "3", "--prompt-batch", "4", "--no-progress", "--json")
POPULATION = ("simulate", "population", "--prompts", "12", "--n", "4,8", "--gamma", "0,1", "--runs", "2", "--steps",
              "6", "--eval-every", "3", "--prompt-batch", "4", "--no-progress", "--json")
SHARED = (*POPULATION, "--sharing", "shared", "--heldout-prompts", "8")
RAY = ("--executor", "ray")


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray: 2 CPUs, no GPU whatever the machine has (the no-GPU error is tested on it)."""
    ray = require("ray")
    import logging

    ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    yield ray
    ray.shutdown()


def _local_and_ray(run_cli, tmp_path, command, name):
    local, on_ray = tmp_path / f"{name}-local.csv", tmp_path / f"{name}-ray.csv"
    first = run_cli(*command, "--out", local)
    second = run_cli(*command, "--out", on_ray, *RAY)
    assert first.exit_code == 0, first.stderr
    assert second.exit_code == 0, second.stderr
    return first, second, local.read_bytes(), on_ray.read_bytes()


@pytest.mark.parametrize("command", [CATEGORICAL, GROUP_SIZE, POPULATION, SHARED],
                         ids=["categorical", "group-size", "population", "population-shared"])
def test_ray_run_equals_the_local_run(ray_cluster, run_cli, tmp_path, command):
    first, second, local, on_ray = _local_and_ray(run_cli, tmp_path, command, "t")
    assert on_ray == local  # same rows, same order, same values to the last bit
    assert len(local.splitlines()) > 20
    if "--json" in command:  # the printed report is computed from the same table
        assert second.stdout == first.stdout.replace("t-local.csv", "t-ray.csv")


def _interrupt_after_first_save(monkeypatch, module, name):
    """The first save of `module.name` completes, then Ctrl-C arrives (in the driver, as a user's would)."""
    original = getattr(module, name)
    calls = []

    def save_then_interrupt(*args, **kwargs):
        original(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(module, name, save_then_interrupt)
    return calls


def _count_submitted(monkeypatch):
    """Spy on the chunks each run hands Ray."""
    from fgrpo_sim.sim import executor

    submitted = []
    original = executor.run_on_ray

    def spy(fn, chunk_args, *args, **kwargs):
        submitted.append(len(chunk_args))
        return original(fn, chunk_args, *args, **kwargs)

    monkeypatch.setattr(executor, "run_on_ray", spy)
    return submitted


@pytest.mark.parametrize("command, module, name, chunks", [
    (CATEGORICAL, "fgrpo_sim.sim.categorical.run", "write_table", 4),
    (GROUP_SIZE, "fgrpo_sim.commands.simulate_population", "_write_table", 4),
    (POPULATION, "fgrpo_sim.sim.population_resume", "save", 6),
    (SHARED, "fgrpo_sim.sim.population_resume", "save", 6),
], ids=["categorical", "group-size", "population", "population-shared"])
def test_interrupted_ray_run_keeps_finished_chunks_and_resumes(ray_cluster, run_cli, tmp_path, monkeypatch,
                                                               command, module, name, chunks):
    import importlib

    reference = tmp_path / "local.csv"
    assert run_cli(*command, "--out", reference).exit_code == 0
    out = tmp_path / "ray.csv"
    submitted = _count_submitted(monkeypatch)
    with monkeypatch.context() as patch:
        _interrupt_after_first_save(patch, importlib.import_module(module), name)
        stopped = run_cli(*command, "--out", out, *RAY)
    assert stopped.exit_code == 130
    assert stopped.stderr.strip().splitlines() == [stopped.stderr.strip()]  # the one line
    assert "interrupted" in stopped.stderr and str(out) in stopped.stderr
    kept = out.read_bytes()
    assert 0 < len(kept.splitlines()) < len(reference.read_bytes().splitlines())  # one chunk's rows, no more
    resumed = run_cli(*command, "--out", out, *RAY)
    assert resumed.exit_code == 0, resumed.stderr
    assert submitted == [chunks, chunks - 1]  # the resume trains only the chunks the interrupt lost
    # the kept chunk is whichever finished first, so the file's row order may differ from a local run's
    # (a local resume also writes the kept rows first); every row and value equals the local run's
    _assert_same_rows(out, reference)
    if command in (POPULATION, SHARED):  # population saves its variants in the sweep's order: the very bytes
        assert out.read_bytes() == reference.read_bytes()


def _assert_same_rows(path, reference):
    import pandas as pd

    got, want = pd.read_csv(path), pd.read_csv(reference)
    assert list(got.columns) == list(want.columns)
    every = list(got.columns)
    pd.testing.assert_frame_equal(got.sort_values(every).reset_index(drop=True),
                                  want.sort_values(every).reset_index(drop=True), check_exact=True)


def test_worker_killed_mid_task_has_its_chunk_rerun(ray_cluster, run_cli, tmp_path, monkeypatch):
    from fgrpo_sim.sim.executor import KILL_ONCE_ENV

    marker = tmp_path / "killed-once"
    monkeypatch.setenv(KILL_ONCE_ENV, str(marker))  # the first task to start kills its own worker
    first, second, local, on_ray = _local_and_ray(run_cli, tmp_path, CATEGORICAL, "k")
    assert marker.exists()  # a worker did die mid-task
    assert on_ray == local  # its chunk was rerun once: every run once, equal to the local table


def test_cuda_on_a_cluster_without_gpus_is_one_line(ray_cluster, run_cli, tmp_path):
    result = run_cli(*CATEGORICAL, "--out", tmp_path / "t.csv", *RAY, "--device", "cuda")
    assert result.exit_code == 2
    assert result.stderr.startswith("fgrpo: error: --device cuda: the Ray cluster has no GPU")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "t.csv").exists()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_address_is_one_line(run_cli, tmp_path):
    require("ray")
    address = f"127.0.0.1:{_closed_port()}"
    result = run_cli(*POPULATION, "--out", tmp_path / "t.csv", *RAY, "--ray-address", address)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"fgrpo: error: --ray-address {address}: unreachable")
    assert len(result.stderr.strip().splitlines()) == 1


def test_ray_not_installed_names_the_cluster_extra(run_cli, tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a))
    result = run_cli(*GROUP_SIZE, "--out", tmp_path / "t.csv", *RAY)
    assert result.exit_code == 2
    assert "this command needs the cluster extra (ray is not installed)" in result.stderr
    assert 'pip install "fgrpo-sim[cluster]"' in result.stderr and "make install-cluster" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("option", [("--ray-address", "127.0.0.1:1"), ("--ray-cpus", "2")])
def test_ray_options_need_executor_ray(run_cli, tmp_path, option):
    result = run_cli(*CATEGORICAL, "--out", tmp_path / "t.csv", *option)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"fgrpo: error: {option[0]} needs --executor ray"


def test_ray_cpus_with_a_cluster_address_is_refused(run_cli, tmp_path, monkeypatch):
    require("ray")
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{_closed_port()}")  # the cap would be dropped in silence
    result = run_cli(*CATEGORICAL, "--out", tmp_path / "t.csv", *RAY, "--ray-cpus", "2")
    assert result.exit_code == 2
    assert result.stderr.startswith("fgrpo: error: ray_cpus (--ray-cpus) sizes a local Ray, but RAY_ADDRESS names")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [CATEGORICAL, GROUP_SIZE, POPULATION], ids=["categorical", "group-size", "population"])
def test_chunks_finishing_in_reverse_order_give_the_local_table(run_cli, tmp_path, monkeypatch, command):
    """Whatever order the chunks finish in, the file is the local run's: here the last chunk arrives first (a
    stand-in for Ray that runs the chunks in this process, so no Ray is needed)."""
    import contextlib

    from fgrpo_sim.sim import executor

    arrivals = []

    def reversed_arrival(fn, chunk_args, on_result, **_):
        results = [fn(*args) for args in chunk_args]
        for index in reversed(range(len(results))):
            arrivals.append(index)
            on_result(index, results[index])

    monkeypatch.setattr(executor, "ray_session", lambda *_: contextlib.nullcontext(("cpu", 0.0)))
    monkeypatch.setattr(executor, "run_on_ray", reversed_arrival)
    local, reordered = tmp_path / "local.csv", tmp_path / "reordered.csv"
    assert run_cli(*command, "--out", local).exit_code == 0
    result = run_cli(*command, "--out", reordered, *RAY)
    assert result.exit_code == 0, result.stderr
    assert len(arrivals) > 2 and arrivals[0] == max(arrivals)
    assert reordered.read_bytes() == local.read_bytes()
