"""Issue 44's blind spots: places where a planted error passed every test. Each test here fails with its error
planted (the report of the commit that added them says how each was checked)."""

from __future__ import annotations

import types
from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest
import torch


def test_the_trainer_weights_process_1_of_2_with_its_own_groups():
    """TRL gathers every process's rewards; process p scales its local advantages by the weights of ITS slice of
    the gathered groups (start = p x local rows). Simulated without a launcher: process index 1 of world size 2."""
    from extras import require

    require("trl")
    from fgrpo_sim.llm.training.trainer import FocalGRPOTrainer

    n, gamma = 4, 1.0
    successes = [1, 2, 3, 1]  # 4 groups of 4: process 0 holds groups 0-1, process 1 groups 2-3
    rewards = torch.tensor([[1.0 if j < s else 0.0] for s in successes for j in range(n)])
    args = types.SimpleNamespace(reward_correct=1.0, reward_wrong=0.0, focal_gamma=gamma, focal_smoothing=0.0,
                                 focal_success_threshold=0.5, focal_monitor_rho=0.1)
    fake = types.SimpleNamespace(args=args, _focal_success_index=0, model=types.SimpleNamespace(training=True),
                                 num_generations=n, num_generations_eval=n, reward_func_names=["accuracy"],
                                 _focal_warned=False, _logs={"advantages": [1.0] * 16},
                                 _metrics={"train": defaultdict(list)})
    for name in ("_rescale_logged_advantages", "_log_focal_metrics"):
        setattr(fake, name, types.MethodType(getattr(FocalGRPOTrainer, name), fake))
    weights = {}
    for rank in (0, 1):
        fake.accelerator = types.SimpleNamespace(process_index=rank, num_processes=2)
        out = FocalGRPOTrainer._apply_focal_weight(fake, {"advantages": torch.ones(8)}, rewards)
        weights[rank] = out["advantages"]
    expected = [(1 - s / n) ** gamma for s in successes]
    torch.testing.assert_close(weights[1], torch.tensor(expected[2:]).repeat_interleave(n))
    torch.testing.assert_close(weights[0], torch.tensor(expected[:2]).repeat_interleave(n))


def test_stream_seed_keys_every_stream_field_population_included():
    """The t intervals treat populations (and batch seeds) as independent units: each must get its own stream.
    Changing any one of STREAM_FIELDS (or spec.seed) changes the seed; so does nothing else in the row."""
    from fgrpo_sim.sim.group_size_study import STREAM_FIELDS, GroupSizeStudySpec, row_keys, stream_seed, study_rows

    spec = GroupSizeStudySpec(group_sizes=(2, 8), gammas=(1.0,), populations=3, seeds=2, rare_masses=(0.02,),
                              optimizers=("adam",), parametrisations=("axis",), adam_lrs=(0.01,), prompt_batch=2)
    rows = study_rows(spec)
    row = rows.iloc[0].to_dict()
    base = stream_seed(spec, row)
    other = {"rare_correct_prob": 0.25, "optimizer": "sgd", "view": "equal-rollouts", "rare_mass": 0.005,
             "base_lr": 0.03, "population": 1, "seed": 1}
    assert set(other) == set(STREAM_FIELDS)
    for name, value in other.items():
        assert stream_seed(spec, dict(row, **{name: value})) != base, name
    assert stream_seed(replace(spec, seed=1), row) != base
    assert stream_seed(spec, dict(row, N=512, variant="F-GRPO gamma=1", parametrisation="dense")) == base
    seeds = {stream_seed(spec, r) for r in rows.to_dict("records")}
    assert len(seeds) == spec.populations * spec.seeds  # one stream per (population, batch seed)
    keys = row_keys(spec, rows)
    by_population = {p: set(keys[rows.index[rows["population"] == p]].reshape(-1).tolist()) for p in range(3)}
    assert not (by_population[0] & by_population[1]) and not (by_population[1] & by_population[2])


