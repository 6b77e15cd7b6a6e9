"""Tests written for the mutants of fgrpo_sim/sim/ that no test caught (issue 44, benchmarks/mutation.py, sampled:
benchmarks/RESULTS.md "Mutation testing", sim/). Each asserts behaviour a user relies on: a value computed by hand,
a message naming its parameter, the setting a claims script reproduces. Tiny hand-made data throughout."""

from __future__ import annotations

import sys
import types

import pandas as pd
import pytest
from stand_in_sweeps import Captured, stand_in_sweeps


# --- categorical/study.py: the claims table docs/categorical.md prints ----------------------------------------------

def _final(setting: str, m0: tuple, m1: tuple, q: tuple) -> list[dict]:
    rows = []
    for n, a, b, qq in zip((2, 64, 1024, 131072), m0, m1, q):
        rows += [dict(setting=setting, group_size=n, gamma=0.0, m_ret=a, q_pos=qq, q_pos_start=0.63),
                 dict(setting=setting, group_size=n, gamma=1.0, m_ret=b, q_pos=qq, q_pos_start=0.63)]
    return rows


def test_claims_markdown_rows_by_hand():
    from fgrpo_sim.sim.categorical.study import claims_from_final, format_claims_markdown

    # "good": all three claims (dip 0.9 - 0.1 = 0.8; zone = N 64 and 1024, gain (0.3 + 0.1) / 2 = 0.2)
    # "flat": Q_pos never rises, gamma 1 keeps less, no dip: no claim
    final = pd.DataFrame(_final("flat", (0.95, 0.94, 0.93, 0.92), (0.9, 0.9, 0.9, 0.9), (0.63, 0.63, 0.63, 0.63))
                         + _final("good", (0.9, 0.1, 0.2, 0.97), (0.95, 0.4, 0.3, 1.0), (0.7, 0.9, 0.9, 0.8)))
    claims = claims_from_final(final)
    assert list(claims["setting"]) == ["good", "flat"]  # best first
    assert list(claims["zone_size"]) == [2, 0]
    lines = format_claims_markdown(claims).splitlines()
    assert lines[0].startswith("| setting | (1) Q_pos rises |") and lines[1].startswith("| --- |")
    assert len(lines) == 4 and lines[2].startswith("| good | yes | yes | yes | +0.0700 | 0.80 | 0.97 | +0.1700 | 2 | 0.20 |")
    assert lines[3] == "| flat | no | no | no | +0.0000 | -0.01 | 0.92 | +0.0000 | 0 | n/a |"


# --- group_size_resume.py: why a kept chunk is refused ----------------------------------------------------------------

def _chunk_rows(steps_by_row: dict) -> pd.DataFrame:
    from fgrpo_sim.sim.group_size_resume import SETTINGS

    rows = []
    for seed, recorded in steps_by_row.items():
        for step in recorded:
            rows.append({**{name: 0 for name in SETTINGS}, "seed": seed, "steps": 10, "step": step})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("recorded, word", [((5, 10), "first"), ((0, 5), "last")])
def test_a_kept_chunk_missing_an_end_evaluation_names_which(recorded, word):
    from fgrpo_sim.sim.group_size_resume import _whole_grid_problem

    assert _whole_grid_problem(_chunk_rows({0: recorded})) == f"lacks the {word} evaluation of a row trained 10 steps"
    assert _whole_grid_problem(_chunk_rows({0: (0, 5, 10)})) is None


# --- executor.py: Ray placement and messages (a stand-in `ray` module: the answers depend only on its resources) ----

@pytest.fixture
def fake_ray(monkeypatch):
    ray = types.ModuleType("ray")
    ray.resources = {"CPU": 2.0, "memory": 1.5e9, "object_store_memory": 5e8, "node:10.0.0.1": 1.0}
    ray.cluster_resources = lambda: dict(ray.resources)
    monkeypatch.setitem(sys.modules, "ray", ray)
    return ray


def test_auto_device_on_a_cluster_without_gpus_runs_on_the_cpu(fake_ray):
    from fgrpo_sim.sim.executor import placement

    assert placement("auto") == ("cpu", 0.0)
    assert placement("cpu") == ("cpu", 0.0)
    fake_ray.resources["GPU"] = 2.0
    assert placement("auto") == ("cuda", 1.0)


def test_cuda_on_a_cluster_without_gpus_lists_its_resources(fake_ray):
    from fgrpo_sim.sim.executor import placement

    with pytest.raises(ValueError) as info:
        placement("cuda")
    assert "(resources: CPU 2, memory 1.5e+09)" in str(info.value)


@pytest.mark.parametrize("executor, env, name", [(dict(address="nohost"), None, "--ray-address"),
                                                 ({}, "nohost", "RAY_ADDRESS")])
def test_a_malformed_cluster_address_names_where_it_came_from(monkeypatch, executor, env, name):
    pytest.importorskip("ray")  # connect() requires the cluster extra first
    from fgrpo_sim.sim.executor import Executor, connect

    if env is None:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
    else:
        monkeypatch.setenv("RAY_ADDRESS", env)
    with pytest.raises(ValueError, match=f"^{name} must be HOST:PORT, ray://HOST:PORT or auto, got 'nohost'$"):
        connect(Executor(kind="ray", **executor))


# --- population_claims.py: the claims scripts reproduce the settings docs/population.md states -----------------------

@pytest.fixture
def sweeps(monkeypatch):
    """Stand-ins for both population builders and sweeps: record what a claims script asks for, train nothing."""
    return stand_in_sweeps(monkeypatch)


def _trained(specs) -> set:
    return {(s.group_size, s.gamma, s.variant) for s in specs}


