"""Population simulator: its update is the core's GRPO update per prompt, and a small run's metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fgrpo_sim import core
from fgrpo_sim.sim.population import (PopulationSpec, StepBatch, TrainSpec, final_summary, lemma31_tail_miss,
                                      make_population, population_loss, rare_mass_at_equal_pass1, run_sweep,
                                      simulate_population, sweep_variants)


def _fixed_batch(population, runs=2, batch=3, n=6, seed=1):
    gen = torch.Generator().manual_seed(seed)
    prompts = torch.stack([torch.randperm(population.spec.num_prompts, generator=gen)[:batch] for _ in range(runs)])
    logits = torch.as_tensor(population.initial_logits, dtype=torch.float64)
    probs = torch.softmax(logits[prompts], dim=-1)
    actions = torch.multinomial(probs.reshape(-1, probs.shape[-1]), n, replacement=True, generator=gen)
    return StepBatch(prompts, actions.reshape(runs, batch, n))


def _simulator_grad(population, batch, train):
    init = torch.as_tensor(population.initial_logits, dtype=torch.float64)
    logits = init.expand(batch.prompts.shape[0], -1, -1).clone().requires_grad_(True)
    loss, _, _, _ = population_loss(logits, batch, torch.as_tensor(population.is_correct), train)
    loss.backward()
    return logits.grad


@pytest.mark.parametrize("method", ["grpo", "dapo", "cispo"])
def test_gamma0_update_is_the_core_grpo_update_of_each_prompt(method):
    population = make_population(PopulationSpec(num_prompts=7, beta_a=2, beta_b=2, seed=3))
    batch = _fixed_batch(population)
    runs, size, n = batch.actions.shape
    grad = _simulator_grad(population, batch, TrainSpec(method=method, gamma=0.0, group_size=n, prompt_batch=size))
    is_correct = torch.as_tensor(population.is_correct)
    checked = 0
    for r in range(runs):
        chosen = set(batch.prompts[r].tolist())
        for p in range(population.spec.num_prompts):
            if p not in chosen:  # prompts outside the batch get no gradient at all
                assert torch.all(grad[r, p] == 0)
                continue
            b = batch.prompts[r].tolist().index(p)
            z = torch.as_tensor(population.initial_logits[p], dtype=torch.float64).requires_grad_(True)
            acts = batch.actions[r, b]
            logp = torch.log_softmax(z, -1)[acts][:, None]
            rewards = is_correct[acts].to(torch.float64)[None]
            adv = core.grpo_advantages(rewards)[0]
            loss, _ = core.policy_loss(logp, logp.detach(), adv, torch.ones_like(logp, dtype=torch.bool), "grpo")
            (expected,) = torch.autograd.grad(loss, z)
            # the simulator's token mean runs over the B prompts of the batch: 1/B of the per-group loss
            torch.testing.assert_close(grad[r, p], expected / size, rtol=1e-10, atol=1e-12)
            # and the closed form of the one-token GRPO gradient: -(1/(B N)) sum_j A_j (e_{a_j} - p)
            probs = torch.softmax(z.detach(), -1)
            closed = -(adv[:, None] * (torch.nn.functional.one_hot(acts, z.numel()) - probs)).sum(0) / (size * n)
            torch.testing.assert_close(grad[r, p], closed, rtol=1e-10, atol=1e-12)
            checked += 1
    assert checked == runs * size


def test_focal_weight_scales_each_prompt_update_by_its_group_weight():
    population = make_population(PopulationSpec(num_prompts=7, beta_a=2, beta_b=2, seed=4))
    batch = _fixed_batch(population, n=8, seed=5)
    base = TrainSpec(gamma=0.0, group_size=8, prompt_batch=3)
    g0 = _simulator_grad(population, batch, base)
    g1 = _simulator_grad(population, batch, TrainSpec(gamma=1.5, group_size=8, prompt_batch=3))
    correct = torch.as_tensor(population.is_correct)[batch.actions].to(torch.float64)
    weight = (1 - correct.mean(-1)) ** 1.5  # [R, B]
    for r in range(batch.prompts.shape[0]):
        for b, p in enumerate(batch.prompts[r].tolist()):
            torch.testing.assert_close(g1[r, p], weight[r, b] * g0[r, p], rtol=1e-10, atol=1e-14)


def test_lemma31_torch_matches_theory():
    from fgrpo_sim import theory

    mu = np.array([0.05, 0.3, 0.5, 0.9, 0.999])
    tau = mu * np.array([0.5, 0.1, 0.01, 0.2, 0.05])
    for n in (1, 2, 8, 64):
        ours = lemma31_tail_miss(n, torch.as_tensor(mu), torch.as_tensor(tau)).numpy()
        np.testing.assert_allclose(ours, np.asarray(theory.tail_miss_probability(n, mu, tau), float), atol=1e-12)


def test_population_layout_and_validation():
    population = make_population(PopulationSpec(num_prompts=50, rho=0.05, rho_max=0.2, seed=0))
    masses = np.exp(population.initial_logits)
    np.testing.assert_allclose(masses.sum(1), 1.0)
    np.testing.assert_allclose(masses[:, population.is_correct].sum(1), population.mu_pos)
    np.testing.assert_allclose(masses[:, population.is_rare].sum(1), population.mu_pos * population.rho)
    assert population.rho.min() >= 0.05 and population.rho.max() <= 0.2
    with pytest.raises(ValueError, match="rho must be in"):
        make_population(PopulationSpec(rho=1.5))
    with pytest.raises(ValueError, match="prompt_batch must be in"):
        simulate_population(population, TrainSpec(prompt_batch=51), device="cpu")
    with pytest.raises(ValueError, match="method must be one of"):
        simulate_population(population, TrainSpec(method="ppo"), device="cpu")


SMALL_RUN = dict(prompts=256, steps=300, runs=2, prompt_batch=32, eval_every=20)  # docs/population.md


@pytest.fixture(scope="module")
def small_run():
    """The small run reported in docs/population.md (same settings as its CLI command there)."""
    population = make_population(PopulationSpec(num_prompts=SMALL_RUN["prompts"], seed=0))
    base = TrainSpec(steps=SMALL_RUN["steps"], runs=SMALL_RUN["runs"], prompt_batch=SMALL_RUN["prompt_batch"],
                     eval_every=SMALL_RUN["eval_every"], optimizer="adam", lr=0.05)
    frame = run_sweep(population, sweep_variants(base, [8], [0.0, 1.0]), device="cpu")
    return frame, final_summary(frame).set_index("variant")


def test_small_run_tidy_table(small_run):
    frame, _ = small_run
    assert set(frame["bucket"]) == {"mu0 0-0.2", "mu0 0.2-0.5", "mu0 0.5-0.8", "mu0 0.8-1", "all"}
    evaluations = SMALL_RUN["steps"] // SMALL_RUN["eval_every"] + 1
    assert set(frame["step"]) == set(range(0, SMALL_RUN["steps"] + 1, SMALL_RUN["eval_every"]))
    assert len(frame) == 3 * SMALL_RUN["runs"] * evaluations * 5  # variants x runs x evaluations x buckets
    first = frame[frame["step"] == 0]
    assert first["rare_mass_retained"].dropna().eq(1.0).all() and first["tail_miss_observed"].isna().all()
    np.testing.assert_allclose(frame["pass@1"], frame["correct_mass"])


def test_small_run_shows_the_papers_qualitative_effect(small_run):
    frame, summary = small_run
    grpo, focal, low_lr = summary.loc["GRPO"], summary.loc["F-GRPO gamma=1"], summary.loc["GRPO low-LR (x m_1)"]
    # Everything learns: pass@1 rises from its initial ~0.52; GRPO at N = 8 sheds rare-correct mass.
    assert min(grpo["pass@1"], focal["pass@1"], low_lr["pass@1"]) > 0.8
    assert grpo["rare_mass_retained"] < 0.6
    level, kept = rare_mass_at_equal_pass1(frame)
    assert level > 0.8
    # At equal pass@1, focal weighting keeps more rare-correct mass than GRPO and than the low-LR control.
    assert kept["F-GRPO gamma=1"] > kept["GRPO"] + 0.05
    assert kept["F-GRPO gamma=1"] > kept["GRPO low-LR (x m_1)"] + 0.03


def test_observed_tail_miss_matches_lemma31(small_run):
    frame, _ = small_run
    rows = frame[(frame["bucket"] == "all") & (frame["step"] > 0)]
    weights = rows["groups"]
    observed = np.average(rows["tail_miss_observed"], weights=weights)
    predicted = np.average(rows["tail_miss_predicted"], weights=weights)
    # 3 variants x 2 runs x 300 steps x 32 groups = 58k groups: binomial sd ~ 0.002
    assert abs(observed - predicted) < 0.012


def test_cli_writes_a_tidy_table(run_cli, tmp_path):
    import pandas as pd

    out = tmp_path / "pop.parquet"
    result = run_cli("simulate", "population", "--prompts", "24", "--n", "2,4", "--gamma", "0,0.5", "--steps", "6",
                     "--prompt-batch", "8", "--runs", "2", "--eval-every", "3", "--method", "dapo",
                     "--updates-per-step", "2", "--device", "cpu", "--no-progress", "--out", out)
    assert result.exit_code == 0, result.stderr
    frame = pd.read_parquet(out)
    assert set(frame["variant"]) == {"DAPO", "F-DAPO gamma=0.5", "DAPO low-LR (x m_0.5)"}
    assert set(frame["N"]) == {2, 4} and set(frame["step"]) == {0, 3, 6}
    low = frame[frame["variant"] == "DAPO low-LR (x m_0.5)"]["lr"].iloc[0]
    assert low == pytest.approx(0.05 * 0.6790610905254201)
    assert "wrote" in result.stdout


@pytest.mark.parametrize("args,fragment", [
    (["--beta", "1"], "--beta must be two numbers"),
    (["--prompt-batch", "100", "--prompts", "10"], "--prompt-batch must be in"),
    (["--method", "ppo"], "method must be one of"),
    (["--gamma", "-1"], "gamma must be in"),
    (["--seed", "-1"], "seed must be in [0, "),
    (["--n", "4.5"], "--n must be a comma-separated list of integers"),
    (["--reward-wrong", "nan"], "--reward-wrong must be in"),
])
def test_cli_bad_input_is_one_line(run_cli, tmp_path, args, fragment):
    _assert_one_line_cli_error(run_cli, args, fragment, tmp_path / "x.parquet")


def _assert_one_line_cli_error(run_cli, args, fragment, out):
    result = run_cli("simulate", "population", *args, "--steps", "1", "--no-progress", "--device", "cpu", "--out", out)
    assert result.exit_code == 2 and fragment in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert not out.exists()


def test_at_n2_focal_weight_is_a_constant_step_scale():
    """Every active group of two has mu_hat = 1/2, so g = 0.5^gamma for all of them: with SGD F-GRPO
    equals GRPO at lr * 0.5^gamma step for step; Adam ignores a constant gradient scale (up to eps)."""
    population = make_population(PopulationSpec(num_prompts=32, seed=2))
    common = dict(group_size=2, steps=20, runs=2, prompt_batch=8, eval_every=10, seed=3)
    columns = ["pass@1", "rare_mass", "retained_correct_mass", "tail_miss_observed", "active_fraction"]

    def run(**kw):
        return simulate_population(population, TrainSpec(**common, **kw), device="cpu")[columns]

    sgd_focal = run(optimizer="sgd", lr=40.0, gamma=1.0)
    sgd_small_step = run(optimizer="sgd", lr=20.0, gamma=0.0)
    import pandas as pd

    pd.testing.assert_frame_equal(sgd_focal, sgd_small_step)
    assert not np.allclose(sgd_focal["pass@1"], run(optimizer="sgd", lr=40.0, gamma=0.0)["pass@1"])
    adam_focal, adam_plain = run(optimizer="adam", lr=0.05, gamma=1.0), run(optimizer="adam", lr=0.05, gamma=0.0)
    np.testing.assert_allclose(adam_focal.to_numpy(), adam_plain.to_numpy(), atol=1e-4, equal_nan=True)


def test_cli_unwritable_out_fails_before_simulating(run_cli, tmp_path, monkeypatch):
    import fgrpo_sim.sim.population as population

    monkeypatch.setattr(population, "run_sweep", lambda *a, **k: pytest.fail("simulated despite a bad --out"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run_cli("simulate", "population", "--steps", "1", "--no-progress", "--device", "cpu",
                     "--out", blocker / "x.csv")
    assert result.exit_code == 2 and "--out" in result.stderr and "is a file, not a folder" in result.stderr


# ------------------------------------------------------------------ shared-parameter population

from fgrpo_sim.sim.population_shared import (SharedPolicy, SharedPopulationSpec, at_equal_pass1,  # noqa: E402
                                             best_checkpoint, equal_pass1_by_run,
                                             make_shared_population, run_shared_sweep, shared_population_loss,
                                             shared_summary, simulate_shared_population)


def _shared_batch(population, runs=2, batch=4, n=6, seed=7):
    gen = torch.Generator().manual_seed(seed)
    prompts = torch.stack([torch.randperm(population.spec.num_prompts, generator=gen)[:batch] for _ in range(runs)])
    actions = torch.randint(population.spec.num_strategies, (runs, batch, n), generator=gen)
    return StepBatch(prompts, actions)


def _core_grad_of_each_prompt(population, batch, gamma):
    """Per (run, slot) gradient of the core's single-group loss w.r.t. the shared logits s, with z_p = s + o_p."""
    correct = torch.as_tensor(population.correct["train"])
    grads = {}
    for r in range(batch.prompts.shape[0]):
        for b, p in enumerate(batch.prompts[r].tolist()):
            s = torch.as_tensor(population.shared_init, dtype=torch.float64).requires_grad_(True)
            z = s + torch.as_tensor(population.offsets["train"][p], dtype=torch.float64)
            acts = batch.actions[r, b]
            logp = torch.log_softmax(z, -1)[acts][:, None]
            rewards = correct[p, acts].to(torch.float64)[None]
            adv = core.focal_advantages(core.grpo_advantages(rewards), core.group_success_rate(rewards), gamma)[0]
            loss, _ = core.policy_loss(logp, logp.detach(), adv, torch.ones_like(logp, dtype=torch.bool), "grpo")
            (grads[r, b],) = torch.autograd.grad(loss, s)
    return grads


