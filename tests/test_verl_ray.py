"""The focal estimators are registered inside verl's TaskRunner Ray actor, not only in the driver.

A local CPU Ray cluster (1 CPU, small object store, no dashboard) starts the launcher's TaskRunner
with `.remote()`, as verl's run_ppo does, and asks the actor process for verl's estimator registry.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from extras import require

require("verl")
ray = require("ray")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def local_ray():
    if ray.is_initialized():
        pytest.skip("a Ray cluster is already running in this process")
    pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=1, num_gpus=0, include_dashboard=False, object_store_memory=80 * 1024**2,
             log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": pythonpath}})
    yield
    ray.shutdown()


def test_task_runner_actor_has_focal_estimators(local_ray):
    # verl's default (v1) runner; the legacy runner registers through the same __init__ code
    from fgrpo_sim.verl.main_ppo import FocalTaskRunnerV1

    runner = FocalTaskRunnerV1.remote()
    names = ray.get(runner.registered_estimators.remote(), timeout=240)
    pid = ray.get(runner.__ray_call__.remote(lambda self: os.getpid()), timeout=60)
    assert pid != os.getpid()  # a separate process: the driver's registry is not what we see
    assert {"focal_grpo", "focal_rloo", "grpo"} <= set(names)

    def focal_advantage_in_actor(self):  # runs in the actor process, through verl's registry there
        import torch
        from verl.trainer.ppo.core_algos import get_adv_estimator_fn

        rewards = torch.tensor([[1.0], [0.0], [0.0], [0.0]])
        adv, _ = get_adv_estimator_fn("focal_grpo")(token_level_rewards=rewards, response_mask=torch.ones(4, 1),
                                                    index=["a"] * 4, config={"focal_gamma": 1.0})
        return adv.flatten().tolist()

    adv = ray.get(runner.__ray_call__.remote(focal_advantage_in_actor), timeout=120)
    # verl's GRPO on [1, 0, 0, 0]: (R - 0.25) / (unbiased std 0.5 + 1e-6); focal weight g = 1 - 1/4
    assert adv == pytest.approx([0.75 * 0.75 / (0.5 + 1e-6), *[0.75 * -0.25 / (0.5 + 1e-6)] * 3])
    ray.kill(runner)
