"""verl's own launcher runs F-GRPO (issue 39): the `verl.plugins` entry point registers the estimators on
`import verl`, and verl's own config takes the focal keys with Hydra's `+`.

    python -m verl.trainer.main_ppo algorithm.adv_estimator=focal_grpo +algorithm.focal_gamma=0.5
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from extras import require

require("verl")

from hydra import compose, initialize_config_module  # noqa: E402
from hydra.errors import ConfigCompositionException  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo.ray_trainer import compute_advantage  # noqa: E402

VERL_OWN = ["algorithm.adv_estimator=focal_grpo", "+algorithm.focal_gamma=0.5"]


def verls_own_config(overrides: list[str]):
    """The config `python -m verl.trainer.main_ppo OVERRIDES` composes (verl's ppo_trainer, nothing of ours)."""
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


def test_import_verl_alone_registers_the_focal_estimators(tmp_path):
    """A fresh process that imports verl and nothing of ours, as verl's launcher and each Ray actor do."""
    code = ("import json, sys, verl\nfrom verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY\n"
            "print(json.dumps({'registered': sorted(ADV_ESTIMATOR_REGISTRY), "
            "'plugin': 'fgrpo_sim.verl.plugin' in sys.modules}))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["plugin"]
    assert {"focal_grpo", "focal_rloo", "ds_grpo"} <= set(seen["registered"])


def test_verls_own_config_takes_the_focal_keys_with_a_plus():
    cfg = verls_own_config(VERL_OWN)
    assert cfg.algorithm.adv_estimator == "focal_grpo" and cfg.algorithm.focal_gamma == 0.5
    with pytest.raises(ConfigCompositionException):  # the README line without '+': verl's struct refuses it
        verls_own_config(["algorithm.adv_estimator=focal_grpo", "algorithm.focal_gamma=0.5"])


def test_verls_own_config_trains_focal_grpo():
    """verl's compute_advantage with verl's own algorithm config: GRPO's advantage x (1 - mu_hat)^0.5."""
    import fgrpo_sim.verl.plugin  # noqa: F401  (what `import verl` did in verl's processes; here verl came first)

    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    groups, n = rewards.shape
    token_rewards = torch.zeros(groups * n, 3)
    token_rewards[:, -1] = rewards.reshape(-1)
    uid = np.array([f"prompt-{g}" for g in range(groups) for _ in range(n)], dtype=object)

    def advantages(config) -> torch.Tensor:
        batch = DataProto.from_dict(tensors={"token_level_rewards": token_rewards, "response_mask": torch.ones(groups * n, 3)},
                                    non_tensors={"uid": uid})
        out = compute_advantage(batch, adv_estimator=config.adv_estimator, num_repeat=n, config=config)
        return out.batch["advantages"][:, -1].reshape(groups, n)

    focal = advantages(verls_own_config(VERL_OWN).algorithm)
    plain = advantages(verls_own_config(["algorithm.adv_estimator=grpo"]).algorithm)
    weight = (1 - rewards.mean(dim=1, keepdim=True)) ** 0.5
    torch.testing.assert_close(focal, plain * weight, rtol=1e-6, atol=1e-7)
    assert not torch.allclose(focal, plain)
