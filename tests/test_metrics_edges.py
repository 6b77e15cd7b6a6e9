"""Metrics at their edges: every refusal of the results reader with its exact message, the result rows' keys,
the options the paired tests and bootstrap pass through, and their defaults. Written against mutmut's survivors
(benchmarks/mutation.py): each assertion failed on a mutant the other metrics tests let through. Expected values
are exact (counts, exact fractions) or the same function called with the options spelled out (one machine)."""

import json
import re

import numpy as np
import pytest

from fgrpo_sim.metrics import bootstrap_mean_ci, bootstrap_paired_difference_ci, pass_at_k_curve, run_paired_test
from fgrpo_sim.metrics.curves import counts_from_matrix
from fgrpo_sim.metrics.passk import pass_at_k, pass_at_k_table
from fgrpo_sim.metrics.results_io import MAX_SAMPLES, read_results_jsonl
from fgrpo_sim.metrics.subsampling import paired_subsampling_test, subsample_size
from fgrpo_sim.metrics.ustat_test import paired_ustatistic_test, pass_at_k_variance

A = '{"problem_id": "a", '
BAD_FILES = [
    (['{"x": 1}'], "line 1: missing key 'problem_id'"),
    (['{"problem_id": 1.5, "correct": true}'], "line 1: problem_id must be a string or an integer, got 1.5"),
    (['{"problem_id": true, "correct": true}'], "line 1: problem_id must be a string or an integer, got True"),
    ([A + '"correct": true, "c": 1}'], "line 1: give either 'correct' (one sample) or 'n' and 'c' (one problem), not both"),
    ([A + '"correct": true, "n": 1}'], "line 1: give either 'correct' (one sample) or 'n' and 'c' (one problem), not both"),
    ([A + '"k": 1}'], "line 1: needs 'correct' (true/false, one sample) or 'n' and 'c' (one problem)"),
    ([A + '"correct": 1}'], "line 1: 'correct' must be true or false, got 1"),
    ([A + '"correct": true, "sample_index": -1}'], "line 1: 'sample_index' must be an integer >= 0, got -1"),
    ([A + '"correct": true, "sample_index": "x"}'], "line 1: 'sample_index' must be an integer >= 0, got 'x'"),
    ([A + '"correct": true, "sample_index": 0}', A + '"correct": false, "sample_index": 0}'],
     "line 2: problem 'a' sample_index 0 already appeared on line 1 (duplicate sample)"),
    ([A + '"n": 4}'], "line 1: a per-problem line needs both 'n' and 'c'"),
    ([A + '"c": 4}'], "line 1: a per-problem line needs both 'n' and 'c'"),
    ([A + '"n": 0, "c": 0}'], f"line 1: 'n' must be an integer in [1, {MAX_SAMPLES}], got 0"),
    ([A + f'"n": {MAX_SAMPLES + 1}, "c": 0}}'], f"line 1: 'n' must be an integer in [1, {MAX_SAMPLES}], got {MAX_SAMPLES + 1}"),
    ([A + '"n": 4, "c": 5}'], "line 1: 'c' must be an integer in [0, n = 4], got 5"),
    ([A + '"n": 4, "c": -1}'], "line 1: 'c' must be an integer in [0, n = 4], got -1"),
    ([A + '"correct": true}', A + '"n": 4, "c": 1}'],
     "line 2: problem 'a' mixes per-sample and per-problem lines (first seen on line 1)"),
    ([A + '"n": 4, "c": 1}', A + '"correct": true}'],
     "line 2: problem 'a' mixes per-sample and per-problem lines (first seen on line 1)"),
    ([A + '"n": 4, "c": 1}', A + '"n": 4, "c": 2}'], "line 2: problem 'a' already has an 'n'/'c' line (line 1)"),
]


@pytest.mark.parametrize("lines, message", BAD_FILES,
                         ids=[f"{i}-" + re.sub(r"\W+", "_", m)[:40] for i, (_, m) in enumerate(BAD_FILES)])
def test_results_reader_names_the_line_and_the_fault(tmp_path, lines, message):
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=f"^{re.escape(f'{path} {message}')}$"):
        read_results_jsonl(path)


