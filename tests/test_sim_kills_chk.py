"""Tests for the simchk stratum of fgrpo_sim/sim/ (issue 44, mutation testing: checks.py, checks_exact.py,
montecarlo.py, smoothing_study.py, executor.py, sim/__init__.py). Each asserts behaviour a user relies on: a
message naming its parameter, a bound at its edge, a value worked by hand or by an independent computation, the
Ray session's calls seen through a stand-in `ray` (no cluster is started). Tiny data throughout, so every test is
fast: mutmut runs them once per mutant."""

from __future__ import annotations

import importlib.machinery
import logging
import math
import os
import socket
import sys
import types

import numpy as np
import pytest
import torch


# --- executor.py ------------------------------------------------------------------------------------------------------

class _Ref:
    """A stand-in object ref: the task's result or the exception it raises when read."""

    def __init__(self, index, result=None, error=None):
        self.index, self.result, self.error = index, result, error

    def __repr__(self):
        return f"ref{self.index}"


@pytest.fixture
def ray_stub(monkeypatch):
    """A stand-in `ray` (importable, found by importlib as the cluster extra) that records every call. Tasks run
    when submitted; `ray.wait` hands back the first pending ref; `ray.fail[index]` makes that chunk's ref raise."""
    ray = types.ModuleType("ray")
    ray.__spec__ = importlib.machinery.ModuleSpec("ray", None)
    exceptions = types.ModuleType("ray.exceptions")
    exceptions.__spec__ = importlib.machinery.ModuleSpec("ray.exceptions", None)

    class RayTaskError(Exception):
        pass

    exceptions.RayTaskError = RayTaskError
    exceptions.WorkerCrashedError = type("WorkerCrashedError", (Exception,), {})
    ray.exceptions = exceptions
    ray.calls, ray.fail, ray.cancelled, ray.submitted = [], {}, [], []
    ray.initialized = False
    ray.resources = {"CPU": 4.0}

    class Task:
        def __init__(self, fn):
            self.fn = fn

        def options(self, **kwargs):
            ray.options = kwargs
            return self

        def remote(self, *args):
            index = len(ray.submitted)
            ray.submitted.append(args)
            if index in ray.fail:
                return _Ref(index, error=ray.fail[index])
            return _Ref(index, result=self.fn(*args))

    def get(ref):
        if ref.error is not None:
            raise ref.error
        return ref.result

    def init(**kwargs):
        ray.calls.append(("init", kwargs))
        if ray.init_error is not None:
            raise ray.init_error

    ray.init_error = None
    ray.remote = Task
    ray.put = lambda value: value
    ray.wait = lambda refs, num_returns: (refs[:num_returns], refs[num_returns:])
    ray.get = get
    ray.cancel = lambda ref, force: ray.cancelled.append((ref.index, force))
    ray.init = init
    ray.is_initialized = lambda: ray.initialized
    ray.shutdown = lambda: ray.calls.append(("shutdown", {}))
    ray.cluster_resources = lambda: dict(ray.resources)
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setitem(sys.modules, "ray.exceptions", exceptions)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("FGRPO_RAY_KILL_ONCE", raising=False)
    return ray


def _double(x):
    return 2 * x


def test_executor_settings_name_their_parameter_and_range():
    from fgrpo_sim.sim.executor import LOCAL, Executor

    assert LOCAL == Executor("local") and not LOCAL.is_ray and Executor("ray").is_ray
    assert Executor("ray", cpus=1).cpus == 1 and Executor("ray", cpus=100_000).cpus == 100_000
    for cpus in (0, 100_001):
        with pytest.raises(ValueError, match=rf"^ray_cpus must be in \[1, 100000\], got {cpus}$"):
            Executor("ray", cpus=cpus)
    with pytest.raises(ValueError, match=r"^executor must be one of local, ray, got 'dask'$"):
        Executor("dask")
    for kwargs in (dict(address="auto"), dict(cpus=2)):
        with pytest.raises(ValueError, match=r"^ray_address and ray_cpus need executor 'ray', got executor 'local'$"):
            Executor("local", **kwargs)


def test_cluster_address_prefers_the_option_then_the_environment(monkeypatch):
    from fgrpo_sim.sim.executor import Executor, cluster_address

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert cluster_address(Executor("ray")) is None
    monkeypatch.setenv("RAY_ADDRESS", "")
    assert cluster_address(Executor("ray")) is None
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert cluster_address(Executor("ray")) == "10.0.0.1:6379"
    assert cluster_address(Executor("ray", address="auto")) == "auto"


