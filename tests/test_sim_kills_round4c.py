"""Tests written for the survivors of sim/'s fourth fresh samples (seed 505, issue 44; benchmarks/RESULTS.md
"Mutation testing", strata gs and cat). Each asserts behaviour a user relies on, on tiny hand-made data: a run is
simulated with its own gamma, a refused output path is named `out`, the study runs on the default device, the torch
sampler takes float32 weights as the numbers they are (their sum and running sum in float64), the native state
hands its C kernels buffers of the C types they read, the distinct surrogate's torch step is the documented
gradient for any wrong-answer reward, `threads=1` keeps the native sampler on the calling thread; and for the
group-size study, the population offset's range, the chunk ids recorded tables carry, a chunk frame's columns, and
one profiled op counted once under a dispatch mode."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fgrpo_sim.sim.categorical.config import CategoricalConfig

# --- run.py: each run of a chunk keeps its own gamma ---------------------------------------------------------------


def test_simulate_chunk_trains_each_run_with_its_own_gamma():
    """The focal weight recorded after a step is (1 - mu_hat)^gamma of the row's own gamma (not its seed's value).
    CPU: the exact float comparison below assumes one machine's arithmetic."""
    from fgrpo_sim.sim.categorical.run import simulate_chunk

    config = CategoricalConfig(num_actions=8, num_correct=4, anchor_logit=0.0, correct_logit=0.0, steps=1, stride=1,
                               dtype="float64", device="cpu", group_sizes=(16,), gammas=(0.5,), seeds=(3,))
    table = simulate_chunk(config, [(16, 0.5, 3), (16, 2.0, 0)])
    last = table[table["step"] == 1].set_index("gamma")
    assert sorted(last.index) == [0.5, 2.0]
    for gamma, row in last.iterrows():
        assert 0.0 < row["mu_hat"] < 1.0  # a weight that tells gammas apart
        assert row["focal_weight"] == pytest.approx((1.0 - row["mu_hat"]) ** gamma, rel=1e-12)


# --- run.py: a refused output path is named by its parameter --------------------------------------------------------


def test_run_grid_names_its_out_parameter_when_the_path_cannot_be_written(tmp_path):
    from fgrpo_sim.sim.categorical.run import run_grid

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    config = CategoricalConfig(num_actions=4, num_correct=1, steps=1, device="cpu", group_sizes=(2,), gammas=(0.0,),
                               seeds=(0,))
    with pytest.raises(ValueError) as err:
        run_grid(config, blocker / "table.csv", progress=False)
    # the path as the checker resolved it (a temporary folder may sit behind a symbolic link)
    assert str(err.value).startswith("out ") and str(err.value).endswith("a-file is a file, not a folder")


# --- study.py: the study's default device ----------------------------------------------------------------------------


def test_run_study_runs_on_the_auto_device_when_none_is_named(monkeypatch, tmp_path):
    """run_study without `device` resolves "auto" (its documented default) and hands it to every setting."""
    import pandas as pd

    from fgrpo_sim.sim.categorical import study

    seen = []

    def fake_run_grid(cfg, out, **kwargs):
        seen.append(cfg)
        return pd.DataFrame({"setting": [cfg.metadata["setting"]]})

    monkeypatch.setattr(study, "run_grid", fake_run_grid)
    table = study.run_study(tmp_path / "study.csv", steps=1, progress=False, only=["distinct/sgd"])
    assert list(table["setting"]) == ["distinct/sgd"]
    assert [c.device for c in seen] == ["auto"]


# --- sampling.py: float32 weights are the numbers they are ---------------------------------------------------------


def test_torch_sampler_takes_float32_weights_whose_float32_sum_overflows():
    """Two weights of 3e38 (each a finite float32) have a finite float64 sum (6e38): they are a valid policy,
    drawn about half and half, not refused as a non-finite sum."""
    from fgrpo_sim.sim.categorical.sampling import run_keys, sample_counts_torch

    weights = torch.tensor([[3e38, 3e38]], dtype=torch.float32)
    counts = sample_counts_torch(weights, [1000], run_keys([0]), 0)
    assert counts.dtype == torch.int64 and int(counts.sum()) == 1000
    assert 400 < int(counts[0, 0]) < 600