@pytest.mark.parametrize("gamma", [0.0, 1.0])
@pytest.mark.parametrize("trainable", [False, True])
def test_shared_gradient_is_the_sum_of_core_grpo_gradients_of_the_batch(gamma, trainable):
    population = make_shared_population(SharedPopulationSpec(num_prompts=9, heldout_prompts=3, rare_strategies=5,
                                                             rare_only_share=0.3, trainable_offsets=trainable,
                                                             seed=1))
    batch = _shared_batch(population)
    runs, size, n = batch.actions.shape
    policy = SharedPolicy(population, runs, "cpu", torch.float64)
    train = TrainSpec(gamma=gamma, group_size=n, prompt_batch=size)
    loss, _, _, rewards = shared_population_loss(policy, batch, torch.as_tensor(population.correct["train"]), train)
    loss.backward()
    assert core.active_groups(rewards).any()  # the check is not vacuous
    expected = _core_grad_of_each_prompt(population, batch, gamma)
    for r in range(runs):
        # shared logits: the token mean over the batch is 1/B of the sum of the per-group core gradients
        torch.testing.assert_close(policy.shared.grad[r], sum(expected[r, b] for b in range(size)) / size,
                                   rtol=1e-10, atol=1e-13)
        if trainable:  # a prompt's own offset gets exactly its group's gradient; unbatched prompts none
            for p in range(population.spec.num_prompts):
                slots = [b for b, q in enumerate(batch.prompts[r].tolist()) if q == p]
                want = expected[r, slots[0]] / size if slots else torch.zeros(population.spec.num_strategies,
                                                                             dtype=torch.float64)
                torch.testing.assert_close(policy.local.grad[r, p], want, rtol=1e-10, atol=1e-13)