def test_connect_starts_a_quiet_local_ray_sized_by_ray_cpus(ray_stub):
    from fgrpo_sim.sim.executor import Executor, connect

    assert connect(Executor("ray", cpus=3)) is True
    assert connect(Executor("ray")) is True
    quiet = dict(logging_level=logging.ERROR, log_to_driver=False, configure_logging=True)
    assert ray_stub.calls == [("init", dict(num_cpus=3, include_dashboard=False, **quiet)),
                              ("init", dict(num_cpus=os.cpu_count(), include_dashboard=False, **quiet))]


def test_connect_joins_a_named_cluster_and_reuses_a_held_session(ray_stub, monkeypatch):
    from fgrpo_sim.sim.executor import Executor, connect

    assert connect(Executor("ray", address="auto")) is True
    monkeypatch.setenv("RAY_ADDRESS", "local")
    assert connect(Executor("ray")) is True
    quiet = dict(logging_level=logging.ERROR, log_to_driver=False, configure_logging=True)
    assert ray_stub.calls == [("init", dict(address="auto", **quiet)), ("init", dict(address="local", **quiet))]
    ray_stub.initialized = True  # a session this process already holds: joined, not started, no init
    assert connect(Executor("ray")) is False
    assert connect(Executor("ray", address="auto")) is False
    assert len(ray_stub.calls) == 2


@pytest.mark.parametrize("executor, env, name", [(dict(address="auto", cpus=2), None, "--ray-address"),
                                                 (dict(cpus=2), "auto", "RAY_ADDRESS")])
def test_ray_cpus_beside_a_cluster_is_refused_naming_both(ray_stub, monkeypatch, executor, env, name):
    from fgrpo_sim.sim.executor import Executor, connect

    if env is not None:
        monkeypatch.setenv("RAY_ADDRESS", env)
    with pytest.raises(ValueError) as info:
        connect(Executor("ray", **executor))
    assert str(info.value) == (f"ray_cpus (--ray-cpus) sizes a local Ray, but {name} names a cluster (auto); "
                               "give only one")
    assert ray_stub.calls == []


def test_a_cluster_that_refuses_the_join_is_one_line_of_rays_words(ray_stub):
    from fgrpo_sim.sim.executor import Executor, connect

    for error in (ConnectionError, TimeoutError, RuntimeError):
        ray_stub.init_error = error("no head\n   at   this address " + "x" * 400)
        with pytest.raises(ValueError) as info:
            connect(Executor("ray", address="auto"))
        words = "no head at this address " + "x" * 400
        assert str(info.value) == f"--ray-address auto: cannot join the Ray cluster ({words[:300]})"
    ray_stub.init_error = KeyError("other")  # not a join failure: not rewritten
    with pytest.raises(KeyError):
        connect(Executor("ray", address="auto"))


def test_a_listening_address_is_reachable_in_every_spelling(ray_stub):
    from fgrpo_sim.sim.executor import Executor, _check_reachable, connect

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
            assert _check_reachable(address, "--ray-address") is None
        assert connect(Executor("ray", address=f"127.0.0.1:{port}")) is True
    assert ray_stub.calls[-1][1]["address"] == f"127.0.0.1:{port}"
    for address in ("auto", "local"):  # Ray's own words for a local cluster: no probe
        assert _check_reachable(address, "RAY_ADDRESS") is None
    for address in ("host:", ":80", "host:8o", "ray://host", "auto:"):
        with pytest.raises(ValueError, match=rf"^RAY_ADDRESS must be HOST:PORT, ray://HOST:PORT or auto, "
                                             rf"got '{address}'$"):
            _check_reachable(address, "RAY_ADDRESS")


