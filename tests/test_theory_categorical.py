"""Categorical one-step analysis: derived vs printed formulas, O(eta^2) first-order error, Lemma H.1, E[U2]."""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from fgrpo_sim.theory import (
    exact_mass_change,
    expected_sampled_correct_mass,
    expected_sampled_incorrect_mass,
    expected_unsampled_square_mass,
    first_order_mass_change,
)
from fgrpo_sim.theory.categorical import printed_mass_changes, symbolic_mass_changes, verify_subset_mass_identity


def _random_case(rng, k=7, n=5):
    p = rng.dirichlet(np.ones(k))
    correct = np.zeros(k, bool)
    correct[: rng.integers(1, k)] = True
    counts = rng.multinomial(n, p)
    return p, correct, counts


def test_derivation_equals_the_printed_formulas():
    assert verify_subset_mass_identity()
    for derived, printed in zip(symbolic_mass_changes(), printed_mass_changes()):
        assert sp.simplify(derived - printed) == 0


def _printed_in_numpy(p, correct, counts, r_c, r_w, eta):
    """Independent plain-numpy evaluation of Hu et al.'s dQ_pos and Proposition 3.2 as printed in the digest."""
    sampled = counts > 0
    n = counts.sum()
    q_pos = p[correct].sum()
    q_neg = 1 - q_pos
    a2 = (p[correct & sampled] ** 2).sum()
    b2 = (p[~correct & sampled] ** 2).sum()
    u_pos2 = (p[correct & ~sampled] ** 2).sum()
    u_neg2 = (p[~correct & ~sampled] ** 2).sum()
    s_r = r_c * p[correct & sampled].sum() + r_w * p[~correct & sampled].sum()
    q_upos = p[correct & ~sampled].sum()
    dq_pos = eta / n * ((r_c - s_r) * q_neg * a2 + (s_r - r_w) * q_pos * b2 + s_r * (q_pos * u_neg2 - q_neg * u_pos2))
    dq_upos = eta / n * (-s_r * u_pos2 - q_upos * ((r_c - s_r) * a2 + (r_w - s_r) * b2 - s_r * (u_pos2 + u_neg2)))
    return dq_pos, dq_upos


@pytest.mark.parametrize("r_w", [0.0, -1.0])
def test_first_order_matches_printed_formula_numerically(r_w):
    rng = np.random.default_rng(3)
    for _ in range(20):
        p, correct, counts = _random_case(rng)
        got = first_order_mass_change(p, correct, counts, 1.0, r_w, 0.3)
        assert np.allclose(got, _printed_in_numpy(p, correct, counts, 1.0, r_w, 0.3), rtol=1e-12, atol=1e-16)


def test_exact_step_matches_a_plain_softmax():
    rng = np.random.default_rng(4)
    p, correct, counts = _random_case(rng)
    eta = 0.7
    sampled = counts > 0
    rewards = np.where(sampled, np.where(correct, 1.0, -1.0), 0.0)
    s_r = p[sampled & correct].sum() - p[sampled & ~correct].sum()
    z = np.log(p) + eta / counts.sum() * p * (rewards - s_r)
    new = np.exp(z) / np.exp(z).sum()
    expected = (new[correct].sum() - p[correct].sum(), new[correct & ~sampled].sum() - p[correct & ~sampled].sum())
    assert np.allclose(exact_mass_change(p, correct, counts, 1.0, -1.0, eta), expected, rtol=1e-10, atol=1e-15)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), r_w=st.sampled_from([0.0, -1.0]))
def test_first_order_error_shrinks_like_eta_squared(seed, r_w):
    rng = np.random.default_rng(seed)
    p, correct, counts = _random_case(rng, k=6, n=4)
    # small enough that third-order terms cannot bend the slope (at eta = 0.1 they can)
    etas = np.array([1e-4, 1e-3, 1e-2])
    errors = []
    for eta in etas:
        exact = np.array(exact_mass_change(p, correct, counts, 1.0, r_w, eta))
        first = np.array(first_order_mass_change(p, correct, counts, 1.0, r_w, eta))
        errors.append(np.abs(exact - first))
    errors = np.array(errors)  # [eta, (pos, upos)]
    for col in range(2):
        # below ~1e-13 the error is float64 rounding, whose slope means nothing (e.g. no unsampled
        # correct action: both changes are exactly 0)
        if errors[0, col] < 1e-13:
            continue
        slope = np.polyfit(np.log(etas), np.log(errors[:, col]), 1)[0]
        assert 1.9 < slope < 2.1


