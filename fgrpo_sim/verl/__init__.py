"""F-GRPO / F-DAPO / F-CISPO for verl 0.9.x as a plugin: no fork of verl.

- `fgrpo_sim.verl.estimators`: advantage estimators `focal_grpo` and `focal_rloo`, registered with
  verl's own `register_adv_est`: verl's GRPO / RLOO advantage times the focal weight
  g = (1 - mu_hat)^gamma of each prompt group (paper Sec. 4), weight and mu_hat from `fgrpo_sim.core`.
- `fgrpo_sim.verl.main_ppo`: `python -m fgrpo_sim.verl.main_ppo <verl Hydra overrides>`, verl's
  `main_ppo` with the estimators registered inside the TaskRunner actor and the focal settings
  (`algorithm.focal_gamma`, ...) in the config.
- `fgrpo_sim.verl.ds_grpo`: the DS-GRPO control (`adv_estimator=ds_grpo`), the TRL control's Eq. 6 on verl's GRPO.
- `fgrpo_sim.verl.checks`: launch-time checks of the focal / DS settings, `trainer.save_freq=epoch`.
- `fgrpo_sim.verl.optim`: AdamW without weight decay on biases and norm weights (as TRL's Trainer).
- `fgrpo_sim.verl.export`: verl checkpoint -> Hugging Face folder (`fgrpo llm export-verl`).
- `fgrpo_sim.verl.rehearsal`: every verl stage that runs on CPU, on small data (issue 19's rehearsal).
- `fgrpo_sim.verl.reward`: the math-verify reward as verl's custom reward function.
- `fgrpo_sim.verl.prepare_data`: `fgrpo llm prepare-data` JSONL -> verl's parquet format.

F-DAPO and F-CISPO need no code here: they are `focal_grpo` plus verl's own policy losses and clip
settings (see recipes/verl/ and docs/verl.md). Importing this package does not import verl.
"""

#: Advantage estimators this plugin registers with verl, and the verl estimator each one weights.
FOCAL_ESTIMATORS = {"focal_grpo": "grpo", "focal_rloo": "rloo"}
#: The DS-GRPO control (paper Table 3), registered the same way: verl's GRPO shifted by Eq. 6 (ds_grpo.py).
DS_ESTIMATORS = {"ds_grpo": "grpo"}

__all__ = ["FOCAL_ESTIMATORS", "DS_ESTIMATORS"]
