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
