"""Tests written for the mutants of sim/'s group-size stratum (issue 44, stratum "simgs": group_size_study.py,
group_size_resume.py, group_size_record.py, regularisers.py, parametrisation.py, step_audit.py). Each pins
behaviour a user relies on: a value computed independently or by hand, every refusal's whole message, a bound at
its edge, a branch the sim selection never took (benchmarks/RESULTS.md, "sim/ stratum simgs"). Tiny hand-made
data throughout; no test trains more than a few steps."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

# --- group_size_record.py: a saved report, every field checked, every refusal's message ------------------------------

WHERE = "f.jsonl line 3"


def _interval(est, low=None, high=None):
    return [est, low, high]


@pytest.fixture
def report():
    """A small report as `group_size_report.setting_reports` writes it, three N values."""
    flanks = {"observed_lowest_N": 4, "lowest_share": 0.75, "argmin_share": [0.25, 0.75, 0.0],
              "first_minus_lowest": [0.01, 0.0, 0.02], "last_minus_lowest": [0.03, None, None], "dip": True,
              "verdict": "dip at N = 4"}
    return {"rare_correct_prob": 1.0, "optimizer": "adam", "parametrisation": "axis", "view": "equal-steps",
            "rare_mass": 0.02, "base_lr": 0.01, "lr": 0.01, "rare_share_median": None, "populations": 2,
            "batch_seeds": 1, "unit": "population", "steps": 8, "interval": "95% Student t", "few_units": True,
            "predicted_N": None, **flanks, "N": [2, 4, 8], "pass256": [0.5, 0.4, 0.6], "pass1": [0.1, 0.2, 0.3],
            "dnll_rare": [-0.5, 0.0, 2.5], "pass256_at_lowest": [0.4, 0.3, 0.5], "sd_between_populations": 0.0,
            "sd_between_batch_seeds": None,
            "fgrpo_at_lowest": [{"gamma": 1.0, "variant": "F-GRPO gamma=1", "minus_grpo": [0.01, -0.01, 0.03],
                                 "note": "kept"}],
            "curves": [{"variant": "GRPO", "gamma": 0.0, "lr": 0.0, "pass256": [[0.5, 0.4, 0.6]] * 3,
                        "pass1": [0.1, 0.2, 0.3], "dnll_rare": [0.0, 0.0, 0.0]}],
            "best_checkpoint": {**flanks, "pass256": [0.5, 0.4, 0.6]}, "written_by_a_newer_tool": {"x": 1}}


def _check(report, required=()):
    from fgrpo_sim.sim.group_size_record import check_report

    return check_report(report, WHERE, required)


def test_a_sound_report_reads_back_unchanged_with_integral_floats_as_integers(report):
    report["N"] = [2.0, 4, 8.0]
    report["observed_lowest_N"] = 4.0
    report["populations"] = 2.0
    report["best_checkpoint"]["observed_lowest_N"] = 4.0
    original = copy.deepcopy(report)
    got = _check(report, required=("N", "pass256"))
    assert report == original  # the caller's object is not changed
    assert got["N"] == [2, 4, 8] and all(type(n) is int for n in got["N"])
    assert type(got["observed_lowest_N"]) is int and type(got["populations"]) is int
    assert type(got["best_checkpoint"]["observed_lowest_N"]) is int
    assert got["written_by_a_newer_tool"] == {"x": 1} and got["fgrpo_at_lowest"][0]["note"] == "kept"
    assert got["last_minus_lowest"] == [0.03, None, None] and got["rare_share_median"] is None
    expected = {**original, "N": [2, 4, 8], "observed_lowest_N": 4, "populations": 2,
                "best_checkpoint": {**original["best_checkpoint"], "observed_lowest_N": 4}}
    assert got == expected


def test_a_report_without_a_required_field_names_the_first_missing(report):
    del report["N"], report["verdict"]
    with pytest.raises(ValueError) as err:
        _check(report, required=("optimizer", "verdict", "N"))
    assert str(err.value) == "f.jsonl line 3 is not a group-size report (no 'verdict')"


@pytest.mark.parametrize("field, value, message", [
    ("optimizer", "  ", "field 'optimizer' must be a non-empty text, got '  '"),
    ("verdict", 3, "field 'verdict' must be a non-empty text, got 3"),
    ("dip", 1, "field 'dip' must be true or false, got 1"),
    ("few_units", "true", "field 'few_units' must be true or false, got 'true'"),
    ("pass256", [0.5, 0.4], "field 'pass256' must be a list of 3 values (one per N), got [0.5, 0.4]"),
    ("pass1", {"a": 1}, "field 'pass1' must be a list of 3 values (one per N), got {'a': 1}"),
    ("fgrpo_at_lowest", {"gamma": 1}, "field 'fgrpo_at_lowest' must be a list, got {'gamma': 1}"),
    ("first_minus_lowest", [0.1, 0.2], "field 'first_minus_lowest' must be an interval [estimate, low, high], "
                                       "got [0.1, 0.2]"),
    ("first_minus_lowest", "0.1", "field 'first_minus_lowest' must be an interval [estimate, low, high], got '0.1'"),
    ("pass256_at_lowest", [None, 0.1, 0.2], "field 'pass256_at_lowest[0]' must be a number, got None"),
    ("last_minus_lowest", [0.1, 0.0, "x"], "field 'last_minus_lowest[2]' must be a number, got 'x'"),
    ("last_minus_lowest", [0.1, float("nan"), 0.2], "field 'last_minus_lowest[1]' must be a number, got nan"),
    ("best_checkpoint", [], "field 'best_checkpoint' must be an object, got []"),
    ("observed_lowest_N", 16, "field 'observed_lowest_N' = 16 is not one of the report's N [2, 4, 8]"),
    ("observed_lowest_N", 0, "field 'observed_lowest_N' must be an integer in [1, 2^63 - 1], got 0"),
    ("predicted_N", 2.5, "field 'predicted_N' must be an integer in [1, 2^63 - 1], got 2.5"),
    ("N", [4, 2, 8], "field 'N' must list group sizes in increasing order, got [4, 2, 8]"),
    ("N", [2, 2, 8], "field 'N' must list group sizes in increasing order, got [2, 2, 8]"),
    ("N", [], "field 'N' must list group sizes in increasing order, got []"),
    ("N", [0, 2, 8], "field 'N[0]' must be an integer in [1, 2^63 - 1], got 0"),
    ("N", "2,4,8", "field 'N' must be a list, got '2,4,8'"),
    ("rare_mass", 1.5, "field 'rare_mass' must be a probability mass in [0, 1], got 1.5"),
    ("rare_correct_prob", -0.1, "field 'rare_correct_prob' must be a probability in [0, 1], got -0.1"),
    ("lowest_share", 1.01, "field 'lowest_share' must be a probability in [0, 1], got 1.01"),
    ("argmin_share", [0.2, 1.2, 0.0], "field 'argmin_share[1]' must be a probability in [0, 1], got 1.2"),
    ("base_lr", -0.01, "field 'base_lr' must be a number >= 0, got -0.01"),
    ("lr", "0.01", "field 'lr' must be a number >= 0, got '0.01'"),
    ("sd_between_populations", -1.0, "field 'sd_between_populations' must be a number >= 0, got -1.0"),
    ("populations", 0, "field 'populations' must be an integer in [1, 2^63 - 1], got 0"),
    ("batch_seeds", 1.5, "field 'batch_seeds' must be an integer in [1, 2^63 - 1], got 1.5"),
    ("steps", -1, "field 'steps' must be an integer in [0, 2^63 - 1], got -1"),
    ("dnll_rare", [0.0, float("inf"), 0.0], "field 'dnll_rare[1]' must be a number, got inf"),
])
def test_each_top_level_field_is_refused_by_name(report, field, value, message):
    report[field] = value
    with pytest.raises(ValueError) as err:
        _check(report)
    assert str(err.value) == f"{WHERE}: {message}"


@pytest.mark.parametrize("path, value, message", [
    (("fgrpo_at_lowest", 0, "gamma"), -1.0, "field 'fgrpo_at_lowest[0].gamma' must be a number >= 0, got -1.0"),
    (("fgrpo_at_lowest", 0, "variant"), "", "field 'fgrpo_at_lowest[0].variant' must be a non-empty text, got ''"),
    (("fgrpo_at_lowest", 0, "minus_grpo"), [1.0], "field 'fgrpo_at_lowest[0].minus_grpo' must be an interval "
                                                  "[estimate, low, high], got [1.0]"),
    (("curves", 0, "pass1", 1), 1.5, "field 'curves[0].pass1[1]' must be a probability in [0, 1], got 1.5"),
    (("curves", 0, "pass256", 2), [0.5, 0.4], "field 'curves[0].pass256[2]' must be an interval "
                                             "[estimate, low, high], got [0.5, 0.4]"),
    (("curves", 0, "lr"), -1, "field 'curves[0].lr' must be a number >= 0, got -1"),
    (("curves", 0, "dnll_rare"), [0.0], "field 'curves[0].dnll_rare' must be a list of 3 values (one per N), "
                                         "got [0.0]"),
    (("best_checkpoint", "observed_lowest_N"), 3, "field 'best_checkpoint.observed_lowest_N' = 3 is not one of "
                                                  "the report's N [2, 4, 8]"),
    (("best_checkpoint", "dip"), None, "field 'best_checkpoint.dip' must be true or false, got None"),
    (("best_checkpoint", "pass256"), [0.5], "field 'best_checkpoint.pass256' must be a list of 3 values "
                                            "(one per N), got [0.5]"),
])
def test_nested_fields_are_named_by_their_path(report, path, value, message):
    target = report
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValueError) as err:
        _check(report)
    assert str(err.value) == f"{WHERE}: {message}"


@pytest.mark.parametrize("path, missing", [(("fgrpo_at_lowest", 0), "minus_grpo"), (("curves", 0), "pass256"),
                                           (("best_checkpoint",), "verdict"), (("best_checkpoint",), "pass256")])
def test_a_nested_record_without_a_required_field_names_it(report, path, missing):
    target = report
    for key in path:
        target = target[key]
    del target[missing]
    where = "".join(f"[{k}]" if isinstance(k, int) else k for k in path)
    with pytest.raises(ValueError) as err:
        _check(report)
    assert str(err.value) == f"{WHERE}: field {where!r} has no {missing!r}"


def test_optional_fields_take_null_and_optional_curve_fields_may_be_absent(report):
    for name in ("rare_share_median", "predicted_N", "lowest_share", "argmin_share", "sd_between_populations",
                 "sd_between_batch_seeds"):
        report[name] = None
    for name in ("pass1", "dnll_rare", "lr"):
        del report["curves"][0][name]
    got = _check(report)
    assert got["argmin_share"] is None and got["predicted_N"] is None
    assert got["curves"][0] == {"variant": "GRPO", "gamma": 0.0, "pass256": [[0.5, 0.4, 0.6]] * 3}
    # the edges of each range are inside it
    report.update(rare_mass=1, rare_correct_prob=0, base_lr=0, steps=0, predicted_N=1, lowest_share=1.0)
    assert _check(report)["predicted_N"] == 1


# --- group_size_resume.py: what a resumed run keeps, and each refusal -------------------------------------------------

def _tiny_spec(**changes):
    from fgrpo_sim.sim.group_size_study import DEFAULT_POPULATION, GroupSizeStudySpec

    base = dict(group_sizes=(2, 4), rare_masses=(0.02,), gammas=(1.0,), low_lr=False, populations=2, seeds=1,
                steps=5, eval_every=2, prompt_batch=2, optimizers=("sgd",), parametrisations=("axis",),
                sgd_lrs=(2.0,), population=replace(DEFAULT_POPULATION, num_prompts=8, heldout_prompts=8))
    return GroupSizeStudySpec(**{**base, **changes})


def _written_table(spec) -> pd.DataFrame:
    """The rows `run_study(spec)` writes (chunk, settings, every evaluation step), metrics a constant: what resume
    checks is the layout, not the numbers, so nothing is trained."""
    from fgrpo_sim.sim.group_size_resume import TABLE_SCHEMA, evaluation_steps
    from fgrpo_sim.sim.group_size_study import chunk_id, chunks, study_rows

    frames = []
    for opt, kind in chunks(spec):
        rows = study_rows(spec, opt, kind).drop(columns=["pop"])
        for _, row in rows.iterrows():
            steps = evaluation_steps(int(row["steps"]), spec.eval_every)
            frames.append(pd.DataFrame([{**row.to_dict(), "chunk": chunk_id(spec, opt, kind), "step": s,
                                         "rollouts": s * spec.prompt_batch * int(row["N"])} for s in steps]))
    table = pd.concat(frames, ignore_index=True)
    for name in TABLE_SCHEMA.metrics:
        table[name] = 0.5
    return table


def _refused(tmp_path, table: pd.DataFrame, spec, **kwargs) -> tuple[str, object]:
    """`table` written as a kept study table, then read back for `spec`: read_kept_chunks' refusal and the path."""
    from fgrpo_sim.sim.group_size_resume import read_kept_chunks

    out = tmp_path / "g.parquet"
    table.to_parquet(out)
    with pytest.raises(ValueError) as err:
        read_kept_chunks(out, spec, **kwargs)
    return str(err.value), out


