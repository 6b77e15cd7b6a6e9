"""The group size N* that maximises the tail-miss probability Pr(B) (paper Sec. 3.1, Fig. 3).

The paper finds the peak numerically; here it is located from the derivative. sympy differentiates Pr(B)
in a real N and the result, divided by (1 - tau)^N > 0, is

    h(N) = log(1 - tau) - x^N log(mu - tau) - y^N log(1 - mu),  x = (mu - tau)/(1 - tau), y = (1 - mu)/(1 - tau).

For 0 < tau < mu < 1 both x and y lie in (0, 1) and both logs are negative, so h is strictly decreasing
in N, positive at N = 1 (h(1) = [b log(a/b) + c log(a/c)] / a with a = b + c) and tends to log(1 - tau) < 0.
Pr(B) is therefore strictly unimodal in real N: the continuous maximiser is the single root of h (found by
bracketing and bisection, vectorised), and the integer argmax is one of its two neighbouring integers.
A few integers around it are compared with the same `tail_miss_probability` a brute-force scan uses,
smallest N winning ties, so the answer equals the brute-force argmax without scanning all N.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from fgrpo_sim.theory.tail_miss import tail_miss_probability
from fgrpo_sim.validation import broadcast_named, check_range


MAX_PEAK_GROUP_SIZE = 2.0**53  # integers above this are not exact in float64, and N* must be one


@dataclass(frozen=True)
class PeakGroupSize:
    """Where Pr(B) peaks for success rate `mu` and rare mass `tau` (floats, or arrays for array input).

    n_star: the integer group size maximising Pr(B) (smallest one on ties); probability: Pr(B) there;
    n_continuous: the maximiser over real N >= 1 (nan where Pr(B) is identically 0: tau = mu or mu = 1).
    "Exact" means equal to a float64 brute-force scan; where the peak is so flat that neighbouring N differ
    by less than float64 resolution (e.g. N* ~ 1e10), n_star is within one of the true argmax.
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

    # log x, log y, log(mu - tau): evaluated apart so that each keeps full precision
    return sp.symbols("L_x L_y L_b", negative=True)


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


@cache
def _numeric_scaled_slope_in_log_rates():
    import sympy as sp

    from fgrpo_sim.theory.symbols import N_real, mu, tau

    log_x, log_y, log_b = _log_rate_symbols()
    x = (mu - tau) / (1 - tau)
    y = (1 - mu) / (1 - tau)
    logs = {sp.log(x): log_x, sp.log(y): log_y, sp.log(mu - tau): log_b}
    expr = symbolic_scaled_slope().subs(logs)
    assert expr.subs({v: k for k, v in logs.items()}) == symbolic_scaled_slope()
    return sp.lambdify((N_real, mu, tau, log_x, log_y, log_b), expr, modules="numpy")


@cache
def _numeric_scaled_slope():
    """h(N, mu, tau) in numpy. log x and log y are taken as log(.) of the smaller of x, y = 1 - x and as
    log1p(-other) of the larger (likewise log(mu - tau) = log1p(-(1 - mu + tau)) near 1), so x^N keeps its
    precision even when N ~ 1e9 and x is within 1e-9 of 1."""
    h = _numeric_scaled_slope_in_log_rates()

    def slope(n, mu, tau):
        with np.errstate(divide="ignore", invalid="ignore"):
            keep = 1.0 - tau
            x, y = (mu - tau) / keep, (1.0 - mu) / keep
            log_x = np.where(x <= 0.5, np.log(x), np.log1p(-y))
            log_y = np.where(y <= 0.5, np.log(y), np.log1p(-x))
            b = mu - tau
            log_b = np.where(b <= 0.5, np.log(b), np.log1p(-((1.0 - mu) + tau)))
            return h(n, mu, tau, log_x, log_y, log_b)

    return slope


def _continuous_peak(mu, tau):
    """Root of the scaled slope for non-degenerate 1-D arrays mu, tau (0 < tau < mu < 1)."""
    slope = _numeric_scaled_slope()
    lo = np.ones_like(mu)
    hi = np.full_like(mu, 2.0)
    with np.errstate(under="ignore"):
        for _ in range(1100):  # doubling: the root lies below 2^1100 for any tau >= 1e-300
            rising = slope(hi, mu, tau) > 0
            if not rising.any():
                break
            lo = np.where(rising, hi, lo)
            hi = np.where(rising, 2.0 * hi, hi)
        for _ in range(64):  # bisection: [lo, hi] spans a factor <= 2, so 64 halvings reach float precision
            mid = 0.5 * (lo + hi)
            rising = slope(mid, mu, tau) > 0
            lo = np.where(rising, mid, lo)
            hi = np.where(rising, hi, mid)
    return 0.5 * (lo + hi)


def peak_group_size(mu, tau) -> PeakGroupSize:
    """The group size N* maximising Pr(B) = (1-tau)^N - (mu-tau)^N - (1-mu)^N, exactly, plus the real maximiser.

    mu in (0, 1], tau in (0, mu] (arrays broadcast). tau = 0 has no peak (Pr(B) = Pr(A_N) rises to 1), so
    it is rejected. Where Pr(B) is identically 0 (tau = mu, or mu = 1) the result is N* = 1, probability 0,
    n_continuous = nan. Where N* would exceed 2^53 (mu and tau below about 1e-15) it raises ValueError.
    """
    mu = check_range("mu", mu, 0.0, 1.0, low_open=True)
    tau = check_range("tau", tau, 0.0, 1.0)
    mu, tau = broadcast_named(mu=mu, tau=tau)
    if np.any(tau == 0):
        raise ValueError("tau must be in (0, mu], got 0 (with tau = 0, Pr(B) = Pr(A_N) rises to 1 and never peaks)")
    above = tau > mu
    if np.any(above):
        raise ValueError(f"tau must be in (0, mu], got {tau[above].flat[0]:g} with mu = {mu[above].flat[0]:g}")
    flat_mu, flat_tau = mu.ravel(), tau.ravel()
    degenerate = (flat_tau >= flat_mu) | (flat_mu >= 1.0)
    live = ~degenerate
    n_cont = np.full(flat_mu.shape, np.nan)
    n_star = np.ones(flat_mu.shape, dtype=np.int64)
    prob = np.zeros(flat_mu.shape)
    if live.any():
        n_cont[live] = _continuous_peak(flat_mu[live], flat_tau[live])
        too_far = live & (n_cont > MAX_PEAK_GROUP_SIZE)
        if too_far.any():
            i = int(np.flatnonzero(too_far)[0])
            raise ValueError(
                f"mu and tau too small: Pr(B) peaks near N = {n_cont[i]:.3g}, beyond the largest group size handled "
                f"exactly (2^53); got mu = {flat_mu[i]:g}, tau = {flat_tau[i]:g}"
            )
        candidates = np.floor(n_cont[live])[:, None] + np.arange(-1, 3)[None, :]
        candidates = np.maximum(candidates, 1.0)
        values = tail_miss_probability(candidates, flat_mu[live][:, None], flat_tau[live][:, None])
        best = np.argmax(values, axis=1)  # candidates ascend, so ties go to the smallest N, like a scan
        n_star[live] = candidates[np.arange(len(best)), best].astype(np.int64)
        prob[live] = values[np.arange(len(best)), best]
    shape = mu.shape
    if shape == ():
        return PeakGroupSize(float(mu), float(tau), int(n_star[0]), float(prob[0]), float(n_cont[0]))
    return PeakGroupSize(mu, tau, n_star.reshape(shape), prob.reshape(shape), n_cont.reshape(shape))