def test_claims_scripts_train_the_documented_settings(sweeps):
    from fgrpo_sim.sim import population_claims as claims

    with pytest.raises(Captured):
        claims.per_prompt_claims(runs=3)
    pop, specs = sweeps.last.pop, sweeps.last.specs
    assert (pop.num_prompts, pop.beta_a, pop.beta_b, pop.rho, pop.seed) == (256, 1.0, 1.0, 0.1, 0)
    assert {(s.steps, s.runs, s.prompt_batch, s.eval_every, s.seed) for s in specs} == {(300, 3, 32, 20, 0)}
    assert _trained(specs) == {(8, 0.0, ""), (8, 1.0, ""), (8, 0.0, "GRPO low-LR (x m_1)")}
    assert sweeps.last.device == "cpu"

    with pytest.raises(Captured):
        claims.shared_claims(runs=2)
    pop, specs = sweeps.last.pop, sweeps.last.specs
    assert (pop.num_prompts, pop.heldout_prompts, pop.seed) == (256, 256, 0)
    assert {(s.steps, s.runs, s.prompt_batch, s.eval_every, s.seed) for s in specs} == {(300, 2, 32, 10, 0)}
    assert {s.lr for s in specs if not s.variant} == {0.01}
    assert {(n, g) for n, g, v in _trained(specs) if not v} == {(8, 0.0), (8, 0.5), (8, 1.0)}

    with pytest.raises(Captured):
        claims.group_size_claims(runs=2)
    specs = sweeps.last.specs
    assert {(s.steps, s.runs, s.prompt_batch, s.eval_every, s.lr, s.seed) for s in specs} == {(300, 2, 32, 10, 0.01, 0)}
    assert _trained(specs) == {(n, g, "") for n in (2, 4, 8, 16, 32) for g in (0.0, 1.0)}  # no low-LR control

    with pytest.raises(Captured):
        claims.frontier_claims(runs=2)
    pop, specs = sweeps.last.pop, sweeps.last.specs
    assert (pop.num_prompts, pop.beta_a, pop.beta_b, pop.seed) == (256, 0.5, 1.0, 0)
    assert {(s.steps, s.runs, s.prompt_batch, s.eval_every, s.seed) for s in specs} == {(150, 2, 32, 150, 0)}


SHARED = ("GRPO", "F-GRPO gamma=0.5", "F-GRPO gamma=1", "GRPO low-LR (x m_0.5)", "GRPO low-LR (x m_1)")
PER_PROMPT = ("GRPO", "F-GRPO gamma=1", "GRPO low-LR (x m_1)")


def _sweep_frame(variants, ns=(8,), runs=2, splits=("heldout", "train")) -> pd.DataFrame:
    """Two evaluations (steps 0 and 10) per run, every run alike (so every bootstrap interval is a point):
    variant i at split offset d (0 held-out, 0.1 train) goes from pass@1 0.2 + d to 0.4 + d + 0.1 i, with
    pass@256 = pass@1 + 0.3 + 0.01 i and rare mass kept = 1 - pass@1 - 0.05 i; the rare-only bucket holds
    pass@1 0.05 and pass@256 0.25 (+ 0.01 i at step 10), far from the `all` rows."""
    rows = []
    for n in ns:
        for d, split in zip((0.0, 0.1), splits):
            for i, variant in enumerate(variants):
                for run in range(runs):
                    for step in (0, 10):
                        p1 = 0.2 + d + (0.2 + 0.1 * i) * step / 10
                        common = dict(N=n, split=split, variant=variant, run=run, step=step)
                        rows.append(dict(common, bucket="all", **{"pass@1": p1, "pass@256": p1 + 0.3 + 0.01 * i,
                                                                   "rare_mass_retained": 1 - p1 - 0.05 * i}))
                        rows.append(dict(common, bucket="rare-only", **{"pass@1": 0.05, "rare_mass_retained": 0.5,
                                                                         "pass@256": 0.25 + 0.01 * i * step / 10}))
    return pd.DataFrame(rows)


def test_claims_report_by_hand():
    from fgrpo_sim.sim.population_claims import report

    per_prompt = _sweep_frame(PER_PROMPT, splits=("heldout",)).drop(columns="split")
    lines = report(per_prompt, _sweep_frame(SHARED)).splitlines()
    assert lines[:11] == [
        "Per-prompt population, N = 8, 2 runs (mean [95% bootstrap interval over runs]):",
        "  GRPO final rare mass kept: 0.6000 [0.6000, 0.6000]",
        "  F-GRPO gamma=1 final rare mass kept: 0.4500 [0.4500, 0.4500]",
        "  GRPO low-LR (x m_1) final rare mass kept: 0.3000 [0.3000, 0.3000]",
        "  F-GRPO - GRPO final pass@1: 0.1000 [0.1000, 0.1000]",
        "  F-GRPO - GRPO final pass@256: 0.1100 [0.1100, 0.1100]",
        " at equal pass@1 = 0.4000 (rare mass kept):",  # the slowest variant's final pass@1
        "  GRPO: 0.6000 [0.6000, 0.6000]",
        "  F-GRPO gamma=1: 0.5500 [0.5500, 0.5500]",
        "  GRPO low-LR (x m_1): 0.5000 [0.5000, 0.5000]",
        "  F-GRPO - GRPO: -0.0500 [-0.0500, -0.0500]",
    ]
    assert lines[11] == "  F-GRPO - low-LR: 0.0500 [0.0500, 0.0500]"
    assert lines[12:14] == ["Shared-strategy population, N = 8, 2 runs, held-out prompts:",
                            "  initial pass@1 0.2000, pass@256 0.5200"]
    assert "  F-GRPO gamma=1 final pass@256: 0.9200 [0.9200, 0.9200]" in lines  # 0.6 + 0.3 + 0.02
    assert "  F-GRPO gamma=1 - GRPO final pass@256: 0.2200 [0.2200, 0.2200]" in lines
    assert lines.index(" at equal held-out pass@1 = 0.4000 (held-out pass@256):") > lines.index(
        "  rare-only prompts: initial pass@256 0.2500; final F-GRPO gamma=0.5 0.2600 [0.2600, 0.2600]; "
        "F-GRPO gamma=1 0.2700 [0.2700, 0.2700]; GRPO 0.2500 [0.2500, 0.2500]; "
        "GRPO low-LR (x m_0.5) 0.2800 [0.2800, 0.2800]; GRPO low-LR (x m_1) 0.2900 [0.2900, 0.2900]")
    assert lines[-4:] == ["  GRPO low-LR (x m_0.5) - GRPO: 0.0300 [0.0300, 0.0300]",  # 0.7 + 0.01 i at pass@1 0.4
                          "  GRPO low-LR (x m_1) - GRPO: 0.0400 [0.0400, 0.0400]",
                          "  F-GRPO gamma=0.5 - GRPO low-LR (x m_0.5): -0.0200 [-0.0200, -0.0200]",
                          "  F-GRPO gamma=1 - GRPO low-LR (x m_1): -0.0200 [-0.0200, -0.0200]"]