def test_shared_population_layout_and_validation():
    spec = SharedPopulationSpec(num_prompts=200, heldout_prompts=100, common_strategies=3, rare_strategies=6,
                                wrong_strategies=5, rare_only_share=0.3, rare_only_strategies=2, seed=2)
    population = make_shared_population(spec)
    for split, count in (("train", 200), ("heldout", 100)):
        correct, kind, rare_only = population.correct[split], population.kind, population.prompt_type[split] == 1
        assert correct.shape == (count, 14) and not correct[:, kind == 2].any()  # wrong strategies never correct
        assert (correct[rare_only][:, kind == 0].sum(1) == 0).all()
        assert (correct[rare_only][:, kind == 1].sum(1) == 2).all()
        assert (correct[~rare_only][:, kind == 0].sum(1) >= 1).all()
        assert 0.15 < rare_only.mean() < 0.45
        np.testing.assert_allclose(population.initial_probs(split).sum(1), 1.0)
    np.testing.assert_allclose(np.exp(population.shared_init)[kind == 1].sum(), 0.15)
    with pytest.raises(ValueError, match="rare_mass must be in"):
        make_shared_population(SharedPopulationSpec(common_mass=0.9, rare_mass=0.2))
    with pytest.raises(ValueError, match="rare_only_strategies must be in"):
        make_shared_population(SharedPopulationSpec(rare_strategies=2, rare_only_strategies=3))


