"""Tests written for the survivors of sim/'s sixth fresh samples (seed 707, issue 44; benchmarks/RESULTS.md
"Mutation testing", strata gs and cat). Each asserts behaviour a user relies on, on tiny hand-made data: the native
sampler's first multi-thread call in a process builds its thread pool, a categorical run refuses an output another
run is writing at once (naming `out`), the kernel builds with a compiler that does not default to position-independent
code, a float32 run's metrics are all float32, the study's row sampler defaults to auto, the equal-N torch sampler
takes host keys for CUDA weights, a one-thread native state asks for no pool, int32 draw counts are read as the
numbers they are, and a native run's numbers do not depend on the thread count."""

from __future__ import annotations

import os
import sys

import pytest
import torch

from test_sim_kills_cat import _tiny  # a 6-action, 3-step CPU config

from fgrpo_sim.sim.categorical import sampling


# --- sampling._thread_pool: a process's first call with two or more threads -----------------------------------------

def test_the_native_samplers_first_threaded_call_in_a_process_builds_its_pool(monkeypatch):
    """_thread_pool_1 (`n in _POOLS`) raised KeyError on the first call for a pool size. A kept pool hid it from the
    mutation run (its forked test children inherit the pools the clean run built), so the pools start empty here,
    as in a fresh process; the second call reuses the pool the first built."""
    if not sampling.native_available():
        pytest.skip("no C compiler: the native sampler is not built here")
    monkeypatch.setattr(sampling, "_POOLS", {})
    weights = torch.ones((3, 5), dtype=torch.float64)
    keys = sampling.run_keys([0, 1, 2])
    counts, _ = sampling.sample_counts_native(weights, [4, 9, 6], keys, 1, threads=3)
    assert counts.sum(1).tolist() == [4, 9, 6]
    pool = sampling._POOLS[2]  # the calling thread takes one group, two pool threads the others
    again, _ = sampling.sample_counts_native(weights, [4, 9, 6], keys, 1, threads=3)
    assert sampling._POOLS == {2: pool} and torch.equal(again, counts)


# --- run.run_grid: a busy output is refused at once, naming `out` ----------------------------------------------------

class _ReleaseOnWaitNotice:
    """stderr that lets the holder go when the waiting notice is printed: a run that waited (instead of refusing)
    then goes on and finishes, so the test fails instead of hanging."""

    def __init__(self, held):
        self.held, self.text = held, ""

    def write(self, text):
        self.text += text
        if "waiting for another run" in text:
            self.held.release()
        return len(text)

    def flush(self):
        pass


def test_a_categorical_run_refuses_an_output_another_run_is_writing(tmp_path, monkeypatch):
    """run_grid_3 (`wait_for_lock=True` by default) queued behind the other run; run_grid_30 named the output
    "XXoutXX". The default is the CLI's: refuse at once in one line naming `out` and the lock (docs/reliability.md)."""
    from filelock import FileLock

    from fgrpo_sim.output_lock import lock_path_for
    from fgrpo_sim.sim.categorical.run import run_grid

    out = tmp_path / "r.csv"
    lock = lock_path_for(out, "out")
    held = FileLock(lock, thread_local=False)
    held.acquire(timeout=0)  # another run writing `out`
    stderr = _ReleaseOnWaitNotice(held)
    monkeypatch.setattr(sys, "stderr", stderr)
    try:
        with pytest.raises(ValueError) as err:
            run_grid(_tiny(), out, progress=False)
    finally:
        if held.is_locked:
            held.release()
    assert str(err.value) == (f"out {out} is being written by another run (it holds the lock {lock}); let it "
                              "finish, pass --wait to queue behind it, or choose another output")
    assert stderr.text == "" and not out.exists()


# --- compiled._compile: a compiler that does not default to position-independent code --------------------------------

def test_the_kernel_builds_with_a_compiler_that_does_not_default_to_pic(tmp_path, monkeypatch):
    """A shared library needs position-independent code: Debian's gcc makes it by default, other compilers (gcc built
    without --enable-default-pie, a `CC` set to plain code) link only with -fPIC. _compile_29 (`-FPIC`, a framework
    path to gcc) failed both builds there: the simulator fell back to torch."""
    import ctypes
    import shutil
    from importlib import resources

    from fgrpo_sim.sim.categorical import compiled

    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.skip("no C compiler")
    wrapper = tmp_path / "cc-no-pie"
    wrapper.write_text(f'#!/bin/sh\nexec "{cc}" -fno-pie "$@"\n')  # flags given later (-fPIC) win
    wrapper.chmod(0o700)
    monkeypatch.setenv("CC", str(wrapper))
    folder = tmp_path / "build"
    folder.mkdir()
    source = resources.files("fgrpo_sim.sim.categorical").joinpath("kernel.c").read_text()
    lib = ctypes.CDLL(str(compiled._compile(source, folder)))
    assert lib.sample_counts_f64 is not None


# --- engine.CategoricalBatch.metrics: every metric in the run's dtype ------------------------------------------------

@pytest.mark.parametrize("sampler", ["native", "torch"])
def test_a_float32_runs_metrics_are_all_float32(sampler):
    """METRICS are the state's dtype, the precision the table records (metrics_90 kept the native backend's focal
    weight float64: its column carried digits a float32 run does not have)."""
    if sampler == "native" and not sampling.native_available():
        pytest.skip("no C compiler: the native sampler is not built here")
    from fgrpo_sim.sim.categorical.engine import METRICS, CategoricalBatch

    batch = CategoricalBatch(_tiny(dtype="float32", sampler=sampler, gammas=(0.7,)), [3, 5], [0.7, 0.7], [0, 1],
                             device="cpu")  # the native kernel is CPU-only
    batch.step()
    metrics = batch.metrics()
    assert list(metrics) == list(METRICS)
    assert {name: value.dtype for name, value in metrics.items()} == {name: torch.float32 for name in METRICS}
    assert torch.equal(metrics["focal_weight"], batch.last_focal.to(torch.float32))


