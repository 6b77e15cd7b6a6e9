"""Tests written for the mutants of sim/'s stratum "rep" (issue 44, benchmarks/mutation.py, sampled; benchmarks/
RESULTS.md "sim/ stratum simrep"): group_size_report.py, population_claims.py, result_table.py, table2_depth.py,
table2_depth_record.py. Each asserts behaviour a user relies on: a value worked by hand, a message naming its field
and range, a bound at its edge, a branch no other test takes. Tiny hand-made data; no simulation runs here."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fgrpo_sim
from stand_in_sweeps import Captured, stand_in_sweeps

COMMITTED_DEPTH = Path(fgrpo_sim.__file__).resolve().parent / "results" / "table2-depth.json"


# --- table2_depth_record.py: the checked reader, field by field (the committed record as the base) ----------------

@pytest.fixture()
def depth_record():
    return json.loads(COMMITTED_DEPTH.read_text())


def _refused(record, message):
    from fgrpo_sim.sim.table2_depth_record import check_record

    with pytest.raises(ValueError) as err:
        check_record(record, "rec.json")
    assert str(err.value) == message
    return err


def test_depth_record_reads_back_converted(depth_record):
    from fgrpo_sim.sim.table2_depth_record import check_record, is_record, read_record

    depth_record["populations"] = 40.0  # an integral float another tool wrote is the count
    depth_record["simulated_rows"][0]["N"] = 2.0
    depth_record["grpo_dip_points"]["left"]["N"] = 2.0
    checked = check_record(copy.deepcopy(depth_record), "rec.json")
    assert set(checked) == set(depth_record)  # the record's own keys, none added
    assert checked["populations"] == 40 and type(checked["populations"]) is int
    assert checked["simulated_rows"][0]["N"] == 2 and type(checked["simulated_rows"][0]["N"]) is int
    assert checked["grpo_dip_points"]["left"]["N"] == 2 and type(checked["grpo_dip_points"]["left"]["N"]) is int
    assert set(checked["grpo_dip_points"]) == {"dip_N", "left", "right"}
    left = depth_record["grpo_dip_points"]["left"]
    assert checked["grpo_dip_points"]["left"] == {"N": 2, "points": left["points"], "ci_low": left["ci_low"],
                                                  "ci_high": left["ci_high"]}
    assert checked["grpo_dip_points"]["dip_N"] == depth_record["grpo_dip_points"]["dip_N"]
    assert checked["fitted"] == depth_record["fitted"] and checked["command"] == depth_record["command"]
    assert checked["seeding"] == depth_record["seeding"] and checked["controls"] == depth_record["controls"]
    pred = checked["predictions"][0]
    raw = depth_record["predictions"][0]
    assert pred["cell"] == raw["cell"] and pred["paper"] == raw["paper"] and pred["hit"] is raw["hit"]
    assert pred["contrast"] == raw["contrast"] and pred["tolerance"] == raw["tolerance"]
    assert [t["value"] for t in checked["fit_targets"]] == [t["value"] for t in depth_record["fit_targets"]]
    assert checked["fit_targets"][0]["source"] == depth_record["fit_targets"][0]["source"]  # other keys carried
    assert checked["simulated_rows"][3]["pass@1"] == depth_record["simulated_rows"][3]["pass@1"]
    assert read_record(COMMITTED_DEPTH)["predictions"] == check_record(json.loads(COMMITTED_DEPTH.read_text()),
                                                                       "x")["predictions"]
    assert is_record(COMMITTED_DEPTH)


def test_depth_record_is_record_says_no_without_raising(tmp_path):
    from fgrpo_sim.sim.table2_depth_record import is_record

    cases = {"list.json": "[1, 2]", "other.json": '{"schema": "table2-depth-v3"}', "bad.json": "{not json",
             "v1.json": '{"schema": "table2-depth-v1"}', "v2.json": '{"schema": "table2-depth-v2"}'}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    assert {name: is_record(tmp_path / name) for name in cases} == {
        "list.json": False, "other.json": False, "bad.json": False, "v1.json": True, "v2.json": True}
    assert is_record(tmp_path / "missing.json") is False
    assert is_record(tmp_path) is False  # a folder: OSError, not a record


def test_depth_record_refuses_what_is_not_an_object_or_misses_a_key(depth_record):
    _refused([1], "rec.json: field 'record' must be an object, got [1]")
    for key in ("schema", "seeding", "command", "populations", "fitted", "grpo_dip_points"):
        broken = copy.deepcopy(depth_record)
        broken.pop(key)
        _refused(broken, f"rec.json is not a table2-depth record (no {key!r})")
    depth_record["schema"] = "table2-depth-v3"
    _refused(depth_record, "rec.json: field 'schema' must be one of table2-depth-v1, table2-depth-v2, "
                           "got 'table2-depth-v3'")


@pytest.mark.parametrize("key, value, message", [
    ("fit_targets", [], "field 'fit_targets' must be a list of at least 1, got []"),
    ("simulated_rows", {}, "field 'simulated_rows' must be a list of at least 1, got {}"),
    ("predictions", "x", "field 'predictions' must be a list of at least 0, got 'x'"),
    ("seeding", "  ", "field 'seeding' must be a non-empty text, got '  '"),
    ("command", 3, "field 'command' must be a non-empty text, got 3"),
    ("fitted", [], "field 'fitted' must be an object, got []"),
    ("grpo_dip_points", None, "field 'grpo_dip_points' must be an object, got None"),
    ("populations", 1, "field 'populations' must be an integer in [2, 2^63 - 1], got 1"),
    ("populations", 2.5, "field 'populations' must be an integer in [2, 2^63 - 1], got 2.5"),
])
def test_depth_record_top_level_fields_named(depth_record, key, value, message):
    depth_record[key] = value
    _refused(depth_record, f"rec.json: {message}")


def test_depth_record_no_predictions_is_allowed_and_populations_two(depth_record):
    from fgrpo_sim.sim.table2_depth_record import check_record

    depth_record["predictions"] = []  # `--n` without 8: no prediction
    depth_record["populations"] = 2
    checked = check_record(depth_record, "rec.json")
    assert checked["predictions"] == [] and checked["populations"] == 2


@pytest.mark.parametrize("change, message", [
    (lambda t: t.update(method="F-GRPO"),
     "field fit_targets[1].method must be GRPO (only Table 2's GRPO row is fitted), got 'F-GRPO'"),
    (lambda t: t.update(metric="pass@2"), "field fit_targets[1].metric must be one of pass@1, pass@256, dnll_rare, "
                                          "got 'pass@2'"),
    (lambda t: t.update(model=""), "field 'fit_targets[1].model' must be a non-empty text, got ''"),
    (lambda t: t.pop("method"), "field 'fit_targets[1].method' must be a non-empty text, got None"),
    (lambda t: t.update(N=0), "field fit_targets[1].N must be an integer in [1, 2^63 - 1], got 0"),
    (lambda t: t.update(metric="pass@1", value=100.5), "field fit_targets[1].value must be a number in [0, 100], "
                                                       "got 100.5"),
    (lambda t: t.update(metric="pass@256", value=-0.5), "field fit_targets[1].value must be a number in [0, 100], "
                                                        "got -0.5"),
])
def test_depth_record_fit_target_fields_named(depth_record, change, message):
    change(depth_record["fit_targets"][1])
    _refused(depth_record, f"rec.json: {message}")


def test_depth_record_ranges_are_the_metrics_own(depth_record):
    """pass@k is a percentage, dNLL_rare any finite number of nats; intervals may reach past [0, 100]."""
    from fgrpo_sim.sim.table2_depth_record import check_record

    for t in depth_record["fit_targets"]:
        t["value"] = {"pass@1": 0.0, "pass@256": 100.0, "dnll_rare": -250.0}[t["metric"]]
    row = depth_record["simulated_rows"][0]
    row["pass@1"] = {"mean": 0.0, "ci_low": -3.0, "ci_high": 2.0}
    row["pass@256"] = {"mean": 100.0, "ci_low": 99.0, "ci_high": 104.0}
    row["dnll_rare"] = {"mean": -500.0, "ci_low": -501.0, "ci_high": 700.0}
    checked = check_record(depth_record, "rec.json")
    assert checked["simulated_rows"][0]["dnll_rare"] == {"mean": -500.0, "ci_low": -501.0, "ci_high": 700.0}
    assert {t["value"] for t in checked["fit_targets"]} == {0.0, 100.0, -250.0}


@pytest.mark.parametrize("metric, interval, message", [
    ("pass@1", {"mean": -0.5, "ci_low": -1.0, "ci_high": 1.0},
     "field simulated_rows[2].pass@1.'mean' must be a number in [0, 100], got -0.5"),
    ("pass@256", {"mean": 50.0, "ci_low": "49", "ci_high": 51.0},
     "field simulated_rows[2].pass@256.'ci_low' must be a number, got '49'"),
    ("dnll_rare", {"mean": 0.5, "ci_low": 0.4, "ci_high": None},
     "field simulated_rows[2].dnll_rare.'ci_high' must be a number, got None"),
    ("dnll_rare", {"mean": 0.5, "ci_low": 0.6, "ci_high": 0.7},
     "field 'simulated_rows[2].dnll_rare' must hold ci_low <= estimate <= ci_high, got 0.6 <= 0.5 <= 0.7"),
    ("pass@1", {"mean": 5.0, "ci_low": 4.0, "ci_high": 4.5},
     "field 'simulated_rows[2].pass@1' must hold ci_low <= estimate <= ci_high, got 4 <= 5 <= 4.5"),
    ("pass@1", [1, 2, 3], "field 'simulated_rows[2].pass@1' must be an object, got [1, 2, 3]"),
])
def test_depth_record_simulated_intervals_named(depth_record, metric, interval, message):
    depth_record["simulated_rows"][2][metric] = interval
    _refused(depth_record, f"rec.json: {message}")


@pytest.mark.parametrize("change, message", [
    (lambda r: r.update(method=" "), "field 'simulated_rows[1].method' must be a non-empty text, got ' '"),
    (lambda r: r.update(gamma=-0.5), "field simulated_rows[1].gamma must be a number >= 0, got -0.5"),
    (lambda r: r.update(N=0), "field simulated_rows[1].N must be an integer in [1, 2^63 - 1], got 0"),
    (lambda r: r.pop("dnll_rare"), "field 'simulated_rows[1].dnll_rare' must be an object, got None"),
])
def test_depth_record_simulated_row_fields_named(depth_record, change, message):
    change(depth_record["simulated_rows"][1])
    _refused(depth_record, f"rec.json: {message}")


def test_depth_record_interval_slack_is_last_digits_only(depth_record):
    """ci_low may exceed its estimate by a float's last digits (1e-9), not more."""
    from fgrpo_sim.sim.table2_depth_record import check_record

    depth_record["simulated_rows"][0]["pass@1"] = {"mean": 10.0, "ci_low": 10.0 + 5e-10, "ci_high": 10.0 - 5e-10}
    check_record(copy.deepcopy(depth_record), "rec.json")
    depth_record["simulated_rows"][0]["pass@1"] = {"mean": 10.0, "ci_low": 10.0 + 3e-9, "ci_high": 11.0}
    with pytest.raises(ValueError, match="must hold ci_low <= estimate"):
        check_record(copy.deepcopy(depth_record), "rec.json")
    depth_record["simulated_rows"][0]["pass@1"] = {"mean": 10.0, "ci_low": 9.0, "ci_high": 10.0 - 3e-9}
    with pytest.raises(ValueError, match="must hold ci_low <= estimate"):
        check_record(depth_record, "rec.json")


@pytest.mark.parametrize("change, message", [
    (lambda p: p.update(hit=1), "field predictions[0].hit must be true or false, got 1"),
    (lambda p: p.pop("hit"), "field predictions[0].hit must be true or false, got None"),
    (lambda p: p.update(paper=101.0), "field predictions[0].paper must be a number in [0, 100], got 101.0"),
    (lambda p: p.update(paper=-0.5), "field predictions[0].paper must be a number in [0, 100], got -0.5"),
    (lambda p: p.update(predicted=-1.0), "field predictions[0].'predicted' must be a number in [0, 100], got -1.0"),
    (lambda p: p.update(cell="F-GRPO"), "field 'predictions[0].cell' must be an object, got 'F-GRPO'"),
    (lambda p: p["cell"].update(N=8.5), "field predictions[0].cell.N must be an integer in [1, 2^63 - 1], got 8.5"),
    (lambda p: p["contrast"].update(hit="yes"), "field predictions[0].contrast.hit must be true or false, got 'yes'"),
    (lambda p: p["contrast"].update(paper=None), "field predictions[0].contrast.'paper' must be a number, got None"),
    (lambda p: p["contrast"].update(hit=not p["contrast"]["hit"]),
     "field predictions[0].contrast.hit must say whether paper lies in [ci_low, ci_high], got {hit}"),
    (lambda p: p["contrast"].update(predicted=p["contrast"]["ci_high"] + 1),
     "field 'predictions[0].contrast' must hold ci_low <= estimate <= ci_high"),
])
def test_depth_record_prediction_fields_named(depth_record, change, message):
    from fgrpo_sim.sim.table2_depth_record import check_record

    pred = next(p for p in depth_record["predictions"] if p["cell"]["metric"] == "pass@256")
    depth_record["predictions"] = [pred]
    change(pred)
    with pytest.raises(ValueError) as err:
        check_record(depth_record, "rec.json")
    expected = f"rec.json: {message.format(hit=pred['contrast'].get('hit'))}"
    assert str(err.value).startswith(expected), (str(err.value), expected)


