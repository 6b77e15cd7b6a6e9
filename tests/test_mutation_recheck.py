"""benchmarks/mutation.py's recheck_timeouts: a mutmut "timeout" is judged again by running its tests un-forked.

A forked child can hang on a lock the fork copied, and mutmut then records a timeout, which counts as caught. These
tests run real pytest processes on a stand-in mutants/ folder whose one test fails, passes or sleeps depending on
MUTANT_UNDER_TEST, as mutmut's trampolines do."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import mutation  # noqa: E402

STAND_IN_TEST = '''
import os
import time


def test_f():
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if mutant.endswith("__mutmut_1"):  # this mutant changes what f returns: the test catches it
        assert False
    if mutant.endswith("__mutmut_3"):  # this one really hangs, forked or not
        time.sleep(60)
    # __mutmut_2: the forked child hung, but the tests pass un-forked
'''


def _work(tmp_path: Path) -> Path:
    (tmp_path / "mutants" / "tests").mkdir(parents=True)
    (tmp_path / "mutants" / "tests" / "test_f.py").write_text(STAND_IN_TEST)
    stats = {"tests_by_mangled_function_name": {"pkg.mod.x_f": ["tests/test_f.py::test_f"]}}
    (tmp_path / "mutants" / "mutmut-stats.json").write_text(json.dumps(stats))
    return tmp_path


def test_each_timeout_takes_its_unforked_verdict(tmp_path):
    work = _work(tmp_path)
    found = {"pkg.mod.x_f__mutmut_1": "timeout", "pkg.mod.x_f__mutmut_2": "timeout",
             "pkg.mod.x_f__mutmut_3": "timeout", "pkg.mod.x_f__mutmut_4": "survived",
             "pkg.mod.x_f__mutmut_5": "killed"}
    env = {k: v for k, v in os.environ.items() if k != "MUTANT_UNDER_TEST"}
    out = mutation.recheck_timeouts(work, Path(sys.executable), env, found, limit_s=8)
    # only the timeouts are run again; a hang that outlasts the limit un-forked stays a timeout (caught)
    assert out == {"pkg.mod.x_f__mutmut_1": "killed", "pkg.mod.x_f__mutmut_2": "survived",
                   "pkg.mod.x_f__mutmut_3": "timeout"}


def test_a_timeout_without_covering_tests_is_no_tests_and_other_exit_codes_are_suspicious(tmp_path):
    work = _work(tmp_path)
    calls = []

    def fake_run(cmd, cwd, env, **kwargs):
        calls.append((cmd, cwd, env["MUTANT_UNDER_TEST"]))
        return subprocess.CompletedProcess(cmd, 2)  # pytest's "interrupted": neither a pass nor a failing test

    found = {"pkg.other.x_g__mutmut_1": "timeout", "pkg.mod.x_f__mutmut_7": "timeout"}
    out = mutation.recheck_timeouts(work, Path("py"), {}, found, run=fake_run)
    assert out == {"pkg.other.x_g__mutmut_1": "no_tests", "pkg.mod.x_f__mutmut_7": "suspicious"}
    # the mutant's own tests, from the mutants/ folder, with the mutant switched on
    cmd, cwd, mutant = next(c for c in calls if c[2] == "pkg.mod.x_f__mutmut_7")
    assert cmd[-1] == "tests/test_f.py::test_f" and cmd[:3] == ["py", "-m", "pytest"] and "-x" in cmd
    assert cwd == work / "mutants"


def test_rejudge_recounts_an_earlier_runs_output_from_its_kept_folder(tmp_path, monkeypatch):
    work = _work(tmp_path / "build" / "mutation" / "unit-sim")
    # mutmut's kept verdicts: exit code 36 = timeout, 1 = killed, 0 = survived
    meta = {"exit_code_by_key": {"pkg.mod.x_f__mutmut_1": 36, "pkg.mod.x_f__mutmut_2": 36,
                                 "pkg.mod.x_f__mutmut_5": 1, "pkg.mod.x_f__mutmut_6": 0}}
    (work / "mutants" / "mod.py.meta").write_text(json.dumps(meta))
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    names = sorted(meta["exit_code_by_key"])
    earlier = {"machine": "m", "runs": [{"module": "sim", "mode": "unit", "only": ["pkg.*"], "mutants": 4,
                                         "killed": 1, "timeout": 2, "survived": 1, "score": 0.75, "wall_s": 9.0,
                                         "sample": {"k": 4, "seed": 1, "of": 9, "names": names}}]}
    row = mutation.rejudge(earlier, Path(sys.executable).parent / "mutmut")["runs"][0]
    assert (row["killed"], row["timeout"], row["survived"], row["score"]) == (2, 0, 2, 0.5)
    assert row["not_caught"] == ["pkg.mod.x_f__mutmut_2", "pkg.mod.x_f__mutmut_6"]
    assert row["timeouts_rechecked"] == {"pkg.mod.x_f__mutmut_1": "killed", "pkg.mod.x_f__mutmut_2": "survived"}
    assert row["sample"]["of"] == 9 and row["wall_s"] == 9.0 and len(row["score_ci"]) == 2


def test_rejudge_refuses_a_missing_file_or_a_run_without_its_kept_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    for bad in (tmp_path / "none.json", tmp_path / "text.json"):
        (tmp_path / "text.json").write_text("not json")
        with pytest.raises(SystemExit) as err:
            mutation.main(["--rejudge", str(bad), "--mutmut", sys.executable])
        assert str(err.value).startswith(f"mutation.py: error: --rejudge must name a mutation.py output (JSON with "
                                         f"runs), got {bad} (")
    earlier = tmp_path / "out.json"
    earlier.write_text(json.dumps({"runs": [{"module": "sim", "mode": "unit", "wall_s": 1.0}]}))
    with pytest.raises(SystemExit) as err:
        mutation.main(["--rejudge", str(earlier), "--mutmut", sys.executable])
    assert str(err.value) == (f"mutation.py: error: --rejudge needs the run's kept folder "
                              f"{tmp_path / 'build' / 'mutation' / 'unit-sim'} (run with --keep, in this clone), "
                              "which is missing")
