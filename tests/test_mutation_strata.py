"""benchmarks/mutation_strata.py: a module's mutation score from one sample per stratum."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import mutation_strata as ms  # noqa: E402


def _run(only, of, killed, survived, not_caught=(), seed=202, segfault=0):
    return {"module": "sim", "mode": "unit", "only": only, "killed": killed, "timeout": 0, "survived": survived,
            "no_tests": 0, "suspicious": 0, "segfault": segfault, "sample": {"k": killed + survived, "seed": seed,
            "of": of, "names": []}, "not_caught": list(not_caught)}


def test_the_estimate_weights_each_stratum_by_its_size():
    a = ms.stratum(_run(["a.*"], 3000, 72, 8))  # 90%
    b = ms.stratum(_run(["b.*"], 1000, 80, 0))  # 100%
    out = ms.combine([a, b])
    assert out["score"] == pytest.approx(0.75 * 0.9 + 0.25 * 1.0)
    assert out["mutants"] == 4000 and out["sampled"] == 160
    for low, high in (out["jeffreys"], out["normal"]):
        assert low < out["score"] < high
    # a stratum with no survivor still has uncertainty: the Jeffreys interval stays open above the estimate
    assert out["jeffreys"][1] > out["score"] + 0.005


def test_one_stratum_matches_its_own_jeffreys_interval():
    from scipy.stats import beta

    out = ms.combine([ms.stratum(_run(["a.*"], 10**9, 190, 10))])
    assert out["score"] == pytest.approx(0.95)
    assert out["jeffreys"] == pytest.approx(list(beta.ppf([0.025, 0.975], 190.5, 10.5)), abs=2e-3)


def test_listed_equivalents_read_whole_names_and_shorthands_but_not_open_ones():
    text = (
        "## sim/ stratum x\n"
        "- `fgrpo_sim.sim.population.x_f__mutmut_3`, `_7` (a default spelled out)\n"
        "- (`fgrpo_sim.sim.population.x_f__mutmut_8`: killed after the sample; not equivalent.)\n"
        "\nNot equivalent after all: `fgrpo_sim.sim.population.x_f__mutmut_11`, killed.\n"
        "Not killed and not equivalent (open):\n"
        "- `fgrpo_sim.sim.population.x_f__mutmut_9`\n"
        "## Not classified yet\n- `fgrpo_sim.sim.population.x_g__mutmut_1`\n"
        "## theory\n- `peak.x_h__mutmut_2`\n"
    )
    listed = ms.listed_equivalents(text)
    assert listed == {"fgrpo_sim.sim.population.x_f__mutmut_3", "fgrpo_sim.sim.population.x_f__mutmut_7",
                      "peak.x_h__mutmut_2"}
    run = _run(["p.*"], 500, 45, 5, not_caught=[
        "fgrpo_sim.sim.population.x_f__mutmut_7", "fgrpo_sim.sim.population.x_f__mutmut_9",
        "fgrpo_sim.theory.peak.x_h__mutmut_2"])
    s = ms.stratum(run, listed)
    assert s["sampled"] == 48 and s["caught"] == 45
    assert s["equivalent_left_out"] == ["fgrpo_sim.sim.population.x_f__mutmut_7", "fgrpo_sim.theory.peak.x_h__mutmut_2"]


def test_the_command_refuses_overlapping_or_incomplete_strata(tmp_path):
    def write(name, *runs):
        path = tmp_path / name
        path.write_text(json.dumps({"runs": list(runs)}))
        return str(path)

    a = write("a.json", _run(["a.*"], 300, 50, 0))
    b = write("b.json", _run(["b.*"], 100, 49, 1))
    script = str(ROOT / "benchmarks" / "mutation_strata.py")
    ok = subprocess.run([sys.executable, script, a, b, "--module-size", "400"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["all_mutants_counted"]["score"] == pytest.approx(0.75 + 0.25 * 0.98)
    for argv, message in (([a, a], "same stratum"), ([a, b, "--module-size", "500"], "not --module-size 500")):
        bad = subprocess.run([sys.executable, script, *argv], capture_output=True, text=True)
        assert bad.returncode != 0 and message in bad.stderr and "Traceback" not in bad.stderr
    unfinished = write("c.json", {"module": "sim", "only": ["c.*"], "error": "boom"})
    bad = subprocess.run([sys.executable, script, unfinished], capture_output=True, text=True)
    assert bad.returncode != 0 and "not a finished sampled run" in bad.stderr


def test_pooled_rounds_add_up_per_stratum(tmp_path):
    first = _run(["a.*"], 300, 76, 4, seed=202)
    second = _run(["a.*"], 302, 78, 2, seed=303)
    other = _run(["b.*"], 100, 80, 0)
    (tmp_path / "r.json").write_text(json.dumps({"runs": [first, second, other]}))
    script = str(ROOT / "benchmarks" / "mutation_strata.py")
    out = subprocess.run([sys.executable, script, str(tmp_path / "r.json"), "--pool"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    strata = json.loads(out.stdout)["strata"]
    assert [(s["of"], s["sampled"], s["caught"]) for s in strata] == [(302, 160, 154), (100, 80, 80)]
    assert json.loads(out.stdout)["all_mutants_counted"]["score"] == pytest.approx((302 * 154 / 160 + 100) / 402)


def test_unchecked_timeouts_can_be_counted_as_survived_for_runs_made_before_the_recheck(tmp_path, capsys):
    old = {**_run(["a.*"], 1000, 76, 2), "timeout": 2}  # 78 caught of 80, 2 of them mutmut timeouts
    new = {**_run(["b.*"], 1000, 78, 2), "timeout": 0, "timeouts_rechecked": {"b.x__mutmut_1": "killed"}}
    assert ms.unchecked_timeouts_not_caught(old)["survived"] == 4
    assert ms.unchecked_timeouts_not_caught(old)["timeout"] == 0
    assert ms.unchecked_timeouts_not_caught(new) == new  # re-judged: its verdicts stand
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": [old, new]}))
    scores = {}
    for how in ("caught", "not-caught"):
        ms.main([str(path), "--unchecked-timeouts", how])
        scores[how] = json.loads(capsys.readouterr().out)["all_mutants_counted"]["score"]
    assert scores["caught"] == pytest.approx((78 + 78) / 160)
    assert scores["not-caught"] == pytest.approx((76 + 78) / 160)