def test_depth_record_contrast_hit_is_the_strict_rule_at_its_edges(depth_record):
    """hit is true exactly when the paper's contrast lies in [ci_low, ci_high], both ends included."""
    from fgrpo_sim.sim.table2_depth_record import check_record

    pred = depth_record["predictions"][0]
    depth_record["predictions"] = [pred]
    for paper, hit in ((1.0, True), (3.0, True), (0.999, False), (3.001, False)):
        pred["contrast"] = {"paper": paper, "predicted": 2.0, "ci_low": 1.0, "ci_high": 3.0, "hit": hit}
        assert check_record(copy.deepcopy(depth_record), "rec.json")["predictions"][0]["contrast"] == pred["contrast"]
        pred["contrast"]["hit"] = not hit
        with pytest.raises(ValueError, match="contrast.hit must say"):
            check_record(copy.deepcopy(depth_record), "rec.json")


def test_depth_record_v1_has_no_contrast_to_check(depth_record):
    from fgrpo_sim.sim.table2_depth_record import check_record

    depth_record["schema"] = "table2-depth-v1"
    for p in depth_record["predictions"]:
        p.pop("contrast")
    checked = check_record(depth_record, "rec.json")
    assert checked["schema"] == "table2-depth-v1"
    assert all("contrast" not in p for p in checked["predictions"])


def test_depth_record_dip_fields_named(depth_record):
    from fgrpo_sim.sim.table2_depth_record import check_record

    grpo_ns = sorted({r["N"] for r in depth_record["simulated_rows"] if r["method"] == "GRPO"})
    other = [r for r in depth_record["simulated_rows"] if r["method"] != "GRPO"]
    assert grpo_ns == [2, 4, 8, 16, 32] and any(r["N"] == 8 for r in other)
    # dip_N must be one of GRPO's own N: drop GRPO's N = 8 rows, keep the others' N = 8
    depth_record["simulated_rows"] = [r for r in depth_record["simulated_rows"]
                                      if not (r["method"] == "GRPO" and r["N"] == 8)]
    depth_record["grpo_dip_points"]["dip_N"] = 8
    _refused(copy.deepcopy(depth_record), "rec.json: field grpo_dip_points.dip_N must be one of the GRPO rows' N "
                                          "(2, 4, 16, 32), got 8")
    depth_record["grpo_dip_points"]["dip_N"] = 16
    assert check_record(copy.deepcopy(depth_record), "rec.json")["grpo_dip_points"]["dip_N"] == 16
    depth_record["grpo_dip_points"]["dip_N"] = 0
    _refused(copy.deepcopy(depth_record), "rec.json: field grpo_dip_points.dip_N must be an integer in [1, 2^63 - 1], got 0")
    depth_record["grpo_dip_points"]["dip_N"] = 16
    depth_record["grpo_dip_points"]["right"]["N"] = 0
    _refused(copy.deepcopy(depth_record), "rec.json: field grpo_dip_points.right.N must be an integer in [1, 2^63 - 1], got 0")
    depth_record["grpo_dip_points"]["right"] = 4
    _refused(copy.deepcopy(depth_record), "rec.json: field 'grpo_dip_points.right' must be an object, got 4")
    depth_record["grpo_dip_points"]["right"] = {"N": 32, "points": 2.0, "ci_low": 2.5, "ci_high": 3.0}
    _refused(copy.deepcopy(depth_record), "rec.json: field 'grpo_dip_points.right' must hold ci_low <= estimate "
                                          "<= ci_high, got 2.5 <= 2 <= 3")
    depth_record["grpo_dip_points"]["right"] = {"N": 32, "points": -150.0, "ci_low": -151.0, "ci_high": 0.0}
    assert check_record(depth_record, "rec.json")["grpo_dip_points"]["right"]["points"] == -150.0  # no range


# --- table2_depth.py: the setting's bounds, the study spec, the summary and the prediction rules by hand --------------

@pytest.mark.parametrize("name, bad, message, edges", [
    ("rare_mass", 0.0, "rare_mass must be in (0, 0.4), got 0", (1e-9, 0.3999)),
    ("rare_mass", 0.4, "rare_mass must be in (0, 0.4), got 0.4", ()),
    ("rare_only_share", 1.01, "rare_only_share must be in [0, 1], got 1.01", (0.0, 1.0)),
    ("rare_only_share", -0.01, "rare_only_share must be in [0, 1], got -0.01", ()),
    ("rare_strategies", 0, "rare_strategies must be in [1, 1000], got 0", (1, 1000)),
    ("rare_strategies", 1001, "rare_strategies must be in [1, 1000], got 1001", ()),
    ("offset_scale", 20.5, "offset_scale must be in [0, 20], got 20.5", (0.0, 20.0)),
    ("offset_scale", -1.0, "offset_scale must be in [0, 20], got -1", ()),
    ("lr", 0.0, "lr must be in (0, 10], got 0", (1e-9, 10.0)),
    ("lr", 10.5, "lr must be in (0, 10], got 10.5", ()),
    ("steps", 0, "steps must be in [1, 1000000], got 0", (1, 1_000_000)),
    ("steps", 1_000_001, "steps must be in [1, 1000000], got 1000001", ()),
    ("prompt_batch", 0, "prompt_batch must be in [1, 256], got 0", (1, 256)),
    ("prompt_batch", 257, "prompt_batch must be in [1, 256], got 257", ()),
    ("common_correct_prob", 0.0, "common_correct_prob must be in (0, 1], got 0", (1e-9, 1.0)),
    ("common_correct_prob", 1.01, "common_correct_prob must be in (0, 1], got 1.01", ()),
])
def test_depth_setting_bounds_named_and_edges_allowed(name, bad, message, edges):
    from dataclasses import replace

    from fgrpo_sim.sim.table2_depth import DepthSetting

    with pytest.raises(ValueError) as err:
        replace(DepthSetting(), **{name: bad}).validate()
    assert str(err.value) == message
    for value in edges:
        setting = replace(DepthSetting(), **{name: value})
        assert setting.validate() is setting


def test_depth_setting_defaults_and_fit():
    from fgrpo_sim.sim import table2_depth as t2

    assert t2.DepthSetting() == t2.DepthSetting(rare_mass=0.02, rare_only_share=0.25, rare_strategies=4,
                                                offset_scale=1.0, lr=0.01, steps=200, prompt_batch=32,
                                                common_correct_prob=0.5)
    assert t2.FITTED == t2.DepthSetting(rare_mass=0.01, rare_only_share=0.4, offset_scale=2.0, lr=0.01, steps=400)
    assert t2.FITTED_POPULATIONS == 40 and t2.GAMMA == 0.5 and t2.GROUP_SIZES == (2, 4, 8, 16, 32)


def test_depth_study_spec_carries_every_setting_field():
    from fgrpo_sim.sim import table2_depth as t2

    setting = t2.DepthSetting(rare_mass=0.03, rare_only_share=0.1, rare_strategies=3, offset_scale=1.5, lr=0.02,
                              steps=7, prompt_batch=5, common_correct_prob=0.7)
    spec = t2.study_spec(setting, 3, (2, 8), seed=5)
    pop = spec.population
    assert (pop.rare_only_share, pop.rare_strategies, pop.offset_scale, pop.common_correct_prob) == (0.1, 3, 1.5, 0.7)
    assert spec.group_sizes == (2, 8) and spec.rare_masses == (0.03,) and spec.gammas == (0.5,)
    assert spec.low_lr is True and spec.entropy_coefs == (1e-4, 1e-3) and spec.kl_coefs == (1e-3, 1e-2)
    assert spec.optimizers == ("adam",) and spec.parametrisations == ("orthogonal",)
    assert (spec.populations, spec.seeds, spec.steps, spec.prompt_batch) == (3, 1, 7, 5)
    assert spec.adam_lrs == (0.02,) and spec.eval_every == 7 and spec.seed == 5
    bare = t2.study_spec(setting, 2, controls=False)
    assert bare.low_lr is False and bare.entropy_coefs == () and bare.kl_coefs == ()
    assert bare.group_sizes == (2, 4, 8, 16, 32) and bare.seed == 0 and bare.populations == 2
    with pytest.raises(ValueError, match=r"^lr must be in \(0, 10\], got 0$"):
        t2.study_spec(t2.DepthSetting(lr=0.0), 2)


def test_depth_method_names():
    from fgrpo_sim.sim.table2_depth import _family, _method

    assert [_method(v) for v in ("GRPO", "F-GRPO gamma=0.5", "GRPO low-LR (x m_0.5)", "GRPO entropy=0.001",
                                 "GRPO KL=0.01")] == ["GRPO", "F-GRPO", "low-LR", "entropy 0.001", "KL 0.01"]
    assert [_family(m) for m in ("entropy 0.001", "KL 0.01", "low-LR", "GRPO")] == ["entropy", "KL", "low-LR", "GRPO"]


def _depth_frame(table: dict) -> pd.DataFrame:
    """Per-population rows: table[(method, N)] = [(pass@1, pass@256, dnll_rare) per population], fractions."""
    rows = []
    for (method, n), per_pop in table.items():
        for p, (p1, p256, dnll) in enumerate(per_pop):
            rows.append({"method": method, "gamma": 0.5 if method == "F-GRPO" else 0.0, "N": n, "population": p,
                         "heldout_pass@1": p1, "heldout_pass@256": p256, "train_dnll_rare": dnll})
    return pd.DataFrame(rows).sample(frac=1.0, random_state=0)  # file order is not population order


def test_depth_summarise_by_hand():
    from fgrpo_sim.metrics import t_interval
    from fgrpo_sim.sim import table2_depth as t2

    frame = _depth_frame({("KL 0.01", 8): [(0.3, 0.6, 0.1)] * 2, ("GRPO", 8): [(0.30, 0.60, 0.5), (0.34, 0.70, 0.7)],
                          ("entropy 0.001", 8): [(0.3, 0.6, 0.1)] * 2, ("low-LR", 8): [(0.3, 0.6, 0.1)] * 2,
                          ("GRPO", 2): [(0.2, 0.9, 0.2), (0.4, 0.8, 0.4)], ("F-GRPO", 8): [(0.3, 0.6, 0.1)] * 2,
                          ("KL 0.001", 8): [(0.3, 0.6, 0.1)] * 2})
    rows = t2.summarise(frame)
    assert [(r["method"], r["N"]) for r in rows] == [("GRPO", 2), ("GRPO", 8), ("F-GRPO", 8), ("low-LR", 8),
                                                     ("entropy 0.001", 8), ("KL 0.001", 8), ("KL 0.01", 8)]
    assert [r["gamma"] for r in rows] == [0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0]
    grpo8 = rows[1]
    for metric, values in (("pass@1", [30.0, 34.0]), ("pass@256", [60.0, 70.0]), ("dnll_rare", [0.5, 0.7])):
        mean, low, high = (float(x) for x in t_interval(np.array(values), confidence=0.95))
        assert (grpo8[metric]["mean"], grpo8[metric]["ci_low"], grpo8[metric]["ci_high"]) == pytest.approx(
            (mean, low, high), rel=1e-12)
    assert grpo8["pass@256"]["mean"] == pytest.approx(65.0) and grpo8["dnll_rare"]["mean"] == pytest.approx(0.6)
    assert type(grpo8["N"]) is int and type(grpo8["pass@1"]["mean"]) is float


def test_depth_fit_errors_and_targets_subset():
    from fgrpo_sim.sim import table2_depth as t2

    targets = t2.fit_targets((2, 8))
    assert [(t["N"], t["metric"]) for t in targets] == [(2, "pass@1"), (2, "pass@256"), (2, "dnll_rare"),
                                                        (8, "pass@1"), (8, "pass@256"), (8, "dnll_rare")]
    assert {(t["model"], t["method"], t["source"]) for t in targets} == {("Qwen2.5-7B", "GRPO", "Table 2, math average")}
    assert [t["value"] for t in targets] == [36.2, 75.0, 0.19, 37.3, 64.1, 0.68]
    assert t2.fit_targets((3,)) == []
    rows = [{"method": "GRPO", "N": n, **{m: {"mean": v + e, "ci_low": 0.0, "ci_high": 0.0} for m, v, e in
                                           zip(t2.METRICS, values, errs)}}
            for n, values, errs in ((2, (36.2, 75.0, 0.19), (1.0, -2.0, 0.3)), (8, (37.3, 64.1, 0.68), (3.0, 0.0, -0.1)))]
    errors = t2.fit_errors(rows, targets)
    assert errors["pass@1"] == pytest.approx([1.0, 3.0]) and errors["pass@256"] == pytest.approx([-2.0, 0.0])
    assert errors["dnll_rare"] == pytest.approx([0.3, -0.1])
    # (1 + 9) + (4 + 0) in points, (3^2 + 1^2) in tenths of a nat
    assert t2.fit_loss(rows, targets) == pytest.approx(10.0 + 4.0 + 10.0)
    rms = t2.fit_rms(rows, targets)
    assert rms == pytest.approx({"pass@1": math.sqrt(5.0), "pass@256": math.sqrt(2.0), "dnll_rare": math.sqrt(0.05)})
    assert t2.fit_rms(rows, [t for t in targets if t["metric"] == "pass@1"]) == pytest.approx({"pass@1": math.sqrt(5.0)})


