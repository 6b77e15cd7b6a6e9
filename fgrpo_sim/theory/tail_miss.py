"""Tail-miss probability (paper Lemma 3.1), derived in sympy and evaluated stably in numpy.

Setting: a group of N i.i.d. rollouts; each is correct with probability mu. A rare subset E of the
correct rollouts has mass tau (rho = tau / mu is its share of the correct mass). The group is *active*
(event A_N: 0 < #correct < N, so GRPO gets a non-zero advantage) and *misses the tail* (event B) when it
is active yet no rollout lands in E.

Derivation (`symbolic_tail_miss`): partition the outcomes into three regions, E (mass tau), correct but
not in E (mass mu - tau) and incorrect (mass 1 - mu). "All N draws fall in a set S of regions" has
probability (sum of their masses)^N. B is "no draw in E" minus the two inactive cases inside it (all
incorrect, all correct-outside-E), combined by inclusion-exclusion:

    Pr(B) = (1 - tau)^N - (mu - tau)^N - (1 - mu)^N.

Evaluation: the three terms nearly cancel for small tau and large N, so the formula is never evaluated
as printed. Instead sympy verifies the rearrangement

    Pr(B) = (1 - tau)^N * K(N, x),  x = (mu - tau) / (1 - tau),  K(N, s) = 1 - s^N - (1 - s)^N,

(the group conditioned on missing E is again Bernoulli, with success rate x) and that
K(N, s) = -expm1(N log1p(-s)) - exp(N log s), which has no cancellation for s <= 1/2 (the two terms
differ by at least a factor 3 there); K is symmetric in s <-> 1 - s, so the smaller of x and 1 - x is
used. That expression is lambdified as is, so the numbers come from the verified formula.
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np

from fgrpo_sim.validation import _fmt, broadcast_named, check_integer, check_range
from fgrpo_sim.theory.lambdified import closed_form, lambdified

# Regions of one rollout's outcome, as (name, is_correct); masses are filled in from sympy symbols.
_REGIONS = ("E", "C", "W")  # E: rare correct subset, C: other correct outcomes, W: incorrect


def _region_masses():
    from fgrpo_sim.theory.symbols import mu, tau

    return {"E": tau, "C": mu - tau, "W": 1 - mu}


def _prob_all_in(regions, n):
    """Pr[all n i.i.d. draws land in the union of `regions`] = (their total mass)^n; 0 for no region."""
    import sympy as sp

    masses = _region_masses()
    if not regions:
        return sp.Integer(0)  # n >= 1 draws cannot all land nowhere
    return sp.Add(*(masses[r] for r in sorted(regions))) ** n


@cache
def symbolic_tail_miss(n=None):
    """Pr(B) as a sympy expression in N (or `n`), mu, tau, built by inclusion-exclusion over the regions."""
    from fgrpo_sim.theory.symbols import N

    n = N if n is None else n
    miss_e = frozenset({"C", "W"})  # no draw in E
    # Inactive groups inside "no draw in E": every draw incorrect, or every draw correct (hence in C).
    inactive = [frozenset({"W"}), frozenset({"C"})]
    expr = _prob_all_in(miss_e, n)
    for size in range(1, len(inactive) + 1):
        for combo in itertools.combinations(inactive, size):
            regions = miss_e.intersection(*combo)
            expr += (-1) ** size * _prob_all_in(regions, n)
    return expr


@cache
def symbolic_activity(n=None):
    """Pr(A_N) = Pr(0 < #correct < N): the tail-miss probability with an empty rare subset (tau = 0)."""
    from fgrpo_sim.theory.symbols import tau

    return symbolic_tail_miss(n).subs(tau, 0)


@cache
def symbolic_activity_kernel():
    """K(N, s) = 1 - s^N - (1 - s)^N written with log1p/expm1 (cancellation-free for s <= 1/2)."""
    import sympy as sp
    from sympy.codegen.cfunctions import expm1, log1p

    from fgrpo_sim.theory.symbols import N

    s = sp.Symbol("s", positive=True)
    return s, -expm1(N * log1p(-s)) - sp.exp(N * sp.log(s))


@cache
def verify_rearrangement() -> bool:
    """Check in sympy that the stable kernel form equals Pr(B); True when every identity holds.

    Raises AssertionError (not a silent False) if an identity fails, since the numbers depend on it.
    """
    import sympy as sp

    from fgrpo_sim.theory.symbols import N, mu, tau

    s, kernel = symbolic_activity_kernel()
    plain_kernel = 1 - s**N - (1 - s) ** N
    diff = sp.expand_func(kernel).rewrite(sp.exp) - plain_kernel.rewrite(sp.exp)
    assert sp.simplify(diff) == 0, "stable kernel differs from 1 - s^N - (1-s)^N"
    assert sp.simplify(plain_kernel - plain_kernel.subs(s, 1 - s)) == 0, "kernel is not symmetric"
    x = (mu - tau) / (1 - tau)
    factored = (1 - tau) ** N * plain_kernel.subs(s, x)
    diff = sp.expand_power_base(sp.expand(factored), force=True) - symbolic_tail_miss()
    assert sp.simplify(sp.powsimp(sp.expand(diff), force=True)) == 0, "Pr(B) != (1-tau)^N K(N, x)"
    return True


@cache
def _numeric_kernel():
    return lambdified("activity_kernel")


@closed_form("activity_kernel")
def _derive_kernel():
    import sympy as sp

    from fgrpo_sim.theory.symbols import N

    s, kernel = symbolic_activity_kernel()
    return sp.lambdify((N, s), kernel, modules="numpy")


def _check_inputs(n, mu, tau):
    n = check_integer("n", n, low=1).astype(float)
    mu = check_range("mu", mu, 0.0, 1.0)
    tau = check_range("tau", tau, 0.0, 1.0)
    n, mu_b, tau_b = broadcast_named(n=n, mu=mu, tau=tau)
    above = tau_b > mu_b
    if np.any(above):
        raise ValueError(f"tau must be in [0, mu], got {_fmt(float(tau_b[above].flat[0]))} with mu = "
                         f"{_fmt(float(mu_b[above].flat[0]))}")
    return n, mu_b, tau_b


def _complement(mu, one_minus_mu):
    """1 - mu: the value given (full precision near mu = 1, as `peak_group_size` takes it), else from mu."""
    if one_minus_mu is None:
        return 1.0 - mu
    comp = check_range("one_minus_mu", one_minus_mu, 0.0, 1.0)
    if np.any(np.abs((1.0 - comp) - mu) > 1e-15):
        raise ValueError(f"one_minus_mu must be 1 - mu, got {_fmt(float(np.ravel(comp)[0]))} with mu = "
                         f"{_fmt(float(np.ravel(mu)[0]))}")
    return np.broadcast_to(comp, np.shape(mu))


def _log_scale_and_kernel(n, mu, tau, comp=None):
    """(N log(1 - tau), K(N, x)) with Pr(B) = exp(first) * second; degenerate cases give K = 0."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        keep = 1.0 - tau
        x = (mu - tau) / keep  # success rate of a group conditioned on missing E
        # computed directly: 1 - x would cancel when x is near 1
        one_minus_x = ((1.0 - mu) if comp is None else comp) / keep
        s = np.where(keep > 0, np.minimum(x, one_minus_x), 0.0)
        kernel = _numeric_kernel()(n, s)
        kernel = np.where(n == 1, 0.0, np.clip(kernel, 0.0, 1.0))  # one rollout is never active
        log_scale = n * np.log1p(-tau)
    return log_scale, kernel


def log_tail_miss_probability(n, mu, tau, *, one_minus_mu=None):
    """log Pr(B): finite wherever Pr(B) > 0, even when Pr(B) itself underflows float64 (-inf where it is 0).
    `one_minus_mu`: 1 - mu to full precision (as in `peak_group_size`), else computed from mu."""
    n, mu, tau = _check_inputs(n, mu, tau)
    log_scale, kernel = _log_scale_and_kernel(n, mu, tau, _complement(mu, one_minus_mu))
    with np.errstate(divide="ignore"):
        out = log_scale + np.log(kernel)
    return out if out.ndim else float(out)


def tail_miss_probability(n, mu, tau, *, one_minus_mu=None):
    """Pr(B) = (1 - tau)^n - (mu - tau)^n - (1 - mu)^n, the chance a group is active yet misses E.

    n: group size, integer >= 1. mu: success probability in [0, 1]. tau: mass of the rare correct
    subset E, in [0, mu]. Arrays broadcast. Relative error about 1e-13 or better wherever the result
    is a normal float64 (see tests/test_theory_tail_miss.py for the mpmath comparison). Near mu = 1 the
    float mu keeps only a few digits of 1 - mu: pass them as `one_minus_mu` (as `peak_group_size` takes it).
    """
    n, mu, tau = _check_inputs(n, mu, tau)
    log_scale, kernel = _log_scale_and_kernel(n, mu, tau, _complement(mu, one_minus_mu))
    with np.errstate(under="ignore"):
        out = np.exp(log_scale) * kernel
    return out if out.ndim else float(out)


def activity_probability(n, mu, *, one_minus_mu=None):
    """Pr(A_N) = 1 - mu^n - (1 - mu)^n: the chance that a group of n rollouts is not all-equal."""
    return tail_miss_probability(n, mu, np.zeros_like(np.asarray(mu, dtype=float)), one_minus_mu=one_minus_mu)


def tail_miss_from_rho(n, mu, rho):
    """Pr(B) with the rare subset given by its share rho = tau / mu in [0, 1] of the correct mass."""
    rho = check_range("rho", rho, 0.0, 1.0)
    mu = check_range("mu", mu, 0.0, 1.0)
    return tail_miss_probability(n, mu, np.minimum(mu * rho, mu))
