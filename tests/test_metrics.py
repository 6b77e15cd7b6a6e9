"""pass@k estimator, curves with bootstrap intervals, and the paired subsampling test."""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from fgrpo_sim.metrics import (
    counts_from_matrix,
    paired_subsampling_test,
    pass_at_k,
    pass_at_k_curve,
    pass_at_k_table,
)


def exact_pass_at_k(n, c, k):
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def test_pass_at_k_matches_exact_rationals():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        c = int(rng.integers(0, n + 1))
        k = int(rng.integers(1, n + 1))
        assert pass_at_k(n, c, k) == pytest.approx(float(exact_pass_at_k(n, c, k)), rel=1e-12, abs=1e-15)


def test_pass_at_k_edge_cases():
    for n in (1, 2, 7, 1024):
        assert pass_at_k(n, 0, 1) == 0.0 and pass_at_k(n, 0, n) == 0.0  # c = 0
        assert pass_at_k(n, n, 1) == 1.0 and pass_at_k(n, n, n) == 1.0  # c = n
        assert pass_at_k(n, 1, n) == 1.0  # k = n with one correct sample
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 3, 8) == 1.0  # n - c = 7 < k
    assert pass_at_k(1024, 1, 1) == pytest.approx(1 / 1024, rel=1e-12)


def test_pass_at_k_large_n_against_high_precision():
    mpmath.mp.dps = 60
    for n, c, k in [(100_000, 1, 1), (100_000, 3, 500), (100_000, 50, 1000), (100_000, 99_000, 10), (100_000, 2, 99_000),
                    (100_000, 65, 65), (100_000, 100, 1000), (100_000, 40_000, 70), (1_000, 1, 1), (1_000, 500, 400)]:
        exact = 1 - mpmath.binomial(n - c, k) / mpmath.binomial(n, k)
        assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-8)


def test_pass_at_k_vectorised_broadcasting():
    n = np.array([10, 20, 30])
    c = np.array([0, 5, 30])
    ks = np.array([1, 2, 10])
    table = pass_at_k(n[:, None], c[:, None], ks[None, :])
    assert table.shape == (3, 3)
    for i in range(3):
        for j in range(3):
            assert table[i, j] == pytest.approx(float(exact_pass_at_k(n[i], c[i], ks[j])), rel=1e-12)
    t = pass_at_k_table(8, [1, 4, 8])
    assert t.shape == (3, 9) and t[0, 3] == pytest.approx(3 / 8) and t[2, 1] == 1.0 and t[1, 0] == 0.0


@pytest.mark.parametrize(
    "args, message",
    [((4, 2, 5), "k must be in \\[1, n\\]"), ((4, 5, 1), "c must be in \\[0, n\\]"), ((0, 0, 1), "n must be in"),
     ((4, 2, 0), "k must be in"), ((4.5, 2, 1), "n must be an integer"), ((4, -1, 1), "c must be in")],
)
def test_pass_at_k_validation(args, message):
    with pytest.raises(ValueError, match=message):
        pass_at_k(*args)


def test_curve_from_matrix_and_counts():
    rng = np.random.default_rng(1)
    correct = rng.random((40, 16)) < rng.random((40, 1))
    n, c = counts_from_matrix(correct)
    a = pass_at_k_curve(correct=correct, n_bootstrap=200)
    b = pass_at_k_curve(n, c, n_bootstrap=200)
    assert np.array_equal(a.ks, np.arange(1, 17))
    assert np.allclose(a.mean, b.mean) and np.allclose(a.lower, b.lower)
    assert a.mean[0] == pytest.approx(correct.mean())
    assert np.all(np.diff(a.mean) >= 0)  # pass@k never decreases in k
    assert np.all(a.lower <= a.mean + 1e-12) and np.all(a.mean <= a.upper + 1e-12)


def test_bootstrap_interval_width_matches_standard_error():
    rng = np.random.default_rng(2)
    n = np.full(400, 64)
    c = rng.binomial(64, rng.random(400))
    curve = pass_at_k_curve(n, c, ks=[1, 8], n_bootstrap=4000, seed=3)
    se = curve.per_problem.std(axis=0) / math.sqrt(400)
    half_width = (curve.upper - curve.lower) / 2
    assert np.allclose(half_width, 1.96 * se, rtol=0.12)


