"""Every script in recipes/verl/ composes a full verl config through the launcher, equal to the paper's table.

The scripts run for real (bash), with PYTHON pointed at a stub that records the launcher's argv; the
overrides are then composed with the launcher's own Hydra config (compose_config), which rejects any
unknown key. One script also goes through the real launcher with Hydra's `--cfg job` (no Ray).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from extras import require

require("verl")

from omegaconf import OmegaConf  # noqa: E402

from fgrpo_sim.verl.main_ppo import compose_config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RECIPES = ROOT / "recipes" / "verl"

# Paper Table 5 / App. L.2 (Qwen2.5-7B): config key -> value, the same for every run.
PAPER = {
    "data.train_batch_size": 256,
    "data.max_prompt_length": 1024,
    "data.max_response_length": 8192,
    "actor_rollout_ref.rollout.response_length": 8192,
    "actor_rollout_ref.actor.strategy": "fsdp2",
    "actor_rollout_ref.ref.strategy": "fsdp2",
    "actor_rollout_ref.actor.optim.lr": 1e-6,
    "actor_rollout_ref.actor.optim.lr_scheduler_type": "constant",
    "actor_rollout_ref.actor.optim.lr_warmup_steps": 15,
    "actor_rollout_ref.actor.optim.weight_decay": 0.01,
    "actor_rollout_ref.actor.optim.betas": [0.9, 0.999],
    "actor_rollout_ref.actor.optim.clip_grad": 1.0,
    "actor_rollout_ref.actor.ppo_mini_batch_size": 64,
    "actor_rollout_ref.actor.ppo_epochs": 1,
    "actor_rollout_ref.actor.loss_agg_mode": "token-mean",
    "actor_rollout_ref.actor.use_kl_loss": False,
    "actor_rollout_ref.actor.entropy_coeff": 0,
    "algorithm.use_kl_in_reward": False,
    "actor_rollout_ref.rollout.name": "sglang",
    "actor_rollout_ref.rollout.temperature": 1.0,
    "actor_rollout_ref.rollout.top_p": 1.0,
    "actor_rollout_ref.rollout.top_k": -1,
    "actor_rollout_ref.model.path": "Qwen/Qwen2.5-7B",
    "reward.custom_reward_function.path": "pkg://fgrpo_sim.verl.reward",
    "reward.custom_reward_function.name": "compute_score",
    "trainer.total_epochs": 10,
    "trainer.nnodes": 2,
    "trainer.n_gpus_per_node": 8,
    "algorithm.focal_reward_correct": 1.0,
    "algorithm.focal_reward_wrong": 0.0,
    "trainer.save_freq": "epoch",  # the launcher turns it into rows // 256 (test_save_freq_is_one_epoch_of_the_data)
    "actor_rollout_ref.actor.optim.optimizer_impl": "fgrpo_sim.verl.optim",  # no decay on biases / norms, as TRL
    "actor_rollout_ref.actor.optim.optimizer": "AdamW",
    "algorithm.rollout_correction.rollout_is": None,  # no IS correction, as the TRL recipes
}
LOSS = {  # (loss_mode, clip_ratio_low, clip_ratio_high), paper App. B
    "grpo": ("vanilla", 0.2, 0.2), "dapo": ("vanilla", 0.2, 0.28), "cispo": ("cispo", 1.0, 5.0),
}
# Table 3 controls at N = 8 (recipes/qwen2.5-7b/*.yaml hold the TRL side; test_verl_trl_alignment.py compares)
CONTROLS = {
    "grpo-low-lr.sh": {"actor_rollout_ref.actor.optim.lr": 6.8e-7},
    "grpo-entropy-1e-3.sh": {"actor_rollout_ref.actor.entropy_coeff": 1e-3},
    "grpo-kl-1e-3.sh": {"actor_rollout_ref.actor.use_kl_loss": True, "actor_rollout_ref.actor.kl_loss_coef": 1e-3,
                        "actor_rollout_ref.actor.kl_loss_type": "low_var_kl"},
    "ds-grpo.sh": {"algorithm.ds_gamma_correct": 1e-3, "algorithm.ds_gamma_incorrect": 0.0,
                   "algorithm.ds_logprob": "sum"},
}
# script (+ its arguments) -> (adv_estimator, gamma, loss, N); gammas are the paper's picks for Qwen2.5-7B (Sec. 5.3)
RUNS = {
    "grpo.sh": ("grpo", 0.0, "grpo", 8), "f-grpo.sh": ("focal_grpo", 0.5, "grpo", 8),
    "dapo.sh": ("grpo", 0.0, "dapo", 8), "f-dapo.sh": ("focal_grpo", 0.5, "dapo", 8),
    "cispo.sh": ("grpo", 0.0, "cispo", 8), "f-cispo.sh": ("focal_grpo", 1.0, "cispo", 8),
    "grpo-low-lr.sh": ("grpo", 0.0, "grpo", 8), "grpo-entropy-1e-3.sh": ("grpo", 0.0, "grpo", 8),
    "grpo-kl-1e-3.sh": ("grpo", 0.0, "grpo", 8), "ds-grpo.sh": ("ds_grpo", 0.0, "grpo", 8),
    **{f"group-size.sh {n}": ("grpo", 0.0, "grpo", n) for n in (2, 4, 8, 16, 32)},
}


def test_every_launch_script_is_listed():
    scripts = {str(p.relative_to(RECIPES)) for p in RECIPES.rglob("*.sh")} - {"common.sh", "prepare-data.sh", "python.sh"}
    assert scripts == {run.split()[0] for run in RUNS}


def write_stub(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in interpreter that records the launcher's argv (and passes python.sh's import check)."""
    out = tmp_path / "argv.json"
    stub = tmp_path / "python"
    stub.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"if sys.argv[1:3] == ['-m', 'fgrpo_sim.verl.main_ppo']: json.dump(sys.argv[1:], open({str(out)!r}, 'w'))\n")
    stub.chmod(0o755)
    return stub, out


