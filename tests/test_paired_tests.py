"""The paired tests of a pass@k difference: the default conditional test's exact null, degenerate sets and size
at the edges; the u-statistic z-test's exact variance and its measured size, App. Q's
test's measured size (why it is not the default), and App. Q's default m below small n."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom

from fgrpo_sim.metrics import (
    DEFAULT_TEST,
    paired_conditional_test,
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
    assert run_paired_test("conditional", n, c_a, n, c_b, [16]).rows()[0]["k"] == 16  # every k <= n
    with pytest.raises(ValueError, match="test must be one of conditional, u-statistic, app-q, got 'z'"):
        run_paired_test("z", n, c_a, n, c_b, [1])


def _miss(n, c, k):
    """C(n - c, k) / C(n, k) as a rational: 1 - pass@k."""
    return Fraction(math.comb(n - c, k), math.comb(n, k))


def _exact_split_law(n_a, c_a, n_b, c_b, k):
    """The conditional null of D = mean pass@k(A) - mean pass@k(B), enumerated with rationals (math.comb): every
    problem's pooled count split every possible way, weighted by its hypergeometric probability; value -> weight."""
    law = {Fraction(0): Fraction(1)}
    for na, ca, nb, cb in zip(n_a, c_a, n_b, c_b):
        s, step = ca + cb, {}
        for x in range(max(0, s - nb), min(s, na) + 1):
            weight = Fraction(math.comb(s, x) * math.comb(na + nb - s, na - x), math.comb(na + nb, na))
            value = _miss(nb, s - x, k) - _miss(na, x, k)
            step[value] = step.get(value, 0) + weight
        convolved = {}
        for d, w1 in law.items():
            for v, w2 in step.items():
                convolved[d + v] = convolved.get(d + v, 0) + w1 * w2
        law = convolved
    return {d / len(n_a): w for d, w in law.items()}


@pytest.mark.parametrize(("n_a", "c_a", "n_b", "c_b", "k"), [
    ([8], [8], [8], [0], 1),                     # the degenerate set: one problem, 8/8 against 0/8
    ([6, 4, 8], [5, 1, 7], [6, 5, 8], [2, 3, 6], 2),  # n differing between problems and models
    ([4, 4, 4, 4], [4, 3, 0, 2], [4, 4, 4, 4], [1, 3, 0, 0], 4),  # k = n
])
def test_conditional_test_matches_the_enumerated_null(n_a, c_a, n_b, c_b, k):
    """The null spread (std_error) equals the enumerated law's exactly; the Monte Carlo p-value lies between the
    enumerated P(|D*| > |D|) and P(|D*| >= |D|) (its randomised tie-break), within 4 Monte Carlo sd."""
    law = _exact_split_law(n_a, c_a, n_b, c_b, k)
    observed = abs(sum(_miss(nb, cb, k) - _miss(na, ca, k) for na, ca, nb, cb in zip(n_a, c_a, n_b, c_b)) / len(n_a))
    mean = sum(d * w for d, w in law.items())
    sd = math.sqrt(sum((d - mean) ** 2 * w for d, w in law.items()))
    above = float(sum(w for d, w in law.items() if abs(d) > observed))
    at_least = float(sum(w for d, w in law.items() if abs(d) >= observed))
    rounds = 20_000
    res = paired_conditional_test(n_a, c_a, n_b, c_b, [k], rounds=rounds, seed=3)
    assert mean == 0 and res.std_error[0] == pytest.approx(sd, rel=1e-9)
    slack = 4 * math.sqrt(max(at_least, 1 / rounds) / rounds)
    assert above - slack <= res.p_value[0] <= at_least + slack, (res.p_value[0], above, at_least)
    assert res.p_value[0] > 0


