"""The lambdified numbers equal the sympy expressions they come from, at random rational points."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from fgrpo_sim.theory import derivations, first_order_mass_change, lr_multiplier, tail_miss_probability
from fgrpo_sim.theory.categorical import _aggregate_symbols, symbolic_mass_changes
from fgrpo_sim.theory.peak import _numeric_scaled_slope, symbolic_slope
from fgrpo_sim.theory.symbols import N, N_real, R_c, R_w, eta, gamma, mu, tau
from fgrpo_sim.theory.tail_miss import symbolic_tail_miss


def _rational(rng, lo=0, hi=1, den=997):
    return sp.Rational(rng.randint(int(lo * den) + 1, int(hi * den) - 1), den)


def _points(count=25, seed=11):
    rng = random.Random(seed)
    for _ in range(count):
        m = _rational(rng)
        t = m * _rational(rng)
        yield rng.randint(1, 300), m, t


def test_tail_miss_equals_exact_sympy_value():
    expr = symbolic_tail_miss()
    for n, m, t in _points():
        exact = expr.subs({N: n, mu: m, tau: t})  # exact rational arithmetic
        got = tail_miss_probability(n, float(m), float(t))
        # float(m), float(t) perturb the inputs by ~1e-16 relative; the condition number is modest here
        assert got == pytest.approx(float(exact), rel=1e-11, abs=1e-300), (n, m, t)


def test_scaled_slope_equals_sympy_derivative():
    slope = _numeric_scaled_slope()
    expr = symbolic_slope() / (1 - tau) ** N_real
    rng = random.Random(12)
    for _, m, t in _points(15):
        n = sp.Rational(rng.randint(10, 5000), 100)
        exact = sp.N(expr.subs({N_real: n, mu: m, tau: t}), 30)
        assert slope(float(n), float(m), float(t)) == pytest.approx(float(exact), rel=1e-9, abs=1e-14)


def test_lr_multiplier_equals_symbolic_gamma_ratio():
    m_gamma = derivations()["lr_multiplier"].rhs
    for g in [sp.Rational(0), sp.Rational(1, 3), sp.Rational(1, 2), sp.Rational(7, 4), sp.Rational(25, 2)]:
        assert lr_multiplier(float(g)) == pytest.approx(float(sp.N(m_gamma.subs(gamma, g), 30)), rel=1e-12)


def test_first_order_mass_change_equals_sympy_at_rational_policy():
    rng = random.Random(13)
    weights = [Fraction(rng.randint(1, 20)) for _ in range(6)]
    total = sum(weights)
    p = [w / total for w in weights]
    correct = [True, True, True, False, False, False]
    counts = [2, 0, 1, 0, 3, 0]
    s = _aggregate_symbols()
    sampled = [c > 0 for c in counts]
    sym = lambda f: sp.Rational(f.numerator, f.denominator)  # noqa: E731
    values = {
        s["N"]: sum(counts),
        s["Q_pos"]: sum(sym(pi) for pi, c in zip(p, correct) if c),
        s["Q_upos"]: sum(sym(pi) for pi, c, u in zip(p, correct, sampled) if c and not u),
        s["A2"]: sum(sym(pi) ** 2 for pi, c, u in zip(p, correct, sampled) if c and u),
        s["B2"]: sum(sym(pi) ** 2 for pi, c, u in zip(p, correct, sampled) if not c and u),
        s["U_pos2"]: sum(sym(pi) ** 2 for pi, c, u in zip(p, correct, sampled) if c and not u),
        s["U_neg2"]: sum(sym(pi) ** 2 for pi, c, u in zip(p, correct, sampled) if not c and not u),
        R_c: 1, R_w: -1, eta: sp.Rational(1, 3),
    }
    values[s["S_R"]] = sum(sym(pi) * (1 if c else -1) for pi, c, u in zip(p, correct, sampled) if u)
    exact = [float(e.subs(values)) for e in symbolic_mass_changes()]
    got = first_order_mass_change(np.array([float(x) for x in p]), correct, counts, 1.0, -1.0, 1 / 3)
    assert np.allclose(got, exact, rtol=1e-13)


def test_derivations_cover_the_issue_and_print_latex():
    items = derivations()
    for name in ["tail_miss", "activity", "tail_miss_slope", "tail_miss_at_N1", "tail_miss_limit", "lr_multiplier",
                 "dQ_pos", "dQ_upos", "inclusion_probability"]:
        assert name in items
        assert items[name].latex() and items[name].text()
    assert items["tail_miss_at_N1"].rhs == 0
    assert items["tail_miss_limit"].rhs == 0
    assert items["dQ_pos_minus_printed"].rhs == 0 and items["dQ_upos_minus_printed"].rhs == 0
    assert items["lr_multiplier_half"].rhs == sp.Rational(32, 15) / sp.pi
    # Lemma 3.1 exactly as printed in the paper
    printed = (1 - tau) ** N - (mu - tau) ** N - (1 - mu) ** N
    assert sp.simplify(items["tail_miss"].rhs - printed) == 0
    assert "\\left(1 - \\tau\\right)^{N}" in items["tail_miss"].latex()
