"""metrics/ against mutmut's survivors of the whole-module run (benchmarks/mutation.py, issue 44): each test fails
on at least one mutant that every other metrics test let through (named in benchmarks/RESULTS.md, "Mutation
testing", metrics). Expected values are derived independently: exact fractions, mpmath, counts made by hand, or
the same function called with its defaults spelled out."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from fgrpo_sim.metrics import pass_at_k_curve
from fgrpo_sim.metrics.conditional_test import NO_TEST, paired_conditional_test
from fgrpo_sim.metrics.ustat_test import NO_VARIANCE, paired_ustatistic_test


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
