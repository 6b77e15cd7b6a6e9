"""Evaluation statistics: unbiased pass@k, pass@k curves with bootstrap intervals, and the paper's
paired m-out-of-n subsampling test, percentile bootstrap intervals over seeds (numpy in and out)."""

from fgrpo_sim.metrics.bootstrap import Interval, bootstrap_mean_ci, bootstrap_paired_difference_ci
from fgrpo_sim.metrics.curves import PassAtKCurve, counts_from_matrix, pass_at_k_curve
from fgrpo_sim.metrics.passk import pass_at_k, pass_at_k_table
from fgrpo_sim.metrics.subsampling import SubsamplingTest, paired_subsampling_test, subsample_size

__all__ = [
    "Interval",
    "bootstrap_mean_ci",
    "bootstrap_paired_difference_ci",
    "pass_at_k",
    "pass_at_k_table",
    "pass_at_k_curve",
    "PassAtKCurve",
    "counts_from_matrix",
    "paired_subsampling_test",
    "SubsamplingTest",
    "subsample_size",
]
