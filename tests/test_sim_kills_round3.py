"""Tests written for the survivors of sim/'s third fresh samples (seed 404, issue 44; benchmarks/RESULTS.md
"Mutation testing", strata simpop, simrep, simchk, simgs, simcat). Each asserts behaviour a user relies on, on tiny
hand-made data: a resume expects exactly the evaluation steps a run records and keeps a table's columns only, a
damaged parquet table's reason keeps its words, a depth record names the field it refuses, an lr grid trains the
grid's learning rates, a large Monte Carlo seed keeps its exact stream, an update that moves no logit records
no mass change, the categorical study's table is numbered once, and the native sampler is built with -march=native
where the compiler takes it, falling back quietly where it does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from fgrpo_sim.sim import population as pop


# --- population_resume.py: the grid a kept variant must fill ------------------------------------------------------

def test_resume_expects_the_evaluation_steps_a_run_records():
    """steps 5, eval_every 3: a run evaluates at 0, 3 and 5 (never 6), and a resume checks a kept variant
    against that same grid (otherwise every such kept variant would be refused as incomplete)."""
    from fgrpo_sim.sim.population_resume import _evaluation_steps

    train = pop.TrainSpec(steps=5, eval_every=3, runs=1, prompt_batch=1)
    frame = pop.simulate_population(pop.make_population(pop.PopulationSpec(num_prompts=2)), train, device="cpu")
    assert set(frame["step"]) == {0, 3, 5}
    assert _evaluation_steps(train) == {0, 3, 5}


# --- result_table.py: a damaged parquet file's reason ------------------------------------------------------------

def test_damaged_parquet_table_reason_keeps_its_words(tmp_path):
    """The reader's message quotes pyarrow's reason on one line, its words separated by single spaces."""
    import pandas as pd

    from fgrpo_sim.sim.group_size_resume import TABLE_SCHEMA
    from fgrpo_sim.sim.result_table import read_result_table

    path = tmp_path / "table.parquet"
    path.write_bytes(b"not a parquet file at all\n")
    with pytest.raises(Exception) as raw:  # what pyarrow itself says about these bytes
        pd.read_parquet(path)
    with pytest.raises(ValueError) as err:
        read_result_table(path, TABLE_SCHEMA, "delete it")
    assert " ".join(str(raw.value).split()) in str(err.value)
    assert str(err.value).startswith(f"out {path} exists but is not a readable result table (")


# --- table2_depth.py / table2_depth_record.py ---------------------------------------------------------------------

def test_depth_lr_grid_trains_the_grids_learning_rates(monkeypatch):
    """run_setting(lrs=...) trains the grid's learning rates (set as the optimizer's `*_lrs` field of the study
    spec handed to the trainer), not the setting's own lr."""
    import pandas as pd

    from fgrpo_sim.sim import group_size_study as gs
    from fgrpo_sim.sim import table2_depth as depth

    seen = []

    def chunk(spec, optimizer, kind, dev, progress):
        seen.append(spec)
        return pd.DataFrame({"variant": ["GRPO"], "step": [1], "steps": [1]})

    monkeypatch.setattr(gs, "train_chunk", chunk)
    setting = depth.DepthSetting(lr=0.01)
    depth.run_setting(setting, 2, group_sizes=(2,), lrs=(0.003, 0.02))
    assert len(seen) == 1
    assert getattr(seen[0], f"{setting.optimizer}_lrs") == (0.003, 0.02)


def test_depth_record_names_a_cells_missing_metric():
    """A cell without its metric is refused under the cell's own dotted field name."""
    from fgrpo_sim.sim.table2_depth_record import _cell

    with pytest.raises(ValueError) as err:
        _cell({"model": "m", "method": "GRPO", "N": 2}, "rec.json", "fit_targets[3]")
    assert str(err.value) == "rec.json: field 'fit_targets[3].metric' must be a non-empty text, got None"


# --- group_size_resume.py: the kept rows' layout -----------------------------------------------------------------

def test_kept_chunks_come_back_with_the_tables_columns_only(tmp_path):
    """A resume keeps a sound table's rows with exactly its columns (no index column added by the filtering, which
    would then be written into the resumed table)."""
    from tests.test_sim_kills_gs import _tiny_spec, _written_table

    from fgrpo_sim.sim.group_size_resume import read_kept_chunks

    spec = _tiny_spec()
    table = _written_table(spec)
    out = tmp_path / "g.parquet"
    table.to_parquet(out)
    kept = read_kept_chunks(out, spec)
    assert list(kept.columns) == list(table.columns)
    assert list(kept.index) == list(range(len(table)))


