"""peak_group_size where its last open mutants act (issue 44, benchmarks/RESULTS.md "theory/: the last open
mutants"): near-ties that float64 gets wrong beyond a smaller error bound, near-ties that only the exact 1 - mu
decides, the neighbour step down, and tau close to mu (a bug these points found: the real maximiser lost digits
there and N* was wrong, by up to 2.6e6). Every expected N* is the argmax of Pr(B) = (1 - tau)^N - (mu - tau)^N -
(1 - mu)^N computed from that definition in mpmath, with enough digits for the difference of two neighbours; N*
is checked as a strict local maximum (the smaller N on a tie), which is the global one since Pr(B) is unimodal.

Which float64 sign is wrong at a near-tie depends on the last bits of libm's exp and log: on this machine each
group of points below has some where it is (that is how they kill the mutants); on another libm the test still
checks the true argmax, but may catch less."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from fgrpo_sim import theory


def _digits(n: int, tau: float) -> int:
    # Pr(B)(n + 1) - Pr(B)(n) is about tau times Pr(B) near a tie (down to 1e-300 of it), and its sign must survive
    # n multiplications: a margin of 40 digits beyond both
    return 40 + 3 * len(str(n)) + max(0, -math.floor(math.log10(tau)))


def _tail(n: int, mu: float, tau: float, one_minus_mu: float | None):
    t = mpmath.mpf(tau)
    c = mpmath.mpf(one_minus_mu) if one_minus_mu is not None else 1 - mpmath.mpf(mu)  # exact for a float mu
    return (1 - t) ** n - (1 - c - t) ** n - c**n


def _is_the_argmax(n: int, mu: float, tau: float, one_minus_mu: float | None = None) -> bool:
    """Pr(B)(n - 1) < Pr(B)(n) >= Pr(B)(n + 1), from the definition in exact-enough arithmetic."""
    with mpmath.workdps(_digits(n, tau)):
        here = _tail(n, mu, tau, one_minus_mu)
        rises = n == 1 or _tail(n - 1, mu, tau, one_minus_mu) < here
        return bool(rises and here >= _tail(n + 1, mu, tau, one_minus_mu))


def _ulps_around(tau: float, k: int) -> np.ndarray:
    """tau and the k floats on each side of it."""
    below, above, out = tau, tau, [tau]
    for _ in range(k):
        below, above = np.nextafter(below, 0.0), np.nextafter(above, 1.0)
        out += [below, above]
    return np.array(out)


# Each centre is the float nearest the root in tau of Pr(B)(n + 1) = Pr(B)(n) (solved in mpmath), so every point is a
# near-tie of the two neighbours (n > 4096, where 60-digit mpmath decides: exact rationals of a tau near 1e-300 take
# 0.2-0.6 s a point). There float64's step sign is off by up to a few hundred ulps of tau (exp of n times
# a log rate with n |log rate| ~ 600), the error bound sends them all to exact arithmetic, and a bound that drops
# or shrinks the term of x^N (mu = 0.9: x near 1) or of y^N (mu = 0.12: y near 1) lets a wrong float64 sign through.
@pytest.mark.parametrize("n, mu, centre", [
    (6000, 0.9, 2.8513900904532167e-276),  # x^N's term: _step_gains' mutants 14, 37, 40
    (5000, 0.12, 3.1084364784109567e-279),  # y^N's term: 16, 44, 46
    (20000, 0.01, 5.056988325167121e-90),  # y^N's term, tau not near underflow: 46
])
def test_near_ties_that_float64_cannot_sign_get_the_true_argmax(n, mu, centre):
    taus = _ulps_around(centre, 40)
    peak = theory.peak_group_size(mu, taus)
    wrong = [float(t) for t, n_star in zip(taus, peak.n_star.tolist()) if not _is_the_argmax(n_star, mu, t)]
    assert wrong == []
    assert set(peak.n_star.tolist()) == {n, n + 1}  # the points straddle the tie


# Points where the exact route's 1 - mu matters: between the tie's root in tau for the exact 1 - mu and its root for
# a rounded one, so the two give opposite signs of Pr(B)(n + 1) - Pr(B)(n).
@pytest.mark.parametrize("n, mu, tau, one_minus_mu", [
    # mu < 1/2 with its last bit set: the float 1.0 - mu is rounded, the exact route must use 1 - mu exactly
    (10, 0.3, 0.009308362175977634, None),  # exact rationals (n <= 4096): _exact_step_sign's mutant 6
    (4200, 0.15, 5.4397539860085265e-298, None),  # 60-digit mpmath (n > 4096): mutant 47
    # 1 - mu given with digits that mu = 1 - 0.01 cannot hold: the exact route must use it, not 1 - mu: mutant 5
    (100, None, 0.005721071209153246, 0.01),
])
def test_the_exact_route_uses_the_exact_one_minus_mu(n, mu, tau, one_minus_mu):
    peak = theory.peak_group_size(mu, tau, one_minus_mu=one_minus_mu)
    assert peak.n_star in (n, n + 1)
    assert _is_the_argmax(peak.n_star, mu, tau, one_minus_mu)
    if one_minus_mu is None:
        with mpmath.workdps(60):
            assert 1 - mpmath.mpf(mu) != mpmath.mpf(1.0 - mu)  # the point is one where 1.0 - mu is rounded
    else:
        assert 1.0 - (1.0 - one_minus_mu) != one_minus_mu


def test_the_step_down_from_the_floor_of_the_real_maximiser():
    # the real maximiser here rounds to the integer just above N* (ulp 0.25 at 1.6e15), so N* is one step down from
    # its floor: peak_group_size's mutants 160 (the step down tested at N* - 1) and 184 (the step taken upwards)
    mu, tau = 3.879625686848582e-15, 8.294379860943358e-18
    peak = theory.peak_group_size(mu, tau)
    assert _is_the_argmax(peak.n_star, mu, tau)
    assert abs(peak.n_star - peak.n_continuous) <= 1


def _slope_root(mu: float, tau: float, start: float):
    """The real maximiser of Pr(B): the root of dPr(B)/dN, from the definition at 80 digits."""
    with mpmath.workdps(80):
        m, t = mpmath.mpf(mu), mpmath.mpf(tau)
        log_a, log_b, log_c = mpmath.log1p(-t), mpmath.log(m - t), mpmath.log1p(-m)

        def slope(n):
            return mpmath.exp(n * log_a) * log_a - mpmath.exp(n * log_b) * log_b - mpmath.exp(n * log_c) * log_c

        return mpmath.findroot(slope, start)


# tau close to mu (x = (mu - tau)/(1 - tau) tiny, y near 1): the scaled slope was evaluated with expm1 of N log x,
# where log(1 - tau) and y^N log(1 - mu) cancelled, so the real maximiser lost about log10(mu / (mu - tau)) digits
# and N* was wrong (300 random points against this reference: 48 failed, 16 with N* wrong, below by 16 to 2.6e6;
# the first point here by 2.6e6, the second by 138; none fail since the slope takes expm1 of the rate nearer 0)
@pytest.mark.parametrize("mu, tau", [(6.093966720515008e-12, 6.0939667204973e-12),
                                     (9.78619488881296e-14, 9.786148483985378e-14),
                                     (4.134666860355302e-09, 4.134666860178659e-09),
                                     (0.00037566019839485495, 0.0003756601983933627),
                                     (0.5312838396650071, 0.5312837000673398)])
def test_the_peak_keeps_its_digits_when_tau_is_close_to_mu(mu, tau):
    peak = theory.peak_group_size(mu, tau)
    assert _is_the_argmax(peak.n_star, mu, tau)
    root = _slope_root(mu, tau, peak.n_continuous)
    assert abs(peak.n_continuous - root) <= 1e-13 * root
