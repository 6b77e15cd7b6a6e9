"""metrics/ against mutmut's survivors of the whole-module run (benchmarks/mutation.py, issue 44): each test fails
on at least one mutant that every other metrics test let through (named in benchmarks/RESULTS.md, "Mutation
testing", metrics). Expected values are derived independently: exact fractions, mpmath, counts made by hand, or
the same function called with its defaults spelled out."""

from __future__ import annotations

import math
import re
import warnings
from fractions import Fraction
from math import comb
from statistics import NormalDist

import mpmath
import numpy as np
import pytest

from fgrpo_sim.metrics import pass_at_k_curve
from fgrpo_sim.metrics.conditional_test import NO_TEST, paired_conditional_test
from fgrpo_sim.metrics.passk import log_miss_ratio, pass_at_every_k, pass_at_k
from fgrpo_sim.metrics.ustat_test import NO_VARIANCE, paired_ustatistic_test, pass_at_k_variance


def test_a_k_without_a_test_says_why_in_its_row():
    """Both models all correct on one problem and all wrong on the other: no split and no variance can differ."""
    rows = paired_conditional_test([4, 4], [4, 0], [4, 4], [4, 0], [1, 2]).rows()
    assert rows == [{"k": k, "pass_a": 0.5, "pass_b": 0.5, "difference": 0.0, "skipped": NO_TEST} for k in (1, 2)]
    rows = paired_ustatistic_test([4, 4], [4, 0], [4, 4], [4, 0], [1, 2]).rows()
    assert rows == [{"k": k, "pass_a": 0.5, "pass_b": 0.5, "difference": 0.0, "skipped": NO_VARIANCE} for k in (1, 2)]


def test_curve_as_dict_counts_problems_not_ks():
    curve = pass_at_k_curve(n=[4, 4, 4], c=[1, 2, 3], ks=[1, 2], n_bootstrap=0)
    assert curve.as_dict()["problems"] == 3
    assert curve.as_dict()["pass_at_k"] == pytest.approx([1 / 2, (1 / 2 + 5 / 6 + 1) / 3], rel=1e-12)


def test_curve_bootstrap_seed_defaults_to_zero():
    n, c = [16] * 12, [0, 1, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16]
    default = pass_at_k_curve(n, c, ks=[1, 3], n_bootstrap=200)
    assert default.as_dict() == pass_at_k_curve(n, c, ks=[1, 3], n_bootstrap=200, seed=0).as_dict()
    # the data tell the seeds apart, so the equality above is about the default
    assert default.as_dict() != pass_at_k_curve(n, c, ks=[1, 3], n_bootstrap=200, seed=1).as_dict()


def test_curve_over_every_k_is_the_exact_cumulative_route_at_two_million_samples():
    """ks = 1..K takes pass_at_every_k's cumulative sum: 1e-12 of mpmath at n = 2e6 where pass_at_k's log-gamma
    route (min(c, k) > 64) is off by about 1e-7 relative."""
    n, c, ks = [2_000_000] * 2, [100, 300], np.arange(1, 201)
    curve = pass_at_k_curve(n, c, ks=ks, n_bootstrap=0)
    mpmath.mp.dps = 40
    for k in (100, 200):
        exact = sum(1 - mpmath.binomial(2_000_000 - ci, k) / mpmath.binomial(2_000_000, k) for ci in c) / 2
        assert curve.mean[k - 1] == pytest.approx(float(exact), rel=1e-12)


def _null_sd_at_k1(n_a, c_a, n_b, c_b):
    """The conditional test's exact null sd at k = 1, in closed form: pass@1 = c / n, so a problem's D* term is
    x / n_a - (s - x) / n_b = x (1 / n_a + 1 / n_b) - s / n_b with x hypergeometric (N = n_a + n_b, s, n_a)."""
    var = 0.0
    for na, ca, nb, cb in zip(n_a, c_a, n_b, c_b):
        total, s = na + nb, ca + cb
        var += (1 / na + 1 / nb) ** 2 * na * (s / total) * ((total - s) / total) * ((total - na) / (total - 1))
    return var ** 0.5 / len(n_a)


