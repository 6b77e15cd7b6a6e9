"""verl's plugin hook: `import verl` loads this module (entry point group `verl.plugins`, pyproject.toml), so
verl's own launcher knows the focal estimators in every process, Ray actors included:

    python -m verl.trainer.main_ppo algorithm.adv_estimator=focal_grpo +algorithm.focal_gamma=0.5

verl's config has no focal keys, hence Hydra's `+`. `python -m fgrpo_sim.verl.main_ppo` needs no `+` and adds the
launch checks, `trainer.save_freq=epoch` and the focal/* metrics (docs/verl.md). verl swallows a plugin's errors
(logged at debug level), so a failure here is silent: tests/test_verl_plugin.py checks the registration.
"""

from fgrpo_sim.verl.estimators import register_focal_estimators

register_focal_estimators()
