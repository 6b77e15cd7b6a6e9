"""focal_grpo / focal_rloo through verl's own advantage entry point (ray_trainer.compute_advantage).

The batch is laid out as verl's trainer hands it over: one row per rollout, groups interleaved,
uneven response lengths (right-padded masks), the outcome reward on the last response token.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from extras import require

require("verl")

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo.core_algos import get_adv_estimator_fn  # noqa: E402
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402

from fgrpo_sim.core import active_groups, compute_advantages, focal_weight, group_success_rate  # noqa: E402
from fgrpo_sim.core.focal_metrics import focal_metrics as core_focal_metrics  # noqa: E402
from fgrpo_sim.theory import tail_miss_from_rho  # noqa: E402
from fgrpo_sim.verl.estimators import pop_focal_metrics, register_focal_estimators  # noqa: E402

# 5 prompts x 4 rollouts: mixed, mixed, all correct, all wrong, one right of four.
REWARDS = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0],
                        [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
MAX_LEN = 7


def make_batch(rewards: torch.Tensor, seed: int = 0, uneven: list[int] | None = None):
    """A DataProto with groups interleaved (row order shuffled) and random response lengths.

    Returns the batch and, for every row, its (group, rollout) position in `rewards`.
    """
    gen = torch.Generator().manual_seed(seed)
    cells = [(g, j) for g in range(rewards.shape[0]) for j in range(rewards.shape[1])]
    if uneven is not None:  # drop rollouts to make groups of different sizes
        cells = [(g, j) for g, j in cells if j < uneven[g]]
    order = torch.randperm(len(cells), generator=gen).tolist()
    cells = [cells[i] for i in order]
    lengths = torch.randint(1, MAX_LEN + 1, (len(cells),), generator=gen)
    mask = (torch.arange(MAX_LEN)[None, :] < lengths[:, None]).float()
    token_rewards = torch.zeros(len(cells), MAX_LEN)
    for row, (g, j) in enumerate(cells):
        token_rewards[row, lengths[row] - 1] = rewards[g, j]
    uid = np.array([f"prompt-{g}" for g, _ in cells], dtype=object)
    batch = DataProto.from_dict(tensors={"token_level_rewards": token_rewards, "response_mask": mask},
                                non_tensors={"uid": uid})
    return batch, cells, mask


def algo_config(estimator: str, gamma: float, **extra):
    return OmegaConf.create({"adv_estimator": estimator, "norm_adv_by_std_in_grpo": True, "focal_gamma": gamma,
                             "focal_reward_correct": 1.0, "focal_reward_wrong": 0.0, "focal_monitor_rho": 0.05,
                             "use_kl_in_reward": False, **extra})


def run_verl(batch: DataProto, config, estimator: str | None = None) -> torch.Tensor:
    """The call verl's trainer makes (same arguments as in ray_trainer.fit / the v1 trainer)."""
    out = compute_advantage(batch, adv_estimator=estimator or config.adv_estimator, gamma=1.0, lam=1.0, num_repeat=4,
                            norm_adv_by_std_in_grpo=config.get("norm_adv_by_std_in_grpo", True), config=config)
    return out.batch["advantages"]


@pytest.fixture(scope="module", autouse=True)
def _registered():
    register_focal_estimators()


@pytest.mark.parametrize("gamma", [0.0, 0.5, 1.0])
def test_focal_grpo_is_verl_grpo_times_weight_and_matches_core(gamma):
    batch, cells, mask = make_batch(REWARDS, seed=1)
    grpo = run_verl(make_batch(REWARDS, seed=1)[0], algo_config("grpo", gamma))
    focal = run_verl(batch, algo_config("focal_grpo", gamma))
    weight = focal_weight(group_success_rate(REWARDS), gamma)
    row_weight = torch.tensor([weight[g].item() for g, _ in cells])[:, None]
    torch.testing.assert_close(focal, grpo * row_weight, rtol=0, atol=0)
    # the same numbers from fgrpo_sim.core (verl uses the unbiased std), one value per rollout
    core = compute_advantages(REWARDS, "grpo", gamma=gamma, unbiased_std=True)
    expected = torch.stack([core[g, j] for g, j in cells])[:, None] * mask
    torch.testing.assert_close(focal, expected, rtol=1e-6, atol=1e-6)
    # all-correct and all-wrong groups: weight 0 / 1 applied, advantage exactly 0 on every token
    for row, (g, _) in enumerate(cells):
        if g in (2, 3):
            assert torch.equal(focal[row], torch.zeros(MAX_LEN))
    if gamma == 0.0:  # bit-identical to verl's GRPO
        assert torch.equal(focal, grpo)
    else:
        assert not torch.equal(focal, grpo)


