"""Issue 48's follow-up: table2-depth's own choices (optimizer, map, population seeds), the robustness script and
its checked reader (tiny settings only)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from fgrpo_sim.sim import table2_depth as t2
from fgrpo_sim.sim.table2_depth_robustness import check_robustness, read_robustness, summarise_record

REPO = Path(__file__).resolve().parents[1]
TINY = t2.DepthSetting(steps=2, prompt_batch=4)
COLS = ["population", "heldout_pass@1", "heldout_pass@256", "train_dnll_rare"]


def _grpo(frame):
    return frame[frame["method"] == "GRPO"][COLS].sort_values("population").reset_index(drop=True)


def test_defaults_build_the_committed_spec():
    """The defaults are the committed record's choices: Adam, the orthogonal map, seeds 0..P-1, and the study's
    chunk fingerprint as it was before the options existed (the spec main built, written out here)."""
    from fgrpo_sim.sim.group_size_study import DEFAULT_POPULATION, GroupSizeStudySpec, chunk_id

    assert (t2.FITTED.optimizer, t2.FITTED.parametrisation, t2.FITTED.seed_offset) == ("adam", "orthogonal", 0)
    s = t2.FITTED
    population = replace(DEFAULT_POPULATION, rare_only_share=s.rare_only_share, rare_strategies=s.rare_strategies,
                         offset_scale=s.offset_scale, common_correct_prob=s.common_correct_prob)
    old = GroupSizeStudySpec(group_sizes=t2.GROUP_SIZES, rare_masses=(s.rare_mass,), gammas=(t2.GAMMA,), low_lr=True,
                             entropy_coefs=t2.CONTROL_GRIDS["entropy"], kl_coefs=t2.CONTROL_GRIDS["KL"],
                             optimizers=("adam",), parametrisations=("orthogonal",), populations=40, seeds=1,
                             steps=s.steps, prompt_batch=s.prompt_batch, adam_lrs=(s.lr,), eval_every=s.steps,
                             seed=0, population=population)
    new = t2.study_spec(s, 40)
    assert new == old and chunk_id(new, "adam", "orthogonal") == chunk_id(old, "adam", "orthogonal")


def test_record_keeps_its_layout_at_the_defaults():
    """`fitted` lists its keys in the committed record's order, and names seed_offset only when it is not 0."""
    frame = t2.run_setting(TINY, 2, (8,), device="cpu", controls=False)
    committed = json.loads((REPO / "fgrpo_sim" / "results" / "table2-depth.json").read_text())
    record = t2.build_record(TINY, frame, 2, "x")
    assert list(record["fitted"]) == list(committed["fitted"])
    assert list(record) == list(committed)
    shifted = t2.build_record(replace(TINY, seed_offset=3), frame, 2, "x")
    assert shifted["fitted"]["seed_offset"] == 3


def test_seed_offset_draws_the_named_populations():
    """Population 1 of seeds 1..2 is population 1 of seeds 0..1, bit for bit (a row is keyed by its seed), and
    population 2 is new."""
    a = _grpo(t2.run_setting(TINY, 2, (4,), device="cpu", controls=False))
    b = _grpo(t2.run_setting(replace(TINY, seed_offset=1), 2, (4,), device="cpu", controls=False))
    assert list(a["population"]) == [0, 1] and list(b["population"]) == [1, 2]
    pd.testing.assert_frame_equal(a.iloc[[1]].reset_index(drop=True), b.iloc[[0]].reset_index(drop=True),
                                  check_exact=True)
    assert not b.iloc[1, 1:].equals(a.iloc[0, 1:])


@pytest.mark.parametrize("changes", [{"optimizer": "sgd", "lr": 2.0}, {"parametrisation": "axis"},
                                     {"parametrisation": "dense"}])
def test_choices_reach_the_engine(changes):
    """The setting's optimizer and map are the chunk's, and they change the rows (SGD on the orthogonal map equals
    SGD on the axis map, parametrisation.py, so SGD is compared with Adam)."""
    frame = t2.run_setting(replace(TINY, **changes), 2, (4,), device="cpu", controls=False)
    assert set(frame["optimizer"]) == {changes.get("optimizer", "adam")}
    assert set(frame["parametrisation"]) == {changes.get("parametrisation", "orthogonal")}
    assert set(frame["base_lr"]) == {changes.get("lr", TINY.lr)}
    base = t2.run_setting(TINY, 2, (4,), device="cpu", controls=False)
    assert not _grpo(frame).equals(_grpo(base))


