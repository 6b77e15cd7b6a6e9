"""Tests written for the survivors of sim/'s fourth fresh sample of stratum pop (seed 505, issue 44; population.py,
population_resume.py, population_shared.py; benchmarks/mutation_equivalent.md, "fourth fresh samples (seed 505),
stratum pop"). Each asserts behaviour a user relies on, on tiny hand-made data: bucket edges that are not numbers are
refused under the parameter's name, a resume's damaged table is named as the option the user typed, a bucket that
starts with no rare mass reports no retained share (and no numpy warning), a rare-only share of 0 makes no prompt
rare-only whatever the uniform draw (nor a common-correct probability of 0 any strategy correct), and the shared
simulator runs whole on CUDA."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from fgrpo_sim.sim import population as pop
from fgrpo_sim.sim import population_resume as resume
from fgrpo_sim.sim import population_shared as shared


# --- population.py: PopulationSpec.validate's bucket edges ---------------------------------------------------------

@pytest.mark.parametrize("edges, shown", [
    ((0.0, None, 1.0), "(0.0, None, 1.0)"),  # a missing edge: NaN as a float, refused like a NaN edge
    (("abc",), "('abc',)"),  # text (numpy's own words named no parameter before)
    (("0", "abc", "1"), "('0', 'abc', '1')"),
    (0.5, "0.5"),  # a lone number (a TypeError before: tuple() of a float)
    ([[0.0, 1.0], [0.0]], "[[0.0, 1.0], [0.0]]"),  # ragged
    ([[0.0, 1.0], [0.0, 1.0]], "([0.0, 1.0], [0.0, 1.0])"),  # two rows of edges
])
def test_bucket_edges_that_are_not_one_row_of_numbers_are_refused_by_name(edges, shown):
    with pytest.raises(ValueError) as err:
        pop.PopulationSpec(bucket_edges=edges).validate()
    assert str(err.value) == f"bucket_edges must increase from 0 to 1, got {shown}"


def test_bucket_edges_written_as_numbers_in_text_are_read_as_numbers():
    population = pop.make_population(pop.PopulationSpec(num_prompts=3, bucket_edges=("0", "0.5", "1")))
    assert population.bucket_labels == ("mu0 0-0.5", "mu0 0.5-1")


# --- population_resume.py: the damaged table a resume reads is named as --out --------------------------------------

def test_a_resume_names_its_damaged_table_as_the_out_option(tmp_path):
    """The sidecar vouches for the table, but a column is gone: the one-line refusal names the option the user
    typed (`--out PATH`) and says how to go on."""
    population_spec = pop.PopulationSpec(num_prompts=2, seed=3)
    spec = pop.TrainSpec(steps=1, eval_every=1, runs=1, prompt_batch=1, group_size=2, pass_k=(1,))
    frame = pop.simulate_population(pop.make_population(population_spec), spec, device="cpu")
    out = tmp_path / "t.csv"
    resume.save(out, {0: frame}, population_spec, [spec], "per-prompt", lambda f, path: f.to_csv(path, index=False))
    frame.drop(columns=["rare_mass"]).to_csv(out, index=False)
    record = {resume.variant_key(spec): resume.fingerprint(population_spec, spec, "per-prompt")}
    resume.sidecar_path(out).write_text(resume.jsonl.dumps({"tables": {resume._sha256(out): record}}) + "\n")
    with pytest.raises(ValueError) as err:
        resume.kept_variants(out, population_spec, [spec], "per-prompt")
    assert str(err.value) == (f"--out {out} exists but is not a population table (no column 'rare_mass'); "
                              f"delete it (and its sidecar) or choose another --out")


# --- population_shared.py: rare_mass_retained of a bucket without rare mass -----------------------------------------

def test_a_bucket_that_starts_without_rare_mass_retains_nan_quietly():
    """--rare-correct-prob 0: common-solvable prompts have no correct rare strategy, so their bucket's rare mass
    is 0 at every step and its retained share is undefined: NaN, computed without a 0 / 0 (numpy would print
    "invalid value encountered" to the user's stderr); the rare-only bucket keeps its ratio."""
    spec = shared.SharedPopulationSpec(num_prompts=4, heldout_prompts=2, common_strategies=2, rare_strategies=2,
                                       wrong_strategies=2, rare_correct_prob=0.0, rare_only_share=0.5, seed=1)
    population = shared.make_shared_population(spec)
    assert set(population.prompt_type["train"]) == {0, 1}  # both prompt types drawn
    train = pop.TrainSpec(steps=2, eval_every=1, runs=1, prompt_batch=2, group_size=2, pass_k=(1,))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        frame = shared.simulate_shared_population(population, train, device="cpu")
    common = frame[frame["bucket"] == "common-solvable"]
    assert len(common) == 6 and (common["rare_correct_mass"] == 0).all()
    assert common["rare_mass_retained"].isna().all()
    rare = frame[frame["bucket"] == "rare-only"]
    assert np.isfinite(rare["rare_mass_retained"]).all()
    assert (rare[rare["step"] == 0]["rare_mass_retained"] == 1.0).all()


# --- population_shared.py: _draw_split's rare-only share ------------------------------------------------------------

class _ZeroUniforms:
    """A generator whose uniforms are all 0.0, the lowest value numpy's `random` returns ([0, 1)); every other
    draw is a real generator's."""

    def __init__(self):
        self._rng = np.random.default_rng(0)

    def random(self, size=None):
        return np.zeros(size)

    def __getattr__(self, name):
        return getattr(self._rng, name)


def test_a_rare_only_share_of_zero_makes_no_prompt_rare_only_even_at_a_zero_uniform():
    """A prompt is rare-only with probability share exactly (U < share, U in [0, 1)): share 0 means none ever,
    share 1 means all."""
    spec = shared.SharedPopulationSpec(common_strategies=2, rare_strategies=3, wrong_strategies=2,
                                       rare_only_share=0.0, common_correct_prob=0.5, rare_correct_prob=0.0)
    _, correct, types = shared._draw_split(spec, _ZeroUniforms(), 5)
    assert types.tolist() == [0] * 5
    assert correct[:, :2].all() and not correct[:, 2:].any()  # each common strategy correct (U = 0 < 0.5)
    _, correct, types = shared._draw_split(shared.SharedPopulationSpec(rare_only_share=1.0), _ZeroUniforms(), 5)
    assert types.tolist() == [1] * 5


def test_a_common_correct_prob_of_zero_leaves_only_the_one_common_solution_a_prompt_is_given():
    """common_correct_prob 0: no common strategy is drawn correct, even at a uniform of 0.0; a common-solvable
    prompt then gets exactly the one common solution it must have."""
    spec = shared.SharedPopulationSpec(common_strategies=3, rare_strategies=2, wrong_strategies=2,
                                       rare_only_share=0.0, common_correct_prob=0.0, rare_correct_prob=0.0)
    _, correct, types = shared._draw_split(spec, _ZeroUniforms(), 5)
    assert types.tolist() == [0] * 5
    assert correct[:, :3].sum(1).tolist() == [1] * 5 and not correct[:, 3:].any()


# --- population_shared.py: the whole simulator on CUDA --------------------------------------------------------------

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: every tensor of a run must be on it")
def test_the_shared_simulator_runs_on_cuda_like_on_the_cpu():
    spec = shared.SharedPopulationSpec(num_prompts=4, heldout_prompts=2, common_strategies=2, rare_strategies=2,
                                       wrong_strategies=2, seed=1)
    population = shared.make_shared_population(spec)
    train = pop.TrainSpec(steps=2, eval_every=1, runs=2, prompt_batch=2, group_size=2, pass_k=(1,))
    frame = shared.simulate_shared_population(population, train, device="cuda", dtype=torch.float64)
    cpu = shared.simulate_shared_population(population, train, device="cpu", dtype=torch.float64)
    assert list(frame.columns) == list(cpu.columns) and len(frame) == len(cpu) == 2 * 3 * 2 * 3
    step0 = frame["step"] == 0  # before any draw, both devices evaluate the same start
    pd.testing.assert_frame_equal(frame[step0], cpu[step0], rtol=1e-12)
