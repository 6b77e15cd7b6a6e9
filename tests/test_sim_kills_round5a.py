"""Tests written for the survivors of sim/'s fifth fresh samples, strata pop, rep and chk (seed 606, issue 44;
benchmarks/mutation_equivalent.md, "fifth fresh samples (seed 606), strata pop, rep and chk"). Each asserts behaviour
a user relies on, on tiny hand-made data: a float64 shared-population run rewards with the values the user set, the
group-size claims train on the documented 256 held-out prompts, a table2-depth seed offset out of range is refused
under its own name, a closed form on an interval's edge passes `fgrpo check`, the checks' counts on the CPU come
from the sampler the categorical simulator uses there, and the per-prompt simulator and the tail-miss estimate run
whole on CUDA."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from stand_in_sweeps import Captured, stand_in_sweeps


# --- population_shared.py: a float64 run's rewards are the values set ----------------------------------------------

def test_a_float64_shared_step_rewards_with_the_rewards_as_set():
    """shared_population_loss_40 (the correct reward made as a float32 tensor): 0.3 is not a float32 number, so a
    float64 run rewarded 0.30000001192..., above reward_correct, which core refuses (a reward outside
    [reward_wrong, reward_correct]). A float64 run must reward exactly what the user set, and mu_hat is then X / N."""
    from fgrpo_sim.core import group_success_rate
    from fgrpo_sim.sim.population import StepBatch, TrainSpec
    from fgrpo_sim.sim.population_shared import (SharedPolicy, SharedPopulationSpec, make_shared_population,
                                                 shared_population_loss)

    population = make_shared_population(SharedPopulationSpec(num_prompts=4, heldout_prompts=0, common_strategies=2,
                                                             rare_strategies=2, wrong_strategies=2, seed=1))
    correct = torch.as_tensor(population.correct["train"])
    policy = SharedPolicy(population, 1, "cpu", torch.float64)
    prompts = torch.tensor([[0, 1, 2, 3]])
    actions = torch.arange(6).repeat(4, 1)[None, :, :4]  # every prompt draws strategies 0..3 once
    train = TrainSpec(group_size=4, prompt_batch=4, runs=1, reward_correct=0.3, reward_wrong=0.1, gamma=1.0)
    _, _, _, rewards = shared_population_loss(policy, StepBatch(prompts, actions), correct, train)
    hit = correct[prompts[..., None], actions].reshape(4, 4)
    assert rewards.dtype == torch.float64 and hit.any() and (~hit).any()
    assert rewards[hit].tolist() == pytest.approx([0.3] * int(hit.sum()), rel=1e-15)
    assert rewards[~hit].tolist() == pytest.approx([0.1] * int((~hit).sum()), rel=1e-15)
    mu_hat = group_success_rate(rewards, 0.3, 0.1)
    assert mu_hat.tolist() == pytest.approx((hit.sum(1) / 4).tolist(), rel=1e-12)


# --- population_claims.py: the group-size claims' population -------------------------------------------------------

def test_group_size_claims_evaluate_on_the_documented_held_out_prompts(monkeypatch):
    """group_size_claims_4 (heldout_prompts=None): the N = 2..32 sweep reports held-out pass@256, so its population
    is the documented one, 256 training and 256 held-out prompts from seed 0 (the spec compared whole)."""
    from fgrpo_sim.sim import population_claims as claims
    from fgrpo_sim.sim.population_shared import SharedPopulationSpec

    sweeps = stand_in_sweeps(monkeypatch)
    with pytest.raises(Captured):
        claims.group_size_claims(runs=2)
    assert sweeps.last.kind == "shared"
    assert sweeps.last.pop == SharedPopulationSpec(num_prompts=256, heldout_prompts=256, seed=0)
    sweeps.last.pop.validate()


# --- table2_depth.py: DepthSetting names its seed offset -------------------------------------------------------------

@pytest.mark.parametrize("value, message", [
    (-1, "seed_offset must be in [0, 1000000000], got -1"),
    (10**9 + 1, "seed_offset must be in [0, 1000000000], got 1000000001"),
    (1.5, "seed_offset must be an integer, got 1.5"),
])
def test_depth_setting_names_a_bad_seed_offset(value, message):
    """validate_17 (check_integer(None, ...)): the refusal must name the parameter, which the command line renames
    to --seed-offset (options_named); a refusal naming None reached the user as "None must be in ..."."""
    from dataclasses import replace

    from fgrpo_sim.sim.table2_depth import FITTED
    from fgrpo_sim.validation import options_named

    with pytest.raises(ValueError) as err:
        replace(FITTED, seed_offset=value).validate()
    assert str(err.value) == message
    with pytest.raises(ValueError) as err, options_named(seed_offset="--seed-offset"):
        replace(FITTED, seed_offset=value).validate()
    assert str(err.value) == "--" + message.replace("seed_offset", "seed-offset")


# --- checks.py: a sampling interval is closed at both ends ----------------------------------------------------------

def test_a_closed_form_on_either_edge_of_its_interval_passes():
    """finalise_27 (`lo < closed form`): an interval check passes when the closed form lies in [lo, hi], edges
    included, as the tolerance checks do (`_result`); e.g. a closed form of 0 against the interval [0, 0.01] of a
    proportion that saw no hit. Just outside either edge fails."""
    from fgrpo_sim.sim.checks import _pending, _result, finalise

    tiny = math.ulp(0.25)
    cases = [(0.0, (0.0, 0.01), True), (0.25, (0.25, 0.5), True), (0.5, (0.25, 0.5), True),
             (0.25 - tiny, (0.25, 0.5), False), (0.5 + 2 * tiny, (0.25, 0.5), False)]
    pending = [_pending(f"c{i}", cf, cf, lambda level, b=bounds: b) for i, (cf, bounds, _) in enumerate(cases)]
    results = finalise(pending)
    assert [r["passed"] for r in results] == [want for *_, want in cases]
    assert [r["interval"] for r in results] == [list(bounds) for _, bounds, _ in cases]
    assert [_result("t", cf, cf, bounds)["passed"] for cf, bounds, _ in cases] == [want for *_, want in cases]


# --- montecarlo.py: the checks' counts on the CPU ---------------------------------------------------------------------

def test_check_counts_on_the_cpu_are_drawn_by_the_simulators_cpu_sampler():
    """sample_counts_71 (the native kernel only off the CPU): `fgrpo check` guards the sampler the categorical
    simulator uses, and on the CPU that is the backend `resolve_sampler("auto", cpu)` picks (the native kernel
    where it compiles, which makes every committed output): the checks' counts must be that sampler's counts for
    the same keys, not the torch backend's (an exact sampler too, but other numbers)."""
    from fgrpo_sim.sim import montecarlo
    from fgrpo_sim.sim.categorical.sampling import (resolve_sampler, run_keys, sample_counts_native,
                                                    sample_counts_torch)

    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    groups, n, seed = 6, 10, 7
    weights = p.expand(groups, -1).contiguous()
    draws = torch.full((groups,), n, dtype=torch.int64)
    keys = run_keys(range(groups), salt=seed)
    torch_counts = sample_counts_torch(weights, draws, keys, stream=seed)
    want = torch_counts
    if resolve_sampler("auto", torch.device("cpu")) == "native":
        want = sample_counts_native(weights, draws, keys, stream=seed)[0]
        assert not torch.equal(want, torch_counts)  # the two backends draw different numbers: the test can tell
    got = montecarlo.sample_counts(p, n, groups, seed)
    assert got.dtype == torch.int64 and torch.equal(got, want)


