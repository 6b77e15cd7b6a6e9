"""The group size N* that maximises the tail-miss probability Pr(B) (paper Sec. 3.1, Fig. 3).

The paper finds the peak numerically; here it is located from the derivative. sympy differentiates Pr(B)
in a real N and the result, divided by (1 - tau)^N > 0, is

    h(N) = log(1 - tau) - x^N log(mu - tau) - y^N log(1 - mu),  x = (mu - tau)/(1 - tau), y = (1 - mu)/(1 - tau).

For 0 < tau < mu < 1 both x and y lie in (0, 1) and both logs are negative, so h is strictly decreasing
in N, positive at N = 1 (h(1) = [b log(a/b) + c log(a/c)] / a with a = b + c) and tends to log(1 - tau) < 0.
Pr(B) is therefore strictly unimodal in real N: the continuous maximiser is the single root of h (found by
bracketing and bisection, vectorised), and the integer argmax is one of its two neighbouring integers.
They are told apart by the sign of Pr(B)(n + 1) - Pr(B)(n), computed as a sum of positive terms (never as
the difference of two nearly equal probabilities, which float64 cannot resolve once N* passes ~1e6); where
that sign is within its error bound of 0, exact rationals (n <= 4096; 60-digit mpmath beyond) decide. h is
evaluated in the log rates of x and y with expm1 of the rate nearer 0, so that no two of its terms cancel; near mu = 1,
`one_minus_mu` carries the digits of 1 - mu.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from fgrpo_sim.theory.tail_miss import tail_miss_probability
from fgrpo_sim.validation import _fmt, broadcast_named, check_range
from fgrpo_sim.theory.lambdified import closed_form, lambdified


MAX_PEAK_GROUP_SIZE = 2.0**53  # integers above this are not exact in float64, and N* must be one


@dataclass(frozen=True)
class PeakGroupSize:
    """Where Pr(B) peaks for success rate `mu` and rare mass `tau` (floats, or arrays for array input).

    n_star: the integer group size maximising Pr(B) (smallest one on ties); probability: Pr(B) there;
    n_continuous: the maximiser over real N >= 1 (nan where Pr(B) is identically 0: tau = mu or mu = 1).
    n_star is the true argmax for the given float inputs: neighbouring integers are compared by the sign of
    their difference, in float64 where its error bound decides it and exactly (60-digit mpmath above N = 4096)
    where it does not.
    """

    mu: float | np.ndarray
    tau: float | np.ndarray
    n_star: int | np.ndarray
    probability: float | np.ndarray
    n_continuous: float | np.ndarray

    @property
    def rho(self):
        return np.asarray(self.tau) / np.asarray(self.mu) if np.ndim(self.mu) else self.tau / self.mu


@cache
def symbolic_slope():
    """dPr(B)/dN (N real) as a sympy expression."""
    import sympy as sp

    from fgrpo_sim.theory.symbols import N, N_real
    from fgrpo_sim.theory.tail_miss import symbolic_tail_miss

    return sp.diff(symbolic_tail_miss().subs(N, N_real), N_real)


@cache
def _log_rate_symbols():
    import sympy as sp

    # log(1 - tau), log x, log y: evaluated apart (log1p where the argument is near 1) so each keeps its digits
    return sp.symbols("L_a L_x L_y", negative=True)


@cache
def symbolic_scaled_slope():
    """h(N) = dPr(B)/dN / (1 - tau)^N in terms of x, y; checked against the derivative in sympy."""
    import sympy as sp
    from sympy.codegen.cfunctions import log1p

    from fgrpo_sim.theory.symbols import N_real, mu, tau

    x = (mu - tau) / (1 - tau)
    y = (1 - mu) / (1 - tau)
    scaled = log1p(-tau) - sp.exp(N_real * sp.log(x)) * sp.log(mu - tau) - sp.exp(N_real * sp.log(y)) * log1p(-mu)
    check = sp.expand_func(scaled) * (1 - tau) ** N_real - symbolic_slope()
    check = sp.powsimp(sp.expand_power_base(sp.expand(sp.expand_log(check.rewrite(sp.exp), force=True)), force=True), force=True)
    assert sp.simplify(check) == 0, "scaled slope does not match dPr(B)/dN"
    return scaled


def _agree_at_rational_points(expr, reference, subs_of_point) -> None:
    """expr == reference to 40 digits at a few exact points (0 < tau < mu < 1, real N): a numeric identity
    check where sympy's simplify would have to prove a log identity."""
    import sympy as sp

    from fgrpo_sim.theory.symbols import N_real, mu, tau

    for n, m, t in [(sp.Rational(7, 2), sp.Rational(1, 2), sp.Rational(1, 20)), (sp.Integer(13), sp.Rational(3, 10),
                    sp.Rational(3, 1000)), (sp.Rational(101, 10), sp.Rational(9, 10), sp.Rational(2, 5))]:
        point = {N_real: n, mu: m, tau: t}
        diff = sp.N(expr.subs(subs_of_point(point)).subs(point) - reference.subs(point), 50)
        assert abs(diff) < sp.Float("1e-40"), "rearranged expression does not match its derivation"