def test_curve_mixed_n_and_k_too_large():
    n = np.array([8, 16, 4])
    c = np.array([2, 16, 0])
    curve = pass_at_k_curve(n, c, n_bootstrap=0)
    assert np.array_equal(curve.ks, [1, 2, 3, 4])  # default k = 1..min n
    assert curve.mean[0] == pytest.approx((2 / 8 + 1 + 0) / 3)
    assert np.array_equal(curve.lower, curve.mean)
    with pytest.raises(ValueError, match="k = 8 but problem index 2 has n = 4"):
        pass_at_k_curve(n, c, ks=[1, 8])
    with pytest.raises(ValueError, match="give either"):
        pass_at_k_curve(n)


def _population(rng, problems, n, shift=0.0):
    mu = rng.beta(0.6, 0.6, problems)
    return np.full(problems, n), rng.binomial(n, np.clip(mu + shift, 0, 1))


def test_identical_models_interval_contains_zero():
    rng = np.random.default_rng(4)
    n, c = _population(rng, 120, 128)
    for seed in range(3):
        res = paired_subsampling_test(n, c, n, c, ks=[1, 4, 16, 32], m=32, iterations=2000, seed=seed)
        assert np.all(res.lower <= 0) and np.all(res.upper >= 0)
        assert not res.significant.any() and np.all(res.difference == 0)
        assert np.all(res.p_value > 0.05)
    # Linked samples that are literally the same generations: every round's difference is exactly 0.
    res = paired_subsampling_test(n, c, n, c, ks=[1, 8], m=32, iterations=500, both_correct=c)
    assert np.all(res.lower == 0) and np.all(res.upper == 0) and np.all(res.p_value == 1)


def test_planted_difference_is_detected():
    rng = np.random.default_rng(5)
    mu = rng.beta(0.6, 0.6, 200)
    n = np.full(200, 256)
    c_a = rng.binomial(256, np.clip(mu + 0.06, 0, 1))
    c_b = rng.binomial(256, mu)
    res = paired_subsampling_test(n, c_a, n, c_b, ks=[1, 4], m=64, iterations=2000, seed=1)
    assert np.all(res.significant) and np.all(res.lower > 0) and np.all(res.p_value < 0.01)
    assert res.difference[0] == pytest.approx(c_a.mean() / 256 - c_b.mean() / 256)
    swapped = paired_subsampling_test(n, c_b, n, c_a, ks=[1], m=64, iterations=2000, seed=1)
    assert swapped.upper[0] < 0 and swapped.significant[0]


def test_subsample_rounds_are_unbiased_and_match_brute_force():
    # E[pass@k of an m-subsample] = pass@k of the full n samples, and the spread of the round means
    # matches an explicit index-subsampling implementation.
    rng = np.random.default_rng(6)
    correct_a = rng.random((5, 12)) < np.array([[0.1], [0.4], [0.5], [0.9], [0.0]])
    correct_b = rng.random((5, 12)) < 0.5
    n_a, c_a = counts_from_matrix(correct_a)
    n_b, c_b = counts_from_matrix(correct_b)
    m, k, rounds = 5, 2, 20_000
    res = paired_subsampling_test(n_a, c_a, n_b, c_b, ks=[k], m=m, iterations=rounds, seed=7)
    assert res.subsample_mean_difference[0] == pytest.approx(res.difference[0], abs=0.01)
    # Brute force: explicit random index subsets (argsort of uniforms = a random permutation).
    ia = np.argsort(rng.random((rounds, 5, 12)), axis=2)[:, :, :m]
    ib = np.argsort(rng.random((rounds, 5, 12)), axis=2)[:, :, :m]
    xa = np.take_along_axis(np.broadcast_to(correct_a, (rounds, 5, 12)), ia, 2).sum(2)
    xb = np.take_along_axis(np.broadcast_to(correct_b, (rounds, 5, 12)), ib, 2).sum(2)
    brute = pass_at_k(m, xa, k).mean(1) - pass_at_k(m, xb, k).mean(1)
    assert brute.mean() == pytest.approx(res.difference[0], abs=0.01)
    brute_width = np.quantile(brute, 0.975) - np.quantile(brute, 0.025)
    assert res.upper[0] - res.lower[0] == pytest.approx(brute_width, rel=0.08)


def test_linked_draws_are_consistent():
    # With linked samples the marginal of each model is still hypergeometric: the round means are unbiased.
    rng = np.random.default_rng(8)
    both_a = rng.random((50, 64)) < 0.5
    both_b = both_a ^ (rng.random((50, 64)) < 0.2)
    n, c_a = counts_from_matrix(both_a)
    _, c_b = counts_from_matrix(both_b)
    both = (both_a & both_b).sum(1)
    linked = paired_subsampling_test(n, c_a, n, c_b, ks=[1, 4], m=16, iterations=3000, both_correct=both, seed=2)
    indep = paired_subsampling_test(n, c_a, n, c_b, ks=[1, 4], m=16, iterations=3000, seed=2)
    assert np.allclose(linked.subsample_mean_difference, linked.difference, atol=0.004)
    # Positive correlation between the models' samples narrows the interval.
    assert np.all(linked.upper - linked.lower < indep.upper - indep.lower)


