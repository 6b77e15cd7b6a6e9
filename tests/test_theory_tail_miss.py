"""Tail-miss probability (Lemma 3.1): properties, exact enumeration, 50-digit accuracy, edge limits, validation."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multinomial

from fgrpo_sim.theory import (
    activity_probability,
    log_tail_miss_probability,
    tail_miss_from_rho,
    tail_miss_probability,
)

unit = st.floats(0.0, 1.0, allow_nan=False)
FAST = settings(max_examples=60, deadline=None)


@FAST
@given(n=st.integers(1, 5000), mu=unit, rho=unit)
def test_bounded_by_activity_and_by_missing_e(n, mu, rho):
    tau = mu * rho
    p = tail_miss_probability(n, mu, tau)
    slack = 1e-12 * max(p, 1e-300)
    assert 0.0 <= p <= activity_probability(n, mu) + slack
    assert p <= (1.0 - tau) ** n + slack + 1e-300


@FAST
@given(mu=unit, rho=unit)
def test_single_rollout_is_never_active(mu, rho):
    assert tail_miss_probability(1, mu, mu * rho) == 0.0
    assert activity_probability(1, mu) == 0.0


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 8), mu=st.floats(0.01, 0.99), rho=st.floats(0.0, 1.0))
def test_matches_enumeration_over_the_three_regions(n, mu, rho):
    tau = mu * rho
    masses = [tau, mu - tau, 1.0 - mu]  # E, correct-not-E, incorrect
    dist = multinomial(n, masses)
    # B: no draw in E, and the number of correct draws (all in the middle region) strictly between 0 and n.
    exact = sum(dist.pmf([0, c, n - c]) for c in range(1, n))
    assert tail_miss_probability(n, mu, tau) == pytest.approx(exact, rel=1e-10, abs=1e-15)


def _reference(n, mu, tau):
    """The printed formula at 50 significant digits, on the exact binary values of the float inputs."""
    with mpmath.workdps(50):
        mu, tau = mpmath.mpf(mu), mpmath.mpf(tau)
        return (1 - tau) ** n - (mu - tau) ** n - (1 - mu) ** n


def _accuracy_cases():
    rng = np.random.default_rng(20260514)
    cases = [(2**20, 0.5, 1e-12), (2**20, 1e-6, 1e-12), (2**20, 1 - 1e-9, 1e-12), (2**17, 0.64, 6.3e-5),
             (2, 1e-9, 1e-12), (3, 0.999999, 1e-12), (2**20, 1e-12, 1e-12 / 3), (1000, 0.3, 0.0)]
    for _ in range(300):
        n = int(np.exp(rng.uniform(0, math.log(2**20))))
        mu = float(10 ** rng.uniform(-9, 0)) if rng.random() < 0.6 else float(1 - 10 ** rng.uniform(-9, -0.3))
        tau = float(10 ** rng.uniform(-12, math.log10(mu)))
        cases.append((n, mu, min(tau, mu)))
    return cases


def test_relative_error_against_50_digit_mpmath():
    cases = _accuracy_cases()
    n, mu, tau = (np.array(c) for c in zip(*cases))
    got = tail_miss_probability(n, mu, tau)
    got_log = log_tail_miss_probability(n, mu, tau)
    checked_linear = 0
    for (ni, mi, ti), g, gl in zip(cases, got, got_log):
        ref = _reference(ni, mi, ti)
        if ref == 0:  # n = 1
            assert g == 0 and gl == -math.inf
            continue
        if ref > mpmath.mpf("1e-300"):  # representable as a normal float64: compare the probability itself
            assert abs(g - ref) <= 1e-9 * ref, (ni, mi, ti, g, ref)
            checked_linear += 1
        # the log form stays accurate everywhere, including where Pr(B) underflows float64
        assert abs(gl - mpmath.log(ref)) <= 1e-9 * abs(mpmath.log(ref)) + 1e-12, (ni, mi, ti, gl)
    assert checked_linear > 200  # the linear comparison must cover most cases, not be skipped


def test_naive_formula_would_fail_where_this_one_holds():
    # Cancellation: the printed formula in float64 loses every digit here; the stable form keeps them.
    n, mu, tau = 2**20, 1e-12, 1e-13
    naive = (1 - tau) ** n - (mu - tau) ** n - (1 - mu) ** n
    ref = _reference(n, mu, tau)
    assert abs(naive - ref) > 1e-5 * ref
    assert abs(tail_miss_probability(n, mu, tau) - ref) <= 1e-9 * ref


@pytest.mark.parametrize(
    "n, mu, tau, expected",
    [
        (8, 0.5, 0.5, 0.0),  # tau = mu: every correct rollout is in E, so missing E means no correct rollout
        (8, 0.0, 0.0, 0.0),  # mu = 0: never active
        (8, 1.0, 0.3, 0.0),  # mu = 1: never active
        (8, 1.0, 1.0, 0.0),
        (8, 1.0, 0.0, 0.0),
        (1, 0.4, 0.1, 0.0),
        (2, 0.5, 0.0, 0.5),  # tau = 0 reduces to Pr(A_2) = 2 mu (1 - mu)
        (8, 0.5, 0.05, 0.95**8 - 0.45**8 - 0.5**8),
    ],
)
def test_edge_values(n, mu, tau, expected):
    assert tail_miss_probability(n, mu, tau) == pytest.approx(expected, rel=1e-12, abs=0)


def test_edge_values_are_limits():
    n = 16
    for mu, tau in [(0.5, 0.5), (1.0, 0.3), (0.3, 0.0)]:
        near = tail_miss_probability(n, min(mu, 1 - 1e-9) if mu == 1 else mu, max(tau - 1e-9, 0) if tau else 1e-9)
        assert near == pytest.approx(tail_miss_probability(n, mu, tau), abs=1e-6)
    assert tail_miss_probability(16, 0.3, 0.0) == activity_probability(16, 0.3)


def test_broadcasting_and_rho_form():
    n = np.arange(1, 5)[:, None]
    mu = np.array([0.2, 0.5, 0.8])
    out = tail_miss_probability(n, mu, 0.1 * mu)
    assert out.shape == (4, 3)
    assert np.allclose(out, tail_miss_from_rho(n, mu, 0.1), rtol=1e-14)
    assert out[2, 1] == pytest.approx(tail_miss_probability(3, 0.5, 0.05))
    assert isinstance(tail_miss_probability(3, 0.5, 0.05), float)


@pytest.mark.parametrize(
    "args, fragment",
    [
        ((8, 0.5, 0.7), "tau must be in [0, mu], got 0.7"),
        ((0, 0.5, 0.1), "n must be in [1"),
        ((2.5, 0.5, 0.1), "n must be an integer"),
        ((8, 1.5, 0.1), "mu must be in [0, 1], got 1.5"),
        ((8, 0.5, -0.1), "tau must be in [0, 1]"),
        ((8, float("nan"), 0.1), "mu must be in [0, 1]"),
    ],
)
def test_bad_input_names_parameter_and_range(args, fragment):
    with pytest.raises(ValueError, match=None) as info:
        tail_miss_probability(*args)
    assert fragment in str(info.value)


def test_activity_validates_and_rho_validates():
    with pytest.raises(ValueError, match=r"mu must be in \[0, 1\]"):
        activity_probability(4, -0.1)
    with pytest.raises(ValueError, match=r"rho must be in \[0, 1\]"):
        tail_miss_from_rho(4, 0.5, 1.2)


def test_clashing_shapes_and_non_numbers_are_named_errors():
    from fgrpo_sim.theory import tail_miss_probability as pr_b

    with pytest.raises(ValueError, match=r"^n, mu, tau must broadcast to one shape, got shapes n \(3,\), mu \(2,\)"):
        pr_b([1, 2, 3], [0.5, 0.4], 0.1)
    with pytest.raises(ValueError, match=r"^mu must be a number"):
        pr_b(4, "half", 0.1)
