"""benchmarks/mutation.py's recheck_timeouts runs a timeout's covering tests by function, not by parametrised id: a
mutant can change which parameters a test is collected with (the native kernel unloadable: no `[native]` cases), and
an id pytest no longer finds ended the un-forked run with exit 4 before any test ran ("suspicious", seed 606's
`sampling._load_native` 18, which a listed test kills). A real pytest on a stand-in mutants/ folder."""

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import mutation  # noqa: E402

STAND_IN_TEST = '''
import os

import pytest

BROKEN = os.environ.get("MUTANT_UNDER_TEST", "").endswith("__mutmut_1")  # this mutant drops the "native" case
BACKENDS = ["torch"] + ([] if BROKEN else ["native"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_g(backend):
    pass


def test_loads():
    assert not BROKEN  # the mutant is caught here
'''


def test_a_timeout_whose_mutant_drops_a_parametrised_case_is_judged_by_its_tests(tmp_path):
    (tmp_path / "mutants" / "tests").mkdir(parents=True)
    (tmp_path / "mutants" / "tests" / "test_g.py").write_text(STAND_IN_TEST)
    covering = ["tests/test_g.py::test_g[native]", "tests/test_g.py::test_g[torch]", "tests/test_g.py::test_loads"]
    stats = {"tests_by_mangled_function_name": {"pkg.mod.x_g": covering}}
    (tmp_path / "mutants" / "mutmut-stats.json").write_text(json.dumps(stats))
    env = {k: v for k, v in os.environ.items() if k != "MUTANT_UNDER_TEST"}
    found = {"pkg.mod.x_g__mutmut_1": "timeout", "pkg.mod.x_g__mutmut_2": "timeout"}
    out = mutation.recheck_timeouts(tmp_path, Path(sys.executable), env, found, limit_s=60)
    assert out == {"pkg.mod.x_g__mutmut_1": "killed", "pkg.mod.x_g__mutmut_2": "survived"}
