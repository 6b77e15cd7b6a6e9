"""Tests written for the survivors of sim/'s fifth fresh samples (seed 606, issue 44; benchmarks/RESULTS.md
"Mutation testing", strata gs and cat). Each asserts behaviour a user relies on, on tiny hand-made data: a study
spec built from numpy numbers resumes the table its plain twin wrote (the same chunk id), the population offset
moves the study's population seeds, a sync audited in code without a file path is named, the torch sampler refuses
N beyond 2^31 - 1 before it allocates, a damaged final-means record is named as the record, the categorical study
runs the documented 1000 steps and shows its settings' progress, and the native sampler's kernel refuses a None
argument before the C call (a NULL pointer crashed the process)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from fgrpo_sim.sim.categorical import sampling


# --- group_size_study.chunk_id: numpy numbers fingerprint as the numbers they are ------------------------------------

def test_a_spec_of_numpy_numbers_has_the_chunk_id_of_its_plain_twin():
    """chunk_id_52 (json.dumps without a default) raised a TypeError on numpy ints; with `default=str` they were
    fingerprinted as text ("4"), so a spec built from np.array([4, 8]) named another chunk than (4, 8) and could not
    resume the table the CLI wrote for the same settings (a bug, fixed)."""
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec, chunk_id

    plain = GroupSizeStudySpec(group_sizes=(4, 8), gammas=(0.5,), populations=2, seeds=1, steps=3)
    numpy = GroupSizeStudySpec(group_sizes=tuple(np.array([4, 8])), gammas=(np.float64(0.5),),
                               populations=np.int64(2), seeds=np.int64(1), steps=np.int32(3))
    for opt, kind in (("adam", "axis"), ("sgd", "dense")):
        assert chunk_id(numpy, opt, kind) == chunk_id(plain, opt, kind)
    assert chunk_id(plain, "adam", "axis") != chunk_id(GroupSizeStudySpec(group_sizes=(4, 16), gammas=(0.5,),
                                                                          populations=2, seeds=1, steps=3),
                                                       "adam", "axis")


# --- group_size_study.population_seeds: the offset moves the first seed ---------------------------------------------

def test_the_population_offset_moves_the_studys_population_seeds():
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec, population_seeds, study_rows

    spec = GroupSizeStudySpec(group_sizes=(4,), gammas=(0.5,), populations=2, population_offset=3, seeds=1,
                              optimizers=("adam",), parametrisations=("axis",))
    assert list(population_seeds(spec)) == [3, 4]
    rows = study_rows(spec, "adam", "axis")
    assert sorted(set(rows["population"])) == [3, 4]


# --- step_audit._caller: a frame whose file name holds no "/" -------------------------------------------------------

def test_a_sync_in_code_without_a_file_path_is_named_by_its_whole_name(monkeypatch):
    """Code run by exec (a notebook cell, `python -c`) has a file name such as "<audit>" without "/": its sync
    site is that name and the line (caller_19 indexed the split's second part and raised IndexError). The stack is
    handed in, so the frames a test runner or mutation tool puts between the sync and `_caller` do not enter."""
    import traceback

    from fgrpo_sim.sim import step_audit

    stack = [traceback.FrameSummary("<audit>", 2, "<module>"),
             traceback.FrameSummary("/site-packages/torch/_tensor.py", 9, "item"),
             traceback.FrameSummary("/repo/fgrpo_sim/sim/step_audit.py", 70, "counted"),
             traceback.FrameSummary("/repo/fgrpo_sim/sim/step_audit.py", 40, "_caller"),
             traceback.FrameSummary("/usr/lib/python3/traceback.py", 200, "extract_stack")]
    x = torch.ones(2)
    with step_audit.count_syncs() as sites:
        with monkeypatch.context() as patch:
            patch.setattr(step_audit.traceback, "extract_stack", lambda: list(stack))
            x.sum().item()
    assert dict(sites) == {"Tensor.item at <audit>:2": 1}


# --- sampling.sample_counts_torch: N beyond 2^31 - 1 is refused before any allocation --------------------------------

class _Reached(Exception):
    pass


def test_torch_sampler_takes_its_equal_n_path_up_to_2_31_minus_1_and_refuses_beyond(monkeypatch):
    """sample_counts_torch_50 (`3**31 - 1`) sent N = 2^31 down the equal-N path, which draws [runs, N] int64
    (16 GiB per run) instead of refusing it. The equal-N path is replaced by a sentinel: it must be reached at
    N = 2^31 - 1, and N = 2^31 must be refused by name without reaching it."""
    def reached(*args, **kwargs):
        raise _Reached

    monkeypatch.setattr(sampling, "sample_counts_equal_n", reached)
    weights = torch.ones(2, 3, dtype=torch.float64)
    with pytest.raises(_Reached):
        sampling.sample_counts_torch(weights, [2**31 - 1, 2**31 - 1], [1, 2], 0)
    with pytest.raises(ValueError, match=r"^n_draws must be in \[0, 2147483647\]$"):
        sampling.sample_counts_torch(weights, [2**31, 2**31], [1, 2], 0)


# --- study.read_final_means: a damaged record is named as the record -------------------------------------------------

def test_a_damaged_final_means_record_is_named_as_the_record(tmp_path):
    from fgrpo_sim.sim.categorical.study import read_final_means

    path = tmp_path / "means.csv"
    path.write_text("setting,something\nx,1\n")
    with pytest.raises(ValueError, match=rf"^record {path} exists but is not a categorical final-means table "
                                         r"\(no column "):
        read_final_means(path)


# --- study.run_study: the documented step count, and its settings' progress -----------------------------------------

def _fake_grid(monkeypatch, seen):
    from fgrpo_sim.sim.categorical import study

    def fake_run_grid(cfg, out, **kwargs):
        seen.append((cfg, kwargs))
        return pd.DataFrame({"setting": [cfg.metadata["setting"]]})

    monkeypatch.setattr(study, "run_grid", fake_run_grid)
    return study


def test_the_categorical_study_runs_1000_steps_by_default(monkeypatch, tmp_path):
    """docs/categorical.md: the Fig 2 study runs 1000 steps (run_study_1 made it 1001)."""
    seen = []
    study = _fake_grid(monkeypatch, seen)
    study.run_study(tmp_path / "study.csv", progress=False, only=["distinct/sgd"])
    assert [cfg.steps for cfg, _ in seen] == [1000]


@pytest.mark.parametrize("progress", [True, False])
def test_the_categorical_study_hands_its_progress_switch_to_every_setting(monkeypatch, tmp_path, progress):
    """--progress shows each setting's steps too, --no-progress shows none (run_study_35 passed None: no bar)."""
    seen = []
    study = _fake_grid(monkeypatch, seen)
    study.run_study(tmp_path / "study.csv", steps=2, progress=progress, only=["distinct/sgd", "draws/sgd"])
    assert [kwargs["progress"] for _, kwargs in seen] == [progress, progress]


# --- sampling.sample_counts_native: its kernel refuses None before the C call ----------------------------------------

def test_the_native_samplers_kernel_refuses_a_none_argument_before_the_call():
    """ctypes passes None as NULL, and sample_counts writes the stats through it: sample_counts_native_129 (None
    for the stats) killed the process (mutmut: segfault). Every argument of both builds is refused by position and
    kernel name, and the counts buffer is left untouched (the kernel never ran)."""
    if not sampling.native_available():
        pytest.skip("no C compiler: no native kernel")
    lib = sampling._load_native()
    weights = torch.ones(1, 4, dtype=torch.float64)
    rows, n, keys = (torch.zeros(1, dtype=torch.int64), torch.tensor([3], dtype=torch.int64),
                     torch.tensor([5], dtype=torch.int64))
    out = torch.full((1, 4), -1, dtype=torch.int64)
    stats = torch.zeros(1, len(sampling.STAT_NAMES), dtype=torch.float64)
    args = [weights.data_ptr(), 4, 2, rows.data_ptr(), 1, n.data_ptr(), keys.data_ptr(), 7, out.data_ptr(),
            stats.data_ptr()]
    for f32, suffix in ((False, "f64"), (True, "f32")):
        kernel = sampling._kernel(lib, "sample_counts", f32)
        for i in range(len(args)):
            with pytest.raises(ValueError, match=f"^argument {i} of the native kernel sample_counts_{suffix} must "
                                                 "be a pointer or a number, got None$"):
                kernel(*args[:i], None, *args[i + 1:])
    assert out.tolist() == [[-1, -1, -1, -1]]
    assert sampling._kernel(lib, "sample_counts", False)(*args) == 0  # all given: it draws the 3
    assert out.sum().item() == 3 and stats[0, 2].item() == float(out[0, :2].sum())


# --- group_size_resume.read_kept_chunks: which missing row the refusal names -----------------------------------------

def test_a_chunk_missing_two_rows_names_the_first_in_the_keys_text_order(tmp_path):
    """The refusal names one missing row as its example: the first of the missing keys in their text order, the
    same on every run and library version (read_kept_chunks_69 sorted them as tuples: N 4 before N 16, another
    message for the same file)."""
    from test_sim_kills_gs import _refused, _tiny_spec, _written_table

    spec = _tiny_spec(group_sizes=(4, 16))
    table = _written_table(spec)
    ident = table["chunk"].iloc[0]
    drop = (table["variant"] == "GRPO") & (table["population"] == 1) & (table["step"] == 2)
    assert sorted(table.loc[drop, "N"]) == [4, 16]
    message, out = _refused(tmp_path, table[~drop], spec, hint="HINT")
    assert message == (
        f"cannot resume from {out}: chunk {ident!r} lacks 2 of its 32 rows (e.g. view equal-steps, rare_mass 0.02, "
        "population 1, N 16, base_lr 2.0, variant GRPO, seed 0, step 2); delete that chunk's rows, or HINT")