def test_placement_on_a_cluster_with_one_gpu(ray_stub):
    from fgrpo_sim.sim.executor import _resources, placement

    ray_stub.resources = {"CPU": 4.0, "GPU": 1.0}  # one GPU is enough (the bound is inclusive)
    assert placement("cuda") == ("cuda", 1.0)
    assert placement("cuda:1") == ("cuda:1", 1.0)
    assert placement("auto") == ("cuda", 1.0)
    assert placement("cpu") == ("cpu", 0.0)
    ray_stub.resources = {"CPU": 4.0, "GPU": 0.5}
    assert placement("auto") == ("cpu", 0.0)
    with pytest.raises(ValueError) as info:
        placement("cuda:0")
    assert str(info.value) == ("--device cuda:0: the Ray cluster has no GPU (resources: CPU 4, GPU 0.5); "
                               "use --device cpu or add GPU nodes")
    assert _resources({}) == "none" and _resources({"node:x": 1.0, "object_store_memory": 2.0}) == "none"
    assert _resources({"memory": 2.5, "GPU": 1.0, "CPU": 8.0}) == "CPU 8, GPU 1, memory 2.5"


def test_a_chunk_runs_with_the_drivers_thread_count(tmp_path):
    from fgrpo_sim.sim.executor import _run_chunk

    before = torch.get_num_threads()
    marker = tmp_path / "killed-once"
    marker.write_text("")  # the marker exists: this is the rerun, which runs the chunk
    try:
        assert _run_chunk(lambda a, b: (a - b, torch.get_num_threads()), (5, 2), 1, str(marker)) == (3, 1)
        assert _run_chunk(lambda: torch.get_num_threads(), (), 1, None) == 1
    finally:
        torch.set_num_threads(before)


def test_the_first_task_to_find_the_kill_marker_missing_dies(tmp_path, monkeypatch):
    from fgrpo_sim.sim import executor

    class Died(Exception):
        pass

    def exit_(code):
        raise Died(code)

    monkeypatch.setattr(executor.os, "_exit", exit_)
    marker = tmp_path / "marker"
    with pytest.raises(Died) as info:
        executor._run_chunk(_double, (4,), torch.get_num_threads(), str(marker))
    assert info.value.args == (1,) and marker.exists() and marker.read_text() == ""
    assert executor._run_chunk(_double, (4,), torch.get_num_threads(), str(marker)) == 8


def test_run_on_ray_submits_one_task_per_chunk_with_the_drivers_settings(ray_stub, monkeypatch, tmp_path):
    from fgrpo_sim.sim.executor import MAX_RETRIES, Executor, run_on_ray

    marker = tmp_path / "seen"
    marker.write_text("")
    monkeypatch.setenv("FGRPO_RAY_KILL_ONCE", str(marker))
    got = []
    run_on_ray(_double, [[1], (2,), (3,)], lambda i, r: got.append((i, r)), executor=Executor("ray"))
    assert got == [(0, 2), (1, 4), (2, 6)] and ray_stub.cancelled == []
    assert ray_stub.options == dict(num_cpus=1, num_gpus=0.0, max_retries=MAX_RETRIES, retry_exceptions=False)
    assert MAX_RETRIES == 3
    threads = torch.get_num_threads()
    assert ray_stub.submitted == [(_double, (1,), threads, str(marker)), (_double, (2,), threads, str(marker)),
                                  (_double, (3,), threads, str(marker))]
    monkeypatch.setenv("FGRPO_RAY_KILL_ONCE", "")  # set but empty: no marker
    ray_stub.submitted.clear()
    run_on_ray(_double, [(7,)], lambda i, r: None, executor=Executor("ray"), gpus=0.5)
    assert ray_stub.submitted == [(_double, (7,), threads, None)]
    assert ray_stub.options["num_cpus"] == 0 and ray_stub.options["num_gpus"] == 0.5


def test_run_on_ray_draws_its_bar_only_when_asked_and_there_is_work(ray_stub, monkeypatch):
    import fgrpo_sim.progress
    from fgrpo_sim.sim.executor import Executor, run_on_ray

    bars = []

    class Bar:
        def __init__(self, **kwargs):
            self.kwargs, self.updates, self.closed = kwargs, 0, False
            bars.append(self)

        def update(self, n):
            self.updates += n

        def close(self):
            self.closed = True

    monkeypatch.setattr(fgrpo_sim.progress, "bar", lambda **kwargs: Bar(**kwargs))
    run_on_ray(_double, [(1,), (2,)], lambda i, r: None, executor=Executor("ray"), progress=True, desc="rows")
    run_on_ray(_double, [], lambda i, r: None, executor=Executor("ray"), progress=True)
    run_on_ray(_double, [(1,)], lambda i, r: None, executor=Executor("ray"))
    assert [b.kwargs for b in bars] == [dict(total=2, progress=True, desc="rows", unit="task", leave=False),
                                        dict(total=0, progress=False, desc="chunks", unit="task", leave=False),
                                        dict(total=1, progress=False, desc="chunks", unit="task", leave=False)]
    assert [b.updates for b in bars] == [2, 0, 1] and all(b.closed for b in bars)


