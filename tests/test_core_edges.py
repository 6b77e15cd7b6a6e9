"""Core at its edges: the exact error messages, the boundaries of every range, the defaults, and the loss statistics
on tokens built to sit exactly on a clipping bound. Written against mutmut's survivors (benchmarks/mutation.py):
each assertion here failed on a mutant that the other core tests let through. Expected values are exact (0/1
ratios, hand-counted fractions) or closed forms evaluated with math in float64."""

import math
import re

import pytest
import torch

import fgrpo_sim.theory as theory
from fgrpo_sim.core import (
    compute_advantages,
    focal_advantages,
    focal_metrics,
    focal_weight,
    group_success_rate,
    grpo_advantages,
    policy_loss,
    rloo_advantages,
    success_rate_from_counts,
)
from fgrpo_sim.core._checks import as_float_tensor
from fgrpo_sim.core.focal_metrics import _tail_miss_table, mean_tail_miss

F64 = torch.float64
LOGP = torch.zeros(2, 3, dtype=F64)
MASK = torch.ones(2, 3, dtype=torch.bool)


def _loss(**kwargs):
    args = dict(logp=LOGP, old_logp=LOGP, advantages=torch.ones(2, dtype=F64), mask=MASK)
    args.update(kwargs)
    return policy_loss(**args)


BAD_INPUTS = [
    (lambda: focal_weight("x", 1.0), "mu_hat must be a tensor or an array of numbers, got 'x'"),
    (lambda: focal_weight([0.5], "g"), "gamma must be a number, got 'g'"),
    (lambda: focal_weight([0.5], -1.0), "gamma must be in [0, inf], got -1"),
    # the first value outside [0, 1] is named, not a boundary value before it
    (lambda: focal_weight([0.0, 1.0, 0.5, 1.5], 1.0), "mu_hat must be in [0, 1], got 1.5"),
    (lambda: focal_advantages("x", [0.5], 1.0), "advantages must be a tensor or an array of numbers, got 'x'"),
    (lambda: focal_advantages([1.0, 2.0, 3.0], [0.5], 1.0), "advantages must be shaped [groups, N], got shape (3,)"),
    (lambda: focal_advantages([[1.0, 2.0]], "x", 1.0), "mu_hat must be a tensor or an array of numbers, got 'x'"),
    (lambda: focal_advantages(torch.zeros(2, 3), [0.5, 0.5, 0.5], 1.0),
     "mu_hat must be shaped [groups] = [2], got shape (3,)"),
    (lambda: group_success_rate([[1.0]], reward_correct="a"), "reward_correct must be a number, got 'a'"),
    (lambda: group_success_rate([[1.0]], reward_wrong=math.nan), "reward_wrong must be in [-inf, inf], got nan"),
    (lambda: group_success_rate([[1.0]], reward_correct=math.inf), "reward_correct must be in [-inf, inf], got inf"),
    # N = 1 still has its rewards range-checked; the first value outside is named
    (lambda: group_success_rate([[2.0]]),
     "rewards must be in [0, 1] (between reward_wrong and reward_correct), got 2"),
    (lambda: group_success_rate([[0.0, 1.0, 2.0]]),
     "rewards must be in [0, 1] (between reward_wrong and reward_correct), got 2"),
    (lambda: group_success_rate(torch.zeros(2, 0)), "rewards must have group size N >= 1, got N = 0"),
    (lambda: grpo_advantages([[0.0, math.inf]]), "rewards must be finite, got NaN or inf"),
    (lambda: grpo_advantages([[0.0, 1.0]], eps=-1.0), "eps must be in [0, inf], got -1"),
    (lambda: rloo_advantages([[1.0]]), "rewards must have group size N >= 2 for RLOO, got N = 1"),
    (lambda: success_rate_from_counts(torch.tensor([1.5]), 4), "correct_counts must be integers"),
    (lambda: success_rate_from_counts(torch.tensor([1]), 2.5), "group_size must be an integer"),
    (lambda: success_rate_from_counts(torch.tensor([0]), 0), "group_size must be >= 1, got 0"),
    (lambda: success_rate_from_counts(torch.tensor([-1]), 4), "correct_counts must be in [0, group_size]"),
    (lambda: success_rate_from_counts(torch.tensor([5]), 4), "correct_counts must be in [0, group_size]"),
    (lambda: focal_metrics(torch.tensor(0.5), [0.5], [True], 4, gamma=1.0, rho=0.1),
     "weight must hold one value per group, got a scalar"),
    (lambda: focal_metrics([0.5], torch.tensor(0.5), [True], 4, gamma=1.0, rho=0.1),
     "mu_hat must hold one value per group, got a scalar"),
    (lambda: focal_metrics([0.5], [0.5], torch.tensor(True), 4, gamma=1.0, rho=0.1),
     "active must hold one value per group, got a scalar"),
    (lambda: focal_metrics([0.5], [0.5], [True], 4, gamma=1.0, rho=1.5), "rho must be in [0, 1], got 1.5"),
    (lambda: focal_metrics([], [], [], 4, gamma=1.0, rho=1.5), "rho must be in [0, 1], got 1.5"),  # no group: {} else
    (lambda: policy_loss([[0.0]], [[0.0]], [1.0], [[1]]), "logp must be a floating-point torch tensor shaped [batch, T]"),
    (lambda: policy_loss(torch.zeros(1, 1, dtype=torch.long), [[0.0]], [1.0], [[1]]),
     "logp must be a floating-point torch tensor shaped [batch, T]"),
    (lambda: _loss(old_logp="x"), "old_logp must be a tensor or an array of numbers, got 'x'"),
    (lambda: _loss(advantages="x"), "advantages must be a tensor or an array of numbers, got 'x'"),
    (lambda: _loss(mask=[[1, 2, 1], [1, 1, 1]]), "mask must contain only 0/1 (or bool) values"),
    (lambda: _loss(advantages=[1.0, 1.0, 1.0]),
     "advantages must be shaped [batch] = [2] or [batch, T] = [2, 3], got [3]"),
    (lambda: _loss(logp=torch.tensor([[0.0, math.nan, 0.0], [0.0] * 3], dtype=F64)),
     "logp must be finite on unmasked tokens"),
    (lambda: _loss(advantages=[math.nan, 1.0]), "advantages must be finite"),
    (lambda: _loss(eps_low=-0.1), "eps_low must be in [0, 1], got -0.1"),
]


