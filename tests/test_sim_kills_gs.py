"""Tests written for the mutants of sim/'s group-size stratum (issue 44, stratum "simgs": group_size_study.py,
group_size_resume.py, group_size_record.py, regularisers.py, parametrisation.py, step_audit.py). Each pins
behaviour a user relies on: a value computed independently or by hand, every refusal's whole message, a bound at
its edge, a branch the sim selection never took (benchmarks/RESULTS.md, "sim/ stratum simgs"). Tiny hand-made
data throughout; no test trains more than a few steps."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

# --- group_size_record.py: a saved report, every field checked, every refusal's message ------------------------------

WHERE = "f.jsonl line 3"


def _interval(est, low=None, high=None):
    return [est, low, high]


@pytest.fixture
def report():
    """A small report as `group_size_report.setting_reports` writes it, three N values."""
    flanks = {"observed_lowest_N": 4, "lowest_share": 0.75, "argmin_share": [0.25, 0.75, 0.0],
              "first_minus_lowest": [0.01, 0.0, 0.02], "last_minus_lowest": [0.03, None, None], "dip": True,
              "verdict": "dip at N = 4"}
    return {"rare_correct_prob": 1.0, "optimizer": "adam", "parametrisation": "axis", "view": "equal-steps",
            "rare_mass": 0.02, "base_lr": 0.01, "lr": 0.01, "rare_share_median": None, "populations": 2,
            "batch_seeds": 1, "unit": "population", "steps": 8, "interval": "95% Student t", "few_units": True,
            "predicted_N": None, **flanks, "N": [2, 4, 8], "pass256": [0.5, 0.4, 0.6], "pass1": [0.1, 0.2, 0.3],
            "dnll_rare": [-0.5, 0.0, 2.5], "pass256_at_lowest": [0.4, 0.3, 0.5], "sd_between_populations": 0.0,
            "sd_between_batch_seeds": None,
            "fgrpo_at_lowest": [{"gamma": 1.0, "variant": "F-GRPO gamma=1", "minus_grpo": [0.01, -0.01, 0.03],
                                 "note": "kept"}],
            "curves": [{"variant": "GRPO", "gamma": 0.0, "lr": 0.0, "pass256": [[0.5, 0.4, 0.6]] * 3,
                        "pass1": [0.1, 0.2, 0.3], "dnll_rare": [0.0, 0.0, 0.0]}],
            "best_checkpoint": {**flanks, "pass256": [0.5, 0.4, 0.6]}, "written_by_a_newer_tool": {"x": 1}}


def _check(report, required=()):
    from fgrpo_sim.sim.group_size_record import check_report

    return check_report(report, WHERE, required)


def test_a_sound_report_reads_back_unchanged_with_integral_floats_as_integers(report):
    report["N"] = [2.0, 4, 8.0]
    report["observed_lowest_N"] = 4.0
    report["populations"] = 2.0
    report["best_checkpoint"]["observed_lowest_N"] = 4.0
    original = copy.deepcopy(report)
    got = _check(report, required=("N", "pass256"))
    assert report == original  # the caller's object is not changed
    assert got["N"] == [2, 4, 8] and all(type(n) is int for n in got["N"])
    assert type(got["observed_lowest_N"]) is int and type(got["populations"]) is int
    assert type(got["best_checkpoint"]["observed_lowest_N"]) is int
    assert got["written_by_a_newer_tool"] == {"x": 1} and got["fgrpo_at_lowest"][0]["note"] == "kept"
    assert got["last_minus_lowest"] == [0.03, None, None] and got["rare_share_median"] is None
    expected = {**original, "N": [2, 4, 8], "observed_lowest_N": 4, "populations": 2,
                "best_checkpoint": {**original["best_checkpoint"], "observed_lowest_N": 4}}
    assert got == expected


def test_a_report_without_a_required_field_names_the_first_missing(report):
    del report["N"], report["verdict"]
    with pytest.raises(ValueError) as err:
        _check(report, required=("optimizer", "verdict", "N"))
    assert str(err.value) == "f.jsonl line 3 is not a group-size report (no 'verdict')"


@pytest.mark.parametrize("field, value, message", [
    ("optimizer", "  ", "field 'optimizer' must be a non-empty text, got '  '"),
    ("verdict", 3, "field 'verdict' must be a non-empty text, got 3"),
    ("dip", 1, "field 'dip' must be true or false, got 1"),
    ("few_units", "true", "field 'few_units' must be true or false, got 'true'"),
    ("pass256", [0.5, 0.4], "field 'pass256' must be a list of 3 values (one per N), got [0.5, 0.4]"),
    ("pass1", {"a": 1}, "field 'pass1' must be a list of 3 values (one per N), got {'a': 1}"),
    ("fgrpo_at_lowest", {"gamma": 1}, "field 'fgrpo_at_lowest' must be a list, got {'gamma': 1}"),
    ("first_minus_lowest", [0.1, 0.2], "field 'first_minus_lowest' must be an interval [estimate, low, high], "
                                       "got [0.1, 0.2]"),
    ("first_minus_lowest", "0.1", "field 'first_minus_lowest' must be an interval [estimate, low, high], got '0.1'"),
    ("pass256_at_lowest", [None, 0.1, 0.2], "field 'pass256_at_lowest[0]' must be a number, got None"),
    ("last_minus_lowest", [0.1, 0.0, "x"], "field 'last_minus_lowest[2]' must be a number, got 'x'"),
    ("last_minus_lowest", [0.1, float("nan"), 0.2], "field 'last_minus_lowest[1]' must be a number, got nan"),
    ("best_checkpoint", [], "field 'best_checkpoint' must be an object, got []"),
    ("observed_lowest_N", 16, "field 'observed_lowest_N' = 16 is not one of the report's N [2, 4, 8]"),
    ("observed_lowest_N", 0, "field 'observed_lowest_N' must be an integer in [1, 2^63 - 1], got 0"),
    ("predicted_N", 2.5, "field 'predicted_N' must be an integer in [1, 2^63 - 1], got 2.5"),
    ("N", [4, 2, 8], "field 'N' must list group sizes in increasing order, got [4, 2, 8]"),
    ("N", [2, 2, 8], "field 'N' must list group sizes in increasing order, got [2, 2, 8]"),
    ("N", [], "field 'N' must list group sizes in increasing order, got []"),
    ("N", [0, 2, 8], "field 'N[0]' must be an integer in [1, 2^63 - 1], got 0"),
    ("N", "2,4,8", "field 'N' must be a list, got '2,4,8'"),
    ("rare_mass", 1.5, "field 'rare_mass' must be a probability mass in [0, 1], got 1.5"),
    ("rare_correct_prob", -0.1, "field 'rare_correct_prob' must be a probability in [0, 1], got -0.1"),
    ("lowest_share", 1.01, "field 'lowest_share' must be a probability in [0, 1], got 1.01"),
    ("argmin_share", [0.2, 1.2, 0.0], "field 'argmin_share[1]' must be a probability in [0, 1], got 1.2"),
    ("base_lr", -0.01, "field 'base_lr' must be a number >= 0, got -0.01"),
    ("lr", "0.01", "field 'lr' must be a number >= 0, got '0.01'"),
    ("sd_between_populations", -1.0, "field 'sd_between_populations' must be a number >= 0, got -1.0"),
    ("populations", 0, "field 'populations' must be an integer in [1, 2^63 - 1], got 0"),
    ("batch_seeds", 1.5, "field 'batch_seeds' must be an integer in [1, 2^63 - 1], got 1.5"),
    ("steps", -1, "field 'steps' must be an integer in [0, 2^63 - 1], got -1"),
    ("dnll_rare", [0.0, float("inf"), 0.0], "field 'dnll_rare[1]' must be a number, got inf"),
])
def test_each_top_level_field_is_refused_by_name(report, field, value, message):
    report[field] = value
    with pytest.raises(ValueError) as err:
        _check(report)
    assert str(err.value) == f"{WHERE}: {message}"


@pytest.mark.parametrize("path, value, message", [
    (("fgrpo_at_lowest", 0, "gamma"), -1.0, "field 'fgrpo_at_lowest[0].gamma' must be a number >= 0, got -1.0"),
    (("fgrpo_at_lowest", 0, "variant"), "", "field 'fgrpo_at_lowest[0].variant' must be a non-empty text, got ''"),
    (("fgrpo_at_lowest", 0, "minus_grpo"), [1.0], "field 'fgrpo_at_lowest[0].minus_grpo' must be an interval "
                                                  "[estimate, low, high], got [1.0]"),
    (("curves", 0, "pass1", 1), 1.5, "field 'curves[0].pass1[1]' must be a probability in [0, 1], got 1.5"),
    (("curves", 0, "pass256", 2), [0.5, 0.4], "field 'curves[0].pass256[2]' must be an interval "
                                             "[estimate, low, high], got [0.5, 0.4]"),
    (("curves", 0, "lr"), -1, "field 'curves[0].lr' must be a number >= 0, got -1"),
    (("curves", 0, "dnll_rare"), [0.0], "field 'curves[0].dnll_rare' must be a list of 3 values (one per N), "
                                         "got [0.0]"),
    (("best_checkpoint", "observed_lowest_N"), 3, "field 'best_checkpoint.observed_lowest_N' = 3 is not one of "
                                                  "the report's N [2, 4, 8]"),
    (("best_checkpoint", "dip"), None, "field 'best_checkpoint.dip' must be true or false, got None"),
    (("best_checkpoint", "pass256"), [0.5], "field 'best_checkpoint.pass256' must be a list of 3 values "
                                            "(one per N), got [0.5]"),
])
def test_nested_fields_are_named_by_their_path(report, path, value, message):
    target = report
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValueError) as err:
        _check(report)
    assert str(err.value) == f"{WHERE}: {message}"


@pytest.mark.parametrize("path, missing", [(("fgrpo_at_lowest", 0), "minus_grpo"), (("curves", 0), "pass256"),
                                           (("best_checkpoint",), "verdict"), (("best_checkpoint",), "pass256")])
def test_a_nested_record_without_a_required_field_names_it(report, path, missing):
    target = report
    for key in path:
        target = target[key]
    del target[missing]
    where = "".join(f"[{k}]" if isinstance(k, int) else k for k in path)
    with pytest.raises(ValueError) as err:
        _check(report)
    assert str(err.value) == f"{WHERE}: field {where!r} has no {missing!r}"


def test_optional_fields_take_null_and_optional_curve_fields_may_be_absent(report):
    for name in ("rare_share_median", "predicted_N", "lowest_share", "argmin_share", "sd_between_populations",
                 "sd_between_batch_seeds"):
        report[name] = None
    for name in ("pass1", "dnll_rare", "lr"):
        del report["curves"][0][name]
    got = _check(report)
    assert got["argmin_share"] is None and got["predicted_N"] is None
    assert got["curves"][0] == {"variant": "GRPO", "gamma": 0.0, "pass256": [[0.5, 0.4, 0.6]] * 3}
    # the edges of each range are inside it
    report.update(rare_mass=1, rare_correct_prob=0, base_lr=0, steps=0, predicted_N=1, lowest_share=1.0)
    assert _check(report)["predicted_N"] == 1
