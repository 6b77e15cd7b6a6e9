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


# --- checks_exact.py: a tolerance check's closed form is the gap it wants -------------------------------------------

def test_a_gap_checks_closed_form_is_zero_inside_its_bounds():
    """_tolerance_1 (closed_form defaulting to 1): a deterministic check of a measured gap (core's advantages, the
    focal weight on both signs) wants a gap of 0, and `fgrpo check` shows that 0 as its closed form beside the
    bounds [0, allowed]; a passing row showing closed form 1 against bounds [0, 1e-06] reads as a failure."""
    from fgrpo_sim.sim.checks import format_results
    from fgrpo_sim.sim.checks_exact import advantage_checks, focal_sign_checks

    results = advantage_checks(True, 0, "cpu") + focal_sign_checks(True, 0, "cpu")
    assert len(results) == 4 and all(r["kind"] == "tolerance" and r["passed"] for r in results)
    for r in results:
        lo, hi = r["interval"]
        assert r["closed_form"] == 0.0 and lo == 0.0 <= r["estimate"] <= hi
    width = max(len(r["name"]) for r in results)  # the table's closed-form column follows the names
    rows = format_results(results).splitlines()
    assert rows[0][width + 2:width + 14].strip() == "closed form"
    assert [row[width + 2:width + 14].strip() for row in rows[1:5]] == ["0"] * 4


# --- montecarlo.py: Lemma H.1's unconditioned groups are drawn on the device asked for ---------------------------------

@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_masses_given_x_draw_their_groups_on_the_device_asked_for(monkeypatch, device):
    """estimate_masses_given_x_69 (sample_counts called without the device): `fgrpo check --device cuda` must draw
    the lemmaH.1 / corH.2 groups on the GPU (the torch sampler there, the native kernel on the CPU), so every
    chunk's draw must be handed the device the caller chose."""
    from fgrpo_sim.sim import montecarlo

    real, seen = montecarlo.sample_counts, []

    def sample_counts(p, n, groups, seed, device="cpu"):  # records; draws on the CPU whatever it was asked
        seen.append(device)
        return real(p, n, groups, seed, "cpu")

    monkeypatch.setattr(montecarlo, "sample_counts", sample_counts)
    p, correct = [0.4, 0.3, 0.2, 0.1], [True, True, False, False]
    out = montecarlo.estimate_masses_given_x(p, correct, 3, 50, seed=1, device=device)
    assert seen == [device] and out["groups"].sum() == 50


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_masses_given_x_asked_for_cuda_on_a_machine_without_it_is_refused():
    """The same mutant from the user's side: without CUDA, a request for it is refused, not drawn on the CPU."""
    from fgrpo_sim.sim.montecarlo import estimate_masses_given_x

    with pytest.raises(ValueError, match=r"^device must be auto or cpu on this machine \(no CUDA\), got 'cuda'$"):
        estimate_masses_given_x([0.5, 0.5], [True, False], 2, 10, device="cuda")


# --- montecarlo.py: the smoothed m_gamma's standard error ----------------------------------------------------------

@pytest.mark.parametrize("trials, seed", [(3, 0), (5, 4), (8, 11)])
def test_smoothed_lr_multiplier_standard_error_uses_the_sample_variance(trials, seed):
    """estimate_smoothed_lr_multiplier_90 (np.std without ddof=1): the delta-method SE of the ratio estimator is
    sd(w (g - est)) / sqrt(T) / mean(w) with the sample (T - 1) variance, as estimate_lr_multiplier's; at small T
    the population variance shrinks it by sqrt((T - 1) / T), and `fgrpo check`'s normal interval with it. Written
    out here from the docstring's draws (mu ~ U(0, 1), c ~ Bin(N, mu) from numpy's generator at `seed`), binary
    rewards: mean |A| = 2 sqrt(m (1 - m)) with m = c / N, smoothed weight (1 - (c + alpha) / (N + 2 alpha))^gamma."""
    import numpy as np

    from fgrpo_sim.sim.montecarlo import estimate_smoothed_lr_multiplier

    n, gamma, alpha = 4, 1.0, 0.5
    rng = np.random.default_rng(seed)
    c = rng.binomial(n, rng.random(trials))
    m = c / n
    w = 2 * np.sqrt(m * (1 - m))
    g = (1 - (c + alpha) / (n + 2 * alpha)) ** gamma
    assert w.sum() > 0 and np.ptp(g[w > 0]) > 0  # at least one active group, and the weights differ: SE > 0
    est = float(np.sum(w * g) / np.sum(w))
    r = w * (g - est)
    se = float(np.sqrt(np.sum((r - r.mean()) ** 2) / (trials - 1)) / np.sqrt(trials) / np.mean(w))
    got_est, got_se = estimate_smoothed_lr_multiplier(n, gamma, alpha, trials, seed)
    # core divides by std + 1e-6 (about 1e-8 apart from the closed form); sqrt((T - 1) / T) is at most 0.94 here
    assert got_est == pytest.approx(est, rel=1e-6) and got_se == pytest.approx(se, rel=1e-6)
