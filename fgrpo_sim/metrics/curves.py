"""pass@k curves over a set of problems, with percentile-bootstrap intervals over problems (metrics/bootstrap.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fgrpo_sim.metrics.passk import pass_at_every_k, pass_at_k
from fgrpo_sim.validation import check_integer, check_range


@dataclass
class PassAtKCurve:
    """Mean pass@k over problems for each k, with a bootstrap interval (resampling problems)."""

    ks: np.ndarray
    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    per_problem: np.ndarray = field(repr=False)  # [problems, len(ks)]
    confidence: float = 0.95
    n_bootstrap: int = 0

    def as_dict(self) -> dict:
        return {
            "k": self.ks.tolist(),
            "pass_at_k": self.mean.tolist(),
            "ci_low": self.lower.tolist(),
            "ci_high": self.upper.tolist(),
            "confidence": self.confidence,
            "n_bootstrap": self.n_bootstrap,
            "problems": int(self.per_problem.shape[0]),
        }


def counts_from_matrix(correct: Any) -> tuple[np.ndarray, np.ndarray]:
    """(n, c) per problem from a boolean [problems, samples] matrix."""
    correct = np.asarray(correct)
    if correct.ndim != 2 or correct.shape[1] < 1:
        raise ValueError(f"correct must be a [problems, samples] matrix with samples >= 1, got shape {correct.shape}")
    if correct.dtype != bool:
        if not np.all((correct == 0) | (correct == 1)):
            raise ValueError("correct must be boolean (or 0/1)")
        correct = correct.astype(bool)
    return np.full(correct.shape[0], correct.shape[1], dtype=np.int64), correct.sum(axis=1).astype(np.int64)


def _check_counts(n: Any, c: Any) -> tuple[np.ndarray, np.ndarray]:
    n = np.atleast_1d(check_integer("n", n, 1))
    c = np.atleast_1d(check_integer("c", c, 0))
    if n.ndim != 1 or n.shape != c.shape:
        raise ValueError(f"n and c must be 1-D with one entry per problem, got shapes {n.shape} and {c.shape}")
    if n.size == 0:
        raise ValueError("n must list at least one problem")
    if np.any(c > n):
        i = int(np.flatnonzero(c > n)[0])
        raise ValueError(f"c must be in [0, n], got c = {c[i]} for n = {n[i]} (problem index {i})")
    return n, c


def _check_ks(ks: Any) -> np.ndarray:
    """ks as a non-empty 1-D integer array, each >= 1 (each caller adds its own upper bound)."""
    ks = np.atleast_1d(check_integer("ks", ks, 1))
    if ks.ndim != 1 or ks.size == 0:
        raise ValueError("ks must be a non-empty 1-D list of integers")
    return ks


def _check_paired_counts(n_a: Any, c_a: Any, n_b: Any, c_b: Any) -> tuple[np.ndarray, ...]:
    """Both models' per-problem counts, checked, over the same number of problems (the paired tests' input)."""
    n_a, c_a = _check_counts(n_a, c_a)
    n_b, c_b = _check_counts(n_b, c_b)
    if n_a.size != n_b.size:
        raise ValueError(f"n_b must list the same problems as n_a, got {n_b.size} and {n_a.size} problems")
    return n_a, c_a, n_b, c_b


@dataclass
class PairedResult:
    """The per-k columns every paired test's result carries (`UStatisticTest`, `ConditionalTest` add their own
    fields after these): the means of pass@k of A and B, their difference and the test's numbers."""

    ks: np.ndarray
    pass_a: np.ndarray
    pass_b: np.ndarray
    difference: np.ndarray
    std_error: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    p_value: np.ndarray
    significant: np.ndarray


def paired_rows(result: PairedResult, tested: np.ndarray, skipped: str) -> list[dict]:
    """One dict per k of a paired test's result (`UStatisticTest`, `ConditionalTest`): the means and difference,
    then the test's numbers where `tested`, else `skipped`, the reason there is no test."""
    rows = []
    for j, k in enumerate(result.ks):
        row = {"k": int(k), "pass_a": float(result.pass_a[j]), "pass_b": float(result.pass_b[j]),
               "difference": float(result.difference[j])}
        if tested[j]:
            row.update(std_error=float(result.std_error[j]), ci_low=float(result.lower[j]),
                       ci_high=float(result.upper[j]), p_value=float(result.p_value[j]),
                       significant=bool(result.significant[j]))
        else:
            row["skipped"] = skipped
        rows.append(row)
    return rows


def pass_at_k_curve(
    n: Any = None,
    c: Any = None,
    *,
    correct: Any = None,
    ks: Any = None,
    confidence: float = 0.95,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> PassAtKCurve:
    """Mean pass@k over problems for k in `ks` (default 1..min n), with bootstrap intervals.

    Give per-problem counts `n`, `c` (1-D, mixed n allowed) or a boolean `correct` [problems,
    samples] matrix. Every k must be <= the n of every problem (ValueError names the first
    offender). The interval is the percentile bootstrap over problems (`n_bootstrap` resamples of
    the problem set with replacement; 0 disables it and returns the mean as both bounds; one problem
    needs 0, since its bootstrap interval would have zero width).
    """
    if correct is not None:
        if n is not None or c is not None:
            raise ValueError("give either correct or (n, c), not both")
        n, c = counts_from_matrix(correct)
    elif n is None or c is None:
        raise ValueError("give either correct or both n and c")
    n, c = _check_counts(n, c)
    ks = np.arange(1, int(n.min()) + 1) if ks is None else _check_ks(ks)
    too_big = ks > n.min()
    if np.any(too_big):
        k = int(ks[too_big][0])
        i = int(np.flatnonzero(n < k)[0])
        raise ValueError(
            f"k must be <= n for every problem, got k = {k} but problem index {i} has n = {n[i]} "
            f"({int(np.sum(n < k))} of {n.size} problems have n < {k})"
        )
    confidence = float(check_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True))
    n_bootstrap = int(check_integer("n_bootstrap", n_bootstrap, 0))
    if n_bootstrap > 0 and n.size < 2:  # every resample of one problem is that problem: a zero-width interval
        raise ValueError(f"n_bootstrap must be 0 for a single problem (a bootstrap over problems needs >= 2), "
                         f"got {n_bootstrap}")
    seed = int(check_integer("seed", seed, 0))
    if np.array_equal(ks, np.arange(1, ks.size + 1)):  # every k from 1 (passk --k all): one cumulative sum each
        per_problem = pass_at_every_k(n, c, ks.size)
    else:
        per_problem = pass_at_k(n[:, None], c[:, None], ks[None, :])
    mean = per_problem.mean(axis=0)
    lower, upper = mean.copy(), mean.copy()
    if n_bootstrap > 0:
        from fgrpo_sim.metrics.bootstrap import bootstrap_column_means_ci

        lower, upper = bootstrap_column_means_ci(per_problem, confidence, n_bootstrap, seed)
    return PassAtKCurve(ks, mean, lower, upper, per_problem, confidence, n_bootstrap)


__all__ = ["PassAtKCurve", "pass_at_k_curve", "counts_from_matrix"]
