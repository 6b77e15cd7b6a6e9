"""Round two of the tests written for fgrpo_sim/sim/'s mutants (issue 44): sample B's open survivors and sample C's
(benchmarks/RESULTS.md "Mutation testing", sim/). Each pins behaviour a user relies on: a value computed by hand, a
bound and its message, a check that must fail when what it checks is wrong. Tiny hand-made data throughout."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from step_reference import assert_steps_match_reference


# --- categorical/engine.py: "correct actions above their start" counts any rise, not a doubling ----------------------

def test_frac_correct_above_start_counts_a_small_rise():
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    config = CategoricalConfig(num_actions=4, num_correct=2, surrogate="logprob", optimizer="sgd", lr=0.5,
                               weight_decay=0.0, dtype="float64", device="cpu", steps=1)
    batch = CategoricalBatch(config, [4], [0.0], [0])
    p0 = batch.probs().clone()
    batch.step_with_counts(torch.tensor([[3, 0, 0, 1]]))  # correct action 0 drawn 3 times: it rises, action 1 falls
    ratio = batch.probs()[0] / p0[0]
    assert 1.0 < float(ratio[0]) < 1.5 and float(ratio[1]) < 1.0
    assert float(batch.metrics()["frac_correct_above_start"][0]) == pytest.approx(0.5)


# --- categorical/study.py: `--only` keeps the named settings ----------------------------------------------------------

def test_run_study_only_runs_the_named_setting(monkeypatch, tmp_path):
    from fgrpo_sim.sim.categorical import study

    ran = []

    def fake_run_grid(cfg, out, **kwargs):
        ran.append(cfg.metadata["setting"])
        return pd.DataFrame({"setting": [cfg.metadata["setting"]]})

    monkeypatch.setattr(study, "run_grid", fake_run_grid)
    table = study.run_study(tmp_path / "study.csv", steps=2, progress=False, device="cpu", only=["draws/sgd"])
    assert ran == ["draws/sgd"] and list(table["setting"]) == ["draws/sgd"]


# --- checks_exact.py: the reference path with a zero wrong reward; pass@k checked up to k = n -----------------------

def test_reference_steps_match_the_simulator_with_reward_wrong_zero():
    from fgrpo_sim.sim.categorical import CategoricalConfig

    p0 = np.array([0.4, 0.1, 0.3, 0.2])
    counts = [np.array([2, 1, 0, 1]), np.array([0, 1, 2, 1])]
    config = CategoricalConfig(num_actions=4, num_correct=2, surrogate="logprob", optimizer="sgd", lr=0.3,
                               weight_decay=0.0, reward_correct=1.0, reward_wrong=0.0, dtype="float64",
                               device="cpu", steps=2)
    assert_steps_match_reference(config, p0, counts, min_move=1e-3)


def test_pass_at_k_check_fails_when_pass_at_k_is_wrong_at_k_equal_n(monkeypatch):
    from fgrpo_sim import metrics
    from fgrpo_sim.sim.checks_exact import pass_at_k_checks

    right = metrics.pass_at_k

    def wrong_at_n(n, c, k):  # right everywhere but at k = n = 12, the last k the unbiasedness check must reach
        value = right(n, c, k)
        return value * 0.5 if (n == 12 and k == 12) else value

    assert all(check["passed"] for check in pass_at_k_checks(True, 0, "cpu"))
    monkeypatch.setattr(metrics, "pass_at_k", wrong_at_n)
    checks = pass_at_k_checks(True, 0, "cpu")
    assert [c["passed"] for c in checks] == [True, True, False]


# --- montecarlo.py: bounds and the k = 0 / k = n edges ---------------------------------------------------------------

def test_lr_multiplier_trials_bound_is_refused_before_any_draw(monkeypatch):
    from fgrpo_sim.sim.montecarlo import estimate_lr_multiplier

    def no_draws(*args, **kwargs):  # a bound let through would allocate 10^9 draws: fail at once instead
        raise AssertionError("drew before refusing trials")

    monkeypatch.setattr(np.random, "default_rng", no_draws)
    with pytest.raises(ValueError, match="trials"):
        estimate_lr_multiplier(0.5, trials=10**9 + 1)


def test_sampled_masses_at_the_edges_are_zero_with_zero_se():
    from fgrpo_sim.sim.montecarlo import estimate_sampled_masses

    p, correct = [0.5, 0.2, 0.3], [True, False, False]
    none_correct = estimate_sampled_masses(p, correct, n=4, k=0, trials=20)
    assert none_correct["P_pos"] == (0.0, 0.0) and none_correct["P_neg"][0] > 0
    all_correct = estimate_sampled_masses(p, correct, n=4, k=4, trials=20)
    assert all_correct["P_neg"] == (0.0, 0.0) and all_correct["P_pos"][0] == pytest.approx(0.5)


# --- group_size_report.py: the best-checkpoint matrix, the tables' columns, the record reader's messages -------------

def test_best_checkpoint_matrix_reads_its_own_variant():
    from fgrpo_sim.sim.group_size_report import METRIC, best_checkpoint_matrix

    rows = []
    for variant, shift in (("grpo", 0.0), ("other", 0.5)):
        for unit in (0, 1):
            for n in (2, 8):
                # step 2 has the higher pass@1 for N = 2, step 1 for N = 8
                for step, p1 in ((1, 0.3 if n == 2 else 0.6), (2, 0.5 if n == 2 else 0.4)):
                    rows.append({"variant": variant, "population": unit, "N": n, "step": step,
                                 "heldout_pass@1": p1, METRIC: shift + unit + n / 100 + step / 1000})
    table, ns = best_checkpoint_matrix(pd.DataFrame(rows), "grpo", "population")
    assert list(ns) == [2, 8]
    np.testing.assert_allclose(table, [[0.022, 0.081], [1.022, 1.081]])


COMMITTED = "population-group-size.jsonl"


def _committed_reports() -> list[dict]:
    from fgrpo_sim.packaged import committed_result

    return [json.loads(x) for x in committed_result(COMMITTED).read_text().splitlines()]


def test_markdown_table_shows_each_rows_minus_control_interval():
    from fgrpo_sim.sim.group_size_report import (fgrpo_entry, format_interval, markdown_table, same_under_sgd,
                                                 shown_gamma)

    reports = _committed_reports()
    gamma = shown_gamma(reports)
    header, _, *lines = markdown_table(reports).splitlines()
    column = header.split("|").index(next(h for h in header.split("|") if h.endswith("minus control")))
    wanted = {format_interval(fgrpo_entry(r, gamma).get("minus_control")) for r in same_under_sgd(reports)}
    cells = [line.split("|")[column] for line in lines]
    assert cells and set(cells) <= wanted and any(c != format_interval(None) for c in cells)


def test_brief_table_heads_the_first_and_last_n_flanks():
    from fgrpo_sim.sim.group_size_report import brief_tables

    reports = _committed_reports()
    ns = reports[0]["N"]
    assert len(ns) >= 3
    header = [line for line in brief_tables(reports).splitlines() if line.startswith("|optimizer")][0]
    assert f"|N={ns[0]} flank|N={ns[-1]} flank|" in header


def test_read_reports_names_the_from_option(tmp_path):
    from fgrpo_sim.sim.group_size_report import read_reports

    with pytest.raises(ValueError, match="^--from not found"):
        read_reports(tmp_path / "missing.jsonl")


# --- population.py: retained correct mass starts at 1 and stays in [0, 1] --------------------------------------------

def test_population_retained_correct_mass_starts_at_one():
    from fgrpo_sim.sim.population import PopulationSpec, TrainSpec, make_population, simulate_population

    population = make_population(PopulationSpec(num_prompts=16, seed=0))
    frame = simulate_population(population, TrainSpec(group_size=4, steps=4, runs=1, prompt_batch=4, eval_every=2,
                                                       optimizer="sgd", lr=1.0, seed=1), device="cpu")
    retained = frame["retained_correct_mass"].dropna()
    assert np.allclose(frame.loc[frame["step"] == 0, "retained_correct_mass"].dropna(), 1.0)
    assert len(retained) and ((retained >= 0) & (retained <= 1 + 1e-12)).all()


# --- categorical/sampling.py: the native sampler's draw bound ---------------------------------------------------------

def test_native_sampler_refuses_2_to_the_31_draws():
    from fgrpo_sim.sim.categorical import sampling

    if sampling._load_native() is None:
        pytest.skip("native count sampler unavailable")
    weights = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    with pytest.raises(ValueError, match="n_draws must be in \\[0, 2147483647\\]"):
        sampling.sample_counts_native(weights, [2**31], [0], 0)



def test_native_sampler_with_two_threads_fills_every_row():
    from fgrpo_sim.sim.categorical import sampling

    if sampling._load_native() is None:
        pytest.skip("native count sampler unavailable")
    weights = torch.tensor([[0.5, 0.5], [0.3, 0.7], [0.9, 0.1]], dtype=torch.float64)
    one, _ = sampling.sample_counts_native(weights, [10, 20, 30], [0, 1, 2], 5, threads=1)
    two, _ = sampling.sample_counts_native(weights, [10, 20, 30], [0, 1, 2], 5, threads=2)
    assert two.sum(1).tolist() == [10, 20, 30]
    assert torch.equal(one, two)  # keyed draws: the split among threads changes nothing


# --- sample C: messages name their parameter, bounds hold at their edges ----------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    (dict(group_sizes=()), "^group_sizes, gammas and seeds must each hold at least one value"),
    (dict(weight_decay=-1.0), "^weight_decay"),
    (dict(dtype="float16"), "^dtype"),
    (dict(reward_correct=float("inf")), "^reward_correct"),
])
def test_categorical_config_messages_name_the_parameter(kwargs, message):
    from fgrpo_sim.sim.categorical import CategoricalConfig

    with pytest.raises(ValueError, match=message.replace("(", "\\(")):
        CategoricalConfig(**kwargs)


def test_categorical_config_allows_one_run_per_chunk_and_keeps_float32():
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    config = CategoricalConfig(num_actions=4, num_correct=2, chunk_runs=1, dtype="float32", device="cpu", steps=2)
    assert CategoricalBatch(config, [4], [0.0], [0]).dtype == torch.float32


def test_recorded_steps_stop_at_the_last_step():
    from fgrpo_sim.sim.categorical.run import recorded_steps

    assert recorded_steps(10, 1) == list(range(11))
    assert recorded_steps(10, 4) == [0, 4, 8, 10]


def test_montecarlo_and_train_spec_bounds():
    from fgrpo_sim.sim.montecarlo import estimate_lr_multiplier, estimate_smoothed_focal_weight
    from fgrpo_sim.sim.population import MAX_LR, TrainSpec

    with pytest.raises(ValueError, match="^seed"):
        estimate_lr_multiplier(0.5, trials=10, seed=-1)
    with pytest.raises(ValueError, match="mu"):
        estimate_smoothed_focal_weight(4, 1.5, 1.0, 0.1, trials=10)
    with pytest.raises(ValueError, match="lr"):
        TrainSpec(lr=MAX_LR * 2).validate(16)


def test_markdown_table_shows_the_shares_and_the_report_heads_its_columns():
    from fgrpo_sim.sim.group_size_report import format_report, markdown_table

    reports = _committed_reports()
    header, _, *lines = markdown_table(reports).splitlines()
    names = header.split("|")
    shares = names.index(next(h for h in names if h.startswith("share lowest, N = ")))
    best = names.index("best-ckpt lowest N (share)")
    for line in lines:
        cells = line.split("|")
        assert cells[shares] == "-" or all(len(x) == 4 and float(x) >= 0 for x in cells[shares].split(" / "))
        assert cells[best].endswith(")") and "None" not in cells[best]
    assert any(c.split("|")[shares] != "-" for c in lines)
    assert "last minus lowest" in format_report(reports)


def test_group_size_study_eval_every_must_be_positive():
    from fgrpo_sim.sim.group_size_study import GroupSizeStudySpec

    with pytest.raises(ValueError, match="^eval_every"):
        GroupSizeStudySpec(eval_every=0).validate()


def test_a_reward_span_too_small_for_float32_points_to_float64():
    from fgrpo_sim.sim.categorical import CategoricalConfig

    with pytest.raises(ValueError, match=r"^reward_correct - reward_wrong must be .* in float32 .*; use --dtype float64$"):
        CategoricalConfig(dtype="float32", reward_correct=1e-20, reward_wrong=0.0)
    CategoricalConfig(dtype="float64", reward_correct=1e-20, reward_wrong=0.0)  # float64 carries the span


def test_population_seed_bound_and_a_bad_list_item_named_by_index():
    from fgrpo_sim.sim.group_size_record import check_report
    from fgrpo_sim.sim.group_size_report import REPORT_KEYS
    from fgrpo_sim.sim.population import PopulationSpec

    with pytest.raises(ValueError, match=r"^seed must be in \[0, 2\^63 - 1\]"):
        PopulationSpec(seed=2**63).validate()
    report = _committed_reports()[0]
    report["N"] = [report["N"][0], "x", *report["N"][2:]]
    with pytest.raises(ValueError, match=r"^here: field 'N\[1\]' must be an integer"):
        check_report(report, "here", REPORT_KEYS)


def test_a_silent_compiler_failure_is_named(monkeypatch, tmp_path):
    import shutil

    from fgrpo_sim.sim.categorical.compiled import _compile

    if shutil.which("false") is None:
        pytest.skip("no `false` program to stand in for a failing compiler")
    monkeypatch.setenv("CC", "false")  # fails both builds and writes nothing to stderr
    with pytest.raises(RuntimeError, match="^compiler failed$"):
        _compile("int x;", tmp_path)
