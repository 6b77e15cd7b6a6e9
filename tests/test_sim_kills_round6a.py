"""Tests written for the survivors of sim/'s sixth fresh samples, strata pop, rep and chk (seed 707, issue 44;
benchmarks/mutation_equivalent.md, "sixth fresh samples (seed 707), strata pop, rep and chk"). Each asserts
behaviour a user relies on, on tiny hand-made data: a sweep runs every variant on the device the user chose (and
refuses one the machine lacks), and the "Every setting tried" table shows its progress bar when asked, and only
then."""

from __future__ import annotations

import io
import sys

import pandas as pd
import pytest
import torch

from stand_in_sweeps import Captured, stand_in_sweeps


# --- population.py: a sweep's device reaches every variant ----------------------------------------------------------

@pytest.mark.parametrize("device", ["cpu", "cuda", "auto"])
def test_a_sweep_runs_every_variant_on_the_device_asked_for(device):
    """sweep_with_56 (simulate called without `device=`): `run_sweep(..., device="cpu")` on a GPU machine must
    still train on the CPU, so every variant's simulate must be handed the sweep's device, not its own default."""
    from fgrpo_sim.sim.population import TrainSpec, sweep_with

    seen = []

    def simulate(population, spec, **kwargs):  # stands in for simulate_population: records, trains nothing
        seen.append((spec.group_size, kwargs.get("device", "not given")))
        return pd.DataFrame({"N": [spec.group_size]})

    specs = [TrainSpec(group_size=n) for n in (2, 4)]
    frame = sweep_with(simulate, "population", specs, device, False)
    assert seen == [(2, device), (4, device)]
    assert frame["N"].tolist() == [2, 4]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_a_sweep_asked_for_cuda_on_a_machine_without_it_is_refused():
    """The same mutant seen from the user's side: asked for CUDA where there is none, a sweep must refuse in one
    line naming the device, not train quietly on the CPU (what the default `auto` would do)."""
    from fgrpo_sim.sim.population import PopulationSpec, TrainSpec, make_population, run_sweep

    population = make_population(PopulationSpec(num_prompts=6, seed=2))
    train = TrainSpec(steps=2, eval_every=1, runs=2, prompt_batch=3, group_size=4, pass_k=(1,))
    with pytest.raises(ValueError, match="^device must be cpu or auto on this machine: CUDA is not available$"):
        run_sweep(population, [train], device="cuda")


# --- population_claims.py: the settings table's progress bar ---------------------------------------------------------

class _Terminal(io.StringIO):
    """A stderr that says it is a terminal: progress bars are drawn only on one (fgrpo_sim.progress)."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("progress", [True, False])
def test_the_settings_table_shows_its_progress_bar_when_asked(monkeypatch, progress):
    """settings_table_4 (the bar made with `progress=None`, never drawn): the table trains every setting's five
    variants for 300 steps (a long run), so progress on a terminal must show a bar over the settings, and no
    progress must show none."""
    from fgrpo_sim.sim import population_claims as claims

    stand_in_sweeps(monkeypatch)  # the first sweep raises Captured: the bar has been drawn once by then
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with pytest.raises(Captured):
        claims.settings_table(runs=2, progress=progress)
    shown = terminal.getvalue()
    total = len(claims.SHARED_SETTINGS)
    assert (f"0/{total}" in shown) is progress
    assert (shown == "") is not progress
