"""Group statistics, advantages and focal weighting (fgrpo_sim.core)."""

import math

import pytest
import torch

from fgrpo_sim.core import (
    active_groups,
    compute_advantages,
    dr_grpo_advantages,
    focal_advantages,
    focal_weight,
    group_success_rate,
    grpo_advantages,
    rloo_advantages,
    success_rate_from_counts,
)

REWARDS = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]])


def test_success_rate_and_activity():
    assert torch.equal(group_success_rate(REWARDS), torch.tensor([0.5, 1.0, 0.25, 0.0]))
    assert torch.equal(active_groups(REWARDS), torch.tensor([True, False, True, False]))
    # Non-default reward values: +1 / -1 rewards map back to the fraction correct.
    pm = 2 * REWARDS - 1
    assert torch.allclose(group_success_rate(pm, reward_correct=1.0, reward_wrong=-1.0), torch.tensor([0.5, 1.0, 0.25, 0.0]))
    # Partial credit lies in between.
    assert group_success_rate(torch.tensor([[0.5, 0.5]])).item() == 0.5
    counts = success_rate_from_counts(torch.tensor([0, 3, 8]), 8)
    assert torch.equal(counts, torch.tensor([0.0, 0.375, 1.0]))


def test_success_rate_validation():
    with pytest.raises(ValueError, match="rewards must be in"):
        group_success_rate(torch.tensor([[2.0, 0.0]]))
    with pytest.raises(ValueError, match="reward_correct must differ"):
        group_success_rate(REWARDS, 1.0, 1.0)
    with pytest.raises(ValueError, match="rewards must be shaped"):
        group_success_rate(torch.zeros(4))
    with pytest.raises(ValueError, match="rewards must be finite"):
        active_groups(torch.tensor([[float("nan"), 0.0]]))
    with pytest.raises(ValueError, match="correct_counts must be in"):
        success_rate_from_counts(torch.tensor([9]), 8)
    with pytest.raises(ValueError, match="group_size must be >= 1"):
        success_rate_from_counts(torch.tensor([0]), 0)


def test_advantages_hand_values():
    a = grpo_advantages(REWARDS, eps=0.0)
    assert torch.equal(a[0], torch.tensor([1.0, -1.0, -1.0, 1.0]))  # mean 0.5, population std 0.5
    s3 = math.sqrt(3.0)
    assert torch.allclose(a[2], torch.tensor([-1 / s3, -1 / s3, -1 / s3, s3]))
    assert torch.allclose(grpo_advantages(REWARDS, eps=1e-6)[0], torch.tensor([1.0, -1.0, -1.0, 1.0]) / (1 + 2e-6))
    # unbiased std for [1,0,0,1] is sqrt(1/3)
    assert torch.allclose(grpo_advantages(REWARDS, eps=0.0, unbiased_std=True)[0], torch.tensor([1.0, -1, -1, 1]) * 0.5 * s3)
    assert torch.equal(dr_grpo_advantages(REWARDS)[2], torch.tensor([-0.25, -0.25, -0.25, 0.75]))
    # RLOO: 1 - 0 = 1 for the correct one, 0 - 1/3 for the others
    assert torch.allclose(rloo_advantages(REWARDS)[2], torch.tensor([-1 / 3, -1 / 3, -1 / 3, 1.0]))


@pytest.mark.parametrize("mu_count", [1, 2, 5, 7])
def test_grpo_binary_closed_form(mu_count):
    # Paper Sec. 4 / Fig 4: with binary rewards |A+| = sqrt((1-mu)/mu), |A-| = sqrt(mu/(1-mu)).
    n = 8
    rewards = torch.zeros(1, n, dtype=torch.float64)
    rewards[0, :mu_count] = 1.0
    mu = mu_count / n
    a = grpo_advantages(rewards, eps=0.0)[0]
    assert torch.allclose(a[:mu_count], torch.full((mu_count,), math.sqrt((1 - mu) / mu), dtype=torch.float64))
    assert torch.allclose(a[mu_count:], torch.full((n - mu_count,), -math.sqrt(mu / (1 - mu)), dtype=torch.float64))


@pytest.mark.parametrize("estimator", [grpo_advantages, dr_grpo_advantages, rloo_advantages])
def test_all_equal_groups_are_exactly_zero(estimator):
    # 0.7 repeated: the float mean need not equal 0.7 exactly, the advantages must still be exact zeros.
    rewards = torch.tensor([[0.7] * 7, [0.1] * 7, [0.3] * 7], dtype=torch.float64)
    assert torch.equal(estimator(rewards), torch.zeros_like(rewards))
    assert torch.equal(estimator(REWARDS)[[1, 3]], torch.zeros(2, 4))


def test_rloo_needs_two_and_grpo_single_rollout():
    with pytest.raises(ValueError, match="N >= 2"):
        rloo_advantages(torch.ones(3, 1))
    assert torch.equal(grpo_advantages(torch.ones(3, 1), unbiased_std=True), torch.zeros(3, 1))