# --- montecarlo.py: the stream of a large seed -------------------------------------------------------------------

def test_masses_given_x_draws_a_large_seeds_exact_stream():
    """The estimate draws its groups from stream seed * 1_000_003 + chunk exactly, also where that product is past
    2^53 (float arithmetic would round it onto another seed's stream): the same groups as sample_counts there."""
    import numpy as np
    import torch

    from fgrpo_sim.sim.montecarlo import estimate_masses_given_x, sample_counts

    p, correct, n, trials = np.array([0.3, 0.7]), np.array([True, False]), 4, 400
    seed = 2**40 + 1  # seed * 1_000_003 is odd and above 2^53: not a float64
    got = estimate_masses_given_x(p, correct, n, trials, seed=seed)
    counts = sample_counts(torch.as_tensor(p), n, trials, seed * 1_000_003)
    x = counts[:, 0].long().numpy()
    np.testing.assert_array_equal(got["groups"], np.bincount(x, minlength=n + 1))


# --- population.py: the mass changes are measured in float64 -------------------------------------------------------

def test_mass_changes_read_zero_when_the_update_changes_no_logit():
    """lr 1e-300 leaves every float32 logit as it was: the recorded correct-mass and unsampled-correct-mass
    changes are then zero to float64 precision (before and after masses both taken in float64; a float32
    'before' would leave a rounding residue of about 1e-8 in every change)."""
    import numpy as np

    spec = pop.PopulationSpec(num_prompts=4)
    train = pop.TrainSpec(steps=2, eval_every=2, runs=1, prompt_batch=2, lr=1e-300)
    frame = pop.simulate_population(pop.make_population(spec), train, device="cpu")
    last = frame[frame["step"] == 2]
    assert len(last) > 0
    for col in ("correct_mass_change", "unsampled_correct_change"):
        assert np.all(np.abs(last[col].to_numpy()) < 1e-12), col


# --- sim/categorical (stratum simcat): the study table, the native build ------------------------------------------

def test_categorical_study_table_is_numbered_once_across_settings(monkeypatch, tmp_path):
    """run_study's table of several settings has one row index 0 .. rows - 1 (each setting's own table starts at
    0; kept, the index would repeat and `.loc` would pick rows of two settings)."""
    import pandas as pd

    from fgrpo_sim.sim.categorical import study

    def grid(cfg, out, **kwargs):
        return pd.DataFrame({"setting": [cfg.metadata["setting"]] * 2, "step": [0, 1]})

    monkeypatch.setattr(study, "run_grid", grid)
    names = [c.metadata["setting"] for c in study.study_settings(steps=2)][:2]
    table = study.run_study(tmp_path / "s.csv", steps=2, progress=False, device="cpu", only=names)
    assert len(table) == 4 and list(table.index) == [0, 1, 2, 3]
    assert list(table["setting"]) == [names[0]] * 2 + [names[1]] * 2


def test_native_build_tries_march_native_first_and_falls_back_quietly(monkeypatch, tmp_path, capfd):
    """The sampler is built with -march=native where the compiler takes it; a compiler that refuses it is asked
    again without, and its refusal is not printed to the user's terminal."""
    import shutil
    import stat

    from fgrpo_sim.sim.categorical.compiled import _compile

    real = shutil.which("cc") or shutil.which("gcc")
    if real is None:
        pytest.skip("no C compiler")
    log = tmp_path / "calls.txt"
    fake = tmp_path / "fakecc"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\nfor a in "$@"; do\n  if [ "$a" = "-march=native" ]; then\n'
                    '    echo "fakecc: error: -march=native not supported" >&2; exit 1\n  fi\ndone\n'
                    f'exec {real} "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CC", str(fake))
    build = tmp_path / "build"
    build.mkdir()
    capfd.readouterr()
    out = _compile("int f(void) { return 1; }\n", build)
    printed = capfd.readouterr()
    assert out.exists()
    calls = log.read_text().splitlines()
    assert len(calls) == 2 and "-march=native" in calls[0].split() and "-march=native" not in calls[1]
    assert "not supported" not in printed.out + printed.err


@pytest.mark.parametrize("field", ["gammas", "adam_lrs", "sgd_lrs", "entropy_coefs", "kl_coefs"])
def test_group_size_spec_names_a_list_option_that_holds_text(field):
    """A text value in a list option is refused naming the option (it was numpy's 'could not convert' message)."""
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec

    with pytest.raises(ValueError, match=rf"^{field} must be a number or an array of numbers, got \('abc',\)"):
        GroupSizeStudySpec(**{field: ("abc",)}).validate()
