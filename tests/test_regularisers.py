"""Table 3's entropy and KL-to-start controls in the group-size study's trainer (sim.regularisers)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from fgrpo_sim.sim import group_size_study as gs
from fgrpo_sim.sim.regularisers import ds_gradient, entropy_kl_gradient

TINY = gs.GroupSizeStudySpec(group_sizes=(2, 8), rare_masses=(0.02,), gammas=(0.5,), optimizers=("adam",),
                             parametrisations=("orthogonal",), populations=2, seeds=1, steps=3, prompt_batch=4,
                             adam_lrs=(0.01,), eval_every=3)


@pytest.mark.parametrize("c_h, c_kl", [(0.3, 0.0), (0.0, 0.7), (0.2, 0.5)])
def test_gradient_equals_autograd_of_entropy_and_kl(c_h, c_kl):
    torch.manual_seed(0)
    z = torch.randn(3, 4, 6, dtype=torch.float64, requires_grad=True)  # rows, prompts, strategies
    z0 = torch.randn(3, 4, 6, dtype=torch.float64)
    logp, logp0 = torch.log_softmax(z, -1), torch.log_softmax(z0, -1)
    entropy = -(logp.exp() * logp).sum(-1).mean(1)  # mean over the batch, per row
    kl = (logp.exp() * (logp - logp0)).sum(-1).mean(1)
    (-c_h * entropy + c_kl * kl).sum().backward()
    coef = lambda c: torch.full((3,), c, dtype=torch.float64)
    ours = entropy_kl_gradient(logp.detach(), logp0, coef(c_h), coef(c_kl))
    # the trainer's gradient is per shared logit vector: the sum over the batch of d/dz_b
    assert torch.allclose(ours, z.grad.sum(1), atol=1e-12)


@pytest.mark.parametrize("g_p, g_n", [(0.1, 0.0), (0.0, 0.2), (0.05, 0.3)])
def test_ds_gradient_equals_autograd_of_eq6(g_p, g_n):
    """Eq. 6 in count form: -(1/(B N)) sum_k c_k (A_k - g_p log p_k [correct] + g_n log p_k [wrong]) log p_k with
    the advantages detached; ds_gradient is the shift's part (the A_k part is logit_gradient's)."""
    torch.manual_seed(1)
    rows, batch, k, n = 2, 3, 5, 8
    z = torch.randn(rows, batch, k, dtype=torch.float64, requires_grad=True)
    probs = torch.softmax(z, -1).detach()
    counts = torch.distributions.Multinomial(n, probs=probs).sample().to(torch.float64)
    correct = torch.rand(rows, batch, k) < 0.5
    logp = torch.log_softmax(z, -1)
    shift = torch.where(correct, -g_p * logp, g_n * logp).detach()
    (-(counts * shift * logp).sum() / (batch * n)).backward()
    coef = lambda c: torch.full((rows,), c, dtype=torch.float64)
    ours = ds_gradient(probs, counts, logp.detach(), correct, coef(g_p), coef(g_n), torch.full((rows,), n))
    assert torch.allclose(ours, z.grad.sum(1), atol=1e-12)


def test_kl_gradient_vanishes_at_the_start_and_entropy_pushes_towards_uniform():
    logp = torch.log_softmax(torch.tensor([[[2.0, 0.0, -1.0]]], dtype=torch.float64), -1)
    one, zero = torch.ones(1, dtype=torch.float64), torch.zeros(1, dtype=torch.float64)
    assert torch.equal(entropy_kl_gradient(logp, logp, zero, one), torch.zeros(1, 3, dtype=torch.float64))
    step = -entropy_kl_gradient(logp, logp, one, zero)  # descent direction
    assert step[0, 0] < 0 < step[0, 2]  # the likeliest strategy loses logit, the least likely gains


def test_no_coefficient_keeps_the_fingerprint_and_the_rows():
    """Off by default: the chunk ids recorded before the controls existed (main at ed7c35e), and the rows of a
    run without controls equal bit for bit the GRPO / F-GRPO / low-LR rows of the same run with them."""
    spec = gs.GroupSizeStudySpec()
    assert gs.chunk_id(spec, "adam", "orthogonal") == "rare_correct_prob=1/adam/orthogonal#ff9785c82677"
    assert gs.chunk_id(spec, "adam", "axis") == "rare_correct_prob=1/adam/axis#08776576373c"
    plain = gs.final_rows(gs.train_chunk(TINY, "adam", "orthogonal", "cpu"))
    both = gs.final_rows(gs.train_chunk(replace(TINY, entropy_coefs=(1e-3, 0.5), kl_coefs=(0.2,),
                                                ds_coefs=((0.1, 0.1), (0.2, 0.0))), "adam", "orthogonal", "cpu"))
    assert set(both["variant"]) - set(plain["variant"]) == {"GRPO entropy=0.001", "GRPO entropy=0.5",
                                                             "GRPO KL=0.2", "GRPO DS=0.1,0.1", "GRPO DS=0.2,0"}
    cols = ["variant", "N", "population", "train_pass@1", "heldout_pass@1", "heldout_pass@256", "train_dnll_rare"]
    key = ["variant", "N", "population"]
    mine = both[both["variant"].isin(set(plain["variant"]))][cols].sort_values(key).reset_index(drop=True)
    theirs = plain[cols].sort_values(key).reset_index(drop=True)
    for c in cols[3:]:
        assert torch.equal(torch.as_tensor(mine[c].to_numpy().copy()), torch.as_tensor(theirs[c].to_numpy().copy()))


def test_controls_move_the_policy_their_way():
    """A large entropy bonus keeps more entropy than GRPO; a large KL keeps dNLL_rare nearer zero."""
    spec = replace(TINY, steps=30, eval_every=30, prompt_batch=16, low_lr=False, entropy_coefs=(1.0,),
                   kl_coefs=(5.0,), adam_lrs=(0.05,), group_sizes=(8,))
    rows = gs.final_rows(gs.train_chunk(spec, "adam", "orthogonal", "cpu"))
    mean = rows.groupby("variant")[["train_dnll_rare", "train_pass@1"]].mean()
    assert abs(mean.loc["GRPO KL=5", "train_dnll_rare"]) < abs(mean.loc["GRPO", "train_dnll_rare"])
    # GRPO sharpens (pass@1 up); the entropy bonus holds the policy nearer uniform, so it sharpens less
    assert mean.loc["GRPO entropy=1", "train_pass@1"] < mean.loc["GRPO", "train_pass@1"]


def test_ds_rewards_unlikely_correct_strategies():
    """DS-GRPO's gamma_p lifts correct rollouts of low log-prob most: it keeps more rare mass than GRPO (dNLL_rare
    lower), the smoothing its name says."""
    spec = replace(TINY, steps=30, eval_every=30, prompt_batch=16, low_lr=False, ds_coefs=((1.0, 0.0),),
                   adam_lrs=(0.05,), group_sizes=(8,))
    rows = gs.final_rows(gs.train_chunk(spec, "adam", "orthogonal", "cpu"))
    mean = rows.groupby("variant")["train_dnll_rare"].mean()
    assert mean["GRPO DS=1,0"] < mean["GRPO"]


@pytest.mark.parametrize("field, value, message", [
    ("entropy_coefs", (0.0,), "entropy_coefs must be in"), ("kl_coefs", (-1.0,), "kl_coefs must be in"),
    ("kl_coefs", (0.1, 0.1), "kl_coefs must list each value once"),
    ("ds_coefs", ((0.0, 0.0),), "positive gamma_p or gamma_n"), ("ds_coefs", ((0.1,),), "pairs"),
    ("ds_coefs", ((0.1, -0.1),), "ds_coefs must be in")])
def test_bad_coefficients_name_their_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        replace(TINY, **{field: value}).validate()


def test_study_rows_name_the_controls():
    table = gs.study_rows(replace(TINY, low_lr=False, entropy_coefs=(1e-4,), kl_coefs=(1e-2,)))
    assert set(table["variant"]) == {"GRPO", "F-GRPO gamma=0.5", "GRPO entropy=0.0001", "GRPO KL=0.01"}
    controls = table[table["variant"].str.contains("entropy|KL")]
    assert (controls["gamma"] == 0).all() and (controls["lr"] == 0.01).all()
