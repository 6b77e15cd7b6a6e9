"""core.focal_metrics: the one definition of the focal metrics that TRL's trainer and verl's estimators log."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fgrpo_sim.core import focal_weight, group_success_rate
from fgrpo_sim.core.focal_metrics import MU_HAT_BINS, focal_metrics, mean_tail_miss


def _lemma_3_1(mu, n, rho):
    """(1 - tau)^n - (mu - tau)^n - (1 - mu)^n with tau = rho * mu (the paper's formula as printed)."""
    return (1 - rho * mu) ** n - (mu - rho * mu) ** n - (1 - mu) ** n


def test_hand_values_for_one_batch():
    rewards = torch.tensor([[0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1.0]])
    mu = group_success_rate(rewards)
    weight = focal_weight(mu, 0.5)
    active = [False, True, True, True, False]
    out = focal_metrics(weight, mu, active, 4, gamma=0.5, rho=0.05)
    assert out["focal/gamma"] == 0.5
    assert out["focal/weight_mean"] == pytest.approx((1 + 0.75 ** 0.5 + 0.5 ** 0.5 + 0.25 ** 0.5 + 0) / 5)
    assert out["focal/weight_mean_active"] == pytest.approx((0.75 ** 0.5 + 0.5 ** 0.5 + 0.25 ** 0.5) / 3)
    assert out["focal/frac_active_groups"] == pytest.approx(3 / 5)
    assert out["focal/mu_hat_mean"] == pytest.approx(0.5)
    # 0.25 and 0.5 and 0.75 sit on the upper edge of their bins
    assert {name: out[f"focal/mu_hat_frac_{name}"] for name, _, _ in MU_HAT_BINS} == pytest.approx(
        {"zero": 0.2, "0-0.25": 0.2, "0.25-0.5": 0.2, "0.5-0.75": 0.2, "0.75-1": 0.0, "one": 0.2})
    expected = np.mean([_lemma_3_1(m, 4, 0.05) for m in (0, 0.25, 0.5, 0.75, 1)])
    assert out["focal/tail_miss_mean"] == pytest.approx(expected, rel=1e-12)


def test_no_active_group_is_nan_not_zero():
    out = focal_metrics([1.0, 0.0], [0.0, 1.0], [False, False], 8, gamma=1.0, rho=0.5)
    assert math.isnan(out["focal/weight_mean_active"])
    assert out["focal/frac_active_groups"] == 0.0 and out["focal/tail_miss_mean"] == 0.0  # inactive groups never miss


def test_histogram_sums_to_one_and_mixed_sizes_use_their_own_n():
    mu = [0.0, 1 / 3, 0.5, 2 / 3, 0.9, 1.0, 0.5]
    sizes = [4, 3, 2, 3, 10, 4, 2]
    out = focal_metrics([1.0] * 7, mu, [0 < m < 1 for m in mu], sizes, gamma=0.0, rho=0.1)
    assert sum(v for k, v in out.items() if k.startswith("focal/mu_hat_frac_")) == pytest.approx(1.0)
    expected = np.mean([_lemma_3_1(m, n, 0.1) for m, n in zip(mu, sizes)])
    assert out["focal/tail_miss_mean"] == pytest.approx(expected, rel=1e-12)


def test_partial_credit_mu_hat_off_the_grid_is_evaluated_exactly():
    assert mean_tail_miss([0.3], 4, 0.2) == pytest.approx(_lemma_3_1(0.3, 4, 0.2), rel=1e-12)


def test_tensor_numpy_and_list_inputs_agree():
    mu = [0.25, 0.5, 1.0]
    as_list = focal_metrics([0.9, 0.7, 0.0], mu, [1, 1, 0], 4, gamma=0.5, rho=0.05)
    as_numpy = focal_metrics(np.array([0.9, 0.7, 0.0]), np.array(mu), np.array([True, True, False]), 4, gamma=0.5, rho=0.05)
    as_torch = focal_metrics(torch.tensor([0.9, 0.7, 0.0], dtype=torch.float64), torch.tensor(mu, dtype=torch.float64),
                             torch.tensor([True, True, False]), torch.tensor([4, 4, 4]).tolist(), gamma=0.5, rho=0.05)
    assert as_list == as_numpy == as_torch


def test_empty_batch_and_bad_input():
    assert focal_metrics([], [], [], 4, gamma=0.5, rho=0.05) == {}
    with pytest.raises(ValueError, match="one value per group"):
        focal_metrics([1.0], [0.5, 0.5], [True, True], 4, gamma=0.5, rho=0.05)
    with pytest.raises(ValueError, match="rho must be in"):
        focal_metrics([1.0], [0.5], [True], 4, gamma=0.5, rho=1.5)
    with pytest.raises(ValueError, match="group_size must be >= 1"):
        focal_metrics([1.0], [0.5], [True], 0, gamma=0.5, rho=0.05)


def test_docs_reading_the_focal_metrics_names_real_keys_and_the_theory_numbers():
    """docs/llm.md "Reading the focal metrics" (issue 29): the key to watch is one the trainers log, and its
    reference values are `fgrpo theory lr-multiplier`'s."""
    from pathlib import Path

    from fgrpo_sim.theory import lr_multiplier

    text = (Path(__file__).resolve().parent.parent / "docs" / "llm.md").read_text()
    section = text.split("### Reading the focal metrics", 1)[1].split("\n### ", 1)[0]
    assert "`focal/weight_mean_active`, not\n`focal/weight_mean`" in section and "metrics.jsonl" in section
    logged = focal_metrics([0.5, 1.0], [0.5, 0.0], [True, False], 4, gamma=1.0, rho=0.05)
    assert {"focal/weight_mean_active", "focal/weight_mean", "focal/frac_active_groups"} <= set(logged)
    for gamma, shown in ((0.5, "0.679"), (1, "0.5"), (2, "0.3125")):
        assert f"{shown} at {gamma:g}" in section
        assert float(lr_multiplier(gamma)) == pytest.approx(float(shown), abs=5e-4)
