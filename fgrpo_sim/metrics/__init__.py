"""Evaluation statistics: unbiased pass@k, pass@k curves with bootstrap intervals, the paired tests of a pass@k
difference (default: an exact conditional test; by name a z-test with the unbiased variance of the pass@k
estimator and the paper's paired m-out-of-n subsampling test), percentile bootstrap intervals over seeds (numpy in and out)."""

from fgrpo_sim.metrics.conditional_test import ConditionalTest, paired_conditional_test
from fgrpo_sim.metrics.bootstrap import Interval, bootstrap_mean_ci, bootstrap_paired_difference_ci
from fgrpo_sim.metrics.curves import PassAtKCurve, counts_from_matrix, pass_at_k_curve
from fgrpo_sim.metrics.passk import pass_at_k, pass_at_k_table
from fgrpo_sim.metrics.paired_tests import DEFAULT_TEST, TESTS, run_paired_test
from fgrpo_sim.metrics.subsampling import SubsamplingTest, paired_subsampling_test, subsample_size
from fgrpo_sim.metrics.t_interval import t_interval
from fgrpo_sim.metrics.ustat_test import UStatisticTest, paired_ustatistic_test, pass_at_k_variance

__all__ = [
    "Interval",
    "t_interval",
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
    "paired_conditional_test",
    "ConditionalTest",
    "paired_ustatistic_test",
    "UStatisticTest",
    "pass_at_k_variance",
    "run_paired_test",
    "TESTS",
    "DEFAULT_TEST",
]