def test_a_chunks_own_error_is_raised_as_locally_and_the_rest_cancelled(ray_stub):
    from fgrpo_sim.sim.executor import Executor, run_on_ray

    cause = ValueError("lr must be in (0, 10], got 11")
    wrapped = ray_stub.exceptions.RayTaskError("wrapped")
    wrapped.cause = cause
    ray_stub.fail = {1: wrapped}
    got = []
    with pytest.raises(ValueError) as info:
        run_on_ray(_double, [(1,), (2,), (3,), (4,)], lambda i, r: got.append(i), executor=Executor("ray"))
    assert info.value is cause and info.value.__suppress_context__
    assert got == [0] and ray_stub.cancelled == [(2, True), (3, True)]


def test_a_chunk_error_without_a_cause_is_one_line(ray_stub):
    from fgrpo_sim.sim.executor import Executor, run_on_ray

    for cause in (None, "not an exception"):
        error = ray_stub.exceptions.RayTaskError("Traceback:\n  File x\n    boom")
        if cause is not None:
            error.cause = cause
        ray_stub.fail = {len(ray_stub.submitted): error}
        with pytest.raises(ValueError, match=r"^Traceback: File x boom$"):
            run_on_ray(_double, [(1,)], lambda i, r: None, executor=Executor("ray"))


def test_a_worker_that_died_every_retry_names_its_chunk(ray_stub):
    from fgrpo_sim.sim.executor import Executor, run_on_ray

    ray_stub.fail = {1: ray_stub.exceptions.WorkerCrashedError("died")}
    with pytest.raises(ValueError) as info:
        run_on_ray(_double, [(1,), (2,), (3,)], lambda i, r: None, executor=Executor("ray"))
    assert str(info.value) == "chunk 2 of 3: its Ray worker died 4 times; see the Ray logs"
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert ray_stub.cancelled == [(2, True)]


def test_a_ray_session_yields_the_placement_and_shuts_down_only_what_it_started(ray_stub):
    from fgrpo_sim.sim.executor import Executor, disconnect, ray_session

    ray_stub.resources = {"CPU": 2.0, "GPU": 2.0}
    with ray_session(Executor("ray", cpus=2), "auto") as placed:
        assert placed == ("cuda", 1.0)
        assert [c[0] for c in ray_stub.calls] == ["init"]
    assert [c[0] for c in ray_stub.calls] == ["init", "shutdown"]
    ray_stub.initialized = True
    with pytest.raises(RuntimeError):
        with ray_session(Executor("ray"), "cpu") as placed:
            assert placed == ("cpu", 0.0)
            raise RuntimeError("study failed")
    assert [c[0] for c in ray_stub.calls] == ["init", "shutdown"]  # a joined session keeps running
    ray_stub.initialized = False
    with pytest.raises(ValueError, match="has no GPU"):  # placement fails: the started Ray is shut down still
        ray_stub.resources = {"CPU": 2.0}
        with ray_session(Executor("ray"), "cuda"):
            pass
    assert [c[0] for c in ray_stub.calls] == ["init", "shutdown", "init", "shutdown"]
    disconnect(False)
    assert len(ray_stub.calls) == 4
    disconnect(True)
    assert ray_stub.calls[-1] == ("shutdown", {})


# --- sim/__init__.py: lazy names ----------------------------------------------------------------------------------------

def test_sim_package_names_load_lazily_and_unknown_names_are_refused():
    import fgrpo_sim.sim as sim
    from fgrpo_sim.sim.montecarlo import estimate_tail_miss

    assert sim.estimate_tail_miss is estimate_tail_miss
    assert sim.__all__ == sorted(sim.__all__) and "run_checks" in sim.__all__
    with pytest.raises(AttributeError) as info:
        sim.no_such_name
    assert str(info.value) == "module 'fgrpo_sim.sim' has no attribute 'no_such_name'"
    assert not hasattr(sim, "also_missing")