def test_settings_table_rows_by_hand(sweeps):
    from fgrpo_sim.sim.population_claims import SHARED_SETTINGS, settings_table

    sweeps.frame = _sweep_frame(SHARED)
    lines = settings_table(runs=2).splitlines()
    assert len(lines) == 2 * len(SHARED_SETTINGS)
    # held-out: start 0.2 / 0.5 + 0.02 (mean over the variants); finals 0.4 + 0.1 i / 0.7 + 0.11 i; level 0.4;
    # pass@256 there 0.7 + 0.01 i. Train: every pass@1 and pass@256 0.1 higher.
    assert lines[0] == ("| (none: A) | heldout | 0.200 / 0.520 | 0.400 / 0.700 | 0.500 / 0.810 | 0.600 / 0.920 | "
                        "0.700 / 1.030 | 0.800 / 1.140 | 0.400 | 0.7000 [0.7000, 0.7000] | 0.7100 [0.7100, 0.7100] | "
                        "0.7200 [0.7200, 0.7200] | 0.7300 [0.7300, 0.7300] | 0.7400 [0.7400, 0.7400] |")
    assert lines[1].startswith("| (none: A) | train | 0.300 / 0.620 | 0.500 / 0.800 | ")
    assert lines[1].endswith("| 0.500 | 0.8000 [0.8000, 0.8000] | 0.8100 [0.8100, 0.8100] | 0.8200 [0.8200, 0.8200] | "
                             "0.8300 [0.8300, 0.8300] | 0.8400 [0.8400, 0.8400] |")
    assert lines[6].startswith("| `--offset-scale 2` | heldout |")
    assert {(s.gamma, s.variant) for s in sweeps.last.specs} == {
        (0.0, ""), (0.5, ""), (1.0, ""), (0.0, "GRPO low-LR (x m_0.5)"), (0.0, "GRPO low-LR (x m_1)")}
    pops = [call.pop for call in sweeps.calls]
    assert [(p.num_prompts, p.heldout_prompts, p.seed) for p in pops] == [(256, 256, 0)] * 9
    assert pops[3].offset_scale == 2.0 and pops[6].trainable_offsets and not pops[0].trainable_offsets


def test_frontier_claims_rare_mass_difference_by_hand(sweeps):
    from fgrpo_sim.sim.population_claims import frontier_claims

    sweeps.frame = _sweep_frame(SHARED, ns=(2, 4), splits=("x",))
    lines = frontier_claims(runs=2).splitlines()
    # rare mass kept at the end: 1 - (0.4 + 0.1 i) - 0.05 i = 0.6 - 0.15 i; gamma 1 is i = 2, its control i = 4
    assert "  N=2 F-GRPO gamma=1 - low-LR (x m_1), rare kept: 0.3000 [0.3000, 0.3000]" in lines
    assert "  N=4 F-GRPO gamma=1: pass@1 0.6000 [0.6000, 0.6000], pass@256 0.9200 [0.9200, 0.9200], " \
           "rare kept 0.3000 [0.3000, 0.3000]" in lines


def test_equal_pass1_by_run_mean_and_standard_error_by_hand():
    from fgrpo_sim.sim.population_shared import equal_pass1_by_run

    frame = _sweep_frame(SHARED, runs=2)
    frame.loc[frame["bucket"] == "all", "pass@256"] += 0.02 * frame["run"]  # run r: pass@256 0.02 r higher
    level, table = equal_pass1_by_run(frame)
    assert level == pytest.approx(0.4)
    row = table.set_index("variant").loc["F-GRPO gamma=1"]
    # runs 0.72 and 0.74: mean 0.73, sd 0.02 / sqrt(2), se = sd / sqrt(2) = 0.01
    assert row["mean"] == pytest.approx(0.73) and row["se"] == pytest.approx(0.01) and row["runs"] == 2


# --- categorical/claims.py: `python -m fgrpo_sim.sim.categorical.claims` --------------------------------------------

def _claims_table(m_ret_n2: float) -> pd.DataFrame:
    """Two seeds alike, N 2, 8, 32, gammas 0 and 1, steps 0 and 10: gamma 0 ends at M_ret (m_ret_n2, 0.3, 0.9)."""
    rows = []
    for seed in (0, 1):
        for gamma in (0.0, 1.0):
            for n, m in zip((2, 8, 32), (m_ret_n2, 0.3, 0.9)):
                for step in (0, 10):
                    rows.append(dict(seed=seed, gamma=gamma, group_size=n, step=step, q_pos=0.5 + 0.01 * step,
                                     m_ret=1.0 if step == 0 else m + 0.05 * gamma))
    return pd.DataFrame(rows)


def test_claims_verdict_when_an_end_interval_includes_zero():
    from fgrpo_sim.sim.categorical.claims import claims, report

    shown = report(claims(_claims_table(0.5)))
    assert "claim 2, M_ret (gamma 0) non-monotonic in N: yes; lowest mean at N = 8; " in shown
    # N = 2 ends where N = 8 does: the difference is 0, so the claim is not shown
    flat = report(claims(_claims_table(0.3)))
    assert "claim 2, M_ret (gamma 0) non-monotonic in N: not shown (an interval includes 0); " in flat


