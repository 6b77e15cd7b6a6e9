"""`python -m fgrpo_sim.verl.main_ppo [verl Hydra overrides]`: verl's main_ppo with focal estimators.

It behaves like `python -m verl.trainer.main_ppo`: same Hydra config (verl's `ppo_trainer`, extended by
config/focal_ppo_trainer.yaml with `algorithm.focal_gamma` & co.), same validation, same `run_ppo`.
The differences are inside verl's TaskRunner Ray actor, the process that computes advantages:
- it registers `focal_grpo` / `focal_rloo` with verl's registry before the trainer is built (the
  driver's registry does not travel to a Ray actor; every actor process must register itself);
- with a focal estimator, the trainer (verl's v1 trainer of the configured `trainer.v1.trainer_mode`,
  subclassed) moves the focal metrics into verl's metrics dict right after computing advantages.

Before Ray starts, the launcher checks the focal / DS-GRPO settings (`fgrpo_sim.verl.checks`: one line on
stderr, exit 2) and turns `trainer.save_freq=epoch` into the steps of one epoch of `data.train_files`.

`--help` prints the focal keys and the usual overrides; Hydra's own flags work: `--cfg job` prints the
composed config (over 1,000 lines) and starts nothing (no Ray), `--hydra-help` is Hydra's help.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and any(arg in ("--help", "-h") for arg in sys.argv[1:]):
    from fgrpo_sim.verl.launcher_help import short_help  # before verl's imports: help in a second, not 20

    print(short_help())
    sys.exit(0)

import hydra
import ray
from omegaconf import DictConfig
from verl.trainer.main_ppo import TaskRunnerV1
from verl.trainer.main_ppo_v0 import TaskRunner

from fgrpo_sim.verl import DS_ESTIMATORS, FOCAL_ESTIMATORS
from fgrpo_sim.verl.estimators import pop_focal_metrics, register_focal_estimators

CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "config")
CONFIG_NAME = "focal_ppo_trainer"


def compose_config(overrides: list[str] | tuple[str, ...] = ()) -> DictConfig:
    """The config the launcher would run with these overrides (Hydra compose API; starts nothing)."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        return compose(config_name=CONFIG_NAME, overrides=list(overrides))


def with_focal_metrics(trainer_cls: type) -> type:
    """A subclass of verl's v1 trainer that logs the focal metrics with the step's other metrics."""

    def _compute_advantage(self, batch, metrics: dict):
        batch = trainer_cls._compute_advantage(self, batch, metrics=metrics)
        metrics.update(pop_focal_metrics())
        return batch

    return type(f"Focal{trainer_cls.__name__}", (trainer_cls,), {"_compute_advantage": _compute_advantage})


def install_focal_trainer(config: DictConfig) -> None:
    """Swap the trainer verl will build for its focal-metrics subclass (this process only).

    With ds_grpo, verl's v1 advantage call is wrapped to hand the estimator the rollouts' old_log_probs.
    """
    if config.algorithm.adv_estimator in DS_ESTIMATORS:
        from fgrpo_sim.verl.ds_grpo import install_old_log_probs_passing

        install_old_log_probs_passing()
        return
    if config.algorithm.adv_estimator not in FOCAL_ESTIMATORS:
        return
    from verl.trainer.ppo.v1 import trainer_base

    mode = config.trainer.v1.trainer_mode
    current = trainer_base.get_trainer_cls(mode)  # ValueError listing the modes when unknown
    if not current.__name__.startswith("Focal"):
        trainer_base.TRAINER_REGISTRY[mode] = with_focal_metrics(current)


def _base_class(actor_class):
    """The plain Python class behind a @ray.remote actor class."""
    return getattr(actor_class, "__ray_actor_class__", actor_class)


def _registered_estimators() -> list[str]:
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY

    return sorted(ADV_ESTIMATOR_REGISTRY)


class _FocalTaskRunnerV1(_base_class(TaskRunnerV1)):
    """verl's TaskRunnerV1, with the focal estimators registered inside the actor."""

    def __init__(self):
        register_focal_estimators()
        super().__init__()

    def registered_estimators(self) -> list[str]:
        return _registered_estimators()

    def run(self, config):
        install_focal_trainer(config)
        return super().run(config)


class _FocalTaskRunner(_base_class(TaskRunner)):
    """verl's legacy (v0) TaskRunner with the focal estimators registered (no focal metrics there)."""

    def __init__(self):
        register_focal_estimators()
        super().__init__()

    def registered_estimators(self) -> list[str]:
        return _registered_estimators()


FocalTaskRunnerV1 = ray.remote(_FocalTaskRunnerV1)
FocalTaskRunner = ray.remote(_FocalTaskRunner)


@hydra.main(config_path="config", config_name=CONFIG_NAME, version_base=None)
def main(config: DictConfig) -> None:
    """verl's `main_ppo.main` with the focal TaskRunners (same device setup, validation and run_ppo)."""
    from verl.trainer.main_ppo import run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    from fgrpo_sim.verl.checks import check_launch, resolve_save_freq

    register_focal_estimators()  # the driver too, so driver-side checks know the names
    try:
        check_launch(config)
        resolve_save_freq(config)
    except ValueError as exc:  # before Ray and any model: one line, exit 2 (the project's CLI convention)
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    run_ppo(config, task_runner_class=FocalTaskRunnerV1 if config.trainer.use_v1 else FocalTaskRunner)


if __name__ == "__main__":
    main()
