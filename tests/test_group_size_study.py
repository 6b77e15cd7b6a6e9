"""Issue 21, item 2: the batched group-size engine against the shared-population simulator and torch's Adam."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from fgrpo_sim.sim.group_size_study import (DEFAULT_POPULATION, GroupSizeStudySpec, RowAdam, advantage_tables,
                                            final_rows, logit_gradient, predicted_dips, run_study, sample_counts)
from fgrpo_sim.sim.population import StepBatch, TrainSpec
from fgrpo_sim.sim.population_shared import SharedPolicy, make_shared_population, shared_population_loss


@pytest.mark.parametrize("n,gamma", [(2, 0.0), (8, 0.0), (8, 1.0), (32, 0.5)])
def test_count_gradient_equals_the_core_loss_through_autograd(n, gamma):
    torch.set_default_dtype(torch.float64)
    try:
        pop = make_shared_population(replace(DEFAULT_POPULATION, num_prompts=16, heldout_prompts=0, seed=3))
        policy = SharedPolicy(pop, runs=1, device="cpu", dtype=torch.float64)
        with torch.no_grad():
            policy.shared += 0.3 * torch.randn_like(policy.shared)
        gen = torch.Generator().manual_seed(1)
        prompts = torch.randperm(16, generator=gen)[:6][None]
        probs = torch.softmax(policy.logits(prompts).detach(), -1)
        actions = torch.multinomial(probs[0], n, replacement=True, generator=gen)[None]
        correct = torch.as_tensor(pop.correct["train"])
        train = TrainSpec(group_size=n, gamma=gamma, prompt_batch=6, runs=1)
        loss, _, _, _ = shared_population_loss(policy, StepBatch(prompts, actions), correct, train)
        loss.backward()
        counts = torch.zeros_like(probs).scatter_add_(-1, actions, torch.ones_like(probs[..., :1]).expand_as(actions).clone())
        corr = correct[prompts]
        x = (counts * corr).sum(-1).long()
        a_c, a_w = advantage_tables([(n, gamma)], n)
        grad = logit_gradient(probs, counts, a_c[0][x], a_w[0][x], corr, torch.tensor([n]))
        torch.testing.assert_close(grad, policy.shared.grad, rtol=1e-9, atol=1e-12)
    finally:
        torch.set_default_dtype(torch.float32)


def test_row_adam_equals_torch_adam_with_one_lr_per_row():
    params = torch.randn(3, 5, dtype=torch.float64)
    lrs = torch.tensor([0.1, 0.01, 0.003], dtype=torch.float64)
    ours = params.clone()
    adam = RowAdam(ours.shape, lrs)
    refs = [torch.nn.Parameter(params[i].clone()) for i in range(3)]
    opts = [torch.optim.Adam([p], lr=float(lrs[i])) for i, p in enumerate(refs)]
    gen = torch.Generator().manual_seed(0)
    for step in range(6):
        grad = torch.randn(3, 5, dtype=torch.float64, generator=gen)
        rows = torch.tensor([0, 1, 2]) if step < 3 else torch.tensor([0, 2])  # row 1 frozen after 3 steps
        adam.step(ours, grad[rows], rows)
        for i in rows.tolist():
            opts[i].zero_grad()
            refs[i].grad = grad[i].clone()
            opts[i].step()
    torch.testing.assert_close(ours, torch.stack([p.detach() for p in refs]), rtol=1e-12, atol=1e-14)


def test_counts_are_multinomial():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]], dtype=torch.float64).expand(20_000, -1)
    counts = sample_counts(probs, torch.full((20_000,), 16.0), torch.Generator().manual_seed(0))
    assert torch.all(counts.sum(-1) == 16) and torch.all(counts >= 0)
    torch.testing.assert_close(counts.mean(0), 16 * probs[0], atol=0.05, rtol=0)
    torch.testing.assert_close(counts.var(0), 16 * probs[0] * (1 - probs[0]), atol=0.1, rtol=0.05)


def test_small_study_layout_and_pairing():
    spec = GroupSizeStudySpec(group_sizes=(2, 8), rare_masses=(0.02,), gammas=(1.0,), seeds=2, steps=8,
                              eval_every=4, population=replace(DEFAULT_POPULATION, num_prompts=32, heldout_prompts=32))
    frame = run_study(spec)
    final = final_rows(frame)
    # 2 optimizers x 2 views x 2 N x 3 variants x 2 seeds
    assert len(final) == 48
    assert sorted(set(final[final["optimizer"] == "sgd"]["lr"].round(9))) == [1.0, 2.0]  # sgd_lr and its m_1 control
    eq = final[final["view"] == "equal-rollouts"].set_index("N")["steps"]
    assert eq.loc[2].iloc[0] == 32 and eq.loc[8].iloc[0] == 8  # 8 x 8 / N steps
    assert set(final["variant"]) == {"GRPO", "F-GRPO gamma=1", "GRPO low-LR (x m_1)"}
    start = frame[frame["step"] == 0]
    assert np.allclose(start["train_dnll_rare"], 0.0)
    assert start.groupby("seed")["heldout_pass@256"].nunique().max() == 1  # same population for every row
    assert final["heldout_pass@256"].between(0, 1).all() and np.isfinite(final["train_dnll_rare"]).all()
    assert predicted_dips(spec) == {0.02: 8}


def test_study_spec_validation():
    with pytest.raises(ValueError, match="views"):
        GroupSizeStudySpec(views=("equal-flops",)).validate()
    with pytest.raises(ValueError, match="rare_masses"):
        GroupSizeStudySpec(rare_masses=(0.5,)).validate()