def test_focal_gamma_zero_is_exactly_unweighted():
    mu = group_success_rate(REWARDS)  # includes mu = 1, where 0^0 must be 1
    assert torch.equal(focal_weight(mu, 0.0), torch.ones(4))
    adv = grpo_advantages(REWARDS)
    assert torch.equal(focal_advantages(adv, mu, 0.0), adv)
    assert torch.equal(compute_advantages(REWARDS, "rloo", gamma=0.0), rloo_advantages(REWARDS))


def test_focal_hand_values():
    mu = torch.tensor([0.0, 0.25, 0.5, 1.0], dtype=torch.float64)
    assert torch.allclose(focal_weight(mu, 0.5), torch.tensor([1.0, math.sqrt(0.75), math.sqrt(0.5), 0.0], dtype=torch.float64))
    assert torch.allclose(focal_weight(mu, 2.0), torch.tensor([1.0, 0.5625, 0.25, 0.0], dtype=torch.float64))
    # Group [0,0,0,1]: mu = 1/4, gamma = 1 -> g = 3/4 times GRPO's (-1/sqrt3, ..., sqrt3)
    out = compute_advantages(REWARDS[2:3], "grpo", gamma=1.0, eps=0.0)
    s3 = math.sqrt(3.0)
    assert torch.allclose(out, 0.75 * torch.tensor([[-1 / s3, -1 / s3, -1 / s3, s3]]))
    # +1/-1 rewards give the same weight as 1/0 rewards for the same outcomes.
    pm = compute_advantages(2 * REWARDS - 1, "dr_grpo", gamma=0.5, reward_wrong=-1.0)
    assert torch.allclose(pm, 2 * compute_advantages(REWARDS, "dr_grpo", gamma=0.5))


def test_focal_validation():
    with pytest.raises(ValueError, match="gamma must be in"):
        focal_weight(torch.tensor([0.5]), -0.5)
    with pytest.raises(ValueError, match="mu_hat must be in"):
        focal_weight(torch.tensor([1.5]), 1.0)
    with pytest.raises(ValueError, match="mu_hat must be shaped"):
        focal_advantages(torch.zeros(3, 4), torch.zeros(4), 1.0)
    with pytest.raises(ValueError, match="estimator must be one of"):
        compute_advantages(REWARDS, "ppo")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_dtype_and_device_preserved(dtype):
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        rewards = REWARDS.to(device=device, dtype=dtype)
        for fn in (grpo_advantages, dr_grpo_advantages, rloo_advantages):
            out = fn(rewards)
            assert out.dtype == dtype and out.device.type == device
        out = compute_advantages(rewards, gamma=0.5)
        assert out.dtype == dtype and out.device.type == device
        assert group_success_rate(rewards).dtype == dtype
    # Integer rewards are accepted and promoted to the default float dtype.
    assert grpo_advantages(REWARDS.long()).dtype == torch.get_default_dtype()


@pytest.mark.parametrize("bad", ["abc", [[1.0, 0.0], [1.0]], None])
def test_non_numeric_rewards_are_a_named_value_error(bad):
    from fgrpo_sim.core import grpo_advantages, group_success_rate

    with pytest.raises(ValueError, match=r"^rewards must be a tensor or an array of numbers"):
        group_success_rate(bad)
    with pytest.raises(ValueError, match=r"^rewards must be a tensor or an array of numbers"):
        grpo_advantages(bad)


def test_focal_weight_per_group_is_focal_weight_with_a_gamma_per_group():
    from fgrpo_sim.core import focal_weight_per_group

    mu = torch.tensor([0.0, 0.25, 0.5, 1.0, 1.0], dtype=torch.float64)
    gamma = torch.tensor([0.5, 2.0, 1.0, 0.0, 1.0], dtype=torch.float64)
    expected = torch.stack([focal_weight(mu[i:i + 1], float(g))[0] for i, g in enumerate(gamma)])
    assert torch.allclose(focal_weight_per_group(mu, gamma), expected, rtol=1e-12, atol=0)
    assert focal_weight_per_group(mu, gamma)[3] == 1.0  # gamma 0 at mu_hat 1: 0^0 = 1, as focal_weight


def test_values_trusted_skips_only_the_device_reading_checks_and_only_inside():
    """The simulators vouch for their own rewards (no host sync per step); every other caller keeps the checks."""
    from fgrpo_sim import core

    bad = torch.tensor([[1.0, math.nan]])
    with pytest.raises(ValueError, match="finite"):
        core.grpo_advantages(bad)
    with pytest.raises(ValueError, match="mu_hat must be in"):
        core.focal_weight(torch.tensor([1.5]), 1.0)
    with core.values_trusted():
        core.grpo_advantages(bad)  # no check, no sync
        core.focal_weight(torch.tensor([1.5]), 1.0)
        with pytest.raises(ValueError, match="shaped"):
            core.grpo_advantages(torch.ones(3))  # shapes are still checked
        with pytest.raises(ValueError, match="gamma"):
            core.focal_weight(torch.tensor([0.5]), -1.0)  # and Python scalars
    with pytest.raises(ValueError, match="finite"):
        core.grpo_advantages(bad)  # back on after the block
