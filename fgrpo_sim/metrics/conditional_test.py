"""The default paired test of mean pass@k: an exact conditional (permutation) test, valid for every k <= n.

Why (issue 45; measured by benchmarks/paired_test_calibration.py, numbers in docs/core-and-metrics.md): the
u-statistic z-test (`ustat_test`) is a normal approximation over problems. With few problems at large k, or on
problems whose samples all agree, it rejects true nulls up to twice too often, and its estimated variance can be 0
(one problem at 8/8 against 0/8 got p = 0 and the interval [+1, +1]). This test needs no approximation.

The null: on every problem, A's and B's samples are exchangeable (the same success rate, independent samples).
Given a problem's pooled count s = c_a + c_b of its N = n_a + n_b samples, A's count is then hypergeometric:
A's n_a samples are a uniformly random n_a-subset of the pooled N. The statistic is the observed difference of
mean pass@k, D = mean_i [pass@k(n_a_i, c_a_i) - pass@k(n_b_i, s_i - c_a_i)]. Its null distribution given the
pooled counts is drawn by Monte Carlo: each round splits every problem's pooled count anew (one vectorised
hypergeometric draw per problem), and, two sided by |D|,

    p = (#{rounds with |D*| > |D|} + r) / (1 + rounds),  r uniform on 1, ..., 1 + #{rounds with |D*| = |D|},

D's rank among the rounds, its ties broken at random (seeded). Under the null D and the rounds are exchangeable, so
the rank is uniform on 1, ..., rounds + 1: P(p <= alpha) = alpha where alpha (rounds + 1) is a whole number (the
default rounds, at alpha = 0.05 or 0.01; "significant" is p < alpha, so the size is alpha - 1 / (rounds + 1)), and
p >= 1 / (rounds + 1), never 0. Why ties are broken at random: D* takes few values with few problems, small n or k
= n, and the usual p = (1 + #{|D*| >= |D|}) / (1 + rounds) (size at most alpha) then rejects far less often: 0-1%
of true nulls at n = 2 and 5-10 problems, 0.5-2% at k = n (measured while choosing, 400 draws each; the random
tie-break gave 3.8-6.8% there). The p-value is a function of the data and the seed: the same seed gives the same
verdict, another seed may differ where ties decide. Exact, not asymptotic: it holds at 1 problem as at 1,000, at k
= 1 as at k = n. Problems whose pooled samples all agree (s = 0 or s = N) cannot split differently: they add 0 to D
and to every D*, and are not drawn.

The interval: D -/+ z_{1 - alpha/2} se0, where se0 is the exact standard deviation of D* (the hypergeometric
sums, no Monte Carlo). se0 = 0 only where no problem can split differently, and then D = 0: a significant D
always has an interval of nonzero width. It is a normal-approximation interval (the null spread centred on D),
printed for scale; the verdict is the p-value's, and the two can disagree near the boundary.

No test: where no problem's pass@k can differ between splits (every problem all correct or all wrong in both
models, or at k = n every split leaves both models a correct sample), D = 0 exactly and no data can show a
difference; such k get `tested = False` and the reason `NO_TEST` instead of a verdict.

What it holds fixed: the problems (like every test here) and each problem's pooled count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import gammaln, ndtri

from fgrpo_sim.metrics.curves import PairedResult, _check_ks, _check_paired_counts, paired_rows
from fgrpo_sim.metrics.passk import pass_at_k
from fgrpo_sim.validation import check_integer, check_range

DEFAULT_ROUNDS = 4_999  # p resolves to 2e-4; alpha (rounds + 1) is a whole number at alpha = 0.05 or 0.01
MAX_ROUNDS = 10**7
NO_TEST = "no problem can split differently in pass@k (e.g. every problem all correct or all wrong in both)"
_ROUND_CHUNK = 1 << 22  # hypergeometric draws per block (rounds x informative problems): bounds memory to ~100 MB
_TIE = 1e-12  # |D*| within this of |D| counts as a tie (the same split summed in another order): conservative


@dataclass
class ConditionalTest(PairedResult):
    """Result per k: difference of mean pass@k (A - B), the null's exact standard deviation, the interval, the
    Monte Carlo p-value, significance, and whether a test exists (`tested`; else `no_test` says why)."""

    tested: np.ndarray
    alpha: float
    rounds: int
    seed: int
    no_test: str = NO_TEST

    def rows(self) -> list[dict]:
        return paired_rows(self, self.tested, self.no_test)


def min_rounds(alpha: float) -> int:
    """The fewest rounds whose smallest p-value, 1 / (rounds + 1), is below alpha."""
    return int(np.floor(1.0 / alpha))


def _log_comb(n: np.ndarray, r: np.ndarray, log_factorial: np.ndarray) -> np.ndarray:
    return log_factorial[n] - log_factorial[r] - log_factorial[n - r]


def _pass_tables(ns: np.ndarray, ks: np.ndarray) -> dict[int, np.ndarray]:
    """n -> [K, n + 1] table of pass@k(n, x), x = 0..n, for each distinct n: O(n) evaluations per n, not one per
    problem and split."""
    return {int(n): pass_at_k(np.full((1, n + 1), n), np.arange(n + 1)[None, :], ks[:, None]) for n in np.unique(ns)}


def _lookup(tables: dict[int, np.ndarray], n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """[K, P, S] pass@k(n_i, x_is) from the tables (x within [0, n_i])."""
    if len(tables) == 1:  # the common case, one n for every problem: one gather
        return next(iter(tables.values()))[:, x]
    out = np.empty((next(iter(tables.values())).shape[0], *x.shape))
    for value, table in tables.items():
        rows = np.flatnonzero(n == value)
        if rows.size:
            out[:, rows] = table[:, x[rows]]
    return out


def _split_tables(n_a, n_b, s, ks):
    """Per informative problem, every possible split x = A's count: its offset lo, its hypergeometric pmf
    [P, S] and the per-k difference of pass@k f [K, P, S] (0 outside the support)."""
    lo = np.maximum(0, s - n_b)
    hi = np.minimum(s, n_a)
    width = int((hi - lo).max()) + 1
    x = lo[:, None] + np.arange(width)[None, :]
    inside = x <= hi[:, None]
    xs = np.where(inside, x, lo[:, None])
    total = n_a + n_b
    log_factorial = gammaln(np.arange(int(total.max()) + 1) + 1.0)  # looked up, not evaluated per split
    log_pmf = (_log_comb(s[:, None], xs, log_factorial) + _log_comb((total - s)[:, None], n_a[:, None] - xs, log_factorial)
               - _log_comb(total, n_a, log_factorial)[:, None])
    pmf = np.where(inside, np.exp(log_pmf), 0.0)
    pmf /= pmf.sum(axis=1, keepdims=True)  # exact up to rounding; normalised so the mean below is a true mean
    tables = _pass_tables(np.concatenate([n_a, n_b]), ks)
    f = _lookup(tables, n_a, xs) - _lookup(tables, n_b, s[:, None] - xs)
    return lo, pmf, np.where(inside[None], f, 0.0)


def paired_conditional_test(n_a: Any, c_a: Any, n_b: Any, c_b: Any, ks: Any = (1,), *, alpha: float = 0.05,
                            rounds: int = DEFAULT_ROUNDS, seed: int = 0) -> ConditionalTest:
    """Exact conditional test of mean pass@k, model A minus model B, over the same problems (module docstring).

    n_a, c_a, n_b, c_b: per-problem sample and correct counts, the same problems in the same order (n may differ
    between problems and models). ks: each in [1, smallest n]. alpha: two-sided level in (0, 1). rounds: Monte
    Carlo rounds in [floor(1 / alpha), 10^7]. seed: the rounds' seed (the same inputs and seed, the same p).
    """
    n_a, c_a, n_b, c_b = _check_paired_counts(n_a, c_a, n_b, c_b)
    ks = _check_ks(ks)
    largest = int(min(n_a.min(), n_b.min()))
    if np.any(ks > largest):
        raise ValueError(f"ks must be in [1, smallest n = {largest}], got k = {int(ks[ks > largest][0])}")
    alpha = float(check_range("alpha", alpha, 0.0, 1.0, low_open=True, high_open=True))
    rounds = int(check_integer("rounds", rounds, min_rounds(alpha), MAX_ROUNDS))
    seed = int(check_integer("seed", seed, 0, 2**63 - 1))
    problems = n_a.size
    pass_a = pass_at_k(n_a[:, None], c_a[:, None], ks[None, :])
    pass_b = pass_at_k(n_b[:, None], c_b[:, None], ks[None, :])
    difference = (pass_a - pass_b).mean(axis=0)
    s = c_a + c_b
    keep = (s > 0) & (s < n_a + n_b)  # the others split one way only and add 0 to D and to every D*
    std_error = np.zeros(ks.size)
    greater = np.zeros(ks.size, dtype=np.int64)
    ties = np.zeros(ks.size, dtype=np.int64)
    if keep.any():
        na, nb, sk, ca = n_a[keep], n_b[keep], s[keep], c_a[keep]
        lo, pmf, f = _split_tables(na, nb, sk, ks)
        mean = (pmf[None] * f).sum(axis=2)
        std_error = np.sqrt(np.maximum((pmf[None] * (f - mean[..., None]) ** 2).sum(axis=2), 0.0).sum(axis=1)) / problems
        greater, ties = _count_exceedances(np.abs(difference), f, lo, na, nb, sk, rounds, seed, problems)
    tested = std_error > 0  # else D = 0 exactly: every split gives the same pass@k
    p_value = np.where(tested, _randomized_p(greater, ties, rounds, seed), np.nan)
    half = ndtri(1.0 - alpha / 2.0) * std_error
    return ConditionalTest(ks=ks, pass_a=pass_a.mean(axis=0), pass_b=pass_b.mean(axis=0), difference=difference,
                           std_error=std_error, lower=difference - half, upper=difference + half, p_value=p_value,
                           significant=tested & (p_value < alpha), tested=tested, alpha=alpha, rounds=rounds,
                           seed=seed)


def _randomized_p(greater, ties, rounds, seed):
    """(#{|D*| > |D|} + r) / (1 + rounds), r uniform on 1..1 + #{|D*| = |D|} from the seed: D's rank among the
    rounds with its ties broken at random, uniform on 1..rounds + 1 under the null however few values D* takes."""
    r = 1 + np.random.default_rng((seed, 1)).integers(0, ties + 1)
    return (greater + r) / (1.0 + rounds)


def _count_exceedances(observed, f, lo, n_a, n_b, s, rounds, seed, problems):
    """Per k, #{rounds with |D*| > |D| + tie} and #{rounds with ||D*| - |D|| <= tie}: each round draws every
    problem's split from its hypergeometric."""
    rng = np.random.default_rng(seed)
    count = np.zeros(observed.size, dtype=np.int64)
    ties = np.zeros(observed.size, dtype=np.int64)
    size = f.shape[1]
    chunk = max(1, _ROUND_CHUNK // size)
    flat = f.reshape(f.shape[0], -1)
    row = (np.arange(size) * f.shape[2])[None, :]
    for start in range(0, rounds, chunk):
        b = min(chunk, rounds - start)
        x = rng.hypergeometric(s, n_a + n_b - s, n_a, size=(b, size))
        index = row + (x - lo[None, :])
        for j in range(observed.size):
            replicate = flat[j][index].sum(axis=1) / problems
            gap = np.abs(replicate) - observed[j]
            count[j] += np.count_nonzero(gap > _TIE)
            ties[j] += np.count_nonzero(np.abs(gap) <= _TIE)
    return count, ties


__all__ = ["paired_conditional_test", "ConditionalTest", "DEFAULT_ROUNDS", "MAX_ROUNDS", "NO_TEST", "min_rounds"]
