"""Tests for the simchk stratum of fgrpo_sim/sim/ (issue 44, mutation testing: checks.py, checks_exact.py,
montecarlo.py, smoothing_study.py, executor.py, sim/__init__.py). Each asserts behaviour a user relies on: a
message naming its parameter, a bound at its edge, a value worked by hand or by an independent computation, the
Ray session's calls seen through a stand-in `ray` (no cluster is started). Tiny data throughout, so every test is
fast: mutmut runs them once per mutant."""

from __future__ import annotations

import logging
import math
import os
import socket
import types

import numpy as np
import pytest
import torch
from stand_in_ray import stand_in_ray


# --- executor.py ------------------------------------------------------------------------------------------------------

@pytest.fixture
def ray_stub(monkeypatch):
    return stand_in_ray(monkeypatch)


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


# --- montecarlo.py ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    (dict(n=0), r"^n must be in \[1, 2\^31 - 1\], got 0$"),
    (dict(n=2**31), r"^n must be in \[1, 2\^31 - 1\], got 2147483648$"),
    (dict(mu=-0.1, tau=0.0), r"^mu must be in \[0, 1\], got -0\.1$"),
    (dict(mu=1.1), r"^mu must be in \[0, 1\], got 1\.1$"),
    (dict(tau=-0.01), r"^tau must be in \[0, 0\.5\], got -0\.01$"),
    (dict(tau=0.51), r"^tau must be in \[0, 0\.5\], got 0\.51$"),
    (dict(trials=0), r"^trials must be in \[1, 1000000000000\], got 0$"),
    (dict(seed=-1), r"^seed must be in \[0, 2\^62\], got -1$"),
    (dict(seed=2**62 + 1), r"^seed must be in \[0, 2\^62\], got 4611686018427387905$"),
])
def test_tail_miss_bounds_name_their_parameter(kwargs, message):
    from fgrpo_sim.sim.montecarlo import estimate_tail_miss

    args = dict(n=4, mu=0.5, tau=0.1, trials=10, seed=0) | kwargs
    with pytest.raises(ValueError, match=message):
        estimate_tail_miss(**args)


def test_tail_miss_bounds_are_inclusive_and_defaults_are_a_million_trials_at_seed_0():
    from fgrpo_sim.sim.montecarlo import estimate_tail_miss

    assert estimate_tail_miss(1, 0.5, 0.5, 1, 2**62) == (0.0, 0.0)  # n = 1: never active
    assert estimate_tail_miss(2**31 - 1, 1.0, 1.0, 3) == (0.0, 0.0)  # tau = mu = 1: every draw lands in E
    assert estimate_tail_miss(5, 0.0, 0.0, 3) == (0.0, 0.0)  # mu = 0: no correct draw, never active
    assert estimate_tail_miss(5, 1.0, 0.0, 3) == (0.0, 0.0)  # mu = 1, E empty: always all correct


class _Drawn(Exception):
    pass


def _defaults_drawn(monkeypatch, call) -> dict:
    """The seed and the group count an estimator hands numpy's generator when called with its defaults (the
    generator stops at its first draw, so no million-trial run is paid)."""
    seen = {}

    class Rng:
        def __init__(self, seed):
            seen["seed"] = seed

        def _draw(self, *args, size=None):
            seen["trials"] = size if size is not None else args[-1]
            raise _Drawn

        integers = binomial = random = _draw

    monkeypatch.setattr(np.random, "default_rng", Rng)
    with pytest.raises(_Drawn):
        call()
    return seen


def test_estimators_default_to_a_million_trials_at_seed_0(monkeypatch):
    from fgrpo_sim.sim import montecarlo

    million = {"seed": 0, "trials": 1_000_000}
    assert _defaults_drawn(monkeypatch, lambda: montecarlo.estimate_tail_miss(3, 0.6, 0.2)) == million
    assert _defaults_drawn(monkeypatch, lambda: montecarlo.estimate_lr_multiplier(0.5)) == million
    assert _defaults_drawn(monkeypatch, lambda: montecarlo.estimate_smoothed_focal_weight(2, 0.3, 1.0, 0.5)) == million
    assert _defaults_drawn(monkeypatch, lambda: montecarlo.estimate_smoothed_lr_multiplier(2, 1.0, 0.5)) == million


def _tail_miss_exact(n, mu, tau):
    return (1 - tau) ** n - (mu - tau) ** n - (1 - mu) ** n


@pytest.mark.parametrize("path", ["numpy", "torch"])
def test_tail_miss_hits_on_both_samplers_fit_lemma_3_1(path, monkeypatch):
    """Both samplers (numpy's on the CPU, torch's for a GPU, run here on the CPU) over more than one chunk: the
    share of groups in B fits (1 - tau)^N - (mu - tau)^N - (1 - mu)^N, and a seed repeats its hits."""
    from fgrpo_sim.sim import montecarlo

    hits_of = getattr(montecarlo, f"_tail_miss_hits_{path}")
    cpu = torch.device("cpu")
    monkeypatch.setattr(montecarlo, "TAIL_MISS_CHUNK", 5000)  # small chunks: a fast test over several of them
    trials = 3 * 5000 + 1237  # four chunks, the last short
    for n, mu, tau in ((2, 0.5, 0.0), (4, 0.6, 0.3)):
        q_rest = (mu - tau) / (1 - tau)
        hits = hits_of(n, tau, q_rest, trials, 5, cpu)
        p = _tail_miss_exact(n, mu, tau)
        assert abs(hits / trials - p) < 6 * math.sqrt(p * (1 - p) / trials)
        if n == 2:  # chunked draws count every group: a repeat gives the same hits, another seed other hits
            assert hits == hits_of(n, tau, q_rest, trials, 5, cpu) != hits_of(n, tau, q_rest, trials, 6, cpu)
    assert hits_of(1, 0.2, 0.5, 1000, 0, cpu) == 0  # one draw is never a mixed group
    assert hits_of(3, 1.0, 0.0, 1000, 0, cpu) == 0  # every group hits E
    assert hits_of(3, 0.0, 1.0, 1000, 0, cpu) == 0  # every group all correct
    assert hits_of(3, 0.0, 0.0, 1000, 0, cpu) == 0  # every group all wrong
    # one small chunk, E never hit, half the rest correct: 0 < X_C < 3 with probability 3/4
    assert abs(hits_of(3, 0.0, 0.5, 4000, 1, cpu) / 4000 - 0.75) < 6 * math.sqrt(0.75 * 0.25 / 4000)


def test_tail_miss_estimate_takes_the_torch_sampler_off_the_cpu(monkeypatch):
    from fgrpo_sim.sim import montecarlo

    seen = []
    monkeypatch.setattr(montecarlo, "_device", lambda device: types.SimpleNamespace(type="cuda"))
    monkeypatch.setattr(montecarlo, "_tail_miss_hits_torch", lambda *args: seen.append(args) or 16)
    est, se = montecarlo.estimate_tail_miss(4, 0.6, 0.2, 64, 9, device="cuda")
    assert seen[0][:5] == (4, 0.2, pytest.approx(0.5, rel=1e-12), 64, 9)
    assert est == 0.25 and se == pytest.approx(math.sqrt(0.25 * 0.75 / 64), rel=1e-12)
    montecarlo.estimate_tail_miss(4, 1.0, 1.0, 64, 9)
    assert seen[-1][:3] == (4, 1.0, 0.0)  # tau = 1: the rest of the correct set is empty


def test_sample_counts_bounds_and_the_torch_sampler_without_the_native_one(monkeypatch):
    from fgrpo_sim.sim import montecarlo
    from fgrpo_sim.sim.categorical import sampling

    p = torch.tensor([0.5, 0.0, 0.25, 0.25])
    for kwargs, message in ((dict(seed=-1), r"^seed must be in \[0, 2\^62\], got -1$"),
                            (dict(n=0), r"^n must be in \[1, 2\^31 - 1\], got 0$"),
                            (dict(n=2**31), r"^n must be in \[1, 2\^31 - 1\], got 2147483648$"),
                            (dict(groups=0), r"^groups must be in \[1, 1000000000000\], got 0$")):
        with pytest.raises(ValueError, match=message):
            montecarlo.sample_counts(p, **(dict(n=4, groups=2, seed=0) | kwargs))
    native = montecarlo.sample_counts(p, 8, 3, 2**62)
    monkeypatch.setattr(sampling, "native_available", lambda: False)
    for counts in (native, montecarlo.sample_counts(p, 8, 3, 2**62)):
        assert counts.dtype == torch.int64 and counts.shape == (3, 4)
        assert counts.sum(1).tolist() == [8, 8, 8] and counts[:, 1].tolist() == [0, 0, 0]
    big = montecarlo.sample_counts(p, 100, 4000, 1).to(torch.float64)  # each row ~ Multinomial(100, p)
    assert torch.allclose(big.mean(0), 100 * p.double(), atol=0.3)