def test_evaluation_steps_are_zero_every_eval_every_and_the_last():
    from fgrpo_sim.sim.group_size_resume import evaluation_steps

    assert evaluation_steps(10, 4) == [0, 4, 8, 10]
    assert evaluation_steps(8, 4) == [0, 4, 8]
    assert evaluation_steps(3, 5) == [0, 3]
    assert evaluation_steps(1, 1) == [0, 1]


def test_expected_keys_are_every_row_at_every_evaluation():
    from fgrpo_sim.sim.group_size_resume import expected_keys
    from fgrpo_sim.sim.group_size_study import chunk_id

    spec = _tiny_spec()
    keys = expected_keys(spec, "sgd", "axis")
    ident = chunk_id(spec, "sgd", "axis")
    # 2 N x 2 variants (GRPO, F-GRPO gamma=1) x 2 populations x 1 seed, each at steps 0, 2, 4, 5
    assert len(keys) == 8 * 4
    assert (ident, "equal-steps", 0.02, 1, 4, 2.0, "F-GRPO gamma=1", 0, 5) in keys
    assert {k[-1] for k in keys} == {0, 2, 4, 5}


def test_a_sound_table_is_kept_whole(tmp_path):
    from fgrpo_sim.sim.group_size_resume import read_kept_chunks

    spec = _tiny_spec()
    table = _written_table(spec)
    out = tmp_path / "g.parquet"
    table.to_parquet(out)
    kept = read_kept_chunks(out, spec)
    assert len(kept) == len(table) == 32
    assert list(kept["chunk"].unique()) == list(table["chunk"].unique())


def test_a_header_only_table_keeps_nothing_but_has_the_columns(tmp_path):
    from fgrpo_sim.sim.group_size_resume import TABLE_SCHEMA, read_kept_chunks

    out = tmp_path / "g.csv"
    out.write_text(",".join(TABLE_SCHEMA.columns) + "\n")
    kept = read_kept_chunks(out, _tiny_spec())
    assert kept.empty and list(kept.columns) == list(TABLE_SCHEMA.columns)


def test_a_planned_chunk_missing_a_row_is_refused_naming_one(tmp_path):
    spec = _tiny_spec()
    table = _written_table(spec)
    ident = table["chunk"].iloc[0]
    drop = (table["N"] == 4) & (table["variant"] == "GRPO") & (table["population"] == 1) & (table["step"] == 2)
    message, out = _refused(tmp_path, table[~drop], spec, hint="HINT")
    assert message == (
        f"cannot resume from {out}: chunk {ident!r} lacks 1 of its 32 rows (e.g. view equal-steps, rare_mass 0.02, "
        "population 1, N 4, base_lr 2.0, variant GRPO, seed 0, step 2); delete that chunk's rows, or HINT")


def test_a_planned_chunk_with_a_row_the_study_never_writes_is_refused(tmp_path):
    from fgrpo_sim.sim.group_size_resume import HINT

    spec = _tiny_spec()
    table = _written_table(spec)
    ident = table["chunk"].iloc[0]
    extra = table[(table["step"] == 2)].iloc[[0]].assign(step=3)  # step 3: not an evaluation step
    message, out = _refused(tmp_path, pd.concat([table, extra]), spec)
    row = extra.iloc[0]
    assert message == (
        f"cannot resume from {out}: chunk {ident!r} holds rows the study never writes (e.g. view equal-steps, "
        f"rare_mass 0.02, population {row['population']}, N {row['N']}, base_lr 2.0, variant {row['variant']}, "
        f"seed 0, step 3); delete that chunk's rows, or {HINT}")


def test_another_settings_chunk_is_kept_when_whole_and_refused_when_rows_are_missing(tmp_path):
    from fgrpo_sim.sim.group_size_resume import read_kept_chunks

    spec = _tiny_spec()
    other = _written_table(_tiny_spec(optimizers=("adam",), adam_lrs=(0.01,)))  # a chunk this run does not plan
    mine = _written_table(spec)
    out = tmp_path / "g.parquet"
    pd.concat([other, mine]).to_parquet(out)
    assert len(read_kept_chunks(out, spec)) == 64  # both kept whole

    ident = other["chunk"].iloc[0]
    whole_row = (other["N"] == 4) & (other["variant"] == "GRPO") & (other["population"] == 1)
    message, out = _refused(tmp_path, pd.concat([other[~whole_row], mine]), spec, hint="HINT")
    assert message == (f"cannot resume from {out}: chunk {ident!r} holds 7 trained rows where its settings "
                       "make 8 (whole rows are missing); delete that chunk's rows, or HINT")

    interior = whole_row & (other["step"] == 2)
    message, out = _refused(tmp_path, pd.concat([other[~interior], mine]), spec, hint="HINT")
    assert message == (f"cannot resume from {out}: chunk {ident!r} records rows trained 5 steps at different "
                       "steps (rows are missing); delete that chunk's rows, or HINT")