@pytest.mark.parametrize(
    "kwargs, message",
    [(dict(m=200), "m must be in \\[1, 127\\]"), (dict(ks=[64]), "ks must be in \\[1, m = 32\\]"),
     (dict(alpha=1.5), "alpha must be in"), (dict(iterations=0), "iterations must be in"),
     (dict(both_correct=np.full(10, 200)), "both_correct must be in")],
)
def test_subsampling_validation(kwargs, message):
    n = np.full(10, 128)
    c = np.arange(10) * 10
    args = dict(ks=[1], m=32, iterations=100)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        paired_subsampling_test(n, c, n, c, **args)
    with pytest.raises(ValueError, match="same problems"):
        paired_subsampling_test(n, c, n[:5], c[:5], ks=[1], m=4, iterations=100)


def test_negative_seed_is_a_named_error():
    from fgrpo_sim.metrics import paired_subsampling_test, pass_at_k_curve

    with pytest.raises(ValueError, match=r"^seed must be in \[0, "):
        pass_at_k_curve([4, 4], [1, 2], ks=[1], seed=-1)
    with pytest.raises(ValueError, match=r"^seed must be in \[0, "):
        paired_subsampling_test([4, 4], [1, 2], [4, 4], [1, 2], ks=[1], m=2, iterations=100, seed=-1)


def test_subsample_size_is_one_rule_and_refuses_degenerate_m():
    """m = n draws every sample each round: a zero-width interval that stars any nonzero difference (issue 29)."""
    from fgrpo_sim.metrics import subsample_size

    assert [subsample_size(n) for n in (1024, 4096, 256, 8, 3, 2)] == [256, 256, 64, 2, 1, 1]
    assert subsample_size(8, 7) == 7
    with pytest.raises(ValueError, match=r"^m must be in \[1, 7\], got 8$"):
        subsample_size(8, 8)
    with pytest.raises(ValueError, match="at least 2 samples per problem, got a problem with n = 1"):
        subsample_size(1)
    n = np.full(10, 8)
    c_a, c_b = np.full(10, 4), np.r_[np.full(9, 4), 5]
    with pytest.raises(ValueError, match=r"^m must be in \[1, 7\], got 8$"):
        paired_subsampling_test(n, c_a, n, c_b, ks=[1], m=8, iterations=1000)
    with pytest.raises(ValueError, match="at least 2 samples per problem"):
        paired_subsampling_test([1, 1], [0, 1], [1, 1], [1, 1], ks=[1], m=1, iterations=1000)


def test_subsampling_refuses_too_few_rounds_for_alpha():
    """With B < 2 / alpha rounds the percentile interval can exclude 0 while p >= alpha (B = 1: p = 1, starred)."""
    from fgrpo_sim.metrics.subsampling import min_iterations

    assert min_iterations(0.05) == 40 and min_iterations(0.01) == 200 and min_iterations(0.5) == 4
    n, c_a, c_b = np.full(20, 64), np.full(20, 60), np.full(20, 4)
    with pytest.raises(ValueError, match=r"^iterations must be >= 2 / alpha = 40 .*got 39$"):
        paired_subsampling_test(n, c_a, n, c_b, ks=[1], m=16, iterations=39)
    res = paired_subsampling_test(n, c_a, n, c_b, ks=[1], m=16, iterations=40)
    assert bool(res.significant[0]) == bool(res.p_value[0] < 0.05)


def test_bootstrap_over_one_problem_is_refused():
    """One problem: every bootstrap resample is that problem, a zero-width interval; refused, not returned."""
    with pytest.raises(ValueError, match=r"^n_bootstrap must be 0 for a single problem"):
        pass_at_k_curve([16], [3], ks=[1, 4], n_bootstrap=100)
    curve = pass_at_k_curve([16], [3], ks=[1, 4], n_bootstrap=0)
    assert curve.lower[0] == curve.upper[0] == pytest.approx(3 / 16)