def test_lr_grid_rows_equal_the_one_lr_runs():
    """run_setting(lrs=...) trains the grid in one batch; each lr's rows are the one-lr run's, bit for bit."""
    grid = t2.run_setting(TINY, 2, (4,), device="cpu", controls=False, lrs=(0.01, 0.03))
    alone = t2.run_setting(replace(TINY, lr=0.03), 2, (4,), device="cpu", controls=False)
    assert set(grid["base_lr"]) == {0.01, 0.03}
    pd.testing.assert_frame_equal(_grpo(grid[grid["base_lr"] == 0.03]), _grpo(alone), check_exact=True)
    with pytest.raises(ValueError, match=r"lr must be in \(0, 10\]"):
        t2.run_setting(TINY, 2, (4,), controls=False, lrs=(0.01, 20.0))


@pytest.mark.parametrize("changes, message", [
    ({"optimizer": "adamw"}, "optimizer must be one of adam, sgd"),
    ({"parametrisation": "diagonal"}, "parametrisation must be one of axis, orthogonal, dense"),
    ({"seed_offset": -1}, r"seed_offset must be in \[0, 1000000000\]"),
    ({"optimizer": "sgd", "lr": 1001.0}, r"lr must be in \(0, 1000\]"),
    ({"lr": 11.0}, r"lr must be in \(0, 10\]"),
])
def test_setting_validation(changes, message):
    with pytest.raises(ValueError, match=message):
        replace(t2.FITTED, **changes).validate()


def test_sgd_takes_its_larger_lr():
    assert replace(t2.FITTED, optimizer="sgd", lr=500.0).validate().lr == 500.0


@pytest.mark.parametrize("args, message", [
    (("--optimizer", "adamw"), "--optimizer must be one of adam, sgd, got 'adamw'"),
    (("--optimizer", "adam,sgd"), "--optimizer takes one value"),
    (("--parametrisation", "diagonal"), "--parametrisation must be one of axis, orthogonal, dense"),
    (("--seed-offset", "-1"), "--seed-offset must be in [0, 1000000000]"),
    (("--optimizer", "sgd", "--lr", "2000"), "--lr must be in (0, 1000]"),
])
def test_bad_choice_is_one_line_exit_2(run_cli, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = run_cli("simulate", "table2-depth", "--out", "rec.json", *args, "--no-progress")
    assert result.exit_code == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "rec.json").exists()


def test_command_records_the_choices(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_cli("simulate", "table2-depth", "--out", "rec.json", "--populations", "2", "--steps", "2",
                     "--prompt-batch", "4", "--n", "2,8", "--optimizer", "sgd", "--lr", "2", "--parametrisation",
                     "axis", "--seed-offset", "5", "--device", "cpu", "--no-progress")
    assert result.exit_code == 0, result.stderr
    record = json.loads((tmp_path / "rec.json").read_text())
    assert record["command"].endswith("--optimizer sgd --parametrisation axis --seed-offset 5")
    assert {k: record["fitted"][k] for k in ("optimizer", "parametrisation", "seed_offset", "lr")} == {
        "optimizer": "sgd", "parametrisation": "axis", "seed_offset": 5, "lr": 2.0}


@pytest.fixture(scope="module")
def tiny_robustness(tmp_path_factory):
    """The script end to end: --tiny (3 steps, N = 2 and 8), two populations, SGD's lr grid and fresh seeds."""
    out = tmp_path_factory.mktemp("robust") / "robustness.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "table2_depth_robustness.py"), "--tiny",
                    "--populations", "2", "--grid-populations", "2", "--only", "seeds 40-79,SGD", "--out", str(out)],
                   check=True, cwd=REPO, capture_output=True, env=env)
    return out


def test_script_writes_a_record_its_reader_accepts(tiny_robustness):
    record = read_robustness(tiny_robustness)
    assert [a["name"] for a in record["alternatives"]] == ["seeds 40-79", "SGD"]
    seeds, sgd = record["alternatives"]
    assert seeds["record"]["fitted"]["seed_offset"] == 2 and "refit" not in seeds  # fresh draws, nothing refitted
    assert sgd["record"]["fitted"]["optimizer"] == "sgd"
    assert sgd["refit"]["lrs"] == [0.03125, 0.0625, 0.125, 0.25, 0.5, 1.0, 2.0]
    assert sgd["refit"]["at_grid_edge"] == (sgd["refit"]["chosen"] in (0.03125, 2.0))
    assert sgd["record"]["fitted"]["lr"] == sgd["refit"]["chosen"]
    for entry in (record["baseline"], *record["alternatives"]):
        s = entry["summary"]
        assert s["predictions"] == len(entry["record"]["predictions"]) == 9 and 0 <= s["hits_v2"] <= 9
        assert s["hits_v2"] == sum(p["contrast"]["hit"] for p in entry["record"]["predictions"])
        assert s["dip_N"] in (2, 8) and s["pass@1_rms"] == entry["record"]["fitted"]["rms"]["pass@1"]
    assert record["command"].startswith("python benchmarks/table2_depth_robustness.py --tiny")


