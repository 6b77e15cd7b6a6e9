"""Issue 48: Table 2's depth engine, its record and `fgrpo simulate table2-depth` (tiny settings only)."""

from __future__ import annotations

import copy
import csv
import json
import shlex
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fgrpo_sim.sim import table2_depth as t2
from fgrpo_sim.sim.table2_depth_record import check_record, is_record, read_record

TINY = t2.DepthSetting(steps=3, prompt_batch=4)
TINY_N = (2, 8)


@pytest.fixture(scope="module")
def tiny_frame():
    return t2.run_setting(TINY, 2, TINY_N, device="cpu")  # cpu: the bit-for-bit comparisons below


def test_tiny_run_gives_every_method_and_n(tiny_frame):
    rows = t2.summarise(tiny_frame)
    methods = ("GRPO", "F-GRPO", "low-LR", "entropy 0.0001", "entropy 0.001", "KL 0.001", "KL 0.01")
    assert {(r["method"], r["N"]) for r in rows} == {(m, n) for m in methods for n in TINY_N}
    for r in rows:
        for m in t2.METRICS:
            assert r[m]["ci_low"] <= r[m]["mean"] <= r[m]["ci_high"]
        assert 0 <= r["pass@1"]["mean"] <= r["pass@256"]["mean"] <= 100  # percent, pass@1 <= pass@256


def test_record_of_a_tiny_run_passes_its_reader(tiny_frame):
    record = t2.build_record(TINY, tiny_frame, 2, "fgrpo simulate table2-depth --out x.json")
    checked = check_record(json.loads(json.dumps(record)), "tiny")
    assert set(checked) >= {"schema", "fit_targets", "fitted", "simulated_rows", "predictions", "grpo_dip_points",
                            "populations", "seeding", "command"}
    assert {p["cell"]["method"] for p in checked["predictions"]} == {"F-GRPO", "GRPO low-LR", "GRPO-H", "GRPO-KL"}
    assert checked["schema"] == "table2-depth-v2" and all("contrast" in p for p in checked["predictions"])
    assert set(checked["rules"]) == {"hit", "contrast.hit"}
    assert {p["coefficient"] for p in checked["predictions"] if p["cell"]["method"] == "GRPO-KL"} <= {1e-3, 1e-2}
    assert all(t["method"] == "GRPO" and t["N"] in TINY_N for t in checked["fit_targets"])