def test_mean_and_se_by_hand():
    from fgrpo_sim.sim.montecarlo import mean_and_se

    mean, se = mean_and_se(torch.tensor([1, 2, 3, 6]))  # integers read as float64
    assert mean == 3.0 and se == pytest.approx(math.sqrt(14 / 3) / 2, rel=1e-12)
    assert mean_and_se(torch.tensor([0.25])) == (0.25, math.inf)
    assert mean_and_se(torch.tensor([0.5, 0.5])) == (0.5, 0.0)


def test_sampled_masses_of_single_action_sets_are_exact():
    """One correct action (mass 0.3) and one incorrect (0.7): any draw from a set samples its whole mass."""
    from fgrpo_sim.sim.montecarlo import estimate_sampled_masses

    out = estimate_sampled_masses([0.3, 0.7], [1, 0], n=3, k=1, trials=50)
    assert out == {"P_pos": pytest.approx((0.3, 0.0), rel=1e-12, abs=1e-15),
                   "P_neg": pytest.approx((0.7, 0.0), rel=1e-12, abs=1e-15)}
    # two correct actions (0.1, 0.2), one draw from q_pos = p / mu: P_pos = 0.1 w.p. 1/3, 0.2 w.p. 2/3
    out = estimate_sampled_masses([0.1, 0.2, 0.7], [True, True, False], n=2, k=1, trials=6000, seed=4)
    mean, se = out["P_pos"]
    assert abs(mean - 0.5 / 3) < 6 * se and se == pytest.approx(math.sqrt(2 / 9) * 0.1 / math.sqrt(6000), rel=0.05)
    assert out == estimate_sampled_masses([0.1, 0.2, 0.7], [True, True, False], 2, 1, 6000, 4)
    assert out["P_pos"] != estimate_sampled_masses([0.1, 0.2, 0.7], [True, True, False], 2, 1, 6000, 5)["P_pos"]
    assert estimate_sampled_masses([0.1, 0.2, 0.7], [True, True, False], 2, 1, 500) == \
        estimate_sampled_masses([0.1, 0.2, 0.7], [True, True, False], 2, 1, 500, 0)


