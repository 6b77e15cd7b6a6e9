"""The default paired test of mean pass@k: a z-test with the unbiased variance of the pass@k estimator.

Why this test (benchmarks/paired_test_calibration.py, numbers in docs/core-and-metrics.md): App. Q's m-out-of-n
interval describes an estimator built from m samples per problem, about sqrt(n / m) wider than the n-sample
estimate it is used to test, so its true size at alpha = 0.05 is 0.06%, not 5%. This test rejects a true
null at about alpha at n = 8 to 1024, finds real differences as often as the rescaled subsampling interval,
and needs no resampling (milliseconds instead of seconds).

The statistic. The unbiased pass@k estimate of one problem, 1 - C(n - c, k) / C(n, k), is a U-statistic of
its n samples (the mean over k-subsets of "some sample of the subset is correct"). Write g = C(n - c, k) /
C(n, k), the unbiased estimate of (1 - p)^k. Then Var(g) = E[g^2] - (1 - p)^{2k}, and (1 - p)^{2k} has the
unbiased estimate C(n - c, 2k) / C(n, 2k) when 2k <= n, so

    v = g^2 - C(n - c, 2k) / C(n, 2k)

is an unbiased estimate of the variance of the problem's pass@k estimate (at k = 1 it is p^(1 - p^) / (n - 1),
the usual s^2 / n). It is never negative (each factor (n - c - j) / (n - j) of the second ratio's tail is at
most g's), and 0 for a problem whose samples all agree. For 2k > n no unbiased variance estimate exists: such
k get no test (as k > m gets none under App. Q).

Two models, the same problems, independent samples: the difference of the mean pass@k estimates, D, has
variance (sum_i v_a,i + sum_i v_b,i) / P^2 over the P problems. z = D / se, two-sided normal p-value, interval
D -/+ z_{1 - alpha/2} se; "p < alpha" and "the interval excludes 0" agree.

What it holds fixed: the problems. The variance is that of the samples drawn for these problems; a new draw
of problems from the same source would move the means further (the bootstrap over problems of
`pass_at_k_curve` describes that). The normal approximation is over problems: it needs many problems with
mixed outcomes (0 < c < n); with one problem, or with only all-or-nothing problems, the estimated variance is
0: such k get no verdict (`skipped` in `rows()`, NO_VARIANCE) instead of p = 0 and a zero-width interval.
The default test, `conditional_test`, needs no variance estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri  # the normal tail and quantile; scipy.stats would add ~1.3 s to every start

from fgrpo_sim.metrics.curves import PairedResult, _check_ks, _check_paired_counts, paired_rows
from fgrpo_sim.metrics.passk import log_miss_ratio, pass_at_k
from fgrpo_sim.validation import check_integer, check_range


def pass_at_k_variance(n: Any, c: Any, k: Any) -> np.ndarray | float:
    """Unbiased estimate of the variance of the unbiased pass@k estimate, per problem (numpy broadcasting).

    Requires n >= 2k (no unbiased estimate exists otherwise), 0 <= c <= n; ValueError otherwise.
    """
    n_arr, c_arr, k_arr = (check_integer(name, v, low) for name, v, low in (("n", n, 1), ("c", c, 0), ("k", k, 1)))
    n_b, c_b, k_b = np.broadcast_arrays(n_arr, c_arr, k_arr)
    if np.any(c_b > n_b):
        raise ValueError(f"c must be in [0, n], got c = {c_b[c_b > n_b].flat[0]}")
    if np.any(2 * k_b > n_b):
        i = np.flatnonzero(2 * k_b > n_b)[0]
        raise ValueError(f"k must be in [1, n / 2] (the variance of pass@k has no unbiased estimate beyond), "
                         f"got k = {k_b.flat[i]} for n = {n_b.flat[i]}")
    log_g = log_miss_ratio(n_b, c_b, k_b)
    log_g2k = log_miss_ratio(n_b, c_b, 2 * k_b)
    alive = np.isfinite(log_g)  # g = 0 (fewer than k wrong samples): then C(n - c, 2k) = 0 too, v = 0
    # v = g^2 (1 - C(n-c, 2k) / C(n, 2k) / g^2), in logs: g and the ratio can be far below 1e-300 at n = 1024
    excess = np.where(alive, log_g2k - 2 * np.where(alive, log_g, 0.0), -np.inf)
    value = np.where(alive, np.exp(2 * np.where(alive, log_g, 0.0)) * -np.expm1(np.minimum(excess, 0.0)), 0.0)
    return float(value) if value.ndim == 0 else value


NO_VARIANCE = "estimated variance 0 (every problem all correct or all wrong): no z-test; the conditional test has one"


@dataclass
class UStatisticTest(PairedResult):
    """Result per k: difference of mean pass@k (A - B), its standard error, interval, p-value, significance."""

    alpha: float

    def rows(self) -> list[dict]:
        return paired_rows(self, self.std_error > 0, NO_VARIANCE)


def paired_ustatistic_test(n_a: Any, c_a: Any, n_b: Any, c_b: Any, ks: Any = (1,), *, alpha: float = 0.05
                           ) -> UStatisticTest:
    """z-test of mean pass@k, model A minus model B, over the same problems (module docstring).

    n_a, c_a, n_b, c_b: per-problem sample and correct counts, the same problems in the same order (n may differ
    between problems and models). ks: each in [1, n / 2] for every n. alpha: two-sided level in (0, 1).
    """
    n_a, c_a, n_b, c_b = _check_paired_counts(n_a, c_a, n_b, c_b)
    ks = _check_ks(ks)
    largest = int(min(n_a.min(), n_b.min())) // 2
    if np.any(ks > largest):
        raise ValueError(f"ks must be in [1, smallest n / 2 = {largest}] (the variance of pass@k has no unbiased "
                         f"estimate beyond), got k = {int(ks[ks > largest][0])}")
    alpha = float(check_range("alpha", alpha, 0.0, 1.0, low_open=True, high_open=True))
    problems = n_a.size
    pass_a = pass_at_k(n_a[:, None], c_a[:, None], ks[None, :]).mean(axis=0)
    pass_b = pass_at_k(n_b[:, None], c_b[:, None], ks[None, :]).mean(axis=0)
    variance = (pass_at_k_variance(n_a[:, None], c_a[:, None], ks[None, :]).sum(axis=0)
                + pass_at_k_variance(n_b[:, None], c_b[:, None], ks[None, :]).sum(axis=0)) / problems**2
    se = np.sqrt(variance)
    difference = pass_a - pass_b
    # se = 0: no z-test (p would be 0 for any difference); p NaN, not significant, `rows()` says why
    z = np.abs(difference) / np.where(se > 0, se, 1.0)
    p_value = np.where(se > 0, np.minimum(1.0, 2.0 * ndtr(-z)), np.nan)
    half = ndtri(1.0 - alpha / 2.0) * se
    return UStatisticTest(ks=ks, pass_a=pass_a, pass_b=pass_b, difference=difference, std_error=se,
                          lower=difference - half, upper=difference + half, p_value=p_value,
                          significant=(se > 0) & (p_value < alpha), alpha=alpha)


__all__ = ["pass_at_k_variance", "paired_ustatistic_test", "UStatisticTest", "NO_VARIANCE"]