def _pass_frac(n, c, k):
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def _null_sd(n_a, c_a, n_b, c_b, k):
    """The exact null sd of D* at any k, enumerated: every split x of each problem's pooled count with its
    hypergeometric weight (exact fractions)."""
    var = Fraction(0)
    for na, ca, nb, cb in zip(n_a, c_a, n_b, c_b):
        s, total = ca + cb, na + nb
        law = {x: Fraction(comb(s, x) * comb(total - s, na - x), comb(total, na))
               for x in range(max(0, s - nb), min(s, na) + 1)}
        f = {x: _pass_frac(na, x, k) - _pass_frac(nb, s - x, k) for x in law}
        mean = sum(w * f[x] for x, w in law.items())
        var += sum(w * (f[x] - mean) ** 2 for x, w in law.items())
    return float(var) ** 0.5 / len(n_a)


def test_conditional_null_sd_with_two_sample_sizes_and_several_ks():
    """Model A drew 4 samples per problem, model B 6: two lookup tables; one k and several."""
    n_a, c_a, n_b, c_b = [4, 4, 4], [1, 3, 2], [6, 6, 6], [2, 5, 0]
    res = paired_conditional_test(n_a, c_a, n_b, c_b, [1, 2, 4], rounds=99)
    assert res.std_error.shape == (3,)
    assert res.std_error == pytest.approx([_null_sd(n_a, c_a, n_b, c_b, k) for k in (1, 2, 4)], rel=1e-9)
    one = paired_conditional_test(n_a, c_a, n_b, c_b, [2], rounds=99)
    assert one.std_error.shape == (1,) and one.std_error[0] == pytest.approx(res.std_error[1], rel=1e-12)
    assert res.std_error[0] == pytest.approx(_null_sd_at_k1(n_a, c_a, n_b, c_b), rel=1e-9)


def test_conditional_null_sd_at_the_papers_n():
    """n = 1024 per model: C(2048, 1024) is about e^1417, so the split law must stay in logs to the end."""
    n, c_a, c_b = [1024] * 3, [300, 512, 1000], [320, 480, 1024]
    res = paired_conditional_test(n, c_a, n, c_b, [1], rounds=99)
    assert res.std_error[0] == pytest.approx(_null_sd_at_k1(n, c_a, n, c_b), rel=1e-9)
    assert np.isfinite(res.p_value[0]) and 0 < res.p_value[0] <= 1


def test_conditional_seed_defaults_to_zero():
    n, c_a, c_b = [8] * 6, [3, 5, 2, 6, 4, 1], [4, 3, 3, 5, 6, 2]
    default = paired_conditional_test(n, c_a, n, c_b, [1, 2], rounds=99)
    assert np.array_equal(default.p_value, paired_conditional_test(n, c_a, n, c_b, [1, 2], rounds=99, seed=0).p_value)
    assert default.seed == 0
    # the data tell the seeds apart, so the equality above is about the default
    assert not np.array_equal(default.p_value,
                              paired_conditional_test(n, c_a, n, c_b, [1, 2], rounds=99, seed=1).p_value)


def test_conditional_refusals_name_the_parameter_and_range():
    n, c_a, c_b = [16], [3], [5]
    with pytest.raises(ValueError, match=r"^ks must be in \[1, smallest n = 16\], got k = 17$"):
        paired_conditional_test(n, c_a, n, c_b, [16, 17, 18])
    for alpha in (0, 1, 1.5):
        with pytest.raises(ValueError, match=rf"^alpha must be in \(0, 1\), got {alpha:g}$"):
            paired_conditional_test(n, c_a, n, c_b, [1], alpha=alpha)


