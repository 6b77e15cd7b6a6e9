"""The smoothed success estimate in the focal weight: mu_alpha = (c + alpha) / (N + 2 alpha) (issue 49).

The paper weights a group with c correct rollouts out of N by (1 - c / N)^gamma. Some write-ups smooth the
estimate first (alpha = 1/2, Jeffreys-style), so the weight becomes

    g_alpha(c) = (1 - (c + alpha) / (N + 2 alpha))^gamma = ((N - c + alpha) / (N + 2 alpha))^gamma,

which is never 0 for alpha > 0 (an all-correct group keeps a little weight) and never 1 (an all-wrong one loses
a little). Two closed forms follow, both finite sums over c = 0..N:

  * the expected weight of a prompt with success probability mu, c ~ Binomial(N, mu):
        E[g_alpha] = sum_c C(N, c) mu^c (1 - mu)^(N - c) g_alpha(c);   at gamma = 1 it is (N (1 - mu) + alpha) / (N + 2 alpha);
  * the learning-rate multiplier at group size N, App. N's average taken over what a group of N carries:
    prompts uniform in mu (as App. N), so c is uniform on 0..N (the Beta integral C(N, c) B(c + 1, N - c + 1)
    = 1 / (N + 1), checked below), each group weighted by its own mean |GRPO advantage| 2 sqrt(c/N (1 - c/N))
    (`focal.symbolic_advantages` at mu = c / N) and scaled by its weight g_alpha(c):
        m_gamma(N, alpha) = sum_c sqrt(c (N - c)) g_alpha(c) / sum_c sqrt(c (N - c)),   c = 1..N-1.
    It is a Riemann sum of App. N's integral, so N -> infinity gives `lr_multiplier(gamma)` for every alpha
    (tests check it); at finite N it is what the trainer's groups actually get, alpha = 0 included.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from fgrpo_sim.theory.lambdified import closed_form, lambdified
from fgrpo_sim.validation import check_integer, check_range

#: the largest group size the sums accept (each is an array of N + 1 terms per point)
MAX_GROUP_SIZE = 2**20


@cache
def symbolic_smoothed_weight():
    """(c, alpha, g_alpha(c)) in sympy, with its rewrites checked: 1 - mu_alpha, and alpha = 0 is (1 - c/N)^gamma."""
    import sympy as sp

    from fgrpo_sim.theory.symbols import N, gamma

    c = sp.Symbol("c", nonnegative=True, integer=True)
    alpha = sp.Symbol("alpha", nonnegative=True)
    mu_alpha = (c + alpha) / (N + 2 * alpha)
    base = (N - c + alpha) / (N + 2 * alpha)
    assert sp.simplify(1 - mu_alpha - base) == 0
    assert sp.simplify(base.subs(alpha, 0) - (1 - c / N)) == 0
    return c, alpha, base**gamma


@cache
def symbolic_expected_weight():
    """E[g_alpha] under c ~ Binomial(N, mu) as a sympy Sum, and its gamma = 1 closed form (checked at N = 1..6)."""
    import sympy as sp

    from fgrpo_sim.theory.symbols import N, gamma, mu

    c, alpha, g = symbolic_smoothed_weight()
    pmf = sp.binomial(N, c) * mu**c * (1 - mu) ** (N - c)
    expected = sp.Sum(pmf * g, (c, 0, N))
    linear = (N * (1 - mu) + alpha) / (N + 2 * alpha)
    for n in range(1, 7):  # linearity of expectation, E[c] = N mu, checked term by term
        assert sp.simplify(expected.subs({gamma: 1, N: n}).doit() - linear.subs(N, n)) == 0
    return expected, linear


@cache
def symbolic_smoothed_lr_multiplier():
    """m_gamma(N, alpha) as a ratio of sympy Sums, with its two ingredients checked (see the module text)."""
    import sympy as sp

    from fgrpo_sim.theory.focal import _beta_integral, symbolic_advantages
    from fgrpo_sim.theory.symbols import N, mu

    c, alpha, g = symbolic_smoothed_weight()
    # c is uniform on 0..N when mu ~ U(0, 1): C(N, c) int_0^1 mu^c (1 - mu)^(N - c) dmu = 1 / (N + 1)
    uniform = sp.binomial(N, c) * _beta_integral(mu**c * (1 - mu) ** (N - c), mu)
    assert sp.simplify(sp.gammasimp(sp.combsimp(uniform.rewrite(sp.gamma))) - 1 / (N + 1)) == 0
    # the group's mean |advantage| at mu = c / N is 2 sqrt(c (N - c)) / N
    mean_abs = symbolic_advantages()[2].subs(mu, c / N)
    assert sp.simplify(mean_abs**2 - (2 * sp.sqrt(c * (N - c)) / N) ** 2) == 0
    weight = sp.sqrt(c * (N - c))
    return sp.Sum(weight * g, (c, 1, N - 1)) / sp.Sum(weight, (c, 1, N - 1))


@closed_form("smoothed_focal_weight")
def _derive_smoothed_weight():
    """lambdify of g_alpha(c; N, alpha, gamma): the one numeric closed form of this module (generated source:
    theory/_generated/smoothed_focal_weight.py)."""
    import sympy as sp

    from fgrpo_sim.theory.symbols import N, gamma

    c, alpha, g = symbolic_smoothed_weight()
    return sp.lambdify((c, N, alpha, gamma), g, modules=["scipy", "numpy"])


@cache
def _numeric_weight():
    return lambdified("smoothed_focal_weight")


def _terms(n, gamma, focal_smoothing):
    """(c, n, g_alpha(c)) broadcast with a trailing axis c = 0..max N; c is clipped to N (its terms masked by the caller)."""
    n = check_integer("n", n, 1, MAX_GROUP_SIZE)
    gamma = check_range("gamma", gamma, 0.0, np.inf, high_open=True)
    alpha = check_range("focal_smoothing", focal_smoothing, 0.0, np.inf, high_open=True)
    c = np.arange(int(np.max(n)) + 1, dtype=float)
    nn = np.asarray(n, dtype=float)[..., None]
    cc = np.minimum(c, nn)  # beyond N the base is negative: keep it in range, the mask zeroes those terms
    with np.errstate(divide="ignore"):
        g = _numeric_weight()(cc, nn, np.asarray(alpha)[..., None], np.asarray(gamma)[..., None])
    return c, nn, np.asarray(g, dtype=float)


def _scalar(out):
    out = np.asarray(out, dtype=float)
    return out if out.ndim else float(out)


def expected_smoothed_focal_weight(n, mu, gamma, focal_smoothing=0.0):
    """E[(1 - (c + alpha) / (N + 2 alpha))^gamma] for c ~ Binomial(N, mu); arrays broadcast.

    n: group size N in [1, 2^20]; mu in [0, 1]; gamma >= 0; focal_smoothing alpha >= 0 (0: the paper's c / N).
    """
    from scipy.special import gammaln, xlog1py, xlogy  # not scipy.stats: its import alone takes seconds

    mu = check_range("mu", mu, 0.0, 1.0)
    c, nn, g = _terms(n, gamma, focal_smoothing)
    m = np.asarray(mu, dtype=float)[..., None]
    cc = np.minimum(c, nn)
    # the binomial pmf in logs (no overflow of C(N, c) at large N); xlogy gives 0 log 0 = 0 at mu = 0 or 1
    pmf = np.exp(gammaln(nn + 1) - gammaln(cc + 1) - gammaln(nn - cc + 1) + xlogy(cc, m) + xlog1py(nn - cc, -m))
    return _scalar(np.sum(np.where(c <= nn, pmf * g, 0.0), axis=-1))


def smoothed_lr_multiplier(n, gamma, focal_smoothing=0.0):
    """m_gamma(N, alpha): App. N's learning-rate factor at group size N with the smoothed weight (module text).

    n in [2, 2^20] (a group of one has no advantage); gamma >= 0; focal_smoothing alpha >= 0.
    Large N gives `lr_multiplier(gamma)`; gamma = 0 gives 1.
    """
    check_integer("n", n, 2, MAX_GROUP_SIZE)
    c, nn, g = _terms(n, gamma, focal_smoothing)
    weight = np.where((c >= 1) & (c <= nn - 1), np.sqrt(c * np.maximum(nn - c, 0.0)), 0.0)
    return _scalar(np.sum(weight * g, axis=-1) / np.sum(weight, axis=-1))


__all__ = ["expected_smoothed_focal_weight", "smoothed_lr_multiplier", "MAX_GROUP_SIZE"]