def test_a_categorical_run_missing_one_interior_step_is_not_taken_as_finished(tmp_path):
    """Resume keeps only runs whose every recorded step is in the table: a run missing an interior step (a row
    lost in the middle) is redone in full, never kept with a hole."""
    from fgrpo_sim.sim.categorical import CategoricalConfig
    from fgrpo_sim.sim.categorical.run import finished_runs, run_grid

    config = CategoricalConfig(num_actions=40, num_correct=7, dtype="float64", device="cpu", steps=6, stride=2,
                               group_sizes=(4, 8), gammas=(0.0,), seeds=(0,))
    table = run_grid(config, None, progress=False)
    assert finished_runs(table, config) == {(4, 0.0, 0), (8, 0.0, 0)}
    holed = table[~((table["group_size"] == 8) & (table["step"] == 2))]
    assert finished_runs(holed, config) == {(4, 0.0, 0)}
    out = tmp_path / "grid.csv"
    from fgrpo_sim.sim.categorical.run import write_table

    write_table(holed.reset_index(drop=True), out)
    again = run_grid(config, out, progress=False)
    assert sorted(again[again["group_size"] == 8]["step"]) == [0, 2, 4, 6]
    np.testing.assert_array_equal(again.sort_values(["group_size", "step"])["q_pos"].to_numpy(),
                                  table.sort_values(["group_size", "step"])["q_pos"].to_numpy())


def test_the_paired_interval_uses_the_two_sided_normal_quantile():
    """The interval and the p-value of the u-statistic test must agree (0 outside the interval iff p < alpha),
    which only rows with p near alpha can tell apart from a wrong quantile: such rows are built here."""
    from scipy.stats import norm

    from fgrpo_sim.metrics import paired_ustatistic_test

    rng = np.random.default_rng(4)
    near = 0
    for alpha in (0.05, 0.1):
        for _ in range(150):
            problems = 60
            p = rng.uniform(0.2, 0.8, problems)
            c_a = rng.binomial(16, p)
            c_b = rng.binomial(16, np.clip(p - 0.03, 0, 1))
            res = paired_ustatistic_test(np.full(problems, 16), c_a, np.full(problems, 16), c_b, ks=(1, 4), alpha=alpha)
            excludes_zero = (res.lower > 0) | (res.upper < 0)
            np.testing.assert_array_equal(excludes_zero, res.p_value < alpha)
            near += int(np.sum(np.abs(res.p_value - alpha) < alpha / 2))
            half = norm.ppf(1 - alpha / 2) * res.std_error
            np.testing.assert_allclose(res.upper - res.difference, half, rtol=1e-12)
    assert near >= 20  # enough rows with p within alpha / 2 of alpha to tell 1.645 from 1.960


def test_sequence_mean_ignores_an_all_masked_row():
    """`sequence_mean` averages over sequences that have a token: an all-masked row (a padded slot) neither counts
    in the mean nor makes it NaN."""
    from fgrpo_sim import core

    logp = torch.tensor([[-1.0, -2.0, -0.5], [-0.3, -0.7, -0.1], [-1.2, -0.4, -0.9]], requires_grad=True)
    mask = torch.tensor([[True, True, False], [False, False, False], [True, True, True]])
    adv = torch.tensor([1.0, -3.0, 0.5])
    loss, _ = core.policy_loss(logp, logp.detach(), adv, mask, aggregation="sequence_mean")
    # ratio 1: each token's objective is its advantage; per sequence the mean of them, over the 2 live sequences
    expected = -(1.0 + 0.5) / 2
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    loss.backward()
    assert torch.isfinite(logp.grad).all() and torch.all(logp.grad[1] == 0)
    alone, _ = core.policy_loss(logp[[0, 2]], logp[[0, 2]].detach(), adv[[0, 2]], mask[[0, 2]],
                                aggregation="sequence_mean")
    assert loss.item() == pytest.approx(alone.item(), rel=1e-6)