@pytest.mark.parametrize("args, message", [
    (([0], [0], 1), "n must be in [1, inf], got 0"),
    (([4], [-1], 1), "c must be in [0, inf], got -1"),
    (([[4]], [[1]], 1), "n and c must be 1-D with one entry per problem, got shapes (1, 1) and (1, 1)"),
    (([4, 4], [1], 1), "n and c must be 1-D with one entry per problem, got shapes (2,) and (1,)"),
    (([4, 4], [4, 5], 1), "c must be in [0, n], got c = 5 for n = 4"),
    (([4, 3], [4, 5], 1), "c must be in [0, n], got c = 5 for n = 3"),
    (([], [], 2), "k_max must be in [1, 1], got 2"),
    (([4, 6], [1, 2], 5), "k_max must be in [1, 4], got 5"),
])
def test_pass_at_every_k_refusals(args, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        pass_at_every_k(*args)


def test_pass_at_every_k_of_no_problems_is_empty():
    assert pass_at_every_k([], [], 1).shape == (0, 1)


def test_conditional_p_value_and_interval_by_hand():
    """One problem, 8/8 against 0/8, k = 1: D = 1, and |D*| = 1 only for the splits x = 0 or 8 (probability
    2 / C(16, 8) per round), so in 99 rounds no round reaches |D| and p = 1 / (99 + 1) exactly. The interval is
    D -/+ z_0.975 se0 with se0 in closed form."""
    res = paired_conditional_test([8], [8], [8], [0], [1], rounds=99, seed=0)
    assert res.p_value[0] == 1 / 100 and res.significant[0] and res.tested[0]
    se = _null_sd_at_k1([8], [8], [8], [0])
    z = NormalDist().inv_cdf(0.975)
    assert (res.lower[0], res.upper[0]) == pytest.approx((1 - z * se, 1 + z * se), rel=1e-12)
    wide = paired_conditional_test([8], [8], [8], [0], [1], rounds=99, alpha=0.2)
    z = NormalDist().inv_cdf(0.9)
    assert (wide.lower[0], wide.upper[0]) == pytest.approx((1 - z * se, 1 + z * se), rel=1e-12)


def test_conditional_tie_break_is_uniform_on_the_p_grid():
    """n = 1 per model, 1/1 against 0/1: every split gives |D*| = 1 = |D|, so every round ties and p is D's rank
    among rounds + 1 exchangeable values with its ties broken at random: uniform on 1/3, 2/3, 1 at 2 rounds."""
    ps = [paired_conditional_test([1], [1], [1], [0], [1], alpha=0.5, rounds=2, seed=s).p_value[0] for s in range(60)]
    assert set(ps) == {1 / 3, 2 / 3, 1.0}
    assert all(ps.count(p) >= 10 for p in (1 / 3, 2 / 3, 1.0))


def test_conditional_rounds_in_memory_chunks_give_the_same_p(monkeypatch):
    """The rounds are drawn in blocks of _ROUND_CHUNK draws (memory); the block size changes no p-value."""
    from fgrpo_sim.metrics import conditional_test

    n, c_a, c_b = [8] * 6, [3, 5, 2, 6, 4, 1], [4, 3, 3, 5, 6, 2]
    whole = paired_conditional_test(n, c_a, n, c_b, [1, 2, 8], rounds=199, seed=3).p_value
    monkeypatch.setattr(conditional_test, "_ROUND_CHUNK", 8 * 6)  # 8 rounds of 6 problems per block: 25 blocks
    assert np.array_equal(paired_conditional_test(n, c_a, n, c_b, [1, 2, 8], rounds=199, seed=3).p_value, whole)
    monkeypatch.setattr(conditional_test, "_ROUND_CHUNK", 8)  # all-tie case (previous test) over 3 blocks
    ps = [paired_conditional_test([1], [1], [1], [0], [1], alpha=0.5, rounds=20, seed=s).p_value[0] for s in range(40)]
    assert max(ps) <= 1 and min(ps) >= 1 / 21 and max(ps) > 0.75


def test_conditional_problems_that_cannot_split_are_not_drawn():
    """Problems whose pooled samples all agree (0 or all correct in both models) add 0 to D and to every D*: the
    same seed gives the same p-values and null spread (scaled by the problem count) with them as without."""
    n, c_a, c_b = [8] * 6, [3, 5, 2, 6, 4, 1], [4, 3, 3, 5, 6, 2]
    base = paired_conditional_test(n, c_a, n, c_b, [1, 2, 8], rounds=199, seed=3)
    more = paired_conditional_test(n + [8, 8, 8], c_a + [0, 8, 0], n + [8, 8, 8], c_b + [0, 8, 0], [1, 2, 8],
                                   rounds=199, seed=3)
    assert np.array_equal(more.p_value, base.p_value)
    assert more.std_error * 9 == pytest.approx(base.std_error * 6, rel=1e-12)


def test_conditional_rounds_and_seed_bounds():
    n, c_a, c_b = [8], [3], [5]
    with pytest.raises(ValueError, match=r"^rounds must be in \[20, 10000000\], got 10000001$"):
        paired_conditional_test(n, c_a, n, c_b, [1], rounds=10**7 + 1)
    with pytest.raises(ValueError, match=r"^seed must be in \[0, 2\^63 - 1\], got -1$"):
        paired_conditional_test(n, c_a, n, c_b, [1], seed=-1)
    with pytest.raises(ValueError, match=r"^seed must be in \[0, 2\^63 - 1\], got 9223372036854775808$"):
        paired_conditional_test(n, c_a, n, c_b, [1], seed=2**63)
    assert paired_conditional_test(n, c_a, n, c_b, [1], rounds=99, seed=2**63 - 1).seed == 2**63 - 1


def test_ustatistic_p_value_interval_and_alpha_by_hand():
    """k = 1: v = p^(1 - p^) / (n - 1) per problem, se = sqrt(sum v_a + sum v_b) / P; p = 2 (1 - Phi(|D| / se))."""
    n, c_a, c_b = [10] * 4, [7, 5, 9, 6], [4, 5, 6, 3]
    res = paired_ustatistic_test(n, c_a, n, c_b, [1])
    var = sum(c / 10 * (1 - c / 10) / 9 for c in c_a + c_b) / 16
    d = (sum(c_a) - sum(c_b)) / 40
    se = var ** 0.5
    assert res.std_error[0] == pytest.approx(se, rel=1e-12)
    assert res.p_value[0] == pytest.approx(2 * (1 - NormalDist().cdf(d / se)), rel=1e-9)
    z = NormalDist().inv_cdf(0.975)
    assert (res.lower[0], res.upper[0]) == pytest.approx((d - z * se, d + z * se), rel=1e-12)
    assert res.alpha == 0.05
    wide = paired_ustatistic_test(n, c_a, n, c_b, [1], alpha=0.3)
    z = NormalDist().inv_cdf(0.85)
    assert (wide.lower[0], wide.upper[0], wide.alpha) == pytest.approx((d - z * se, d + z * se, 0.3), rel=1e-12)


def test_ustatistic_without_variance_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = paired_ustatistic_test([8, 8], [8, 0], [8, 8], [0, 8], [1, 2])
    assert np.isnan(res.p_value).all() and not res.significant.any()


@pytest.mark.parametrize("call, message", [
    (lambda: pass_at_k_variance([4, 4], [4, 5], 1), "c must be in [0, n], got c = 5"),
    (lambda: pass_at_k_variance([4, 3], [1, 1], 2),
     "k must be in [1, n / 2] (the variance of pass@k has no unbiased estimate beyond), got k = 2 for n = 3"),
    (lambda: paired_ustatistic_test([8], [1], [8], [2], [4, 5]),
     "ks must be in [1, smallest n / 2 = 4] (the variance of pass@k has no unbiased estimate beyond), got k = 5"),
])
def test_ustatistic_refusals_name_the_first_offender(call, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()


@pytest.mark.parametrize("kwargs, message", [
    (dict(n=[0], c=[0]), "n must be in [1, inf], got 0"),
    (dict(n=[4], c=[-1]), "c must be in [0, inf], got -1"),
    (dict(n=[4, 4], c=[4, 5]), "c must be in [0, n], got c = 5 for n = 4 (problem index 1)"),
])
def test_curve_count_refusals_name_the_first_offender(kwargs, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        pass_at_k_curve(**kwargs, n_bootstrap=0)


@pytest.mark.parametrize("args, message", [
    (([4, 4], [4, 5], 1), "c must be in [0, n], got c = 5 for n = 4"),
    (([4, 3], [1, 1], [4, 4]), "k must be in [1, n], got k = 4 for n = 3"),
])
def test_pass_at_k_refusals_name_the_first_offender(args, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        pass_at_k(*args)


def test_pass_at_k_at_the_product_forms_last_term_count():
    """min(c, k) = 64 is the last case of the product form (a few ulp); the log-gamma route would be off by about
    5e-7 relative here (n = 2e6)."""
    mpmath.mp.dps = 40
    exact = 1 - mpmath.binomial(2_000_000 - 64, 64) / mpmath.binomial(2_000_000, 64)
    assert pass_at_k(2_000_000, 64, 64) == pytest.approx(float(exact), rel=1e-12)


def test_pass_at_k_returns_a_float_for_scalars_and_plus_zero_without_a_correct_sample():
    value = pass_at_k(4, 1, 2)
    assert type(value) is float and value == 0.5
    assert type(pass_at_k_variance(4, 1, 2)) is float
    zero = pass_at_k(4, 0, 2)
    assert zero == 0.0 and math.copysign(1.0, zero) == 1.0  # prints as 0.0, never -0.0
    assert pass_at_k([4, 4], [1, 2], 2) == pytest.approx([0.5, 5 / 6], rel=1e-12)
    assert pass_at_k([4], [1], 2).shape == (1,)


def test_log_miss_ratio_of_no_correct_sample_is_zero():
    """log C(n - c, k) / C(n, k) at c = 0 is log 1 = 0 (the estimate of (1 - p)^k is 1)."""
    n, c, k = np.array([4, 8, 100]), np.array([0, 0, 0]), np.array([2, 8, 70])
    assert np.array_equal(log_miss_ratio(n, c, k), [0.0, 0.0, 0.0])


def test_paired_tests_name_the_count_at_fault_not_a_derived_bound():
    """A count out of range is named as such, before any bound derived from it (smallest n, both_correct)."""
    with pytest.raises(ValueError, match=r"^n must be in \[1, inf\], got 0$"):
        paired_conditional_test([0], [0], [4], [1], [1])
    from fgrpo_sim.metrics.subsampling import paired_subsampling_test

    with pytest.raises(ValueError, match=r"^c must be in \[0, inf\], got -1$"):
        paired_subsampling_test([8], [-1], [8], [2], [1], m=4, iterations=100, both_correct=[0])


def test_conditional_result_fields_and_significance_at_p_equal_alpha():
    """The result keeps its means per k and its settings; "significant" is p < alpha, so p = alpha exactly (on the
    grid 1 / (rounds + 1): 5 / 100 at 99 rounds) is not significant (docstring: size alpha - 1 / (rounds + 1))."""
    n, c_a, c_b = [4, 4, 4], [1, 2, 4], [0, 3, 3]
    res = paired_conditional_test(n, c_a, n, c_b, [1, 2], rounds=99, seed=5)
    assert res.pass_a == pytest.approx([7 / 12, (1 / 2 + 5 / 6 + 1) / 3], rel=1e-12)
    assert res.pass_b == pytest.approx([1 / 2, (0 + 1 + 1) / 3], rel=1e-12)
    assert (res.alpha, res.rounds, res.seed) == (0.05, 99, 5)
    at_alpha = 0
    for seed in range(300):  # every round ties (1/1 against 0/1), so p is uniform on 1/100 .. 1
        res = paired_conditional_test([1], [1], [1], [0], [1], rounds=99, seed=seed)
        assert res.significant[0] == (res.p_value[0] < 0.05)
        at_alpha += res.p_value[0] == 0.05
    assert at_alpha > 0


def test_bootstrap_paired_difference_defaults_and_boolean_runs():
    """Defaults: 20,000 resamples, seed 0 (data fine enough that another seed or count moves the bounds); runs given
    as booleans (solved or not per seed) are numbers, as everywhere else."""
    from fgrpo_sim.metrics import bootstrap_mean_ci, bootstrap_paired_difference_ci

    rng = np.random.default_rng(11)
    a, b = rng.normal(0.5, 0.2, 40), rng.normal(0.4, 0.2, 40)
    default = bootstrap_paired_difference_ci(a, b)
    assert default == bootstrap_mean_ci(a - b, 0.95, 20_000, 0)
    assert default != bootstrap_mean_ci(a - b, 0.95, 20_000, 1)
    assert default != bootstrap_mean_ci(a - b, 0.95, 20_001, 0)
    seeded = bootstrap_paired_difference_ci(a, b, seed=5)
    assert seeded == bootstrap_mean_ci(a - b, seed=5) and seeded != default
    solved_a, solved_b = [True, True, False, True, True, False], [False, True, False, False, True, False]
    res = bootstrap_paired_difference_ci(solved_a, solved_b, n_resamples=200)
    assert res.estimate == pytest.approx(2 / 6, rel=1e-12) and res.low <= res.estimate <= res.high


def test_paired_test_names_describe_the_conditional_test():
    from fgrpo_sim.metrics.paired_tests import describe, largest_k, untested_reason

    assert describe("conditional", 0.05) == ("conditional test (exact conditional test, pooled counts split by their "
                                             "hypergeometric law; 4,999 Monte Carlo rounds), two-sided alpha = 0.05")
    assert (largest_k("conditional", 8, None), largest_k("u-statistic", 8, None), largest_k("app-q", 8, 3)) == (8, 4, 3)
    assert untested_reason("conditional", None) == "no split can differ"


def test_run_paired_test_passes_alpha_seed_and_progress(monkeypatch):
    from fgrpo_sim.metrics import run_paired_test
    import fgrpo_sim.progress

    n, c_a, c_b = [8] * 4, [3, 5, 2, 6], [4, 3, 3, 5]
    res = run_paired_test("conditional", n, c_a, n, c_b, [1], alpha=0.3, seed=7)
    assert (res.alpha, res.seed) == (0.3, 7)
    assert res.rows() == paired_conditional_test(n, c_a, n, c_b, [1], alpha=0.3, seed=7).rows()
    seen = []  # a bar is drawn on a terminal only: record what the test asks of it
    monkeypatch.setattr(fgrpo_sim.progress, "bar", lambda it, **kw: seen.append(kw) or it)
    run_paired_test("app-q", n, c_a, n, c_b, [1], m=4, iterations=100)
    assert seen == []  # no bar by default
    run_paired_test("app-q", n, c_a, n, c_b, [1], m=4, iterations=100, progress=True)
    assert seen == [{"desc": "subsampling", "unit": "chunk"}]


def test_subsampling_rows_say_significant():
    from fgrpo_sim.metrics.subsampling import paired_subsampling_test

    res = paired_subsampling_test([8] * 10, [8] * 10, [8] * 10, [0] * 10, [1], m=4, iterations=200)
    assert res.significant[0] and res.rows()[0]["significant"] is True


@pytest.mark.parametrize("c_a, c_b, both", [(4, 8, 4), (4, 0, 0), (0, 4, 0)])
def test_linked_subsampling_draws_anew_every_round(c_a, c_b, both):
    """One problem, linked samples; one model's subsample count is fixed (all or none correct), so the round's
    difference varies only through the draw of the shared, A-only or B-only cell: each must vary by round."""
    from fgrpo_sim.metrics.subsampling import paired_subsampling_test

    res = paired_subsampling_test([8], [c_a], [8], [c_b], [1], m=4, iterations=200, both_correct=[both])
    assert res.lower[0] < res.upper[0]
    # the mean over rounds of pass@1 differences estimates (c_a - c_b) / 8 (hypergeometric mean m c / n)
    assert res.subsample_mean_difference[0] == pytest.approx((c_a - c_b) / 8, abs=0.05)


def _lines(tmp_path, lines, name="r.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_line_reader_accepts_the_bounds_of_n_and_c(tmp_path):
    """A blank line sends the file to the line-by-line reader; n = 1, n = 2^53 and c = 0 are counts it keeps."""
    from fgrpo_sim.metrics.results_io import MAX_SAMPLES, read_results_jsonl

    path = _lines(tmp_path, ['{"problem_id": "a", "n": 1, "c": 1}', "",
                             f'{{"problem_id": "b", "n": {MAX_SAMPLES}, "c": 0}}'])
    counts = read_results_jsonl(path)
    assert counts.n.tolist() == [1, MAX_SAMPLES] and counts.c.tolist() == [1, 0]
    assert (counts.count_lines, counts.sample_lines, counts.path) == (2, 0, str(path))


def test_line_reader_refuses_a_second_count_line_after_n_equal_one(tmp_path):
    from fgrpo_sim.metrics.results_io import read_results_jsonl

    path = _lines(tmp_path, ['{"problem_id": "a", "n": 1, "c": 0}', "", '{"problem_id": "a", "n": 1, "c": 1}'])
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))} line 3: problem 'a' already has an 'n'/'c' line"):
        read_results_jsonl(path)


def test_column_reader_finds_a_repeated_sample_index_anywhere(tmp_path):
    """A uniform file (the columnar path) with problem a's sample 0 on lines 1 and 3: refused, naming both lines."""
    from fgrpo_sim.metrics.results_io import read_results_jsonl

    path = _lines(tmp_path, ['{"problem_id": "a", "correct": true, "sample_index": 0}',
                             '{"problem_id": "b", "correct": false, "sample_index": 0}',
                             '{"problem_id": "a", "correct": false, "sample_index": 0}'])
    with pytest.raises(ValueError, match=r"line 3: problem 'a' sample_index 0 already appeared on line 1"):
        read_results_jsonl(path)


def test_column_reader_refuses_a_boolean_n(tmp_path):
    from fgrpo_sim.metrics.results_io import MAX_SAMPLES, read_results_jsonl

    path = _lines(tmp_path, ['{"problem_id": "a", "n": true, "c": 0}'])
    with pytest.raises(ValueError, match=rf"line 1: 'n' must be an integer in \[1, {MAX_SAMPLES}\], got True$"):
        read_results_jsonl(path)


@pytest.mark.parametrize("alpha", [0.5, 0.3, 0.1, 0.05, 0.01, 2 / 93, 2 / 99, 2 / 117, 2 / 210, 2 / 3])
def test_min_iterations_is_the_fewest_rounds_whose_smallest_p_is_below_alpha(alpha):
    """The smallest p App. Q's test can print is 2 / (B + 1), computed in floats and compared p < alpha: the
    fewest such B, found by counting up. At alpha = 2 / 93 (and 99, 117, 210) 2 / alpha rounds down to 92 in floats,
    and 2 / 93 == alpha, so 92 rounds could never give p < alpha: the rule must step to 93."""
    from fgrpo_sim.metrics.subsampling import min_iterations

    fewest = next(b for b in range(1, 10_000) if 2.0 / (b + 1) < alpha)
    assert min_iterations(alpha) == fewest