def test_torch_sampler_counts_of_float32_weights_equal_those_of_the_same_float64_weights():
    """The CDF is a float64 running sum whatever the weights' dtype: float32 weights are exactly float64 numbers,
    so they draw the same counts. Weights 2^24, 1, 1, ... in a float32 running sum lose every 1 (2^24 + 1 rounds
    back to 2^24), which would starve the 65,536 small actions (0.39% of the mass, ~16 of 4096 draws).
    Runs of different N: the DrawPlan path (the engine's)."""
    from fgrpo_sim.sim.categorical.sampling import run_keys, sample_counts_torch

    k = 1 + 2**16
    w32 = torch.ones((2, k), dtype=torch.float32)
    w32[:, 0] = 2.0**24
    keys = run_keys([1, 2])
    c32 = sample_counts_torch(w32, [4096, 2048], keys, 5)
    c64 = sample_counts_torch(w32.to(torch.float64), [4096, 2048], keys, 5)
    assert torch.equal(c32, c64)
    assert int(c32[0, 1:].sum()) > 0


# --- native.py: the buffers the C kernels read ----------------------------------------------------------------------


def test_native_state_buffers_have_the_c_types_the_kernels_read():
    """kernel.c reads the runs' offsets into the touched lists as int64 and writes the stats as double: a buffer of
    another dtype is read or written past its end (a crash, or another buffer overwritten). The offsets are the
    running sum of each run's capacity min(N, K). CPU: the native kernels' buffers."""
    from fgrpo_sim.sim.categorical.native import NativeState
    from fgrpo_sim.sim.categorical.sampling import STAT_NAMES, native_available

    if not native_available():
        pytest.skip("no C compiler: the native backend is not built here")
    logits = torch.zeros((3, 40), dtype=torch.float64)
    state = NativeState(logits, 4, torch.tensor([5, 50, 7]))
    assert state.offsets.dtype == torch.int64 and state.offsets.tolist() == [0, 5, 45]
    assert state.stats.dtype == torch.float64 and tuple(state.stats.shape) == (3, len(STAT_NAMES))
    assert state.touched_idx.dtype == torch.int32 and state.touched_idx.numel() == 52


# --- torch_step.py: the distinct surrogate's gradient for any wrong-answer reward -------------------------------------


@pytest.mark.parametrize("reward_wrong", [-0.5, 0.0])
def test_distinct_torch_step_is_the_documented_gradient_for_a_wrong_reward_other_than_minus_one(reward_wrong):
    """One SGD step from given counts: z' = z + lr (g / N) p (a - sum_k a_k p_k), a_i = R_i 1[c_i > 0] (config's
    docstring), computed here in numpy. The default reward_wrong -1 hides a sign or a division; -0.5 and 0 do not.
    CPU: a tolerance of 1e-12 assumes float64 on one machine."""
    from fgrpo_sim.sim.categorical.engine import CategoricalBatch, initial_logits

    config = CategoricalConfig(num_actions=6, num_correct=2, surrogate="distinct", optimizer="sgd", lr=0.5,
                               reward_wrong=reward_wrong, dtype="float64", device="cpu", sampler="torch",
                               group_sizes=(5,), gammas=(1.0,), seeds=(0,))
    counts = np.array([2, 0, 1, 0, 2, 0])  # 2 correct draws of 5
    batch = CategoricalBatch(config, [5], [1.0], [0])
    batch.step_with_counts(torch.from_numpy(counts[None]))

    z = initial_logits(config).numpy()
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    rewards = np.where(np.arange(6) < 2, 1.0, reward_wrong)
    a = rewards * (counts > 0)
    g = (1.0 - 2 / 5) ** 1.0
    expected = z + 0.5 * (g / 5) * p * (a - (a * p).sum())
    assert batch.logits[0].numpy() == pytest.approx(expected, rel=1e-12, abs=1e-15)


# --- sampling.py: the native sampler's thread count ---------------------------------------------------------------