def clean_env(**extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MODEL", "DATA_DIR", "NNODES", "GPUS_PER_NODE", "N", "SAVE_FREQ", "PYTHON")}
    return {**env, **extra}


def launcher_argv(script: str, tmp_path: Path) -> list[str]:
    """Run the script with a stub interpreter; return the Hydra overrides it hands the launcher."""
    stub, out = write_stub(tmp_path)
    name, *args = script.split()
    subprocess.run(["bash", str(RECIPES / name), *args, "trainer.logger=[console]"], check=True,
                   env=clean_env(PYTHON=str(stub)), cwd=tmp_path)
    argv = json.loads(out.read_text())
    assert argv[:2] == ["-m", "fgrpo_sim.verl.main_ppo"]
    return argv[2:]


@pytest.mark.parametrize("script", sorted(RUNS))
def test_script_composes_the_papers_config(script, tmp_path):
    cfg = compose_config(launcher_argv(script, tmp_path))
    estimator, gamma, loss, n = RUNS[script]
    expected = {**PAPER, **CONTROLS.get(script, {}), "algorithm.adv_estimator": estimator, "algorithm.focal_gamma": gamma,
                "actor_rollout_ref.rollout.n": n,
                "actor_rollout_ref.actor.policy_loss.loss_mode": LOSS[loss][0],
                "actor_rollout_ref.actor.clip_ratio_low": LOSS[loss][1],
                "actor_rollout_ref.actor.clip_ratio_high": LOSS[loss][2]}
    got = {key: OmegaConf.select(cfg, key) for key in expected}
    got = {k: list(v) if OmegaConf.is_list(v) else v for k, v in got.items()}
    assert got == expected
    assert cfg.data.train_files == "data/verl/train.parquet"
    # verl's own checks (batch divisibility over 16 GPUs etc.); a reference model for the KL control only; no critic
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    from fgrpo_sim.verl.checks import check_launch

    check_launch(cfg)
    assert need_reference_policy(cfg) == (script == "grpo-kl-1e-3.sh") and not need_critic(cfg)
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=False)


def test_launcher_cfg_job_composes_without_starting_ray(tmp_path):
    """The real launcher, as a user would dry-run it: `recipes/verl/f-cispo.sh --cfg job`."""
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(["bash", str(RECIPES / "f-cispo.sh"), "--cfg", "job"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    cfg = yaml.safe_load(proc.stdout)
    assert cfg["algorithm"]["adv_estimator"] == "focal_grpo"
    assert cfg["algorithm"]["focal_gamma"] == 1.0
    assert cfg["actor_rollout_ref"]["actor"]["policy_loss"]["loss_mode"] == "cispo"
    assert "ray init" not in proc.stdout + proc.stderr


def test_focal_keys_need_no_plus_and_typos_are_rejected():
    cfg = compose_config(["algorithm.focal_gamma=2.0", "algorithm.focal_monitor_rho=0.1"])
    assert (cfg.algorithm.focal_gamma, cfg.algorithm.focal_monitor_rho) == (2.0, 0.1)
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException):
        compose_config(["algorithm.focal_gama=0.5"])
