"""Issue 48: `fgrpo figures table2-depth`, drawn from a tiny record this file writes (schema table2-depth-v1), so
it tests the figure apart from the study: what it reads, what it draws, and the one-line errors of a bad record
(read through sim/table2_depth_record.py, whose own tests cover every field; here: that `--from` goes through it)."""

from __future__ import annotations

import copy
import json

import matplotlib
import pytest

matplotlib.use("Agg")

NS = (2, 4, 8, 16, 32)
#: the fixture's simulated GRPO row (invented numbers with a dip at N = 8), F-GRPO and the low-LR control at N = 8
GRPO = {"pass@256": (80.0, 77.0, 72.0, 74.0, 76.5), "pass@1": (35.0, 36.0, 37.0, 38.0, 39.0),
        "dnll_rare": (0.2, 0.4, 0.6, 0.5, 0.45)}
AT_8 = {"F-GRPO": {"pass@256": 75.0, "pass@1": 36.5, "dnll_rare": 0.3},
        "low-LR": {"pass@256": 73.0, "pass@1": 36.0, "dnll_rare": 0.5}}
PAPER_AT_8 = {("F-GRPO", "pass@256"): 70.3, ("F-GRPO", "pass@1"): 38.6, ("F-GRPO", "dnll_rare"): 0.46,
              ("GRPO low-LR", "pass@256"): 69.2, ("GRPO low-LR", "pass@1"): 37.8}


def _stat(mean: float, half: float) -> dict:
    return {"mean": mean, "ci_low": mean - half, "ci_high": mean + half}


def fixture_record() -> dict:
    rows = [{"method": "GRPO", "gamma": 0.0, "N": n, **{m: _stat(v[i], 0.1 if m == "dnll_rare" else 1.5)
                                                         for m, v in GRPO.items()}} for i, n in enumerate(NS)]
    rows += [{"method": method, "gamma": 0.5 if method == "F-GRPO" else 0.0, "N": 8,
              **{m: _stat(v, 0.1 if m == "dnll_rare" else 2.0) for m, v in values.items()}}
             for method, values in AT_8.items()]
    predictions = []
    for (method, metric), paper in PAPER_AT_8.items():
        sim = next(r for r in rows if r["N"] == 8 and r["method"] == method.replace("GRPO low-LR", "low-LR"))[metric]
        predictions.append({"cell": {"model": "Qwen2.5-7B", "method": method, "N": 8, "metric": metric},
                            "paper": paper, "predicted": sim["mean"], "ci_low": sim["ci_low"],
                            "ci_high": sim["ci_high"], "tolerance": 1.0,
                            "hit": sim["ci_low"] - 1.0 <= paper <= sim["ci_high"] + 1.0})
    return {"schema": "table2-depth-v1",
            "fit_targets": [{"model": "Qwen2.5-7B", "method": "GRPO", "N": n, "metric": m, "value": 0.0,
                             "source": "Table 2, math average"} for n in NS for m in ("pass@256", "pass@1")],
            "fitted": {"rare_mass": 0.02}, "simulated_rows": rows, "predictions": predictions,
            "grpo_dip_points": {"dip_N": 8, "left": {"N": 2, "points": 8.0, "ci_low": 6.0, "ci_high": 10.0},
                                "right": {"N": 32, "points": 4.5, "ci_low": 3.0, "ci_high": 6.0}},
            "populations": 3, "seeding": "per-row keys", "command": "fgrpo simulate table2-depth"}


@pytest.fixture
def record_file(tmp_path):
    path = tmp_path / "record.json"
    path.write_text(json.dumps(fixture_record()))
    return path