@pytest.mark.parametrize("which", [0, 1])
def test_each_alternative_is_its_recorded_command(tiny_robustness, run_cli, tmp_path, monkeypatch, which):
    """An alternative's record names the `fgrpo simulate table2-depth` command that writes it: run here, that
    command writes the same record, byte for byte as JSON (fresh seeds: --seed-offset; SGD: --optimizer, --lr)."""
    import shlex

    entry = json.loads(tiny_robustness.read_text())["alternatives"][which]
    command = shlex.split(entry["record"]["command"])
    assert command[:3] == ["fgrpo", "simulate", "table2-depth"]
    assert ("--seed-offset" in command) == (which == 0) and ("--optimizer" in command) == (which == 1)
    monkeypatch.chdir(tmp_path)
    result = run_cli(*command[1:], "--device", "cpu", "--no-progress")
    assert result.exit_code == 0, result.stderr
    out = tmp_path / command[command.index("--out") + 1]
    assert json.loads(out.read_text()) == entry["record"]


def test_summary_by_hand():
    """summarise_record on a hand-made record: signs, same_sign against the paper's side, hits counted."""
    def pred(method, metric, paper, mean, low, high):
        return {"cell": {"method": method, "metric": metric},
                "contrast": {"paper": paper, "predicted": mean, "ci_low": low, "ci_high": high,
                             "hit": low <= paper <= high}}

    flank = {"N": 2, "points": 1.0, "ci_low": 0.5, "ci_high": 1.5}
    record = {"grpo_dip_points": {"dip_N": 4, "left": flank, "right": {**flank, "N": 32}},
              "fitted": {"rms": {"pass@1": 7.0}},
              "predictions": [pred("F-GRPO", "pass@256", 6.2, 5.5, 4.3, 6.7), pred("GRPO-KL", "pass@1", -0.1, 0.02,
                                                                                   -0.1, 0.2),
                              pred("GRPO-H", "pass@256", 5.4, -0.5, -1.0, -0.1)]}
    s = summarise_record(record)
    assert s["dip_N"] == 4 and s["pass@1_rms"] == 7.0 and s["hits_v2"] == 2 and s["predictions"] == 3
    assert [c["sign"] for c in s["contrasts"]] == [1, 1, -1]
    assert [c["same_sign"] for c in s["contrasts"]] == [True, False, False]


@pytest.mark.parametrize("breakage, message", [
    (lambda r: r["alternatives"][0]["summary"].update(hits_v2=99), "summary must be its record's"),
    (lambda r: r["alternatives"][1]["refit"].update(chosen=123.0), "refit.chosen must be the lr of the lowest loss"),
    (lambda r: r["alternatives"][1]["refit"].update(at_grid_edge="maybe"), "at_grid_edge must say whether"),
    (lambda r: r.update(populations=3), "record.populations must be 3"),
    (lambda r: r.update(schema="other"), "field 'schema' must be table2-depth-robustness-v1"),
    (lambda r: r["alternatives"][0]["record"]["fit_targets"][0].update(method="F-GRPO"), "must be GRPO"),
    (lambda r: r.update(alternatives=[r["alternatives"][0]] * 2), "each alternative once"),
    (lambda r: r.pop("command"), "no 'command'"),
])
def test_reader_refuses_a_broken_record(tiny_robustness, breakage, message):
    record = json.loads(tiny_robustness.read_text())
    broken = copy.deepcopy(record)
    breakage(broken)
    with pytest.raises(ValueError, match=message):
        check_robustness(broken, "r.json")
    check_robustness(record, "r.json")  # the unbroken one passes


def test_committed_robustness_record():
    """The committed record passes its reader, its baseline is the committed table2-depth record as it stands, every
    alternative ran 40 populations and changed one choice of the fit (the rest: table2_depth.FITTED)."""
    results = REPO / "fgrpo_sim" / "results"
    record = read_robustness(results / "table2-depth-robustness.json")
    assert record["baseline"]["record"] == json.loads((results / "table2-depth.json").read_text())
    assert record["populations"] == t2.FITTED_POPULATIONS and record["grid_populations"] < record["populations"]
    fitted = {k: v for k, v in vars(t2.FITTED).items() if k != "seed_offset"}
    for a in record["alternatives"]:
        f = a["record"]["fitted"]
        changed = {k for k in fitted if f[k] != fitted[k]} | ({"seed_offset"} if f.get("seed_offset") else set())
        assert changed - {"lr"} and len(changed - {"lr"}) == 1, (a["name"], changed)  # one choice (and its lr)
        assert ("refit" in a) == (a["name"] != "seeds 40-79")  # fresh draws refit nothing
