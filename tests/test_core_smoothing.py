"""focal_smoothing: mu = (X + alpha) / (N + 2 alpha) inside the focal weight; alpha = 0 is the paper's X / N."""

from __future__ import annotations

import math

import pytest
import torch

from fgrpo_sim.core import (
    compute_advantages,
    focal_advantages,
    focal_weight,
    focal_weight_per_group,
    grpo_advantages,
    group_success_rate,
    smoothed_success_rate,
)

# N = 2: X = 0, 1, 2 correct
PAIRS = torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)


def test_n2_hand_values_raw_and_smoothed():
    mu = group_success_rate(PAIRS)
    # raw: 1, 0.5^gamma, 0 at gamma = 1 -> 1, 0.5, 0
    assert torch.allclose(focal_weight(mu, 1.0), torch.tensor([1.0, 0.5, 0.0], dtype=torch.float64))
    # alpha = 0.5, N = 2: mu = (X + 0.5) / 3 = 1/6, 1/2, 5/6 -> g = 5/6, 1/2, 1/6 at gamma = 1
    out = focal_weight(mu, 1.0, focal_smoothing=0.5, group_size=2)
    assert torch.allclose(out, torch.tensor([5 / 6, 0.5, 1 / 6], dtype=torch.float64), rtol=1e-12, atol=0)
    # gamma = 0.5: square roots of those
    out = focal_weight(mu, 0.5, focal_smoothing=0.5, group_size=2)
    expected = torch.tensor([math.sqrt(5 / 6), math.sqrt(0.5), math.sqrt(1 / 6)], dtype=torch.float64)
    assert torch.allclose(out, expected, rtol=1e-12, atol=0)


def test_smoothed_rate_is_x_plus_alpha_over_n_plus_two_alpha():
    x = torch.arange(0, 9, dtype=torch.float64)
    for alpha in (0.25, 1.0, 3.0):
        got = smoothed_success_rate(x / 8, 8, alpha)
        assert torch.allclose(got, (x + alpha) / (8 + 2 * alpha), rtol=1e-12, atol=0)


def test_alpha_zero_is_bit_identical_to_the_raw_weight():
    torch.manual_seed(0)
    rewards = (torch.rand(64, 8) < 0.4).double()
    mu = group_success_rate(rewards)
    for gamma in (0.0, 0.5, 1.0, 2.0):
        raw = torch.pow(1.0 - mu, gamma) if gamma else torch.ones_like(mu)
        assert torch.equal(focal_weight(mu, gamma, focal_smoothing=0.0, group_size=8), raw)
        assert torch.equal(focal_weight(mu, gamma), raw)
        adv = grpo_advantages(rewards)
        assert torch.equal(focal_advantages(adv, mu, gamma, 0.0), focal_advantages(adv, mu, gamma))
        assert torch.equal(compute_advantages(rewards, gamma=gamma, focal_smoothing=0.0),
                           compute_advantages(rewards, gamma=gamma))
    assert smoothed_success_rate(mu, 8, 0.0) is mu


def test_smoothing_takes_n_from_the_advantages_and_keeps_all_correct_groups_weighted():
    adv = grpo_advantages(PAIRS)
    mu = group_success_rate(PAIRS)
    out = focal_advantages(adv, mu, 1.0, focal_smoothing=0.5)
    assert torch.allclose(out, adv * torch.tensor([[5 / 6], [0.5], [1 / 6]], dtype=torch.float64), rtol=1e-12)
    # an all-correct group of 4: raw weight 0, smoothed (1 - 4.5 / 5)^1 = 0.1
    w = focal_weight(torch.tensor([1.0], dtype=torch.float64), 1.0, focal_smoothing=0.5, group_size=4)
    assert w.item() == pytest.approx(0.1, rel=1e-12)


def test_gamma_zero_stays_exactly_one_with_smoothing():
    mu = group_success_rate(PAIRS)
    assert torch.equal(focal_weight(mu, 0.0, focal_smoothing=0.5, group_size=2), torch.ones(3, dtype=torch.float64))


def test_per_group_form_matches_checked_form():
    mu = torch.tensor([0.0, 0.25, 0.5, 1.0], dtype=torch.float64)
    gamma = torch.tensor([0.5, 2.0, 1.0, 1.0], dtype=torch.float64)
    expected = torch.stack([focal_weight(mu[i:i + 1], float(g), 0.5, 4)[0] for i, g in enumerate(gamma)])
    assert torch.allclose(focal_weight_per_group(mu, gamma, 0.5, 4), expected, rtol=1e-12, atol=0)
    assert torch.equal(focal_weight_per_group(mu, gamma, 0.0, 4), focal_weight_per_group(mu, gamma))


@pytest.mark.parametrize("bad", [-0.1, math.inf, math.nan, "x"])
def test_bad_smoothing_is_a_named_value_error(bad):
    with pytest.raises(ValueError, match="^focal_smoothing must"):
        focal_weight(torch.tensor([0.5]), 1.0, focal_smoothing=bad, group_size=2)


def test_smoothing_needs_a_group_size():
    with pytest.raises(ValueError, match="^group_size must be given"):
        focal_weight(torch.tensor([0.5]), 1.0, focal_smoothing=0.5)
    with pytest.raises(ValueError, match="^group_size must be >= 1"):
        focal_weight(torch.tensor([0.5]), 1.0, focal_smoothing=0.5, group_size=0)