def test_curve_interval_covers_the_true_pass_at_k():
    # 95% percentile intervals over 60 problems, 150 replicate problem sets drawn from a known law:
    # the interval must contain the true mean pass@1 in about 95% of them (percentile bootstrap
    # runs a little narrow at small samples: ~0.93 expected; 150 draws give +-0.04 of noise).
    rng = np.random.default_rng(7)
    true_p = rng.beta(2, 3, size=200_000)
    truth = true_p.mean()
    hits = 0
    for _ in range(150):
        p = rng.choice(true_p, 60)
        c = rng.binomial(8, p)
        curve = pass_at_k_curve(np.full(60, 8), c, ks=[1], n_bootstrap=400, seed=int(rng.integers(1 << 30)))
        hits += bool(curve.lower[0] <= truth <= curve.upper[0])
    assert 0.85 <= hits / 150 <= 0.99


def test_curve_resamples_problems_once_for_every_k():
    # A problem set whose pass@1 and pass@2 columns are equal (n = c or c = 0): one resample serves
    # every k, so their intervals are identical, not two independent draws.
    n = np.full(30, 4)
    c = np.array([0, 4] * 15)
    curve = pass_at_k_curve(n, c, ks=[1, 2], n_bootstrap=300, seed=5)
    assert curve.lower[0] == curve.lower[1] and curve.upper[0] == curve.upper[1]
    assert curve.lower[0] < 0.5 < curve.upper[0]


# --- pass@k at every k (`fgrpo passk --k all`, issue 50): one cumulative sum per problem ---------------------

def test_pass_at_every_k_is_exact_rationals_at_small_n():
    """Every (n, c, k) up to n = 30, against exact fractions (independent of both float routes)."""
    from fgrpo_sim.metrics.passk import pass_at_every_k

    for n in range(1, 31):
        table = pass_at_every_k(np.full(n + 1, n), np.arange(n + 1), n)
        exact = np.array([[float(exact_pass_at_k(n, c, k)) for k in range(1, n + 1)] for c in range(n + 1)])
        np.testing.assert_allclose(table, exact, rtol=1e-13, atol=0)


def test_pass_at_every_k_at_two_million_samples_matches_mpmath_at_sampled_k():
    """n = 2,000,000, every k at once, to 1e-12 relative of mpmath's 40-digit value, tiny and near-1 values
    included. `pass_at_k` agrees to 1e-6: its log-gamma route (min(c, k) > 64) loses digits at this n (1.4e-7
    relative at c = 1000, k = 65, beyond the 1e-7 its docstring states for n = 1e5)."""
    from fgrpo_sim.metrics.passk import pass_at_every_k

    n = 2_000_000
    cs = np.array([0, 1, 1000, n // 2, n - 1])
    table = pass_at_every_k(np.full(cs.size, n), cs, n)
    assert table.shape == (cs.size, n)
    mpmath.mp.dps = 40
    for row, c in enumerate(cs.tolist()):
        for k in (1, 2, 65, 1000, 10**5, n // 2, n - 1, n):
            value = table[row, k - 1]
            if c == 0 or n - c < k:
                assert value == (0.0 if c == 0 else 1.0), (c, k)
                continue
            log_ratio = (mpmath.loggamma(n - c + 1) - mpmath.loggamma(n - c - k + 1) - mpmath.loggamma(n + 1)
                         + mpmath.loggamma(n - k + 1))
            exact = float(-mpmath.expm1(log_ratio))
            assert value == pytest.approx(exact, rel=1e-12, abs=0), (c, k)
            assert pass_at_k(n, c, k) == pytest.approx(value, rel=1e-6), (c, k)


def test_pass_at_every_k_refuses_k_beyond_the_smallest_n():
    from fgrpo_sim.metrics.passk import pass_at_every_k

    with pytest.raises(ValueError, match=r"k_max must be in \[1, 4\], got 5"):
        pass_at_every_k([4, 8], [1, 2], 5)
    with pytest.raises(ValueError, match="c must be in"):
        pass_at_every_k([4], [5], 1)


def test_a_curve_over_every_k_agrees_with_the_same_curve_at_listed_k():
    """pass_at_k_curve takes the cumulative route for ks = 1..K, the per-k route otherwise: same means."""
    n = np.array([50, 64, 64, 80])
    c = np.array([1, 0, 30, 79])
    every = pass_at_k_curve(n, c, ks=np.arange(1, 51), n_bootstrap=0)
    listed = pass_at_k_curve(n, c, ks=[1, 2, 7, 25, 49, 50], n_bootstrap=0)
    np.testing.assert_allclose(every.mean[[0, 1, 6, 24, 48, 49]], listed.mean, rtol=1e-12)