def test_a_planned_settings_chunk_with_other_settings_is_dropped_not_checked(tmp_path):
    """The same (rare_correct_prob, optimizer, parametrisation) with other settings: trained afresh, so its rows go
    (even a damaged chunk), and the planned chunk's rows stay."""
    from fgrpo_sim.sim.group_size_resume import read_kept_chunks

    spec = _tiny_spec()
    stale = _written_table(_tiny_spec(steps=3))
    stale = stale[stale["step"] > 0]  # damaged too: no first evaluation
    assert stale["chunk"].iloc[0] != _written_table(spec)["chunk"].iloc[0]
    out = tmp_path / "g.parquet"
    pd.concat([stale, _written_table(spec)]).to_parquet(out)
    kept = read_kept_chunks(out, spec)
    assert len(kept) == 32 and kept["steps"].unique().tolist() == [5]


@pytest.mark.parametrize("change, message", [
    (dict(step=6), "step 6 is beyond its row's 5 steps"),
    (dict(optimizer="adam"), "rare_correct_prob, optimizer and parametrisation (rare_correct_prob=1/adam/axis) "
                             "contradict its chunk {chunk!r}"),
    (dict(rare_correct_prob=0.5), "rare_correct_prob, optimizer and parametrisation (rare_correct_prob=0.5/sgd/axis) "
                                  "contradict its chunk {chunk!r}"),
    (dict(lr=2.5), "lr = 2.5 contradicts its chunk {chunk!r}, where this row has lr = 2"),
    (dict(gamma=0.5), "gamma = 0.5 contradicts its chunk {chunk!r}, where this row has gamma = 1"),
    (dict(steps=7), "steps = 7 contradicts its chunk {chunk!r}, where this row has steps = 5"),
])
def test_a_row_that_contradicts_its_run_is_refused_by_line(tmp_path, change, message):
    spec = _tiny_spec()
    table = _written_table(spec)
    at = int(np.flatnonzero((table["variant"] != "GRPO") & (table["step"] == 4))[0])
    for name, value in change.items():
        table.loc[at, name] = value
    refusal, out = _refused(tmp_path, table, spec, hint="HINT")
    assert refusal == (f"cannot resume from {out} row {at + 1}: {message.format(chunk=table['chunk'].iloc[0])}; "
                       "fix or delete that row, or HINT")


def test_a_lr_within_a_relative_1e_12_is_the_planned_one(tmp_path):
    """A CSV's decimal lr parsed to a last bit another library reads differently is still the run's lr."""
    from fgrpo_sim.sim.group_size_resume import read_kept_chunks

    spec = _tiny_spec()
    table = _written_table(spec)
    table["lr"] = table["lr"] * (1 + 1e-14)
    out = tmp_path / "g.parquet"
    table.to_parquet(out)
    assert len(read_kept_chunks(out, spec)) == 32
    table["lr"] = table["lr"] * (1 + 1e-10)
    table.to_parquet(out)
    with pytest.raises(ValueError, match="lr = 2 contradicts"):
        read_kept_chunks(out, spec)


# --- regularisers.py: the controls' exact logit gradients against autograd --------------------------------------------

def _rows_batch(seed=0, rows=3, batch=2, k=4):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(rows, k, generator=g, dtype=torch.float64)
    offsets = torch.randn(rows, batch, k, generator=g, dtype=torch.float64)
    start = torch.randn(rows, batch, k, generator=g, dtype=torch.float64)
    return s, offsets, torch.log_softmax(start, -1)


def test_entropy_kl_gradient_is_the_autograd_gradient_of_the_mean_penalties():
    """Per row: d/ds of -c_H mean_b H(pi_b) + c_KL mean_b KL(pi_b || pi0_b), pi_b = softmax(s + offset_b); each row its
    own coefficients (row 0 neither, row 1 entropy only, row 2 both)."""
    from fgrpo_sim.sim.regularisers import entropy_kl_gradient

    s, offsets, logp0 = _rows_batch()
    c_h = torch.tensor([0.0, 0.3, 0.7], dtype=torch.float64)
    c_kl = torch.tensor([0.0, 0.0, 1.5], dtype=torch.float64)
    s_var = s.clone().requires_grad_(True)
    logp = torch.log_softmax(s_var[:, None, :] + offsets, -1)
    p = logp.exp()
    entropy = -(p * logp).sum(-1).mean(1)
    kl = (p * (logp - logp0)).sum(-1).mean(1)
    (-c_h * entropy + c_kl * kl).sum().backward()
    got = entropy_kl_gradient(torch.log_softmax(s[:, None, :] + offsets, -1), logp0, c_h, c_kl)
    assert got.shape == (3, 4)
    torch.testing.assert_close(got, s_var.grad, rtol=1e-10, atol=1e-13)
    assert float(got[0].abs().max()) == 0.0 and float(got[1].abs().max()) > 1e-3


def test_ds_gradient_is_the_autograd_gradient_of_eq6s_shift_detached():
    """DS-GRPO's extra term: d/ds of -(1/(B N)) sum_b sum_k c_k shift_k log p_k, shift = -gamma_p log p_k on a correct
    strategy and +gamma_n log p_k on a wrong one, detached; each row its own N and coefficients."""
    from fgrpo_sim.sim.regularisers import ds_gradient

    s, offsets, _ = _rows_batch(seed=1)
    g = torch.Generator().manual_seed(2)
    counts = torch.randint(0, 4, (3, 2, 4), generator=g).to(torch.float64)
    correct = torch.tensor([True, False, True, False]).expand(3, 2, 4)
    gamma_p = torch.tensor([0.0, 0.2, 0.5], dtype=torch.float64)
    gamma_n = torch.tensor([0.3, 0.0, 0.1], dtype=torch.float64)
    group_size = torch.tensor([2, 4, 8])
    s_var = s.clone().requires_grad_(True)
    logp = torch.log_softmax(s_var[:, None, :] + offsets, -1)
    shift = torch.where(correct, -gamma_p[:, None, None] * logp, gamma_n[:, None, None] * logp).detach()
    loss = -(counts * shift * logp).sum((1, 2)) / (2 * group_size.to(torch.float64))
    loss.sum().backward()
    logp_now = torch.log_softmax(s[:, None, :] + offsets, -1)
    got = ds_gradient(logp_now.exp(), counts, logp_now, correct, gamma_p, gamma_n, group_size)
    assert got.shape == (3, 4)
    torch.testing.assert_close(got, s_var.grad, rtol=1e-10, atol=1e-13)
    assert float(got.abs().min(1).values.max()) > 0  # every row moves


# --- step_audit.py: what counts as a sync and an op --------------------------------------------------------------------

def _line_after() -> int:
    import inspect

    return inspect.currentframe().f_back.f_lineno + 1


def test_count_syncs_names_each_host_read_and_copy_at_its_line():
    from fgrpo_sim.sim.step_audit import count_syncs

    x, s0 = torch.ones(3), torch.tensor(2.0)
    with count_syncs() as sites:
        line = _line_after()
        x.tolist(), s0.item(), int(s0), float(s0), bool(s0), x.numpy(), x.cpu()
        torch.tensor([s0, s0])  # reads each element (__float__) inside: one sync, not three
        torch.as_tensor([1.0, 2.0])
        torch.as_tensor(x), torch.tensor(np.ones(2))  # a tensor in is no host data; numpy data is
        x[x > 0], x[torch.arange(2)], torch.nonzero(x)  # a boolean mask waits on the values; integer indices do not
    here = "test_sim_kills_gs.py"
    expected = {
        **{f"Tensor.{name} at {here}:{line}": 1 for name in ("tolist", "item", "__int__", "__float__", "__bool__",
                                                                 "numpy", "cpu")},
        f"torch.tensor at {here}:{line + 1}": 1, f"torch.as_tensor at {here}:{line + 2}": 1,
        f"torch.tensor at {here}:{line + 3}": 1,
        f"aten::index at {here}:{line + 4}": 1, f"aten::nonzero at {here}:{line + 4}": 1}
    lines = not _under_mutmut(sites)
    assert _comparable(sites, lines) == _comparable(expected, lines)


def _under_mutmut(sites) -> bool:
    """Under benchmarks/mutation.py mutmut wraps `_caller` in a trampoline, whose frame `_caller` then names
    ("... at trampoline.py:N"): there (and only there) sites are compared without their line."""
    return any(" at trampoline.py:" in key for key in sites)


def _comparable(sites, lines: bool) -> dict:
    """`sites` as counted, or with `lines` False by what was called and how often."""
    if lines:
        return dict(sites)
    out: dict = {}
    for key, calls in sites.items():
        out[key.split(" at ")[0]] = out.get(key.split(" at ")[0], 0) + calls
    return out


def test_count_syncs_puts_every_method_back_even_when_the_block_raises():
    from fgrpo_sim.sim.step_audit import HOST_COPIES, HOST_READS, count_syncs

    before = {name: getattr(torch.Tensor, name) for name in HOST_READS}
    factories = {name: getattr(torch, name) for name in HOST_COPIES}
    with pytest.raises(RuntimeError, match="inside"):
        with count_syncs():
            assert torch.Tensor.item is not before["item"]
            raise RuntimeError("inside")
    assert {name: getattr(torch.Tensor, name) for name in HOST_READS} == before
    assert {name: getattr(torch, name) for name in HOST_COPIES} == factories


