"""Tests written for the survivors of sim/'s second fresh samples (seed 303, issue 44; benchmarks/RESULTS.md
"Mutation testing", strata simpop, simrep, simchk). Each asserts behaviour a user relies on, on tiny hand-made
data: pass@k exact from the correct mass even where that mass is tiny, a prompt's initial policy independent of the
other prompts, the common pass@1 level of equal_pass1_by_run, the depth record's documented slack, a negative
closed-form increment flagged by the Corollary H.2 check, and the conditional masses when no group reaches X = N."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fgrpo_sim
from fgrpo_sim.sim import population as pop
from fgrpo_sim.sim import population_shared as shared

COMMITTED_DEPTH = Path(fgrpo_sim.__file__).resolve().parent / "results" / "table2-depth.json"


# --- population.py / population_shared.py: metrics in float64 whatever the training dtype ----------------------

def test_population_pass_at_k_exact_for_a_tiny_correct_mass():
    """pass@k = 1 - (1 - Q_pos)^k from the float64 mass: a float32 run's prompt of mass 1e-9 keeps pass@1 = Q_pos
    (in float32 1 - 1e-9 rounds to 1, and pass@1 would read 0)."""
    spec = pop.PopulationSpec(num_prompts=3, beta_a=0.001, beta_b=1.0, mu_clip=1e-9, bucket_edges=(0.0, 1.0))
    frame = pop.simulate_population(pop.make_population(spec), pop.TrainSpec(steps=0, runs=1, prompt_batch=1,
                                                                             pass_k=(1, 8)), device="cpu")
    q = frame["correct_mass"].to_numpy()
    assert np.all((q > 5e-10) & (q < 2e-9))  # every prompt sits at mu_clip
    np.testing.assert_allclose(frame["pass@1"], q, rtol=1e-6)
    np.testing.assert_allclose(frame["pass@8"], 1 - (1 - q) ** 8, rtol=1e-6)


def test_shared_population_pass_at_k_exact_for_a_tiny_correct_mass():
    """As above for the shared-strategy simulator: the softmax is taken in float64, so a rare-only prompt whose
    one correct strategy holds 1e-9 of the prior has pass@1 = its correct mass, not 0."""
    spec = shared.SharedPopulationSpec(num_prompts=2, heldout_prompts=2, common_strategies=1, rare_strategies=1,
                                       wrong_strategies=1, common_mass=0.5, rare_mass=1e-9, rare_only_share=1.0,
                                       offset_scale=0.0)
    train = pop.TrainSpec(steps=0, runs=1, prompt_batch=1, pass_k=(1, 8))
    frame = shared.simulate_shared_population(shared.make_shared_population(spec), train, device="cpu")
    frame = frame[frame["bucket"] == "all"]  # every prompt is rare-only: the common bucket has none (NaN)
    assert len(frame) == 2  # both splits
    q = frame["correct_mass"].to_numpy()
    np.testing.assert_allclose(q, 1e-9, rtol=1e-5)
    np.testing.assert_allclose(frame["pass@1"], q, rtol=1e-6)
    np.testing.assert_allclose(frame["pass@8"], 1 - (1 - q) ** 8, rtol=1e-6)


def test_shared_initial_probs_of_a_prompt_ignore_the_other_prompts():
    """Each prompt's softmax is its own: offsets 800 below another prompt's (a shift of its logits) give the same
    probabilities, not an underflow to 0 / 0 against the other prompt's maximum."""
    base = shared.make_shared_population(shared.SharedPopulationSpec(num_prompts=2, heldout_prompts=0))
    offsets = base.offsets["train"].copy()
    offsets[1] = offsets[0] - 800.0
    population = replace(base, offsets={"train": offsets, "heldout": base.offsets["heldout"]})
    p = population.initial_probs("train")
    z = base.shared_init + base.offsets["train"][0]
    want = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    np.testing.assert_allclose(p, np.stack([want, want]), rtol=1e-12)


def _curve_rows(run, variant, pass1, metric):
    return [{"split": "heldout", "bucket": "all", "variant": variant, "run": run, "step": 10 * i,
             "pass@1": a, "pass@256": b} for i, (a, b) in enumerate(zip(pass1, metric))]


def test_equal_pass1_by_run_uses_one_level_for_every_run():
    """The level is the lowest final pass@1 of any run (0.4 here); run 1, which ends at 0.8, is read where its own
    curve crosses 0.4 (interpolated: 0.5 -> 0.3 at steps 0, 10 gives 60 + 0.5 * 20 = 70), not at its own end."""
    frame = pd.DataFrame(_curve_rows(0, "grpo", [0.2, 0.4], [50.0, 60.0])
                         + _curve_rows(1, "grpo", [0.3, 0.5, 0.8], [60.0, 80.0, 90.0]))
    level, table = shared.equal_pass1_by_run(frame)
    assert level == pytest.approx(0.4)
    row = table.set_index("variant").loc["grpo"]
    assert row["runs"] == 2
    assert row["mean"] == pytest.approx((60.0 + 70.0) / 2)
    assert row["se"] == pytest.approx(np.std([60.0, 70.0], ddof=1) / math.sqrt(2))


