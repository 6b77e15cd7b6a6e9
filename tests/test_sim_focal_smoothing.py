"""focal_smoothing through the simulators: the weight each one applies is (1 - (X + alpha) / (N + 2 alpha))^gamma,
alpha = 0 keeps the ids and fingerprints of tables written before the option existed."""

from __future__ import annotations

import math

import pytest
import torch

from fgrpo_sim import core
from fgrpo_sim.sim.categorical import CategoricalBatch
from fgrpo_sim.sim.categorical.config import CategoricalConfig
from fgrpo_sim.sim.categorical.sampling import native_available
from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec, advantage_tables, chunk_id, variants


def _g(x, n, gamma, alpha):
    return (1.0 - (x + alpha) / (n + 2.0 * alpha)) ** gamma


def test_group_size_tables_use_the_smoothed_weight():
    pairs = [(4, 1.0), (8, 0.5)]
    raw_c, raw_w = advantage_tables(pairs, 8)
    smooth_c, smooth_w = advantage_tables(pairs, 8, focal_smoothing=0.5)
    for i, (n, gamma) in enumerate(pairs):
        for x in range(1, n):  # active groups: the raw table is (1 - x/n)^gamma times GRPO's advantage
            plain_c = raw_c[i, x].item() / _g(x, n, gamma, 0.0)
            plain_w = raw_w[i, x].item() / _g(x, n, gamma, 0.0)
            assert smooth_c[i, x].item() == pytest.approx(plain_c * _g(x, n, gamma, 0.5), rel=1e-12)
            assert smooth_w[i, x].item() == pytest.approx(plain_w * _g(x, n, gamma, 0.5), rel=1e-12)
    assert torch.equal(advantage_tables(pairs, 8, 0.0)[0], raw_c)


def test_group_size_fingerprint_and_names():
    spec = GroupSizeStudySpec()
    # the id the code without focal_smoothing computes (n-check's branch, seeding per-row-stream-v2, before the
    # merge): alpha 0 resumes tables written there
    assert chunk_id(spec, "adam", "orthogonal") == "rare_correct_prob=1/adam/orthogonal#ff9785c82677"
    smoothed = GroupSizeStudySpec(focal_smoothing=0.5)
    assert chunk_id(smoothed, "adam", "orthogonal") != chunk_id(spec, "adam", "orthogonal")
    names = [name for name, _, _ in variants(smoothed, 0.01)]
    assert "F-GRPO gamma=0.5 alpha=0.5" in names and "GRPO" in names
    assert "F-GRPO gamma=0.5" in [name for name, _, _ in variants(spec, 0.01)]
    with pytest.raises(ValueError, match="focal_smoothing must be in"):
        GroupSizeStudySpec(focal_smoothing=-1.0).validate()


def test_population_objective_uses_the_smoothed_weight():
    from fgrpo_sim.sim.population import TrainSpec, core_objective

    rewards = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    logp = torch.zeros(12, 1, dtype=torch.float64, requires_grad=True)
    train = TrainSpec(gamma=1.0, focal_smoothing=0.5, group_size=4)
    _, _, focal = core_objective(logp, rewards, train, None, 1)
    weights = torch.tensor([_g(x, 4, 1.0, 0.5) for x in (1, 3, 4)], dtype=torch.float64)
    assert torch.allclose(focal, weights[:, None] * core.grpo_advantages(rewards), rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="focal_smoothing must be in"):
        TrainSpec(focal_smoothing=math.nan).validate(8)


BACKENDS = ["torch"] + (["native"] if native_available() else [])


@pytest.mark.parametrize("sampler", BACKENDS)
def test_categorical_weight_is_the_smoothed_one(sampler):
    """Both backends' recorded focal weight against the formula at each run's own correct count X."""
    sizes, gammas = [2, 7, 64], [1.0, 0.5, 2.0]
    cfg = CategoricalConfig(num_actions=300, num_correct=30, dtype="float64", device="cpu", sampler=sampler,
                            focal_smoothing=0.5)
    batch = CategoricalBatch(cfg, sizes, gammas, [0, 1, 2])
    batch.step()
    mu_hat, focal = batch.last_mu_hat, batch.last_focal
    for r, (n, gamma) in enumerate(zip(sizes, gammas)):
        x = round(mu_hat[r].item() * n)
        assert focal[r].item() == pytest.approx(_g(x, n, gamma, 0.5), rel=1e-12)


def test_categorical_ids_keep_their_alpha_zero_values():
    # ids main computed before focal_smoothing existed (tables written then still resume)
    assert CategoricalConfig(device="cpu", sampler="torch").config_id() == "e888d866c152"
    if native_available():
        assert CategoricalConfig(device="cpu", sampler="native").config_id() == "06d607a6c593"
    assert CategoricalConfig(device="cpu", sampler="torch", focal_smoothing=0.5).config_id() != "e888d866c152"
    with pytest.raises(ValueError, match="focal_smoothing must be in"):
        CategoricalConfig(focal_smoothing=-0.5)