def test_results_reader_refuses_an_empty_file_and_a_missing_one(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("\n")
    with pytest.raises(ValueError, match=f"^{re.escape(f'{path}: no results (the file is empty)')}$"):
        read_results_jsonl(path)
    missing = tmp_path / "none.jsonl"
    with pytest.raises(ValueError, match=f"^{re.escape(f'results file not found: {missing}')}$"):
        read_results_jsonl(missing)


def test_results_reader_counts_mixed_problem_lines_exactly(tmp_path):
    # not uniform (two line kinds): the strict reader counts; problem 3 and "3" are one problem
    path = tmp_path / "r.jsonl"
    rows = [{"problem_id": 3, "correct": True, "sample_index": 0}, {"problem_id": "3", "correct": False},
            {"problem_id": "b", "n": 5, "c": 2}, {"problem_id": 3, "correct": True, "sample_index": 1}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    counts = read_results_jsonl(path)
    assert counts.problem_ids == ["3", "b"]
    assert counts.n.tolist() == [3, 5] and counts.c.tolist() == [2, 2]
    assert (counts.sample_lines, counts.count_lines, counts.first_line) == (3, 1, [1, 3])


N_A, C_A = np.array([8, 8, 8, 8]), np.array([2, 5, 7, 0])
N_B, C_B = np.array([8, 8, 8, 8]), np.array([1, 3, 8, 4])
UROW = ["k", "pass_a", "pass_b", "difference", "std_error", "ci_low", "ci_high", "p_value", "significant"]
QROW = ["k", "pass_a", "pass_b", "difference", "subsample_mean_difference", "ci_low", "ci_high", "p_value",
        "significant"]


def test_rows_name_every_field_once():
    u = paired_ustatistic_test(N_A, C_A, N_B, C_B, (1, 2))
    q = paired_subsampling_test(N_A, C_A, N_B, C_B, (1, 2), m=4, iterations=200)
    for result, keys, fields in ((u, UROW, "pass_a pass_b difference std_error lower upper p_value significant"),
                                 (q, QROW, "pass_a pass_b difference subsample_mean_difference lower upper p_value "
                                           "significant")):
        rows = result.rows()
        assert [list(r) for r in rows] == [keys, keys]
        for j, row in enumerate(rows):
            values = [row[key] for key in keys[1:]]
            assert values == [getattr(result, f)[j] for f in fields.split()]
            assert row["k"] == (1, 2)[j]
    # pass@1 of A: mean of c / n = (2 + 5 + 7 + 0) / 32 exactly
    assert u.rows()[0]["pass_a"] == pytest.approx(14 / 32, rel=1e-12)


def test_run_paired_test_passes_its_options_through(capsys):
    direct = paired_ustatistic_test(N_A, C_A, N_B, C_B, (1, 2), alpha=0.3).rows()
    assert run_paired_test("u-statistic", N_A, C_A, N_B, C_B, (1, 2), alpha=0.3).rows() == direct
    assert run_paired_test("u-statistic", N_A, C_A, N_B, C_B, (1, 2)).rows() != direct  # the default alpha is 0.05
    options = dict(m=5, iterations=300, alpha=0.2, seed=7)
    q = run_paired_test("app-q", N_A, C_A, N_B, C_B, (1, 2), **options)
    assert (q.m, q.iterations, q.alpha) == (5, 300, 0.2)
    assert q.rows() == paired_subsampling_test(N_A, C_A, N_B, C_B, (1, 2), **options).rows()
    # defaults: 50,000 rounds, seed 0, no progress bar
    default = run_paired_test("app-q", N_A, C_A, N_B, C_B, (1,), m=4)
    assert default.iterations == 50_000
    assert default.rows() == paired_subsampling_test(N_A, C_A, N_B, C_B, (1,), m=4, iterations=50_000,
                                                     seed=0).rows()
    assert capsys.readouterr().err == ""


def test_bootstrap_paired_difference_options_and_names():
    a, b = [0.1, 0.4, 0.35, 0.8, 0.2], [0.0, 0.1, 0.3, 0.5, 0.25]
    diff = np.subtract(a, b)
    assert bootstrap_paired_difference_ci(a, b) == bootstrap_mean_ci(diff, 0.95, 20_000, 0)
    assert bootstrap_paired_difference_ci(a, b, seed=5) == bootstrap_mean_ci(diff, seed=5)
    with pytest.raises(ValueError, match=r"^a must be \[runs\] or \[runs, tasks\] with at least 2 runs, got shape \(1,\)$"):
        bootstrap_paired_difference_ci([0.1], [0.2, 0.3])
    with pytest.raises(ValueError, match=r"^b must be \[runs\] or \[runs, tasks\] with at least 2 runs, got shape \(1,\)$"):
        bootstrap_paired_difference_ci([0.1, 0.2], [0.3])


def test_t_interval_against_the_textbook_formula():
    from scipy.stats import t as student_t

    from fgrpo_sim.metrics.t_interval import t_interval

    x = np.array([[0.2, 0.5, 0.4, 0.9], [1.0, 1.0, 1.0, 1.0]])
    for confidence in (0.95, 0.8):
        mean, low, high = t_interval(x, axis=1, confidence=confidence)
        half = student_t.ppf(0.5 + confidence / 2, 3) * x[0].std(ddof=1) / 2  # sqrt(4) units
        assert mean.tolist() == pytest.approx([0.5, 1.0], rel=1e-12)
        assert low.tolist() == pytest.approx([0.5 - half, 1.0], rel=1e-12)  # all equal: the value itself
        assert high.tolist() == pytest.approx([0.5 + half, 1.0], rel=1e-12)
    mean, low, high = t_interval(x.T)  # default: the last axis, 95%
    assert mean.tolist() == pytest.approx([0.6, 0.75, 0.7, 0.95], rel=1e-12)
    assert high[0] - mean[0] == pytest.approx(student_t.ppf(0.975, 1) * np.std([0.2, 1.0], ddof=1) / np.sqrt(2),
                                              rel=1e-12)
    mean, low, high = t_interval([[0.3], [0.7]], axis=-1)  # one unit: no interval
    assert mean.tolist() == [0.3, 0.7] and np.isnan(low).all() and np.isnan(high).all()
    mean, low, high = t_interval([0.3, 0.7], axis=0)
    assert (low, high) == pytest.approx((0.5 - student_t.ppf(0.975, 1) * 0.2, 0.5 + student_t.ppf(0.975, 1) * 0.2),
                                        rel=1e-12)


def test_align_problems_and_summary(tmp_path):
    from fgrpo_sim.metrics.results_io import align_problems

    def counts(name, ids):
        path = tmp_path / name
        path.write_text("".join(json.dumps({"problem_id": p, "n": 4 + i, "c": i}) + "\n" for i, p in enumerate(ids)))
        return read_results_jsonl(path)

    a, b = counts("a.jsonl", ["x", "y", "z"]), counts("b.jsonl", ["z", "x", "y"])
    assert align_problems(a, b).tolist() == [1, 2, 0]
    assert a.summary() == {"file": str(tmp_path / "a.jsonl"), "problems": 3, "n_min": 4, "n_max": 6, "samples": 15,
                           "correct": 3, "sample_lines": 0, "count_lines": 3}
    c = counts("c.jsonl", ["x", "y", "p", "q", "r", "s"])
    message = (f"the compared files must cover the same problems: {c.path} lacks 1 problem(s) of {a.path} ('z'); "
               f"{a.path} lacks 4 problem(s) of {c.path} ('p', 'q', 'r', ...)")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        align_problems(a, c)
    d = counts("d.jsonl", ["x", "y", "z", "p", "q", "r"])
    message = f"the compared files must cover the same problems: {a.path} lacks 3 problem(s) of {d.path} ('p', 'q', 'r')"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        align_problems(d, a)


def test_curve_as_dict():
    from fgrpo_sim.metrics import pass_at_k_curve

    curve = pass_at_k_curve(n=[4, 4], c=[1, 2], ks=[1, 2], n_bootstrap=0)
    # pass@1 = (1/4 + 2/4) / 2; pass@2 = (1 - C(3,2)/C(4,2) + 1 - C(2,2)/C(4,2)) / 2 = (1/2 + 5/6) / 2
    assert curve.as_dict() == {"k": [1, 2], "pass_at_k": pytest.approx([3 / 8, 2 / 3], rel=1e-12),
                               "ci_low": curve.lower.tolist(), "ci_high": curve.upper.tolist(), "confidence": 0.95,
                               "n_bootstrap": 0, "problems": 2}


def test_paired_test_descriptions():
    from fgrpo_sim.metrics.paired_tests import TESTS, describe, largest_k, untested_reason

    assert describe("u-statistic", 0.05) == ("u-statistic test (z-test, unbiased variance of the pass@k estimator), "
                                             "two-sided alpha = 0.05")
    assert describe("app-q", 0.1, m=4, iterations=300) == (
        "app-q test (paired m-out-of-n subsampling interval, paper App. Q; m = 4, 300 rounds), two-sided alpha = 0.1")
    assert describe("app-q", 0.1) == "app-q test (paired m-out-of-n subsampling interval, paper App. Q), two-sided alpha = 0.1"
    assert describe("u-statistic", 0.1, m=4, iterations=300).endswith("estimator), two-sided alpha = 0.1")
    assert (largest_k("u-statistic", 9, None), largest_k("app-q", 9, 5)) == (4, 5)
    assert (untested_reason("u-statistic", None), untested_reason("app-q", 5)) == ("k > n / 2", "k > m = 5")
    message = "test must be one of " + ", ".join(TESTS) + ", got 'z'"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        largest_k("z", 9, None)


RAISES = [
    (lambda: bootstrap_mean_ci([1, 2, 3], confidence=1.0), "confidence must be in (0, 1), got 1"),
    (lambda: bootstrap_mean_ci([1, 2, 3], confidence=0.0), "confidence must be in (0, 1), got 0"),
    (lambda: bootstrap_mean_ci([1, 2, 3], n_resamples=99), "n_resamples must be in [100, 10000000], got 99"),
    (lambda: bootstrap_mean_ci([1, 2, 3], n_resamples=10_000_001),
     "n_resamples must be in [100, 10000000], got 10000001"),
    (lambda: bootstrap_mean_ci([0.1, np.nan, np.inf]), "values must be finite, got 2 NaN/inf values"),
    (lambda: pass_at_k_curve(n=[4, 3], c=[1, 1], ks=[4]),
     "k must be <= n for every problem, got k = 4 but problem index 1 has n = 3 (1 of 2 problems have n < 4)"),
    (lambda: pass_at_k_curve(n=[4, 3], c=[1, 1], ks=[0]), "ks must be in [1, inf], got 0"),
    (lambda: pass_at_k_curve(n=[4, 3], c=[1, 1], ks=[[1, 2]]), "ks must be a non-empty 1-D list of integers"),
    (lambda: pass_at_k_curve(n=[4, 3], c=[1, 1], ks=[]), "ks must be a non-empty 1-D list of integers"),
    (lambda: pass_at_k_curve(n=[4, 3], c=[1, 1], confidence=1.0), "confidence must be in (0, 1), got 1"),
    (lambda: pass_at_k_curve(n=[4, 3], c=[1, 1], confidence=0.0), "confidence must be in (0, 1), got 0"),
    (lambda: pass_at_k_curve(n=[4, 3], c=[1, 1], n_bootstrap=-1), "n_bootstrap must be in [0, inf], got -1"),
    (lambda: pass_at_k_curve(n=[4], c=[1], n_bootstrap=1),
     "n_bootstrap must be 0 for a single problem (a bootstrap over problems needs >= 2), got 1"),
    (lambda: pass_at_k_curve(correct=[[1, 0]], n=[2]), "give either correct or (n, c), not both"),
    (lambda: pass_at_k_curve(correct=[[1, 0]], c=[1]), "give either correct or (n, c), not both"),
    (lambda: pass_at_k_curve(n=[2]), "give either correct or both n and c"),
    (lambda: pass_at_k(0, 0, 1), "n must be in [1, inf], got 0"),
    (lambda: pass_at_k(4, -1, 1), "c must be in [0, inf], got -1"),
    (lambda: pass_at_k(4, 1, 0), "k must be in [1, inf], got 0"),
    (lambda: pass_at_k([4, 4], [1, 1, 1], 1), "n, c and k must broadcast together, got shapes (2,), (3,), ()"),
    (lambda: pass_at_k([4, 3], [1, 4], 1), "c must be in [0, n], got c = 4 for n = 3"),
    (lambda: pass_at_k([4, 3], [1, 1], [1, 4]), "k must be in [1, n], got k = 4 for n = 3"),
    (lambda: pass_at_k_table(0, [1]), "m must be in [1, inf], got 0"),
    (lambda: pass_at_k_table(4, [5]), "ks must be in [1, 4], got 5"),
    (lambda: pass_at_k_variance([4, 4], [1, 5], 1), "c must be in [0, n], got c = 5"),
    (lambda: pass_at_k_variance([8, 4], 1, 3),
     "k must be in [1, n / 2] (the variance of pass@k has no unbiased estimate beyond), got k = 3 for n = 4"),
    (lambda: pass_at_k_variance(4, 1, 0), "k must be in [1, inf], got 0"),
    (lambda: pass_at_k_variance(4, -1, 1), "c must be in [0, inf], got -1"),
    (lambda: pass_at_k_variance(0, 0, 1), "n must be in [1, inf], got 0"),
    (lambda: paired_ustatistic_test(N_A, C_A, [8], [1]), "n_b must list the same problems as n_a, got 1 and 4 problems"),
    (lambda: paired_ustatistic_test(N_A, C_A, N_B, C_B, [[1]]), "ks must be a non-empty 1-D list of integers"),
    (lambda: paired_ustatistic_test(N_A, C_A, N_B, C_B, [1, 5]),
     "ks must be in [1, smallest n / 2 = 4] (the variance of pass@k has no unbiased estimate beyond), got k = 5"),
    (lambda: paired_ustatistic_test(N_A, C_A, N_B, C_B, [0]), "ks must be in [1, inf], got 0"),
    (lambda: paired_ustatistic_test(N_A, C_A, N_B, C_B, [1], alpha=1.0), "alpha must be in (0, 1), got 1"),
    (lambda: paired_ustatistic_test(N_A, C_A, N_B, C_B, [1], alpha=0.0), "alpha must be in (0, 1), got 0"),
    (lambda: paired_subsampling_test(N_A, C_A, [8], [1]), "n_b must list the same problems as n_a, got 1 and 4 problems"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [1, 3], m=2), "ks must be in [1, m = 2], got k = 3"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [[1]], m=2), "ks must be a non-empty 1-D list of integers"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [0], m=2), "ks must be in [1, inf], got 0"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [1], m=2, iterations=39),
     "iterations must be >= 2 / alpha = 40 (fewer rounds cannot give p < alpha = 0.05), got 39"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [1], m=2, iterations=0), "iterations must be in [1, inf], got 0"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [1], m=2, alpha=0.0), "alpha must be in (0, 1), got 0"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [1], m=2, alpha=1.0), "alpha must be in (0, 1), got 1"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [1], m=2, chunk_size=0), "chunk_size must be in [1, inf], got 0"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [1], m=2, seed=-1), "seed must be in [0, inf], got -1"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [1], m=2, both_correct=[1]),
     "both_correct must have one entry per problem (4), got shape (1,)"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [1], m=2, both_correct=[0, 0, 0, -1]),
     "both_correct must be in [0, inf], got -1"),
    (lambda: paired_subsampling_test(N_A, C_A, [8, 8, 8, 7], C_B, [1], m=2, both_correct=[0, 0, 0, 0]),
     "n_b must equal n_a for every problem when both_correct (linked samples) is given"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [1], m=2, both_correct=[2, 0, 7, 0]),
     "both_correct must be in [max(0, c_a + c_b - n), min(c_a, c_b)] for every problem"),
    (lambda: paired_subsampling_test(N_A, C_A, N_B, C_B, [1], m=2, both_correct=[0, 0, 6, 0]),
     "both_correct must be in [max(0, c_a + c_b - n), min(c_a, c_b)] for every problem"),
    (lambda: subsample_size(1), "the subsampling test needs at least 2 samples per problem, got a problem with n = 1 "
                                "(with n = 1 every subsample is the whole sample: the interval has zero width)"),
    (lambda: subsample_size(8, 8), "m must be in [1, 7], got 8"),
    (lambda: subsample_size(8, 0, name="--m"), "--m must be in [1, 7], got 0"),
    (lambda: counts_from_matrix([1, 0]), "correct must be a [problems, samples] matrix with samples >= 1, got shape (2,)"),
    (lambda: counts_from_matrix(np.zeros((2, 0))),
     "correct must be a [problems, samples] matrix with samples >= 1, got shape (2, 0)"),
    (lambda: counts_from_matrix([[1, 2]]), "correct must be boolean (or 0/1)"),
    (lambda: pass_at_k_curve(n=[[4]], c=[[1]]), "n and c must be 1-D with one entry per problem, got shapes (1, 1) and (1, 1)"),
    (lambda: pass_at_k_curve(n=[4], c=[1, 1]), "n and c must be 1-D with one entry per problem, got shapes (1,) and (2,)"),
    (lambda: pass_at_k_curve(n=[], c=[]), "n must list at least one problem"),
    (lambda: pass_at_k_curve(n=[4, 3], c=[1, 4]), "c must be in [0, n], got c = 4 for n = 3 (problem index 1)"),
    (lambda: pass_at_k_curve(n=[4, 4], c=[1, 1], seed=-1), "seed must be in [0, inf], got -1"),
]