def test_focal_grpo_without_std_is_focal_dr_grpo():
    batch, cells, mask = make_batch(REWARDS, seed=2)
    focal = run_verl(batch, algo_config("focal_grpo", 0.5, norm_adv_by_std_in_grpo=False))
    core = compute_advantages(REWARDS, "dr_grpo", gamma=0.5)
    expected = torch.stack([core[g, j] for g, j in cells])[:, None] * mask
    torch.testing.assert_close(focal, expected, rtol=1e-6, atol=1e-6)


def test_focal_rloo_matches_verl_rloo_and_core():
    batch, cells, mask = make_batch(REWARDS, seed=3)
    rloo = run_verl(make_batch(REWARDS, seed=3)[0], algo_config("rloo", 1.0))
    focal = run_verl(batch, algo_config("focal_rloo", 1.0))
    weight = focal_weight(group_success_rate(REWARDS), 1.0)
    torch.testing.assert_close(focal, rloo * torch.tensor([weight[g].item() for g, _ in cells])[:, None], rtol=0, atol=0)
    core = compute_advantages(REWARDS, "rloo", gamma=1.0)
    torch.testing.assert_close(focal, torch.stack([core[g, j] for g, j in cells])[:, None] * mask, rtol=1e-6, atol=1e-6)


def test_uneven_group_sizes_use_each_groups_own_mu_hat():
    sizes = [4, 3, 2, 4, 3]
    batch, cells, mask = make_batch(REWARDS, seed=4, uneven=sizes)
    grpo = get_adv_estimator_fn("grpo")(token_level_rewards=batch.batch["token_level_rewards"].clone(),
                                        response_mask=mask, index=batch.non_tensor_batch["uid"])[0]
    focal = run_verl(batch, algo_config("focal_grpo", 0.5))
    for row, (g, _) in enumerate(cells):
        mu = REWARDS[g, : sizes[g]].mean()
        torch.testing.assert_close(focal[row], grpo[row] * (1 - mu) ** 0.5, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("gamma", [0.0, 1.0])
def test_focal_smoothing_uses_each_groups_own_size(gamma):
    """+algorithm.focal_smoothing=0.5: g = (1 - (c + 0.5) / (N + 1))^gamma, N each group's own size; gamma 0 is
    verl's GRPO bit for bit whatever alpha."""
    sizes = [4, 3, 2, 4, 3]
    batch, cells, mask = make_batch(REWARDS, seed=6, uneven=sizes)
    grpo = get_adv_estimator_fn("grpo")(token_level_rewards=batch.batch["token_level_rewards"].clone(),
                                        response_mask=mask, index=batch.non_tensor_batch["uid"])[0]
    focal = run_verl(batch, algo_config("focal_grpo", gamma, focal_smoothing=0.5))
    for row, (g, _) in enumerate(cells):
        c, n = float(REWARDS[g, : sizes[g]].sum()), sizes[g]
        torch.testing.assert_close(focal[row], grpo[row] * (1 - (c + 0.5) / (n + 1.0)) ** gamma, rtol=1e-6, atol=1e-7)
    if gamma == 0.0:
        assert torch.equal(focal, grpo)
    with pytest.raises(ValueError, match=r"algorithm.focal_smoothing must be in \[0, inf\)"):
        run_verl(batch, algo_config("focal_grpo", gamma, focal_smoothing=-1.0))


def test_metrics_reach_the_caller():
    batch, _, _ = make_batch(REWARDS, seed=5)
    pop_focal_metrics()
    run_verl(batch, algo_config("focal_grpo", 0.5))
    metrics = pop_focal_metrics()
    mu = group_success_rate(REWARDS).numpy()
    assert metrics["focal/weight_mean"] == pytest.approx(float(np.mean((1 - mu) ** 0.5)))
    assert metrics["focal/frac_active_groups"] == pytest.approx(3 / 5)
    assert metrics["focal/mu_hat_frac_zero"] == pytest.approx(1 / 5)
    assert metrics["focal/mu_hat_frac_one"] == pytest.approx(1 / 5)
    assert metrics["focal/mu_hat_frac_0.5-0.75"] == pytest.approx(1 / 5)  # 0.5 and 0.75 fall in two bins
    assert sum(v for k, v in metrics.items() if k.startswith("focal/mu_hat_frac_")) == pytest.approx(1.0)
    assert metrics["focal/tail_miss_mean"] == pytest.approx(float(np.mean(tail_miss_from_rho(4, mu, 0.05))))
    assert pop_focal_metrics() == {}
    # one definition for both stacks: verl's metrics are core's on the same groups
    weight = focal_weight(torch.as_tensor(mu), 0.5).numpy()
    active = active_groups(REWARDS).numpy()
    assert metrics == pytest.approx(core_focal_metrics(weight, mu, active, 4, gamma=0.5, rho=0.05))


@pytest.mark.parametrize(("extra", "message"), [
    ({"focal_gamma": -0.5}, "algorithm.focal_gamma must be in"),
    ({"focal_reward_correct": 0.0}, "must differ"),
    ({"use_kl_in_reward": True}, "use_kl_in_reward"),
])
def test_bad_settings_name_the_config_key(extra, message):
    batch, _, _ = make_batch(REWARDS)
    with pytest.raises(ValueError, match=message):
        run_verl(batch, OmegaConf.merge(algo_config("focal_grpo", 0.5), extra))


def test_missing_gamma_is_an_error_not_plain_grpo():
    batch, _, _ = make_batch(REWARDS)
    config = algo_config("focal_grpo", 0.5)
    del config["focal_gamma"]
    with pytest.raises(ValueError, match="algorithm.focal_gamma is missing"):
        run_verl(batch, config)


def test_rewards_outside_the_configured_values_are_an_error():
    batch, _, _ = make_batch(REWARDS * 2.0)
    with pytest.raises(ValueError, match="focal_reward_correct"):
        run_verl(batch, algo_config("focal_grpo", 0.5))


def test_launcher_trainer_puts_focal_metrics_into_verls_metrics_dict():
    """The launcher swaps verl's v1 trainer for a subclass whose _compute_advantage logs the focal metrics."""
    from verl.trainer.ppo.v1 import trainer_base

    from fgrpo_sim.verl.main_ppo import compose_config, install_focal_trainer, with_focal_metrics

    class FakeTrainer:  # stands in for verl's trainer: _compute_advantage(batch, metrics) computes advantages
        def _compute_advantage(self, batch, metrics):
            metrics["verl/own"] = 1.0
            return compute_advantage(batch, adv_estimator="focal_grpo", config=algo_config("focal_grpo", 0.5))

    metrics: dict = {}
    out = with_focal_metrics(FakeTrainer)()._compute_advantage(make_batch(REWARDS)[0], metrics=metrics)
    assert "advantages" in out.batch.keys()
    assert metrics["verl/own"] == 1.0 and metrics["focal/gamma"] == 0.5 and "focal/tail_miss_mean" in metrics

    saved = dict(trainer_base.TRAINER_REGISTRY)
    try:
        install_focal_trainer(compose_config(["algorithm.adv_estimator=grpo"]))
        assert trainer_base.TRAINER_REGISTRY == saved  # non-focal runs keep verl's trainer
        install_focal_trainer(compose_config(["algorithm.adv_estimator=focal_grpo", "trainer.v1.trainer_mode=sync"]))
        focal_cls = trainer_base.get_trainer_cls("sync")
        assert focal_cls.__name__ == "FocalPPOTrainerSync" and issubclass(focal_cls, saved["sync"])
    finally:
        trainer_base.TRAINER_REGISTRY.clear()
        trainer_base.TRAINER_REGISTRY.update(saved)