def test_figure_data_holds_the_record_and_the_papers_table2(record_file):
    from fgrpo_sim.figures.table2_depth import figure_data, paper_dip, read_record

    data = figure_data(read_record(record_file), "record.json")
    assert [p[:2] for p in data["sim"]["GRPO"]["pass@256"]] == list(zip(NS, GRPO["pass@256"]))
    assert data["sim"]["F-GRPO"]["dnll_rare"] == [(8, 0.3, pytest.approx(0.2), pytest.approx(0.4))]
    # the paper's GRPO row of Table 2 (issue 48's numbers) and its F-GRPO point
    assert [v for _, v in data["paper"]["GRPO"]["pass@256"]] == [75.0, 71.1, 64.1, 67.5, 70.1]
    assert [v for _, v in data["paper"]["GRPO"]["dnll_rare"]] == [0.19, 0.44, 0.68, 0.66, 0.52]
    assert data["paper"]["F-GRPO"]["pass@256"] == [(8, 70.3)]
    low_n, first, last = paper_dip(data["paper"])
    assert low_n == 8 and first == pytest.approx(10.9) and last == pytest.approx(6.0)
    # a Table 3 prediction names its method as the paper does, and is drawn beside the engine's row of that name
    control = [p for p in data["predictions"] if p["paper_method"] == "GRPO low-LR"]
    assert {p["method"] for p in control} == {"low-LR"} and len(control) == 2
    assert data["fitted"] == sorted((m, n) for n in NS for m in ("pass@256", "pass@1"))


def test_draw_shows_paper_and_simulation_per_metric(record_file):
    from fgrpo_sim.figures.table2_depth import draw, figure_data, read_record

    record = read_record(record_file)
    fig = draw(figure_data(record, "record.json"))
    axes = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_ylabel() for ax in axes] == ["pass@256 (%)", "pass@1 (%)", r"$\Delta$NLL$_{rare}$ (nats)"]
    for ax, metric in zip(axes, ("pass@256", "pass@1", "dnll_rare")):
        lines = {line.get_label(): line for line in ax.get_lines()}
        paper = lines["paper: GRPO (Table 2)"]
        assert len(paper.get_xdata()) == 5 and list(paper.get_xdata()) == list(NS)
        assert "paper: F-GRPO (Table 2)" in lines
        assert ax.get_xlabel().startswith("group size N\n\npredicted at N = 8 vs the paper:\n")
    # one line per prediction under its panel; by hand: pass@256 F-GRPO [73, 77] and low-LR [71, 75], widened by
    # the tolerance 1, miss 70.3 and 69.2; pass@1 [34.5, 38.5] and [34, 38] reach 38.6 and 37.8 once widened
    assert axes[0].get_xlabel().splitlines()[3:] == ["F-GRPO 75.0 [73.0, 77.0] +/- 1.0 vs 70.3: MISS",
                                                      "GRPO low-LR 73.0 [71.0, 75.0] +/- 1.0 vs 69.2: MISS"]
    assert axes[1].get_xlabel().splitlines()[3:] == ["F-GRPO 36.5 [34.5, 38.5] +/- 1.0 vs 38.6: HIT",
                                                      "GRPO low-LR 36.0 [34.0, 38.0] +/- 1.0 vs 37.8: HIT"]
    assert axes[2].get_xlabel().splitlines()[3:] == ["F-GRPO 0.30 [0.20, 0.40] +/- 1.00 vs 0.46: HIT"]
    title = fig._suptitle.get_text()
    assert "dips at N = 8: +8.0 [+6.0, +10.0] points at N = 2, +4.5 [+3.0, +6.0] at N = 32" in title
    assert "the paper's at N = 8: +10.9 and +6.0" in title
    hits = sum(p["hit"] for p in record["predictions"])
    assert hits == 3 and "F-GRPO and GRPO low-LR at N = 8 predicted without refitting: 3 of 5 hit" in title
    assert "95% t intervals over 3 populations; data: record.json" in title


def test_a_record_without_predictions_draws_and_says_so(tmp_path):
    from fgrpo_sim.figures.table2_depth import draw, figure_data

    record = fixture_record()
    record["predictions"] = []
    fig = draw(figure_data(record, "none.json"))
    assert "no prediction in the record" in fig._suptitle.get_text()
    assert all(ax.get_xlabel() == "group size N" for ax in fig.axes if ax.axison)