def test_claims_command_prints_json_and_documents_it(monkeypatch, capsys, tmp_path):
    import json

    import fgrpo_sim.sim.categorical.run as run
    from fgrpo_sim.sim.categorical.claims import main

    monkeypatch.setattr(run, "run_grid", lambda config, out, resume, progress: _claims_table(0.5))
    assert main(["--json", "--no-progress", "--seeds", "2", "--out", str(tmp_path / "t.parquet")]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["seeds"] == 2 and record["lowest_n"] == 8 and record["start_q_pos"] == pytest.approx(0.5)
    assert record["ends_minus_lowest"]["32"] == pytest.approx([0.6, 0.6, 0.6])
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0 and "print the claims as one JSON object" in capsys.readouterr().out


# --- group_size_record.py / group_size_report.py ---------------------------------------------------------------------

@pytest.mark.parametrize("sizes", [[8, 2], [2, 2, 8]])
def test_a_saved_report_with_unsorted_or_repeated_group_sizes_is_refused(sizes):
    from fgrpo_sim.sim.group_size_record import check_report

    with pytest.raises(ValueError, match=r"^here: field 'N' must list group sizes in increasing order, got \["):
        check_report({"N": sizes}, "here", ())
    assert check_report({"N": [2, 8.0]}, "here", ())["N"] == [2, 8]


def test_one_unit_has_an_estimate_and_no_interval():
    import math

    from fgrpo_sim.sim.group_size_report import mean_interval

    estimate, low, high = mean_interval([0.25])
    assert estimate == 0.25 and math.isnan(low) and math.isnan(high)


def test_coverage_estimate_default_is_seed_0():
    from fgrpo_sim.sim.group_size_report import coverage_estimate

    assert coverage_estimate(3, reps=200) == coverage_estimate(3, reps=200, seed=0)
    assert coverage_estimate(3, reps=200) != coverage_estimate(3, reps=200, seed=1)


# --- group_size_study.py ----------------------------------------------------------------------------------------------

def test_equal_steps_trains_every_n_the_same_steps_and_equal_rollouts_scales_them():
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec, study_rows

    spec = GroupSizeStudySpec(group_sizes=(2, 8, 32), views=("equal-steps", "equal-rollouts"), steps=40,
                              reference_n=8, populations=2, seeds=1, gammas=(1.0,), rare_masses=(0.02,),
                              optimizers=("adam",), parametrisations=("orthogonal",), adam_lrs=(0.01,)).validate()
    rows = study_rows(spec).drop_duplicates(["view", "N"]).set_index(["view", "N"])["steps"]
    assert rows["equal-steps"].to_dict() == {2: 40, 8: 40, 32: 40}
    assert rows["equal-rollouts"].to_dict() == {2: 160, 8: 40, 32: 10}


def test_study_seed_has_its_upper_bound():
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec

    GroupSizeStudySpec(seed=2**62).validate()
    with pytest.raises(ValueError, match=r"^seed must be in \[0, 2\^62\], got 4611686018427387905$"):
        GroupSizeStudySpec(seed=2**62 + 1).validate()


def test_a_ray_study_hands_its_executor_on_and_keeps_the_chunks_order(monkeypatch):
    """A stand-in Ray session and task runner (no Ray): chunks finishing in reverse order come back in order."""
    from contextlib import contextmanager

    import fgrpo_sim.sim.executor as executor_module
    from fgrpo_sim.sim.executor import Executor
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec, chunks, run_study

    seen = {}

    @contextmanager
    def session(executor, device):
        seen["session"] = (executor, device)
        yield "cpu", 0.0

    def run_on_ray(fn, chunk_args, on_result, *, executor, gpus=0.0, progress=False, desc="chunks"):
        seen["run"] = (executor, gpus, [args[1:3] for args in chunk_args])
        for index in reversed(range(len(chunk_args))):
            on_result(index, pd.DataFrame({"chunk": [index]}))

    monkeypatch.setattr(executor_module, "ray_session", session)
    monkeypatch.setattr(executor_module, "run_on_ray", run_on_ray)
    spec = GroupSizeStudySpec(optimizers=("adam", "sgd"), parametrisations=("orthogonal",))
    ray = Executor(kind="ray", cpus=2)
    table = run_study(spec, device="auto", executor=ray)
    assert seen["session"] == (ray, "auto") and seen["run"][:2] == (ray, 0.0)
    assert seen["run"][2] == list(chunks(spec)) and len(chunks(spec)) == 2
    assert list(table["chunk"]) == [0, 1]


# --- population.py / population_shared.py -----------------------------------------------------------------------------

def test_rewards_are_made_in_the_training_dtype():
    import torch

    from fgrpo_sim.sim.population import group_rewards

    actions = torch.tensor([[[0, 1, 1]]])
    rewards = group_rewards(actions, torch.tensor([True, False]), 0.1, -0.3, dtype=torch.float64)
    assert rewards.dtype == torch.float64 and rewards.tolist() == [[0.1, -0.3, -0.3]]  # not float32's 0.1


def test_one_recorded_step_by_hand():
    """One run, one prompt, actions (correct, rare correct, wrong) with p = (0.5, 0.2, 0.3), two draws: actions 0
    and 2; after the step p = (0.5, 0.3, 0.2)."""
    import math

    import torch

    from fgrpo_sim.sim.population import StepBatch, TrainSpec, _Accumulator, _record_step

    # two prompts alike in one batch (each group's sums are its own, not the batch's)
    probs = torch.tensor([[[0.5, 0.2, 0.3]] * 2], dtype=torch.float64)
    logits = torch.tensor([[[0.5, 0.3, 0.2]] * 2], dtype=torch.float64).log()
    batch = StepBatch(prompts=torch.tensor([[0, 1]]), actions=torch.tensor([[[0, 2], [0, 2]]]))
    is_correct, is_rare = torch.tensor([True, True, False]), torch.tensor([False, True, False])
    rewards = torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    acc = _Accumulator(1, 1, "cpu")
    _record_step(acc, batch, probs, logits, rewards, TrainSpec(), is_correct, is_rare, torch.tensor([[0, 0]]))
    mean = {k: float(acc.sums[k][0, 0] / acc.counts[k][0, 0]) for k in acc.sums}
    expected = {
        "active_fraction": 1.0,
        "tail_miss_observed": 1.0,  # active, and the rare action never drawn
        "tail_miss_predicted": 0.8**2 - 0.5**2 - 0.3**2,  # Lemma 3.1 at N = 2, q_pos 0.7, q_rare 0.2
        "focal_weight_mean": 1.0, "focal_weight_active_mean": 1.0,  # gamma 0
        "unsampled_correct_mass": 0.2,  # the rare correct action, not drawn
        "unsampled_correct_change": 0.1,
        "correct_mass_change": 0.1,  # 0.8 - 0.7
        "shrink_while_grow_fraction": 0.0,
    }
    assert set(mean) == set(expected)
    for name, value in expected.items():
        assert math.isclose(mean[name], value, rel_tol=1e-12, abs_tol=1e-15), name


def test_shared_population_correct_probability_range():
    from fgrpo_sim.sim.population_shared import SharedPopulationSpec

    with pytest.raises(ValueError, match=r"^common_correct_prob must be in \[0, 1\], got -0\.1"):
        SharedPopulationSpec(common_correct_prob=-0.1).validate()


def test_counts_of_more_than_2_31_minus_1_draws_are_refused():
    import torch

    from fgrpo_sim.sim.categorical.sampling import DrawPlan

    keys = torch.tensor([1, 2])
    assert DrawPlan([3, 0], keys, 4, "cpu").runs == 2
    # far above the bound (no plan of that size fits in memory: the check must come first, and does)
    with pytest.raises(ValueError, match=r"^n_draws must be in \[0, 2147483647\]$"):
        DrawPlan([3**31 - 2, 0], keys, 4, "cpu")


# --- input ranges and messages ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    ("montecarlo.estimate_smoothed_focal_weight(8, 0.5, 1.0, 0.5, trials=1)",
     r"^trials must be in \[2, 1000000000\], got 1$"),
    ("montecarlo.sample_counts(torch.tensor([0.5, 0.5], dtype=torch.float64), 0, 2, 0)",
     r"^n must be in \[1, 2\^31 - 1\], got 0$"),
    ("parametrisation.logit_map('dense', 4, -1)", r"^seed must be in \[0, 2\^63 - 1\], got -1$"),
    ("population.TrainSpec(pass_k=(0,)).validate(64)", r"^pass_k must be"),
    ("population.TrainSpec(reward_wrong=-2e12).validate(64)", r"^reward_wrong must be in \[-1e\+12, 1\), got -2e\+12$"),
    ("CategoricalConfig(reward_wrong=-1e300)", r"^reward_wrong must be in \[-"),
    ("CategoricalConfig(gammas=(101.0,))", r"^gammas must be in \[0, 100\]"),
    ("CategoricalConfig(num_actions=1, num_correct=1)", r"^num_actions must be in \[2, "),
    ("population.TrainSpec(runs=0).validate(64)", r"^runs must be in \[1, 100000\], got 0$"),
    ("population.TrainSpec(eval_every=0).validate(64)", r"^eval_every must be"),
    ("population.TrainSpec(group_size=1_000_001).validate(64)", r"^group_size must be in \[1, 1000000\]"),
    ("population.TrainSpec(lr=0.0).validate(64)", r"^lr must be in \(0, "),
    ("population.PopulationSpec(rho=0.1, rho_max=1.0).validate()", r"^rho_max must be in \(0.1, 1\)"),
    ("population.PopulationSpec(bucket_edges=(0.1, 0.5, 1.0)).validate()", r"^bucket_edges must increase from 0 to 1"),
    ("population_shared.SharedPopulationSpec(common_strategies=0).validate()", r"^common_strategies must be in \[1, "),
    ("population_shared.SharedPopulationSpec(rare_strategies=10_001).validate()", r"^rare_strategies must be in \[1, "),
])
def test_bad_input_names_its_parameter_and_range(call, message):
    import torch  # noqa: F401  (used by the calls)

    from fgrpo_sim.sim import montecarlo, parametrisation, population, population_shared  # noqa: F401
    from fgrpo_sim.sim.categorical.config import CategoricalConfig  # noqa: F401

    with pytest.raises(ValueError, match=message):
        eval(call)