def test_caller_is_a_question_mark_when_every_frame_is_torchs(monkeypatch):
    import traceback

    from fgrpo_sim.sim import step_audit

    frames = [traceback.FrameSummary("/site/torch/a.py", 3, "f"), traceback.FrameSummary("/x/step_audit.py", 4, "g"),
              traceback.FrameSummary("/site/torch/b.py", 5, "h"), traceback.FrameSummary("/site/torch/c.py", 6, "i")]
    monkeypatch.setattr(step_audit.traceback, "extract_stack", lambda: list(frames))
    assert step_audit._caller() == "?"
    frames[0] = traceback.FrameSummary("/home/me/run.py", 7, "main")  # the outermost frame outside torch
    frames.insert(1, traceback.FrameSummary("/home/me/lib.py", 8, "step"))  # the innermost one: named
    assert step_audit._caller() == "lib.py:8"


def test_top_level_ops_count_what_a_wrapper_holds_but_not_what_an_op_runs_inside():
    from fgrpo_sim.sim.step_audit import audit, count_top_level_ops

    x, row, w = torch.ones(3), torch.ones(1, 3), torch.ones(2, 3)

    def step():
        with torch.autograd.profiler.record_function("wrapper"):  # not an op: the ops inside it count
            y = (x * 2).sum()
        return torch.nn.functional.linear(row, w) + y  # linear runs a matmul inside: one op

    ops, names = count_top_level_ops(step)
    assert (ops, dict(names)) == (4, {"aten::mul": 1, "aten::sum": 1, "aten::linear": 1, "aten::add": 1})
    report = audit(lambda: (x + 1).sum().item())
    assert report["ops"] == 3 and report["op_names"] == {"aten::add": 1, "aten::sum": 1, "aten::item": 1}
    assert report["syncs"] == 1 and list(report["sync_sites"]) == [next(iter(report["sync_sites"]))]
    site = next(iter(report["sync_sites"]))
    assert site.startswith("Tensor.item at " + ("trampoline.py:" if _under_mutmut([site]) else "test_sim_kills_gs.py:"))


def test_replay_signature_lists_ops_with_tensor_shapes_and_constants():
    from fgrpo_sim.sim.step_audit import replay_signature

    x = torch.ones(3)
    calls = replay_signature(lambda: torch.cat([x, x * 2]).clamp(min=0.5))
    assert calls == [
        ("aten.mul.Tensor", (("tensor", (3,), "torch.float32"), 2), ()),
        ("aten.cat.default", ((("tensor", (3,), "torch.float32"), ("tensor", (3,), "torch.float32")),), ()),
        ("aten.clamp.default", (("tensor", (6,), "torch.float32"), 0.5), ()),
    ]


# --- group_size_study.py: the spec's every refusal, and its edges accepted ---------------------------------------------

@pytest.mark.parametrize("change, message", [
    (dict(group_sizes=(0,)), "group_sizes must be in [1, 1000000], got 0"),
    (dict(group_sizes=(2, 1_000_001)), "group_sizes must be in [1, 1000000], got 1000001"),
    (dict(group_sizes=()), "group_sizes must list at least one value, each once, got ()"),
    (dict(group_sizes=(2, 2)), "group_sizes must list at least one value, each once, got (2, 2)"),
    (dict(rare_masses=(0.0,)), "rare_masses must be in (0, 0.4), got 0"),
    (dict(rare_masses=(0.02, 0.4)), "rare_masses must be in (0, 0.4), got 0.4"),
    (dict(rare_masses=()), "rare_masses must list at least one value, each once, got ()"),
    (dict(gammas=(0.0,)), "gammas must be in (0, 20], got 0"),
    (dict(gammas=(20.5,)), "gammas must be in (0, 20], got 20.5"),
    (dict(gammas=()), "gammas must list at least one value, each once, got ()"),
    (dict(gammas=(1.0, 1.0)), "gammas must list at least one value, each once, got (1.0, 1.0)"),
    (dict(focal_smoothing=-0.1), "focal_smoothing must be in [0, inf), got -0.1"),
    (dict(focal_smoothing=float("inf")), "focal_smoothing must be in [0, inf), got inf"),
    (dict(entropy_coefs=(0.0,)), "entropy_coefs must be in (0, 10], got 0"),
    (dict(entropy_coefs=(10.5,)), "entropy_coefs must be in (0, 10], got 10.5"),
    (dict(entropy_coefs=(0.1, 0.1)), "entropy_coefs must list each value once, got (0.1, 0.1)"),
    (dict(kl_coefs=(0.0,)), "kl_coefs must be in (0, 10], got 0"),
    (dict(kl_coefs=(10.5,)), "kl_coefs must be in (0, 10], got 10.5"),
    (dict(kl_coefs=(0.2, 0.2)), "kl_coefs must list each value once, got (0.2, 0.2)"),
    (dict(ds_coefs=((0.1,),)), "ds_coefs must list (gamma_p, gamma_n) pairs, got ((0.1,),)"),
    (dict(ds_coefs=((0.1, 0.2, 0.3),)), "ds_coefs must list (gamma_p, gamma_n) pairs, got ((0.1, 0.2, 0.3),)"),
    (dict(ds_coefs=((0.1, 0.0), (0.0, 0.0))), "ds_coefs must hold a positive gamma_p or gamma_n in each pair, "
                                              "got ((0.1, 0.0), (0.0, 0.0))"),
    (dict(ds_coefs=((-0.1, 0.2),)), "ds_coefs must be in [0, 10], got -0.1"),
    (dict(ds_coefs=((0.1, 10.5),)), "ds_coefs must be in [0, 10], got 10.5"),
    (dict(ds_coefs=((0.1, 0.2), (0.1, 0.2))), "ds_coefs must list each value once, got ((0.1, 0.2), (0.1, 0.2))"),
    (dict(views=("equal-flops",)), "views must be one of equal-steps, equal-rollouts, got 'equal-flops'"),
    (dict(views=()), "views must list at least one value, each once, got ()"),
    (dict(views=("equal-steps", "equal-steps")), "views must list at least one value, each once, "
                                                 "got ('equal-steps', 'equal-steps')"),
    (dict(optimizers=("sgdm",)), "optimizers must be one of adam, sgd, got 'sgdm'"),
    (dict(optimizers=()), "optimizers must list at least one value, each once, got ()"),
    (dict(parametrisations=("spherical",)), "parametrisations must be one of axis, orthogonal, dense, got 'spherical'"),
    (dict(parametrisations=("axis", "axis")), "parametrisations must list at least one value, each once, "
                                              "got ('axis', 'axis')"),
    (dict(adam_lrs=()), "adam_lrs must list at least one value, each once, got ()"),
    (dict(adam_lrs=(0.01, 0.01)), "adam_lrs must list at least one value, each once, got (0.01, 0.01)"),
    (dict(sgd_lrs=()), "sgd_lrs must list at least one value, each once, got ()"),
    (dict(sgd_lrs=(2.0, 2.0)), "sgd_lrs must list at least one value, each once, got (2.0, 2.0)"),
    (dict(populations=1), "populations must be in [2, 10000], got 1"),
    (dict(populations=10_001), "populations must be in [2, 10000], got 10001"),
    (dict(seeds=0), "seeds must be in [1, 10000], got 0"),
    (dict(seeds=10_001), "seeds must be in [1, 10000], got 10001"),
    (dict(steps=0), "steps must be in [1, 1000000], got 0"),
    (dict(steps=1_000_001), "steps must be in [1, 1000000], got 1000001"),
    (dict(reference_n=0), "reference_n must be in [1, 1000000], got 0"),
    (dict(reference_n=1_000_001), "reference_n must be in [1, 1000000], got 1000001"),
    (dict(prompt_batch=0), "prompt_batch must be in [1, 256], got 0"),
    (dict(prompt_batch=257), "prompt_batch must be in [1, 256], got 257"),
    (dict(adam_lrs=(0.0,)), "adam_lrs must be in (0, 10], got 0"),
    (dict(adam_lrs=(10.5,)), "adam_lrs must be in (0, 10], got 10.5"),
    (dict(sgd_lrs=(0.0,)), "sgd_lrs must be in (0, 1000], got 0"),
    (dict(sgd_lrs=(1000.5,)), "sgd_lrs must be in (0, 1000], got 1000.5"),
    (dict(eval_every=0), "eval_every must be in [1, inf], got 0"),
    (dict(seed=-1), "seed must be in [0, 2^62], got -1"),
    (dict(seed=2**62 + 1), "seed must be in [0, 2^62], got 4611686018427387905"),
    (dict(population="offset_scale"), "offset_scale must be in [0, 20], got 21"),  # the population's own check
    (dict(population="common_mass"), "rare_masses must be in (0, 0.09999999999999998), got 0.1"),
])
def test_the_spec_refuses_each_bad_field_by_name_and_range(change, message):
    from fgrpo_sim.sim.group_size_study import DEFAULT_POPULATION, GroupSizeStudySpec

    if change.get("population") == "offset_scale":
        change = dict(population=replace(DEFAULT_POPULATION, offset_scale=21.0))
    elif change.get("population") == "common_mass":  # rare masses up to 1 - common mass
        change = dict(rare_masses=(0.1,), population=replace(DEFAULT_POPULATION, common_mass=0.9))
    with pytest.raises(ValueError) as err:
        GroupSizeStudySpec(**change).validate()
    assert str(err.value) == message