def _ids(cases):
    # plain node ids: mutmut selects tests by id, and brackets or commas inside an id break that
    return [f"{i}-" + re.sub(r"\W+", "_", message)[:40] for i, (_, message) in enumerate(cases)]


@pytest.mark.parametrize("call, message", BAD_INPUTS, ids=_ids(BAD_INPUTS))
def test_bad_input_message_is_exact(call, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()


def test_inputs_given_as_lists_become_float_tensors():
    like = torch.zeros(1, dtype=F64)
    assert as_float_tensor("x", [1, 2], like=like).dtype == F64  # integers take the reference's float dtype
    assert as_float_tensor("x", [1, 2]).dtype == torch.get_default_dtype()
    assert torch.equal(focal_weight([0, 1], 1.0), torch.tensor([1.0, 0.0]))
    assert torch.equal(focal_weight([0.0, 1.0], 2.0), torch.tensor([1.0, 0.0]))  # both ends of [0, 1] allowed
    loss, stats = policy_loss(LOGP, [[0, 0, 0], [0, 0, 0]], [1, -1], [[1, 1, 1], [1, 1, 0]])
    assert loss.item() == pytest.approx(-(3 - 2) / 5, rel=1e-12)
    assert stats["num_tokens"].item() == 5


def test_focal_advantages_keep_the_advantages_dtype():
    adv = torch.tensor([[1.0, -1.0]], dtype=torch.float32)
    out = focal_advantages(adv, torch.tensor([0.75], dtype=F64), 0.5)
    assert out.dtype == torch.float32
    assert out[0, 0].item() == pytest.approx(0.5, rel=1e-7)


def test_all_correct_and_all_wrong_groups_are_exactly_one_and_zero():
    # the float mean of seven 0.1s exceeds 0.1, of six 0.3s falls below it: the clamp is what keeps mu_hat in [0, 1]
    assert group_success_rate(torch.full((1, 7), 0.1), reward_correct=0.1, reward_wrong=0.0).item() == 1.0
    assert group_success_rate(torch.full((1, 6), 0.3), reward_correct=1.0, reward_wrong=0.3).item() == 0.0


def test_success_rate_from_counts_edges():
    out = success_rate_from_counts(torch.tensor([1.0, 2.0], dtype=F64), torch.tensor(4.0))
    assert out.dtype == F64 and out.tolist() == [0.25, 0.5]  # integral floats are counts; their dtype is kept
    out = success_rate_from_counts(torch.tensor([1.0, 2.0]), torch.tensor([4.0, 8.0], dtype=F64))
    assert out.dtype == torch.float32 and out.tolist() == [0.25, 0.25]  # the counts' dtype, not the sizes'
    assert success_rate_from_counts(torch.tensor([0, 1]), 1).tolist() == [0.0, 1.0]  # N = 1 is a group


def test_grpo_default_eps_and_two_rollouts():
    # N = 2, rewards 0/1: mean 1/2, population std 1/2, so A = +-(1/2) / (1/2 + 1e-6)
    expected = 0.5 / (0.5 + 1e-6)
    out = grpo_advantages(torch.tensor([[0.0, 1.0]], dtype=F64))
    assert out[0].tolist() == pytest.approx([-expected, expected], rel=1e-12)
    assert rloo_advantages(torch.tensor([[0.0, 1.0]], dtype=F64))[0].tolist() == [-1.0, 1.0]


def test_compute_advantages_passes_its_options_through():
    rewards = torch.tensor([[0.0, 1.0, 1.0, 1.0]], dtype=F64)
    # default gamma 0: exactly the unweighted GRPO advantages
    assert torch.equal(compute_advantages(rewards), grpo_advantages(rewards))
    # eps and unbiased_std reach the estimator: mean 3/4, population std sqrt(3)/4, unbiased std 1/2
    assert compute_advantages(rewards, eps=0.5)[0, 0].item() == pytest.approx(-0.75 / (math.sqrt(3) / 4 + 0.5),
                                                                               rel=1e-12)
    assert compute_advantages(rewards, unbiased_std=True)[0, 0].item() == pytest.approx(-0.75 / (0.5 + 1e-6),
                                                                                        rel=1e-12)


def test_focal_metrics_bounds_are_inclusive():
    for rho in (0.0, 1.0):
        out = focal_metrics([1.0], [0.0], [False], 1, gamma=1.0, rho=rho)  # N = 1 allowed, rho at both ends
        assert out["focal/mu_hat_frac_zero"] == 1.0 and out["focal/tail_miss_mean"] == 0.0


def test_mean_tail_miss_looks_grid_values_up(monkeypatch):
    # binary-reward mu_hat = k / N reads the (N, rho) table, evaluated once: the per-step cost the trainer budgets
    table = _tail_miss_table(8, 0.25)
    calls = []
    real = theory.tail_miss_from_rho
    monkeypatch.setattr(theory, "tail_miss_from_rho", lambda *a: calls.append(a) or real(*a))
    assert mean_tail_miss([0.125, 0.5, 0.875], 8, 0.25) == pytest.approx((table[1] + table[4] + table[7]) / 3,
                                                                          rel=1e-12)
    assert calls == []
    mean_tail_miss([0.3], 8, 0.25)  # off the grid: evaluated
    assert len(calls) == 1


def _ratio_tokens(method, **kwargs):
    """Eight tokens, each with its own (log ratio, advantage); eps 0 puts both clip bounds at r = 1 exactly."""
    log_ratio = torch.tensor([[0.0, 0.0, -0.5, -0.5, 0.5, -0.5, 0.5, 0.0]], dtype=F64)
    adv = torch.tensor([[-1.0, 1.0, 0.0, 0.5, 0.0, -1.0, 1.0, 0.0]], dtype=F64)
    return policy_loss(log_ratio, torch.zeros_like(log_ratio), adv, torch.ones_like(log_ratio, dtype=torch.bool),
                       method=method, eps_low=0.0, eps_high=0.0, **kwargs)


def test_clip_fractions_count_tokens_on_and_off_the_bounds():
    # r = 1 on a bound is not clipped; A = 0 is never clipped; only the last-but-two and last-but-one tokens are
    _, stats = _ratio_tokens("grpo")
    kl = sum(math.expm1(x) - x for x in (-0.5, -0.5, 0.5, -0.5, 0.5)) / 8  # k3 per token, averaged over tokens
    assert stats["approx_kl"].item() == pytest.approx(kl, rel=1e-12)
    assert stats["clip_fraction_low"].item() == 1 / 8
    assert stats["clip_fraction_high"].item() == 1 / 8
    assert stats["clip_fraction"].item() == 2 / 8
    # cispo clips the weight of every token off [1, 1] whatever its advantage: r = exp(-0.5) three times, exp(0.5) twice
    _, stats = _ratio_tokens("cispo")
    assert stats["clip_fraction_low"].item() == 3 / 8
    assert stats["clip_fraction_high"].item() == 2 / 8


def test_one_token_and_empty_rows():
    lr = math.log(1.5)
    logp = torch.tensor([[lr, 0.0], [0.0, 0.0]], dtype=F64)
    mask = torch.tensor([[True, False], [False, False]])
    loss, stats = policy_loss(logp, torch.zeros_like(logp), torch.tensor([-1.0, 1.0], dtype=F64), mask,
                              eps_low=0.2, eps_high=0.6)
    # one token, r = 1.5 inside [0.8, 1.6], A = -1: loss = r; the empty row is no sequence at all
    assert loss.item() == pytest.approx(1.5, rel=1e-12)
    seq_loss, _ = policy_loss(logp, torch.zeros_like(logp), torch.tensor([-1.0, 1.0], dtype=F64), mask,
                              eps_low=0.2, eps_high=0.6, aggregation="sequence_mean")
    assert seq_loss.item() == pytest.approx(1.5, rel=1e-12)
    assert stats["ratio_min"].item() == pytest.approx(1.5, rel=1e-12)
    assert stats["ratio_max"].item() == pytest.approx(1.5, rel=1e-12)
    assert stats["approx_kl"].item() == pytest.approx(0.5 - lr, rel=1e-12)  # k3: (r - 1) - log r
    _, clipped = policy_loss(logp, torch.zeros_like(logp), torch.tensor([1.0, 1.0], dtype=F64), mask,
                             eps_low=0.2, eps_high=0.2)
    assert clipped["clip_fraction_high"].item() == 1.0  # one clipped token of one


def test_old_logp_and_advantages_take_logp_dtype():
    logp = torch.zeros(1, 2, requires_grad=True)  # float32
    loss, stats = policy_loss(logp, torch.full((1, 2), -0.1, dtype=F64), torch.ones(1, dtype=F64), torch.ones(1, 2))
    assert loss.dtype == torch.float32 and stats["approx_kl"].dtype == torch.float32
    # integers given as lists are converted straight to logp's float64: 2^24 + 1 stays exact (float32 would round it)
    big = 2**24 + 1
    logp = torch.full((1, 2), -float(big), dtype=F64)
    _, stats = policy_loss(logp, [[-big, -big]], [1], [[1, 1]])
    assert stats["ratio_min"].item() == 1.0 and stats["ratio_max"].item() == 1.0
    loss, _ = policy_loss(torch.zeros(1, 2, dtype=F64), torch.zeros(1, 2, dtype=F64), [big], [[1, 1]])
    assert loss.item() == -big


def test_no_tokens_gives_zero_ratio_stats():
    _, stats = policy_loss(LOGP, LOGP, torch.ones(2, dtype=F64), torch.zeros(2, 3, dtype=torch.bool))
    assert stats["ratio_min"].item() == 0.0 and stats["ratio_max"].item() == 0.0


def test_log_ratio_is_clamped_at_minus_twenty():
    logp = torch.tensor([[-30.0, 0.0]], dtype=F64)
    _, stats = policy_loss(logp, torch.zeros_like(logp), torch.ones(1, dtype=F64), torch.ones_like(logp, dtype=torch.bool))
    assert stats["ratio_min"].item() == pytest.approx(math.exp(-20.0), rel=1e-12)
