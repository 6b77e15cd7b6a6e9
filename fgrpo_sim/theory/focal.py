"""Focal weighting (paper Sec. 4) and the matched learning-rate multiplier m_gamma (App. N).

F-GRPO scales every advantage of a prompt group by g = (1 - mu_hat)^gamma, mu_hat = the group's success
rate. The App. N control lowers the learning rate instead, by the average of g over prompts, each prompt
weighted by how much gradient it carries: with binary rewards the mean |GRPO advantage| of a group with
success rate mu is mu |A+| + (1 - mu) |A-| = 2 sqrt(mu (1 - mu)) (derived below), so

    m_gamma = int_0^1 (1 - mu)^gamma sqrt(mu(1 - mu)) dmu / int_0^1 sqrt(mu(1 - mu)) dmu
            = B(3/2, gamma + 3/2) / B(3/2, 3/2),     m_0 = 1, m_0.5 = 0.679.

The paper's prose says "proportional to mu(1 - mu)" but its number 0.679 needs the square root; the
variance weight mu(1 - mu) is offered as `weight="variance"` (it gives 6 / ((gamma + 2)(gamma + 3)),
0.686 at gamma = 0.5) so the two readings can be compared.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from fgrpo_sim.validation import check_choice, check_range
from fgrpo_sim.theory.lambdified import closed_form, lambdified

LR_WEIGHTS = ("mean_abs_advantage", "variance")


def focal_weight(mu_hat, gamma):
    """g = (1 - mu_hat)^gamma, with 0^0 = 1 (gamma = 0 is plain GRPO). mu_hat in [0, 1], gamma >= 0."""
    mu_hat = check_range("mu_hat", mu_hat, 0.0, 1.0)
    gamma = check_range("gamma", gamma, 0.0, np.inf, high_open=True)
    out = np.power(1.0 - mu_hat, gamma)
    return out if out.ndim else float(out)


@cache
def symbolic_advantages():
    """(|A+|, |A-|, mean |A|) of a binary-reward group with success rate mu (population std), in sympy."""
    import sympy as sp

    from fgrpo_sim.theory.symbols import mu

    # Rewards 1 (prob. mu) and 0: mean mu, population std sqrt(mu(1 - mu)).
    std = sp.sqrt(mu * (1 - mu))
    a_pos = sp.sqrt((1 - mu) / mu)
    a_neg = sp.sqrt(mu / (1 - mu))
    nu = sp.Symbol("nu", positive=True)  # 1 - mu, named so sympy knows it is positive
    for printed, definition in ((a_pos, (1 - mu) / std), (a_neg, mu / std)):
        assert sp.simplify((printed**2 - definition**2).subs(mu, 1 - nu)) == 0
    mean_abs = sp.simplify((mu * a_pos + (1 - mu) * a_neg).subs(1 - mu, nu))
    assert sp.simplify(mean_abs - 2 * sp.sqrt(mu * nu)) == 0
    return a_pos, a_neg, (2 * sp.sqrt(mu * (1 - mu)))


def _beta_integral(integrand, var):
    """int_0^1 c var^(a-1) (1-var)^(b-1) dvar = c B(a, b), with c, a, b read off the integrand's factors."""
    import sympy as sp

    integrand = sp.powsimp(sp.expand_power_base(integrand, force=True), force=True)
    const, rest = integrand.as_independent(var, as_Add=False)
    a = b = sp.Integer(1)
    for factor in sp.Mul.make_args(rest):
        base, exponent = factor.as_base_exp()
        if base == var:
            a += exponent
        elif sp.expand(base - (1 - var)) == 0:
            b += exponent
        else:
            raise ValueError(f"integrand factor {factor} is not of Beta form")
    return const * sp.beta(a, b)