def test_native_sampler_with_one_thread_draws_every_run_on_the_calling_thread(monkeypatch):
    """`threads=1` (a user leaving the other cores free) draws all runs in the calling thread: no pool thread is
    asked for, and the counts are those of the default thread count (each run's draws are its own stream)."""
    from fgrpo_sim.sim.categorical import sampling

    if not sampling.native_available():
        pytest.skip("no C compiler: the native sampler is not built here")
    weights = torch.ones((4, 10), dtype=torch.float64)
    keys = sampling.run_keys([0, 1, 2, 3])
    pooled, _ = sampling.sample_counts_native(weights, [5, 50, 7, 9], keys, 3, threads=4)

    def no_pool(n):
        raise AssertionError(f"a pool of {n} threads was asked for with threads=1")

    monkeypatch.setattr(sampling, "_thread_pool", no_pool)
    alone, _ = sampling.sample_counts_native(weights, [5, 50, 7, 9], keys, 3, threads=1)
    assert torch.equal(alone, pooled)
    assert alone.sum(1).tolist() == [5, 50, 7, 9]


# --- group_size_study.py: the population offset's range, and the chunk fingerprints tables were written under ---------


def test_population_offset_takes_one_billion_and_refuses_one_more():
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec

    GroupSizeStudySpec(population_offset=10**9).validate()
    with pytest.raises(ValueError) as err:
        GroupSizeStudySpec(population_offset=10**9 + 1).validate()
    assert str(err.value) == "population_offset must be in [0, 1000000000], got 1000000001"


def test_default_chunk_ids_are_the_ones_tables_were_recorded_under():
    """A resume reuses a kept chunk only under an equal chunk id, so the ids of tables already written must not
    move: these two are the ids recorded on main at ed7c35e (seeding per-row-stream-v2, as in
    tests/test_regularisers.py and tests/test_sim_focal_smoothing.py, which the mutation selection does not run)."""
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec, chunk_id

    spec = GroupSizeStudySpec()
    assert chunk_id(spec, "adam", "orthogonal") == "rare_correct_prob=1/adam/orthogonal#ff9785c82677"
    assert chunk_id(spec, "adam", "axis") == "rare_correct_prob=1/adam/axis#08776576373c"


# --- step_audit.py: an op re-issued inside another op counts once -----------------------------------------------------


def test_top_level_op_count_skips_an_op_reissued_under_a_dispatch_mode():
    """Under count_syncs (a TorchDispatchMode) one torch.add shows in the profile as aten::add, then the mode's
    frame (not an op), then the aten::add the mode re-issues: one top-level op, not two."""
    from fgrpo_sim.sim.step_audit import count_syncs, count_top_level_ops

    x = torch.ones(3)

    def fn():
        with count_syncs():
            torch.add(x, x)

    assert count_top_level_ops(fn) == (1, {"aten::add": 1})


# --- group_size_study.py: a chunk's frame holds its rows' settings, nothing of the table's index ----------------------


def test_trained_chunk_frame_is_its_study_rows_settings_then_step_and_metrics():
    """Every record row starts with the chunk id and its study row's settings (without the internal `pop` index),
    then step and rollouts: no stray column (such as a reset table index) between them. CPU: a tiny run."""
    import pandas as pd

    from fgrpo_sim.sim import group_size_study as gs

    spec = gs.GroupSizeStudySpec(group_sizes=(2,), rare_masses=(0.02,), gammas=(0.5,), optimizers=("adam",),
                                 parametrisations=("axis",), populations=1, seeds=1, steps=1, prompt_batch=2,
                                 adam_lrs=(0.01,), eval_every=1)
    rows = gs.study_rows(spec, "adam", "axis").drop(columns=["pop"])
    out = gs.train_chunk(spec, "adam", "axis", "cpu", progress=False)
    head = ["chunk", *rows.columns, "step", "rollouts"]
    assert list(out.columns[:len(head)]) == head
    assert all(c.startswith(("train_", "heldout_")) for c in out.columns[len(head):])
    first = out[out["step"] == 0].reset_index(drop=True)
    pd.testing.assert_frame_equal(first[list(rows.columns)], rows.reset_index(drop=True), check_dtype=False)
