"""ds_grpo (the Table 3 DS-GRPO control) through verl's own advantage calls, against the TRL control's maths.

The expected values are the ones tests/test_llm_protocol.py checks for the TRL hook (same rewards,
log-probs and gamma), so both stacks shift the same advantage by the same amount.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from extras import require

require("verl")

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage  # noqa: E402
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402

from fgrpo_sim.llm.training.controls import ds_grpo_advantages  # noqa: E402
from fgrpo_sim.verl.ds_grpo import compute_advantage_with_old_log_probs, install_old_log_probs_passing  # noqa: E402
from fgrpo_sim.verl.estimators import register_focal_estimators  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _registered():
    register_focal_estimators()


def batch(rewards, old_log_probs, mask, uid):
    token_rewards = torch.zeros_like(mask)
    last = mask.sum(dim=1).long() - 1
    token_rewards[torch.arange(len(rewards)), last] = torch.tensor(rewards)
    return DataProto.from_dict(tensors={"token_level_rewards": token_rewards, "response_mask": mask,
                                        "old_log_probs": old_log_probs},
                               non_tensors={"uid": np.array(uid, dtype=object)})


def config(**ds):
    return OmegaConf.create({"adv_estimator": "ds_grpo", "norm_adv_by_std_in_grpo": True, "focal_gamma": 0.0,
                             "focal_reward_correct": 1.0, "focal_reward_wrong": 0.0, "use_kl_in_reward": False,
                             "ds_gamma_correct": 0.2, "ds_gamma_incorrect": 0.0, "ds_logprob": "sum", **ds})


# the TRL test's rollouts (tests/test_llm_protocol.py::test_ds_hook_uses_sampling_log_probs_and_the_process_slice)
MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
LOGP = torch.tensor([[-1.0, -2.0, -50.0], [-0.5, -0.5, -1.0], [-0.3, -0.3, -0.3], [-4.0, -9.0, -9.0]])
REWARDS = [0.0, 1.0, 1.0, 0.0]
UID = ["a", "a", "b", "b"]


def run(cfg, data=None):
    data = data or batch(REWARDS, LOGP, MASK, UID)
    out = compute_advantage_with_old_log_probs(compute_advantage)(
        data, adv_estimator="ds_grpo", gamma=1.0, lam=1.0, num_repeat=2, norm_adv_by_std_in_grpo=True, config=cfg)
    return out.batch["advantages"], data


def grpo(data):
    adv, _ = compute_grpo_outcome_advantage(data.batch["token_level_rewards"], data.batch["response_mask"],
                                            data.non_tensor_batch["uid"])
    return adv[:, 0]


def test_ds_grpo_is_verls_grpo_shifted_by_the_trl_rule():
    adv, data = run(config())
    base = grpo(data)
    # correct rollouts 1, 2: + 0.2 * -log pi over their unmasked tokens; wrong rollouts 0, 3 unchanged
    expected = base + torch.tensor([0.0, 0.2 * 2.0, 0.2 * 0.9, 0.0])
    assert torch.allclose(adv * MASK, (expected[:, None] * MASK).to(adv.dtype), atol=1e-6)
    # the same numbers through the TRL control's own function
    trl = ds_grpo_advantages(base, (LOGP * MASK).sum(1), torch.tensor(REWARDS) > 0.5, 0.2)
    assert adv[:, 0].tolist() == pytest.approx(trl.tolist())


def test_ds_grpo_mean_log_prob_and_incorrect_gamma():
    adv, data = run(config(ds_logprob="mean", ds_gamma_incorrect=0.5))
    base = grpo(data)
    mean_logp = (LOGP * MASK).sum(1) / MASK.sum(1)
    expected = torch.where(torch.tensor(REWARDS) > 0.5, base - 0.2 * mean_logp, base + 0.5 * mean_logp)
    assert adv[:, 0].tolist() == pytest.approx(expected.tolist())


def test_ds_grpo_reaches_the_estimator_through_verls_v1_path():
    from verl.trainer.ppo.v1 import utils as v1_utils

    original = v1_utils.compute_advantage
    try:
        install_old_log_probs_passing()
        install_old_log_probs_passing()  # idempotent: wrapped once
        data = batch(REWARDS, LOGP, MASK, UID)
        out = v1_utils.compute_advantage_for_multi_trajectories(
            data, batch_keys=[f"{u}_0_{i}" for i, u in enumerate(UID)], adv_estimator="ds_grpo", num_repeat=2,
            config=config())
        assert out.batch["advantages"][1, 0] == pytest.approx(float(grpo(data)[1]) + 0.4)
    finally:
        v1_utils.compute_advantage = original


def test_ds_grpo_refuses_to_run_as_plain_grpo():
    data = batch(REWARDS, LOGP, MASK, UID)
    with pytest.raises(ValueError, match="old_log_probs"):  # verl's generic path passes none
        compute_advantage(data, adv_estimator="ds_grpo", num_repeat=2, config=config())
    with pytest.raises(ValueError, match="ds_gamma_correct > 0"):
        run(config(ds_gamma_correct=0.0))
    with pytest.raises(ValueError, match=r"algorithm\.ds_gamma_correct must be in \[0, inf\)"):
        run(config(ds_gamma_correct=-0.1))
    with pytest.raises(ValueError, match="ds_logprob"):
        run(config(ds_logprob="max"))