# --- population.py and montecarlo.py on CUDA (device arguments; skipped without a GPU) ------------------------------

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: every tensor of a run must be on it")
def test_the_per_prompt_simulator_runs_on_cuda_like_on_the_cpu():
    """population._simulate_16 (the prompts' bucket tensor left on the CPU): CUDA prompt indices into a CPU
    tensor, which torch refuses. Before any draw both devices evaluate the same start."""
    from fgrpo_sim.sim.population import PopulationSpec, TrainSpec, make_population, simulate_population

    population = make_population(PopulationSpec(num_prompts=6, seed=2))
    train = TrainSpec(steps=2, eval_every=1, runs=2, prompt_batch=3, group_size=4, pass_k=(1,))
    frame = simulate_population(population, train, device="cuda", dtype=torch.float64)
    cpu = simulate_population(population, train, device="cpu", dtype=torch.float64)
    assert list(frame.columns) == list(cpu.columns) and len(frame) == len(cpu)
    step0 = frame["step"] == 0
    pd.testing.assert_frame_equal(frame[step0].reset_index(drop=True), cpu[step0].reset_index(drop=True),
                                  rtol=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: the torch branch runs off the CPU only")
def test_the_tail_miss_estimate_runs_on_cuda():
    """montecarlo._tail_miss_hits_torch_2 (a CPU generator): torch's binomial on CUDA tensors refuses a CPU
    generator. On a GPU the estimate must run there and fit Lemma 3.1's Pr(B) (6 standard errors)."""
    from fgrpo_sim.sim.montecarlo import estimate_tail_miss
    from fgrpo_sim.theory import tail_miss_probability

    est, se = estimate_tail_miss(8, 0.5, 0.1, 200_000, 3, device="cuda")
    want = float(tail_miss_probability(8, 0.5, 0.1))
    assert 0 < se and abs(est - want) < 6 * math.sqrt(want * (1 - want) / 200_000)