def test_native_sampler_refuses_half_precision_weights():
    import torch

    from fgrpo_sim.sim.categorical.sampling import native_available, sample_counts_native

    if not native_available():
        pytest.skip("no C compiler: the native sampler is not built")
    weights = torch.tensor([[0.5, 0.5]], dtype=torch.float16)
    with pytest.raises(ValueError):
        sample_counts_native(weights, torch.tensor([4]), torch.tensor([1]), 0)


def test_auto_sampler_on_the_cpu_is_native_when_it_compiles():
    import torch

    from fgrpo_sim.sim.categorical.sampling import native_available, resolve_sampler

    expected = "native" if native_available() else "torch"
    assert resolve_sampler("auto", torch.device("cpu")) == expected
    assert resolve_sampler("torch", torch.device("cpu")) == "torch"


def test_equal_n_counts_take_int32_keys_as_int64():
    import torch

    from fgrpo_sim.sim.categorical.sampling import run_keys, sample_counts_equal_n

    weights = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], dtype=torch.float64)
    keys = torch.tensor([12345, 678], dtype=torch.int32)
    wide = sample_counts_equal_n(weights, 64, keys.to(torch.int64), 3)
    assert torch.equal(sample_counts_equal_n(weights, 64, keys, 3), wide) and wide.sum().item() == 128
    assert run_keys([0, 1]).dtype == torch.int64


def test_torch_backend_reports_nan_before_its_first_step():
    import torch

    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    batch = CategoricalBatch(CategoricalConfig(num_actions=20, num_correct=4, device="cpu", sampler="torch"),
                             [4, 8], [0.0, 1.0], [0, 1])
    assert torch.isnan(batch.last_mu_hat).all() and torch.isnan(batch.last_focal).all()
    batch.step()
    assert not torch.isnan(batch.last_mu_hat).any()


def test_boolean_mask_indexing_counts_as_a_sync_site():
    import torch

    from fgrpo_sim.sim.step_audit import count_syncs

    x = torch.arange(6.0)
    with count_syncs() as sites:
        y = x[x > 2]
    assert y.tolist() == [3.0, 4.0, 5.0]
    assert any(site.startswith("aten::index at ") for site in sites)  # the caller's file:line follows


def test_lemma_h1_checks_are_reproducible():
    from fgrpo_sim.sim.checks import lemma_h1_checks

    def numbers(checks):
        return [(c["name"], c["closed_form"], c["estimate"]) for c in checks]

    assert {c["trials"] for c in lemma_h1_checks(True, 0, "cpu")} == {20_000}  # each check records its trials
    first = numbers(lemma_h1_checks(True, 0, "cpu"))
    assert first == numbers(lemma_h1_checks(True, 0, "cpu")) and len(first) == 4


def test_exact_path_check_names():
    from fgrpo_sim.sim.checks_exact import path_checks

    names = [c["name"] for c in path_checks(True, 0, "cpu")]
    assert "path logprob + adamw wd=0 (Fig 2): simulator = autograd, 3 steps (gap / step size)" in names
    assert "path distinct + sgd wd=0: simulator = autograd, 3 steps (gap / step size)" in names


# --- a tiny group-size study (three N, two populations, 8 steps): the report, the smoothing record, the metrics ------

@pytest.fixture(scope="module")
def tiny_studies():
    """{alpha: run_study frame} at alpha 0 and 0.5; offsets 0, so every prompt starts at the shared prior."""
    from dataclasses import replace

    from fgrpo_sim.sim.group_size_study import DEFAULT_POPULATION, GroupSizeStudySpec, run_study

    spec = GroupSizeStudySpec(group_sizes=(2, 4, 8), rare_masses=(0.02,), populations=2, seeds=1, steps=8,
                              eval_every=4, prompt_batch=4, optimizers=("adam",), parametrisations=("orthogonal",),
                              adam_lrs=(0.01,), population=replace(DEFAULT_POPULATION, num_prompts=16,
                                                                   heldout_prompts=16, offset_scale=0.0))
    return {alpha: run_study(replace(spec, focal_smoothing=alpha)) for alpha in (0.0, 0.5)}