@pytest.mark.parametrize("call, message", RAISES,
                         ids=[f"{i}-" + re.sub(r"\W+", "_", m)[:40] for i, (_, m) in enumerate(RAISES)])
def test_interval_options_are_refused_with_their_range(call, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()


def test_bootstrap_mean_ci_is_scipys_percentile_bootstrap_with_its_defaults():
    from scipy import stats

    values = np.array([[0.1, 0.9], [0.4, 0.2], [0.35, 0.3], [0.8, 0.7], [0.2, 0.6]])
    got = bootstrap_mean_ci(values, confidence=0.9, n_resamples=500, seed=3)
    # tasks resampled independently (paired=False), the statistic the mean of the task means
    ref = stats.bootstrap(tuple(values.T), lambda *s, axis=-1: np.mean([x.mean(axis=axis) for x in s], axis=0),
                          n_resamples=500, confidence_level=0.9, method="percentile", paired=False,
                          rng=np.random.default_rng(3)).confidence_interval
    assert (got.low, got.high) == pytest.approx((ref.low, ref.high), rel=1e-12)
    assert (got.estimate, got.confidence, got.runs) == (pytest.approx(0.455, rel=1e-12), 0.9, 5)
    assert bootstrap_mean_ci(values[:, 0]) == bootstrap_mean_ci(values[:, 0], 0.95, 20_000, 0)
    flat = bootstrap_mean_ci([[0.5, 0.5]] * 3, confidence=0.8)  # all equal: no resampling, the value itself
    assert (flat.estimate, flat.low, flat.high, flat.confidence, flat.runs) == (0.5, 0.5, 0.5, 0.8, 3)


def test_pass_at_k_curve_defaults_and_bootstrap_switch():
    n, c = [4, 4, 4], [1, 2, 4]
    default = pass_at_k_curve(n, c)
    explicit = pass_at_k_curve(n, c, ks=[1, 2, 3, 4], n_bootstrap=1000, seed=0)
    assert default.as_dict() == explicit.as_dict()
    one = pass_at_k_curve(n, c, ks=[1], n_bootstrap=1, seed=0)  # one resample is still a bootstrap
    assert one.n_bootstrap == 1 and (one.lower[0], one.upper[0]) != (one.mean[0], one.mean[0])
    assert one.mean[0] == pytest.approx(7 / 12, rel=1e-12)


def _uniform(tmp_path, rows):
    path = tmp_path / "u.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_uniform_files_are_read_by_columns(tmp_path, monkeypatch):
    # a file whose lines all have the first line's keys never reaches the line-by-line reader
    import fgrpo_sim.metrics.results_io as results_io

    monkeypatch.setattr(results_io, "_read_lines", lambda path: pytest.fail("read line by line"))
    counts = read_results_jsonl(_uniform(tmp_path, [{"problem_id": "a", "n": 1, "c": 0},
                                                    {"problem_id": "b", "n": MAX_SAMPLES, "c": 1},
                                                    {"problem_id": "c", "n": 3, "c": 3}]))
    assert counts.n.dtype == np.int64 and counts.n.tolist() == [1, MAX_SAMPLES, 3] and counts.c.tolist() == [0, 1, 3]
    assert (counts.path, counts.sample_lines, counts.count_lines) == (str(tmp_path / "u.jsonl"), 0, 3)
    rows = [{"problem_id": p, "correct": ok, "sample_index": i} for i, (p, ok) in
            enumerate([("a", True), ("b", False), ("a", False), ("b", False)])]
    counts = read_results_jsonl(_uniform(tmp_path, rows))
    assert counts.problem_ids == ["a", "b"] and counts.c.dtype == np.int64
    assert counts.n.tolist() == [2, 2] and counts.c.tolist() == [1, 0]  # the last problem has no correct sample
    assert (counts.first_line, counts.sample_lines, counts.count_lines) == ([1, 2], 4, 0)


def test_a_sample_index_without_correct_is_refused(tmp_path):
    path = _uniform(tmp_path, [{"problem_id": "a", "sample_index": 0}])
    with pytest.raises(ValueError, match="line 1: needs 'correct'"):
        read_results_jsonl(path)


# --- second pass over mutmut's metrics survivors (bootstrap_column_means_ci, t_interval, counts_from_matrix,
# paired_subsampling_test): values derived by hand (exact fractions, the empirical quantiles of a draw whose
# values are known exactly) or the function's contract (exact messages, dtypes, bounds).

def test_column_means_ci_refusals_name_the_parameter_and_range():
    from fgrpo_sim.metrics.bootstrap import bootstrap_column_means_ci

    ok = [[0.0, 1.0], [1.0, 1.0], [0.5, 1.0]]
    for bad in (0.0, 1.0, -0.5, 1.5):
        with pytest.raises(ValueError, match=rf"^confidence must be in \(0, 1\), got {bad:g}$"):
            bootstrap_column_means_ci(ok, confidence=bad)
    for bad in (0, 10_000_001):
        with pytest.raises(ValueError, match=rf"^n_resamples must be in \[1, 10000000\], got {bad}$"):
            bootstrap_column_means_ci([[1.0], [1.0]], n_resamples=bad)  # constant: the check comes before the shortcut
    with pytest.raises(ValueError, match=r"^values must be \[units, columns\] with at least 2 units, got shape \(3,\)$"):
        bootstrap_column_means_ci([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"^values must be finite, got 2 NaN/inf values$"):
        bootstrap_column_means_ci([[np.nan, 1.0], [np.inf, 0.0], [0.5, 0.5]])


def test_column_means_ci_at_two_units_exact_fractions_and_defaults():
    from fractions import Fraction

    from scipy.stats import bootstrap

    from fgrpo_sim.metrics.bootstrap import bootstrap_column_means_ci

    # two units: every resample mean of a column [0, 1] is 0, 1/2 or 1
    low, high = bootstrap_column_means_ci([[0.0], [1.0]], confidence=0.5, n_resamples=400)
    assert {low[0], high[0]} <= {0.0, 0.5, 1.0} and low[0] <= 0.5 <= high[0]
    # exact fractions are numbers too
    third = [[Fraction(1, 3), Fraction(1, 10)], [Fraction(2, 3), Fraction(1, 10)], [Fraction(1), Fraction(1, 10)]]
    low, high = bootstrap_column_means_ci(third, n_resamples=50)
    assert low[1] == high[1] == pytest.approx(0.1, rel=1e-12) and 1 / 3 <= low[0] <= 2 / 3 <= high[0] <= 1.0
    # a constant column next to a varying one: both bounds are its mean, bit for bit (the same numpy mean on one
    # machine), not resampled means that round off it
    values = np.column_stack([np.arange(10) / 10, np.full(10, 0.1), np.full(10, 0.7)])
    low, high = bootstrap_column_means_ci(values, n_resamples=300, seed=2)
    assert low[1:].tolist() == high[1:].tolist() == values.mean(axis=0)[1:].tolist()
    # defaults: 95%, 1000 resamples, seed 0, i.e. scipy's percentile bootstrap with those settings
    x = np.array([0.1, 0.9, 0.3, 0.35, 0.6, 0.05, 0.8])
    low, high = bootstrap_column_means_ci(x[:, None])
    ref = bootstrap((x,), np.mean, n_resamples=1000, confidence_level=0.95, method="percentile",
                    rng=np.random.default_rng(0)).confidence_interval
    assert (low[0], high[0]) == pytest.approx((ref.low, ref.high), rel=1e-9)


def test_column_means_ci_over_several_batches():
    """More resamples than one batch holds (4,000,000 // units rows): every batch filled, the interval that of
    the mean's normal approximation within 10%."""
    from fgrpo_sim.metrics.bootstrap import bootstrap_column_means_ci

    units = 8000  # a batch of 500 resamples
    x = (np.arange(units) % 2).astype(float)[:, None]
    low, high = bootstrap_column_means_ci(x, confidence=0.95, n_resamples=1201, seed=1)
    half = 1.96 * 0.5 / np.sqrt(units)
    assert (high[0] - low[0]) / 2 == pytest.approx(half, rel=0.1)
    assert abs((low[0] + high[0]) / 2 - 0.5) < 0.2 * half


def test_t_interval_constant_and_unit_spread_samples_and_booleans():
    from fgrpo_sim.metrics.t_interval import t_interval

    # three equal values whose mean rounds off them: scipy's interval is 4e-17 wide around it; ours is the mean
    mean, low, high = t_interval([[0.1, 0.1, 0.1], [0.5, 0.9, 0.7], [0.0, 1.0, 0.5]])
    assert low[0] == mean[0] == high[0]
    assert low[1] < mean[1] < high[1] and low[2] < mean[2] < high[2]  # spread 0.4 and exactly 1: real intervals
    assert t_interval([True, False, True, True])[1] == pytest.approx(t_interval([1.0, 0.0, 1.0, 1.0])[1], rel=1e-12)


def test_counts_from_matrix_takes_0_1_integers_and_one_sample():
    n, c = counts_from_matrix(np.array([[1, 0, 1], [0, 0, 0]]))
    assert n.tolist() == [3, 3] and c.tolist() == [2, 0] and c.dtype == np.int64 and n.dtype == np.int64
    n, c = counts_from_matrix([[True], [False]])  # one sample per problem
    assert n.tolist() == [1, 1] and c.tolist() == [1, 0] and c.dtype == np.int64
    for bad in ([[1, 2]], [[0, -1]], [[0.5, 1.0]]):
        with pytest.raises(ValueError, match=r"^correct must be boolean \(or 0/1\)$"):
            counts_from_matrix(bad)


def _empirical_quantile(values_by_count: dict, q: float) -> float:
    """np.quantile's linear rule on the sorted sample that holds `count` copies of each value."""
    ordered = np.repeat(list(values_by_count), list(values_by_count.values()))
    return float(np.quantile(np.sort(ordered), q))


def test_subsampling_test_against_its_rounds_counted_by_hand():
    """One problem, model B always wrong, m = 2: a round's difference is pass@k of the X ~ Hypergeom(2 of n) correct
    draws, so k = 2 gives 1 when X >= 1 and k = 1 gives X / 2. The counts of X = 0, 1, 2 follow from the two mean
    differences exactly; the interval, p-value and verdict follow from those counts."""
    rounds = 2000
    # 5 of 10 correct: X = 0, 1, 2 with chances 2/9, 5/9, 2/9, so alpha = 0.5's quantiles (25%, 75%) fall
    # between different values than 1/6 or 5/6 would
    res = paired_subsampling_test([10], [5], [10], [0], (1, 2), m=2, iterations=rounds, alpha=0.5, seed=4)
    mean1, mean2 = res.subsample_mean_difference
    nonzero = round(mean2 * rounds)  # rounds with X >= 1
    two = round(2 * mean1 * rounds - nonzero)  # k = 1: X = 1 adds 1/2, X = 2 adds 1
    zero, one = rounds - nonzero, nonzero - two
    assert abs(mean2 * rounds - nonzero) < 1e-6 and abs(mean1 * rounds - (one / 2 + two)) < 1e-6
    assert 0 < zero < rounds and one > 0 and two > 0
    for j, by_count in enumerate(({0.0: zero, 0.5: one, 1.0: two}, {0.0: zero, 1.0: nonzero})):
        assert res.lower[j] == pytest.approx(_empirical_quantile(by_count, 0.25), rel=1e-12, abs=1e-12)
        assert res.upper[j] == pytest.approx(_empirical_quantile(by_count, 0.75), rel=1e-12, abs=1e-12)
        # no round below 0: p = 2 (rounds <= 0, plus one) / (B + 1), per k
        assert res.p_value[j] == pytest.approx(min(1.0, 2 * (zero + 1) / (rounds + 1)), rel=1e-12)
    assert res.linked is False and res.iterations == rounds and res.m == 2
    # B better than A: the rounds >= 0 decide the p-value
    rev = paired_subsampling_test([10], [0], [10], [5], (1, 2), m=2, iterations=rounds, alpha=0.5, seed=4)
    assert rev.subsample_mean_difference.tolist() == pytest.approx([-mean1, -mean2], rel=1e-12)
    assert rev.p_value.tolist() == pytest.approx([min(1.0, 2 * (zero + 1) / (rounds + 1))] * 2, rel=1e-12)
    assert rev.lower.tolist() == pytest.approx((-res.upper).tolist(), abs=1e-12)
    assert rev.upper.tolist() == pytest.approx((-res.lower).tolist(), abs=1e-12)


def test_subsampling_verdict_when_the_interval_touches_zero():
    # half the rounds draw the correct sample (diff 1), half not (diff 0): the 2.5% bound is exactly 0, not > 0
    res = paired_subsampling_test([2], [1], [2], [0], (1,), m=1, iterations=400, alpha=0.05, seed=1)
    assert res.lower[0] == 0.0 and res.upper[0] == 1.0 and not res.significant[0]
    res = paired_subsampling_test([2], [0], [2], [1], (1,), m=1, iterations=400, alpha=0.05, seed=1)
    assert res.lower[0] == -1.0 and res.upper[0] == 0.0 and not res.significant[0]
    linked = paired_subsampling_test([4], [2], [4], [1], (1,), m=2, iterations=400, both_correct=[1])
    assert linked.linked is True


def test_subsampling_defaults_progress_and_messages(capsys, monkeypatch):
    n, c_a, c_b = [8, 8, 8], [2, 5, 7], [3, 4, 1]
    res = paired_subsampling_test(n, c_a, n, c_b, (1,), m=3)
    assert res.iterations == 50_000 and capsys.readouterr().err == ""  # 50,000 rounds, no bar by default
    assert res.rows() == paired_subsampling_test(n, c_a, n, c_b, (1,), m=3, iterations=50_000, seed=0).rows()
    # both models draw in each chunk of 2,000 rounds: another chunk size interleaves their draws differently
    chunked = paired_subsampling_test(n, c_a, n, c_b, (1,), m=3, iterations=4001)
    assert chunked.rows() == paired_subsampling_test(n, c_a, n, c_b, (1,), m=3, iterations=4001, chunk_size=2000).rows()
    assert chunked.rows() != paired_subsampling_test(n, c_a, n, c_b, (1,), m=3, iterations=4001, chunk_size=2001).rows()
    import fgrpo_sim.progress

    seen = []  # a bar is drawn on a terminal only: record what the test asks of it
    monkeypatch.setattr(fgrpo_sim.progress, "bar", lambda it, **kw: seen.append((list(it), kw)) or seen[-1][0])
    with_bar = paired_subsampling_test(n, c_a, n, c_b, (1,), m=3, iterations=4001, progress=True)
    assert with_bar.rows() == chunked.rows()
    assert seen == [([0, 2000, 4000], {"desc": "subsampling", "unit": "chunk"})]
    paired_subsampling_test(n, c_a, n, c_b, (1,), m=3, iterations=4001)  # default: no bar asked for
    assert len(seen) == 1
    with pytest.raises(ValueError, match=r"^ks must be in \[1, m = 3\], got k = 4$"):
        paired_subsampling_test(n, c_a, n, c_b, (3, 4), m=3)


def test_bootstrap_mean_ci_constant_runs_and_default_resamples():
    from scipy.stats import bootstrap

    ci = bootstrap_mean_ci([[0.3, 0.5]] * 4)  # every run equal, tasks differ
    assert (ci.low, ci.high) == pytest.approx((0.4, 0.4), rel=1e-12) and ci.low == ci.estimate == ci.high
    x = np.random.default_rng(5).random(30)  # 30 values: a resample count's change moves the quantiles
    ref = bootstrap((x,), np.mean, n_resamples=20_000, confidence_level=0.95, method="percentile",
                    rng=np.random.default_rng(0)).confidence_interval
    ci = bootstrap_mean_ci(x)  # defaults: 95%, 20,000 resamples, seed 0
    assert (ci.low, ci.high) == pytest.approx((ref.low, ref.high), rel=1e-9)