def test_cli_options_reach_the_simulators(run_cli, tmp_path):
    out = tmp_path / "c.csv"
    result = run_cli("simulate", "categorical", "--out", str(out), "--n", "4", "--gamma", "1", "--seeds", "0",
                     "--steps", "2", "--num-actions", "50", "--num-correct", "5", "--focal-smoothing", "0.5",
                     "--device", "cpu", "--no-progress", "--json")
    assert result.exit_code == 0, result.stderr
    for args in (["simulate", "categorical", "--out", str(tmp_path / "c2.csv")],
                 ["simulate", "population", "--out", str(tmp_path / "p.csv")],
                 ["simulate", "group-size", "--out", str(tmp_path / "g.csv")]):
        bad = run_cli(*args, "--focal-smoothing", "-1", "--device", "cpu")
        assert bad.exit_code == 2 and "--focal-smoothing must be in [0, inf)" in bad.stderr, bad.stderr
        assert bad.stderr.strip().count("\n") == 0


#: commands with --gamma that do not take --focal-smoothing yet, and why
NO_SMOOTHING = {"maze compare": "compares two finished runs by gamma; it trains nothing"}


def test_every_command_with_gamma_takes_focal_smoothing():
    from fgrpo_sim.cli import _command

    def leaves(command, path=()):
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                yield from leaves(sub, (*path, name))
        else:
            yield " ".join(path), command

    with_gamma = {path: {o for p in cmd.params for o in p.opts} for path, cmd in leaves(_command())
                  if any(o.startswith("--gamma") for p in cmd.params for o in p.opts)}
    assert {"theory lr-multiplier", "simulate group-size", "plan"} <= set(with_gamma)
    missing = {path for path, opts in with_gamma.items() if "--focal-smoothing" not in opts}
    assert missing <= set(NO_SMOOTHING), sorted(missing - set(NO_SMOOTHING))


def test_planner_weights_use_the_smoothed_estimate():
    from fgrpo_sim.planner import beta_difficulty, plan_group_size

    # uniform difficulty: X is uniform on 0..N, so the mean weight over active groups is the plain average
    for alpha in (0.0, 0.5):
        plan = plan_group_size(beta_difficulty(1, 1, max_group_size=4), rhos=[0.1], group_sizes=[4],
                               gammas=[0.5], focal_smoothing=alpha)
        expected = sum(_g(x, 4, 0.5, alpha) for x in (1, 2, 3)) / 3
        assert plan.rows[0]["focal_weight_gamma_0.5"] == pytest.approx(expected, rel=1e-10)


def test_a_smoothed_study_reports_its_fgrpo_arms():
    """The report reads gamma from the arm's name, "F-GRPO gamma=0.5 alpha=0.5" included."""
    from dataclasses import replace

    from fgrpo_sim.sim.group_size_report import setting_reports
    from fgrpo_sim.sim.group_size_study import run_study

    spec = replace(GroupSizeStudySpec(), group_sizes=(2, 4, 8), rare_masses=(0.02,), optimizers=("adam",),
                   parametrisations=("orthogonal",), adam_lrs=(0.01,), populations=2, seeds=1, steps=2, eval_every=1,
                   focal_smoothing=0.5)
    (report,) = setting_reports(run_study(spec, device="cpu"))
    entries = {e["variant"]: e["gamma"] for e in report["fgrpo_at_lowest"]}
    assert entries == {"F-GRPO gamma=0.5 alpha=0.5": 0.5, "F-GRPO gamma=1 alpha=0.5": 1.0}


def test_the_maze_takes_focal_smoothing_and_alpha_0_keeps_its_config(monkeypatch):
    """`maze run --focal-smoothing`: the preset carries alpha to the trainer's config; alpha 0 leaves config.json
    as it was before the option existed (no key), so earlier folders still resume."""
    from dataclasses import replace

    from fgrpo_sim.maze import rl
    from fgrpo_sim.maze.experiment import same_settings
    from fgrpo_sim.maze.presets import get_preset

    tiny = get_preset("tiny")
    assert "focal_smoothing" not in tiny.to_dict()
    smoothed = replace(tiny, focal_smoothing=0.5)
    assert smoothed.to_dict()["focal_smoothing"] == 0.5 and not same_settings(tiny.to_dict(), smoothed.to_dict())
    seen = {}

    class Stop(Exception):
        pass

    def config(**kwargs):  # the trainer's config is where alpha must arrive; stop before any training
        seen.update(kwargs)
        raise Stop

    import fgrpo_sim.llm as llm

    monkeypatch.setattr(llm, "FocalGRPOConfig", config)
    settings = rl.RLSettings(steps=1, prompts_per_step=1, group_size=2, gamma=1.0, lr=1e-3, max_completion_length=4,
                             focal_smoothing=0.5)
    with pytest.raises(Stop):
        rl.train_rl(None, None, [], settings)
    assert seen["focal_smoothing"] == 0.5 and seen["focal_gamma"] == 1.0
