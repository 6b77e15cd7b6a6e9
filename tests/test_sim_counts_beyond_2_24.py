"""Counts beyond 2^24 (issue 36): both samplers count draws in an integer dtype, not the policy's float dtype.

float32 counts stop at 2^24 = 16,777,216 (adding 1 no longer changes them), and the config and CLI accept N up to
2^31 - 1. Each sampling test draws N = 2^25 once (about 1-2 GB of int64 scratch for the torch sampler for a moment).
"""

from __future__ import annotations

import math

import pytest
import torch

from fgrpo_sim.sim.categorical.sampling import native_available, run_keys, sample_counts_native, sample_counts_torch

N = 2**25
WEIGHTS = [0.97, 0.01, 0.01, 0.01]


def _assert_exact_counts(counts: torch.Tensor) -> None:
    assert not counts.dtype.is_floating_point, counts.dtype
    assert counts.sum(1).tolist() == [N]  # exactly N (float32 counting gave 17.78M)
    top = int(counts[0, 0])
    # Binomial(N, 0.97): within 6 standard deviations (float32 counting stuck at 16,777,216)
    assert abs(top - 0.97 * N) < 6 * math.sqrt(N * 0.97 * 0.03), top


@pytest.mark.parametrize("sampler", ["torch"] + (["native"] if native_available() else []))
def test_float32_weights_count_2_to_the_25_draws_exactly(sampler):
    w = torch.tensor([WEIGHTS], dtype=torch.float32)
    if sampler == "native":
        counts, stats = sample_counts_native(w, [N], run_keys([0]), stream=1, num_correct=1)
        assert stats[0, 2] == counts[0, 0]  # the correct draws X of the stats: the same exact count
    else:
        counts = sample_counts_torch(w, [N], run_keys([0]), stream=1)
    _assert_exact_counts(counts)


# the torch engine's one-pass plan (`DrawPlan`, the mixed-N path) is what the engine case below runs
ENGINE_CASES = ([("torch", "cpu")] + ([("native", "cpu")] if native_available() else [])
                + ([("torch", "cuda")] if torch.cuda.is_available() else []))  # CUDA: int32 index_add_ in a graph


@pytest.mark.parametrize("sampler, device", ENGINE_CASES)
def test_the_engine_sees_the_right_success_rate_at_2_to_the_25(sampler, device):
    """One float32 step at N = 2^25 with correct mass 0.983: mu_hat ~ 0.983 on both backends (the torch
    backend's float32 counts gave 0.51)."""
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    p = torch.tensor([0.973, 0.01, 0.009, 0.008], dtype=torch.float64)
    config = CategoricalConfig(num_actions=4, num_correct=2, dtype="float32", device=device, sampler=sampler,
                               optimizer="sgd", lr=1e-3, steps=1)
    batch = CategoricalBatch(config, [N], [0.0], [0])
    batch.logits[0] = p.log().to(torch.float32)
    if batch.native is not None:
        batch.native.refresh(batch.logits)
    q = float(p[:2].sum())
    for _ in range(3 if device == "cuda" else 1):  # CUDA: the eager warm-up, then the captured graph's replays
        batch.step()
        mu_hat = float(batch.last_mu_hat[0])
        assert abs(mu_hat - q) < 6 * math.sqrt(q * (1 - q) / N) + 1e-5, mu_hat


@pytest.mark.parametrize("sampler", ["torch"] + (["native"] if native_available() else []))
def test_given_counts_stay_integers_at_float32(sampler):
    """Issue 44: `step_with_counts` at float32 with a count of 2^24 + 1. Converted to float32 first, it became
    2^24 and the correct draws X = 2^24 + 2 summed to 2^24, so mu_hat read 0.5; kept integer, mu_hat is
    (2^24 + 2) / 2^25 = 0.5 + 2^-24 (exact in float32 and float64: the check compares exactly)."""
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    config = CategoricalConfig(num_actions=4, num_correct=2, dtype="float32", device="cpu", sampler=sampler,
                               optimizer="sgd", lr=1e-3, steps=1)  # cpu: the native kernel is CPU-only
    batch = CategoricalBatch(config, [N], [0.0], [0])
    counts = torch.tensor([[2**24 + 1, 1, N - 2**24 - 2, 0]], dtype=torch.int64)
    for given in (counts, counts.to(torch.float64)):  # float64 holds these counts exactly
        batch.step_with_counts(given)
        assert float(batch.last_mu_hat[0]) == 0.5 + 2.0**-24
    with pytest.raises(ValueError, match="counts must be whole numbers"):
        batch.step_with_counts(counts.to(torch.float64) + 0.5)