def test_shared_run_trains_through_core_and_grpo_lowers_heldout_pass256(monkeypatch):
    """A small run of the documented setting: every update goes through core.policy_loss; GRPO raises
    held-out pass@1 while lowering held-out pass@256 (the shared logits sharpen onto common strategies)."""
    import fgrpo_sim.sim.population_shared as shared

    calls = []
    real = core.policy_loss

    def counting(*args, **kwargs):
        calls.append(kwargs.get("method", args[4] if len(args) > 4 else None))
        return real(*args, **kwargs)

    monkeypatch.setattr(shared.core, "policy_loss", counting)
    population = make_shared_population(SharedPopulationSpec(num_prompts=128, heldout_prompts=128, seed=0))
    train = TrainSpec(group_size=8, steps=150, runs=2, prompt_batch=32, eval_every=50, lr=0.01, seed=0)
    frame = run_shared_sweep(population, sweep_variants(train, [8], [0.0, 1.0]), device="cpu")
    assert len(calls) == 3 * 150 and set(calls) == {"grpo"}
    assert set(frame["split"]) == {"train", "heldout"} and set(frame["bucket"]) == {"common-solvable", "rare-only", "all"}
    start = frame[(frame["step"] == 0) & (frame["split"] == "heldout") & (frame["bucket"] == "all")]
    final = shared_summary(frame, "heldout").set_index("variant")
    assert final.loc["GRPO", "pass@1"] > start["pass@1"].mean() + 0.05
    assert final.loc["GRPO", "pass@256"] < start["pass@256"].mean() - 0.05
    rare_only = shared_summary(frame, "heldout", "rare-only").set_index("variant")
    assert rare_only.loc["GRPO", "rare_mass_retained"] < 0.7
    level, values = at_equal_pass1(frame, split="heldout")
    assert level > start["pass@1"].mean() and all(math.isfinite(v) for v in values.values())
    run_level, table = equal_pass1_by_run(frame)
    assert run_level <= level and (table["runs"] == 2).all() and table["mean"].between(0, 1).all()
    best = best_checkpoint(frame).set_index("variant")
    assert best.loc["GRPO", "pass@1"] >= final.loc["GRPO", "pass@1"] and set(best["step"]) <= set(frame["step"])