def _sim_row(method, n, means):
    return {"method": method, "N": n, "gamma": 0.0,
            **{m: {"mean": v, "ci_low": v - w, "ci_high": v + w} for m, (v, w) in zip(("pass@1", "pass@256", "dnll_rare"),
                                                                                  means)}}


def test_depth_chosen_controls_pick_the_highest_pass1_at_n8():
    from fgrpo_sim.sim import table2_depth as t2

    rows = [_sim_row("entropy 0.0001", 8, ((30.0, 1), (60.0, 1), (0.1, 0.1))),
            _sim_row("entropy 0.001", 8, ((31.0, 1), (50.0, 1), (0.1, 0.1))),
            _sim_row("entropy 0.001", 4, ((10.0, 1), (50.0, 1), (0.1, 0.1))),  # N = 4: not looked at
            _sim_row("KL 0.001", 8, ((29.0, 1), (60.0, 1), (0.1, 0.1))),
            _sim_row("KL 0.01", 8, ((28.0, 1), (90.0, 1), (0.1, 0.1)))]
    chosen = t2.chosen_controls(rows)
    assert chosen == {"entropy": {"grid": [1e-4, 1e-3], "pass@1_at_N8": [30.0, 31.0], "chosen": 1e-3},
                      "KL": {"grid": [1e-3, 1e-2], "pass@1_at_N8": [29.0, 28.0], "chosen": 1e-3}}
    assert t2.chosen_controls(rows[:3]) == {"entropy": chosen["entropy"]}  # a family with a coefficient missing: none
    assert t2.chosen_controls(rows[1:]) == {"KL": chosen["KL"]}


def test_depth_predictions_v1_rule_at_its_edges_and_skips():
    """hit: paper in [ci_low - rms, ci_high + rms], both ends included; only N = 8, unfitted cells, rows that ran."""
    from fgrpo_sim.sim import table2_depth as t2

    # GRPO fitted exactly except pass@1 off by 2 at every N (rms 2); dnll_rare exact (rms 0)
    rows = [_sim_row("GRPO", n, ((t2.paper_cells()[("GRPO", n, "pass@1")] + 2.0, 0.5),
                                 (t2.paper_cells()[("GRPO", n, "pass@256")], 0.5),
                                 (t2.paper_cells()[("GRPO", n, "dnll_rare")], 0.1))) for n in (2, 8)]
    targets = [t for t in t2.fit_targets((2, 8)) if t["metric"] != "pass@256"]
    # F-GRPO paper: pass@1 38.6, pass@256 70.3, dnll 0.46
    rows.append(_sim_row("F-GRPO", 8, ((35.6, 1.0), (70.3 - 1.0, 1.0), (0.46 - 0.2, 0.2))))
    rows.append(_sim_row("F-GRPO", 4, ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0))))
    rows.append(_sim_row("low-LR", 8, ((37.8 + 5.0, 3.0), (69.2, 0.0), (0.0, 0.0))))
    preds = t2.predictions(rows, targets)
    got = {(p["cell"]["method"], p["cell"]["metric"]): p for p in preds}
    assert list(got) == [("F-GRPO", "dnll_rare"), ("F-GRPO", "pass@1"), ("F-GRPO", "pass@256"),
                         ("GRPO low-LR", "pass@1"), ("GRPO low-LR", "pass@256")]  # no entropy/KL rows: none
    f1 = got[("F-GRPO", "pass@1")]
    assert f1["cell"] == {"model": "Qwen2.5-7B", "method": "F-GRPO", "N": 8, "metric": "pass@1"}
    assert f1["tolerance"] == pytest.approx(2.0) and f1["paper"] == 38.6
    assert (f1["predicted"], f1["ci_low"], f1["ci_high"]) == (35.6, 34.6, 36.6)
    assert f1["hit"] is True  # 38.6 = 36.6 + 2: the upper edge, included
    assert got[("F-GRPO", "pass@256")]["tolerance"] == 0.0 and got[("F-GRPO", "pass@256")]["hit"] is True  # at ci_high
    assert got[("F-GRPO", "dnll_rare")]["hit"] is True and got[("F-GRPO", "dnll_rare")]["tolerance"] == pytest.approx(0.0)
    assert got[("GRPO low-LR", "pass@1")]["hit"] is True  # 37.8 = 39.8 - 2: the lower edge, included
    assert got[("GRPO low-LR", "pass@256")]["hit"] is True and "coefficient" not in f1 and "contrast" not in f1
    rows[-1] = _sim_row("low-LR", 8, ((37.8 + 5.01, 3.0), (69.2 + 0.01, 0.0), (0.0, 0.0)))
    rows[-3] = _sim_row("F-GRPO", 8, ((35.59, 1.0), (70.3 - 1.01, 1.0), (0.46 - 0.2, 0.2)))
    missed = {(p["cell"]["method"], p["cell"]["metric"]): p["hit"] for p in t2.predictions(rows, targets)}
    assert missed[("F-GRPO", "pass@1")] is False and missed[("GRPO low-LR", "pass@1")] is False
    assert missed[("F-GRPO", "pass@256")] is False and missed[("GRPO low-LR", "pass@256")] is False
    # a fitted cell is never predicted
    assert not any(p["cell"]["method"] == "F-GRPO" for p in t2.predictions(
        rows, targets + [{"method": "F-GRPO", "N": 8, "metric": m, "value": 0.0} for m in t2.METRICS]))


def test_depth_predictions_carry_the_chosen_coefficient_and_contrast():
    from fgrpo_sim.sim import table2_depth as t2

    base = {0: (0.30, 0.60, 0.5), 1: (0.34, 0.66, 0.6), 2: (0.32, 0.62, 0.4)}
    gains = {"GRPO": (0, 0, 0), "entropy 0.0001": (0.01, 0.02, 0.1), "entropy 0.001": (0.02, 0.08, -0.1),
             "KL 0.001": (0.0, 0.0, 0.0), "KL 0.01": (-0.01, 0.0, 0.0)}
    table = {}
    for method, (g1, g256, gd) in gains.items():
        table[(method, 8)] = [(p1 + g1 + 0.001 * p, p256 + g256 + 0.002 * p, d + gd) for p, (p1, p256, d) in base.items()]
    frame = _depth_frame(table)
    rows = t2.summarise(frame)
    preds = {(p["cell"]["method"], p["cell"]["metric"]): p for p in t2.predictions(rows, [], frame)}
    assert set(preds) == {("GRPO-H", "pass@1"), ("GRPO-H", "pass@256"), ("GRPO-KL", "pass@1"), ("GRPO-KL", "pass@256")}
    h = preds[("GRPO-H", "pass@256")]
    assert h["coefficient"] == 1e-3 and preds[("GRPO-KL", "pass@1")]["coefficient"] == 1e-3
    assert h["predicted"] == pytest.approx(100 * (np.mean([0.60, 0.66, 0.62]) + 0.08 + 0.002)) and h["paper"] == 69.5
    c = h["contrast"]
    assert c["paper"] == pytest.approx(69.5 - 64.1) and c["predicted"] == pytest.approx(8.0)
    assert c["ci_low"] <= c["predicted"] <= c["ci_high"] and c["hit"] is False  # 5.4 below about 8
    kl = preds[("GRPO-KL", "pass@256")]["contrast"]
    assert kl["predicted"] == pytest.approx(0.0, abs=1e-9) and kl["paper"] == pytest.approx(72.0 - 64.1)


def test_depth_dip_points_flank_at_the_dip_is_zero():
    from fgrpo_sim.sim import table2_depth as t2

    frame = _depth_frame({("GRPO", 2): [(0.3, 0.50, 0.1), (0.3, 0.54, 0.1)],
                          ("GRPO", 8): [(0.3, 0.70, 0.1), (0.3, 0.60, 0.1)],
                          ("GRPO", 32): [(0.3, 0.80, 0.1), (0.3, 0.76, 0.1)],
                          ("F-GRPO", 2): [(0.3, 0.10, 0.1), (0.3, 0.10, 0.1)]})
    dip = t2.dip_points(frame)
    assert dip["dip_N"] == 2  # GRPO's lowest, not F-GRPO's
    assert dip["left"] == {"N": 2, "points": 0.0, "ci_low": 0.0, "ci_high": 0.0}
    assert dip["right"]["N"] == 32 and dip["right"]["points"] == pytest.approx(100 * np.mean([0.30, 0.22]))
    assert t2.dip_points(frame, "F-GRPO")["dip_N"] == 2
    assert t2.dip_points(frame, metric="pass@1")["right"]["points"] == pytest.approx(0.0, abs=1e-9)


def test_depth_build_record_fields():
    from fgrpo_sim.sim import table2_depth as t2
    from fgrpo_sim.sim.table2_depth_record import check_record

    table = {}
    for n, (p1, p256) in {2: (0.36, 0.75), 8: (0.37, 0.64)}.items():
        for method in ("GRPO", "F-GRPO", "low-LR"):
            table[(method, n)] = [(p1 + 0.01 * p, p256 - 0.01 * p, 0.3 + 0.1 * p) for p in range(3)]
    frame = _depth_frame(table)
    setting = t2.DepthSetting(steps=3)
    record = t2.build_record(setting, frame, 3, "fgrpo simulate table2-depth --steps 3", seed=7)
    assert record["schema"] == "table2-depth-v2" and record["populations"] == 3
    assert record["command"] == "fgrpo simulate table2-depth --steps 3" and record["rules"] == t2.RULES
    fitted = record["fitted"]
    assert fitted["steps"] == 3 and fitted["seed"] == 7 and fitted["gamma"] == 0.5
    assert fitted["optimizer"] == "adam" and fitted["parametrisation"] == "orthogonal"
    rows = t2.summarise(frame)
    targets = t2.fit_targets((2, 8))
    assert record["fit_targets"] == targets and record["simulated_rows"] == rows
    assert fitted["loss"] == pytest.approx(t2.fit_loss(rows, targets)) and fitted["rms"] == t2.fit_rms(rows, targets)
    assert record["predictions"] == t2.predictions(rows, targets, frame) and record["controls"] == {}
    assert record["grpo_dip_points"] == t2.dip_points(frame)
    assert record["seeding"].endswith(": group_size_study's per-row keys (population, N and variant each its own stream)")
    check_record(json.loads(json.dumps(record)), "built")


# --- result_table.py: the resume reader's refusals, each naming file, line or row, and why -------------------------

def _schema(**kw):
    from fgrpo_sim.sim.result_table import TableSchema

    base = dict(name="test table", text=("variant",), integers=("step",), numbers=("lr",), metrics=("share",),
                nan_metrics=("share",), key=("variant", "step"), bounds=(("share", 0.0, 1.0), ("step", 0, None),
                                                                       ("lr", None, 5.0)))
    return TableSchema(**{**base, **kw})


def _read(path, schema=None, **kw):
    from fgrpo_sim.sim.result_table import read_result_table

    return read_result_table(path, schema or _schema(), "start afresh", **kw)


def test_result_table_csv_reads_typed_with_extra_columns(tmp_path):
    path = tmp_path / "t.CSV"  # suffix in any case
    path.write_text("variant,step,lr,share,note,extra\nGRPO,0,0.5,0.25,a,1.5\nF,4.0,1,,b,\nF,5,2,nan,c,2\n")
    table = _read(path)
    assert table["variant"].tolist() == ["GRPO", "F", "F"] and table["step"].tolist() == [0, 4, 5]
    assert table["step"].dtype == np.int64 and table["lr"].dtype == np.float64 and table["share"].dtype == np.float64
    assert table["share"].iloc[0] == 0.25 and np.isnan(table["share"].iloc[1]) and np.isnan(table["share"].iloc[2])
    assert table["note"].tolist() == ["a", "b", "c"]  # text outside the schema stays text
    assert table["extra"].iloc[0] == 1.5 and np.isnan(table["extra"].iloc[1]) and table["extra"].iloc[2] == 2.0
    assert table.columns.tolist() == ["variant", "step", "lr", "share", "note", "extra"]
    assert table["extra"].dtype.kind == "f"


