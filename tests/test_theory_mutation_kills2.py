"""Contracts of fgrpo_sim/theory/ that the WHOLE-module mutation run (benchmarks/mutation.py --modules theory, issue
44; the sampled runs' tests are tests/test_theory_mutation_kills.py) found untested: first-offender messages,
scalar returns, silent degenerate cases, the layout of the generated closed-form modules, and the derivations'
numeric self-check refusing a wrong rearrangement. Every expected value is computed here independently."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy import exp  # a global of `_attribute_then_global` below, as lambdify's namespace would hold it

from fgrpo_sim import theory
from fgrpo_sim.theory import generate, lambdified as lam
from fgrpo_sim.theory.tail_miss import log_tail_miss_probability, tail_miss_from_rho

P = np.array([0.2, 0.3, 0.5])
CORRECT = np.array([True, True, False])


@pytest.mark.parametrize("call, message", [
    # the first pair with k > n is named, with its own n (not the first pair with k >= n)
    (lambda: theory.expected_sampled_correct_mass(P, CORRECT, [1, 2], [1, 3]), r"^k must be in \[0, n\], got k = 3 "
     r"with n = 2$"),
    (lambda: theory.expected_unsampled_square_mass(0.5, 2),
     r"^p must be an array of action probabilities \(last axis = actions\)$"),
    # tail_miss_from_rho checks mu itself, before the group size it passes on (n = 0 is wrong too)
    (lambda: tail_miss_from_rho(0, 1.5, 0.5), r"^mu must be in \[0, 1\], got 1\.5$"),
    (lambda: tail_miss_from_rho(0, -0.5, 0.5), r"^mu must be in \[0, 1\], got -0\.5$"),
])
def test_refusals_name_the_first_offending_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_scalar_inputs_give_python_floats():
    assert type(theory.focal_weight(0.5, 1.0)) is float and theory.focal_weight(0.5, 1.0) == 0.5
    # one rollout is never active: Pr(B) = 0, log Pr(B) = -inf, as a float and without a divide warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = log_tail_miss_probability(1, 0.5, 0.1)
    assert type(got) is float and got == -np.inf
    assert type(log_tail_miss_probability(2, 0.5, 0.1)) is float
    assert log_tail_miss_probability(2, 0.5, 0.1) == pytest.approx(np.log(0.9**2 - 0.4**2 - 0.5**2), rel=1e-14)


# ---- the generator's output layout ---------------------------------------------------------------------------


def _after_docstring(text: str) -> str:
    """The module text after its docstring (the docstring names the derivation, which a mutation tool renames)."""
    return text.split('\n"""\n', 1)[1]


@pytest.mark.parametrize("name", sorted(lam.DERIVATIONS))
def test_regenerated_module_bodies_match_the_committed_files(name):
    committed = (generate.GENERATED_DIR / f"{name}.py").read_text(encoding="utf-8")
    assert _after_docstring(generate.module_source(name, lam.DERIVATIONS[name])) == _after_docstring(committed)


def test_a_single_function_and_a_one_tuple_are_written_as_such():
    import sympy as sp

    x = sp.Symbol("x")
    one = generate.module_source("one", lambda: sp.lambdify(x, 2 * x, modules="numpy"))
    assert _after_docstring(one) == "\n\ndef one(x):\n    return 2*x\n\n\nFORM = one\n"
    single = generate.module_source("single", lambda: (sp.lambdify(x, 3 * x, modules="numpy"),))
    assert _after_docstring(single) == "\n\ndef single_0(x):\n    return 3*x\n\n\nFORM = (single_0,)\n"


def test_a_name_two_functions_take_from_different_modules_is_refused():
    import sympy as sp

    x = sp.Symbol("x")

    def derive():  # exp from numpy in one function and from math in the other: one import line cannot serve both
        return sp.lambdify(x, sp.exp(x), modules="numpy"), sp.lambdify(x, sp.exp(2 * x), modules="math")

    with pytest.raises(ValueError, match=r"^pair: 'exp' comes from both numpy and math$"):
        generate.module_source("pair", derive)


def _attribute_then_global(v):
    return v.real + exp(v)


def test_a_global_after_an_attribute_is_still_imported():
    text = generate.module_source("attr", lambda: _attribute_then_global)
    assert "\nfrom numpy import exp\n" in text
    namespace: dict = {}
    exec(compile(text, "<attr>", "exec"), namespace)
    assert namespace["FORM"](1.0) == pytest.approx(1.0 + np.e, rel=1e-15)


def test_generate_reads_the_command_line_when_given_no_arguments(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "_generated"
    folder.mkdir()
    monkeypatch.setattr(generate, "GENERATED_DIR", folder)
    monkeypatch.setattr(generate, "generated_sources", lambda: {"demo": "x = 1\n"})
    (folder / "demo.py").write_text("x = 1\n")
    monkeypatch.setattr("sys.argv", ["generate.py", "--check"])
    assert generate.main() == 0  # --check, from sys.argv, with nothing stale
    monkeypatch.setattr("sys.argv", ["generate.py"])
    (folder / "demo.py").write_text(f"# {generate.MARKER}\nx = 2\n")
    assert generate.main() == 0 and (folder / "demo.py").read_text() == "x = 1\n"
    assert capsys.readouterr().out == "wrote fgrpo_sim/theory/_generated/demo.py\n"


def test_pochhammer_form_leaves_a_gamma_without_a_numeric_partner():
    import sympy as sp

    x, y = sp.symbols("x y", positive=True)
    expr = sp.gamma(x) / sp.gamma(y)  # y - x is not a number: no rising factorial to write
    assert theory.focal.pochhammer_form(expr) == expr
    assert theory.focal.pochhammer_form(sp.gamma(x + 2) / sp.gamma(x)) == 1 / sp.RisingFactorial(x + 2, -2)