@pytest.mark.parametrize("change", [
    dict(group_sizes=(1, 1_000_000), rare_masses=(0.399,), gammas=(20.0,), focal_smoothing=0.0, entropy_coefs=(10.0,),
         kl_coefs=(1e-9, 10.0), ds_coefs=((0.0, 10.0), (10.0, 0.0)), populations=2, seeds=1, steps=1, reference_n=1,
         prompt_batch=1, adam_lrs=(10.0,), sgd_lrs=(1000.0,), eval_every=1, seed=0),
    dict(populations=10_000, seeds=10_000, steps=1_000_000, reference_n=1_000_000, prompt_batch=256,
         eval_every=10**9, seed=2**62, focal_smoothing=1e6, views=("equal-rollouts", "equal-steps"),
         optimizers=("sgd",), parametrisations=("dense",)),
])
def test_the_spec_accepts_every_bound_it_states(change):
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec

    spec = GroupSizeStudySpec(**change)
    assert spec.validate() is spec


def test_lrs_are_the_optimizers_own():
    from fgrpo_sim.sim.group_size_study import DEFAULT_LRS, GroupSizeStudySpec

    spec = GroupSizeStudySpec()
    assert spec.lrs("adam") == DEFAULT_LRS["adam"] == (0.01, 0.03)
    assert spec.lrs("sgd") == DEFAULT_LRS["sgd"] == (2.0, 6.0)


# --- parametrisation.py: the maps, their bounds and the module --------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (("orbit", 3, 0), "parametrisation must be one of axis, orthogonal, dense, got 'orbit'"),
    (("dense", 0, 0), "num_logits must be in [1, 100000], got 0"),
    (("dense", 100_001, 0), "num_logits must be in [1, 100000], got 100001"),
    (("dense", 3, -1), "seed must be in [0, 2^63 - 1], got -1"),
    (("dense", 3, 2**63), "seed must be in [0, 2^63 - 1], got 9223372036854775808"),
    (("dense", 3, 0, 1), "width must be in [2, 1000], got 1"),
    (("dense", 3, 0, 1001), "width must be in [2, 1000], got 1001"),
])
def test_logit_map_refuses_each_bad_argument(args, message):
    from fgrpo_sim.sim.parametrisation import logit_map

    with pytest.raises(ValueError) as err:
        logit_map(*args)
    assert str(err.value) == message


def test_logit_maps_at_their_edges_and_shapes():
    from fgrpo_sim.sim.parametrisation import DENSE_WIDTH, logit_map

    assert DENSE_WIDTH == 4
    assert np.array_equal(logit_map("axis", 3, 2**63 - 1), np.eye(3))
    assert logit_map("dense", 1, 0, 1000).shape == (1, 1000)
    assert logit_map("dense", 3, 5, 2).shape == (3, 6) and logit_map("dense", 3, 5).shape == (3, 12)
    assert logit_map("orthogonal", 2, 2**63 - 1).shape == (2, 2)


def test_the_orthogonal_map_is_the_sign_fixed_q_of_its_seeds_draw():
    """Haar: M = Q with R's diagonal made positive (Mezzadri 2007), i.e. M^T A is upper triangular with a positive
    diagonal for the Gaussian A drawn from the map's own stream (the seed and a salt, apart from the population's)."""
    from fgrpo_sim.sim.parametrisation import logit_map

    m = logit_map("orthogonal", 5, 7)
    a = np.random.default_rng([7, 28]).standard_normal((5, 5))
    r = m.T @ a
    np.testing.assert_allclose(m @ m.T, np.eye(5), atol=1e-12)
    np.testing.assert_allclose(np.tril(r, -1), 0.0, atol=1e-12)
    assert (np.diag(r) > 0).all()
    assert not np.allclose(logit_map("orthogonal", 5, 7), logit_map("orthogonal", 5, 8))
    assert not np.allclose(m, np.linalg.qr(np.random.default_rng(7).standard_normal((5, 5)))[0])


def test_the_dense_map_has_unit_variance_rows_over_its_width():
    from fgrpo_sim.sim.parametrisation import logit_map

    m = logit_map("dense", 3, 1, width=1000)  # 3000 columns, entries N(0, 1/3000): M M^T ~ I
    np.testing.assert_allclose(m @ m.T, np.eye(3), atol=0.08)
    np.testing.assert_allclose(m, np.random.default_rng([1, 28]).standard_normal((3, 3000)) / np.sqrt(3000))


@pytest.mark.parametrize("kind", ["orthogonal", "dense"])
def test_initial_parameters_are_the_least_norm_solution(kind):
    from fgrpo_sim.sim.parametrisation import initial_parameters, logit_map

    m = logit_map(kind, 4, 3)
    logits = np.array([[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, -3.0, 0.25]])
    theta = initial_parameters(m, logits)
    np.testing.assert_allclose(theta @ m.T, logits, atol=1e-12)
    y = np.linalg.lstsq(m.T, theta.T, rcond=None)[0]  # in M's row space: theta = M^T y, so no shorter solution
    np.testing.assert_allclose(m.T @ y, theta.T, atol=1e-12)
    assert initial_parameters(m, [[1, 0, 0, 0]]).dtype == np.float64  # integer logits read as floats


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_linear_logits_keep_the_initial_logits_dtype_and_start(dtype):
    from fgrpo_sim.sim.parametrisation import LinearLogits

    start = torch.tensor([[0.5, -1.0, 2.0], [0.0, 1.0, 0.25]], dtype=dtype)
    axis = LinearLogits(start, "axis", seed=3)
    assert axis.kind == "axis" and axis.m is None and axis.logits() is axis.theta
    assert axis.theta.dtype == dtype and torch.equal(axis.logits().detach(), start)
    start_copy = start.clone()
    start.add_(1.0)  # theta is a copy, not a view of the caller's tensor
    assert torch.equal(axis.theta.detach(), start_copy)
    for kind, d in (("orthogonal", 3), ("dense", 6)):
        model = LinearLogits(start_copy, kind, seed=3, width=2)
        assert model.kind == kind and model.theta.shape == (2, d) and model.m.shape == (3, d)
        assert model.theta.dtype == model.m.dtype == dtype and model.theta.requires_grad
        assert "m" in dict(model.named_buffers()) and [n for n, _ in model.named_parameters()] == ["theta"]
        torch.testing.assert_close(model.logits().detach(), start_copy)


# --- group_size_study.py: the engine's tables, ids, slices, controls and refusals -------------------------------------

def test_advantage_tables_hold_the_focal_grpo_advantages_by_hand():
    """N = 4: a group with X correct has mean X/4 and population std s = sqrt(X/4 (1 - X/4)); GRPO's advantage is
    (r - X/4) / (s + 1e-6), F-GRPO's times (1 - X/4)^gamma; zero where the group has no such rollout."""
    from fgrpo_sim.sim.group_size_study import advantage_tables

    a_correct, a_wrong = advantage_tables([(4, 0.0), (4, 1.0), (2, 0.5)], 5)
    assert a_correct.shape == a_wrong.shape == (3, 6) and a_correct.dtype == torch.float64
    for x in range(5):
        mu = x / 4
        s = np.sqrt(mu * (1 - mu)) + 1e-6
        correct = (1 - mu) / s if 0 < x else 0.0
        wrong = -mu / s if x < 4 else 0.0
        assert float(a_correct[0, x]) == pytest.approx(correct, rel=1e-12, abs=1e-300)
        assert float(a_wrong[0, x]) == pytest.approx(wrong, rel=1e-12, abs=1e-300)
        assert float(a_correct[1, x]) == pytest.approx(correct * (1 - mu), rel=1e-12, abs=1e-300)
        assert float(a_wrong[1, x]) == pytest.approx(wrong * (1 - mu), rel=1e-12, abs=1e-300)
    assert float(a_correct[2, 1]) == pytest.approx(0.5 / (0.5 + 1e-6) * 0.5 ** 0.5, rel=1e-12)
    assert float(a_correct[0, 5].abs() + a_wrong[0, 5].abs() + a_correct[2, 3:].abs().sum()) == 0.0
    # smoothed weight (X + alpha) / (N + 2 alpha), alpha = 1: X = 1 of 4 -> 2/6
    smooth_c, _ = advantage_tables([(4, 1.0)], 4, focal_smoothing=1.0)
    s = np.sqrt(0.25 * 0.75) + 1e-6
    assert float(smooth_c[0, 1]) == pytest.approx(0.75 / s * (1 - 2 / 6), rel=1e-12)


