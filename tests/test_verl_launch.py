"""The verl launcher and scripts before anything starts: checks, save frequency, interpreter, help.

- focal / DS settings that would silently train something else are refused before Ray (exit 2, one line);
- `trainer.save_freq=epoch` becomes rows // train_batch_size of the prepared parquet;
- the scripts find the repository's .venv-verl, and say `make install-verl` in one line without it;
- `--help` starts with the focal keys; `group-size.sh N` checks N.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from extras import require

require("verl")

from fgrpo_sim.verl.checks import check_launch, resolve_save_freq, save_freq_per_epoch  # noqa: E402
from fgrpo_sim.verl.main_ppo import compose_config  # noqa: E402
from fgrpo_sim.verl.prepare_data import write_parquet  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RECIPES = ROOT / "recipes" / "verl"


def env(**extra) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "SAVE_FREQ", "N", "DATA_DIR")}
    return {**base, "PYTHONPATH": str(ROOT), **extra}


# ---------------------------------------------------------------- launch checks

@pytest.mark.parametrize("overrides, message", [
    (["algorithm.adv_estimator=grpo", "algorithm.focal_gamma=0.5"],
     "algorithm.focal_gamma=0.5 has no effect with algorithm.adv_estimator=grpo: use algorithm.adv_estimator=focal_grpo"),
    (["algorithm.adv_estimator=rloo", "algorithm.focal_monitor_rho=0.1"], "use algorithm.adv_estimator=focal_rloo"),
    (["algorithm.adv_estimator=focal_grpo", "algorithm.focal_gamma=-0.5"], r"algorithm.focal_gamma must be in \[0"),
    (["algorithm.adv_estimator=grpo", "algorithm.focal_gamma=-0.5"], r"algorithm.focal_gamma must be in \[0"),
    (["algorithm.adv_estimator=focal_grpo", "algorithm.focal_gamma=0.5", "algorithm.use_kl_in_reward=True"],
     "use_kl_in_reward=True"),
    (["algorithm.adv_estimator=focal_grpo", "~algorithm.focal_gamma"], "algorithm.focal_gamma is missing"),
    (["algorithm.adv_estimator=grpo", "algorithm.ds_gamma_correct=0.001"], "use algorithm.adv_estimator=ds_grpo"),
    (["algorithm.adv_estimator=ds_grpo"], "ds_gamma_correct > 0"),
])
def test_launch_checks_refuse_silent_fallbacks(overrides, message):
    with pytest.raises(ValueError, match=message):
        check_launch(compose_config(overrides))


def test_launch_checks_pass_the_intended_settings():
    for overrides in (["algorithm.adv_estimator=grpo"], ["algorithm.adv_estimator=focal_grpo", "algorithm.focal_gamma=0.5"],
                      ["algorithm.adv_estimator=focal_rloo", "algorithm.focal_gamma=1"],
                      ["algorithm.adv_estimator=ds_grpo", "algorithm.ds_gamma_correct=0.001"]):
        check_launch(compose_config(overrides))


def test_grpo_script_with_a_focal_gamma_exits_2_before_ray(tmp_path):
    """The issue's case, end to end through the real launcher: one line naming focal_grpo, exit 2, no Ray."""
    proc = subprocess.run(["bash", str(RECIPES / "grpo.sh"), "algorithm.focal_gamma=0.5"], cwd=tmp_path,
                          env=env(PYTHON=sys.executable), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "algorithm.adv_estimator=focal_grpo" in errors[0]
    assert "Traceback" not in proc.stderr and "ray.init" not in proc.stdout + proc.stderr
    # Hydra's outputs/<date>/<time>/ (.hydra/, main_ppo.log) no longer lands in the working tree (issue 32)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ---------------------------------------------------------------- save frequency from the data

def rows(n: int) -> list[dict]:
    return [{"data_source": "t", "prompt": [{"role": "user", "content": f"q{i}"}], "ability": "math",
             "reward_model": {"style": "rule", "ground_truth": str(i)}, "extra_info": {"index": i}} for i in range(n)]


@pytest.mark.parametrize("n_rows, batch, steps", [(10, 4, 2), (13, 4, 3), (39202, 256, 153), (39424, 256, 154)])
def test_save_freq_is_one_epoch_of_the_data(tmp_path, n_rows, batch, steps):
    if n_rows > 1000:  # the paper's arithmetic (153 only for 39,168-39,423 rows), without writing 39k rows
        assert save_freq_per_epoch(n_rows, batch) == steps
        return
    path = write_parquet(rows(n_rows), tmp_path / "train.parquet")
    cfg = compose_config([f"data.train_files={path}", f"data.train_batch_size={batch}", "trainer.save_freq=epoch"])
    assert resolve_save_freq(cfg) == steps and cfg.trainer.save_freq == steps


def test_save_freq_numbers_are_kept_and_missing_data_is_named(tmp_path):
    cfg = compose_config(["trainer.save_freq=7"])
    assert resolve_save_freq(cfg) is None and cfg.trainer.save_freq == 7
    with pytest.raises(ValueError, match="prepare-data.sh"):
        resolve_save_freq(compose_config([f"data.train_files={tmp_path}/none.parquet", "trainer.save_freq=epoch"]))
    with pytest.raises(ValueError, match="fewer than one batch"):
        save_freq_per_epoch(100, 256)


# ---------------------------------------------------------------- interpreter discovery

def copy_recipes(root: Path) -> Path:
    shutil.copytree(RECIPES, root / "recipes" / "verl")
    return root / "recipes" / "verl"


def test_scripts_without_a_verl_environment_name_make_install_verl(tmp_path):
    recipes = copy_recipes(tmp_path / "clone")  # a clone without .venv-verl
    proc = subprocess.run(["bash", str(recipes / "f-grpo.sh"), "--cfg", "job"], cwd=tmp_path, env=env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "make install-verl" in proc.stderr
    # an interpreter without verl / hydra (the old default, python3): the same one line, not a traceback
    nohydra = tmp_path / "python"
    nohydra.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")  # -S: no site-packages, so no hydra
    nohydra.chmod(0o755)
    proc = subprocess.run(["bash", str(recipes / "f-grpo.sh"), "--cfg", "job"], cwd=tmp_path,
                          env=env(PYTHON=str(nohydra)), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "make install-verl" in proc.stderr


def test_scripts_find_the_repositorys_venv_verl_from_any_directory(tmp_path):
    recipes = copy_recipes(tmp_path / "clone")
    venv_python = tmp_path / "clone" / ".venv-verl" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    venv_python.chmod(0o755)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run(["bash", str(recipes / "f-grpo.sh"), "--cfg", "job"], cwd=elsewhere, env=env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "adv_estimator: focal_grpo" in proc.stdout and "save_freq: epoch" in proc.stdout


# ---------------------------------------------------------------- help and the group-size script

def test_help_starts_with_the_focal_keys_and_points_to_cfg_job():
    proc = subprocess.run([sys.executable, "-m", "fgrpo_sim.verl.main_ppo", "--help"], env=env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert len(lines) < 40
    first = "\n".join(lines[:12])
    for key in ("algorithm.adv_estimator=focal_grpo", "algorithm.focal_gamma=0.0", "algorithm.focal_reward_correct",
                "algorithm.focal_monitor_rho", "algorithm.ds_gamma_correct"):
        assert key in first
    assert "--cfg job" in proc.stdout and "actor_rollout_ref.model.path" in proc.stdout


@pytest.mark.parametrize("arg", ["", "0", "eight", "-4"])
def test_group_size_script_needs_a_positive_n(tmp_path, arg):
    proc = subprocess.run(["bash", str(RECIPES / "group-size.sh"), *([arg] if arg else [])], cwd=tmp_path,
                          env=env(PYTHON=sys.executable), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "usage" in proc.stderr