def test_rare_strategy_mass_starts_at_the_prior_rare_mass(tiny_studies):
    start = tiny_studies[0.0].query("step == 0")
    for split in ("train", "heldout"):
        assert start[f"{split}_rare_strategy_mass"].to_numpy() == pytest.approx(0.02, rel=1e-9)


def test_report_curves_carry_their_own_arm_settings(tiny_studies):
    from fgrpo_sim.sim.group_size_report import setting_reports
    from fgrpo_sim.theory import lr_multiplier

    report = setting_reports(tiny_studies[0.0])[0]
    curves = {c["variant"]: (c["gamma"], c["lr"]) for c in report["curves"]}
    assert curves["GRPO"] == (0.0, 0.01) and curves["F-GRPO gamma=1"] == (1.0, 0.01)
    assert curves["F-GRPO gamma=0.5"] == (0.5, 0.01)
    assert curves["GRPO low-LR (x m_1)"][0] == 0.0
    assert curves["GRPO low-LR (x m_1)"][1] == pytest.approx(0.01 * float(lr_multiplier(1.0)), rel=1e-12)
    for entry in report["fgrpo_at_lowest"]:  # two units: every paired t interval is finite
        for key in ("minus_grpo", "minus_control", "equal_pass1_minus_grpo", "equal_pass1_minus_control"):
            estimate, low, high = entry[key]
            assert low <= estimate <= high and high - low < 10, (entry["variant"], key)


def test_smoothing_record_by_hand(tiny_studies, monkeypatch, tmp_path):
    import json

    from fgrpo_sim.sim import smoothing_study
    from fgrpo_sim.sim.group_size_report import METRIC, unit_matrix
    from fgrpo_sim.sim.group_size_study import final_rows

    monkeypatch.setattr(smoothing_study, "run_study", lambda spec, progress, device: tiny_studies[spec.focal_smoothing])
    record = tmp_path / "smoothing.jsonl"
    result = smoothing_study.run(record)
    assert json.loads(record.read_text()) == json.loads(json.dumps(result))  # the record is the result
    assert result["setting"]["optimizer"] == "adam" and result["setting"]["parametrisation"] == "orthogonal"
    assert result["setting"]["rare_mass"] == 0.02 and result["setting"]["populations"] == 2
    assert result["alphas"] == [0.0, 0.5] and [r["focal_smoothing"] for r in result["runs"]] == [0.0, 0.5]
    for run in result["runs"]:
        assert [a["gamma"] for a in run["fgrpo_arms"]] == [0.5, 1.0]
        assert all(a["observed_lowest_N"] in (2, 4, 8) for a in run["fgrpo_arms"])
    diffs = result["smoothed_minus_raw"]
    assert [(d["focal_smoothing"], d["gamma"], d["N"]) for d in diffs] == [(0.5, 0.5, [2, 4, 8]), (0.5, 1.0, [2, 4, 8])]
    new = unit_matrix(final_rows(tiny_studies[0.5]), "F-GRPO gamma=1 alpha=0.5", METRIC, "population")[0]
    old = unit_matrix(final_rows(tiny_studies[0.0]), "F-GRPO gamma=1", METRIC, "population")[0]
    estimates = [interval[0] for interval in diffs[1]["pass256"]]
    assert estimates == pytest.approx((new - old).mean(0), abs=6e-6)  # the record rounds to 5 decimals


# --- result_table.py ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_an_integer_column_refuses_nan_and_inf(value):
    from fgrpo_sim.sim.result_table import TableSchema, validate_rows

    schema = TableSchema("test table", integers=("step",))
    table = pd.DataFrame({"step": [0.0, value]})
    with pytest.raises(ValueError, match=r"row 2: step = .* is not an integer"):
        validate_rows(schema, table, "t.parquet", "start afresh")
    assert validate_rows(schema, pd.DataFrame({"step": [0.0, 4.0]}), "t.parquet", "x")["step"].tolist() == [0, 4]


# --- executor.py: run_on_ray with a stand-in Ray (tasks run at once; the last submitted finishes first) --------------

def _stand_in_ray(monkeypatch):
    from stand_in_ray import stand_in_ray

    ray = stand_in_ray(monkeypatch)
    ray.wait = lambda refs, num_returns: ([refs[-1]], refs[:-1])  # the last submitted finishes first
    return ray


def _square(x):
    return x * x


def test_run_on_ray_hands_every_result_back_with_its_index(monkeypatch):
    from fgrpo_sim.sim.executor import Executor, run_on_ray

    ray = _stand_in_ray(monkeypatch)
    got = []
    run_on_ray(_square, [(2,), (3,), (4,)], lambda i, r: got.append((i, r)), executor=Executor(kind="ray"))
    assert got == [(2, 16), (1, 9), (0, 4)] and ray.cancelled == []
    assert ray.options["num_cpus"] == 1 and ray.options["num_gpus"] == 0.0 and ray.options["retry_exceptions"] is False


def test_a_failed_cuda_graph_capture_falls_back_to_eager_steps_once(monkeypatch):
    """torch.cuda's graph API stood in for (no GPU needed): the capture fails, one warning, then eager steps only."""
    import contextlib
    import warnings

    import torch

    from fgrpo_sim.sim.categorical.torch_step import CudaGraphStep

    class Inner:
        steps = 0

        def step(self):
            self.steps += 1

    @contextlib.contextmanager
    def failing_graph(graph):
        raise RuntimeError("capture not allowed")
        yield

    monkeypatch.setattr(torch.cuda, "CUDAGraph", lambda: object())
    monkeypatch.setattr(torch.cuda, "graph", failing_graph)
    step = CudaGraphStep(Inner())
    step.calls = 1  # past the warm-up call (which needs a CUDA stream)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            step()
    assert step.inner.steps == 3 and step.eager_only and step.graph is None
    assert len(caught) == 1 and "CUDA graph capture of the categorical step failed (RuntimeError" in str(caught[0].message)


