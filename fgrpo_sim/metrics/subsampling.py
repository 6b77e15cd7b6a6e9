"""The paper's paired m-out-of-n subsampling test for pass@k differences (App. Q).

Each of `iterations` rounds draws, for every problem, m of the n generations of each model without
replacement, evaluates pass@k of the subsample with the analytic estimator, averages over problems
and records the difference (model A minus model B). The 95% interval is the 2.5/97.5 percentile
of those differences; the difference is significant when the interval excludes 0.

Vectorisation: only the *number* of correct samples in a subsample matters, and that number is
hypergeometric(c correct, n - c wrong, m draws). Per round we therefore draw one hypergeometric
count per problem and model, histogram the counts over 0..m, and multiply the histogram by a
precomputed table pass@k(m, x), x = 0..m. Problems with c = 0 or c = n are deterministic and are
not drawn at all.

Pairing. The two models' generations are different samples, so a subsample index of model A has
no counterpart in model B: by default each model's subsample is drawn independently, and the
pairing is by problem and by round (both means in a round cover the same problems, and the
difference is taken round by round), as in the paper. If the generations are linked (sample j of
both models shares a seed or a prompt variant), pass `both_correct` (per problem, how many indices
are correct for both models; needs n_a == n_b): the same m indices are then drawn for both models,
via a sequential multivariate hypergeometric draw over the four cells (both, A only, B only,
neither).

p-value: the two-sided percentile p-value, p = min(1, 2 min((1 + #{D <= 0}) / (B + 1),
(1 + #{D >= 0}) / (B + 1))), i.e. (up to the +1 correction) the smallest alpha at which the
percentile interval excludes 0, so "p < alpha" and "interval excludes 0" agree.

Degenerate parameters are refused: m >= n (every round draws all n samples of a problem, so the interval
has zero width and any nonzero difference would look significant), k > m, and fewer than 2 / alpha rounds
(then the percentile interval can exclude 0 while the p-value cannot fall below alpha). `subsample_size` is
the one rule for m that `fgrpo passk --compare` and `fgrpo llm report` share.

What the test conditions on: the problem set is fixed, so the interval reflects the sampling
noise of the generations, not the choice of problems. It is the spread of an estimator based on
m (not n) samples per problem, about sqrt(n / m) wider than that of the full-n estimate being tested:
its true size at alpha = 0.05 is 0.06%, not 5% (benchmarks/paired_test_calibration.py). Kept, by
the name "app-q", to reproduce the paper's marks; the default test is `ustat_test.paired_ustatistic_test`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fgrpo_sim.metrics.curves import _check_ks, _check_paired_counts
from fgrpo_sim.metrics.passk import pass_at_k, pass_at_k_table
from fgrpo_sim.validation import check_integer, check_range


@dataclass
class SubsamplingTest:
    """Result per k: full-data difference (A - B), percentile interval, p-value, significance."""

    ks: np.ndarray
    pass_a: np.ndarray  # mean pass@k of A over problems, all n samples
    pass_b: np.ndarray
    difference: np.ndarray  # pass_a - pass_b
    subsample_mean_difference: np.ndarray  # mean over rounds of the m-sample differences
    lower: np.ndarray
    upper: np.ndarray
    p_value: np.ndarray
    significant: np.ndarray
    m: int
    iterations: int
    alpha: float
    linked: bool

    def rows(self) -> list[dict]:
        return [
            {
                "k": int(k),
                "pass_a": float(self.pass_a[j]),
                "pass_b": float(self.pass_b[j]),
                "difference": float(self.difference[j]),
                "subsample_mean_difference": float(self.subsample_mean_difference[j]),
                "ci_low": float(self.lower[j]),
                "ci_high": float(self.upper[j]),
                "p_value": float(self.p_value[j]),
                "significant": bool(self.significant[j]),
            }
            for j, k in enumerate(self.ks)
        ]


DEFAULT_M = 256  # the paper's m (of n = 1024)


def subsample_size(n_min: int, m: int | None = None, name: str = "m") -> int:
    """The subsample size m for problems with at least `n_min` samples each.

    Default (m None): the paper's ratio, m = min(256, n_min // 4) (256 of 1024), at least 1. A given m must
    be in [1, n_min - 1]: m = n_min would draw every sample of the smallest problems in every round.
    ValueError (naming `name`) otherwise, and when n_min < 2 (no subsample can vary).
    """
    n_min = int(n_min)
    if n_min < 2:
        raise ValueError(f"the subsampling test needs at least 2 samples per problem, got a problem with n = {n_min} "
                         "(with n = 1 every subsample is the whole sample: the interval has zero width)")
    if m is None:
        return max(1, min(DEFAULT_M, n_min // 4))
    return int(check_integer(name, m, 1, n_min - 1))


def min_iterations(alpha: float) -> int:
    """Fewest rounds for which "interval excludes 0" can agree with "p < alpha": 2 / (B + 1) < alpha."""
    rounds = max(1, int(np.floor(2.0 / alpha)))
    while 2.0 / (rounds + 1) >= alpha:  # guards the float rounding of 2 / alpha
        rounds += 1
    return rounds


def _histogram(draws: np.ndarray, m: int, n_rounds: int) -> np.ndarray:
    """[rounds, problems] counts in 0..m -> [rounds, m + 1] number of problems per count."""
    offsets = (np.arange(n_rounds, dtype=np.int64) * (m + 1))[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=n_rounds * (m + 1)).reshape(n_rounds, m + 1)


def _independent_histogram(rng, n, c, m, rounds):
    hist = np.zeros((rounds, m + 1), dtype=np.int64)
    hist[:, 0] += np.count_nonzero(c == 0)
    hist[:, m] += np.count_nonzero(c == n)
    mixed = (c > 0) & (c < n)
    if np.any(mixed):
        draws = rng.hypergeometric(c[mixed], n[mixed] - c[mixed], m, size=(rounds, int(mixed.sum())))
        hist += _histogram(draws, m, rounds)
    return hist


def _linked_histograms(rng, n, c_a, c_b, both, m, rounds):
    only_a, only_b = c_a - both, c_b - both
    neither = n - c_a - c_b + both
    shape = (rounds, n.size)
    x_both = rng.hypergeometric(both, n - both, m, size=shape)
    left = m - x_both
    x_a = rng.hypergeometric(only_a, n - both - only_a, left, size=shape)
    x_b = rng.hypergeometric(only_b, neither, left - x_a, size=shape)
    return _histogram(x_both + x_a, m, rounds), _histogram(x_both + x_b, m, rounds)


def paired_subsampling_test(
    n_a: Any,
    c_a: Any,
    n_b: Any,
    c_b: Any,
    ks: Any = (1,),
    *,
    m: int | None = None,
    iterations: int = 50_000,
    alpha: float = 0.05,
    seed: int = 0,
    both_correct: Any = None,
    chunk_size: int = 2000,
    progress: bool = False,
) -> SubsamplingTest:
    """Paired m-out-of-n subsampling test of mean pass@k, model A minus model B (paper App. Q).

    n_a, c_a, n_b, c_b: per-problem sample and correct counts, the same problems in the same order
    (n may differ between problems and models). ks: the k values (each <= m). m: subsample size per
    problem (< every n; None: `subsample_size`'s rule, min(256, smallest n // 4), the paper's 256 of 1024). iterations: subsampling rounds (paper: 50,000).
    alpha: two-sided level (interval = alpha/2 and 1 - alpha/2 percentiles); iterations >= 2 / alpha. both_correct: per
    problem count of indices correct for both models, only for linked generations (see the module
    docstring). Memory is bounded by `chunk_size` rounds at a time.
    """
    n_a, c_a, n_b, c_b = _check_paired_counts(n_a, c_a, n_b, c_b)
    m = subsample_size(int(min(n_a.min(), n_b.min())), m)
    ks = _check_ks(ks)
    if np.any(ks > m):
        raise ValueError(f"ks must be in [1, m = {m}], got k = {int(ks[ks > m][0])}")
    alpha = float(check_range("alpha", alpha, 0.0, 1.0, low_open=True, high_open=True))
    iterations = int(check_integer("iterations", iterations, 1))
    if iterations < min_iterations(alpha):
        raise ValueError(f"iterations must be >= 2 / alpha = {min_iterations(alpha)} (fewer rounds cannot give "
                         f"p < alpha = {alpha:g}), got {iterations}")
    chunk_size = int(check_integer("chunk_size", chunk_size, 1))
    linked = both_correct is not None
    if linked:
        both = np.atleast_1d(check_integer("both_correct", both_correct, 0))
        if both.shape != n_a.shape:
            raise ValueError(f"both_correct must have one entry per problem ({n_a.size}), got shape {both.shape}")
        if not np.array_equal(n_a, n_b):
            raise ValueError("n_b must equal n_a for every problem when both_correct (linked samples) is given")
        if np.any(both > np.minimum(c_a, c_b)) or np.any(n_a - c_a - c_b + both < 0):
            raise ValueError("both_correct must be in [max(0, c_a + c_b - n), min(c_a, c_b)] for every problem")

    table = pass_at_k_table(m, ks).T  # [m + 1, K]
    problems = n_a.size
    rng = np.random.default_rng(int(check_integer("seed", seed, 0)))
    diffs = np.empty((iterations, ks.size))
    starts = range(0, iterations, chunk_size)
    if progress:
        from fgrpo_sim.progress import bar as progress_bar

        starts = progress_bar(starts, desc="subsampling", unit="chunk")
    for start in starts:
        rounds = min(chunk_size, iterations - start)
        if linked:
            hist_a, hist_b = _linked_histograms(rng, n_a, c_a, c_b, both, m, rounds)
        else:
            hist_a = _independent_histogram(rng, n_a, c_a, m, rounds)
            hist_b = _independent_histogram(rng, n_b, c_b, m, rounds)
        diffs[start : start + rounds] = (hist_a - hist_b) @ table / problems

    pass_a = pass_at_k(n_a[:, None], c_a[:, None], ks[None, :]).mean(axis=0)  # ks <= m <= every n
    pass_b = pass_at_k(n_b[:, None], c_b[:, None], ks[None, :]).mean(axis=0)
    lower, upper = np.quantile(diffs, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
    at_most_zero = np.count_nonzero(diffs <= 0, axis=0)
    at_least_zero = np.count_nonzero(diffs >= 0, axis=0)
    p_value = np.minimum(1.0, 2.0 * np.minimum(at_most_zero + 1, at_least_zero + 1) / (iterations + 1))
    return SubsamplingTest(
        ks=ks,
        pass_a=pass_a,
        pass_b=pass_b,
        difference=pass_a - pass_b,
        subsample_mean_difference=diffs.mean(axis=0),
        lower=lower,
        upper=upper,
        p_value=p_value,
        significant=(lower > 0) | (upper < 0),
        m=m,
        iterations=iterations,
        alpha=alpha,
        linked=linked,
    )


__all__ = ["SubsamplingTest", "paired_subsampling_test", "subsample_size", "min_iterations", "DEFAULT_M"]
