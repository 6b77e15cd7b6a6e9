"""Focal weight and the learning-rate multiplier m_gamma (checked against quadrature and the paper's 0.679)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad

from fgrpo_sim.theory import focal_advantage_magnitudes, focal_weight, lr_multiplier


def test_focal_weight_values():
    assert focal_weight(0.25, 0.5) == pytest.approx(math.sqrt(0.75))
    assert focal_weight(1.0, 0.0) == 1.0  # gamma = 0 is plain GRPO, even for an all-correct group
    assert focal_weight(1.0, 1.0) == 0.0
    out = focal_weight(np.array([[0.0], [0.5]]), np.array([0.0, 1.0, 2.0]))
    assert out.shape == (2, 3) and np.allclose(out[1], [1.0, 0.5, 0.25])


@pytest.mark.parametrize("args, fragment", [((1.2, 0.5), "mu_hat must be in [0, 1]"), ((0.5, -1.0), "gamma must be in [0, inf)")])
def test_focal_weight_validates(args, fragment):
    with pytest.raises(ValueError) as info:
        focal_weight(*args)
    assert fragment in str(info.value)


def test_paper_values():
    assert lr_multiplier(0.0) == pytest.approx(1.0, rel=1e-12)
    assert round(lr_multiplier(0.5), 3) == 0.679
    assert lr_multiplier(0.5) == pytest.approx(32 / (15 * math.pi), rel=1e-12)
    assert lr_multiplier(1.0) == pytest.approx(0.5, rel=1e-12)
    assert round(lr_multiplier(0.5, weight="variance"), 3) == 0.686  # the prose's mu(1 - mu) reading differs


@settings(max_examples=25, deadline=None)
@given(gamma=st.floats(0.0, 8.0))
def test_matches_numerical_quadrature(gamma):
    for weight, w in [("mean_abs_advantage", lambda m: 2 * math.sqrt(m * (1 - m))), ("variance", lambda m: m * (1 - m))]:
        num = quad(lambda m: (1 - m) ** gamma * w(m), 0, 1, epsabs=0, epsrel=1e-12)[0]
        den = quad(w, 0, 1, epsabs=0, epsrel=1e-12)[0]
        assert lr_multiplier(gamma, weight=weight) == pytest.approx(num / den, rel=1e-8)


def test_lr_multiplier_arrays_large_gamma_and_validation():
    gammas = np.array([0.0, 0.5, 1.0, 2.0, 1e6])
    m = lr_multiplier(gammas)
    assert m.shape == (5,) and np.all(np.diff(m) < 0) and 0 < m[-1] < 1e-8
    with pytest.raises(ValueError, match=r"gamma must be in \[0, inf\)"):
        lr_multiplier(-0.5)
    with pytest.raises(ValueError, match="weight must be one of"):
        lr_multiplier(0.5, weight="sqrt")


def test_fig4_magnitudes():
    pos, neg = focal_advantage_magnitudes(np.array([0.2, 0.5, 0.8]), 1.0)
    assert np.allclose(pos, [0.8 * 2.0, 0.5, 0.2 * 0.5])
    assert np.allclose(neg, [0.8 * 0.5, 0.5, 0.2 * 2.0])
    with pytest.raises(ValueError, match=r"mu must be in \(0, 1\)"):
        focal_advantage_magnitudes(0.0, 1.0)


@pytest.mark.parametrize("weight", ["mean_abs_advantage", "variance"])
def test_lr_multiplier_is_right_for_every_accepted_gamma(weight):
    """The lambdified (Pochhammer) form against the sympy derivation evaluated by mpmath at 420 digits,
    from gamma = 0 to the largest float: no cancellation (gamma = 1e17 used to give 2.26 instead of 7e-26)."""
    import mpmath
    import sympy as sp

    from fgrpo_sim.theory.focal import symbolic_lr_multiplier
    from fgrpo_sim.theory.symbols import gamma

    g_ = sp.Symbol("g_", nonnegative=True)  # the symbol "gamma" would shadow mpmath's gamma function
    exact = sp.lambdify(g_, symbolic_lr_multiplier(weight).subs(gamma, g_), modules="mpmath")
    gammas = [0.0, 1e-300, 0.5, 1.0, 7.25, 1e3, 1e12, 1e17, 3e50, 1e100, 1e150, 1e215, 1e250, 1e300, 1e308,
              np.finfo(float).max]
    with mpmath.workdps(420):  # enough digits that gamma + 3/2 keeps its 3/2 at gamma = 1.8e308
        reference = [float(exact(mpmath.mpf(g))) for g in gammas]
    got = lr_multiplier(np.array(gammas), weight=weight)
    for g, m, ref in zip(gammas, got, reference):
        assert np.isfinite(m)
        if abs(ref) < np.finfo(float).tiny:  # the true value underflows: 0 or a subnormal neighbour
            assert abs(m - ref) <= 1e-300, g
        else:
            assert m == pytest.approx(ref, rel=1e-12), g
    assert lr_multiplier(1e17) == pytest.approx(7.136496464611084e-26, rel=1e-12)