def test_result_table_header_only_and_empty(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("variant,step,lr,share\n")
    assert _read(path).empty
    path.write_text("")
    with pytest.raises(ValueError) as err:
        _read(path)
    assert str(err.value) == f"out {path} exists but is not a readable result table (it is empty); start afresh"
    path.write_text("variant,step,share\n")
    with pytest.raises(ValueError) as err:
        _read(path, label="--from")
    assert str(err.value) == f"--from {path} exists but is not a test table (no column 'lr'); start afresh"


def test_result_table_csv_damage_named_with_action(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("variant,step,lr,share\nGRPO,0,0.5,0.25\nGRPO,1,0.5\n")  # a short row
    with pytest.raises(ValueError) as err:
        _read(path, action="read")
    assert str(err.value) == (f"cannot read {path} line 3: 3 fields where the header has 4 (a damaged or cut-short "
                              "row); fix or delete that row, or start afresh")
    path.write_text("variant,step,lr,share\nGRPO,0,0.5,0.25\nGRPO,1,0.5,0.2")  # the last row cut short
    with pytest.raises(ValueError, match=r"^cannot resume from .* line 3.*; fix or delete that row, or start afresh$"):
        _read(path)


def test_result_table_suffix_and_parquet_damage(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("{}")
    with pytest.raises(ValueError) as err:
        _read(path, label="--out")
    assert str(err.value) == "--out must end in .parquet or .csv, got 't.json'"
    bad = tmp_path / "t.parquet"
    bad.write_bytes(b"not a parquet file at all")
    with pytest.raises(ValueError) as err:
        _read(bad)
    message = str(err.value)
    assert message.startswith(f"out {bad} exists but is not a readable result table (") and message.endswith(
        "); start afresh") and "\n" not in message


def test_result_table_parquet_round_trip_and_text_numbers(tmp_path):
    good = pd.DataFrame({"variant": ["GRPO", "F"], "step": [0, 4], "lr": [0.5, 1.0], "share": [0.25, np.nan]})
    path = tmp_path / "t.Parquet"
    good.to_parquet(path)
    table = _read(path)
    assert table["step"].tolist() == [0, 4] and table["step"].dtype == np.int64 and np.isnan(table["share"].iloc[1])
    pd.DataFrame(columns=good.columns).astype({"step": "int64", "lr": float, "share": float}).to_parquet(path)
    assert _read(path).empty
    good.assign(lr=["0.5", "1.0"]).to_parquet(path)  # numbers stored as text: pandas would parse them, we do not
    with pytest.raises(ValueError) as err:
        _read(path)
    assert str(err.value) == (f"cannot resume from {path} row 1: lr = '0.5' is stored as text, not as numbers; "
                              "fix or delete that row, or start afresh")
    good.assign(step=[True, False]).to_parquet(path)
    with pytest.raises(ValueError, match=r" row 1: step = True is stored as bool, not as numbers; "):  # not np.True_
        _read(path)


@pytest.mark.parametrize("rows, message", [
    ([["GRPO", "0", "0.5", "0.25"], [" ", "1", "0.5", "0.2"]], "line 3: variant is empty"),
    ([["GRPO", "0", "0.5", "0.25"], ["GRPO", "1.5", "0.5", "0.2"]], "line 3: step = 1.5 is not an integer"),
    ([["GRPO", "1e19", "0.5", "0.25"]], "line 2: step = 1e19 is not an integer"),
    ([["GRPO", "x", "0.5", "0.25"]], "line 2: step = 'x' is not an integer"),
    ([["GRPO", "0", "", "0.25"]], "line 2: lr = '' is not a finite number"),
    ([["GRPO", "0", "inf", "0.25"]], "line 2: lr = inf is not a finite number"),
    ([["GRPO", "0", "0.5", "-inf"]], "line 2: share = -inf is not a finite number"),
    ([["GRPO", "0", "0.5", "abc"]], "line 2: share = 'abc' is not a finite number"),
    ([["GRPO", "0", "0.5", "1.5"]], "line 2: share = 1.5 is not in [0, 1]"),
    ([["GRPO", "0", "0.5", "-0.1"]], "line 2: share = -0.1 is not in [0, 1]"),
    ([["GRPO", "-1", "0.5", "0.5"]], "line 2: step = -1 is not >= 0"),
    ([["GRPO", "0", " 5.5", "0.5"]], "line 2: lr = 5.5 is not <= 5"),
    ([["GRPO", "0", "0.5", "0.5"], ["F", "0", "0.5", "0.5"], ["GRPO", "0", "1", "0.5"]],
     "line 4: it repeats line 2 (the same variant, step)"),
    ([["GRPO", "0", "0.5", "1.5"], ["GRPO", "x", "0.5", "0.5"]], "line 2: share = 1.5 is not in [0, 1]"),
    ([["GRPO", "0", "0.5", "0.5"], ["GRPO", "x", "0.5", "0.5"], ["GRPO", "1", "0.5", "1.5"]],
     "line 3: step = 'x' is not an integer"),
])
def test_result_table_first_bad_row_named(tmp_path, rows, message):
    path = tmp_path / "t.csv"
    path.write_text("variant,step,lr,share\n" + "".join(",".join(r) + "\n" for r in rows))
    with pytest.raises(ValueError) as err:
        _read(path)
    assert str(err.value) == f"cannot resume from {path} {message}; fix or delete that row, or start afresh"


def test_result_table_bounds_edges_allowed_and_rules(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("variant,step,lr,share\nGRPO,0,5,0\nGRPO,1,-100,1\n")
    table = _read(path)
    assert table["share"].tolist() == [0.0, 1.0] and table["lr"].tolist() == [5.0, -100.0]
    seen = {}

    def rules(typed):
        seen["dtypes"] = (typed["step"].dtype, typed["lr"].dtype)
        return [(typed["step"] > 0, lambda i: f"step {typed['step'].iloc[i]} is past the run's end")]

    with pytest.raises(ValueError) as err:
        _read(path, rules=rules)
    assert str(err.value) == (f"cannot resume from {path} line 3: step 1 is past the run's end; fix or delete that "
                              "row, or start afresh")
    assert seen["dtypes"] == (np.int64, np.float64)  # the rules see the typed table
    assert _read(path, rules=lambda typed: [(typed["step"] > 5, lambda i: "never")])["step"].tolist() == [0, 1]


def test_result_table_rules_and_key_wait_for_typed_columns(tmp_path):
    """A row that fails the schema is named first; the run's rules never see untyped values."""
    path = tmp_path / "t.csv"
    path.write_text("variant,step,lr,share\nGRPO,0,0.5,0.5\nGRPO,x,0.5,0.5\n")
    called = []
    with pytest.raises(ValueError, match="line 3: step = 'x' is not an integer"):
        _read(path, rules=lambda typed: called.append(1) or [])
    assert called == []


def test_result_table_parquet_repeats_name_rows_from_1(tmp_path):
    path = tmp_path / "t.parquet"
    pd.DataFrame({"variant": ["A", "B", "B"], "step": [3, 1, 1], "lr": [0.5] * 3, "share": [0.1, 0.2, 0.3]},
                 index=[7, 8, 9]).to_parquet(path)
    with pytest.raises(ValueError) as err:
        _read(path)
    assert str(err.value) == (f"cannot resume from {path} row 3: it repeats row 2 (the same variant, step); fix or "
                              "delete that row, or start afresh")


def test_result_table_integer_column_beyond_int64(tmp_path):
    from fgrpo_sim.sim.result_table import TableSchema, validate_rows

    schema = TableSchema("test table", integers=("step",))
    big = pd.DataFrame({"step": np.array([1, 2**63], dtype=np.uint64)})
    with pytest.raises(ValueError) as err:
        validate_rows(schema, big, "t.parquet", "x")
    assert str(err.value) == ("cannot resume from t.parquet row 2: step = 9223372036854775808 is not an integer; fix "
                              "or delete that row, or x")
    ok = validate_rows(schema, pd.DataFrame({"step": np.array([1, 2**63 - 1], dtype=np.uint64)}), "t.parquet", "x")
    assert ok["step"].tolist() == [1, 2**63 - 1] and ok["step"].dtype == np.int64
    with pytest.raises(ValueError, match=r"row 1: step = 9.3e\+18 is not an integer|row 1: step = 9.*e\+18 is not"):
        validate_rows(schema, pd.DataFrame({"step": [2.0**63]}), "t.parquet", "x")


def test_result_table_shown_cells():
    from fgrpo_sim.sim.result_table import _plain, _shown

    assert _shown(" 0.5 ") == "0.5" and _shown("abc") == "'abc'" and _shown(np.float64(0.5)) == "0.5"
    assert _shown(np.int64(3)) == "3" and _shown("") == "''" and _shown(None) == "None"
    assert _plain(np.True_) == "True" and _plain("0.5") == "'0.5'" and _plain(np.float64(0.5)) == "0.5"


def test_result_table_numbers_missing_and_text():
    from fgrpo_sim.sim.result_table import _numbers

    numbers, missing = _numbers(pd.Series([" 1.5", "", "NaN", "x", None, "2"], dtype=object))
    assert missing.tolist() == [False, True, True, False, True, False]
    assert numbers.iloc[0] == 1.5 and numbers.iloc[5] == 2.0 and numbers.iloc[1:5].isna().all()
    typed = pd.Series([1.0, np.nan])
    numbers, missing = _numbers(typed)
    assert numbers is typed and missing.tolist() == [False, True]


# --- group_size_report.py: intervals, shares, curves at a level, the tables' lines, the record reader --------------

def test_report_outward_rounding_and_infinite_bounds():
    from fgrpo_sim.sim.group_size_report import _outward, paired_interval

    assert _outward(0.123456, -0.000041, 0.2000001) == [0.12346, -0.00005, 0.20001]
    assert _outward(0.5, 0.49, 0.51, digits=1) == [0.5, 0.4, 0.6]
    est, low, high = _outward(1.0, -math.inf, math.inf)
    assert est == 1.0 and math.isnan(low) and math.isnan(high)
    est, low, high = _outward(1.0, 0.5, math.inf)
    assert low == 0.5 and math.isnan(high)
    from scipy import stats

    a, b = np.array([0.30, 0.35, 0.31, 0.40]), np.array([0.25, 0.30, 0.32, 0.33])
    ci = stats.ttest_1samp(a - b, 0.0).confidence_interval(0.95)
    got = paired_interval(a, b)
    assert got[0] == pytest.approx(np.mean(a - b), abs=5e-6)
    assert ci.low - 1e-5 <= got[1] <= ci.low and ci.high <= got[2] <= ci.high + 1e-5


def test_report_interval_coverage_defaults_and_by_hand():
    """The share of 4000 seeded normal samples (seed 0) whose 95% t interval holds 0, recomputed with scipy."""
    from scipy import stats

    from fgrpo_sim.sim.group_size_report import interval_coverage

    share = interval_coverage(5)
    x = np.random.default_rng(0).normal(size=(4000, 5))
    half = stats.t.ppf(0.975, 4) * x.std(1, ddof=1) / math.sqrt(5)
    assert share == pytest.approx(np.mean(np.abs(x.mean(1)) <= half), abs=1e-12)
    assert share * 4000 == pytest.approx(round(share * 4000), abs=1e-9)
    x = np.random.default_rng(3).gamma(2.0, size=(300, 4))
    half = stats.t.ppf(0.975, 3) * x.std(1, ddof=1) / 2.0
    assert interval_coverage(4, "gamma(2)", 300, 3) == pytest.approx(np.mean(np.abs(x.mean(1) - 2.0) <= half))


def test_report_argmin_share_needs_five_units_and_counts_resamples():
    from fgrpo_sim.sim.group_size_report import MIN_UNITS, argmin_share

    assert MIN_UNITS == 5
    four = np.array([[3.0, 1.0, 2.0]] * 4)
    assert argmin_share(four) is None
    five = np.array([[3.0, 1.0, 2.0]] * 5)
    assert argmin_share(five).tolist() == [0.0, 1.0, 0.0]
    # column 0 lowest in units 0-1, column 2 lowest elsewhere: the share of column 0 is a count of 40 resamples
    # column 0 (mean 0.5 + 0.2 m, m the draws of units 3-4) is lowest when m <= 2 (chance 0.68), else column 2
    mixed = np.array([[0.5, 5.0, 1.0]] * 3 + [[1.5, 5.0, 1.0]] * 2)
    share = argmin_share(mixed, resamples=40, seed=1)
    assert share.shape == (3,) and share.sum() == pytest.approx(1.0) and share[1] == 0.0
    assert 0 < share[2] < share[0] and (share * 40 == np.round(share * 40)).all()
    assert argmin_share(mixed, resamples=40, seed=1).tolist() == share.tolist()


def test_report_verdict_words():
    from fgrpo_sim.sim.group_size_report import verdict

    ns = [2, 8, 32]
    assert verdict(ns, 0, [0, 0, 0], [1, 1, 1]) == "no dip: lowest at the edge N = 2"
    assert verdict(ns, 2, [1, 1, 1], [0, 0, 0]) == "no dip: lowest at the edge N = 32"
    assert verdict(ns, 1, [0.1, 0.0, 0.2], [0.1, 0.01, 0.2]) == "no dip: N = 2 minus lowest includes 0"
    assert verdict(ns, 1, [0.1, 0.01, 0.2], [0.1, -0.01, 0.2]) == "no dip: N = 32 minus lowest includes 0"
    assert verdict(ns, 1, [0.1, -0.1, 0.2], [0.1, 0.0, 0.2]) == "no dip: N = 2 and N = 32 minus lowest include 0"
    assert verdict(ns, 1, [0.1, 1e-9, 0.2], [0.1, 1e-9, 0.2]) == "dip at N = 8"


def test_report_curve_at_level_edges():
    from fgrpo_sim.sim.group_size_report import _curve_at_level

    x, y = np.array([0.1, 0.3, 0.3, 0.5]), np.array([10.0, 20.0, 30.0, 40.0])
    assert math.isnan(_curve_at_level(x, y, 0.6))  # never reached
    assert _curve_at_level(x, y, 0.05) == 10.0  # reached at the first evaluation
    assert _curve_at_level(x, y, 0.1 + 1e-13) == 10.0  # within 1e-12 counts as reached
    assert _curve_at_level(x, y, 0.2) == pytest.approx(15.0)  # halfway between the first two
    assert _curve_at_level(x, y, 0.4) == pytest.approx(35.0)
    assert _curve_at_level(np.array([0.1, 0.2, 0.2]), np.array([1.0, 2.0, 3.0]), 0.2) == pytest.approx(2.0)
    assert _curve_at_level(np.array([0.2, 0.2]), np.array([1.0, 2.0]), 0.2) == 1.0
    assert _curve_at_level(np.array([0.1, 0.4, 0.4]), np.array([1.0, 4.0, 9.0]), 0.4) == pytest.approx(4.0)


def _curves_frame():
    """Two populations x two batch seeds at N = 4: per (arm, population) a pass@1 curve over steps 0, 10, 20."""
    from fgrpo_sim.sim.group_size_report import METRIC

    curves = {("GRPO", 0): ((0.1, 0.3, 0.5), (0.9, 0.8, 0.7)), ("GRPO", 1): ((0.1, 0.2, 0.4), (0.9, 0.85, 0.8)),
              ("F", 0): ((0.1, 0.2, 0.3), (0.9, 0.9, 0.9)), ("F", 1): ((0.1, 0.4, 0.6), (0.9, 0.7, 0.5))}
    rows = []
    for (arm, pop), (p1, p256) in curves.items():
        for seed, shift in ((0, -0.01), (1, 0.01)):  # the batch seeds average to the curve above
            for step, a, b in zip((0, 10, 20), p1, p256):
                rows.append({"variant": arm, "population": pop, "seed": seed, "N": 4, "step": step,
                             "heldout_pass@1": a + shift, METRIC: b + shift})
    rows.append({"variant": "GRPO", "population": 0, "seed": 0, "N": 8, "step": 20, "heldout_pass@1": 0.0,
                 METRIC: 0.0})
    return pd.DataFrame(rows)


def test_report_equal_pass1_by_hand():
    from fgrpo_sim.sim.group_size_report import equal_pass1

    out = equal_pass1(_curves_frame(), ["F", "GRPO"], 4, "population")
    # population 0: level min(0.5, 0.3) = 0.3: GRPO reaches it at step 10 (0.8), F at step 20 (0.9)
    # population 1: level min(0.4, 0.6) = 0.4: GRPO at step 20 (0.8), F halfway from 0.1 to 0.4 -> 0.4: 0.7
    assert out["GRPO"] == pytest.approx([0.8, 0.8]) and out["F"] == pytest.approx([0.9, 0.7])
    assert list(out) == ["F", "GRPO"]


def test_report_units_and_unit_matrix():
    from fgrpo_sim.sim.group_size_report import METRIC, _units, unit_matrix

    frame = _curves_frame()
    assert _units(frame) == "population" and _units(frame[frame["population"] == 0]) == "seed"
    final = frame[frame["step"] == 20]
    values, ns = unit_matrix(final, "GRPO", METRIC, "population")
    assert list(ns) == [4, 8] and values.shape == (2, 2)
    assert values[0].tolist() == pytest.approx([0.7, 0.0]) and values[1, 0] == pytest.approx(0.8)
    assert np.isnan(values[1, 1])
    by_seed, _ = unit_matrix(final[final["population"] == 1], "F", METRIC, "seed")
    assert by_seed[:, 0] == pytest.approx([0.49, 0.51])


def test_report_predictions_pool_the_tables_populations():
    """_predictions: one (N*, median rho) per (rare_correct_prob, rare_mass) the table ran, over its N and its
    population draws only (two here: ten draws predict N = 8, not 16, at rare p 0.5)."""
    from dataclasses import replace

    from fgrpo_sim.sim.group_size_report import _predictions
    from fgrpo_sim.sim.group_size_study import (DEFAULT_POPULATION, GroupSizeStudySpec, initial_mu_rho,
                                                population_spec, predicted_dips)
    from fgrpo_sim.sim.population_shared import make_shared_population

    pop = replace(DEFAULT_POPULATION, num_prompts=8, heldout_prompts=8, rare_only_share=0.0)
    ns = (2, 4, 8, 16, 32, 64, 128)
    frame = pd.DataFrame([{"N": n, "population": p, "rare_correct_prob": rcp, "rare_mass": 0.03}
                          for n in ns for p in (0, 1) for rcp in (1.0, 0.5)])
    got = _predictions(frame, pop)
    assert set(got) == {(1.0, 0.03), (0.5, 0.03)}
    assert got[(0.5, 0.03)][0] == 16 and got[(1.0, 0.03)][0] == 8
    for rcp in (1.0, 0.5):
        spec = GroupSizeStudySpec(group_sizes=ns, rare_masses=(0.03,), populations=2,
                                  population=replace(pop, rare_correct_prob=rcp))
        assert predicted_dips(spec) == {0.03: got[(rcp, 0.03)][0]}
        rho = np.concatenate([initial_mu_rho(make_shared_population(population_spec(spec, 0.03, p)))[1]
                              for p in (0, 1)])
        assert got[(rcp, 0.03)][1] == round(float(np.median(rho[(rho > 0) & (rho < 1)])), 4)
    assert _predictions(frame[frame["N"].isin([2, 128])], pop)[(0.5, 0.03)][0] == 2  # only the table's N


def _report(**kw):
    """A synthetic per-setting report with every key the text and markdown tables read."""
    base = {"rare_correct_prob": 1.0, "optimizer": "adam", "parametrisation": "orthogonal", "view": "equal-steps",
            "rare_mass": 0.02, "base_lr": 0.01, "lr": 0.01, "rare_share_median": 0.0196, "populations": 10,
            "batch_seeds": 2, "unit": "population", "few_units": False, "predicted_N": 16, "observed_lowest_N": 8,
            "lowest_share": 0.873, "argmin_share": [0.0, 0.124, 0.873, 0.003], "N": [2, 4, 8, 32],
            "first_minus_lowest": [0.01327, 0.00905, 0.01748], "last_minus_lowest": [0.05463, 0.04423, 0.06504],
            "dip": True, "verdict": "dip at N = 8", "pass256": [0.85, 0.84, 0.83, 0.86],
            "dnll_rare": [0.45, 0.64, 0.67, -0.25],
            "fgrpo_at_lowest": [{"gamma": 0.5, "variant": "F-GRPO gamma=0.5", "minus_grpo": [0.0132, 0.0108, 0.0156],
                                 "minus_control": [-0.0007, -0.0035, 0.0021]},
                                {"gamma": 1.0, "variant": "F-GRPO gamma=1", "minus_grpo": [0.0232, 0.02, 0.03]}],
            "best_checkpoint": {"observed_lowest_N": 4, "lowest_share": 0.5}}
    return {**base, "base_lr": kw.get("lr", 0.01), **kw}


def test_report_text_lines_by_hand():
    from fgrpo_sim.sim.group_size_report import format_report

    few = _report(optimizer="sgd", lr=2.0, populations=3, few_units=True, lowest_share=None, argmin_share=None,
                  dip=False, fgrpo_at_lowest=[{"gamma": 0.5, "variant": "F-GRPO gamma=0.5", "minus_grpo": None,
                                               "minus_control": [0.001, None, None]}])
    lines = format_report([_report(), few]).splitlines()
    assert lines[0] == ("held-out pass@256 of GRPO vs N (intervals: 95% t over populations, paired, bounds rounded "
                        "outward); F-GRPO at the lowest N, equal steps")
    assert lines[1] == ("warning: 3 units (populations) per setting, fewer than 5: no argmin shares (too few distinct "
                        "bootstrap resamples); t intervals assume near-normal unit means")
    assert lines[2].split() == ["rare", "p", "opt", "param", "view", "rare", "lr", "pred", "lowest", "(share)", "dip",
                                "first", "minus", "lowest", "last", "minus", "lowest", "F", "0.5", "minus", "GRPO",
                                "F", "0.5", "minus", "control"]
    assert lines[3].split() == ["1", "adam", "orthogonal", "equal-steps", "0.02", "0.01", "16", "8", "(0.87)", "yes",
                                "+0.013", "[+0.009,", "+0.018]", "+0.055", "[+0.044,", "+0.066]",
                                "+0.013", "[+0.010,", "+0.016]", "-0.001", "[-0.004,", "+0.003]"]
    assert lines[4].split()[1:12] == ["sgd", "orthogonal", "equal-steps", "0.02", "2", "16", "8", "(", "n/a)", "no",
                                      "+0.013"]
    assert lines[4].split()[-3:] == ["-", "+0.001", "[-]"] and len(lines) == 5
    # the columns line up under their heads (each cell right-aligned to its head's width)
    assert lines[2] == ("rare p  opt      param           view   rare     lr  pred  lowest (share)  dip          first "
                        "minus lowest           last minus lowest            F 0.5 minus GRPO         F 0.5 minus control")
    assert lines[3] == ("     1 adam orthogonal    equal-steps   0.02   0.01    16        8 (0.87)  yes     +0.013 "
                        "[+0.009, +0.018]     +0.055 [+0.044, +0.066]     +0.013 [+0.010, +0.016]     -0.001 [-0.004, "
                        "+0.003]")
    assert len(lines[4]) == len(lines[3]) == len(lines[2]) and lines[4].index("( n/a)") == lines[3].index("(0.87)")
    assert format_report([_report()]).splitlines()[1].startswith("rare p  opt")  # no warning line


def test_report_gamma_shown_and_entries():
    from fgrpo_sim.sim.group_size_report import _f_label, curve, fgrpo_entry, format_report, shown_gamma

    assert shown_gamma([_report()]) == 0.5
    only_one = _report(fgrpo_at_lowest=[{"gamma": 2.0, "minus_grpo": [0.1, 0.05, 0.2]},
                                        {"gamma": 1.0, "minus_grpo": [0.2, 0.1, 0.3]}])
    assert shown_gamma([only_one]) == 1.0 and shown_gamma([_report(fgrpo_at_lowest=[])]) is None
    assert _f_label(None) == "F-GRPO" and _f_label(1.0) == "F 1" and _f_label(0.25) == "F 0.25"
    assert fgrpo_entry(only_one, 1) == {"gamma": 1.0, "minus_grpo": [0.2, 0.1, 0.3]} and fgrpo_entry(only_one, 3) == {}
    report = {"curves": [{"variant": "GRPO", "x": 1}, {"variant": "F", "x": 2}]}
    assert curve(report, "F") == {"variant": "F", "x": 2} and curve(report, "G") is None
    lines = format_report([only_one]).splitlines()
    assert "F 1 minus GRPO" in lines[1] and lines[2].split()[-4:] == ["+0.200", "[+0.100,", "+0.300]", "-"]
    none = format_report([_report(fgrpo_at_lowest=[])]).splitlines()
    assert "F-GRPO minus GRPO" in none[1] and none[2].split()[-2:] == ["-", "-"]


def test_report_format_interval_rounds_outward_with_slack():
    from fgrpo_sim.sim.group_size_report import format_interval

    assert format_interval(None) == "-"
    assert format_interval([0.5, None, 0.6]) == "+0.500 [-]" and format_interval([0.5, 0.4, None]) == "+0.500 [-]"
    assert format_interval([0.0151, 0.0061, 0.0229]) == "+0.015 [+0.006, +0.023]"
    assert format_interval([0.0151, 0.006, 0.023]) == "+0.015 [+0.006, +0.023]"  # exact thousandths stay
    assert format_interval([-0.5, -0.61, -0.4], digits=1) == "-0.5 [-0.7, -0.4]"


def test_report_few_units_warning_lists_unit_counts():
    from fgrpo_sim.sim.group_size_report import few_units_warning

    assert few_units_warning([_report()]) is None
    seeds = _report(unit="seed", populations=1, batch_seeds=4, few_units=True)
    pops = _report(populations=2, few_units=True)
    assert few_units_warning([pops, seeds, _report(), pops]).startswith("warning: 2, 4 units (populations) per setting")


def test_report_same_under_sgd_merges_identical_twins_only():
    from fgrpo_sim.sim.group_size_report import same_under_sgd

    axis = _report(optimizer="sgd", parametrisation="axis", lr=2.0)
    ortho = _report(optimizer="sgd", parametrisation="orthogonal", lr=2.0)
    other = _report(optimizer="sgd", parametrisation="orthogonal", lr=2.0, pass256=[0.1, 0.2, 0.3, 0.4])
    adam_axis, adam_ortho = _report(parametrisation="axis"), _report()
    out = same_under_sgd([axis, ortho, adam_axis, adam_ortho])
    assert [r["parametrisation"] for r in out] == ["axis = orthogonal", "axis", "orthogonal"]
    assert out[0] == {**axis, "parametrisation": "axis = orthogonal"} and axis["parametrisation"] == "axis"
    assert [r["parametrisation"] for r in same_under_sgd([axis, other])] == ["axis", "orthogonal"]
    lone = _report(optimizer="sgd", parametrisation="orthogonal", lr=6.0)
    assert same_under_sgd([axis, lone]) == [axis, lone]  # another lr is another setting


def test_report_markdown_rows_by_hand():
    from fgrpo_sim.sim.group_size_report import markdown_table

    big_lr = _report(lr=0.03, observed_lowest_N=2)
    rare = _report(rare_correct_prob=0.25, dip=False, lowest_share=None, argmin_share=None, verdict="no dip: x",
                   best_checkpoint={"observed_lowest_N": 32, "lowest_share": None})
    lines = markdown_table([big_lr, _report(), rare]).splitlines()
    assert lines[0] == ("|optimizer|map|rare mass (median rho)|lr|predicted|lowest N (share)|verdict|N=2 minus lowest|"
                        "N=32 minus lowest|share lowest, N = 2 / 4 / 8 / 32|dNLL_rare first / lowest / last|"
                        "F 0.5 minus GRPO|F 0.5 minus control|best-ckpt lowest N (share)|")
    assert lines[1] == "|" + "-|" * 13 and len(lines) == 4  # the larger lr is left out
    assert lines[2] == ("|adam|orthogonal|0.02 (0.020)|0.01|16|**8** (0.87)|dip at N = 8|+0.013 [+0.009, +0.018]|"
                        "+0.055 [+0.044, +0.066]|0.00 / 0.12 / 0.87 / 0.00|+0.45 / +0.67 / -0.25|"
                        "+0.013 [+0.010, +0.016]|-0.001 [-0.004, +0.003]|4 (0.50)|")
    assert lines[3].startswith("|adam (rare p 0.25)|orthogonal|") and "|8 (-)|no dip: x|" in lines[3]
    assert lines[3].endswith("|32 (-)|") and "|-|+0.45 / +0.67 / -0.25|" in lines[3]
    empty = markdown_table([]).splitlines()
    assert empty[0].startswith("|optimizer|") and "N=first minus lowest|N=last minus lowest|" in empty[0]
    assert len(empty) == 2


def test_report_headline_and_brief_tables_by_hand():
    from fgrpo_sim.sim.group_size_report import brief_tables, headline_reports

    reports = [_report(), _report(lr=0.03), _report(rare_correct_prob=0.25), _report(view="equal-rollouts"),
               _report(optimizer="sgd", parametrisation="axis", lr=2.0, argmin_share=None, lowest_share=None,
                       dip=False, verdict="no dip: flat"),
               _report(optimizer="sgd", parametrisation="dense", lr=6.0)]
    shown, lrs = headline_reports(reports)
    assert lrs == {"adam": 0.01, "sgd": 2.0} and shown == [reports[0], reports[4]]
    text = brief_tables(reports + [_report(rare_mass=0.1, populations=4, batch_seeds=3)])
    lines = text.splitlines()
    assert len(lines) == 6 + 1 + 5 and lines[6] == ""  # two tables, one per rare mass, a blank line between
    assert lines[0] == ("GRPO held-out pass@256 at rare mass 0.02 (default population, Adam lr 0.01, SGD lr 2, 10 "
                        "populations x 2 batch seeds; flanks: pass@256 at N = 2 and N = 32 minus at the lowest N; last "
                        "column at the lowest N, equal steps):")
    assert lines[1] == "" and lines[2] == "|optimizer, map|lowest N (share)|share of the other N|verdict|N=2 flank|N=32 flank|F 0.5 minus control|"
    assert lines[3] == "|-|-|-|-|-|-|-|"
    assert lines[4] == ("|Adam, orthogonal|**8** (0.87)|4: 0.12|dip at N = 8|+0.013 [+0.009, +0.018]|"
                        "+0.055 [+0.044, +0.066]|-0.001 [-0.004, +0.003]|")  # 0.003 rounds to 0.00: not listed
    assert lines[5] == ("|SGD, axis|8 (-)||no dip: flat|+0.013 [+0.009, +0.018]|+0.055 [+0.044, +0.066]|"
                        "-0.001 [-0.004, +0.003]|")
    assert lines[7].startswith("GRPO held-out pass@256 at rare mass 0.1 (default population, Adam lr 0.01, 4 "
                                "populations x 3 batch seeds;")
    with pytest.raises(ValueError) as err:
        brief_tables([_report(rare_correct_prob=0.25)])
    assert str(err.value) == ("--brief needs settings of the default population (--rare-correct-prob 1) at equal "
                              "steps")


def test_report_brief_rows_sorted_by_optimizer_then_map():
    from fgrpo_sim.sim.group_size_report import brief_tables

    reports = [_report(optimizer="sgd", parametrisation="dense", lr=2.0), _report(parametrisation="dense"),
               _report(parametrisation="axis"), _report(optimizer="sgd", parametrisation="axis", lr=2.0),
               _report(optimizer="sgd", parametrisation="orthogonal", lr=2.0)]
    rows = [line.split("|")[1] for line in brief_tables(reports).splitlines()[4:]]
    assert rows == ["Adam, axis", "Adam, dense", "SGD, axis = orthogonal", "SGD, dense"]


def test_report_read_reports_refuses_repeats_and_empty(tmp_path):
    from fgrpo_sim.packaged import committed_result
    from fgrpo_sim.sim.group_size_report import read_reports

    lines = committed_result("population-group-size.jsonl").read_text().splitlines()
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([lines[0], lines[1], lines[0]]) + "\n")
    first = json.loads(lines[0])
    with pytest.raises(ValueError) as err:
        read_reports(path)
    assert str(err.value) == (f"--from {path} line 3 repeats the setting of line 1 (rare_correct_prob "
                              f"{first['rare_correct_prob']}, optimizer {first['optimizer']}, parametrisation "
                              f"{first['parametrisation']}, view {first['view']}, rare_mass {first['rare_mass']}, lr "
                              f"{first['lr']}); give each once")
    path.write_text("\n".join(lines[:2]) + "\n")
    assert [r["parametrisation"] for r in read_reports(path)] == [json.loads(x)["parametrisation"] for x in lines[:2]]
    path.write_text("\n\n")
    with pytest.raises(ValueError) as err:
        read_reports(path)
    assert str(err.value) == f"--from {path} holds no group-size report"
    path.write_text(json.dumps({**first, "dip": "yes"}) + "\n")
    with pytest.raises(ValueError, match=r"; pass the --json output of fgrpo simulate group-size$"):
        read_reports(path)


def test_report_coverage_table_lines():
    from fgrpo_sim.sim.group_size_report import coverage_estimate, coverage_table

    lines = coverage_table(units=(3, 5), reps=200, seed=2).splitlines()
    assert lines[0] == ("coverage of the 95% t interval of a mean (200 seeded samples each, seed 2; [95% interval of "
                        "the estimate])")
    assert lines[1] == "law        " + f"{'n=3':>22} {'n=5':>22}"
    assert [line[:10].strip() for line in lines[2:]] == ["normal", "gamma(4)", "gamma(2)"]
    c, lo, hi = coverage_estimate(5, "gamma(4)", 200, 2)
    assert lines[3].endswith(f" {c:.4f} [{lo:.4f}, {hi:.4f}]") and len(lines) == 5


# --- population_claims.py: what each claims script trains, and its per-run readings ---------------------------------

def _claims_frame(variants, ns=(8,), runs=2, splits=("heldout", "train")) -> pd.DataFrame:
    """Steps 0, 10, 20; run r of variant i: pass@1 0.2 -> 0.3 + 0.1 i + 0.01 r -> 0.5 + 0.1 i + 0.02 r,
    pass@256 = pass@1 + 0.3, rare mass kept = 1 - pass@1; train rows 0.05 higher; rare-only rows far off."""
    rows = []
    for n in ns:
        for split, d in zip(splits, (0.0, 0.05)):
            for i, variant in enumerate(variants):
                for run in range(runs):
                    for step, p1 in ((0, 0.2), (10, 0.3 + 0.1 * i + 0.01 * run), (20, 0.5 + 0.1 * i + 0.02 * run)):
                        common = dict(N=n, split=split, variant=variant, run=run, step=step)
                        rows.append(dict(common, bucket="all", **{"pass@1": p1 + d, "pass@256": p1 + d + 0.3,
                                                                   "rare_mass_retained": 1 - p1 - d}))
                        rows.append(dict(common, bucket="rare-only", **{"pass@1": 0.9, "pass@256": 0.01,
                                                                         "rare_mass_retained": 0.0}))
    return pd.DataFrame(rows)


def test_claims_per_run_readings_by_hand():
    from fgrpo_sim.sim.population_claims import final_per_run, per_run_at_equal_pass1

    frame = _claims_frame(("GRPO", "F"))
    final = final_per_run(frame, "pass@1", "heldout")
    assert final["GRPO"] == pytest.approx([0.5, 0.52]) and final["F"] == pytest.approx([0.6, 0.62])
    assert final_per_run(frame, "pass@256", "train")["F"] == pytest.approx([0.95, 0.97])
    both = final_per_run(frame[frame["split"] == "heldout"].drop(columns="split"), "pass@1")
    assert both["GRPO"] == pytest.approx([0.5, 0.52])
    # default level: the lowest final pass@1 of any run, over the split asked for (held-out: 0.5)
    level, eq = per_run_at_equal_pass1(frame, "pass@256", split="heldout")
    assert level == pytest.approx(0.5)
    assert eq["GRPO"] == pytest.approx([0.8, 0.8]) and eq["F"] == pytest.approx([0.8, 0.8])
    level, eq = per_run_at_equal_pass1(frame, "rare_mass_retained", split="heldout", level=0.35)
    # kept = 1 - pass@1 along every curve, so at the level 0.35 every run keeps 0.65 (GRPO between steps 10 and 20,
    # F between steps 0 and 10)
    assert level == 0.35 and eq["GRPO"] == pytest.approx([0.65, 0.65]) and eq["F"] == pytest.approx([0.65, 0.65])
    level, eq = per_run_at_equal_pass1(frame[frame["split"] == "train"].drop(columns="split"), "pass@256")
    assert level == pytest.approx(0.55) and eq["GRPO"] == pytest.approx([0.85, 0.85])  # no split column: all rows


@pytest.fixture
def sweeps(monkeypatch):
    """Stand-ins recording each population and sweep a claims script asks for; each sweep returns `frame`."""
    return stand_in_sweeps(monkeypatch)


SHARED_VARIANTS = ("GRPO", "F-GRPO gamma=0.5", "F-GRPO gamma=1", "GRPO low-LR (x m_0.5)", "GRPO low-LR (x m_1)")


def test_claims_settings_table_trains_each_documented_setting(sweeps):
    from fgrpo_sim.sim.population_claims import SHARED_SETTINGS, settings_table

    sweeps.frame = _claims_frame(SHARED_VARIANTS, runs=3)
    lines = settings_table(runs=3).splitlines()
    assert len(lines) == 18 and len(sweeps.calls) == 9
    train = {}
    for (flags, (pop_changes, train_changes)), call in zip(SHARED_SETTINGS.items(), sweeps.calls):
        assert call.device == "cpu" and call.kind == "shared"
        spec, specs = call.pop, call.specs
        assert (spec.num_prompts, spec.heldout_prompts, spec.seed) == (256, 256, 0)
        for key, value in pop_changes.items():
            assert getattr(spec, key) == value
        plain = [s for s in specs if not s.variant]
        assert sorted((s.group_size, s.gamma) for s in plain) == [(8, 0.0), (8, 0.5), (8, 1.0)]
        assert sorted(s.variant for s in specs if s.variant) == ["GRPO low-LR (x m_0.5)", "GRPO low-LR (x m_1)"]
        train[flags] = {(s.steps, s.runs, s.prompt_batch, s.eval_every, s.lr, s.optimizer, s.seed) for s in plain}
    assert train["(none: A)"] == {(300, 3, 32, 10, 0.01, "adam", 0)}
    assert train["`--lr 0.05`"] == {(300, 3, 32, 10, 0.05, "adam", 0)}
    assert train["`--steps 600`"] == {(600, 3, 32, 10, 0.01, "adam", 0)}
    assert train["`--offset-scale 2`"] == train["(none: A)"] == train["`--trainable-offsets`"]
    assert train["`--optimizer sgd --lr 10`"] == {(300, 3, 32, 10, 10.0, "sgd", 0)}
    pops = [call.pop for call in sweeps.calls]
    assert pops[4].rare_correct_prob == 0.3 and pops[5].rare_only_share == 0.5 and pops[0].rare_correct_prob != 0.3
    # held-out: start 0.2 / 0.5; finals over 3 runs: 0.52 + 0.1 i / 0.82 + 0.1 i; level 0.5, pass@256 there 0.8
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    assert cells[:3] == ["(none: A)", "heldout", "0.200 / 0.500"]
    assert cells[3:8] == [f"{0.52 + 0.1 * i:.3f} / {0.82 + 0.1 * i:.3f}" for i in range(5)]
    assert cells[8] == "0.500" and cells[9] == "0.8000 [0.8000, 0.8000]" and len(cells) == 14
    assert lines[1].startswith("| (none: A) | train | 0.250 / 0.550 | 0.570 / 0.870 |")
    assert lines[-1].startswith("| `--optimizer sgd --lr 10` | train |")
    train_cells = [c.strip() for c in lines[1].strip("|").split("|")]
    assert train_cells[8] == "0.550"  # each split's own lowest final pass@1 (held-out's is 0.500, above)
    assert train_cells[9:] == ["0.8500 [0.8500, 0.8500]"] * 5  # pass@256 = pass@1 + 0.3 at that level, every arm


def test_claims_scripts_train_on_the_cpu_with_their_populations(sweeps):
    from fgrpo_sim.sim import population_claims as claims

    for script, kind in ((claims.per_prompt_claims, "per-prompt"), (claims.shared_claims, "shared"),
                         (claims.group_size_claims, "shared"), (claims.frontier_claims, "per-prompt")):
        with pytest.raises(Captured):
            script(runs=4)
        assert sweeps.last.kind == kind and sweeps.last.device == "cpu"
        assert {s.runs for s in sweeps.last.specs} == {4}
    per_prompt, shared, sizes, frontier = (call.specs for call in sweeps.calls)
    assert {s.lr for s in per_prompt if not s.variant} == {TrainSpecDefaults.lr()}
    assert sorted({s.group_size for s in sizes}) == [2, 4, 8, 16, 32] and not any(s.variant for s in sizes)
    assert sorted({(s.group_size, s.gamma) for s in frontier if not s.variant}) == [
        (n, g) for n in (2, 4, 8, 16, 32) for g in (0.0, 0.5, 1.0)]
    assert {s.variant for s in frontier if s.variant} == {"GRPO low-LR (x m_0.5)", "GRPO low-LR (x m_1)"}
    assert sweeps.calls[0].pop.rho == 0.1 and sweeps.calls[3].pop.beta_a == 0.5
    assert sweeps.calls[1].pop.heldout_prompts == 256 and sweeps.calls[2].pop.num_prompts == 256


class TrainSpecDefaults:
    @staticmethod
    def lr():
        from fgrpo_sim.sim.population import TrainSpec

        return TrainSpec().lr


def test_claims_group_size_lines_per_n(sweeps):
    from fgrpo_sim.sim.population_claims import group_size_claims

    sweeps.frame = _claims_frame(("GRPO", "F-GRPO gamma=1"), ns=(2, 4))
    lines = group_size_claims(runs=2).splitlines()
    assert len(lines) == 5 and lines[0].endswith("2 runs (mean [95% bootstrap interval]):")
    assert lines[1].startswith("  N=2: GRPO pass@1 0.5100 [") and ", pass@256 0.8100 [" in lines[1]
    assert "; F-GRPO gamma=1 pass@1 0.6100 [" in lines[1] and lines[3].startswith("  N=4: GRPO pass@1 0.5100 [")
    assert lines[2].startswith("  N=2 F-GRPO - GRPO pass@256: 0.1000 [")
    assert lines[4].startswith("  N=4 F-GRPO - GRPO pass@256: 0.1000 [")


def test_claims_line_marks_intervals_with_zero():
    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci
    from fgrpo_sim.sim.population_claims import _line

    across = bootstrap_mean_ci(np.array([-1.0, 1.0, -0.5, 0.5]))
    assert _line("x", across) == f"  x: {across}  (interval includes 0)"
    above = bootstrap_mean_ci(np.array([1.0, 1.1, 0.9]))
    assert _line("y", above) == f"  y: {above}"


# --- group_size_report.setting_reports: a hand-built study table, every field recomputed independently -------------

ARMS = {"GRPO": (0.0, 0.01, 0.0, 0.0), "F-GRPO gamma=0.5": (0.5, 0.01, 0.02, -0.02),
        "GRPO low-LR (x m_0.5)": (0.0, 0.007, 0.01, -0.05)}  # variant: (gamma, lr, pass@256 shift, pass@1 shift)
LEVELS = {2: 0.80, 4: 0.70, 8: 0.75}  # GRPO's final pass@256 by N, before the per-unit terms: lowest at N = 4


def _p256(variant, n, pop, seed):
    """Final held-out pass@256: the level, the arm's shift, a population term, a batch-seed term, an N x population
    wobble (so every paired difference has spread)."""
    return LEVELS[n] + ARMS[variant][2] + 0.01 * pop + 0.004 * seed + 0.003 * ((pop * n) % 3)


def _p1(variant, pop):
    return 0.3 + 0.01 * pop + ARMS[variant][3]


def _study_table(populations=5, seeds=2, base_lr=0.01):
    rows = []
    for variant, (gamma, lr, _, _) in ARMS.items():
        for n in LEVELS:
            for pop in range(populations):
                for seed in range(seeds):
                    for step in (0, 10):
                        end = step == 10
                        rows.append({"rare_correct_prob": 1.0, "optimizer": "adam", "parametrisation": "orthogonal",
                                     "view": "equal-steps", "rare_mass": 0.02, "base_lr": base_lr, "variant": variant,
                                     "gamma": gamma, "lr": lr * base_lr / 0.01, "N": n, "population": pop,
                                     "seed": seed, "steps": 10, "step": step,
                                     "heldout_pass@256": _p256(variant, n, pop, seed) if end else 0.9,
                                     "heldout_pass@1": _p1(variant, pop) + 0.001 * seed if end else 0.1,
                                     "train_dnll_rare": 0.1 * n + 0.01 * pop if end else 0.0})
    return pd.DataFrame(rows)


def _t(values):
    from scipy import stats

    values = np.asarray(values, dtype=float)
    ci = stats.ttest_1samp(values, 0.0).confidence_interval(0.95)
    return values.mean(), ci.low, ci.high


def _close(got, values):
    """got = [mean, low, high] rounded outward at 5 decimals; values: the per-unit sample."""
    mean, low, high = _t(values)
    assert got[0] == pytest.approx(mean, abs=5e-6)
    assert low - 1e-5 <= got[1] <= low + 1e-12 and high - 1e-12 <= got[2] <= high + 1e-5


@pytest.fixture(scope="module")
def hand_reports():
    from dataclasses import replace

    from fgrpo_sim.sim.group_size_report import setting_reports
    from fgrpo_sim.sim.group_size_study import DEFAULT_POPULATION

    pop = replace(DEFAULT_POPULATION, num_prompts=8, heldout_prompts=8)
    frame = pd.concat([_study_table(), _study_table(base_lr=0.03)], ignore_index=True)
    return frame, pop, setting_reports(frame, pop)


def test_setting_reports_fields_by_hand(hand_reports):
    from fgrpo_sim.sim.group_size_report import _predictions, argmin_share

    frame, pop, reports = hand_reports
    assert [r["base_lr"] for r in reports] == [0.01, 0.03] and [r["lr"] for r in reports] == [0.01, 0.03]
    r = reports[0]
    assert {k: r[k] for k in ("rare_correct_prob", "optimizer", "parametrisation", "view", "rare_mass")} == {
        "rare_correct_prob": 1.0, "optimizer": "adam", "parametrisation": "orthogonal", "view": "equal-steps",
        "rare_mass": 0.02}
    assert (r["populations"], r["batch_seeds"], r["unit"], r["steps"], r["few_units"]) == (5, 2, "population", 10, False)
    assert r["interval"] == ("95% Student t over populations (paired: over per-population differences), bounds "
                             "rounded outward")
    assert (r["predicted_N"], r["rare_share_median"]) == _predictions(frame, pop)[(1.0, 0.02)]
    assert r["N"] == [2, 4, 8] and all(type(n) is int for n in r["N"])
    units = {n: np.array([np.mean([_p256("GRPO", n, p, s) for s in (0, 1)]) for p in range(5)]) for n in LEVELS}
    assert r["pass256"] == [round(float(units[n].mean()), 4) for n in (2, 4, 8)]
    assert r["pass1"] == [round(float(np.mean([_p1("GRPO", p) + 0.0005 for p in range(5)])), 4)] * 3
    assert r["dnll_rare"] == [round(0.1 * n + 0.02, 4) for n in (2, 4, 8)]
    assert r["observed_lowest_N"] == 4 and r["dip"] is True and r["verdict"] == "dip at N = 4"
    _close(r["first_minus_lowest"], units[2] - units[4])
    _close(r["last_minus_lowest"], units[8] - units[4])
    _close(r["pass256_at_lowest"], units[4])
    share = argmin_share(np.stack([units[n] for n in (2, 4, 8)], axis=1))
    assert r["argmin_share"] == [round(float(x), 4) for x in share] and r["lowest_share"] == round(float(share[1]), 4)
    at_low = {p: [_p256("GRPO", 4, p, s) for s in (0, 1)] for p in range(5)}
    assert r["sd_between_populations"] == pytest.approx(np.std([np.mean(v) for v in at_low.values()], ddof=1), abs=6e-6)
    assert r["sd_between_batch_seeds"] == pytest.approx(
        math.sqrt(np.mean([np.var(v, ddof=1) for v in at_low.values()])), abs=6e-6)
    assert r["sd_between_batch_seeds"] == pytest.approx(0.004 / math.sqrt(2), abs=6e-6)
    best = r["best_checkpoint"]  # pass@1 peaks at the last evaluation here: the best checkpoint is the final one
    assert best["pass256"] == r["pass256"] and best["observed_lowest_N"] == 4
    assert best["first_minus_lowest"] == r["first_minus_lowest"] and best["verdict"] == r["verdict"]


def test_setting_reports_fgrpo_and_curves_by_hand(hand_reports):
    from fgrpo_sim.theory import lr_multiplier

    _, _, reports = hand_reports
    r = reports[0]
    [entry] = r["fgrpo_at_lowest"]
    assert entry["gamma"] == 0.5 and entry["variant"] == "F-GRPO gamma=0.5"
    unit = lambda v, n: np.array([np.mean([_p256(v, n, p, s) for s in (0, 1)]) for p in range(5)])
    f, g, c = unit("F-GRPO gamma=0.5", 4), unit("GRPO", 4), unit("GRPO low-LR (x m_0.5)", 4)
    _close(entry["minus_grpo"], f - g + np.arange(5) * 1e-9)  # a constant 0.02 apart: the interval is the point
    assert entry["minus_grpo"][0] == pytest.approx(0.02, abs=5e-6) and entry["minus_control"][0] == pytest.approx(0.01, abs=5e-6)
    assert entry["pass1_minus_grpo"][0] == pytest.approx(-0.02, abs=5e-6)
    # equal pass@1: per population the level is the lowest final pass@1 (the control's, 0.25 + 0.01 p + 0.0005);
    # each arm's pass@1 rises linearly from 0.1 at step 0, so its pass@256 is read a fraction of the way from 0.9
    eq = {}
    for arm in ARMS:
        vals = []
        for p in range(5):
            level = _p1("GRPO low-LR (x m_0.5)", p) + 0.0005
            frac = (level - 0.1) / (_p1(arm, p) + 0.0005 - 0.1)
            vals.append(0.9 + frac * (np.mean([_p256(arm, 4, p, s) for s in (0, 1)]) - 0.9))
        eq[arm] = np.array(vals)
    _close(entry["equal_pass1_minus_grpo"], eq["F-GRPO gamma=0.5"] - eq["GRPO"])
    _close(entry["equal_pass1_minus_control"], eq["F-GRPO gamma=0.5"] - eq["GRPO low-LR (x m_0.5)"])
    curves = {cv["variant"]: cv for cv in r["curves"]}
    assert list(curves) == sorted(ARMS)
    assert curves["GRPO low-LR (x m_0.5)"]["gamma"] == 0.0 and curves["GRPO low-LR (x m_0.5)"]["lr"] == pytest.approx(0.007)
    assert (curves["F-GRPO gamma=0.5"]["gamma"], curves["F-GRPO gamma=0.5"]["lr"]) == (0.5, 0.01)
    for arm, cv in curves.items():
        assert len(cv["pass256"]) == 3
        for j, n in enumerate((2, 4, 8)):
            _close(cv["pass256"][j], unit(arm, n))
        assert cv["pass1"] == [round(float(np.mean([_p1(arm, p) + 0.0005 for p in range(5)])), 4)] * 3
        assert cv["dnll_rare"] == [round(0.1 * n + 0.02, 4) for n in (2, 4, 8)]
    assert reports[1]["curves"][0]["lr"] == pytest.approx(0.03) and float(lr_multiplier(0.5)) < 1


def test_setting_reports_without_control_or_units(hand_reports):
    """Without the control: no minus_control; one population: batch seeds are the unit, no between-population sd;
    one batch seed: no within-population sd."""
    from dataclasses import replace

    from fgrpo_sim.sim.group_size_report import setting_reports
    from fgrpo_sim.sim.group_size_study import DEFAULT_POPULATION

    pop = replace(DEFAULT_POPULATION, num_prompts=8, heldout_prompts=8)
    table = _study_table(populations=1, seeds=3)
    r = setting_reports(table[table["variant"] != "GRPO low-LR (x m_0.5)"], pop)[0]
    assert r["unit"] == "seed" and r["few_units"] is True and r["argmin_share"] is None and r["lowest_share"] is None
    assert (r["populations"], r["batch_seeds"]) == (1, 3) and r["sd_between_populations"] is None
    assert r["sd_between_batch_seeds"] == pytest.approx(0.004, abs=6e-6)  # seeds 0, 1, 2 at 0.004 steps: sd 0.004
    assert r["interval"].startswith("95% Student t over seeds (paired: over per-seed differences)")
    [entry] = r["fgrpo_at_lowest"]
    assert "minus_control" not in entry and "equal_pass1_minus_control" not in entry
    diffs = []
    for seed in range(3):  # F-GRPO's final pass@1 (0.28 + 0.001 s) is the level; GRPO reaches it on the way up
        frac = (_p1("F-GRPO gamma=0.5", 0) + 0.001 * seed - 0.1) / (_p1("GRPO", 0) + 0.001 * seed - 0.1)
        diffs.append(_p256("F-GRPO gamma=0.5", 4, 0, seed) - (0.9 + frac * (_p256("GRPO", 4, 0, seed) - 0.9)))
    _close(entry["equal_pass1_minus_grpo"], diffs)
    r = setting_reports(_study_table(populations=5, seeds=1), pop)[0]
    assert r["sd_between_batch_seeds"] is None and r["sd_between_populations"] is not None



# --- population_claims.report: every line recomputed from the generating formula (runs differ: real intervals) ------

def _path(i, r, d=0.0):
    """(steps, pass@1, pass@256, rare mass kept, rare-only pass@256) of variant i, run r, split offset d."""
    steps = (0, 10, 20)
    p1 = [0.2 + d, 0.3 + 0.1 * i + 0.01 * r + d, 0.5 + 0.1 * i + 0.02 * r + d]
    p256 = [x + 0.3 + 0.03 * i + 0.004 * r * s / 20 for x, s in zip(p1, steps)]
    kept = [1 - x - 0.02 * i + 0.005 * r for x in p1]
    rare = [0.005, 0.01, 0.02 + 0.01 * i + 0.001 * r]
    return steps, p1, p256, kept, rare


def _report_frame(variants, runs=3, splits=(("heldout", 0.0), ("train", 0.05)), ns=(8,)):
    """N = n adds 0.001 n to the split offset (so each N reads its own rows)."""
    rows = []
    for n in ns:
        for split, d in splits:
            for i, variant in enumerate(variants):
                for r in range(runs):
                    for s, a, b, k, q in zip(*_path(i, r, d + (0.001 * n if ns != (8,) else 0.0))):
                        common = dict(N=n, split=split, variant=variant, run=r, step=s)
                        rows.append(dict(common, bucket="all", **{"pass@1": a, "pass@256": b,
                                                                   "rare_mass_retained": k}))
                        rows.append(dict(common, bucket="rare-only", **{"pass@1": 0.9, "pass@256": q,
                                                                         "rare_mass_retained": 0.0}))
    return pd.DataFrame(rows)


def _at_level(level, xs, ys):
    """y where the x path first reaches `level`, linearly between evaluations (written out again, on purpose)."""
    for j, x in enumerate(xs):
        if x >= level:
            if j == 0 or xs[j] == xs[j - 1]:
                return ys[j]
            return ys[j - 1] + (level - xs[j - 1]) / (x - xs[j - 1]) * (ys[j] - ys[j - 1])
    return math.nan


def test_claims_report_every_line_by_hand():
    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci as mean_ci
    from fgrpo_sim.metrics.bootstrap import bootstrap_paired_difference_ci as diff_ci
    from fgrpo_sim.sim.population_claims import report

    def line(name, ci):
        return f"  {name}: {ci}" + ("  (interval includes 0)" if ci.includes_zero else "")

    pp_variants = ("GRPO", "F-GRPO gamma=1", "GRPO low-LR (x m_1)")
    per_prompt = _report_frame(pp_variants, splits=(("heldout", 0.0),)).drop(columns="split")
    shared = _report_frame(SHARED_VARIANTS)
    got = report(per_prompt, shared).splitlines()
    runs = range(3)
    col = lambda i, k: np.array([_path(i, r)[k][-1] for r in runs])  # final value per run
    want = ["Per-prompt population, N = 8, 3 runs (mean [95% bootstrap interval over runs]):"]
    want += [line(f"{v} final rare mass kept", mean_ci(col(i, 3))) for i, v in enumerate(pp_variants)]
    want += [line("F-GRPO - GRPO final pass@1", diff_ci(col(1, 1), col(0, 1))),
             line("F-GRPO - GRPO final pass@256", diff_ci(col(1, 2), col(0, 2)))]
    level = min(_path(i, r)[1][-1] for i in range(3) for r in runs)
    eq = {i: np.array([_at_level(level, _path(i, r)[1], _path(i, r)[3]) for r in runs]) for i in range(3)}
    want += [f" at equal pass@1 = {level:.4f} (rare mass kept):"]
    want += [line(v, mean_ci(eq[i])) for i, v in enumerate(pp_variants)]
    want += [line("F-GRPO - GRPO", diff_ci(eq[1], eq[0])), line("F-GRPO - low-LR", diff_ci(eq[1], eq[2]))]
    start256 = np.mean([_path(i, 0)[2][0] for i in range(5)])  # 0.5 + 0.03 i at step 0, over the variants
    want += ["Shared-strategy population, N = 8, 3 runs, held-out prompts:",
             f"  initial pass@1 0.2000, pass@256 {start256:.4f}"]
    index = {v: i for i, v in enumerate(SHARED_VARIANTS)}
    for v in sorted(SHARED_VARIANTS):
        want += [line(f"{v} final pass@1", mean_ci(col(index[v], 1))), line(f"{v} final pass@256", mean_ci(col(index[v], 2)))]
    for v in sorted(set(SHARED_VARIANTS) - {"GRPO"}):
        want.append(line(f"{v} - GRPO final pass@256", diff_ci(col(index[v], 2), col(0, 2))))
    want.append("  rare-only prompts: initial pass@256 0.0050; final "
                + "; ".join(f"{v} {mean_ci(col(index[v], 4))}" for v in sorted(SHARED_VARIANTS)))
    level = min(_path(i, r)[1][-1] for i in range(5) for r in runs)
    eq = {v: np.array([_at_level(level, _path(index[v], r)[1], _path(index[v], r)[2]) for r in runs])
          for v in SHARED_VARIANTS}
    want.append(f" at equal held-out pass@1 = {level:.4f} (held-out pass@256):")
    want += [line(v, mean_ci(eq[v])) for v in sorted(SHARED_VARIANTS)]
    want += [line(f"{v} - GRPO", diff_ci(eq[v], eq["GRPO"])) for v in sorted(set(SHARED_VARIANTS) - {"GRPO"})]
    want += [line(f"{f} - {c}", diff_ci(eq[f], eq[c])) for f, c in (("F-GRPO gamma=0.5", "GRPO low-LR (x m_0.5)"),
                                                                    ("F-GRPO gamma=1", "GRPO low-LR (x m_1)"))]
    assert got == want
    assert len(set(want)) == len(want)  # every line distinct: a line read from the wrong arm would show


def test_claims_group_size_and_frontier_every_line_by_hand(sweeps):
    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci as mean_ci
    from fgrpo_sim.metrics.bootstrap import bootstrap_paired_difference_ci as diff_ci
    from fgrpo_sim.sim.population_claims import frontier_claims, group_size_claims

    def line(name, ci):
        return f"  {name}: {ci}" + ("  (interval includes 0)" if ci.includes_zero else "")

    ns = (2, 4)
    col = lambda i, k, n: np.array([_path(i, r, 0.001 * n)[k][-1] for r in range(3)])
    sweeps.frame = _report_frame(("GRPO", "F-GRPO gamma=1"), ns=ns)
    want = ["Shared population, equal steps, held-out, 3 runs (mean [95% bootstrap interval]):"]
    for n in ns:
        want.append(f"  N={n}: GRPO pass@1 {mean_ci(col(0, 1, n))}, pass@256 {mean_ci(col(0, 2, n))}; "
                    f"F-GRPO gamma=1 pass@1 {mean_ci(col(1, 1, n))}, pass@256 {mean_ci(col(1, 2, n))}")
        want.append(line(f"N={n} F-GRPO - GRPO pass@256", diff_ci(col(1, 2, n), col(0, 2, n))))
    assert group_size_claims(runs=3).splitlines() == want

    variants = ("GRPO", "F-GRPO gamma=1", "GRPO low-LR (x m_1)", "F-GRPO gamma=0.5")
    sweeps.frame = _report_frame(variants, ns=ns, splits=(("x", 0.0),))
    index = {v: i for i, v in enumerate(variants)}
    want = ["Per-prompt population, Beta(0.5, 1), 150 steps, 3 runs (mean [95% bootstrap interval]):"]
    for n in ns:
        for v in sorted(variants):
            i = index[v]
            want.append(f"  N={n} {v}: pass@1 {mean_ci(col(i, 1, n))}, pass@256 {mean_ci(col(i, 2, n))}, "
                        f"rare kept {mean_ci(col(i, 3, n))}")
        want.append(line(f"N={n} F-GRPO gamma=1 - low-LR (x m_1), rare kept", diff_ci(col(1, 3, n), col(2, 3, n))))
    assert frontier_claims(runs=3).splitlines() == want


# --- more edges: the record reader's file messages, the coverage estimate's Wilson interval, read-only actions ----------

def test_depth_record_read_names_the_record(tmp_path):
    from fgrpo_sim.sim.table2_depth_record import read_record

    with pytest.raises(ValueError) as err:
        read_record(tmp_path / "missing.json")
    assert str(err.value) == f"table2-depth record not found: {tmp_path / 'missing.json'}"
    (tmp_path / "r.json").write_text('{"schema": "table2-depth-v2"}')
    with pytest.raises(ValueError) as err:
        read_record(tmp_path / "r.json")
    assert str(err.value) == f"{tmp_path / 'r.json'} is not a table2-depth record (no 'fit_targets')"


def test_report_coverage_estimate_wilson_by_hand():
    from fgrpo_sim.sim.group_size_report import coverage_estimate, interval_coverage

    share, low, high = coverage_estimate(3, reps=500)
    assert (share, low, high) == coverage_estimate(3, "normal", 500, 0)
    assert share == interval_coverage(3, "normal", 500, 0)
    k, n, z = round(share * 500), 500, 1.959963984540054
    center = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    assert low == pytest.approx(center - half, rel=1e-9) and high == pytest.approx(center + half, rel=1e-9)
    share, low, high = coverage_estimate(4, "gamma(4)", 300, 5)
    assert share == interval_coverage(4, "gamma(4)", 300, 5) and low < share < high


def test_result_table_action_and_rules_reach_both_readers(tmp_path):
    csv_path = tmp_path / "t.csv"
    csv_path.write_text("variant,step,lr,share\nGRPO,0,0.5,2\n")
    with pytest.raises(ValueError, match=r"^cannot read .*t\.csv line 2: share = 2 is not in \[0, 1\]; "):
        _read(csv_path, action="read")
    parquet = tmp_path / "t.parquet"
    pd.DataFrame({"variant": ["A", "B"], "step": [0, 7], "lr": [0.5, 0.5], "share": [0.1, 0.2]}).to_parquet(parquet)
    with pytest.raises(ValueError) as err:
        _read(parquet, action="read", rules=lambda t: [(t["step"] > 5, lambda i: "step past the end")])
    assert str(err.value) == (f"cannot read {parquet} row 2: step past the end; fix or delete that row, or start "
                              "afresh")
    pd.DataFrame({"variant": ["A"], "step": [0], "share": [0.1]}).to_parquet(parquet)
    with pytest.raises(ValueError) as err:
        _read(parquet, label="--from")
    assert str(err.value) == f"--from {parquet} exists but is not a test table (no column 'lr'); start afresh"


def test_depth_run_setting_hands_its_spec_to_the_study(monkeypatch):
    """run_setting trains one chunk (Adam, orthogonal) of study_spec's spec on the resolved device, and names each
    row's method first; a stand-in trainer returns the final rows it was asked for."""
    import torch

    import fgrpo_sim.sim.group_size_study as study
    from fgrpo_sim.sim import table2_depth as t2

    seen = {}

    def train_chunk(spec, optimizer, kind, device, progress=False):
        seen.update(spec=spec, optimizer=optimizer, kind=kind, device=device, progress=progress)
        variants = ["GRPO", "F-GRPO gamma=0.5", "GRPO low-LR (x m_0.5)", "GRPO KL=0.01"]
        return pd.DataFrame({"variant": variants, "step": [3, 3, 3, 2], "steps": [3, 3, 3, 3], "N": [2] * 4})

    monkeypatch.setattr(study, "train_chunk", train_chunk)
    setting = t2.DepthSetting(steps=3, prompt_batch=4, rare_mass=0.05)
    rows = t2.run_setting(setting, 3, (2, 16), device="cpu", progress=True, seed=9, controls=False)
    assert seen["spec"] == t2.study_spec(setting, 3, (2, 16), 9, False)
    assert (seen["optimizer"], seen["kind"], seen["progress"]) == ("adam", "orthogonal", True)
    assert seen["device"] == torch.device("cpu")
    assert list(rows.columns) == ["method", "variant", "step", "steps", "N"]
    assert rows["method"].tolist() == ["GRPO", "F-GRPO", "low-LR"]  # the unfinished KL row is not a final row
    t2.run_setting(setting, 2)
    assert seen["spec"] == t2.study_spec(setting, 2) and seen["progress"] is False and seen["spec"].low_lr
    with pytest.raises(ValueError, match="^device must be one of auto, cpu, cuda, got 'gpu'$"):
        t2.run_setting(setting, 2, device="gpu")


def test_depth_contrast_strict_rule_includes_both_ends():
    """v2's contrast hit: the paper's contrast inside the paired interval, both ends included (paper_grpo 0, so the
    paper's contrast is the paper value itself, exactly)."""
    from fgrpo_sim.sim import table2_depth as t2

    frame = _depth_frame({("GRPO", 8): [(0.30, 0.60, 0.5), (0.34, 0.66, 0.6), (0.32, 0.62, 0.4)],
                          ("F-GRPO", 8): [(0.31, 0.66, 0.5), (0.36, 0.70, 0.6), (0.33, 0.69, 0.4)]})
    c = t2._contrast(frame, "F-GRPO", "pass@256", 5.0, 0.0)
    assert c["predicted"] == pytest.approx(100 * np.mean([0.06, 0.04, 0.07])) and c["ci_low"] < c["ci_high"]
    for paper, hit in ((c["ci_low"], True), (c["ci_high"], True), (np.nextafter(c["ci_high"], 99), False),
                       (np.nextafter(c["ci_low"], -99), False)):
        assert t2._contrast(frame, "F-GRPO", "pass@256", float(paper), 0.0)["hit"] is hit, paper
    assert t2._contrast(frame, "F-GRPO", "pass@256", 70.0, 64.0)["paper"] == pytest.approx(6.0)


def test_depth_build_record_seed_defaults_to_0():
    from fgrpo_sim.sim import table2_depth as t2

    frame = _depth_frame({("GRPO", 8): [(0.3, 0.6, 0.5), (0.32, 0.64, 0.4)], ("GRPO", 2): [(0.3, 0.7, 0.5),
                                                                                          (0.33, 0.71, 0.4)]})
    record = t2.build_record(t2.DepthSetting(), frame, 2, "fgrpo simulate table2-depth")
    assert record["fitted"]["seed"] == 0 and record["populations"] == 2 and record["predictions"] == []
    assert record["grpo_dip_points"]["dip_N"] == 8