def test_chunk_ids_fingerprint_only_their_own_optimizers_lrs():
    from fgrpo_sim.sim.group_size_study import SEEDING, chunk_id

    spec = _tiny_spec(optimizers=("adam", "sgd"), adam_lrs=(0.01,))
    assert SEEDING == "per-row-stream-v2"
    adam, sgd = chunk_id(spec, "adam", "axis"), chunk_id(spec, "sgd", "axis")
    assert adam.startswith("rare_correct_prob=1/adam/axis#") and sgd.startswith("rare_correct_prob=1/sgd/axis#")
    assert len(adam.split("#")[1]) == 12
    assert chunk_id(replace(spec, adam_lrs=(0.03,)), "adam", "axis") != adam  # its own lr: a new chunk
    assert chunk_id(replace(spec, adam_lrs=(0.03,)), "sgd", "axis") == sgd  # the other optimizer's lr: the same
    assert chunk_id(replace(spec, sgd_lrs=(6.0,)), "adam", "axis") == adam
    assert chunk_id(replace(spec, sgd_lrs=(6.0,)), "sgd", "axis") != sgd
    assert chunk_id(replace(spec, focal_smoothing=0.5), "sgd", "axis") != sgd
    assert chunk_id(replace(spec, kl_coefs=(0.1,)), "sgd", "axis") != sgd


def test_row_counts_slices_cover_the_active_rows_once_in_bounded_slices():
    """The torch sampler's plan: per N, the active rows of that N split into slices of at most SLICE_DRAWS draws
    (N x batch per row), disjoint and in order, each index tensor made on the device once per prefix."""
    from fgrpo_sim.sim.group_size_study import RowCounts

    n_host = np.array([8, 8, 8, 2, 2, 8, 2])
    keys = torch.arange(7 * 2, dtype=torch.int64).reshape(7, 2)
    counts = RowCounts(n_host, keys, torch.device("cpu"), sampler="torch")
    counts.SLICE_DRAWS = 40  # 8 x 2 draws a row at N = 8: 2 rows a slice; N = 2: 10 rows a slice
    plan = counts._slices(6, torch.device("meta"))
    assert [(n, idx.tolist() if idx.device.type != "meta" else idx.shape[0]) for n, idx in plan] == [(2, 2), (8, 2),
                                                                                                    (8, 2)]
    assert all(idx.device.type == "meta" for _, idx in plan)
    plan = counts._slices(7, torch.device("cpu"))
    assert [(n, idx.tolist()) for n, idx in plan] == [(2, [3, 4, 6]), (8, [0, 1]), (8, [2, 5])]
    assert counts._slices(7, torch.device("cpu")) is plan  # built once per prefix
    counts.SLICE_DRAWS = 1  # fewer draws than one row: still a row a slice
    assert [(n, idx.tolist()) for n, idx in counts._slices(3, torch.device("cpu"))] == [(8, [0]), (8, [1]), (8, [2])]


def test_population_tensors_carry_no_map_on_the_axis_path():
    """axis: s = theta, no product per step (the map is None); otherwise one map per (rare mass, population) draw."""
    from fgrpo_sim.sim.group_size_study import _population_tensors
    from fgrpo_sim.sim.parametrisation import logit_map

    spec = _tiny_spec(rare_masses=(0.02, 0.1))
    axis = _population_tensors(spec, "axis", torch.device("cpu"))
    assert axis["maps"] is None
    torch.testing.assert_close(axis["theta0"], axis["shared0"])
    dense = _population_tensors(spec, "dense", torch.device("cpu"))
    k = axis["shared0"].shape[1]
    assert dense["maps"].shape == (4, k, 4 * k)
    for draw, population in enumerate((0, 1, 0, 1)):  # (rare mass, population) draws; the map from the population
        np.testing.assert_array_equal(dense["maps"][draw].numpy(), logit_map("dense", k, population))
    torch.testing.assert_close(torch.einsum("pkd,pd->pk", dense["maps"], dense["theta0"]), dense["shared0"])


def test_the_chunks_progress_bar_names_its_optimizer_and_map(monkeypatch):
    import fgrpo_sim.progress
    from fgrpo_sim.sim.group_size_study import _train_chunk

    seen = []

    def spy(iterable=None, **kwargs):
        seen.append(kwargs)
        return iterable

    monkeypatch.setattr(fgrpo_sim.progress, "bar", spy)
    _train_chunk(_tiny_spec(steps=1, populations=2, group_sizes=(2,)), "sgd", "axis", torch.device("cpu"), True)
    assert seen == [dict(progress=True, desc="sgd axis", leave=False)]


def test_run_study_on_ray_hands_every_chunk_to_run_on_ray_and_keeps_their_order(monkeypatch):
    """The Ray path with stand-ins (what Ray would run is train_chunk per chunk): chunks that finish out of order are
    saved as they come and returned in the run's order; a skipped chunk is not handed over."""
    import contextlib
    import types

    from fgrpo_sim.sim import executor
    from fgrpo_sim.sim.group_size_study import chunk_id, run_study, train_chunk

    calls = {}

    @contextlib.contextmanager
    def session(ex, device):
        calls["session"] = (ex, device)
        yield "cpu", 0.5

    def on_ray(fn, chunk_args, on_result, **kwargs):
        calls["run"] = (fn, [a[1:] for a in chunk_args], kwargs)
        for index in reversed(range(len(chunk_args))):
            on_result(index, pd.DataFrame({"chunk": [f"{chunk_args[index][1]}/{chunk_args[index][2]}"]}))

    monkeypatch.setattr(executor, "ray_session", session)
    monkeypatch.setattr(executor, "run_on_ray", on_ray)
    ex = types.SimpleNamespace(is_ray=True)
    spec = _tiny_spec(optimizers=("adam", "sgd"), adam_lrs=(0.01,), parametrisations=("axis", "dense"))
    saved = []
    table = run_study(spec, device="auto", executor=ex, on_chunk=lambda f: saved.append(f["chunk"].iloc[0]),
                      skip={chunk_id(spec, "adam", "dense")}, progress=True)
    assert calls["session"] == (ex, "auto")
    fn, args, kwargs = calls["run"]
    assert fn is train_chunk and args == [("adam", "axis", "cpu"), ("sgd", "axis", "cpu"), ("sgd", "dense", "cpu")]
    assert kwargs == dict(executor=ex, gpus=0.5, progress=True, desc="group-size chunks")
    assert saved == ["sgd/dense", "sgd/axis", "adam/axis"]
    assert table["chunk"].tolist() == ["adam/axis", "sgd/axis", "sgd/dense"]


def test_run_study_with_every_chunk_skipped_trains_nothing():
    from fgrpo_sim.sim.group_size_study import chunk_id, run_study

    spec = _tiny_spec()
    assert run_study(spec, skip={chunk_id(spec, "sgd", "axis")}).empty


def test_a_diverged_row_is_named_by_its_own_lr_and_n():
    """The finiteness check at an evaluation names a row that diverged, not merely the first of its block (reached
    here with an lr validate would refuse: with validated lrs the float64 logits stay finite)."""
    from fgrpo_sim.sim.group_size_study import _train_chunk

    spec = _tiny_spec(sgd_lrs=(2.0, float("inf")), steps=2, eval_every=1, group_sizes=(2, 4))
    with pytest.raises(ValueError) as err:
        _train_chunk(spec, "sgd", "axis", torch.device("cpu"), False)
    assert str(err.value) == ("lr must be small enough to keep the logits finite: sgd lr inf diverged by step 1 "
                              "(axis, N = 2)")


def test_the_controls_gradients_are_taken_at_the_rollout_policy_and_added(monkeypatch):
    """Every step: the entropy/KL term at the log-probs of the policy the counts were drawn from (its start's at
    step 1 the same), the DS term with the same counts and correct sets, each row's own coefficients and N, and the
    update's gradient the sum of the three."""
    from fgrpo_sim.sim import group_size_study as study
    from fgrpo_sim.sim import regularisers

    seen = {"lg": [], "ek": [], "ds": [], "sgd": []}

    def spy(name, real):
        def call(*args):
            out = real(*args)
            seen[name].append((args, out))
            return out
        return call

    monkeypatch.setattr(study, "logit_gradient", spy("lg", study.logit_gradient))
    monkeypatch.setattr(regularisers, "entropy_kl_gradient", spy("ek", regularisers.entropy_kl_gradient))
    monkeypatch.setattr(regularisers, "ds_gradient", spy("ds", regularisers.ds_gradient))
    monkeypatch.setattr(study, "sgd_step", spy("sgd", study.sgd_step))
    spec = _tiny_spec(steps=2, entropy_coefs=(0.3,), kl_coefs=(0.5,), ds_coefs=((0.2, 0.1),))
    study._train_chunk(spec, "sgd", "axis", torch.device("cpu"), False)
    rows = study.study_rows(spec, "sgd", "axis")
    want = {"GRPO entropy=0.3": (0.3, 0, 0, 0), "GRPO KL=0.5": (0, 0.5, 0, 0), "GRPO DS=0.2,0.1": (0, 0, 0.2, 0.1)}
    coef = torch.tensor([want.get(v, (0, 0, 0, 0)) for v in rows["variant"]], dtype=torch.float64)
    n = torch.as_tensor(rows["N"].to_numpy().copy())
    assert len(seen["lg"]) == len(seen["ek"]) == len(seen["ds"]) == len(seen["sgd"]) == 2
    for step in range(2):
        (probs, counts, _, _, corr, n_lg), g_pg = seen["lg"][step]
        (logp, logp0, c_h, c_kl), g_ek = seen["ek"][step]
        (probs_ds, counts_ds, logp_ds, corr_ds, g_p, g_n, n_ds), g_ds = seen["ds"][step]
        torch.testing.assert_close(logp.exp(), probs, rtol=1e-12, atol=1e-15)
        torch.testing.assert_close(logp0.exp().sum(-1), torch.ones(probs.shape[:2], dtype=torch.float64))
        if step == 0:  # the policy is still its start
            torch.testing.assert_close(logp0, logp, rtol=1e-12, atol=1e-12)
        assert probs_ds is probs and counts_ds is counts and logp_ds is logp and corr_ds is corr
        for got, column in ((c_h, 0), (c_kl, 1), (g_p, 2), (g_n, 3)):
            assert torch.equal(got, coef[:, column])
        assert torch.equal(n_lg, n) and torch.equal(n_ds, n)
        (theta, grad, lr, active), _ = seen["sgd"][step]
        torch.testing.assert_close(grad, g_pg + g_ek + g_ds, rtol=1e-12, atol=1e-15)


