"""Issue 28, item 1: logits = M theta. The orthogonal map is the axis map under SGD; every map starts from
the same policy; the maps are seeded; Adam tells them apart."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from fgrpo_sim.sim.parametrisation import PARAMETRISATIONS, LinearLogits, initial_parameters, logit_map
from fgrpo_sim.sim.population import PopulationSpec, TrainSpec, make_population, simulate_population
from fgrpo_sim.sim.population_shared import SharedPopulationSpec, make_shared_population, simulate_shared_population


def test_maps_are_seeded_and_have_their_shape():
    eye, rot, dense = (logit_map(k, 6, seed=3) for k in PARAMETRISATIONS)
    np.testing.assert_array_equal(eye, np.eye(6))
    np.testing.assert_allclose(rot @ rot.T, np.eye(6), atol=1e-12)
    assert dense.shape == (6, 24) and np.linalg.matrix_rank(dense) == 6
    np.testing.assert_array_equal(rot, logit_map("orthogonal", 6, seed=3))
    assert not np.allclose(rot, logit_map("orthogonal", 6, seed=4))
    assert not np.allclose(np.abs(rot), np.eye(6), atol=0.1)  # a rotation that mixes, not a permutation


@pytest.mark.parametrize("kind", PARAMETRISATIONS)
def test_least_norm_parameters_give_the_initial_logits(kind):
    m = logit_map(kind, 8, seed=0)
    logits = np.random.default_rng(1).normal(size=(3, 8))
    theta = initial_parameters(m, logits)
    np.testing.assert_allclose(theta @ m.T, logits, atol=1e-12)
    policy = LinearLogits(torch.as_tensor(logits), kind, seed=0)
    torch.testing.assert_close(policy.logits(), torch.as_tensor(logits), rtol=0, atol=1e-12)


def test_bad_parametrisation_names_the_parameter():
    with pytest.raises(ValueError, match="parametrisation"):
        logit_map("spherical", 4, 0)
    with pytest.raises(ValueError, match="parametrisation"):
        TrainSpec(parametrisation="spherical").validate(8)


def _runs(simulate, population, **train):
    out = {}
    for kind in PARAMETRISATIONS:
        spec = TrainSpec(steps=25, runs=2, prompt_batch=8, eval_every=5, group_size=8, parametrisation=kind, **train)
        out[kind] = simulate(population, spec, device="cpu", dtype=torch.float64)
    return out


@pytest.mark.parametrize("sharing", ["per-prompt", "shared"])
def test_orthogonal_equals_axis_under_sgd_and_not_under_adam(sharing):
    if sharing == "shared":
        population = make_shared_population(SharedPopulationSpec(num_prompts=32, heldout_prompts=16, seed=2))
        simulate, lrs = simulate_shared_population, {"sgd": 2.0, "adam": 0.02}
    else:
        population = make_population(PopulationSpec(num_prompts=32, seed=2))
        simulate, lrs = simulate_population, {"sgd": 50.0, "adam": 0.05}
    cols = ["pass@1", "pass@256", "correct_mass"]
    sgd = _runs(simulate, population, optimizer="sgd", lr=lrs["sgd"])
    assert set(sgd["orthogonal"]["parametrisation"]) == {"orthogonal"}  # recorded in every row
    np.testing.assert_allclose(sgd["orthogonal"][cols].to_numpy(), sgd["axis"][cols].to_numpy(), rtol=0, atol=1e-9)
    first = {k: f[f["step"] == 0][cols].to_numpy() for k, f in sgd.items()}
    np.testing.assert_allclose(first["dense"], first["axis"], atol=1e-12)  # the same initial policy
    last = {k: f[f["step"] == f["step"].max()][cols].to_numpy() for k, f in sgd.items()}
    assert np.abs(last["dense"] - last["axis"]).max() > 1e-4  # dense SGD follows M M^T g, not g
    assert np.abs(last["axis"] - first["axis"]).max() > 1e-2  # and the runs did move
    adam = _runs(simulate, population, optimizer="adam", lr=lrs["adam"])
    last = {k: f[f["step"] == f["step"].max()][cols].to_numpy() for k, f in adam.items()}
    assert np.abs(last["orthogonal"] - last["axis"]).max() > 1e-4  # Adam is not rotation-invariant
