"""Issue 21: percentile bootstrap intervals over seeds, checked against exactly enumerated bootstrap laws."""

import itertools

import numpy as np
import pytest

from fgrpo_sim.metrics import bootstrap_mean_ci, bootstrap_paired_difference_ci


def exact_percentiles(means, probs, confidence):
    """Lower/upper percentile of a discrete law, with the distance of each level from an atom edge."""
    order = np.argsort(means)
    means, probs = np.asarray(means)[order], np.asarray(probs)[order]
    cdf = np.cumsum(probs)
    out = []
    for level in ((1 - confidence) / 2, (1 + confidence) / 2):
        i = int(np.searchsorted(cdf, level))
        out.append((means[i], np.min(np.abs(cdf - level))))
    return out


def enumerate_stratified(columns):
    """Every stratified resample (each column resampled with replacement on its own), equally likely."""
    per_column = [[np.mean(c) for c in itertools.product(col, repeat=len(col))] for col in columns]
    means, probs = [], []
    for combo in itertools.product(*per_column):
        means.append(np.mean(combo))  # equal runs per task: mean of task means
        probs.append(np.prod([1 / len(p) for p in per_column]))
    return np.array(means), np.array(probs)


def test_one_task_matches_the_enumerated_bootstrap_law():
    values = np.array([0.0, 1.0, 4.0, 10.0])  # 4^4 = 256 equally likely resamples
    means, probs = enumerate_stratified([values])
    (low, gap_low), (high, gap_high) = exact_percentiles(means, probs, 0.95)
    assert min(gap_low, gap_high) > 0.0015  # the levels sit inside atoms (4.5 sd of the resampled CDF away)
    ci = bootstrap_mean_ci(values, confidence=0.95, n_resamples=200_000, seed=1)
    assert ci.estimate == pytest.approx(3.75)
    assert ci.low == pytest.approx(low, abs=1e-12) and ci.high == pytest.approx(high, abs=1e-12)


def test_stratified_resamples_each_task_on_its_own():
    columns = [np.array([0.0, 2.0]), np.array([10.0, 13.0])]
    means, probs = enumerate_stratified(columns)
    (low, gap_low), (high, gap_high) = exact_percentiles(means, probs, 0.9)
    assert min(gap_low, gap_high) > 0.01
    pooled = exact_percentiles(*enumerate_stratified([np.concatenate(columns)]), 0.9)
    assert (pooled[0][0], pooled[1][0]) != (low, high)  # an unstratified bootstrap would fail this test
    ci = bootstrap_mean_ci(np.stack(columns, axis=1), confidence=0.9, n_resamples=200_000, seed=2)
    assert ci.low == pytest.approx(low, abs=1e-12) and ci.high == pytest.approx(high, abs=1e-12)
    assert ci.estimate == pytest.approx(np.mean(np.concatenate(columns)))


def test_paired_difference_resamples_seeds_together():
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    b = a - np.array([0.1, 0.3, 0.2, 0.1, 0.2, 0.3])  # large shared seed effect, small steady difference
    ci = bootstrap_paired_difference_ci(a, b, n_resamples=20_000)
    assert ci.estimate == pytest.approx(0.2)
    assert 0.1 <= ci.low < 0.2 < ci.high <= 0.3 and not ci.includes_zero
    unpaired = bootstrap_mean_ci(a).high - bootstrap_mean_ci(a).low
    assert ci.high - ci.low < unpaired / 10


def test_zero_inside_and_constant_values():
    ci = bootstrap_paired_difference_ci([1.0, 2.0, 3.0], [2.0, 1.0, 3.5])
    assert ci.includes_zero
    const = bootstrap_mean_ci([0.5, 0.5, 0.5])
    assert (const.low, const.estimate, const.high) == (0.5, 0.5, 0.5)


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="values must be"):
        bootstrap_mean_ci([1.0])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_mean_ci([1.0, 2.0], confidence=1.5)
    with pytest.raises(ValueError, match="same shape"):
        bootstrap_paired_difference_ci([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        bootstrap_mean_ci([1.0, np.nan])


def test_population_claims_helpers_pair_runs_at_a_common_pass1_level():
    import pandas as pd

    from fgrpo_sim.sim.population_claims import final_per_run, per_run_at_equal_pass1

    rows = []
    for variant, speed in (("GRPO", 2.0), ("F-GRPO gamma=1", 1.0)):
        for run in range(3):
            for step in (0, 10, 20):
                p1 = 0.2 + speed * 0.01 * step * (1 + 0.1 * run)
                rows.append(dict(variant=variant, run=run, step=step, bucket="all", **{"pass@1": p1, "kept": 1 - p1 / speed}))
    frame = pd.DataFrame(rows)
    level, values = per_run_at_equal_pass1(frame, "kept")
    assert level == pytest.approx(0.4)  # the slowest run's final pass@1
    # at pass@1 = 0.4 the kept mass is 1 - 0.4 / speed in every run, whatever the run's pace
    np.testing.assert_allclose(values["GRPO"], 0.8)
    np.testing.assert_allclose(values["F-GRPO gamma=1"], 0.6)
    final = final_per_run(frame, "pass@1")
    np.testing.assert_allclose(final["GRPO"], [0.6, 0.64, 0.68])


def test_column_means_resample_the_units_together_as_scipy_does():
    """pass@k curves' interval (issue 32: one bootstrap): each column's interval is scipy's percentile
    bootstrap of that column, every column drawn from the same resamples of the rows."""
    from scipy.stats import bootstrap

    from fgrpo_sim.metrics.bootstrap import bootstrap_column_means_ci

    rng = np.random.default_rng(3)
    values = np.column_stack([rng.random(40), rng.random(40) ** 3, np.full(40, 0.5)])
    low, high = bootstrap_column_means_ci(values, 0.9, 2000, seed=7)
    for j in range(2):
        ref = bootstrap((values[:, j],), np.mean, n_resamples=2000, confidence_level=0.9, method="percentile",
                        rng=np.random.default_rng(7)).confidence_interval
        assert low[j] == pytest.approx(ref.low, rel=1e-9) and high[j] == pytest.approx(ref.high, rel=1e-9)
    assert low[2] == high[2] == 0.5  # a constant column: no spread, no scipy warning
    with pytest.raises(ValueError, match="at least 2 units"):
        bootstrap_column_means_ci(values[:1])