@cache
def symbolic_lr_multiplier(weight: str = "mean_abs_advantage"):
    """m_gamma in closed form: the focal factor averaged against the prompt weight, as a ratio of Beta integrals."""
    import sympy as sp

    from fgrpo_sim.theory.symbols import gamma, mu

    check_choice("weight", weight, LR_WEIGHTS)
    w = symbolic_advantages()[2] if weight == "mean_abs_advantage" else mu * (1 - mu)
    ratio = _beta_integral((1 - mu) ** gamma * w, mu) / _beta_integral(w, mu)
    return sp.gammasimp(sp.expand_func(ratio))


def pochhammer_form(expr):
    """`expr` with every ratio Gamma(x + a) / Gamma(x + b) (b - a a number) written 1 / rf(x + a, b - a).

    rf(z, m) = Gamma(z + m) / Gamma(z) is the rising factorial (Pochhammer symbol); scipy.special.poch
    evaluates it to full precision at any z, where the difference of two log-gammas of size ~gamma log gamma
    cancels all digits from gamma ~ 1e12 on. The rewrite is checked symbolically.
    """
    import sympy as sp

    num, den = sp.fraction(sp.together(expr))
    den_factors = list(sp.Mul.make_args(den))
    new_num = []
    for factor in sp.Mul.make_args(num):
        partner = None
        if isinstance(factor, sp.gamma):
            partner = next((d for d in den_factors if isinstance(d, sp.gamma)
                            and (d.args[0] - factor.args[0]).is_number), None)
        if partner is None:
            new_num.append(factor)
            continue
        den_factors.remove(partner)
        new_num.append(1 / sp.RisingFactorial(factor.args[0], partner.args[0] - factor.args[0]))
    rewritten = sp.Mul(*new_num) / sp.Mul(*den_factors)
    assert sp.simplify(sp.gammasimp(sp.expand_func(rewritten) - expr)) == 0
    return rewritten


def _derive_lr_multiplier(weight: str):
    import sympy as sp

    from fgrpo_sim.theory.symbols import gamma

    return sp.lambdify(gamma, pochhammer_form(symbolic_lr_multiplier(weight)), modules=["scipy", "numpy"])


@closed_form("lr_multiplier_mean_abs_advantage")
def _derive_lr_multiplier_mean_abs_advantage():
    return _derive_lr_multiplier("mean_abs_advantage")


@closed_form("lr_multiplier_variance")
def _derive_lr_multiplier_variance():
    return _derive_lr_multiplier("variance")


@cache
def _numeric_lr_multiplier(weight: str):
    return lambdified(f"lr_multiplier_{weight}")


def lr_multiplier(gamma, weight: str = "mean_abs_advantage"):
    """The learning-rate factor m_gamma that matches focal weighting's average scale (App. N).

    gamma >= 0 (arrays broadcast), any finite float: m_gamma ~ (4 / sqrt(pi)) gamma^(-3/2) for large
    gamma, evaluated without cancellation. It returns 0 once the value falls below float64's smallest normal
    number (about 2.2e-308; the evaluation's denominator overflows there): beyond gamma ~ 2e205 for
    "mean_abs_advantage" and ~ 1e154 for "variance". weight:
    "mean_abs_advantage" (the paper's number, m_0.5 = 0.679) or "variance" (the prose's mu(1 - mu)
    reading, m_0.5 = 0.686).
    """
    check_choice("weight", weight, LR_WEIGHTS)
    gamma = check_range("gamma", gamma, 0.0, np.inf, high_open=True)
    with np.errstate(over="ignore", under="ignore"):  # an overflowing denominator is a true 0, not an error
        out = np.asarray(_numeric_lr_multiplier(weight)(gamma), dtype=float)
    out = np.broadcast_to(out, gamma.shape).copy() if out.shape != gamma.shape else out
    return out if out.ndim else float(out)


def focal_advantage_magnitudes(mu, gamma):
    """(g |A+|, g |A-|) of a binary-reward group with success rate mu in (0, 1) (paper Fig. 4)."""
    mu = check_range("mu", mu, 0.0, 1.0, low_open=True, high_open=True)
    g = np.asarray(focal_weight(mu, gamma))
    return g * np.sqrt((1.0 - mu) / mu), g * np.sqrt(mu / (1.0 - mu))