def test_total_correct_mass_grows_while_unsampled_correct_mass_shrinks():
    # Proposition 3.2's point: an easy prompt, a reward-positive batch (S_R > 0), one correct action unsampled.
    p = np.array([0.7, 0.1, 0.2])
    correct = np.array([True, True, False])
    counts = np.array([4, 0, 0])  # all draws hit the dominant correct action
    dq_pos, dq_upos = first_order_mass_change(p, correct, counts, 1.0, 0.0, 0.5)
    assert dq_pos > 0 > dq_upos
    exact_pos, exact_upos = exact_mass_change(p, correct, counts, 1.0, 0.0, 0.5)
    assert exact_pos > 0 > exact_upos


def test_batches_broadcast_like_a_loop():
    rng = np.random.default_rng(5)
    cases = [_random_case(rng) for _ in range(4)]
    p, correct, counts = (np.stack(x) for x in zip(*cases))
    for fn in (first_order_mass_change, exact_mass_change):
        pos, upos = fn(p, correct, counts, 1.0, -1.0, 0.2)
        assert pos.shape == (4,)
        for i, case in enumerate(cases):
            assert np.allclose((pos[i], upos[i]), fn(*case, 1.0, -1.0, 0.2), rtol=1e-13, atol=1e-17)


def _enumerate_sampled_mass(p, members, draws):
    """E[sum of p over distinct members hit by `draws` i.i.d. draws from p restricted to members], by enumeration."""
    idx = np.flatnonzero(members)
    q = p[idx] / p[idx].sum()
    total = 0.0
    for seq in itertools.product(range(len(idx)), repeat=draws):
        prob = math.prod(q[j] for j in seq)
        total += prob * p[idx[sorted(set(seq))]].sum()
    return total


def test_lemma_h1_against_enumeration_and_monotone():
    rng = np.random.default_rng(6)
    p, correct, _ = _random_case(rng, k=6)
    n = 4
    for k in range(n + 1):
        assert expected_sampled_correct_mass(p, correct, n, k) == pytest.approx(_enumerate_sampled_mass(p, correct, k), rel=1e-12, abs=1e-15)
        assert expected_sampled_incorrect_mass(p, correct, n, k) == pytest.approx(_enumerate_sampled_mass(p, ~correct, n - k), rel=1e-12, abs=1e-15)
    pos = expected_sampled_correct_mass(p, correct, 10, np.arange(11))
    neg = expected_sampled_incorrect_mass(p, correct, 10, np.arange(11))
    assert np.all(np.diff(pos) >= 0) and np.all(np.diff(neg) <= 0)
    assert pos[0] == 0.0 and neg[-1] == 0.0


def test_unsampled_square_mass_against_enumeration():
    p = np.array([0.5, 0.3, 0.2])
    n = 4
    total = 0.0
    for seq in itertools.product(range(3), repeat=n):
        unsampled = [i for i in range(3) if i not in seq]
        total += math.prod(p[j] for j in seq) * sum(p[i] ** 2 for i in unsampled)
    assert expected_unsampled_square_mass(p, n) == pytest.approx(total, rel=1e-12)


def test_stable_for_tiny_probabilities_and_large_n():
    p = np.array([1e-12, 3e-13, 1 - 1.3e-12])
    n = 2**20
    with mpmath.workdps(50):
        ref = sum(mpmath.mpf(x) ** 2 * (1 - mpmath.mpf(x)) ** n for x in p)
    assert abs(expected_unsampled_square_mass(p, n) - ref) <= 1e-9 * ref
    correct = np.array([True, True, False])
    with mpmath.workdps(50):
        mu = mpmath.mpf(p[0]) + mpmath.mpf(p[1])
        ref = sum(mpmath.mpf(x) * (1 - (1 - mpmath.mpf(x) / mu) ** 3) for x in p[:2])
    assert abs(expected_sampled_correct_mass(p, correct, 5, 3) - ref) <= 1e-9 * ref


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: first_order_mass_change([0.5, 0.6], [True, False], [1, 1]), "p must sum to 1"),
        (lambda: first_order_mass_change([0.5, 0.5], [True, False], [-1, 2]), "counts must be in [0"),
        (lambda: first_order_mass_change([0.5, 0.5], [True, False], [0, 0]), "counts must contain at least one draw"),
        (lambda: first_order_mass_change([0.5, 0.5], [True, False], [1, 1], 0.0, 1.0), "reward_wrong must be in"),
        (lambda: exact_mass_change([0.5, 0.5], [True, False], [1, 1], eta=-1.0), "eta must be in [0, inf]"),
        (lambda: exact_mass_change([0.5, 0.5], [True, False, True], [1, 1]), "correct and counts must have the shape of p"),
        (lambda: expected_sampled_correct_mass([0.5, 0.5], [True, False], 3, 4), "k must be in [0, n]"),
        (lambda: expected_unsampled_square_mass([0.5, 1.5], 3), "p must be in [0, 1]"),
    ],
)
def test_bad_input_names_parameter(call, fragment):
    with pytest.raises(ValueError) as info:
        call()
    assert fragment in str(info.value)
