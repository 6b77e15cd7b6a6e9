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
    """The module text after its docstring. (Not compared with the committed files here: a mutation tool rewrites
    those; tests/test_theory_generated.py compares them.)"""
    return text.split('\n"""\n', 1)[1]


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


# ---- categorical policies -------------------------------------------------------------------------------------


def test_a_policy_of_one_action_is_a_policy():
    # the only action is correct and drawn twice: nothing moves (S_R = R_c p = R_c)
    assert theory.first_order_mass_change([1.0], [True], [2]) == (0.0, 0.0)
    assert theory.exact_mass_change([1.0], [True], [2]) == (0.0, 0.0)


def test_a_policy_summing_within_the_tolerance_is_normalised():
    near = P * (1 + 5e-7)  # sums to 1 + 5e-7: accepted (tolerance 1e-6) and divided by its sum
    for f in (theory.first_order_mass_change, theory.exact_mass_change):
        assert f(near, CORRECT, [1, 0, 2], 1.0, -1.0, 0.5) == pytest.approx(
            f(P, CORRECT, [1, 0, 2], 1.0, -1.0, 0.5), rel=1e-12, abs=0)


@pytest.mark.parametrize("call, message", [
    # the sum named is the row farthest from 1: 1.5 (0.5 away), not 0.9 (farthest from 2)
    (lambda: theory.exact_mass_change([[0.75, 0.75], [0.45, 0.45]], [True, False], [1, 1]), r"got a sum of 1\.5$"),
    (lambda: theory.first_order_mass_change(P, [0, 2, 1], [1, 1, 1]),
     r"^correct must be a boolean mask \(True = correct action\)$"),
    (lambda: theory.first_order_mass_change(P, [True, False], [1, 1, 1]),
     r"^correct and counts must have the shape of p \(one entry per action\)$"),
    (lambda: theory.lr_multiplier(np.inf), r"^gamma must be in \[0, inf\), got inf$"),
    (lambda: lam.lambdified("nope"),
     rf"^name must be a registered closed form \({', '.join(sorted(lam.DERIVATIONS))}\), got 'nope'$"),
    (lambda: theory.peak_group_size(0.5, 0.1, one_minus_mu=0.5), r"^give either mu or one_minus_mu, not both$"),
    (lambda: theory.tail_miss_probability(4, 0.3, 0.5), r"^tau must be in \[0, mu\], got 0\.5 with mu = 0\.3$"),
])
def test_more_refusals_name_the_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_beta_integral_reads_its_factors_and_names_a_foreign_one():
    import sympy as sp

    from fgrpo_sim.theory.focal import _beta_integral

    v = sp.Symbol("v", positive=True)
    k = sp.Symbol("k", positive=True)  # a constant factor (a number would be distributed over 1 - v by sympy)
    assert _beta_integral(k * v**2 * (1 - v), v) == k * sp.beta(3, 2)
    with pytest.raises(ValueError, match=r"^integrand factor exp\(v\) is not of Beta form$"):
        _beta_integral(v * sp.exp(v), v)


# ---- float errors and the caller's np.errstate ------------------------------------------------------------------


def test_peak_group_size_raises_no_float_error_under_a_callers_raise():
    quiet = theory.peak_group_size(np.array([1e-6, 0.5]), 1e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):  # x^N underflows while searching N* ~ 1e7: a true 0, not an error
            loud = theory.peak_group_size(np.array([1e-6, 0.5]), 1e-7)
    assert loud.n_star.tolist() == quiet.n_star.tolist()
    # N* maximises Pr(B) among its neighbours
    for i, (mu, n) in enumerate(zip([1e-6, 0.5], loud.n_star)):
        around = theory.tail_miss_probability(np.array([n - 1, n, n + 1]), mu, 1e-7)
        assert around[1] >= around[0] and around[1] >= around[2]


def test_a_subnormal_mu_is_refused_without_an_overflow_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the doubling search overflows to inf before the refusal
        with pytest.raises(ValueError, match=r"^mu and tau too small: Pr\(B\) peaks near N = "):
            theory.peak_group_size(1e-310, 1e-311)  # the root lies beyond float64's range


def test_peak_group_size_returns_its_inputs():
    one = theory.peak_group_size(0.3, 0.01)
    assert (one.mu, one.tau, one.rho) == (0.3, 0.01, pytest.approx(0.01 / 0.3, rel=1e-15))
    many = theory.peak_group_size(np.array([0.3, 0.6]), 0.01)
    assert many.mu.tolist() == [0.3, 0.6] and many.tau.tolist() == [0.01, 0.01]


def test_activity_probability_keeps_the_digits_of_one_minus_mu():
    import mpmath

    comp, n = 1e-12, 1000
    with mpmath.workdps(60):
        c = mpmath.mpf(comp)
        exact = 1 - (1 - c) ** n - c**n
    got = theory.activity_probability(n, 1.0 - comp, one_minus_mu=comp)
    assert got == pytest.approx(float(exact), rel=1e-12, abs=0)  # about 1e-9: no absolute slack


# exact ties: mu and tau dyadic where Pr(B)(3) = Pr(B)(4) exactly (found by solving the tie for 3 and 4 in
# dyadic rationals); N* is the smaller of the two, as documented. 60-digit arithmetic returned rounding noise for
# the sign of the difference, and N* = 4 at the first two points; exact rationals now decide.
@pytest.mark.parametrize("mu, tau", [(16111 / 16384, 7925 / 32768), (8471 / 32768, 7925 / 32768), (23 / 32, 5 / 32)])
def test_an_exact_tie_goes_to_the_smaller_group_size(mu, tau):
    from fractions import Fraction

    m, t = Fraction(mu), Fraction(tau)

    def tail(n):
        return (1 - t) ** n - (m - t) ** n - (1 - m) ** n

    assert tail(3) == tail(4) > max(tail(2), tail(5))
    peak = theory.peak_group_size(mu, tau)
    assert peak.n_star == 3 and 3 < peak.n_continuous < 4
    assert theory.peak_group_size(None, tau, one_minus_mu=1 - mu).n_star == 3  # 1 - mu is exact here


@pytest.mark.parametrize("mu, tau", [(0.3, 0.1), (0.7, 0.01), (0.05, 0.001), (0.9, 0.3)])
def test_the_exact_step_sign_is_the_sign_of_the_difference_of_two_tail_misses(mu, tau):
    from fractions import Fraction

    from fgrpo_sim.theory.peak import _exact_step_sign

    m, t = Fraction(mu), Fraction(tau)

    def tail(n):  # Pr(B)(n) from its definition, in exact rationals
        return (1 - t) ** n - (m - t) ** n - (1 - m) ** n

    n_star = theory.peak_group_size(mu, tau).n_star
    for n in sorted({1, 2, max(n_star - 1, 1), n_star, n_star + 1, 3 * n_star}):
        want = (tail(n + 1) > tail(n)) - (tail(n + 1) < tail(n))
        assert _exact_step_sign(n, mu, tau, 1.0 - mu, False) == want, n
        assert _exact_step_sign(n, mu, tau, float(1 - m), True) == want, n  # 1 - mu given
