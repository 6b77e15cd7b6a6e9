"""The paired tests of a pass@k difference that `fgrpo passk --compare` and `fgrpo llm report` offer, by name.

    conditional  (default) exact conditional test (`conditional_test`): each problem's pooled count split anew by
                 its hypergeometric law, Monte Carlo p-value (never 0); exact size at most alpha at every problem
                 count, n and k <= n (measured: benchmarks/paired_test_calibration.py); seeded
    u-statistic  z-test with the unbiased variance of the pass@k estimator (`ustat_test`): rejects a true null at
                 about alpha with many problems and mixed outcomes, too often with few problems at large k or
                 mostly all-or-nothing problems (same benchmark); k <= n / 2
    app-q        the paper's paired m-out-of-n subsampling interval (App. Q, `subsampling`): true size about
                 0.06% at alpha = 0.05, kept to reproduce the paper's marks; k <= m

Both hold the benchmark's problems fixed: they test the difference on these problems, given the noise of the
sampled generations, not over a new draw of problems.
"""

from __future__ import annotations

from typing import Any

DEFAULT_TEST = "conditional"
TESTS = {
    "conditional": "exact conditional test, pooled counts split by their hypergeometric law",
    "u-statistic": "z-test, unbiased variance of the pass@k estimator",
    "app-q": "paired m-out-of-n subsampling interval, paper App. Q",
}
HOLDS_FIXED = "the benchmark's problems are held fixed (the test is over sampled generations, not problem sampling)"


def check_test(test: str, name: str = "test") -> str:
    if test not in TESTS:
        raise ValueError(f"{name} must be one of {', '.join(TESTS)}, got {test!r}")
    return test


def describe(test: str, alpha: float, m: int | None = None, iterations: int | None = None) -> str:
    """One line naming the test and its level (table notes, plot legends, command output)."""
    detail = f"; m = {m}, {iterations} rounds" if test == "app-q" and m is not None else ""
    if test == "conditional":
        from fgrpo_sim.metrics.conditional_test import DEFAULT_ROUNDS

        detail = f"; {DEFAULT_ROUNDS:,} Monte Carlo rounds"
    return f"{test} test ({TESTS[check_test(test)]}{detail}), two-sided alpha = {alpha:g}"


def largest_k(test: str, n_min: int, m: int | None) -> int:
    """The largest k the test can test for problems with at least n_min samples (m: App. Q's subsample size)."""
    test = check_test(test)
    return n_min if test == "conditional" else n_min // 2 if test == "u-statistic" else int(m)


def untested_reason(test: str, m: int | None) -> str:
    # the conditional test tests every k <= n; it leaves a k untested only where no problem can split differently
    return {"conditional": "no split can differ", "u-statistic": "k > n / 2"}.get(test, f"k > m = {m}")


def run_paired_test(test: str, n_a: Any, c_a: Any, n_b: Any, c_b: Any, ks: Any, *, alpha: float = 0.05,
                    m: int | None = None, iterations: int = 50_000, seed: int = 0, progress: bool = False):
    """The named test's result (its `.rows()`: k, pass_a, pass_b, difference, ci_low, ci_high, p_value,
    significant; or "skipped" where the conditional test finds no test). seed: the conditional test's and App. Q's;
    m, iterations and progress are App. Q's; the u-statistic test draws nothing."""
    if check_test(test) == "conditional":
        from fgrpo_sim.metrics.conditional_test import paired_conditional_test

        return paired_conditional_test(n_a, c_a, n_b, c_b, ks, alpha=alpha, seed=seed)
    if test == "u-statistic":
        from fgrpo_sim.metrics.ustat_test import paired_ustatistic_test

        return paired_ustatistic_test(n_a, c_a, n_b, c_b, ks, alpha=alpha)
    from fgrpo_sim.metrics.subsampling import paired_subsampling_test

    return paired_subsampling_test(n_a, c_a, n_b, c_b, ks, m=m, iterations=iterations, alpha=alpha, seed=seed,
                                   progress=progress)


__all__ = ["DEFAULT_TEST", "TESTS", "HOLDS_FIXED", "check_test", "describe", "largest_k", "untested_reason",
           "run_paired_test"]