def test_variants_and_control_rows_are_named_and_priced_as_documented():
    from fgrpo_sim.sim.group_size_study import chunks, regularised, variants
    from fgrpo_sim.theory import lr_multiplier

    spec = _tiny_spec(gammas=(0.5, 1.0), low_lr=True, focal_smoothing=0.5, entropy_coefs=(0.1,), kl_coefs=(0.2,),
                      ds_coefs=((0.1, 0.0), (0.0, 0.3)), optimizers=("adam", "sgd"), adam_lrs=(0.01,),
                      parametrisations=("axis", "dense"))
    got = variants(spec, 2.0)
    assert [name for name, _, _ in got] == [
        "GRPO", "F-GRPO gamma=0.5 alpha=0.5", "F-GRPO gamma=1 alpha=0.5", "GRPO low-LR (x m_0.5)",
        "GRPO low-LR (x m_1)", "GRPO entropy=0.1", "GRPO KL=0.2", "GRPO DS=0.1,0", "GRPO DS=0,0.3"]
    assert [gamma for _, gamma, _ in got] == [0.0, 0.5, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    lrs = [lr for _, _, lr in got]
    assert lrs[:3] == [2.0] * 3 and lrs[5:] == [2.0] * 4
    assert lrs[3] == pytest.approx(2.0 * float(lr_multiplier(0.5)), rel=1e-12)
    assert lrs[4] == pytest.approx(1.0, rel=1e-12)  # m_1 = 1/2
    assert regularised(spec) == {"GRPO entropy=0.1": (0.1, 0.0, 0.0, 0.0), "GRPO KL=0.2": (0.0, 0.2, 0.0, 0.0),
                                 "GRPO DS=0.1,0": (0.0, 0.0, 0.1, 0.0), "GRPO DS=0,0.3": (0.0, 0.0, 0.0, 0.3)}
    plain = variants(_tiny_spec(gammas=(1.0,), low_lr=False), 0.5)
    assert plain == [("GRPO", 0.0, 0.5), ("F-GRPO gamma=1", 1.0, 0.5)]
    assert chunks(spec) == [("adam", "axis"), ("adam", "dense"), ("sgd", "axis"), ("sgd", "dense")]


def test_study_rows_lay_out_each_trained_model_with_its_step_count():
    from fgrpo_sim.sim.group_size_study import study_rows

    spec = _tiny_spec(group_sizes=(2, 8, 64), rare_masses=(0.02, 0.1), views=("equal-steps", "equal-rollouts"),
                      steps=10, reference_n=8, populations=2, seeds=2)
    rows = study_rows(spec)
    assert list(rows.columns) == ["rare_correct_prob", "optimizer", "parametrisation", "view", "rare_mass",
                                  "population", "pop", "N", "base_lr", "variant", "gamma", "lr", "seed", "steps"]
    assert len(rows) == 2 * 2 * 2 * 3 * 2 * 2  # views x rare masses x populations x N x variants x seeds
    first = rows.iloc[0].to_dict()
    assert first == dict(rare_correct_prob=1.0, optimizer="sgd", parametrisation="axis", view="equal-steps",
                         rare_mass=0.02, population=0, pop=0, N=2, base_lr=2.0, variant="GRPO", gamma=0.0, lr=2.0,
                         seed=0, steps=10)
    # pop: the (rare mass, population) draw's index
    assert sorted(set(zip(rows["rare_mass"], rows["population"], rows["pop"]))) == [
        (0.02, 0, 0), (0.02, 1, 1), (0.1, 0, 2), (0.1, 1, 3)]
    steps = rows.groupby(["view", "N"])["steps"].unique().to_dict()
    assert {k: list(v) for k, v in steps.items()} == {
        ("equal-rollouts", 2): [40], ("equal-rollouts", 8): [10], ("equal-rollouts", 64): [1],  # round(10 x 8 / 64) = 1
        ("equal-steps", 2): [10], ("equal-steps", 8): [10], ("equal-steps", 64): [10]}
    assert study_rows(_tiny_spec(group_sizes=(512,), views=("equal-rollouts",), steps=10))["steps"].tolist() == [1] * 4
    assert study_rows(spec, "sgd", "axis").equals(rows)
    assert study_rows(spec, "adam", "axis").empty


def test_stream_seeds_and_row_keys_are_keyed_by_their_own_fields():
    from fgrpo_sim.sim.group_size_study import STREAM_FIELDS, row_keys, stream_seed, study_rows

    spec = _tiny_spec(prompt_batch=3)
    rows = study_rows(spec)
    base = rows.iloc[0]
    seed0 = stream_seed(spec, base)
    assert 0 <= seed0 < 2**63
    assert stream_seed(spec, base.to_dict()) == seed0
    changed = {"rare_correct_prob": 0.5, "optimizer": "adam", "view": "equal-rollouts", "rare_mass": 0.1,
               "base_lr": 6.0, "population": 1, "seed": 1}
    assert set(changed) == set(STREAM_FIELDS)
    seeds = {stream_seed(spec, {**base.to_dict(), name: value}) for name, value in changed.items()}
    assert len(seeds) == 7 and seed0 not in seeds
    assert stream_seed(replace(spec, seed=1), base) != seed0
    for name, value in {"N": 1024, "variant": "X", "parametrisation": "dense", "gamma": 2.0, "lr": 9.0}.items():
        assert stream_seed(spec, {**base.to_dict(), name: value}) == seed0  # not keyed by these
    keys = row_keys(spec, rows)
    assert keys.shape == (len(rows), 3) and keys.dtype == torch.int64 and bool((keys >= 0).all())
    assert len(set(keys.flatten().tolist())) == keys.numel()  # every row and slot its own stream
    # a row's keys are its own whatever else the table holds
    assert torch.equal(row_keys(spec, rows.iloc[[5, 0]]), keys[[5, 0]])


def test_population_spec_sets_the_draws_rare_mass_and_seed():
    from fgrpo_sim.sim.group_size_study import population_spec

    spec = _tiny_spec()
    got = population_spec(spec, 0.1, 3)
    assert got == replace(spec.population, rare_mass=0.1, seed=3)
    assert type(got.seed) is int and type(got.rare_mass) is float


def test_initial_mu_rho_by_hand():
    import types

    from fgrpo_sim.sim.group_size_study import initial_mu_rho

    probs = np.array([[0.5, 0.2, 0.3], [0.1, 0.6, 0.3]])
    population = types.SimpleNamespace(initial_probs=lambda split: probs if split == "train" else None,
                                       correct={"train": np.array([[True, True, False], [False, True, True]])},
                                       kind=np.array([0, 1, 2]))
    mu, rho = initial_mu_rho(population)
    np.testing.assert_allclose(mu, [0.7, 0.9], rtol=1e-15)
    np.testing.assert_allclose(rho, [0.2 / 0.7, 0.6 / 0.9], rtol=1e-15)


def test_predicted_dips_pool_every_population_draw_per_rare_mass():
    from fgrpo_sim.planner import empirical_difficulty, predict_dip
    from fgrpo_sim.sim.group_size_study import initial_mu_rho, population_spec, predicted_dips
    from fgrpo_sim.sim.population_shared import make_shared_population

    spec = _tiny_spec(rare_masses=(0.005, 0.1), group_sizes=(2, 4, 8, 16, 32, 64), populations=3)
    spec = replace(spec, population=replace(spec.population, rare_correct_prob=0.1))  # some prompts lack one
    got = predicted_dips(spec)
    assert list(got) == [0.005, 0.1]
    for rare in (0.005, 0.1):
        mus, rhos = zip(*[initial_mu_rho(make_shared_population(population_spec(spec, rare, p))) for p in range(3)])
        mu, rho = np.concatenate(mus), np.concatenate(rhos)
        assert (rho == 0).any()  # prompts without a correct rare strategy are left out
        want = predict_dip(empirical_difficulty(mu[rho > 0]), rho[rho > 0], (2, 4, 8, 16, 32, 64)).n_star
        assert got[rare] == want


def _policy_metrics(pop, split, p):
    """A split's metrics by hand from its per-prompt strategy probabilities p [prompts, strategies]: pass@1 = mean q,
    pass@256 = mean 1 - (1 - q)^256, the rare-only prompts' pass@256 and the rare strategies' mass."""
    q = (p * pop.correct[split]).sum(1)
    pass256 = 1 - (1 - q) ** 256
    return {"pass@1": q.mean(), "pass@256": pass256.mean(),
            "rare_only_pass@256": pass256[pop.prompt_type[split] == 1].mean(),
            "rare_strategy_mass": p[:, pop.kind == 1].sum(1).mean()}


def test_step_zero_metrics_are_the_initial_policys_and_the_schedule_is_kept():
    """At step 0 every row reports its population draw's initial policy, computed here from the population itself:
    pass@1 = mean q, pass@256 = mean 1 - (1 - q)^256, the rare-only prompts' pass@256, the rare strategies' mass, and
    dNLL_rare 0. Rows are evaluated at 0, every eval_every steps and their last; rollouts = step x B x N."""
    from fgrpo_sim.sim.group_size_study import final_rows, population_spec, run_study
    from fgrpo_sim.sim.population_shared import make_shared_population

    spec = _tiny_spec(views=("equal-rollouts",), group_sizes=(2, 4), steps=3, reference_n=4, eval_every=4,
                      prompt_batch=3)
    frame = run_study(spec)
    assert sorted(set(zip(frame["N"], frame["step"]))) == [(2, 0), (2, 4), (2, 6), (4, 0), (4, 3)]
    assert (frame["rollouts"] == frame["step"] * 3 * frame["N"]).all()
    start = frame[frame["step"] == 0]
    assert (start["train_dnll_rare"] == 0).all()
    for population in (0, 1):
        pop = make_shared_population(population_spec(spec, 0.02, population))
        rows = start[start["population"] == population]
        for split in ("train", "heldout"):
            want = _policy_metrics(pop, split, pop.initial_probs(split))
            for metric, value in want.items():
                np.testing.assert_allclose(rows[f"{split}_{metric}"], value, rtol=1e-9, err_msg=f"{split}_{metric}")
    final = final_rows(frame)
    assert len(final) == 8 and (final["step"] == final["steps"]).all()
    assert final.index.tolist() == list(range(8))
    assert (final["train_pass@1"] != start.set_index(final.index)["train_pass@1"]).all()  # they trained


def test_every_data_dependent_op_and_boolean_mask_write_is_a_sync():
    from fgrpo_sim.sim.step_audit import count_syncs

    x, i, v = torch.tensor([1.0, 0.0, 2.0, 2.0]), torch.tensor([1, 0, 2]), torch.zeros(())
    mask = x > 0
    cases = {
        "nonzero": lambda: torch.nonzero(x), "nonzero_static": lambda: torch.nonzero_static(x, size=2),
        "masked_select": lambda: torch.masked_select(x, mask), "_unique": lambda: torch._unique(x),
        "_unique2": lambda: torch.unique(x), "unique_consecutive": lambda: torch.unique_consecutive(x),
        "unique_dim": lambda: torch.unique(x, dim=0), "repeat_interleave": lambda: torch.repeat_interleave(i),
        "bincount": lambda: torch.bincount(i), "index": lambda: torch.ops.aten.index(x, [mask]),
        "index_put_": lambda: x.clone().index_put_((mask,), v), "index_put": lambda: torch.index_put(x, (mask,), v),
        "_index_put_impl_": lambda: torch.ops.aten._index_put_impl_(x.clone(), (mask,), v),
    }
    for name, call in cases.items():
        with count_syncs() as sites:
            call()
        assert [key.split(" at ")[0] for key in sites] == [f"aten::{name}"], name
    for name, call in {"integer index": lambda: x[i], "integer write": lambda: x.clone().index_put_((i,), v),
                       "a reduction": lambda: x.sum()}.items():
        with count_syncs() as sites:
            call()
        assert not sites, name


# --- group_size_resume.py: the table's schema as `--out` names it -----------------------------------------------------

@pytest.mark.parametrize("damage, message", [
    (lambda t: t.drop(columns=["rollouts"]), "--out {out} exists but is not a group-size study table (no column "
                                             "'rollouts'); HINT"),
    (lambda t: t.assign(N=t["N"].where(t.index != 3, 0)), "cannot resume from {out} row 4: N = 0 is not >= 1; fix or delete that row, or HINT"),
    (lambda t: t.assign(rare_mass=t["rare_mass"].where(t.index != 2, 1.5)), "cannot resume from {out} row 3: "
                                                                            "rare_mass = 1.5 is not in [0, 1]; fix or delete "
                                                                            "that row, or HINT"),
])
def test_a_damaged_table_is_refused_naming_the_column_or_row(tmp_path, damage, message):
    spec = _tiny_spec()
    refusal, out = _refused(tmp_path, damage(_written_table(spec)), spec, hint="HINT")
    assert refusal == message.format(out=out)


def test_a_cpu_chunk_steps_on_one_thread_and_gives_the_threads_back(monkeypatch):
    """Small tensors: the CPU step runs single-threaded; the caller's thread count comes back, after an error too."""
    from fgrpo_sim.sim import group_size_study as study

    seen = []
    real = study.logit_gradient
    monkeypatch.setattr(study, "logit_gradient", lambda *a: seen.append(torch.get_num_threads()) or real(*a))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        study._train_chunk(_tiny_spec(steps=1), "sgd", "axis", torch.device("cpu"), False)
        assert seen == [1] and torch.get_num_threads() == 2
        with pytest.raises(ValueError, match="lr must be small enough"):
            study._train_chunk(_tiny_spec(sgd_lrs=(float("inf"),), steps=1), "sgd", "axis", torch.device("cpu"), False)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_metrics_after_one_sgd_step_are_the_updated_policys(monkeypatch):
    """One SGD step on the axis map: theta_1 = s_0 - lr g (g as the engine computed it, captured); every metric at
    step 1 recomputed here from theta_1 and the population: pass@1, pass@256, the rare-only prompts' pass@256, the rare
    strategies' mass per split, and dNLL_rare = sum w (log p_0 - log p_1) / sum w over the training prompts, w the
    base policy's probability of each rare correct strategy (App. M.2)."""
    from fgrpo_sim.sim import group_size_study as study
    from fgrpo_sim.sim.population_shared import make_shared_population

    grads = []
    real = study.sgd_step
    monkeypatch.setattr(study, "sgd_step", lambda theta, grad, lr, active: grads.append((grad.clone(), lr.clone()))
                        or real(theta, grad, lr, active))
    spec = _tiny_spec(steps=1, prompt_batch=4, sgd_lrs=(6.0,))
    frame = study._train_chunk(spec, "sgd", "axis", torch.device("cpu"), False)
    rows = study.study_rows(spec, "sgd", "axis")
    after = frame[frame["step"] == 1].reset_index(drop=True)
    assert after[["population", "N", "variant"]].equals(rows[["population", "N", "variant"]])
    (grad, lr), = grads
    pops = [make_shared_population(study.population_spec(spec, 0.02, p)) for p in range(2)]

    def log_softmax(z):
        z = z - z.max(-1, keepdims=True)
        return z - np.log(np.exp(z).sum(-1, keepdims=True))

    for i, row in rows.iterrows():
        pop = pops[row["population"]]
        theta1 = pop.shared_init - float(lr[i]) * grad[i].numpy()
        for split in ("train", "heldout"):
            logp = log_softmax(theta1[None] + pop.offsets[split])
            want = _policy_metrics(pop, split, np.exp(logp))
            if split == "train":
                base = log_softmax(pop.shared_init[None] + pop.offsets["train"])
                w = np.exp(base) * (pop.correct["train"] & (pop.kind == 1)[None])
                want["dnll_rare"] = ((base - logp) * w).sum() / w.sum()
            for metric, value in want.items():
                assert after.loc[i, f"{split}_{metric}"] == pytest.approx(value, rel=1e-9, abs=1e-12), (i, split, metric)
    assert after["train_dnll_rare"].abs().max() > 1e-4  # the step moved the rare strategies


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the parameter's device differs from the CPU's only on CUDA")
@pytest.mark.parametrize("kind", ["axis", "dense"])
def test_linear_logits_live_on_the_initial_logits_device(kind):
    from fgrpo_sim.sim.parametrisation import LinearLogits

    model = LinearLogits(torch.zeros(2, 3, device="cuda"), kind)
    assert model.theta.device.type == "cuda" and model.logits().device.type == "cuda"


def test_ds_pairs_given_as_lists_are_read_as_pairs():
    """A spec built from JSON holds lists: each DS-GRPO pair is read as a (gamma_p, gamma_n) pair all the same."""
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec

    assert GroupSizeStudySpec(ds_coefs=([0.1, 0.2], [0.0, 0.3])).validate().ds_coefs == ([0.1, 0.2], [0.0, 0.3])
    with pytest.raises(ValueError) as err:
        GroupSizeStudySpec(ds_coefs=([0.1, 0.2], [0.1, 0.2])).validate()
    assert str(err.value) == "ds_coefs must list each value once, got ((0.1, 0.2), (0.1, 0.2))"
