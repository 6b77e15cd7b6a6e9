"""The paired tests of a pass@k difference: the u-statistic z-test's exact variance and its measured size, App. Q's
test's measured size (why it is not the default), and App. Q's default m below small n."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom

from fgrpo_sim.metrics import (
    paired_subsampling_test,
    paired_ustatistic_test,
    pass_at_k_variance,
    run_paired_test,
)

ALPHA = 0.05


def _exact_variance(n, p, k):
    """Var of 1 - C(n - X, k) / C(n, k), X ~ Binomial(n, p), with rationals."""
    p = Fraction(p)
    weights = [math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(n + 1)]
    values = [1 - Fraction(math.comb(n - x, k), math.comb(n, k)) for x in range(n + 1)]
    mean = sum(w * v for w, v in zip(weights, values))
    return sum(w * (v - mean) ** 2 for w, v in zip(weights, values)), weights


@pytest.mark.parametrize(("n", "p", "k"), [(8, "1/10", 4), (10, "3/10", 3), (16, "1/2", 1), (12, "9/10", 6)])
def test_variance_estimate_is_unbiased(n, p, k):
    exact, weights = _exact_variance(n, Fraction(p), k)
    expected = sum(float(w) * pass_at_k_variance(n, x, k) for x, w in enumerate(weights))
    assert expected == pytest.approx(float(exact), rel=1e-10)


def test_variance_estimate_edges_and_refusals():
    assert pass_at_k_variance(8, [0, 8, 7], 2).tolist() == [0.0, 0.0, 0.0]  # all agree, or no k-subset all wrong
    assert pass_at_k_variance(64, 16, 1) == pytest.approx((16 / 64) * (48 / 64) / 63, rel=1e-12)  # s^2 / n
    assert pass_at_k_variance(1024, 1, 256) > 0 and np.isfinite(pass_at_k_variance(1024, 3, 512))
    with pytest.raises(ValueError, match=r"k must be in \[1, n / 2\]"):
        pass_at_k_variance(8, 3, 5)
    with pytest.raises(ValueError, match=r"ks must be in \[1, smallest n / 2 = 4\]"):
        paired_ustatistic_test([8, 8], [1, 2], [8, 8], [3, 4], ks=[1, 5])


def test_identical_and_planted_differences():
    rng = np.random.default_rng(5)
    mu = rng.beta(0.6, 0.6, 200)
    n = np.full(200, 256)
    c_a, c_b = rng.binomial(256, np.clip(mu + 0.06, 0, 1)), rng.binomial(256, mu)
    same = paired_ustatistic_test(n, c_b, n, c_b, ks=[1, 4])
    assert np.all(same.difference == 0) and np.all(same.p_value == 1) and not same.significant.any()
    res = paired_ustatistic_test(n, c_a, n, c_b, ks=[1, 4])
    assert np.all(res.significant) and np.all(res.lower > 0) and np.all(res.p_value < 0.01)
    # p < alpha exactly when the interval excludes 0
    for row in paired_ustatistic_test(n[:30], c_a[:30], n[:30], c_b[:30], ks=[1, 2, 8, 64]).rows():
        assert (row["p_value"] < ALPHA) == (row["ci_low"] > 0 or row["ci_high"] < 0) == row["significant"]


def _null_draws(n, problems, draws, seed):
    """Seeded null draws: both models' counts ~ Binomial(n, p_i), p_i ~ Beta(0.5, 0.5) (many near 0 and 1)."""
    rng = np.random.default_rng(seed)
    for _ in range(draws):
        rates = rng.beta(0.5, 0.5, problems)
        yield np.full(problems, n), rng.binomial(n, rates), rng.binomial(n, rates)


def _acceptance_band(draws, alpha=ALPHA, outside=1e-4):
    """Rejection counts a test of true size alpha gives with probability 1 - 2 * outside."""
    return int(binom.ppf(outside, draws, alpha)), int(binom.isf(outside, draws, alpha))


@pytest.mark.parametrize("n", [8, 64, 1024])
def test_ustatistic_test_rejects_a_true_null_at_about_alpha(n):
    """The default test's size, measured: 1,000 seeded null draws of 60 problems, k = 1 and k = n / 4. A test of
    size 5% lands in the band with probability 0.9998; App. Q's 0.1% (below) would give about 1 rejection."""
    draws, ks = 1000, [1, n // 4]
    rejected = np.zeros(2, dtype=int)
    for n_arr, c_a, c_b in _null_draws(n, 60, draws, seed=n):
        rejected += paired_ustatistic_test(n_arr, c_a, n_arr, c_b, ks=ks, alpha=ALPHA).significant
    low, high = _acceptance_band(draws)
    assert all(low <= r <= high for r in rejected), (rejected, (low, high))


def test_app_q_test_size_is_far_below_alpha():
    """Why App. Q's test is not the default: its interval is that of an m-sample estimator (sqrt(n / m) wider than
    the n-sample estimate's), so a true null is almost never rejected. 400 seeded null draws at n = 16 (m = 4):
    at size 5% fewer than the band's lower end happens with probability 1e-4."""
    draws, rejected = 400, 0
    for n_arr, c_a, c_b in _null_draws(16, 60, draws, seed=16):
        rejected += int(paired_subsampling_test(n_arr, c_a, n_arr, c_b, ks=[1], iterations=200, seed=0).significant[0])
    low, _ = _acceptance_band(draws)
    assert rejected <= 2 < low, (rejected, low)


def test_app_q_default_m_follows_subsample_size():
    # the default m was a fixed 256, refused at every n <= 256
    res = paired_subsampling_test([8, 8, 8], [1, 4, 6], [8, 8, 8], [2, 4, 5], ks=[1, 2], iterations=100)
    assert res.m == 2
    assert paired_subsampling_test([1024] * 2, [10, 500], [1024] * 2, [12, 480], iterations=40).m == 256


def test_run_paired_test_by_name():
    n, c_a, c_b = [16] * 4, [3, 8, 10, 16], [2, 8, 12, 15]
    assert run_paired_test("u-statistic", n, c_a, n, c_b, [1, 8]).rows()[1]["k"] == 8
    app_q = run_paired_test("app-q", n, c_a, n, c_b, [1], iterations=100)
    assert app_q.m == 4 and app_q.rows()[0]["k"] == 1
    with pytest.raises(ValueError, match="test must be one of u-statistic, app-q, got 'z'"):
        run_paired_test("z", n, c_a, n, c_b, [1])
