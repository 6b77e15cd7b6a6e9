"""Lambdified closed forms shipped as package source (theory/lambdified.py, theory/_generated/): the committed
source is what the derivations generate today, the numbers need no sympy, and a start of `fgrpo plan` imports
neither sympy nor scipy.stats (issue 37: plan within 3x of pyarrow's reader)."""

import inspect
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fgrpo_sim.theory import generate, lambdified as lam

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

# a meta-path finder that refuses sympy: the shipped functions must not need it
NO_SYMPY = textwrap.dedent("""
    import sys
    class _Refuse:
        def find_spec(self, name, path=None, target=None):
            if name == "sympy" or name.startswith("sympy."):
                raise ImportError("sympy blocked by the test")
    sys.meta_path.insert(0, _Refuse())
""")

# the same numbers from the live derivations: each generated module replaced by one holding its derivation's result
LIVE = textwrap.dedent("""
    import sys, types
    from fgrpo_sim.theory import lambdified as lam
    for name, derive in lam.DERIVATIONS.items():
        live = types.ModuleType(f"{lam.GENERATED_PACKAGE}.{name}")
        live.FORM = derive()
        sys.modules[live.__name__] = live
""")


def _python(code: str, cache: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "FGRPO_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def regenerated():
    return generate.generated_sources()


def _recorded_sympy(text: str) -> str:
    return text.splitlines()[0].rsplit("sympy ", 1)[-1].rstrip(".")


def _load(text: str, name: str):
    namespace: dict = {}
    exec(compile(text, f"<regenerated {name}>", "exec"), namespace)  # the test's own fresh derivation
    form = namespace["FORM"]
    return form if isinstance(form, tuple) else (form,)


def _values(functions) -> list[float]:
    """Each function at every argument 0.3 (inside every current form's domain: a probability, a size, a log)."""
    values = [float(f(*[0.3] * len(inspect.signature(f).parameters))) for f in functions]
    assert all(math.isfinite(v) for v in values), "0.3 is outside a new form's domain: pick a point for it here"
    return values


def test_the_committed_source_is_what_the_derivations_generate(regenerated):
    """The derivation and the shipped number cannot drift: text-equal under the sympy that wrote the files. Under
    another sympy (the dependency floors) its printer may spell a formula differently: then the values agree."""
    import sympy

    assert set(regenerated) == set(lam.DERIVATIONS)
    for name, text in regenerated.items():
        committed = (generate.GENERATED_DIR / f"{name}.py").read_text(encoding="utf-8")
        if _recorded_sympy(committed) == sympy.__version__:
            assert committed == text, f"{name}.py is stale: run `make theory-generated`"
        else:
            assert _values(_load(text, name)) == pytest.approx(_values(_load(committed, name)), rel=1e-12), name
    shipped = {f.stem for f in generate.GENERATED_DIR.glob("*.py")} - {"__init__"}
    assert shipped == set(regenerated), "a generated module without its derivation: run `make theory-generated`"


def test_generate_rewrites_a_stale_missing_or_orphan_module(regenerated, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "_generated"
    folder.mkdir()
    for name, text in regenerated.items():  # what this sympy writes (the committed header may name another)
        (folder / f"{name}.py").write_text(text)
    monkeypatch.setattr(generate, "GENERATED_DIR", folder)
    monkeypatch.setattr(generate, "generated_sources", lambda: regenerated)
    (folder / "inclusion.py").write_text((folder / "inclusion.py").read_text().replace("expm1", "exp"))
    (folder / "step_sign.py").unlink()
    (folder / "retired_form.py").write_text(f"# {generate.MARKER}\n")
    assert generate.main(["--check"]) == 1
    assert generate.stale(regenerated) == ["inclusion.py", "retired_form.py", "step_sign.py"]
    assert generate.main([]) == 0
    assert generate.stale(regenerated) == [] and not (folder / "retired_form.py").exists()
    assert (folder / "step_sign.py").read_text() == regenerated["step_sign"]
    capsys.readouterr()


def test_an_unknown_closed_form_is_refused_by_name():
    with pytest.raises(ValueError, match="name must be a registered closed form .*got 'nope'"):
        lam.lambdified("nope")
    with pytest.raises(ValueError, match="name must be a Python identifier"):
        lam.closed_form("lr-multiplier")


def test_a_process_gets_the_derived_numbers_without_sympy(tmp_path):
    live = _python(LIVE + EVALUATE, tmp_path)
    assert live.returncode == 0, live.stderr
    shipped = _python(NO_SYMPY + EVALUATE, tmp_path)
    assert shipped.returncode == 0, shipped.stderr
    assert shipped.stdout == live.stdout  # one machine: bit for bit
    assert not list(tmp_path.iterdir())  # nothing was written to, or read from, the cache
    # the blocker does bite: deriving needs sympy
    assert _python(NO_SYMPY + LIVE + EVALUATE, tmp_path).returncode != 0


@pytest.mark.parametrize("command", [["plan", "{file}"], ["passk", "{file}", "--bootstrap", "0"]])
def test_a_start_imports_neither_sympy_nor_scipy_stats(tmp_path, command):
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
    cold = _python(code, tmp_path / "empty-cache")
    assert cold.returncode == 0, cold.stderr
    assert cold.stdout.strip().splitlines()[-1] == "[]"