def test_grpo_rows_do_not_depend_on_the_controls_running():
    """Each row draws from its own key: dropping the low-LR rows leaves GRPO's numbers bit for bit."""
    small = replace(TINY, steps=2)
    cols = ["N", "population", "heldout_pass@1", "heldout_pass@256", "train_dnll_rare"]
    a = t2.run_setting(small, 2, (4,), device="cpu")
    b = t2.run_setting(small, 2, (4,), device="cpu", controls=False)
    pick = lambda f: f[f["method"] == "GRPO"][cols].sort_values(["N", "population"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(pick(a), pick(b), check_exact=True)
    assert "low-LR" in set(a["method"]) and "low-LR" not in set(b["method"])


def test_a_control_row_is_its_own_key():
    """A KL row alone (no entropy, no low-LR rows beside it) equals that row in the full run, bit for bit."""
    from fgrpo_sim.sim.group_size_study import final_rows, train_chunk

    small = replace(TINY, steps=2)
    full = t2.run_setting(small, 2, (4,), device="cpu")
    spec = replace(t2.study_spec(small, 2, (4,)), low_lr=False, entropy_coefs=(), kl_coefs=(1e-2,))
    alone = final_rows(train_chunk(spec, t2.OPTIMIZER, t2.PARAMETRISATION, "cpu"))
    cols = ["population", "heldout_pass@1", "heldout_pass@256", "train_dnll_rare"]
    pick = lambda f: f[f["variant"] == "GRPO KL=0.01"][cols].sort_values("population").reset_index(drop=True)
    assert len(pick(alone)) == 2
    pd.testing.assert_frame_equal(pick(full), pick(alone), check_exact=True)


def test_paper_cells_are_the_shipped_tables():
    """Read independently with csv: Table 2's math-average GRPO/F-GRPO cells, dNLL_rare, Table 3's low-LR row."""
    from fgrpo_sim.paper_tables import HERE

    with open(HERE / "main_results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    want = {}
    for r in rows:
        name = {"delta_nll_rare": "dnll_rare"}.get(r["metric"], r["metric"])
        if r["model"] != "Qwen2.5-7B" or name not in t2.METRICS:
            continue
        if r["table"] == "2" and r["setting"] == "group_size_sweep" and (r["scope"] == "math_avg" or name == "dnll_rare"):
            want[(r["method"], int(r["group_size"]), name)] = float(r["value"])
        ours = {"GRPO low-LR": "low-LR", "GRPO-H": "entropy", "GRPO-KL": "KL"}.get(r["method"])
        if r["table"] == "3" and ours and r["scope"] == "math_avg":
            want[(ours, int(r["group_size"]), name)] = float(r["value"])
    assert t2.paper_cells() == want
    assert want[("GRPO", 8, "pass@256")] == 64.1 and want[("F-GRPO", 8, "pass@256")] == 70.3
    assert want[("entropy", 8, "pass@256")] == 69.5 and want[("KL", 8, "pass@256")] == 72.0
    targets = t2.fit_targets()
    assert len(targets) == 15 and {t["method"] for t in targets} == {"GRPO"}


def _rows(values: dict) -> list[dict]:
    """Synthetic simulated rows: values[(method, N, metric)] = (mean, low, high)."""
    out = {}
    for (method, n, metric), (mean, low, high) in values.items():
        out.setdefault((method, n), {"method": method, "gamma": 0.0, "N": n})[metric] = {
            "mean": mean, "ci_low": low, "ci_high": high}
    return list(out.values())


def test_loss_rms_and_hit_rule_by_hand():
    paper = t2.paper_cells()
    values = {}
    for (method, n, metric), v in paper.items():
        if method == "GRPO":  # pass@k 2 points off everywhere, dNLL_rare 0.1 nat off: RMS 2 and 0.1
            values[(method, n, metric)] = (v + (0.1 if metric == "dnll_rare" else 2.0),) * 3
    values[("F-GRPO", 8, "pass@1")] = (35.0, 34.0, 36.5)     # 38.6 > 36.5 + 2: miss
    values[("F-GRPO", 8, "pass@256")] = (66.0, 65.0, 68.5)   # 70.3 <= 68.5 + 2: hit
    values[("F-GRPO", 8, "dnll_rare")] = (0.3, 0.2, 0.35)     # 0.46 > 0.35 + 0.1: miss
    values[("low-LR", 8, "pass@1")] = (39.0, 38.5, 39.5)     # 37.8 >= 38.5 - 2: hit
    values[("low-LR", 8, "pass@256")] = (75.0, 74.0, 76.0)   # 69.2 < 74 - 2: miss
    values[("low-LR", 8, "dnll_rare")] = (0.5, 0.5, 0.5)     # no paper cell: no prediction
    rows = _rows(values)
    targets = t2.fit_targets()
    assert t2.fit_loss(rows, targets) == pytest.approx(10 * 2.0 ** 2 + 5 * 1.0 ** 2)
    rms = t2.fit_rms(rows, targets)
    assert rms["pass@1"] == pytest.approx(2.0) and rms["dnll_rare"] == pytest.approx(0.1)
    verdict = {(p["cell"]["method"], p["cell"]["metric"]): p["hit"] for p in t2.predictions(rows, targets)}
    assert verdict == {("F-GRPO", "pass@1"): False, ("F-GRPO", "pass@256"): True, ("F-GRPO", "dnll_rare"): False,
                       ("GRPO low-LR", "pass@1"): True, ("GRPO low-LR", "pass@256"): False}


def test_contrast_strict_rule_and_control_choice_by_hand():
    """Paired over populations: sim - GRPO at N = 8 per population, its t interval, and the strict rule (no
    widening); the control coefficient is the one with the higher mean pass@1 at N = 8."""
    from fgrpo_sim.metrics import t_interval

    grpo = {0: (0.30, 0.60), 1: (0.34, 0.66), 2: (0.32, 0.62)}  # population: (pass@1, pass@256) fractions
    plus = {"F-GRPO": (0.020, 0.060, 0.023, 0.064, 0.022, 0.058),  # per population: pass@1, pass@256 gains
            "KL 0.001": (0.0, 0.0, -0.001, 0.001, 0.001, -0.001), "KL 0.01": (-0.01, 0.1, -0.01, 0.1, -0.01, 0.1)}
    frame = []
    for method in ("GRPO", *plus):
        for p, (p1, p256) in grpo.items():
            d = plus.get(method, (0.0,) * 6)[2 * p:2 * p + 2]
            frame.append({"method": method, "gamma": 0.0, "N": 8, "population": p, "heldout_pass@1": p1 + d[0],
                          "heldout_pass@256": p256 + d[1], "train_dnll_rare": 0.5})
    frame = pd.DataFrame(frame)
    rows = t2.summarise(frame)
    assert t2.chosen_controls(rows)["KL"]["chosen"] == 1e-3  # 0.01 lowers pass@1 at every population
    preds = {(p["cell"]["method"], p["cell"]["metric"]): p for p in t2.predictions(rows, [], frame)}
    c = preds[("F-GRPO", "pass@256")]["contrast"]
    mean, low, high = (float(x) for x in t_interval(100 * np.array([0.060, 0.064, 0.058]), confidence=0.95))
    assert (c["predicted"], c["ci_low"], c["ci_high"]) == pytest.approx((mean, low, high))
    assert c["paper"] == pytest.approx(70.3 - 64.1) and c["hit"] == (low <= 70.3 - 64.1 <= high)
    assert c["hit"]  # 6.2 inside about [5.5, 6.7]
    assert preds[("F-GRPO", "pass@1")]["contrast"]["hit"] is False  # paper 1.3 below about [1.8, 2.6]
    kl = preds[("GRPO-KL", "pass@256")]
    assert kl["coefficient"] == 1e-3 and kl["contrast"]["hit"] is False  # paper +7.9, sim about 0


def test_dip_points_by_hand():
    """Two populations, pass@256 (fractions) per N; lowest mean at N = 8; flanks paired per population."""
    table = {2: (0.80, 0.70), 8: (0.60, 0.62), 32: (0.70, 0.66)}
    frame = pd.DataFrame([{"method": "GRPO", "N": n, "population": p, "heldout_pass@256": v[p]}
                          for n, v in table.items() for p in (0, 1)])
    dip = t2.dip_points(frame)
    assert dip["dip_N"] == 8
    assert dip["left"]["points"] == pytest.approx(100 * np.mean([0.20, 0.08]))
    assert dip["right"]["points"] == pytest.approx(100 * np.mean([0.10, 0.04]))
    assert dip["left"]["ci_low"] < dip["left"]["points"] < dip["left"]["ci_high"]


@pytest.mark.parametrize("breakage, message", [
    (lambda r: r["fit_targets"].append({**r["fit_targets"][0], "method": "F-GRPO"}), "must be GRPO"),
    (lambda r: r["predictions"][0].update(ci_low=r["predictions"][0]["predicted"] + 1), "ci_low <= estimate"),
    (lambda r: r["grpo_dip_points"].update(dip_N=3), "dip_N must be one of"),
    (lambda r: r.update(schema="other"), "schema"),
    (lambda r: r["predictions"][0]["contrast"].update(hit=not r["predictions"][0]["contrast"]["hit"]),
     "contrast.hit must say"),
    (lambda r: r["predictions"][0].pop("contrast"), "contrast' must be an object"),
    (lambda r: r["simulated_rows"][0]["pass@256"].update(mean=float("nan")), "pass@256"),
    (lambda r: r.pop("command"), "no 'command'"),
    (lambda r: r["simulated_rows"][0]["pass@1"].update(mean=120.0, ci_high=130.0), r"in \[0, 100\]"),
])
def test_reader_refuses_a_broken_record(tiny_frame, breakage, message):
    record = json.loads(json.dumps(t2.build_record(TINY, tiny_frame, 2, "fgrpo simulate table2-depth --out x.json")))
    broken = copy.deepcopy(record)
    breakage(broken)
    with pytest.raises(ValueError, match=message):
        check_record(broken, "rec.json")


def test_command_reproduces_its_own_record(run_cli, tmp_path, monkeypatch):
    """The record's `command`, run again, writes the same numbers (tiny scale; same machine: bit for bit)."""
    monkeypatch.chdir(tmp_path)
    first = run_cli("simulate", "table2-depth", "--out", "rec.json", "--populations", "2", "--steps", "2",
                    "--prompt-batch", "4", "--n", "2,8", "--device", "cpu", "--no-progress")
    assert first.exit_code == 0, first.stderr
    record = read_record(tmp_path / "rec.json")
    command = shlex.split(record["command"])
    assert command[:3] == ["fgrpo", "simulate", "table2-depth"] and "--device" not in command
    again = run_cli(*command[1:], "--device", "cpu", "--no-progress")
    assert again.exit_code == 0, again.stderr
    replayed = read_record(tmp_path / "rec.json")
    assert replayed["simulated_rows"] == record["simulated_rows"]
    assert replayed["predictions"] == record["predictions"] and replayed["command"] == record["command"]
    assert is_record(tmp_path / "rec.json")


@pytest.mark.parametrize("args, message", [
    (("--out", "rec.csv"), "--out must end in .json"),
    (("--out", "rec.json", "--populations", "1"), "--populations must be in [2, 10000]"),
    (("--out", "rec.json", "--rare-mass", "0.02,0.03"), "--rare-mass takes one value"),
    (("--out", "rec.json", "--lr", "0"), "--lr must be in (0, 10]"),
    (("--out", "rec.json", "--common-correct-prob", "0"), "--common-correct-prob must be in (0, 1]"),
])
def test_bad_input_is_one_line_exit_2(run_cli, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = run_cli("simulate", "table2-depth", *args, "--no-progress")
    assert result.exit_code == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "rec.json").exists()


COMMITTED = Path(__file__).resolve().parents[1] / "fgrpo_sim" / "results"


def test_committed_record_fits_only_grpo_row_cells():
    """The pre-registration: fit targets are Table 2's GRPO row (no F-GRPO, no Table 3 cell), at the paper's values."""
    record = read_record(COMMITTED / "table2-depth.json")
    paper = t2.paper_cells()
    cells = [(t["method"], t["N"], t["metric"]) for t in record["fit_targets"]]
    assert cells and all(method == "GRPO" for method, _, _ in cells)
    assert all(t["value"] == paper[(t["method"], t["N"], t["metric"])] for t in record["fit_targets"])
    predicted = {(p["cell"]["method"], p["cell"]["N"], p["cell"]["metric"]) for p in record["predictions"]}
    assert predicted == {("F-GRPO", 8, m) for m in t2.METRICS} | {(c, 8, m) for c in ("GRPO low-LR", "GRPO-H",
                                                                                      "GRPO-KL")
                                                                    for m in ("pass@1", "pass@256")}
    assert not predicted & set(cells)


def test_committed_predictions_hold_their_intervals_and_rule():
    record = read_record(COMMITTED / "table2-depth.json")
    rms, paper = record["fitted"]["rms"], t2.paper_cells()
    for p in record["predictions"]:
        assert p["ci_low"] <= p["predicted"] <= p["ci_high"]
        d = rms[p["cell"]["metric"]]
        assert p["tolerance"] == d and p["hit"] == (p["ci_low"] - d <= p["paper"] <= p["ci_high"] + d)
        c = p["contrast"]  # v2: paired contrast to GRPO at N = 8, strict rule
        assert c["paper"] == pytest.approx(p["paper"] - paper[("GRPO", 8, p["cell"]["metric"])])
        assert c["ci_low"] <= c["predicted"] <= c["ci_high"] and c["hit"] == (c["ci_low"] <= c["paper"] <= c["ci_high"])


def test_committed_record_is_the_fitted_command():
    """The record's command is the fitted default run: its settings are table2_depth.FITTED at FITTED_POPULATIONS."""
    record = read_record(COMMITTED / "table2-depth.json")
    assert record["command"] == "fgrpo simulate table2-depth --out fgrpo_sim/results/table2-depth.json"
    assert record["populations"] == t2.FITTED_POPULATIONS
    # seeds from 0 leave seed_offset out of the record (written before the option existed)
    assert set(asdict(t2.FITTED)) - set(record["fitted"]) == {"seed_offset"} and t2.FITTED.seed_offset == 0
    assert {k: record["fitted"][k] for k in asdict(t2.FITTED) if k != "seed_offset"} == {
        k: v for k, v in asdict(t2.FITTED).items() if k != "seed_offset"}
    assert {r["N"] for r in record["simulated_rows"]} == set(t2.GROUP_SIZES)


def test_fitted_setting_is_the_committed_search_fit():
    """table2_depth.FITTED is what the committed search chose (lowest pre-registered loss after refining)."""
    from fgrpo_sim.jsonl import read_json_file

    search = read_json_file(COMMITTED / "table2-depth-search-v2.json", "search")
    assert search["command"] == ("python benchmarks/table2_depth_search.py --grid v2 --refine 4 --no-ofat "
                                 "--out fgrpo_sim/results/table2-depth-search-v2.json")
    assert search["grid_axes"]["common_correct_prob"] == [0.5, 0.6, 0.7]
    # the search predates the optimizer, map and seed-offset fields: it ran their defaults (Adam, orthogonal, 0)
    assert t2.DepthSetting(**search["fit"]["setting"]) == t2.FITTED
    assert search["fit"]["loss"] == min(r["loss"] for r in search["refined"])


def test_search_script_runs_tiny(tmp_path):
    """benchmarks/table2_depth_search.py end to end at its --tiny grid: the fit is the refined setting of least loss."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "search.json"
    subprocess.run([sys.executable, str(repo / "benchmarks" / "table2_depth_search.py"), "--tiny", "--out", str(out),
                    "--grid-populations", "2", "--populations", "2", "--refine", "1"], check=True, cwd=repo,
                   capture_output=True, env=env)
    search = json.loads(out.read_text())
    assert len(search["grid"]) == 2 and len(search["refined"]) == 1 and search["ofat"]
    assert search["fit"] == search["refined"][0]
    assert min(search["grid"], key=lambda r: r["loss"])["setting"] == search["fit"]["setting"]
    assert all(o["property"] == "lr" and o["setting"]["lr"] == o["value"] for o in search["ofat"])


def test_group_sizes_without_8_give_no_prediction(run_cli, tmp_path, monkeypatch):
    """The predicted cells sit at N = 8: a run without it writes a record with none (it once stopped with a
    traceback, StopIteration, looking for the N = 8 rows)."""
    monkeypatch.chdir(tmp_path)
    result = run_cli("simulate", "table2-depth", "--out", "rec.json", "--n", "2,4", "--steps", "2", "--populations",
                     "2", "--prompt-batch", "4", "--device", "cpu", "--no-progress")
    assert result.exit_code == 0, result.stderr
    record = read_record(tmp_path / "rec.json")
    assert record["predictions"] == [] and {t["N"] for t in record["fit_targets"]} == {2, 4}