def _log_rate_values(point):
    import sympy as sp
    from sympy.codegen.cfunctions import log1p

    from fgrpo_sim.theory.symbols import mu, tau

    log_a, log_x, log_y = _log_rate_symbols()
    return {log_a: sp.expand_func(log1p(-tau)), log_x: sp.log((mu - tau) / (1 - tau)),
            log_y: sp.log((1 - mu) / (1 - tau))}


@cache
def _numeric_scaled_slope_in_log_rates():
    return lambdified("scaled_slope")


@closed_form("scaled_slope")
def _derive_scaled_slope_in_log_rates():
    """h rearranged so no term cancels against another: with log(mu - tau) = L_a + L_x and
    log(1 - mu) = L_a + L_y, h = -L_a expm1(N L_x) - x^N L_x - y^N (L_a + L_y). The plain form subtracts
    log(1 - tau) from x^N log(mu - tau), two numbers that agree to ~9 digits when 1 - mu ~ 1e-9."""
    import sympy as sp
    from sympy.codegen.cfunctions import expm1

    from fgrpo_sim.theory.symbols import N_real

    log_a, log_x, log_y = _log_rate_symbols()
    expr = -log_a * expm1(N_real * log_x) - sp.exp(N_real * log_x) * log_x - sp.exp(N_real * log_y) * (log_a + log_y)
    _agree_at_rational_points(sp.expand_func(expr), sp.expand_func(symbolic_scaled_slope()), _log_rate_values)
    return sp.lambdify((N_real, log_a, log_x, log_y), expr, modules="numpy")


@cache
def _numeric_step_sign_in_log_rates():
    return lambdified("step_sign")


@closed_form("step_sign")
def _derive_step_sign_in_log_rates():
    """g(N) = [Pr(B)(N + 1) - Pr(B)(N)] / (1 - tau)^N = -tau + (1 - mu + tau) x^N + mu y^N; its sign says
    whether N + 1 beats N. Each term is positive or exact, so its error is a few ulp of the largest term."""
    import sympy as sp

    from fgrpo_sim.theory.symbols import N_real, mu, tau
    from fgrpo_sim.theory.tail_miss import symbolic_tail_miss
    from fgrpo_sim.theory.symbols import N

    log_a, log_x, log_y = _log_rate_symbols()
    # 1 - mu as a symbol of its own: mu and 1 - mu each come in with full digits (neither is 1 minus the other)
    comp = sp.Symbol("c", positive=True)
    expr = -tau + (comp + tau) * sp.exp(N_real * log_x) + mu * sp.exp(N_real * log_y)
    tail = symbolic_tail_miss().subs(N, N_real)
    reference = (tail.subs(N_real, N_real + 1) - tail) / (1 - tau) ** N_real
    _agree_at_rational_points(expr, reference, lambda point: {**_log_rate_values(point), comp: 1 - mu})
    return sp.lambdify((N_real, mu, tau, comp, log_x, log_y), expr, modules="numpy")


