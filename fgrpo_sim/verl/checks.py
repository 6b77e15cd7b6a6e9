"""Launch-time checks of the verl launcher, run on the composed config before Ray starts or a model loads.

`check_launch(config)` raises a one-line ValueError (the launcher prints it and exits 2) for:
- `algorithm.focal_gamma` missing or negative, and every other focal setting out of range
  (`fgrpo_sim.verl.estimators.focal_settings`);
- `algorithm.use_kl_in_reward=True` with a focal estimator (mu_hat would be computed from KL-shaped rewards);
- a focal setting (gamma != 0, or any focal_* key changed from its default) with an estimator that does
  not read it: `grpo.sh algorithm.focal_gamma=0.5` would otherwise train plain GRPO;
- DS-GRPO settings (`algorithm.ds_gamma_correct` ...) without `adv_estimator=ds_grpo`, or out of range.

`resolve_save_freq(config)` turns `trainer.save_freq=epoch` (the recipes' default) into verl's integer:
the steps of one epoch, rows of `data.train_files` // `data.train_batch_size` (verl drops the last
partial batch: `steps_per_epoch = len(dataset) // train_batch_size`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fgrpo_sim.verl import DS_ESTIMATORS, FOCAL_ESTIMATORS

#: `trainer.save_freq` value that the launcher replaces by the steps of one epoch.
SAVE_PER_EPOCH = "epoch"


def _get(config: Any, key: str, default: Any = None) -> Any:
    from fgrpo_sim.verl.estimators import algo_setting

    return algo_setting(config, key, default)


def check_focal_settings(algorithm: Any) -> None:
    """The `algorithm.*` checks above, on the algorithm section of the config."""
    from fgrpo_sim.verl.estimators import DEFAULTS, focal_settings

    estimator = str(_get(algorithm, "adv_estimator", ""))
    gamma = _get(algorithm, "focal_gamma")
    if gamma is None:
        raise ValueError("algorithm.focal_gamma is missing: launch with `python -m fgrpo_sim.verl.main_ppo` "
                         "(its config has it) or add +algorithm.focal_gamma=...")
    if estimator in FOCAL_ESTIMATORS:
        focal_settings(algorithm)  # range checks and the use_kl_in_reward refusal, one message each
        return
    from fgrpo_sim.validation import check_range

    check_range("algorithm.focal_gamma", gamma, 0.0)
    changed = [f"algorithm.{key}={_get(algorithm, key)}" for key, default in DEFAULTS.items()
               if _get(algorithm, key, default) != default]
    if changed:
        base = FOCAL_ESTIMATORS_BY_BASE.get(estimator, "focal_grpo")
        raise ValueError(f"{', '.join(changed)} has no effect with algorithm.adv_estimator={estimator}: use "
                         f"algorithm.adv_estimator={base} for the focal weight, or drop the focal setting")


#: verl estimator -> its focal variant, for the error message above.
FOCAL_ESTIMATORS_BY_BASE = {base: focal for focal, base in FOCAL_ESTIMATORS.items()}


def check_ds_settings(algorithm: Any) -> None:
    """DS-GRPO keys: in range, and only together with `adv_estimator=ds_grpo`."""
    from fgrpo_sim.verl.ds_grpo import DS_DEFAULTS, ds_settings

    estimator = str(_get(algorithm, "adv_estimator", ""))
    if estimator in DS_ESTIMATORS:
        ds_settings(algorithm)
        return
    changed = [f"algorithm.{key}={_get(algorithm, key)}" for key, default in DS_DEFAULTS.items()
               if _get(algorithm, key, default) != default]
    if changed:
        raise ValueError(f"{', '.join(changed)} has no effect with algorithm.adv_estimator={estimator}: "
                         "use algorithm.adv_estimator=ds_grpo")


def check_launch(config: Any) -> None:
    """Every launch-time check (ValueError naming the key); cheap, imports no model."""
    check_focal_settings(config.algorithm)
    check_ds_settings(config.algorithm)


def parquet_rows(paths: Any) -> int:
    """Rows of one parquet file or a list of them (from the footer; the data is not read)."""
    import pyarrow.parquet as pq

    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    total = 0
    for path in files:
        if not Path(path).is_file():
            raise ValueError(f"data.train_files: {path} not found; write it with recipes/verl/prepare-data.sh "
                             "(or set trainer.save_freq to a number of steps)")
        total += pq.ParquetFile(path).metadata.num_rows
    return total


def save_freq_per_epoch(rows: int, batch_size: int) -> int:
    """verl's steps per epoch: rows // batch (its train loader drops the last partial batch)."""
    from fgrpo_sim.validation import check_integer

    check_integer("data.train_batch_size", batch_size, 1)
    steps = int(rows) // int(batch_size)
    if steps < 1:
        raise ValueError(f"data.train_files has {rows} rows, fewer than one batch of data.train_batch_size={batch_size}")
    return steps


def resolve_save_freq(config: Any) -> int | None:
    """Replace `trainer.save_freq=epoch` by the steps of one epoch (in place); returns it, or None if numeric."""
    from omegaconf import open_dict

    if str(config.trainer.save_freq) != SAVE_PER_EPOCH:
        return None
    steps = save_freq_per_epoch(parquet_rows(config.data.train_files), config.data.train_batch_size)
    with open_dict(config):
        config.trainer.save_freq = steps
    return steps


__all__ = ["SAVE_PER_EPOCH", "check_focal_settings", "check_ds_settings", "check_launch", "parquet_rows",
           "save_freq_per_epoch", "resolve_save_freq"]