def test_montecarlo_trials_bound_is_checked_before_sampling(monkeypatch):
    from fgrpo_sim.sim import montecarlo

    class Sampled(Exception):
        pass

    def no_sampling(seed):
        raise Sampled

    monkeypatch.setattr(montecarlo.np.random, "default_rng", no_sampling)
    with pytest.raises(Sampled):  # 10^12 trials is allowed: sampling starts
        montecarlo.estimate_tail_miss(8, 0.5, 0.1, trials=10**12)
    with pytest.raises(ValueError, match=r"^trials must be in \[1, "):
        montecarlo.estimate_tail_miss(8, 0.5, 0.1, trials=10**12 + 1)


def test_shared_population_later_updates_use_the_rollout_log_probs(monkeypatch):
    """updates_per_step = 2 (PPO epochs): the second update's ratio is against the rollout policy's log-probs
    (the first update's own, detached), so clipping can bite; the first passes None (its own log-probs)."""
    import torch

    import fgrpo_sim.sim.population_shared as shared
    from fgrpo_sim.sim.population import TrainSpec

    calls = []
    original = shared.shared_population_loss

    def recording(policy, batch, correct, train, old_logp=None):
        out = original(policy, batch, correct, train, old_logp)
        z = policy.logits(batch.prompts)
        calls.append((old_logp, torch.log_softmax(z, -1).gather(-1, batch.actions).reshape(-1, 1).detach()))
        return out

    monkeypatch.setattr(shared, "shared_population_loss", recording)
    pop = shared.make_shared_population(shared.SharedPopulationSpec(num_prompts=8, heldout_prompts=8, seed=0))
    train = TrainSpec(steps=2, runs=1, prompt_batch=4, group_size=4, eval_every=2, updates_per_step=2, gamma=1.0)
    shared.simulate_shared_population(pop, train, device="cpu")
    assert len(calls) == 4 and calls[0][0] is None and calls[2][0] is None
    for first, second in ((calls[0], calls[1]), (calls[2], calls[3])):
        assert second[0] is not None and torch.equal(second[0], first[1])  # the rollout's log-probs
        assert not torch.equal(second[0], second[1])  # ... not the updated policy's


def test_native_float32_state_sums_its_batch_statistics_in_float64():
    """A float32 policy's weights are float32, but a batch's sums over 4096 actions are float64 (the float32 sum
    of these weights is off by about 1e-7 relative)."""
    import torch

    from fgrpo_sim.sim.categorical.sampling import native_available

    if not native_available():
        pytest.skip("no C compiler: the native kernels are not built")
    from fgrpo_sim.sim.categorical.native import NativeState

    k, c = 4096, 2048
    state = NativeState(torch.zeros(1, k, dtype=torch.float32), c, torch.tensor([k]))
    weights = torch.rand(1, k, generator=torch.Generator().manual_seed(0), dtype=torch.float32)
    state.weights.copy_(weights)
    counts = torch.ones(1, k, dtype=torch.int64)
    counts[0, 0] = 3
    stats = state.set_counts(counts)
    w = weights.to(torch.float64)[0]
    assert float(weights[0, :c].sum()) != pytest.approx(float(w[:c].sum()), rel=1e-12)  # float32 would not do
    assert float(stats[0, 3]) == pytest.approx(float(w[:c].sum()), rel=1e-13)  # sampled correct weight
    assert float(stats[0, 4]) == pytest.approx(float(w[c:].sum()), rel=1e-13)  # sampled wrong weight
    assert float(stats[0, 5]) == pytest.approx(float(w[:c].sum() + 2 * w[0]), rel=1e-13)  # count-weighted
    assert stats[0, 2] == c + 2 and stats[0, 7] == k  # X and the distinct actions drawn


def test_resume_names_the_first_damaged_chunk_in_file_order(tiny_studies, tmp_path):
    """Two kept chunks of settings this run does not plan, both missing their last evaluation: the refusal names
    the one that comes first in the file (not the first in sorted order)."""
    from fgrpo_sim.sim.group_size_resume import read_kept_chunks
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec

    table = tiny_studies[0.0]
    table = table[table["step"] < table["step"].max()]
    chunk = table["chunk"].iloc[0].split("#")[0]
    out = tmp_path / "g.parquet"
    pd.concat([table.assign(chunk=f"{chunk}#zz"), table.assign(chunk=f"{chunk}#aa")]).to_parquet(out)
    other = GroupSizeStudySpec(optimizers=("sgd",), parametrisations=("axis",))  # plans neither chunk
    with pytest.raises(ValueError, match=rf"chunk '{chunk}#zz' lacks the last evaluation of a row trained 8 steps"):
        read_kept_chunks(out, other)


def test_a_kept_library_whose_record_is_not_ascii_is_built_again(tmp_path, monkeypatch):
    """A record with a stray non-ASCII byte is a damaged record (its hash cannot match): the library is built
    again and a sound record written, never an error (compiled.py's trust rule)."""
    import hashlib
    import os
    import shutil

    from fgrpo_sim.sim.categorical import compiled

    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler")
    monkeypatch.setenv("FGRPO_CACHE_DIR", str(tmp_path / "cache"))
    source = "int which(void) { return 7; }\n"
    assert compiled.load_library(source).which() == 7  # built and kept
    library = tmp_path / "cache" / "fgrpo-sim" / f"native-{os.geteuid()}" / f"count_sampler_{compiled.library_key(source)}.so"
    record = library.with_suffix(".sha256")
    record.write_bytes(b"\xff" + record.read_bytes()[1:])
    assert compiled.load_library(source).which() == 7
    assert record.read_text().strip() == hashlib.sha256(library.read_bytes()).hexdigest()


def test_group_size_claims_lines_by_hand(sweeps):
    from fgrpo_sim.sim.population_claims import group_size_claims

    sweeps.frame = _sweep_frame(("GRPO", "F-GRPO gamma=1"), ns=(2, 4))
    lines = group_size_claims(runs=2).splitlines()
    # held-out finals: GRPO pass@1 0.4, pass@256 0.7; F-GRPO gamma=1 (i = 1) 0.5 and 0.81
    assert lines[0] == "Shared population, equal steps, held-out, 2 runs (mean [95% bootstrap interval]):"
    assert lines[2] == "  N=2 F-GRPO - GRPO pass@256: 0.1100 [0.1100, 0.1100]"
    assert lines[3].startswith("  N=4: GRPO pass@1 0.4000 [0.4000, 0.4000], pass@256 0.7000 [0.7000, 0.7000]; ")