def test_shared_cli_writes_splits(run_cli, tmp_path):
    import pandas as pd

    out = tmp_path / "shared.csv"
    result = run_cli("simulate", "population", "--sharing", "shared", "--prompts", "16", "--heldout-prompts", "8",
                     "--n", "4", "--gamma", "0,0.5", "--steps", "4", "--prompt-batch", "4", "--runs", "2",
                     "--eval-every", "2", "--trainable-offsets", "--device", "cpu", "--no-progress", "--out", out)
    assert result.exit_code == 0, result.stderr
    frame = pd.read_csv(out)
    assert set(frame["split"]) == {"train", "heldout"} and set(frame["step"]) == {0, 2, 4}
    assert frame["trainable_offsets"].all() and frame["lr"].max() == pytest.approx(0.01)
    assert "heldout prompts" in result.stdout and "first reaches" in result.stdout
    bad = run_cli("simulate", "population", "--sharing", "shared", "--strategies", "4,12", "--steps", "1",
                  "--no-progress", "--device", "cpu", "--out", tmp_path / "x.csv")
    assert bad.exit_code == 2 and "--strategies must be three integers" in bad.stderr
    bad = run_cli("simulate", "population", "--sharing", "both", "--steps", "1", "--no-progress", "--out",
                  tmp_path / "x.csv")
    assert bad.exit_code == 2 and "--sharing must be one of" in bad.stderr