# --- table2_depth_record.py: the documented slack, at its edge ----------------------------------------------------

def test_depth_record_estimate_at_the_slack_edge_is_accepted():
    """ci_low <= estimate <= ci_high holds up to SLACK either side (a float's last digits); exactly at the edge is
    in, twice the slack is out."""
    from fgrpo_sim.sim.table2_depth_record import SLACK, check_record

    record = json.loads(COMMITTED_DEPTH.read_text())
    record["simulated_rows"][0]["dnll_rare"] = {"mean": 0.0 + SLACK, "ci_low": -1.0, "ci_high": 0.0}
    assert check_record(record, "rec.json")["simulated_rows"][0]["dnll_rare"]["mean"] == SLACK
    record["simulated_rows"][0]["dnll_rare"] = {"mean": 0.0 - SLACK, "ci_low": 0.0, "ci_high": 1.0}
    check_record(record, "rec.json")
    record["simulated_rows"][0]["dnll_rare"] = {"mean": 2 * SLACK, "ci_low": -1.0, "ci_high": 0.0}
    with pytest.raises(ValueError, match="must hold ci_low <= estimate <= ci_high"):
        check_record(record, "rec.json")


# --- checks.py / montecarlo.py: Corollary H.2's monotonicity and the conditional masses ---------------------------

def test_increment_check_fails_a_negative_closed_form_increment_the_simulation_agrees_with():
    """The check is the monotonicity itself, not only agreement: a closed-form E[S_R|X=k+1] - E[S_R|X=k] of -0.1
    fails even though the simulated increment (-0.1 +- 0.014) agrees with it; +0.1 with +0.1 passes."""
    from fgrpo_sim.sim import checks

    def run(lo, hi):
        est = {"S_R": np.array([lo, hi]), "S_R_se": np.array([0.01, 0.01]), "groups": np.array([100.0, 100.0])}
        return checks.finalise([checks._increment_check("inc", lo, hi, est, "S_R", 0)])[0]

    down, up = run(0.5, 0.4), run(0.4, 0.5)
    assert down["interval"][0] <= down["closed_form"] <= down["interval"][1]  # the agreement alone would pass
    assert down["passed"] is False
    assert up["passed"] is True and up["groups"] == [100, 100]


def test_masses_given_x_when_no_group_reaches_x_equal_n():
    """A correct action of mass 0.01 and N = 8: groups reach X = 1 or 2, never 8. Given X >= 1 the sampled correct
    mass is exactly 0.01 and the incorrect one 0.99 (one action each); the counts over k add up to the trials."""
    from fgrpo_sim.sim import montecarlo

    out = montecarlo.estimate_masses_given_x([0.01, 0.99], [True, False], 8, 400, seed=3)
    assert out["groups"].shape == (9,) and out["groups"].sum() == 400 and out["groups"][8] == 0
    assert out["groups"][1] >= 2
    assert out["P_pos"][1] == pytest.approx(0.01) and out["P_neg"][1] == pytest.approx(0.99)
    assert out["P_pos"][0] == pytest.approx(0.0) and out["P_neg"][0] == pytest.approx(0.99)
    assert np.isnan(out["P_pos"][8]) and np.isnan(out["P_pos_se"][8])


def test_tail_miss_torch_path_draws_on_its_device_whatever_the_default_device():
    """The GPU path places every tensor on the device it is given: under another default device (a user's
    `torch.set_default_device`; "meta" here, where binomial has no kernel) it draws the same groups on the CPU, and
    the hit rate is Lemma 3.1's Pr(B) = (1 - tau)^N (1 - q^N - (1 - q)^N), q = (mu - tau) / (1 - tau)."""
    import torch

    from fgrpo_sim.sim import montecarlo

    n, tau, q, trials = 8, 0.05, 0.4, 5000
    hits = montecarlo._tail_miss_hits_torch(n, tau, q, trials, 7, torch.device("cpu"))
    with torch.device("meta"):
        again = montecarlo._tail_miss_hits_torch(n, tau, q, trials, 7, torch.device("cpu"))
    assert again == hits
    closed = (1 - tau) ** n * (1 - q ** n - (1 - q) ** n)
    assert abs(hits / trials - closed) < 5 * math.sqrt(closed * (1 - closed) / trials)


# --- group_size_record.py: the checked reader's building blocks --------------------------------------------------
# The schema constants (PROBABILITY, CURVE, ...) are built once at import; these call the builders themselves, so
# each block's rule is pinned where it is made (and a record reader built anew keeps it).