def test_degenerate_sets_get_a_sound_verdict_or_none():
    """The issue's sets: p > 0 and an interval of nonzero width where significant (the u-statistic z-test, the old
    default, gave p = 0 and [+1, +1]); no verdict where no problem can split differently."""
    for n_a, c_a, n_b, c_b in (([8], [8], [8], [0]), ([8] * 20, [8] * 10 + [0] * 10, [8] * 20, [8] * 9 + [0] * 11)):
        row = run_paired_test(DEFAULT_TEST, n_a, c_a, n_b, c_b, [1])
        row = row.rows()[0]
        assert row["significant"] and 0 < row["p_value"] < ALPHA
        assert row["ci_low"] < row["difference"] < row["ci_high"] and row["ci_low"] > 0
    none = paired_conditional_test([8, 8], [8, 0], [8, 8], [8, 0], [1, 8]).rows()
    assert [("skipped" in r, "p_value" in r) for r in none] == [(True, False)] * 2
    # at k = n every split keeps a correct sample in both models when the pooled count exceeds n: no test there
    rows = paired_conditional_test([4, 4], [3, 4], [4, 4], [2, 3], [1, 4]).rows()
    assert "p_value" in rows[0] and "skipped" in rows[1]


def test_conditional_test_is_seeded_and_checks_its_input():
    n, c_a, c_b = [16] * 6, [3, 8, 10, 16, 0, 5], [2, 8, 12, 15, 1, 9]
    one = paired_conditional_test(n, c_a, n, c_b, [1, 16], seed=7).p_value
    assert np.array_equal(one, paired_conditional_test(n, c_a, n, c_b, [1, 16], seed=7).p_value)
    with pytest.raises(ValueError, match=r"ks must be in \[1, smallest n = 16\]"):
        paired_conditional_test(n, c_a, n, c_b, [17])
    with pytest.raises(ValueError, match=r"rounds must be in \[20, "):
        paired_conditional_test(n, c_a, n, c_b, [1], rounds=19)
    with pytest.raises(ValueError, match="n_b must list the same problems"):
        paired_conditional_test(n, c_a, n[:5], c_b[:5], [1])


def _null_draws_law(law, problems, n, draws, seed):
    rng = np.random.default_rng(seed)
    for _ in range(draws):
        rates = rng.uniform(0.2, 0.8, problems) if law == "mid" else rng.beta(0.2, 0.2, problems)
        yield np.full(problems, n), rng.binomial(n, rates), rng.binomial(n, rates)


@pytest.mark.parametrize(("law", "problems", "n", "ks"), [
    ("mid", 10, 8, [1, 2, 4, 8]),       # the worst: the z-test rejected 11.0% at k = n / 2
    ("mostly 0/1", 30, 8, [1, 4, 8]),   # 10.65% at k = n / 2 for the z-test
    ("mid", 5, 2, [1, 2]),              # a conservative exact p rejected 0-1% here
])
def test_default_test_size_at_the_edges(law, problems, n, ks):
    """400 seeded null draws per setting; the default test's rejections (where it gives a verdict) lie in the band
    a size-5% test stays in with probability 0.9998. 199 rounds: the size does not depend on the rounds."""
    assert DEFAULT_TEST == "conditional"
    rejected, tested = np.zeros(len(ks), dtype=int), np.zeros(len(ks), dtype=int)
    for draw, (n_arr, c_a, c_b) in enumerate(_null_draws_law(law, problems, n, 400, seed=problems * n)):
        res = paired_conditional_test(n_arr, c_a, n_arr, c_b, ks, rounds=199, seed=draw)
        rejected += res.significant
        tested += res.tested
    for r, t in zip(rejected, tested):
        low, high = _acceptance_band(int(t))
        assert low <= r <= high, (law, problems, n, rejected, tested)


def test_ustatistic_test_gives_no_verdict_without_variance():
    """Issue 45: one problem at 8/8 against 0/8 got p = 0, 'significant' and the interval [+1, +1] from the z-test;
    now that k has no verdict (the estimated variance is 0), while a k with variance keeps its test."""
    res = paired_ustatistic_test([8], [8], [8], [0], ks=[1, 4])
    assert not res.significant.any() and np.isnan(res.p_value).all()
    assert [sorted(r) for r in res.rows()] == [["difference", "k", "pass_a", "pass_b", "skipped"]] * 2
    mixed = paired_ustatistic_test([8, 8], [8, 3], [8, 8], [0, 5], ks=[1]).rows()[0]
    assert "p_value" in mixed and mixed["ci_high"] > mixed["ci_low"]