def test_unreachable_cluster_address_says_how_to_start_one(monkeypatch):
    pytest.importorskip("ray")
    from fgrpo_sim.sim.executor import Executor, connect

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ValueError) as info:
        connect(Executor(kind="ray", address="127.0.0.1:1"))  # port 1: nothing listens, refused at once
    message = str(info.value)
    assert message.startswith("--ray-address 127.0.0.1:1: unreachable (")
    assert message.endswith("); start the head with `ray start --head` and pass the address it prints")


def test_run_on_ray_gpu_tasks_take_no_cpu(monkeypatch):
    from fgrpo_sim.sim.executor import Executor, run_on_ray

    ray = _stand_in_ray(monkeypatch)
    run_on_ray(_square, [(5,)], lambda i, r: None, executor=Executor(kind="ray"), gpus=1.0)
    assert ray.options["num_cpus"] == 0 and ray.options["num_gpus"] == 1.0


def test_a_saved_report_refuses_a_fractional_count():
    from fgrpo_sim.sim.group_size_record import check_report

    with pytest.raises(ValueError, match=r"^here: field 'populations'"):
        check_report({"populations": 2.5}, "here", ())
    assert check_report({"populations": 2.0}, "here", ())["populations"] == 2


def test_result_table_bounds_fractions_and_text_nan():
    import numpy as np

    from fgrpo_sim.sim.result_table import TableSchema, check_columns, validate_rows

    schema = TableSchema("test table", integers=("step",), metrics=("share",), nan_metrics=("share",),
                         bounds=(("share", 0.0, 1.0),))
    ok = validate_rows(schema, pd.DataFrame({"step": ["0", "4"], "share": ["0.5", "nan"]}), "t.csv", "x", lines=[2, 3])
    assert ok["step"].tolist() == [0, 4] and ok["share"].iloc[0] == 0.5 and np.isnan(ok["share"].iloc[1])
    for bad, message in ((dict(step=["4.5"], share=["0.5"]), "step = "), (dict(step=["1"], share=["1.5"]), "share"),
                         (dict(step=np.array([2**63], dtype=np.uint64), share=[0.5]), "step = ")):
        with pytest.raises(ValueError, match=message):
            validate_rows(schema, pd.DataFrame(bad), "t.csv", "x", lines=[2])
    with pytest.raises(ValueError, match=r"^out t.csv exists but is not a test table \(no column 'step'\); x$"):
        check_columns(schema, ["share"], "t.csv", "x")


def test_categorical_config_smallest_policy_and_seed_ints():
    import numpy as np

    from fgrpo_sim.sim.categorical.config import CategoricalConfig

    config = CategoricalConfig(num_actions=2, num_correct=1, seeds=(np.int64(3), 4))
    assert config.num_actions == 2 and config.seeds == (3, 4) and all(type(s) is int for s in config.seeds)


def test_mixed_n_counts_fill_the_given_buffer():
    import torch

    from fgrpo_sim.sim.categorical.sampling import run_keys, sample_counts_torch

    weights = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], dtype=torch.float64)
    out = torch.full((2, 3), -1, dtype=torch.int64)
    counts = sample_counts_torch(weights, [3, 5], run_keys([0, 1]), 0, out=out)
    assert torch.equal(out, counts) and out.sum(1).tolist() == [3, 5]


def test_smoothed_lr_multiplier_estimate_takes_seed_0():
    from fgrpo_sim.sim.montecarlo import estimate_smoothed_lr_multiplier

    assert estimate_smoothed_lr_multiplier(8, 1.0, 0.5, trials=1000, seed=0) == estimate_smoothed_lr_multiplier(
        8, 1.0, 0.5, trials=1000)


def test_step_audit_names_its_ops_and_replay_signatures_see_shapes():
    import torch

    from fgrpo_sim.sim.step_audit import audit, replay_signature

    result = audit(lambda: torch.ones(3) + 1)
    assert any("add" in name for name in result["op_names"]) and result["syncs"] == 0
    assert replay_signature(lambda: torch.ones(2) + 1) != replay_signature(lambda: torch.ones(3) + 1)


def test_a_ray_population_sweep_runs_one_task_per_variant_in_order(monkeypatch):
    """Stand-in Ray session and runner (no Ray): the shared sweep hands its executor on, one task per variant with
    (population, spec, device), and returns the variants in the order of the specs however they finish."""
    from contextlib import contextmanager

    import fgrpo_sim.sim.executor as executor_module
    from fgrpo_sim.sim.executor import Executor
    from fgrpo_sim.sim.population import TrainSpec
    from fgrpo_sim.sim.population_shared import run_shared_sweep

    seen = {}

    @contextmanager
    def session(executor, device):
        seen["session"] = executor
        yield "cpu", 0.0

    def run_on_ray(fn, chunk_args, on_result, *, executor, gpus=0.0, progress=False, desc="chunks"):
        seen["run"] = (fn.__name__, executor, [(args[0], args[1].group_size, args[2]) for args in chunk_args])
        for index in reversed(range(len(chunk_args))):
            on_result(index, pd.DataFrame({"N": [chunk_args[index][1].group_size]}))

    monkeypatch.setattr(executor_module, "ray_session", session)
    monkeypatch.setattr(executor_module, "run_on_ray", run_on_ray)
    ray = Executor(kind="ray")
    frame = run_shared_sweep("pop", [TrainSpec(group_size=4), TrainSpec(group_size=8)], device="cpu", executor=ray)
    assert seen["session"] is ray and seen["run"] == ("simulate_shared_population", ray, [("pop", 4, "cpu"),
                                                                                          ("pop", 8, "cpu")])
    assert frame["N"].tolist() == [4, 8]


def test_report_flanks_are_the_end_n_minus_the_lowest(tiny_studies):
    from fgrpo_sim.sim.group_size_report import METRIC, setting_reports, unit_matrix
    from fgrpo_sim.sim.group_size_study import final_rows

    report = setting_reports(tiny_studies[0.0])[0]
    values, ns = unit_matrix(final_rows(tiny_studies[0.0]), "GRPO", METRIC, report["unit"])
    low = list(ns).index(report["observed_lowest_N"])
    assert report["first_minus_lowest"][0] == pytest.approx((values[:, 0] - values[:, low]).mean(), abs=6e-6)
    assert report["last_minus_lowest"][0] == pytest.approx((values[:, -1] - values[:, low]).mean(), abs=6e-6)