def test_record_number_block_keeps_both_bounds():
    from fgrpo_sim.sim.group_size_record import _number

    probability = _number(0, 1, what="a probability")
    assert probability(0.25, "rep.json", "p", {}) == 0.25 and probability(1, "rep.json", "p", {}) == 1
    with pytest.raises(ValueError) as err:
        probability(1.5, "rep.json", "p", {})
    assert str(err.value) == "rep.json: field 'p' must be a probability in [0, 1], got 1.5"


def test_record_list_block_wants_its_length():
    from fgrpo_sim.sim.group_size_record import _list, _number

    pair, per_n = _list(_number(), per_n=False, length=2), _list(_number())
    assert pair([1, 2.5], "rep.json", "xs", {}) == [1.0, 2.5]
    assert per_n([0.5, 0.25, 1], "rep.json", "ys", {"N": [2, 4, 8]}) == [0.5, 0.25, 1.0]
    with pytest.raises(ValueError) as err:
        pair([1, 2, 3], "rep.json", "xs", {})
    assert str(err.value) == "rep.json: field 'xs' must be a list of 2 values, got [1, 2, 3]"
    with pytest.raises(ValueError, match=r"field 'ys' must be a list of 3 values \(one per N\)"):
        per_n([0.5], "rep.json", "ys", {"N": [2, 4, 8]})


def test_record_block_checks_each_field_under_its_dotted_name():
    from fgrpo_sim.sim.group_size_record import _number, _record

    curve = _record({"gamma": _number(0, None), "lr": _number(0, None)}, required=("gamma",))
    assert curve({"gamma": 1, "note": "kept"}, "rep.json", "curves[0]", {}) == {"gamma": 1.0, "note": "kept"}
    with pytest.raises(ValueError) as err:
        curve({"gamma": 1.0, "lr": -0.5}, "rep.json", "curves[0]", {})
    assert str(err.value) == "rep.json: field 'curves[0].lr' must be a number >= 0, got -0.5"


def test_run_study_draws_no_progress_bar_unless_asked(monkeypatch):
    """The library call is quiet by default (`progress=False`): each chunk is trained with progress off."""
    from fgrpo_sim.sim import group_size_study as gs

    seen = []

    def chunk(spec, optimizer, kind, dev, progress):
        seen.append(progress)
        return pd.DataFrame({"chunk": [gs.chunk_id(spec, optimizer, kind)]})

    monkeypatch.setattr(gs, "train_chunk", chunk)
    frame = gs.run_study(gs.GroupSizeStudySpec())
    assert len(frame) == len(seen) == len(gs.chunks(gs.GroupSizeStudySpec())) and seen and not any(seen)
    gs.run_study(gs.GroupSizeStudySpec(), progress=True)
    assert seen[-1] is True


def test_chunk_id_tells_population_offsets_apart():
    """Resume reuses a chunk only when its fingerprint matches: studies of other population offsets (other
    populations) get other ids."""
    from fgrpo_sim.sim import group_size_study as gs

    spec = gs.GroupSizeStudySpec()
    optimizer, kind = gs.chunks(spec)[0]
    ids = {offset: gs.chunk_id(replace(spec, population_offset=offset), optimizer, kind) for offset in (0, 3, 4)}
    assert len(set(ids.values())) == 3
    assert gs.chunk_id(spec, optimizer, kind) == ids[0]  # the default spec is offset 0


def test_linear_logits_default_is_the_axis_map():
    """LinearLogits(logits) without a kind is the axis parametrisation: theta is the logits, no map."""
    import torch

    from fgrpo_sim.sim.parametrisation import LinearLogits

    init = torch.tensor([[0.5, -1.0, 2.0]], dtype=torch.float64)
    policy = LinearLogits(init)
    assert policy.kind == "axis" and policy.m is None
    assert torch.equal(policy.logits(), init)


# --- categorical/engine.py: the batch's device ----------------------------------------------------------------------

def test_categorical_batch_device_argument_overrides_the_config():
    """`device=` wins over the config's: a study configured for CUDA builds a CPU batch when asked (here, a CPU-only
    machine would refuse the config's 'cuda' outright; on a GPU the batch would land there)."""
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    config = CategoricalConfig(num_actions=50, num_correct=5, device="cuda", dtype="float64")
    batch = CategoricalBatch(config, [4], [0.0], [0], device="cpu")
    assert batch.device.type == "cpu" and batch.logits.device.type == "cpu"


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="a CUDA graph needs a GPU")
def test_a_cuda_batch_replays_its_step_as_a_graph_by_default(monkeypatch):
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig
    from fgrpo_sim.sim.categorical.torch_step import CudaGraphStep

    monkeypatch.delenv("FGRPO_CUDA_GRAPH", raising=False)
    config = CategoricalConfig(num_actions=50, num_correct=5, device="cuda", sampler="torch")
    assert isinstance(CategoricalBatch(config, [2], [0.0], [0])._run_step, CudaGraphStep)