def test_empty_pass_k_is_a_named_error():
    from fgrpo_sim.sim.population import TrainSpec

    with pytest.raises(ValueError, match="^pass_k must list at least one k"):
        TrainSpec(pass_k=(), prompt_batch=4).validate(10)


@pytest.mark.parametrize("sharing,args,fragment", [
    ("shared", ["--rho", "0.2"], "--rho applies only to --sharing per-prompt; it is not used with --sharing shared"),
    ("shared", ["--beta", "1,1"], "--beta applies only to --sharing per-prompt"),
    ("shared", ["--rho-max", "0.5"], "--rho-max applies only to --sharing per-prompt"),
    ("shared", ["--actions", "2,2,4"], "--actions applies only to --sharing per-prompt"),
    ("per-prompt", ["--strategies", "4,12,8"],
     "--strategies applies only to --sharing shared; it is not used with --sharing per-prompt"),
    (None, ["--heldout-prompts", "8"], "--heldout-prompts applies only to --sharing shared"),  # default mode
    ("per-prompt", ["--fixed-offsets"], "--trainable-offsets/--fixed-offsets applies only to --sharing shared"),
    ("per-prompt", ["--offset-scale", "1"], "--offset-scale applies only to --sharing shared"),
])
def test_cli_option_of_the_other_sharing_mode_is_an_error(run_cli, tmp_path, monkeypatch, sharing, args, fragment):
    """A mode-specific option given with the other mode (even at its default value) is named, not ignored."""
    import fgrpo_sim.sim.population as population
    import fgrpo_sim.sim.population_shared as population_shared

    for module, name in ((population, "run_sweep"), (population_shared, "run_shared_sweep")):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("simulated despite an option of the other mode"))
    mode = ["--sharing", sharing] if sharing else []
    _assert_one_line_cli_error(run_cli, [*mode, *args], fragment, tmp_path / "x.csv")


def test_float64_training_with_an_inexact_wrong_reward():
    """Rewards are made in the training dtype: a float32 -0.3 widened to float64 fell outside
    [reward_wrong, reward_correct] and the first step raised."""
    population = make_population(PopulationSpec(num_prompts=8, seed=1))
    train = TrainSpec(group_size=4, steps=2, prompt_batch=4, runs=1, eval_every=1, reward_wrong=-0.3)
    frame = simulate_population(population, train, device="cpu", dtype=torch.float64)
    assert list(frame[frame["bucket"] == "all"]["step"]) == [0, 1, 2] and frame["pass@1"].notna().all()


@pytest.mark.parametrize("shared", [False, True])
def test_the_step_loop_never_reads_the_device(monkeypatch, shared):
    """Issue 30 item 2: no .item() / .tolist() / bool(tensor) / int(tensor) inside a step of either population
    simulator (on a GPU each read waits for the device); the reads happen at the evaluations only."""
    from fgrpo_sim.sim.population import make_population, simulate_population
    from fgrpo_sim.sim.population_shared import make_shared_population, simulate_shared_population

    import sys

    reads = []
    for name in ("item", "tolist", "__bool__", "__int__", "__float__", "__index__"):
        real = getattr(torch.Tensor, name)

        def spy(self, *a, _real=real, _name=name, **k):
            # torch.optim's Adam reads its step counter, which it keeps on the host (not capturable): no device wait
            if "torch/optim/" not in sys._getframe(1).f_code.co_filename.replace("\\", "/"):
                reads.append(_name)
            return _real(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, spy)
    if shared:
        population, simulate = make_shared_population(SharedPopulationSpec(num_prompts=64, seed=0)), simulate_shared_population
    else:
        population, simulate = make_population(PopulationSpec(num_prompts=64, seed=0)), simulate_population

    def count(steps):
        reads.clear()
        simulate(population, TrainSpec(steps=steps, runs=2, prompt_batch=8, eval_every=1000, optimizer="adam",
                                       lr=0.05), device="cpu", progress=False)
        return len(reads)

    assert count(12) == count(2)  # ten more steps, not one more host read