def test_masses_given_x_by_hand():
    """p = (1/2 correct, 1/2 incorrect), N = 2: X = 0 samples only the incorrect half, X = 2 only the correct
    half, X = 1 both; S_R = R_c P_pos + R_w P_neg; the groups count X ~ Binomial(2, 1/2)."""
    from fgrpo_sim.sim.montecarlo import estimate_masses_given_x

    out = estimate_masses_given_x([0.5, 0.5], [True, False], 2, 4000, 3, "cpu", 2.0, -1.0)
    assert out["groups"].sum() == 4000 and out["groups"].shape == (3,)
    assert np.all(np.abs(out["groups"] / 4000 - [0.25, 0.5, 0.25]) < 0.04)
    np.testing.assert_allclose(out["P_pos"], [0.0, 0.5, 0.5], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out["P_neg"], [0.5, 0.5, 0.0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out["S_R"], [-0.5, 0.5, 1.0], rtol=1e-12)
    for key in ("P_pos_se", "P_neg_se", "S_R_se"):
        np.testing.assert_allclose(out[key], 0.0, atol=1e-9)
    again = estimate_masses_given_x([0.5, 0.5], [True, False], 2, 4000, 3, "cpu", 2.0, -1.0)
    assert np.array_equal(out["groups"], again["groups"])
    other = estimate_masses_given_x([0.5, 0.5], [True, False], 2, 4000, 4, "cpu", 2.0, -1.0)
    assert not np.array_equal(out["groups"], other["groups"])
    default = estimate_masses_given_x([0.5, 0.5], [True, False], 2, 4000)  # seed 0, R_c = 1, R_w = 0
    assert np.array_equal(default["groups"],
                          estimate_masses_given_x([0.5, 0.5], [True, False], 2, 4000, 0)["groups"])
    np.testing.assert_allclose(default["S_R"], [0.0, 0.5, 0.5], atol=1e-15)


def test_masses_given_x_needs_two_groups_at_a_k():
    from fgrpo_sim.sim.montecarlo import estimate_masses_given_x

    one = estimate_masses_given_x([1.0, 0.0], [True, False], 2, 1)  # one group, X = 2
    assert one["groups"].tolist() == [0.0, 0.0, 1.0]
    for key in ("P_pos", "P_neg", "S_R", "P_pos_se", "P_neg_se", "S_R_se"):
        assert np.isnan(one[key]).all()
    two = estimate_masses_given_x([1.0, 0.0], [True, False], 2, 2)
    assert two["groups"].tolist() == [0.0, 0.0, 2.0]
    assert two["P_pos"][2] == 1.0 and two["P_neg"][2] == 0.0 and two["S_R_se"][2] == 0.0
    assert np.isnan(two["P_pos"][:2]).all() and np.isnan(two["S_R_se"][:2]).all()


def test_masses_given_x_se_is_the_standard_error_of_each_bins_mean():
    """Two correct actions (0.1, 0.3) and one incorrect: given X = 1, P_pos is 0.1 or 0.3 (one correct draw,
    each with probability proportional to its mass), so its SE is the bin's sample std / sqrt(groups)."""
    from fgrpo_sim.sim.montecarlo import estimate_masses_given_x

    out = estimate_masses_given_x([0.1, 0.3, 0.6], [True, True, False], 1, 8000, 2)
    g = out["groups"][1]
    share = (out["P_pos"][1] - 0.1) / 0.2  # the share of X = 1 groups that drew the 0.3 action
    assert abs(share - 0.75) < 0.05 and out["P_neg"][1] == 0.0
    assert out["P_pos_se"][1] == pytest.approx(0.2 * math.sqrt(share * (1 - share) * g / (g - 1)) / math.sqrt(g),
                                               rel=1e-6)


def test_unsampled_square_mass_by_hand():
    from fgrpo_sim.sim.montecarlo import estimate_unsampled_square_mass

    # one draw of two equal actions always misses exactly one: U2 = 1/4
    assert estimate_unsampled_square_mass([0.5, 0.5], 1, 30) == (0.25, 0.0)
    assert estimate_unsampled_square_mass([1.0, 0.0], 3, 30) == (0.0, 0.0)
    mean, se = estimate_unsampled_square_mass([0.5, 0.3, 0.2], 2, 20_000, 1)
    exact = sum(q * q * (1 - q) ** 2 for q in (0.5, 0.3, 0.2))
    assert abs(mean - exact) < 6 * se and 0 < se < 0.002
    assert estimate_unsampled_square_mass([0.5, 0.3, 0.2], 2, 500) == \
        estimate_unsampled_square_mass([0.5, 0.3, 0.2], 2, 500, 0)


def test_lr_multiplier_estimate_bounds_and_values():
    from fgrpo_sim.sim.montecarlo import estimate_lr_multiplier
    from fgrpo_sim.theory import lr_multiplier

    for kwargs, message in ((dict(gamma=-0.5), r"^gamma must be in \[0, inf\], got -0\.5$"),
                            (dict(trials=1), r"^trials must be in \[2, 1000000000\], got 1$"),
                            (dict(seed=2**62 + 1), r"^seed must be in \[0, 2\^62\], got 4611686018427387905$")):
        with pytest.raises(ValueError, match=message):
            estimate_lr_multiplier(**(dict(gamma=1.0, trials=10) | kwargs))
    assert estimate_lr_multiplier(0.0, 2, 2**62) == (1.0, 0.0)  # no focusing: every weight 1
    est, se = estimate_lr_multiplier(1.0, 20_000, 3)
    assert abs(est - float(lr_multiplier(1.0))) < 6 * se and 0 < se < 0.01
    # the SE is calibrated: the spread of independent estimates matches it
    spread = np.std([estimate_lr_multiplier(2.0, 500, s)[0] for s in range(20)], ddof=1)
    assert 0.5 < spread / estimate_lr_multiplier(2.0, 500, 0)[1] < 1.6


def test_smoothed_focal_weight_estimate_by_hand():
    from fgrpo_sim.sim.montecarlo import estimate_smoothed_focal_weight

    for kwargs, message in ((dict(n=0), r"^n must be in \[1, 4096\], got 0$"),
                            (dict(n=4097), r"^n must be in \[1, 4096\], got 4097$"),
                            (dict(trials=1), r"^trials must be in \[2, 1000000000\], got 1$"),
                            (dict(seed=-1), r"^seed must be in \[0, 2\^62\], got -1$"),
                            (dict(mu=-0.5), r"^mu must be in \[0, 1\], got -0\.5$")):
        with pytest.raises(ValueError, match=message):
            estimate_smoothed_focal_weight(**(dict(n=2, mu=0.5, gamma=1.0, focal_smoothing=0.5, trials=10) | kwargs))
    # mu = 1: every group all correct, weight (1 - 2.5 / 3)^1 = 1/6; mu = 0: (1 - 0.5 / 3)^2 = 25/36
    assert estimate_smoothed_focal_weight(2, 1.0, 1.0, 0.5, 2) == (pytest.approx(1 / 6, rel=1e-12), 0.0)
    assert estimate_smoothed_focal_weight(2, 0.0, 2.0, 0.5, 5, 2**62) == (pytest.approx(25 / 36, rel=1e-12), 0.0)
    assert estimate_smoothed_focal_weight(1, 1.0, 1.0, 0.0, 4) == (0.0, 0.0)  # raw estimate 1: weight 0
    assert estimate_smoothed_focal_weight(4096, 0.0, 1.0, 0.0, 2) == (1.0, 0.0)
    # N = 1, mu = 1/2: weight (1 - 1.5/2) = 1/4 or (1 - 0.5/2) = 3/4, equally likely
    mean, se = estimate_smoothed_focal_weight(1, 0.5, 1.0, 0.5, 4000, 7)
    assert abs(mean - 0.5) < 6 * 0.25 / math.sqrt(4000) and se == pytest.approx(0.25 / math.sqrt(4000), rel=0.02)


def test_smoothed_lr_multiplier_estimate_bounds_and_values():
    from fgrpo_sim.sim.montecarlo import estimate_smoothed_lr_multiplier
    from fgrpo_sim.theory import smoothed_lr_multiplier

    for kwargs, message in ((dict(n=1), r"^n must be in \[2, 4096\], got 1$"),
                            (dict(n=4097), r"^n must be in \[2, 4096\], got 4097$"),
                            (dict(trials=10**9 + 1), r"^trials must be in \[2, 1000000000\], got 1000000001$"),
                            (dict(seed=-1), r"^seed must be in \[0, 2\^62\], got -1$")):
        with pytest.raises(ValueError, match=message):
            estimate_smoothed_lr_multiplier(**(dict(n=2, gamma=1.0, focal_smoothing=0.5, trials=10) | kwargs))
    assert estimate_smoothed_lr_multiplier(2, 0.0, 0.5, 2, 2**62) == (pytest.approx(1.0, rel=1e-12), 0.0)
    est, se = estimate_smoothed_lr_multiplier(4, 2.0, 0.5, 20_000, 1)
    assert abs(est - float(smoothed_lr_multiplier(4, 2.0, 0.5))) < 6 * se and 0 < se < 0.01
    spread = np.std([estimate_smoothed_lr_multiplier(4, 2.0, 0.5, 400, s)[0] for s in range(20)], ddof=1)
    assert 0.5 < spread / estimate_smoothed_lr_multiplier(4, 2.0, 0.5, 400, 0)[1] < 1.6
    # N = 2: only X = 1 groups are active, mu_hat = 1/2: every active weight (1 - 1.5/3)^1 = 1/2
    assert estimate_smoothed_lr_multiplier(2, 1.0, 0.5, 50, 3) == (pytest.approx(0.5, rel=1e-12), 0.0)
    assert estimate_smoothed_lr_multiplier(4096, 0.0, 0.5, 2)[0] == pytest.approx(1.0, rel=1e-12)


def test_binary_groups_put_the_correct_rollouts_first():
    from fgrpo_sim.sim.montecarlo import _binary_groups

    rows = _binary_groups(np.array([0, 2, 3]), 3)
    assert rows.dtype == torch.float64 and rows.tolist() == [[0, 0, 0], [1, 1, 0], [1, 1, 1]]


def test_every_estimator_reads_p_as_real_numbers():
    """p given as exact rationals (Fractions) is read as floats by every estimator, like a list of floats."""
    from fractions import Fraction

    from fgrpo_sim.sim import montecarlo

    exact, floats = [Fraction(1, 2), Fraction(1, 2)], [0.5, 0.5]
    got = montecarlo.estimate_masses_given_x(exact, [True, False], 2, 40, 1)
    want = montecarlo.estimate_masses_given_x(floats, [True, False], 2, 40, 1)
    assert all(np.array_equal(got[key], want[key], equal_nan=True) for key in want)
    assert montecarlo.estimate_sampled_masses(exact, [1, 0], 2, 1, 20) == \
        montecarlo.estimate_sampled_masses(floats, [1, 0], 2, 1, 20)
    assert montecarlo.estimate_unsampled_square_mass(exact, 1, 20) == (0.25, 0.0)


def test_masses_given_x_when_no_group_reaches_all_correct():
    """Every group all wrong (the correct action has mass 0): only X = 0 has groups; the arrays still span k = 0..N."""
    from fgrpo_sim.sim.montecarlo import estimate_masses_given_x

    out = estimate_masses_given_x([0.0, 1.0], [True, False], 3, 10, 0, "cpu", 1.0, -0.5)
    assert out["groups"].tolist() == [10.0, 0.0, 0.0, 0.0]
    assert out["P_pos"][0] == 0.0 and out["P_neg"][0] == 1.0 and out["S_R"][0] == -0.5
    assert all(out[key].shape == (4,) and np.isnan(out[key][1:]).all() for key in ("P_pos", "S_R_se"))


# --- checks.py ----------------------------------------------------------------------------------------------------------

#: Lemma 3.1's fixed grids: the full run's N per (mu, tau) (N tau <= 8), Fig 5's start, the far-mu points
_FULL_GRID_N = {(0.1, 0.001): (2, 8, 32, 128, 512, 2048), (0.1, 0.01): (2, 8, 32, 128, 512),
                (0.2, 0.002): (2, 8, 32, 128, 512, 2048), (0.2, 0.02): (2, 8, 32, 128),
                (0.5, 0.005): (2, 8, 32, 128, 512), (0.5, 0.05): (2, 8, 32, 128),
                (0.8, 0.008): (2, 8, 32, 128, 512), (0.8, 0.08): (2, 8, 32),
                (0.9, 0.009): (2, 8, 32, 128, 512), (0.9, 0.09): (2, 8, 32)}
_FIG5 = (0.630075138122221, 6.296728366145108e-05)  # CategoricalConfig().initial_masses(): q_pos, tau
_FAR = [(0.8, 0.008, 4), (0.85, 0.02, 16)]


def _rounded(grid):
    return [(round(mu, 12), round(tau, 15), n) for mu, tau, n in grid]


def test_tail_miss_grids_are_the_fixed_documented_points():
    """`fgrpo check` runs one fixed set of points (a check's name keeps its meaning from run to run)."""
    from fgrpo_sim.sim.checks import tail_miss_points

    grid, trials = tail_miss_points(True)
    assert trials == 200_000
    assert _rounded(grid) == _rounded([(0.5, 0.05, 4), (0.5, 0.05, 16), (0.5, 0.05, 64), (0.3, 0.003, 1024),
                                       (*_FIG5, 4096), (0.2, 0.002, 64), (0.9, 0.09, 8), (0.1, 0.01, 8), *_FAR])
    grid, trials = tail_miss_points(False)
    assert trials == 1_000_000
    full = [(mu, tau, n) for (mu, tau), ns in _FULL_GRID_N.items() for n in ns]
    assert _rounded(grid) == _rounded(full + [(*_FIG5, n) for n in (1024, 4096, 16384, 65536)] + _FAR)


def _recording(monkeypatch, name, value):
    """Replace montecarlo.NAME by a stub returning `value`, recording its positional arguments."""
    from fgrpo_sim.sim import montecarlo

    calls = []
    monkeypatch.setattr(montecarlo, name, lambda *args: calls.append(args) or value)
    return calls


def test_tail_miss_checks_seed_each_point_and_read_back_its_hits(monkeypatch):
    from scipy.stats import binomtest

    from fgrpo_sim.sim.checks import finalise, tail_miss_checks
    from fgrpo_sim.theory import tail_miss_probability

    calls = _recording(monkeypatch, "estimate_tail_miss", (0.25 + 0.4e-6, 0.001))  # 50,000.08 hits: 50,000
    out = finalise(tail_miss_checks(True, 3, "cpu"))
    assert [c[3:] for c in calls] == [(200_000, 3 * 7919 + i, "cpu") for i in range(10)]
    assert [c[:3] for c in calls][:2] == [(4, 0.5, 0.05), (16, 0.5, 0.05)]
    first = out[0]
    assert first["name"] == "lemma3.1 Pr(B) N=4 mu=0.5 tau=0.05" and first["trials"] == 200_000
    assert first["closed_form"] == pytest.approx(float(tail_miss_probability(4, 0.5, 0.05)), rel=1e-12)
    assert first["estimate"] == 0.25 + 0.4e-6 and first["kind"] == "interval" and first["level"] == 1e-4
    ci = binomtest(50_000, 200_000).proportion_ci(confidence_level=1 - 1e-4, method="wilson")
    assert first["interval"] == pytest.approx([ci.low, ci.high], rel=1e-12)
    assert out[4]["name"] == "lemma3.1 Pr(B) N=4096 mu=0.630075 tau=6.29673e-05"


def test_lemma_h1_checks_name_k_and_seed_each_group_size(monkeypatch):
    from fgrpo_sim.sim.checks import lemma_h1_checks
    from fgrpo_sim.sim.checks_exact import toy_policy
    from fgrpo_sim.theory import expected_sampled_correct_mass, expected_sampled_incorrect_mass

    calls = _recording(monkeypatch, "estimate_sampled_masses", {"P_pos": (0.4, 0.01), "P_neg": (0.2, 0.02)})
    out = lemma_h1_checks(True, 5, "cpu")
    assert [c[2:] for c in calls] == [(8, 3, 20_000, 13, "cpu"), (32, 20, 20_000, 37, "cpu")]
    p, correct = toy_policy(60, 15, 0)
    assert np.array_equal(calls[0][0], p) and np.array_equal(calls[0][1], correct)
    assert [r["name"] for r in out] == ["lemmaH.1 E[P_pos|X=k] N=8 k=3", "lemmaH.1 E[P_neg|X=k] N=8 k=3",
                                        "lemmaH.1 E[P_pos|X=k] N=32 k=20", "lemmaH.1 E[P_neg|X=k] N=32 k=20"]
    assert out[2]["closed_form"] == pytest.approx(float(expected_sampled_correct_mass(p, correct, 32, 20)), rel=1e-12)
    assert out[3]["closed_form"] == pytest.approx(float(expected_sampled_incorrect_mass(p, correct, 32, 20)), rel=1e-12)
    assert (out[0]["estimate"], out[1]["estimate"], out[0]["trials"]) == (0.4, 0.2, 20_000)
    calls.clear()
    assert len(lemma_h1_checks(False, 0, "cpu")) == 6
    assert [c[2:5] for c in calls] == [(8, 3, 200_000), (32, 20, 200_000), (256, 100, 200_000)]


def test_normal_intervals_by_hand_and_the_bonferroni_level():
    from fgrpo_sim.sim.checks import FAMILY_FALSE_FAILURE, _normal_check, _result, _z, finalise

    assert _z(0.05) == pytest.approx(1.959963984540054, rel=1e-12)
    assert _z(1e-3) == pytest.approx(3.2905267314918945, rel=1e-12)
    fixed = _result("fixed", 2.0, 1.9, (1.8, 2.2))
    results = finalise([_normal_check("a", 0.52, 0.5, 0.01, trials=7), fixed,
                        _normal_check("b", 0.5, 0.5, 0.01, also=False), _normal_check("c", 0.0, 0.0, 0.0),
                        _normal_check("d", 1.0 + 5e-13, 1.0, 0.0), _normal_check("e", 1.0 + 2e-12, 1.0, 0.0)])
    level = FAMILY_FALSE_FAILURE / 5
    half = _z(level) * 0.01 + 0.52e-12
    a = results[0]
    assert a["level"] == level == 2e-4 and a["trials"] == 7 and a["kind"] == "interval"
    assert a["interval"] == pytest.approx([0.5 - half, 0.5 + half], rel=1e-12) and a["passed"] is True
    assert set(a) == {"name", "closed_form", "estimate", "interval", "kind", "passed", "level", "trials"}
    assert results[1] is fixed and "level" not in fixed and fixed["passed"] is True
    assert [r["passed"] for r in results[2:]] == [False, True, True, False]  # b inside but `also` false
    assert finalise([fixed]) == [fixed]
    one = finalise([_normal_check("z", 0.5, 0.5, 0.1)])[0]
    assert one["level"] == FAMILY_FALSE_FAILURE and one["interval"][1] == pytest.approx(0.5 + 0.1 * _z(1e-3))


def test_tolerance_results_include_their_bounds():
    from fgrpo_sim.sim.checks import _pending, _result

    assert _result("lo", 1.8, 0, (1.8, 2.2))["passed"] and _result("hi", 2.2, 0, [1.8, 2.2])["passed"]
    r = _result("out", 2.2000001, 5, (1.8, 2.2), etas=[1])
    assert r == {"name": "out", "closed_form": 2.2000001, "estimate": 5.0, "interval": [1.8, 2.2],
                 "kind": "tolerance", "passed": False, "etas": [1]}
    assert type(r["closed_form"]) is float and type(r["interval"][0]) is float
    pending = _pending("p", 1, 2, None, also=0, groups=3)
    assert pending == {"name": "p", "closed_form": 1.0, "estimate": 2.0, "interval": None, "kind": "interval",
                       "passed": None, "_bounds": None, "_also": False, "groups": 3}
    assert _pending("q", 1, 2, None)["_also"] is True


def test_conditional_ks_keep_the_k_with_enough_expected_groups():
    from fgrpo_sim.sim.checks import MIN_EXPECTED_GROUPS_PER_K, conditional_ks

    p, correct = np.array([0.25, 0.25, 0.5]), np.array([True, True, False])  # mu = 1/2
    assert MIN_EXPECTED_GROUPS_PER_K == 2000
    # expected 2000 - 2e-13 (pmf rounding), 4000 and exactly 2000 groups: the bound is inclusive
    assert conditional_ks(p, correct, 2, 8000) == [1, 2]
    assert conditional_ks(p, correct, 2, 8001) == [0, 1, 2] and conditional_ks(p, correct, 2, 7999) == [1]
    assert conditional_ks(p, correct, 1, 3999) == []


def test_increment_checks_need_a_rising_closed_form():
    from fgrpo_sim.sim.checks import _increment_check, finalise

    est = {"S_R": np.array([0.1, 0.3, 0.6]), "S_R_se": np.array([0.03, 0.04, 0.0]), "groups": np.array([5.0, 9.0, 2.0])}
    up = _increment_check("up", 0.2, 0.4, est, "S_R", 0)
    down = _increment_check("down", 0.4, 0.2, est, "S_R", 0)
    assert up["closed_form"] == pytest.approx(0.2) and up["estimate"] == pytest.approx(0.2) and up["groups"] == [5, 9]
    up, down = finalise([up, down])
    assert up["passed"] and not down["passed"]
    from fgrpo_sim.sim.checks import _z

    assert up["interval"][1] - up["estimate"] == pytest.approx(0.05 * _z(5e-4) + 0.2e-12, rel=1e-9)
    second = _increment_check("k=1", 0.3, 0.3, est, "S_R", 1)
    assert second["estimate"] == pytest.approx(0.3) and second["groups"] == [9, 2]
    assert finalise([second])[0]["passed"] is False  # 0.3 rise vs a closed form of 0 with SE 0.04


def test_conditional_checks_call_the_estimator_with_the_runs_settings(monkeypatch):
    from fgrpo_sim.sim import checks

    n = 8
    flat = np.linspace(0.1, 0.9, n + 1)
    stub = {"P_pos": flat, "P_neg": flat, "S_R": flat, "P_pos_se": flat * 0 + 0.01, "P_neg_se": flat * 0 + 0.01,
            "S_R_se": flat * 0 + 0.01, "groups": np.arange(n + 1) * 100.0}
    calls = _recording(monkeypatch, "estimate_masses_given_x", stub)
    out = checks.conditional_on_x_checks(True, 4, "cpu", reward_wrong=-0.5)
    assert [c[2:] for c in calls] == [(8, 200_000, 21, "cpu", 1.0, -0.5)]
    p, correct = checks.toy_policy(40, 12, 5)
    ks = checks.conditional_ks(p, correct, 8, 200_000)
    names = [r["name"] for r in out]
    assert [nm for nm in names if nm.startswith("corH.2 E[S_R|X=k] ")] == \
        [f"corH.2 E[S_R|X=k] N=8 k={k} R_w=-0.5" for k in ks]
    assert sum(nm.startswith("corH.2 E[S_R|X=k+1]") for nm in names) == len(ks) - 1
    unconditioned = [r for r in out if "unconditioned" in r["name"]]
    assert [r["name"] for r in unconditioned][:2] == [f"lemmaH.1 E[P_pos|X=k] unconditioned N=8 k={ks[0]}",
                                                      f"lemmaH.1 E[P_neg|X=k] unconditioned N=8 k={ks[0]}"]
    step = max(1, len(ks) // 3)
    assert len(unconditioned) == 2 * len(ks[::step]) and unconditioned[0]["groups"] == ks[0] * 100
    from fgrpo_sim.theory import expected_sampled_correct_mass, expected_sampled_incorrect_mass

    k = ks[1]
    pos, neg = (float(f(p, correct, 8, k)) for f in (expected_sampled_correct_mass, expected_sampled_incorrect_mass))
    (s_r,) = [r for r in out if r["name"] == f"corH.2 E[S_R|X=k] N=8 k={k} R_w=-0.5"]
    assert s_r["closed_form"] == pytest.approx(pos - 0.5 * neg, rel=1e-12)
    assert s_r["estimate"] == flat[k] and s_r["groups"] == 100 * k
    (rise,) = [r for r in out if r["name"] == f"corH.2 E[S_R|X=k+1] - E[S_R|X=k] >= 0 N=8 k={k}"]
    assert rise["estimate"] == pytest.approx(0.1, rel=1e-9) and rise["groups"] == [100 * k, 100 * k + 100]
    assert unconditioned[1]["closed_form"] == pytest.approx(
        float(expected_sampled_incorrect_mass(p, correct, 8, ks[0])), rel=1e-12)
    calls.clear()
    monkeypatch.setattr(checks.montecarlo, "estimate_masses_given_x",
                        lambda *args: calls.append(args) or {k: np.resize(v, 17) for k, v in stub.items()})
    checks.conditional_on_x_checks(False, 0, "cpu")
    assert [c[2:] for c in calls] == [(16, 2_000_000, 17, "cpu", 1.0, -1.0)]


def test_unsampled_square_checks_cases_and_seeds(monkeypatch):
    from fgrpo_sim.sim import checks

    calls = _recording(monkeypatch, "estimate_unsampled_square_mass", (0.01, 0.001))
    out = checks.unsampled_square_checks(True, 2, "cpu")
    assert [c[1:] for c in calls] == [(16, 20_000, 18, "cpu"), (4096, 100, 4098, "cpu")]
    assert len(calls[0][0]) == 60 and len(calls[1][0]) == 128_000
    assert calls[1][0].sum() == pytest.approx(1.0, rel=1e-9)
    assert [r["name"] for r in out] == ["brorl.EU2 toy K=60 N=16", "brorl.EU2 paper start K=128000 N=4096"]
    assert out[1]["trials"] == 100
    calls.clear()
    checks.unsampled_square_checks(False, 0, "cpu")
    assert [c[1:3] for c in calls] == [(16, 200_000), (4096, 400), (65536, 400)]


def test_monte_carlo_families_seed_and_size_their_draws(monkeypatch):
    from fgrpo_sim.sim import checks

    lr = _recording(monkeypatch, "estimate_lr_multiplier", (0.5, 0.01))
    weight = _recording(monkeypatch, "estimate_smoothed_focal_weight", (0.5, 0.01))
    smoothed = _recording(monkeypatch, "estimate_smoothed_lr_multiplier", (0.5, 0.01))
    steps, etas = [], []
    monkeypatch.setattr(checks, "_simulator_one_step", lambda *args, **kwargs: steps.append((args, kwargs)) or (1.0, 2.0))
    monkeypatch.setattr("fgrpo_sim.theory.exact_mass_change", lambda *args: etas.append(args[-1]) or (1.0, 2.0 + 3e-9))
    focal = checks.focal_checks(True, 2, "cpu")
    # the fixed group has X = 2 of N = 16 correct: mu_hat 1/8; the exact step at eta = 2 times (7/8)^gamma
    assert [args[3:] + (kwargs,) for args, kwargs in steps] == [(2.0, 1.0, -1.0, {"gamma": g}) for g in (0.5, 1.0, 2.0)]
    assert etas == pytest.approx([2.0 * (7 / 8) ** g for g in (0.5, 1.0, 2.0)], rel=1e-12)
    assert [r["name"] for r in focal[:3]] == [f"focal step gamma={g} mu_hat=0.125: simulator = exact step at eta g"
                                              for g in ("0.5", "1", "2")]
    assert [(r["passed"], r["interval"]) for r in focal[:3]] == [(False, [0.0, 1e-9])] * 3  # 1.5e-9 relative gap
    assert focal[0]["estimate"] == pytest.approx(1.5e-9, rel=1e-6)
    assert lr == [(0.5, 400_000, 62), (1.0, 400_000, 63), (2.0, 400_000, 64)]
    assert [r["name"] for r in focal[3:]] == ["focal m_gamma gamma=0.5", "focal m_gamma gamma=1",
                                              "focal m_gamma gamma=2"]
    out = checks.smoothing_checks(True, 2, "cpu")
    assert weight == [(n, mu, g, a, 200_000, 89 + i) for i, (n, mu, g, a) in enumerate(checks.SMOOTHED_WEIGHT_POINTS)]
    assert smoothed == [(n, g, a, 200_000, 97 + i) for i, (n, g, a) in enumerate(checks.SMOOTHED_LR_POINTS)]
    assert [r["name"] for r in out] == ["smoothed E[g] N=2 mu=0.8 gamma=1 alpha=0.5",
                                        "smoothed E[g] N=4 mu=0.9 gamma=0.5 alpha=0.5",
                                        "smoothed E[g] N=8 mu=0.3 gamma=2 alpha=1",
                                        "smoothed E[g] N=16 mu=0.8 gamma=0.5 alpha=0",
                                        "smoothed m_gamma N=4 gamma=2 alpha=0.5",
                                        "smoothed m_gamma N=8 gamma=0.5 alpha=0.5",
                                        "smoothed m_gamma N=16 gamma=2 alpha=0"]
    lr.clear(), weight.clear(), smoothed.clear()
    checks.focal_checks(False, 0, "cpu"), checks.smoothing_checks(False, 0, "cpu")
    assert {c[1] for c in lr} == {4_000_000} and {c[4] for c in weight} == {2_000_000}
    assert {c[3] for c in smoothed} == {2_000_000}


def test_run_checks_runs_every_family_in_order_and_finalises(monkeypatch):
    import fgrpo_sim.progress
    from fgrpo_sim.sim import checks

    seen, bars = [], []

    def family(tag):
        def run(quick, seed, device):
            seen.append((tag, quick, seed, device))
            return [checks._normal_check(tag, 0.5, 0.5, 0.1)]
        return run

    def bar(iterable, **kwargs):
        bars.append(kwargs)
        return iterable

    monkeypatch.setattr(checks, "FAMILIES", (family("a"), family("b")))
    monkeypatch.setattr(fgrpo_sim.progress, "bar", bar)
    out = checks.run_checks(True, 9, "cpu", progress=True)
    assert seen == [("a", True, 9, "cpu"), ("b", True, 9, "cpu")]
    assert [r["level"] for r in out] == [5e-4, 5e-4] and all("_bounds" not in r for r in out)
    assert bars == [dict(progress=True, desc="checks", leave=False)]
    seen.clear()
    checks.run_checks()
    assert seen == [("a", False, 0, "cpu"), ("b", False, 0, "cpu")] and bars[-1]["progress"] is False
    with pytest.raises(ValueError, match="device"):
        checks.run_checks(True, 0, "tpu")
    assert len(seen) == 2


def test_format_results_table_by_hand():
    from fgrpo_sim.sim.checks import _normal_check, _result, finalise, format_results

    results = finalise([_normal_check("long check name", 0.5, 0.5, 0.0), _result("b", 2.3, 2.5, (1.8, 2.2))])
    lines = format_results(results).splitlines()
    # columns: the widest name, then 12, 12, 27 (right-aligned) and 10 (left) characters, two blanks apart
    assert lines[0] == ("check             closed form      estimate                       bounds  bounds are  "
                        "verdict")
    assert lines[1] == ("long check name           0.5           0.5  [        0.5,         0.5]  interval    "
                        "pass")
    assert lines[2] == ("b                         2.3           2.5  [        1.8,         2.2]  tolerance   "
                        "FAIL")
    assert lines[3] == "1/2 checks passed"
    assert lines[4] == ("1 sampling intervals, each at false-failure level 0.001 (Bonferroni: a correct build "
                        "fails a run with probability <= 0.1%)")
    assert format_results([_result("t", 1.0, 1.0, (0.0, 2.0))]).splitlines()[1:] == [
        "t             1             1  [          0,           2]  tolerance   pass", "1/1 checks passed"]


def test_the_reachability_probe_waits_ten_seconds_at_most(monkeypatch):
    from fgrpo_sim.sim import executor

    probes = []

    class Connection:
        def close(self):
            probes.append("closed")

    monkeypatch.setattr(executor.socket, "create_connection",
                        lambda address, timeout: probes.append((address, timeout)) or Connection())
    executor._check_reachable("ray://head.example:10001", "--ray-address")
    assert probes == [(("head.example", 10001), 10.0), "closed"] and executor.CONNECT_TIMEOUT_S == 10.0


# --- smoothing_study.py -------------------------------------------------------------------------------------------------

def test_smoothing_study_trains_the_headline_setting_at_both_alphas(monkeypatch, tmp_path):
    from fgrpo_sim.sim import smoothing_study
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec

    trained = []
    monkeypatch.setattr(smoothing_study, "run_study",
                        lambda spec, progress, device: trained.append((spec, progress, device)) or spec.focal_smoothing)
    monkeypatch.setattr(smoothing_study, "compare", lambda frames: {"frames": frames})
    record = tmp_path / "record.jsonl"
    assert smoothing_study.run(record, device="cuda:1", progress=True) == {"frames": {0.0: 0.0, 0.5: 0.5}}
    assert record.read_text() == '{"frames": {"0.0": 0.0, "0.5": 0.5}}\n'
    assert [(s.focal_smoothing, p, d) for s, p, d in trained] == [(0.0, True, "cuda:1"), (0.5, True, "cuda:1")]
    spec = trained[1][0]
    assert (spec.optimizers, spec.parametrisations, spec.rare_masses, spec.adam_lrs) == (("adam",), ("orthogonal",),
                                                                                        (0.02,), (0.01,))
    assert spec.gammas == GroupSizeStudySpec().gammas and spec.group_sizes == GroupSizeStudySpec().group_sizes
    trained.clear()
    smoothing_study.run(str(record))
    assert [(p, d) for _, p, d in trained] == [(False, "cpu"), (False, "cpu")]
    assert smoothing_study.ALPHAS == (0.0, 0.5)
    assert type(smoothing_study.headline_spec(1).focal_smoothing) is float
    assert smoothing_study._fgrpo_name(0.5, 0.0) == "F-GRPO gamma=0.5"
    assert smoothing_study._fgrpo_name(1.0, 0.5) == "F-GRPO gamma=1 alpha=0.5"


# --- checks_exact.py ----------------------------------------------------------------------------------------------------

def test_toy_policy_is_the_fixed_log_normal_policy():
    from fgrpo_sim.sim.checks_exact import POLICY_SEEDS, toy_policy

    p, correct = toy_policy(6, 2, 7)
    w = np.exp(np.random.default_rng(7).normal(0.0, 1.5, 6))  # log-normal weights, sigma 1.5
    w[0] = 20 * w[0]  # one dominant correct action
    np.testing.assert_allclose(p, w / w.sum(), rtol=1e-12)
    assert correct.tolist() == [True, True, False, False, False, False]
    assert POLICY_SEEDS == {"lemmaH.1": 0, "brorl": 1, "prop3.2": 2, "counts": 3, "conditional": 5}


def test_exact_tolerance_bounds_are_inclusive():
    from fgrpo_sim.sim.checks_exact import _tolerance

    assert _tolerance("a", 0.0, 1e-9)["passed"] and _tolerance("a", 1e-9, 1e-9)["passed"]
    assert not _tolerance("a", -1e-20, 1e-9)["passed"] and not _tolerance("a", 1.1e-9, 1e-9)["passed"]
    assert _tolerance("n", 2, 3, closed_form=4, extra=1) == {"name": "n", "closed_form": 4.0, "estimate": 2.0,
                                                             "interval": [0.0, 3.0], "kind": "tolerance",
                                                             "passed": True, "extra": 1}


def test_peak_checks_find_the_argmax_and_fail_on_an_off_by_one_peak(monkeypatch):
    """N* at each point equals the argmax of Pr(B) found here with plain numpy; a peak one off fails every check."""
    import fgrpo_sim.theory as theory
    from fgrpo_sim.sim.checks_exact import PEAK_POINTS, peak_checks

    points = PEAK_POINTS + (_FIG5,)
    n = np.arange(1, 5000, dtype=float)  # every peak here lies below 30
    want = [int(n[np.argmax(_tail_miss_exact(n, mu, tau))]) for mu, tau in points]
    assert want[0] == 14  # the example, N*(0.3, 0.003)
    honest = peak_checks(True, 0, "cpu")
    assert [(r["closed_form"], r["estimate"], r["interval"], r["passed"]) for r in honest] == \
        [(w, w, [w, w], True) for w in want]
    assert [r["name"] for r in honest][0] == "N* peak_group_size mu=0.3 tau=0.003 = argmax of Pr(B) over N"
    assert honest[4]["name"] == "N* peak_group_size mu=0.630075 tau=6.29673e-05 = argmax of Pr(B) over N"
    real = theory.peak_group_size
    monkeypatch.setattr(theory, "peak_group_size",
                        lambda mu, tau: types.SimpleNamespace(n_star=real(mu, tau).n_star + 1))
    assert not any(r["passed"] for r in peak_checks(True, 0, "cpu"))


def test_subset_pass_at_k_by_hand():
    from fgrpo_sim.sim.checks_exact import _subset_pass_at_k

    assert _subset_pass_at_k(4, 1, 2) == 0.5  # 3 of the 6 pairs hold sample 0
    assert _subset_pass_at_k(4, 2, 2) == 5 / 6  # only the pair {2, 3} misses
    assert _subset_pass_at_k(3, 0, 1) == 0.0 and _subset_pass_at_k(3, 3, 3) == 1.0 and _subset_pass_at_k(5, 1, 5) == 1.0


def test_pass_at_k_checks_fail_on_an_estimate_off_by_a_part_in_a_billion(monkeypatch):
    import fgrpo_sim.metrics as metrics
    from fgrpo_sim.sim.checks_exact import pass_at_k_checks

    honest = pass_at_k_checks(True, 0, "cpu")
    assert [r["name"] for r in honest] == [
        "pass@k n=5 = share of k-subsets with a correct sample (every c, k)",
        "pass@k n=8 = share of k-subsets with a correct sample (every c, k)",
        "pass@k n=12 unbiased: mean over c ~ Bin(n, p) = 1 - (1 - p)^k"]
    assert all(r["passed"] and r["interval"] == [0.0, 1e-12] for r in honest)
    real = metrics.pass_at_k
    monkeypatch.setattr(metrics, "pass_at_k", lambda n, c, k: real(n, c, k) * (1 + 1e-9))
    assert [r["passed"] for r in pass_at_k_checks(True, 0, "cpu")] == [False, False, False]


def test_variance_checks_fail_on_a_biased_variance(monkeypatch):
    import fgrpo_sim.metrics as metrics
    from fgrpo_sim.sim.checks_exact import variance_checks

    honest = variance_checks(True, 0, "cpu")
    assert [r["name"] for r in honest] == [
        f"pass@k variance n={n} unbiased: mean over c ~ Bin(n, p) = exact variance" for n in (8, 21)]
    assert all(r["passed"] for r in honest)
    real = metrics.pass_at_k_variance
    # the plug-in variance (divide by n, not n - 1 style): biased, so the check must see it
    monkeypatch.setattr(metrics, "pass_at_k_variance", lambda n, c, k: real(n, c, k) * (1 + 1e-6))
    assert [r["passed"] for r in variance_checks(True, 0, "cpu")] == [False, False]
    # only k = n // 2 wrong (the last k checked): still caught at both n
    monkeypatch.setattr(metrics, "pass_at_k_variance", lambda n, c, k: real(n, c, k) + (1e-6 if k == n // 2 else 0))
    assert [r["passed"] for r in variance_checks(True, 0, "cpu")] == [False, False]


def test_binary_groups_and_closed_form_advantages_by_hand():
    from fgrpo_sim.sim.checks_exact import _binary_groups, _closed_form_advantages, _relative_gap

    rows = _binary_groups(2, 1.0, -1.0)
    assert rows.dtype == torch.float64 and rows.tolist() == [[-1, -1], [1, -1], [1, 1]]
    assert _binary_groups(1).tolist() == [[0.0], [1.0]]
    # N = 4: X = 1 has mu 1/4, A+ = sqrt(3), A- = -sqrt(1/3); the focal weight (1 - 1/4)^2 = 9/16
    a = _closed_form_advantages(4, gamma=2.0)
    assert a.shape == (5, 4) and a[0].tolist() == [0, 0, 0, 0] and a[4].tolist() == [0, 0, 0, 0]
    np.testing.assert_allclose(a[1], np.array([3 ** 0.5, -(1 / 3) ** 0.5, -(1 / 3) ** 0.5, -(1 / 3) ** 0.5]) * 9 / 16,
                               rtol=1e-12)
    np.testing.assert_allclose(_closed_form_advantages(4)[3], [(1 / 3) ** 0.5] * 3 + [-(3 ** 0.5)], rtol=1e-12)
    np.testing.assert_allclose(_closed_form_advantages(2)[1], [1.0, -1.0], rtol=1e-12)
    got, want = torch.tensor([1.0, 2.2, 0.0], dtype=torch.float64), torch.tensor([1.0, 2.0, 0.0], dtype=torch.float64)
    assert _relative_gap(got, want) == pytest.approx(0.1, rel=1e-12)
    assert _relative_gap(torch.tensor([1.5, 9.0]), torch.tensor([1.0, 0.0]), torch.tensor([True, False])) == 0.5
    f64 = torch.float64
    assert _relative_gap(torch.tensor([1e-13], dtype=f64), torch.tensor([0.0], dtype=f64)) == pytest.approx(0.1, rel=1e-9)


def test_advantage_checks_catch_a_wrong_scale_and_a_live_inactive_group(monkeypatch):
    import fgrpo_sim.core as core
    from fgrpo_sim.sim.checks_exact import ADVANTAGE_TOLERANCE, advantage_checks

    (honest,) = advantage_checks(True, 0, "cpu")
    assert honest["passed"] and 0 < honest["estimate"] < ADVANTAGE_TOLERANCE == 1e-5  # the eps in std + eps
    assert honest["name"] == "core.grpo_advantages N=8: A+ = sqrt((1-mu)/mu), A- = -sqrt(mu/(1-mu)) (max relative gap)"
    real = core.grpo_advantages
    monkeypatch.setattr(core, "grpo_advantages", lambda rewards: real(rewards) * 1.0001)
    assert not advantage_checks(True, 0, "cpu")[0]["passed"]
    # unbiased std (n - 1): every active advantage off by sqrt(7/8)
    monkeypatch.setattr(core, "grpo_advantages", lambda rewards: real(rewards, unbiased_std=True))
    assert not advantage_checks(True, 0, "cpu")[0]["passed"]
    # all-correct and all-wrong groups given a nonzero advantage
    monkeypatch.setattr(core, "grpo_advantages", lambda rewards: real(rewards) + 1e-3 * (rewards.std(1) == 0)[:, None])
    (planted,) = advantage_checks(True, 0, "cpu")
    assert not planted["passed"] and planted["estimate"] == pytest.approx(1e-3, rel=1e-6)
    # only the R_w = -1 scale wrong
    monkeypatch.setattr(core, "grpo_advantages", lambda rewards: real(rewards) * (1.001 if rewards.min() < 0 else 1))
    assert not advantage_checks(True, 0, "cpu")[0]["passed"]


def test_focal_sign_checks_each_catch_their_own_sign(monkeypatch):
    import fgrpo_sim.sim.group_size_study as study
    import fgrpo_sim.sim.population as population
    from fgrpo_sim.sim.checks_exact import focal_sign_checks

    honest = focal_sign_checks(True, 0, "cpu")
    assert [r["passed"] for r in honest] == [True, True, True]
    assert [r["name"] for r in honest] == [
        "focal weight on A > 0: simulators' focal advantage = (1-mu_hat)^gamma A, gamma=1 N=8",
        "focal weight on A < 0: simulators' focal advantage = (1-mu_hat)^gamma A, gamma=1 N=8",
        "focal weight, both signs: group-size study's advantage tables, gamma=1 N=8"]
    objective = population.core_objective

    def negative_unweighted(logp, rewards, train, old, runs):  # the weight left off A < 0
        loss, stats, focal = objective(logp, rewards, train, old, runs)
        plain = objective(logp, rewards, type(train)(gamma=0.0), old, runs)[2]
        return loss, stats, torch.where(focal < 0, plain, focal)

    monkeypatch.setattr(population, "core_objective", negative_unweighted)
    assert [r["passed"] for r in focal_sign_checks(True, 0, "cpu")] == [True, False, True]
    monkeypatch.setattr(population, "core_objective", objective)
    tables = study.advantage_tables
    monkeypatch.setattr(study, "advantage_tables", lambda pairs, n: (tables(pairs, n)[0] * 1.001, tables(pairs, n)[1]))
    assert [r["passed"] for r in focal_sign_checks(True, 0, "cpu")] == [True, True, False]
    monkeypatch.setattr(study, "advantage_tables", lambda pairs, n: (tables(pairs, n)[0], tables(pairs, n)[1] * 1.001))
    assert [r["passed"] for r in focal_sign_checks(True, 0, "cpu")] == [True, True, False]


def test_start_check_catches_a_start_off_by_a_part_in_a_million(monkeypatch):
    from fgrpo_sim.sim.categorical.config import CategoricalConfig
    from fgrpo_sim.sim.checks_exact import start_checks

    (honest,) = start_checks(True, 0, "cpu")
    assert honest["passed"] and honest["estimate"] < 1e-9 and honest["interval"] == [0.0, 1e-9]
    assert honest["name"] == "categorical start: Q_pos=0.630075, anchor=0.0004653, tau=6.297e-05 (max relative gap)"
    masses = CategoricalConfig.initial_masses
    for key in ("q_pos", "p_anchor", "tau"):
        monkeypatch.setattr(CategoricalConfig, "initial_masses",
                            lambda self, key=key: {k: v * (1 + 1e-6 * (k == key)) for k, v in masses(self).items()})
        (planted,) = start_checks(True, 0, "cpu")
        assert not planted["passed"] and planted["estimate"] == pytest.approx(1e-6, rel=1e-3)


def test_sampled_masses_draw_the_two_sets_independently():
    """Mirror-image correct and incorrect sets with k = N - k: the two masses have one law, but each set draws
    its own numbers (a shared stream would make the two estimates equal draw for draw)."""
    from fgrpo_sim.sim.montecarlo import estimate_sampled_masses

    out = estimate_sampled_masses([0.1, 0.4, 0.1, 0.4], [True, True, False, False], n=4, k=2, trials=400, seed=3)
    (pos, pos_se), (neg, neg_se) = out["P_pos"], out["P_neg"]
    assert pos != neg and abs(pos - neg) < 6 * math.hypot(pos_se, neg_se)


def test_smoothing_compare_reads_each_arm_at_the_raw_runs_lowest_n(monkeypatch):
    """compare's wiring with the report's functions stood in for (their own tests cover them): per-unit matrices
    [2 populations, N = 2, 4, 8] whose entries name their variant, a paired interval that is the mean difference."""
    from fgrpo_sim.sim import smoothing_study

    ns = [2, 4, 8]
    base = {"GRPO": 0.0, "F-GRPO gamma=0.5": 1.0, "F-GRPO gamma=1": 2.0, "GRPO low-LR (x m_0.5)": 3.0,
            "GRPO low-LR (x m_1)": 4.0}

    def frame(alpha, lowest):
        names = {(f"{v} alpha={alpha:g}" if v.startswith("F-GRPO") and alpha else v): x for v, x in base.items()}
        values = {v: np.array([[x, 2 * x, 3 * x], [x + 10, 2 * x + 10, 3 * x + 10]]) + 100 * alpha
                  for v, x in names.items()}
        report = {"unit": "population", "N": ns, "observed_lowest_N": lowest, "verdict": f"v{alpha}",
                  "first_minus_lowest": [alpha, 1], "last_minus_lowest": [alpha, 2], "fgrpo_at_lowest": [alpha],
                  **{k: f"{k}-{alpha}" for k in ("rare_correct_prob", "optimizer", "parametrisation", "view",
                                                  "rare_mass", "lr", "populations", "batch_seeds", "steps",
                                                  "interval")}}
        return {"values": values, "report": report}

    calls = []
    monkeypatch.setattr(smoothing_study, "final_rows", lambda f: f)
    monkeypatch.setattr(smoothing_study, "setting_reports", lambda f: [f["report"]])
    monkeypatch.setattr(smoothing_study, "unit_matrix",
                        lambda f, variant, metric, unit: calls.append((variant, metric, unit)) or
                        (f["values"][variant], ns))
    monkeypatch.setattr(smoothing_study, "_flanks", lambda values, arm_ns: {
        "observed_lowest_N": arm_ns[int(values[0, 0]) % 3], "verdict": f"arm {values[0, 0]:g}",
        "first_minus_lowest": [values[0, 0]], "last_minus_lowest": [values[1, 2]], "ignored": 1})
    monkeypatch.setattr(smoothing_study, "paired_interval", lambda a, b: round(float(np.mean(a - b)), 9))
    result = smoothing_study.compare({0.0: frame(0.0, 4), 0.5: frame(0.5, 8)})
    assert {metric for _, metric, _ in calls} == {"heldout_pass@256"} and {u for _, _, u in calls} == {"population"}
    assert result["alphas"] == [0.0, 0.5]
    assert result["setting"] == {k: f"{k}-0.0" for k in ("rare_correct_prob", "optimizer", "parametrisation", "view",
                                                          "rare_mass", "lr", "populations", "batch_seeds", "steps",
                                                          "unit", "interval")} | {"unit": "population"}
    raw, smoothed = result["runs"]
    assert raw == {"focal_smoothing": 0.0, "grpo_observed_lowest_N": 4, "grpo_verdict": "v0.0",
                   "grpo_first_minus_lowest": [0.0, 1], "grpo_last_minus_lowest": [0.0, 2], "fgrpo_at_lowest": [0.0],
                   "fgrpo_arms": [{"gamma": 0.5, "observed_lowest_N": 4, "verdict": "arm 1",
                                   "first_minus_lowest": [1.0], "last_minus_lowest": [13.0]},
                                  {"gamma": 1.0, "observed_lowest_N": 8, "verdict": "arm 2",
                                   "first_minus_lowest": [2.0], "last_minus_lowest": [16.0]}]}
    assert smoothed["focal_smoothing"] == 0.5 and smoothed["grpo_observed_lowest_N"] == 8
    assert [a["verdict"] for a in smoothed["fgrpo_arms"]] == ["arm 51", "arm 52"]
    # the edge: every run's arms at the RAW run's lowest N (4: column 1, where entries are doubled), minus GRPO (0)
    # and minus the arm's own control (3 for gamma 0.5, 4 for gamma 1)
    assert result["edge_at_raw_lowest"] == [
        {"focal_smoothing": 0.0, "gamma": 0.5, "N": 4, "minus_grpo": 2.0, "minus_control": -4.0},
        {"focal_smoothing": 0.0, "gamma": 1.0, "N": 4, "minus_grpo": 4.0, "minus_control": -4.0},
        {"focal_smoothing": 0.5, "gamma": 0.5, "N": 4, "minus_grpo": 2.0, "minus_control": -4.0},
        {"focal_smoothing": 0.5, "gamma": 1.0, "N": 4, "minus_grpo": 4.0, "minus_control": -4.0}]
    # smoothed minus raw, per gamma and N: the 100 x alpha offset of the stand-in matrices
    assert result["smoothed_minus_raw"] == [{"focal_smoothing": 0.5, "gamma": g, "N": ns, "pass256": [50.0] * 3}
                                            for g in (0.5, 1.0)]


def test_first_order_checks_fit_the_error_slope_by_hand(monkeypatch):
    """Stand-ins whose first-order error is exactly 0.01 eta^2 (dQ_pos) and 0.02 eta^3 (dQ_upos): the fitted
    log-log slopes are 2 and 3, so the first passes and the second fails; the simulator equals the exact step."""
    import fgrpo_sim.theory as theory
    from fgrpo_sim.sim import checks

    seen = []

    def step(eta):
        return 0.5 * eta + 0.01 * eta**2, 0.2 * eta + 0.02 * eta**3

    def sim(p, num_correct, counts, eta, r_c, r_w):
        seen.append((len(p), num_correct, int(counts.sum()), eta, r_c, r_w))
        return step(eta)

    monkeypatch.setattr(checks, "_simulator_one_step", sim)
    monkeypatch.setattr(theory, "first_order_mass_change", lambda p, c, counts, rc, rw, eta: (0.5 * eta, 0.2 * eta))
    monkeypatch.setattr(theory, "exact_mass_change", lambda p, c, counts, rc, rw, eta: step(eta))
    out = checks.first_order_checks(True, 0, "cpu")
    etas = [4.0, 2.0, 1.0, 0.5, 0.25]
    assert seen == [(200, 40, 16, eta, 1.0, -1.0) for eta in etas] * 2
    assert [r["name"] for r in out] == [
        "prop3.2 dQ_pos first-order error ~ eta^2 (log-log slope)",
        "prop3.2 dQ_pos simulator step = exact softmax step (max relative gap)",
        "prop3.2 dQ_upos first-order error ~ eta^2 (log-log slope)",
        "prop3.2 dQ_upos simulator step = exact softmax step (max relative gap)"]
    slope_pos, exact_pos, slope_upos, exact_upos = out
    assert slope_pos["estimate"] == pytest.approx(2.0, rel=1e-9) and slope_pos["passed"]
    assert slope_pos["closed_form"] == 2.0 and slope_pos["interval"] == [1.8, 2.2] and slope_pos["etas"] == etas
    assert slope_pos["errors"] == pytest.approx([0.01 * e**2 for e in etas], rel=1e-9)
    assert slope_upos["estimate"] == pytest.approx(3.0, rel=1e-9) and not slope_upos["passed"]
    assert exact_pos["estimate"] == 0.0 and exact_pos["passed"] and exact_pos["interval"] == [0.0, 1e-9]
    assert exact_upos["passed"]
    # the exact step off by 2e-9 relative at the smallest eta only: the gap is the largest over eta
    monkeypatch.setattr(theory, "exact_mass_change", lambda p, c, counts, rc, rw, eta: tuple(
        v * (1 + 2e-9 * (eta == 0.25)) for v in step(eta)))
    out = checks.first_order_checks(True, 0, "cpu")
    assert out[1]["estimate"] == pytest.approx(2e-9, rel=1e-3) and not out[1]["passed"] and not out[3]["passed"]


def test_path_checks_name_every_path_and_fail_on_a_wrong_reference(monkeypatch):
    from fgrpo_sim.sim import checks_exact

    honest = checks_exact.path_checks(True, 0, "cpu")
    assert [r["name"] for r in honest] == [
        "path logprob + adamw wd=0 (Fig 2): simulator = autograd, 3 steps (gap / step size)",
        "path logprob + sgd wd=0: simulator = autograd, 3 steps (gap / step size)",
        "path distinct + adamw wd=0.1: simulator = autograd, 3 steps (gap / step size)",
        "path distinct + sgd wd=0: simulator = autograd, 3 steps (gap / step size)"]
    assert all(r["passed"] and r["interval"] == [0.0, 1e-9] for r in honest)
    real = checks_exact._reference_steps
    seen = []

    def off_by_a_little(p0, num_correct, counts, config, gamma):  # 1e-6 of the step size on one logit
        seen.append((config.surrogate, config.optimizer, config.weight_decay, config.lr, config.steps, gamma,
                     num_correct, len(counts)))
        want = real(p0, num_correct, counts, config, gamma)
        moved = float((want - torch.as_tensor(np.log(p0))).abs().max())
        return want + torch.nn.functional.one_hot(torch.tensor(3), len(p0)) * 1e-6 * moved

    monkeypatch.setattr(checks_exact, "_reference_steps", off_by_a_little)
    planted = checks_exact.path_checks(True, 0, "cpu")
    assert [r["passed"] for r in planted] == [False] * 4
    assert [r["estimate"] for r in planted] == pytest.approx([1e-6] * 4, rel=1e-3)
    assert seen == [(s, o, wd, lr, 3, 1.0, 15, 3) for s, o, wd, lr in checks_exact.PATHS]


def test_ratio_estimators_have_a_finite_se_from_two_prompts():
    """trials = 2, the smallest allowed: the delta-method SE uses the sample std (ddof 1), finite and positive."""
    from fgrpo_sim.sim.montecarlo import estimate_lr_multiplier, estimate_smoothed_lr_multiplier

    est, se = estimate_lr_multiplier(1.0, 2, 5)
    assert 0 < est < 1 and math.isfinite(se) and se > 0
    for seed in range(3):
        est, se = estimate_smoothed_lr_multiplier(8, 1.0, 0.5, 2, seed)
        assert 0 < est <= 1 and math.isfinite(se) and se >= 0


def test_pass_at_k_checks_see_an_error_only_at_c_equal_n(monkeypatch):
    import fgrpo_sim.metrics as metrics
    from fgrpo_sim.sim.checks_exact import pass_at_k_checks

    real = metrics.pass_at_k
    monkeypatch.setattr(metrics, "pass_at_k", lambda n, c, k: np.where(np.asarray(c) == n, 0.5, real(n, c, k)))
    assert [r["passed"] for r in pass_at_k_checks(True, 0, "cpu")] == [False, False, False]
    # wrong only at k = 1 (the smallest k every check starts from)
    monkeypatch.setattr(metrics, "pass_at_k", lambda n, c, k: real(n, c, k) * (1.5 if k == 1 else 1.0))
    assert [r["passed"] for r in pass_at_k_checks(True, 0, "cpu")] == [False, False, False]


# --- written after the fresh sample (seed 202): its survivors ---------------------------------------------------------

def test_simulator_one_step_takes_the_rewards_it_is_given():
    """One SGD step of the categorical simulator with R_w = 0 (not the config's default -1) equals the theory's
    exact softmax step at those rewards."""
    from fgrpo_sim.sim.checks import _one_step_setting, _simulator_one_step
    from fgrpo_sim.theory import exact_mass_change

    p, correct, counts = _one_step_setting()
    for r_c, r_w in ((1.0, 0.0), (2.0, 0.5)):
        sim = _simulator_one_step(p, int(correct.sum()), counts, 0.5, r_c, r_w)
        exact = exact_mass_change(p, correct, counts, r_c, r_w, 0.5)
        assert sim == pytest.approx(tuple(float(v) for v in exact), rel=1e-9)


def test_only_the_first_scheme_of_a_cluster_address_is_stripped(monkeypatch):
    """`ray://ray://HOST:PORT` (a doubled scheme) probes host `ray://HOST`, which no resolver knows: unreachable."""
    from fgrpo_sim.sim import executor

    probes = []

    def refuse(address, timeout):
        probes.append(address)
        raise OSError(-2, "Name or service not known")

    monkeypatch.setattr(executor.socket, "create_connection", refuse)
    with pytest.raises(ValueError, match=r"^RAY_ADDRESS ray://ray://127\.0\.0\.1:6379: unreachable \(Name or service"):
        executor._check_reachable("ray://ray://127.0.0.1:6379", "RAY_ADDRESS")
    assert probes == [("ray://127.0.0.1", 6379)]


def test_smoothing_checks_record_their_trials(monkeypatch):
    from fgrpo_sim.sim import checks

    _recording(monkeypatch, "estimate_smoothed_focal_weight", (0.5, 0.01))
    _recording(monkeypatch, "estimate_smoothed_lr_multiplier", (0.5, 0.01))
    assert [r["trials"] for r in checks.smoothing_checks(True, 0, "cpu")] == [200_000] * 7
    assert [r["trials"] for r in checks.smoothing_checks(False, 0, "cpu")] == [2_000_000] * 7