def test_cli_draws_the_users_record(run_cli, record_file, tmp_path):
    result = run_cli("figures", "table2-depth", "--from", record_file, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    png = tmp_path / "out" / "table2-depth.png"
    assert png.stat().st_size > 10_000 and (tmp_path / "out" / "table2-depth.pdf").exists()
    manifest = json.loads((tmp_path / "out" / ".fgrpo-sim-outputs.json").read_text())
    assert {"table2-depth.png", "table2-depth.pdf"} <= set(manifest["files"])


def _damaged(**changes):
    record = copy.deepcopy(fixture_record())
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = record
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = value
    return record


@pytest.mark.parametrize("changes, needle", [
    ({"schema": "table2-depth-v0"}, "field 'schema' must be"),
    ({"fit_targets__0__method": "F-GRPO"}, "fit_targets[0].method must be GRPO"),
    ({"predictions__1__hit": "yes"}, "predictions[1].hit must be true or false"),
    ({"simulated_rows__2__pass@256": {"mean": 70.0, "ci_low": 71.0, "ci_high": 72.0}},
     "field 'simulated_rows[2].pass@256' must hold ci_low <= estimate <= ci_high"),
    ({"simulated_rows__0__N": 0}, "simulated_rows[0].N must be an integer"),
    ({"grpo_dip_points__left__points": None}, "grpo_dip_points.left.'points' must be a number"),
    ({"simulated_rows": []}, "field 'simulated_rows' must be a list of at least 1"),
])
def test_a_bad_record_is_one_line_naming_the_field(run_cli, tmp_path, changes, needle):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_damaged(**changes)))
    result = run_cli("figures", "table2-depth", "--from", path, "--out", tmp_path / "out")
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and needle in result.stderr and "bad.json" in result.stderr
    assert not (tmp_path / "out" / "table2-depth.png").exists()


def test_without_a_committed_record_the_figure_names_the_command(monkeypatch, tmp_path):
    from fgrpo_sim.figures import table2_depth
    from fgrpo_sim.figures.registry import FigureOptions

    monkeypatch.setattr(table2_depth, "COMMITTED", tmp_path / "table2-depth.json")
    with pytest.raises(ValueError, match="run `fgrpo simulate table2-depth` first"):
        table2_depth.compute(FigureOptions())


@pytest.mark.parametrize("low, high, decimals, sign, text", [
    (69.825, 75.223, 1, "", "[69.8, 75.3]"),  # outward: the printed interval holds the computed one
    (-0.0396, 1.7714, 1, "+", "[-0.1, +1.8]"),
    (1.5000000000000002, 7.0, 1, "", "[1.5, 7.0]"),  # a bound on the grid, off by one ulp, stays on it
    (0.3 - 0.1, 0.3 + 0.1, 2, "", "[0.20, 0.40]"),
])
def test_intervals_print_rounded_outward(low, high, decimals, sign, text):
    from fgrpo_sim.figures.table2_depth import interval_text

    assert interval_text(low, high, decimals, sign) == text


def test_a_control_row_named_by_its_coefficient_and_a_paired_contrast_are_drawn():
    """A record may name a control's row by the coefficient it ran ("KL 0.01") and its prediction as the paper
    does ("GRPO-KL"), and give each prediction a paired contrast to GRPO (the strict rule): the figure finds the
    row by the predicted value, leaves the control's unpredicted coefficients out, and prints both verdicts."""
    from fgrpo_sim.figures.table2_depth import draw, figure_data

    record = fixture_record()
    for name, value in (("KL 0.01", 71.0), ("KL 0.001", 60.0)):
        record["simulated_rows"].append({"method": name, "gamma": 0.0, "N": 8,
                                         **{m: _stat(value if m == "pass@256" else 0.5, 1.0) for m in GRPO}})
    record["predictions"].append({"cell": {"model": "Qwen2.5-7B", "method": "GRPO-KL", "N": 8, "metric": "pass@256"},
                                  "paper": 72.0, "predicted": 71.0, "ci_low": 70.0, "ci_high": 72.0, "tolerance": 1.0,
                                  "hit": True, "contrast": {"paper": 7.9, "predicted": -1.0, "ci_low": -2.0,
                                                            "ci_high": 0.04, "hit": False}})
    data = figure_data(record, "v2.json")
    assert data["predictions"][-1]["method"] == "KL 0.01" and "KL 0.001" not in data["sim"]
    fig = draw(data)
    lines = [ax for ax in fig.axes if ax.axison][0].get_xlabel().splitlines()
    assert lines[-2:] == ["GRPO-KL 71.0 [70.0, 72.0] +/- 1.0 vs 72.0: HIT",
                          "  paired, minus GRPO: -1.0 [-2.0, +0.1] vs +7.9: MISS"]
    assert "no widening: 0 of 1" in fig._suptitle.get_text()