# --- group_size_study.RowCounts: the default sampler is auto --------------------------------------------------------

def test_row_counts_default_to_the_auto_sampler():
    """RowCounts(n, keys, dev) picks its sampler as the study's `--sampler auto` does: the native kernel on the CPU
    where it compiles, else torch, with the counts of the sampler named explicitly (__init___2 made the default
    "AUTO", refused as an unknown sampler)."""
    import numpy as np

    from fgrpo_sim.sim.group_size_study import RowCounts

    cpu = torch.device("cpu")
    probs = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64).expand(2, 3, -1).contiguous()
    keys = torch.arange(6, dtype=torch.int64).view(2, 3) * 7919 + 11
    default = RowCounts(np.array([4, 9]), keys, cpu)
    want = "native" if sampling.native_available() else "torch"
    assert default.sampler == want
    counts = default.draw(probs, 2, step=1)
    assert counts.sum(-1).tolist() == [[4.0] * 3, [9.0] * 3]
    assert torch.equal(counts, RowCounts(np.array([4, 9]), keys, cpu, want).draw(probs, 2, step=1))


# --- sampling.sample_counts_equal_n: keys given on the host, weights on CUDA ----------------------------------------

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: on the CPU the keys are already where the "
                                                           "weights are")
def test_the_equal_n_sampler_takes_host_keys_for_cuda_weights():
    """The torch sampler runs on any device and takes its keys as a list (sample_counts_equal_n_3 left them on the
    host: CUDA uniforms met CPU keys). Same keys, same counts on both devices."""
    weights = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]], dtype=torch.float64)
    keys = [3, 11]
    on_cpu = sampling.sample_counts_torch(weights, [6, 6], keys, 2)
    on_cuda = sampling.sample_counts_torch(weights.cuda(), [6, 6], keys, 2)
    assert on_cuda.device.type == "cuda" and torch.equal(on_cuda.cpu(), on_cpu)


# --- native.NativeState: threads=1 keeps every kernel on the calling thread ----------------------------------------

def test_a_native_state_of_one_thread_asks_for_no_pool(monkeypatch):
    """threads=1 (a group-size chunk, one process per core) runs the kernels on the calling thread, with the numbers
    of a three-thread state (NativeState.__init___101 made it at least two: a pool thread per state)."""
    if not sampling.native_available():
        pytest.skip("no C compiler: the native kernels are not built here")
    from fgrpo_sim.sim.categorical.native import NativeState

    logits = torch.tensor([[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, -3.0, 0.2], [0.0, 0.1, 0.2, 0.3]], dtype=torch.float64)
    sizes = torch.tensor([3, 5, 2])
    pooled = NativeState(logits, 2, sizes, threads=3)
    pooled.refresh(logits)
    pooled_stats = pooled.sample(sampling.run_keys([0, 1, 2]), 4).clone()

    def no_pool(n):
        raise AssertionError(f"a pool of {n} threads was asked for with threads=1")

    monkeypatch.setattr(sampling, "_thread_pool", no_pool)
    alone = NativeState(logits, 2, sizes, threads=1)
    alone.refresh(logits)
    stats = alone.sample(sampling.run_keys([0, 1, 2]), 4)
    assert torch.equal(alone.weights, pooled.weights) and torch.equal(alone.totals, pooled.totals)
    assert torch.equal(stats, pooled_stats)


# --- sampling.sample_counts_native: n_draws of another integer dtype -------------------------------------------------

def test_the_native_sampler_reads_int32_draw_counts_as_the_numbers_they_are():
    """n_draws may be any integer tensor (the kernel reads int64): sample_counts_native_26 handed an int32 tensor to
    the kernel as it was, which read two int32 values as one int64. Here n_draws is a slice of a larger int32 tensor,
    so that misreading stays inside the buffer: it drew [3, 4] for [3, 0]."""
    if not sampling.native_available():
        pytest.skip("no C compiler: the native sampler is not built here")
    n_draws = torch.tensor([3, 0, 4, 0], dtype=torch.int32)[:2]
    weights = torch.ones((2, 5), dtype=torch.float64)
    keys = sampling.run_keys([0, 1])
    counts, _ = sampling.sample_counts_native(weights, n_draws, keys, 2, threads=1)
    assert counts.sum(1).tolist() == [3, 0]
    assert torch.equal(counts, sampling.sample_counts_native(weights, [3, 0], keys, 2, threads=1)[0])


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_native_runs_numbers_do_not_depend_on_the_thread_count(monkeypatch, optimizer):
    """The native backend shares a batch's runs among torch's threads; each run is stepped once per step whatever
    their number (NativeState.__init___114 gave thread i the rows i.. instead of every `threads`-th row: rows
    stepped by several threads, the mutation run's single thread hid it)."""
    if not sampling.native_available():
        pytest.skip("no C compiler: the native kernels are not built here")
    from fgrpo_sim.sim.categorical.engine import CategoricalBatch

    config = _tiny(sampler="native", optimizer=optimizer, gammas=(0.5,), lr=0.5, anchor_logit=0.0, correct_logit=0.0)
    logits = {}
    for threads in (1, 3):
        monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
        batch = CategoricalBatch(config, [3, 5, 2, 4], [0.5] * 4, [0, 1, 2, 3], device="cpu")  # native: CPU only
        for _ in range(3):
            batch.step()
        logits[threads] = batch.logits.clone()
    assert not torch.equal(logits[1][0], logits[1][1])  # the runs moved, each its own way
    assert torch.equal(logits[3], logits[1])
