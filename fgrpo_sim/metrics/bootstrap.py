"""Percentile bootstrap intervals over seeds (rliable's standard), as small pure functions; the package's one
bootstrap (pass@k curves resample problems through `bootstrap_column_means_ci`).

Runs are the unit of resampling: `values` is [runs] or [runs, tasks], and with several tasks (strata,
e.g. settings or group sizes) the runs of each task are resampled independently (rliable's stratified
bootstrap). The statistic is the mean over every value (= the mean of the task means). A paired difference resamples seeds, so that the two
arms of a seed stay together. scipy.stats.bootstrap does the resampling (method "percentile").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fgrpo_sim.validation import check_integer, check_range


@dataclass(frozen=True)
class Interval:
    """A point estimate with its percentile bootstrap interval."""

    estimate: float
    low: float
    high: float
    confidence: float
    runs: int

    @property
    def includes_zero(self) -> bool:
        return self.low <= 0.0 <= self.high

    def __str__(self) -> str:
        return f"{self.estimate:.4f} [{self.low:.4f}, {self.high:.4f}]"


def _as_runs_by_task(values, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be [runs] or [runs, tasks] with at least 2 runs, got shape {np.shape(values)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {int((~np.isfinite(arr)).sum())} NaN/inf values")
    return arr


def bootstrap_mean_ci(values, confidence: float = 0.95, n_resamples: int = 20_000, seed: int = 0) -> Interval:
    """Mean of `values` ([runs] or [runs, tasks]) with a percentile bootstrap interval, runs resampled
    within each task (stratified). confidence in (0, 1); n_resamples >= 100."""
    from scipy.stats import bootstrap

    arr = _as_runs_by_task(values, "values")
    confidence = float(check_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True))
    n_resamples = int(check_integer("n_resamples", n_resamples, 100, 10_000_000))
    columns = tuple(arr[:, t] for t in range(arr.shape[1]))

    def mean_of_all(*samples, axis=-1):
        return np.mean(np.stack([s.mean(axis=axis) for s in samples], axis=0), axis=0)

    estimate = float(arr.mean())
    if np.all(arr == arr[0]):  # every resample equals the estimate; scipy warns on a degenerate distribution
        return Interval(estimate, estimate, estimate, confidence, arr.shape[0])
    res = bootstrap(columns, mean_of_all, n_resamples=n_resamples, confidence_level=confidence,
                    method="percentile", vectorized=True, paired=False, rng=np.random.default_rng(seed))
    return Interval(estimate, float(res.confidence_interval.low), float(res.confidence_interval.high),
                    confidence, arr.shape[0])


def bootstrap_paired_difference_ci(a, b, confidence: float = 0.95, n_resamples: int = 20_000,
                                   seed: int = 0) -> Interval:
    """Mean of a - b where a[i] and b[i] share seed i ([runs] or [runs, tasks], same shape): the per-seed
    differences resampled over seeds (within each task), percentile interval."""
    a_arr, b_arr = _as_runs_by_task(a, "a"), _as_runs_by_task(b, "b")
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b must have the same shape (paired by seed), got {a_arr.shape} and {b_arr.shape}")
    return bootstrap_mean_ci(a_arr - b_arr, confidence, n_resamples, seed)


def bootstrap_column_means_ci(values, confidence: float = 0.95, n_resamples: int = 1000,
                              seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) percentile intervals of the mean of each column of `values` [units, columns], the units
    (rows: problems, for a pass@k curve) resampled together, so every column sees the same resamples.
    At least 2 units; n_resamples >= 1. A column whose values are all equal gets that value as both bounds.

    scipy.stats.bootstrap's percentile interval, written out: importing scipy.stats costs about 1 s, more
    than `fgrpo passk` spends reading a paper-sized eval file. Same draws (rng.integers(0, units, (batch,
    units)) per batch of resamples) and the same linear quantiles; tests/test_bootstrap.py holds it to
    scipy's own result.
    """
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValueError(f"values must be [units, columns] with at least 2 units, got shape {np.shape(values)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"values must be finite, got {int((~np.isfinite(arr)).sum())} NaN/inf values")
    confidence = float(check_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True))
    n_resamples = int(check_integer("n_resamples", n_resamples, 1, 10_000_000))
    units = arr.shape[0]
    mean = arr.mean(axis=0)
    constant = np.all(arr == arr[0], axis=0)
    if np.all(constant):  # every resample equals the mean
        return mean.copy(), mean.copy()
    rng = np.random.default_rng(seed)
    batch = max(1, 4_000_000 // units)
    means = np.empty((n_resamples, arr.shape[1]))
    for start in range(0, n_resamples, batch):
        rows = min(batch, n_resamples - start)
        index = rng.integers(0, units, (rows, units))
        # per-row counts (a [rows, units] array), not the [rows, units, columns] copy that indexing would make
        counts = np.bincount((np.arange(rows)[:, None] * units + index).ravel(), minlength=rows * units)
        means[start:start + rows] = counts.reshape(rows, units).astype(float) @ arr / units
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha], axis=0)
    low[constant], high[constant] = mean[constant], mean[constant]
    return low, high


__all__ = ["Interval", "bootstrap_mean_ci", "bootstrap_paired_difference_ci", "bootstrap_column_means_ci"]
