"""`python -m fgrpo_sim.verl.main_ppo --help`: the focal keys and the usual overrides first (verl's full
config is over 1,000 lines: `--cfg job` prints it). Kept apart from main_ppo so help needs no verl import.
"""

from __future__ import annotations


def short_help() -> str:
    """What `--help` prints: the focal and DS keys with their defaults, the usual overrides, then where the rest is."""
    from fgrpo_sim.verl import DS_ESTIMATORS, FOCAL_ESTIMATORS
    from fgrpo_sim.verl.ds_grpo import DS_DEFAULTS
    from fgrpo_sim.verl.estimators import DEFAULTS

    focal = "\n".join(f"  algorithm.{key}={value}" for key, value in {**DEFAULTS, **DS_DEFAULTS}.items())
    return f"""usage: python -m fgrpo_sim.verl.main_ppo [verl Hydra overrides]   (recipes: recipes/verl/*.sh)

verl's main_ppo with the focal estimators (docs/verl.md). Focal / DS-GRPO keys (no '+' needed; defaults):
  algorithm.adv_estimator={'|'.join([*FOCAL_ESTIMATORS, *DS_ESTIMATORS])}|grpo|rloo|...
{focal}
  (focal_gamma, focal_smoothing, focal_reward_* and focal_monitor_rho need a focal estimator; ds_* need ds_grpo; checked at launch)

Usual overrides:
  actor_rollout_ref.model.path=MODEL            data.train_files=PARQUET data.val_files=PARQUET
  data.train_batch_size=256                     actor_rollout_ref.actor.ppo_mini_batch_size=64
  actor_rollout_ref.rollout.n=8                 actor_rollout_ref.actor.optim.lr=1e-6
  trainer.total_epochs=10                       trainer.save_freq=epoch (= rows // train_batch_size) or STEPS
  trainer.nnodes=2 trainer.n_gpus_per_node=8    trainer.default_local_dir=checkpoints/...
  "trainer.logger=[console,wandb]"              actor_rollout_ref.rollout.name=sglang

Full composed config (over 1,000 lines; starts nothing): python -m fgrpo_sim.verl.main_ppo --cfg job [overrides]
Hydra's own help: --hydra-help. Export a checkpoint for `fgrpo llm eval`: fgrpo llm export-verl CHECKPOINT OUT"""


__all__ = ["short_help"]
