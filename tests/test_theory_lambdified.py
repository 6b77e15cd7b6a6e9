"""Lambdified closed forms kept on disk (theory/lambdified.py): same numbers without sympy, and a start of
`fgrpo plan` that imports neither sympy nor scipy.stats (issue 37: plan within 3x of pyarrow's reader)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# every lambdified theory function, evaluated at a few points; printed with repr so equality is bit for bit
EVALUATE = textwrap.dedent("""
    import numpy as np
    from fgrpo_sim import theory
    from fgrpo_sim.theory.categorical import _numeric_inclusion, _numeric_mass_changes
    out = [theory.tail_miss_probability(np.array([2, 8, 1000]), 0.4, 0.01).tolist(),
           theory.lr_multiplier(np.array([0.25, 0.5, 1.0, 3.0])).tolist(),
           theory.lr_multiplier(0.5, weight="variance"),
           theory.peak_group_size(np.array([0.3, 0.9]), np.array([0.01, 0.2])).n_star.tolist(),
           _numeric_inclusion()(0.01, 16.0),
           [float(f(0.1, 1.0, 0.0, 8.0, 0.5, 0.1, 0.2, 0.3, 0.05, 0.07, 0.4)) for f in _numeric_mass_changes()]]
    print(repr(out))
""")

# a meta-path finder that refuses sympy: the rebuilt functions must not need it
NO_SYMPY = textwrap.dedent("""
    import sys
    class _Refuse:
        def find_spec(self, name, path=None, target=None):
            if name == "sympy" or name.startswith("sympy."):
                raise ImportError("sympy blocked by the test")
    sys.meta_path.insert(0, _Refuse())
""")


def _python(code: str, cache: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "FGRPO_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)


def test_a_second_process_gets_the_same_numbers_without_sympy(tmp_path):
    derived = _python(EVALUATE, tmp_path)
    assert derived.returncode == 0, derived.stderr
    records = sorted(p.name for p in (tmp_path / "fgrpo-sim").glob("lambdified-*.json"))
    assert len(records) == 7, records  # kernel, 2 lr multipliers, 2 peak forms, inclusion, mass changes
    rebuilt = _python(NO_SYMPY + EVALUATE, tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert rebuilt.stdout == derived.stdout
    # without the records the same process cannot work: the test's blocker does bite
    empty = tmp_path / "empty"
    assert _python(NO_SYMPY + EVALUATE, empty).returncode != 0


def test_a_damaged_or_foreign_record_is_derived_again(tmp_path, monkeypatch):
    from fgrpo_sim.theory import lambdified as lam

    monkeypatch.setenv("FGRPO_CACHE_DIR", str(tmp_path))
    calls = []

    def derive():
        calls.append(1)
        import sympy as sp

        x = sp.Symbol("x")
        return sp.lambdify(x, sp.exp(x) + sp.pi, modules="numpy")

    first = lam.lambdified("probe", derive)
    second = lam.lambdified("probe", derive)
    assert len(calls) == 1 and first(0.5) == second(0.5)
    record = lam._record_path("probe")
    data = json.loads(record.read_text())
    for damaged in ("{not json", json.dumps({**data, "format": "other"}),
                    json.dumps({**data, "functions": [{**data["functions"][0],
                                                       "origins": {"exp": "os"}}]})):
        record.write_text(damaged)
        assert lam.lambdified("probe", derive)(0.5) == first(0.5)
    assert len(calls) == 4  # each damaged record derived afresh (and rewritten)
    assert json.loads(record.read_text())["format"] == lam.FORMAT


def test_an_edited_theory_module_derives_afresh(tmp_path, monkeypatch):
    from fgrpo_sim.theory import lambdified as lam

    monkeypatch.setenv("FGRPO_CACHE_DIR", str(tmp_path))
    before = lam._record_path("probe")
    lam._theory_fingerprint.cache_clear()
    real_read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: real_read(self) + (b"#" if self.name == "focal.py" else b""))
    try:
        assert lam._record_path("probe") != before
    finally:
        monkeypatch.undo()
        lam._theory_fingerprint.cache_clear()


@pytest.mark.parametrize("command", [["plan", "{file}"], ["passk", "{file}", "--bootstrap", "0"]])
def test_a_warm_start_imports_neither_sympy_nor_scipy_stats(tmp_path, command):
    results = tmp_path / "eval.jsonl"
    results.write_text("".join(json.dumps({"problem_id": f"p{i}", "n": 4, "c": i}) + "\n" for i in range(5)))
    argv = [part.format(file=results) for part in command]
    code = textwrap.dedent(f"""
        import sys
        from fgrpo_sim import cli
        try:
            cli.main({argv!r})
        except SystemExit as exit:
            assert not exit.code, exit.code
        print(sorted(m for m in ("sympy", "scipy.stats", "pandas") if m in sys.modules))
    """)
    assert _python(code, tmp_path).returncode == 0  # the first start derives and keeps the records
    warm = _python(code, tmp_path)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.strip().splitlines()[-1] == "[]"
