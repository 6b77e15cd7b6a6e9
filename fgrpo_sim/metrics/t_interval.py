"""The Student t interval of a mean over units (populations, seeds): scipy.stats.ttest_1samp's
confidence_interval, with the two cases scipy cannot state (one unit; all values equal, where it warns of
precision loss) said here once. The group-size report and the Maze's seed intervals both use it; its
coverage at the unit counts we run is measured in tests/test_group_size_report.py."""

from __future__ import annotations

import warnings

import numpy as np


def t_interval(values, axis: int = -1, confidence: float = 0.95):
    """(mean, low, high) of `values` along `axis`: the Student t interval (scipy.stats.ttest_1samp); a sample
    whose values are all equal gets that value as both bounds, one unit none (NaN)."""
    from scipy import stats

    x = np.moveaxis(np.asarray(values, dtype=float), axis, -1)
    mean = x.mean(-1)
    if x.shape[-1] < 2:
        return mean, np.full_like(mean, np.nan), np.full_like(mean, np.nan)
    spread = x.max(-1) - x.min(-1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant samples: replaced below
        ci = stats.ttest_1samp(x, 0.0, axis=-1).confidence_interval(confidence)
    low = np.where(spread == 0, mean, ci.low)
    high = np.where(spread == 0, mean, ci.high)
    return mean, low, high