def _log_rates(mu, tau, comp):
    """log(1 - tau), log x, log y with x = (mu - tau)/(1 - tau) and y = (1 - mu)/(1 - tau) = 1 - x, where
    comp = 1 - mu is given apart (exact near mu = 1): log of the smaller of x, y and log1p(-smaller) of the
    larger, so x^N keeps its precision even when N ~ 1e9 and x is within 1e-9 of 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = 1.0 - tau
        x, y = (mu - tau) / keep, comp / keep
        log_x = np.where(x <= 0.5, np.log(x), np.log1p(-y))
        log_y = np.where(y <= 0.5, np.log(y), np.log1p(-x))
        return np.log1p(-tau), log_x, log_y


def _slope_rates(mu, tau, comp):
    """log(1 - tau) and the log rates of x and y, the one nearer 0 first. h = L_a - x^N (L_a + L_x) - y^N (L_a + L_y)
    is symmetric in (L_x, L_y), and its rearranged form takes expm1 of N times its second argument: that one must be
    the rate near 0 (x near 1 when mu -> 1; y near 1 when mu is small), else L_a and y^N (L_a + L_y) cancel and the
    root loses about log10(1 / (1 - tau / mu)) digits (N* was 2.6e6 below its 1.6e11 at mu = 6.1e-12, tau = mu
    (1 - 3e-12))."""
    log_a, log_x, log_y = _log_rates(mu, tau, comp)
    return log_a, np.maximum(log_x, log_y), np.minimum(log_x, log_y)


@cache
def _numeric_scaled_slope():
    """h(N, mu, tau[, 1 - mu]) in numpy (see `_numeric_scaled_slope_in_log_rates`)."""
    h = _numeric_scaled_slope_in_log_rates()

    def slope(n, mu, tau, comp=None):
        comp = 1.0 - np.asarray(mu, dtype=float) if comp is None else comp
        with np.errstate(invalid="ignore"):
            return h(n, *_slope_rates(mu, tau, comp))

    return slope


def _continuous_peak(mu, tau, comp):
    """Root of the scaled slope for non-degenerate 1-D arrays mu, tau, comp = 1 - mu (0 < tau < mu < 1)."""
    h = _numeric_scaled_slope_in_log_rates()
    rates = _slope_rates(mu, tau, comp)
    lo = np.ones_like(mu)
    hi = np.full_like(mu, 2.0)
    with np.errstate(under="ignore", over="ignore"):
        for _ in range(1100):  # doubling: the root lies below 2^1100 for any tau >= 1e-300
            rising = h(hi, *rates) > 0
            if not rising.any():
                break
            lo = np.where(rising, hi, lo)
            hi = np.where(rising, 2.0 * hi, hi)
        for _ in range(64):  # bisection: [lo, hi] spans a factor <= 2, so 64 halvings reach float precision
            mid = 0.5 * (lo + hi)
            rising = h(mid, *rates) > 0
            lo = np.where(rising, mid, lo)
            hi = np.where(rising, hi, mid)
    return 0.5 * (lo + hi)


def _step_gains(n, mu, tau, comp, comp_given):
    """sign of Pr(B)(n + 1) - Pr(B)(n) for 1-D arrays: float64 where its error bound leaves no doubt,
    exact arithmetic (of the same float inputs; 60-digit mpmath above n = 4096) where they are too close to call."""
    g = _numeric_step_sign_in_log_rates()
    _, log_x, log_y = _log_rates(mu, tau, comp)
    with np.errstate(under="ignore"):
        xn, yn = np.exp(n * log_x), np.exp(n * log_y)
        value = g(n, mu, tau, comp, log_x, log_y)
        # exp(n L) is off by about |n L| + 1 ulp (L itself carries a relative ulp); 64x that is a safe margin
        bound = 64 * np.finfo(float).eps * (tau + (comp + tau) * xn * (2 + np.abs(n * log_x))
                                            + mu * yn * (2 + np.abs(n * log_y)))
    sign = np.sign(value)
    for i in np.flatnonzero(np.abs(value) <= bound):
        sign[i] = _exact_step_sign(int(n[i]), float(mu[i]), float(tau[i]), float(comp[i]), bool(comp_given[i]))
    return sign


# up to this n the sign is computed in exact rationals: the float inputs are dyadic rationals, so an exact tie
# (Pr(B)(n + 1) = Pr(B)(n), e.g. n = 3 at mu = 16111/16384, tau = 7925/32768) gives sign 0 and N* the smaller n,
# where 60 digits return rounding noise; beyond it the powers grow too long (about 53 n bits) and 60 digits decide
_EXACT_RATIONAL_MAX_N = 4096


def _exact_step_sign(n: int, mu: float, tau: float, comp: float, comp_given: bool) -> int:
    if n <= _EXACT_RATIONAL_MAX_N:
        from fractions import Fraction

        t = Fraction(tau)
        c = Fraction(comp) if comp_given else 1 - Fraction(mu)
        # in integers over the common power-of-two denominator d (Fraction's gcds would take seconds at n = 4096):
        # (1 - tau)^n g(n) d^(n + 1) = -T (d - T)^n + (C + T)(d - C - T)^n + (d - C) C^n, T = tau d, C = (1 - mu) d
        d = max(t.denominator, c.denominator)
        big_t, big_c = t.numerator * (d // t.denominator), c.numerator * (d // c.denominator)
        value = -big_t * (d - big_t) ** n + (big_c + big_t) * (d - big_c - big_t) ** n + (d - big_c) * big_c**n
        return (value > 0) - (value < 0)
    import mpmath

    with mpmath.workdps(60):
        t = mpmath.mpf(tau)
        c = mpmath.mpf(comp) if comp_given else 1 - mpmath.mpf(mu)
        m = 1 - c
        a = 1 - t
        return int(mpmath.sign(-t + (c + t) * ((m - t) / a) ** n + m * (c / a) ** n))


def peak_group_size(mu, tau, *, one_minus_mu=None) -> PeakGroupSize:
    """The group size N* maximising Pr(B) = (1-tau)^N - (mu-tau)^N - (1-mu)^N, exactly, plus the real maximiser.

    mu in (0, 1], tau in (0, mu] (arrays broadcast). Near mu = 1 a float mu keeps only the digits of 1 - mu
    that fit beside 1 (mu = 1 - 1e-12 is stored as 1 - 1.000089e-12): pass `one_minus_mu` instead (mu = None)
    to give 1 - mu to full precision. tau = 0 has no peak (Pr(B) = Pr(A_N) rises to 1), so it is rejected.
    Where Pr(B) is identically 0 (tau = mu, or mu = 1) the result is N* = 1, probability 0,
    n_continuous = nan. Where N* would exceed 2^53 (mu and tau below about 1e-15) it raises ValueError.
    """
    comp_given = one_minus_mu is not None
    if comp_given:
        if mu is not None:
            raise ValueError("give either mu or one_minus_mu, not both")
        comp = check_range("one_minus_mu", one_minus_mu, 0.0, 1.0, high_open=True)
        mu = 1.0 - comp
    mu = check_range("mu", mu, 0.0, 1.0, low_open=True)
    tau = check_range("tau", tau, 0.0, 1.0)
    if comp_given:
        mu, tau, comp = broadcast_named(mu=mu, tau=tau, one_minus_mu=comp)
    else:
        mu, tau = broadcast_named(mu=mu, tau=tau)
        comp = 1.0 - mu  # exact for mu >= 0.5 (Sterbenz) and within half an ulp of 1 below
    if np.any(tau == 0):
        raise ValueError("tau must be in (0, mu], got 0 (with tau = 0, Pr(B) = Pr(A_N) rises to 1 and never peaks)")
    above = (tau > mu) | ((1.0 - tau) < comp)
    if np.any(above):
        raise ValueError(f"tau must be in (0, mu], got {_fmt(float(tau[above].flat[0]))} with mu = "
                         f"{_fmt(float(mu[above].flat[0]))}")
    flat_mu, flat_tau, flat_comp = mu.ravel(), tau.ravel(), comp.ravel()
    degenerate = (flat_tau >= flat_mu) | (flat_comp <= 0.0)
    live = ~degenerate
    n_cont = np.full(flat_mu.shape, np.nan)
    n_star = np.ones(flat_mu.shape, dtype=np.int64)
    prob = np.zeros(flat_mu.shape)
    if live.any():
        m, t, c = flat_mu[live], flat_tau[live], flat_comp[live]
        n_cont[live] = _continuous_peak(m, t, c)
        too_far = live & (n_cont > MAX_PEAK_GROUP_SIZE)
        if too_far.any():
            i = int(np.flatnonzero(too_far)[0])
            raise ValueError(
                f"mu and tau too small: Pr(B) peaks near N = {n_cont[i]:.3g}, beyond the largest group size handled "
                f"exactly (2^53); got mu = {flat_mu[i]:g}, tau = {flat_tau[i]:g}"
            )
        # Pr(B) is unimodal in real N, so Pr(B)(n + 1) - Pr(B)(n) changes sign once: N* is the smallest n where
        # it is <= 0 (ties go to the smaller N, like a scan). It lies next to the real maximiser; the loop
        # only moves when the root sits within rounding of an integer.
        given = np.full(m.shape, comp_given)
        best = np.maximum(np.floor(n_cont[live]), 1.0)
        for _ in range(8):
            down = (best > 1) & (_step_gains(np.maximum(best - 1, 1.0), m, t, c, given) <= 0)
            up = ~down & (_step_gains(best, m, t, c, given) > 0)
            if not (down.any() or up.any()):
                break
            best = best - down + up
        n_star[live] = best.astype(np.int64)
        # Pr(B) at N* from the same 1 - mu as the peak (and as `theory tail-miss` reads it from the digits typed)
        prob[live] = tail_miss_probability(best, m, t, one_minus_mu=c if comp_given else None)
    shape = mu.shape
    if shape == ():
        return PeakGroupSize(float(mu), float(tau), int(n_star[0]), float(prob[0]), float(n_cont[0]))
    return PeakGroupSize(mu, tau, n_star.reshape(shape), prob.reshape(shape), n_cont.reshape(shape))
