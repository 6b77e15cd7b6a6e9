"""`fgrpo check` and the Monte Carlo estimators behind it."""

from __future__ import annotations

import json

import pytest

from fgrpo_sim.sim.montecarlo import estimate_tail_miss


def _quick_json(run_cli, seed: int) -> list[dict]:
    res = run_cli("check", "--quick", "--json", "--no-progress", "--seed", seed)
    assert res.exit_code == 0, res.stdout[-2000:]
    return json.loads(res.stdout)


def test_fgrpo_check_quick_passes_and_prints_json(run_cli):
    results = _quick_json(run_cli, 0)
    names = " ".join(r["name"] for r in results)
    for family in ("lemma3.1", "lemmaH.1", "corH.2", "brorl.EU2", "prop3.2", "focal step gamma=", "focal m_gamma",
                   "N* peak_group_size mu=0.3 tau=0.003", "pass@k n=", "pass@k variance", "core.grpo_advantages",
                   "focal weight on A > 0", "focal weight on A < 0", "categorical start", "(Fig 2)",
                   "path distinct + sgd", "path logprob + sgd", "path distinct + adamw"):
        assert family in names
    assert any("N=4096" in r["name"] for r in results if r["name"].startswith("lemma3.1"))
    assert any("mu=0.9 " in r["name"] for r in results) and any("mu=0.1 " in r["name"] for r in results)
    for r in results:
        assert set(r) >= {"name", "closed_form", "estimate", "interval", "kind", "passed"}
        assert not any(key.startswith("_") for key in r)
        lo, hi = r["interval"]
        assert r["passed"]
        if r["kind"] == "tolerance":  # a fixed allowance on the measured value, named as such
            assert r["name"].startswith(("prop3.2", "focal step", "N*", "pass@k", "core.", "focal weight",
                                         "categorical start", "path ")) and lo <= r["estimate"] <= hi
        else:
            assert r["kind"] == "interval" and lo <= r["closed_form"] <= hi


def test_the_same_checks_at_every_seed_each_at_the_bonferroni_level(run_cli):
    """Issue 36: the check set is fixed (67 to 77 checks at --seed 0..4 before), and each sampling check's
    level is the family rate / their number, so a correct build fails a run at most 0.1% of the time."""
    from fgrpo_sim.sim.checks import FAMILY_FALSE_FAILURE

    runs = {seed: _quick_json(run_cli, seed) for seed in (0, 1, 2, 7)}
    names = {seed: [r["name"] for r in results] for seed, results in runs.items()}
    assert all(n == names[0] for n in names.values()) and len(set(names[0])) == len(names[0])
    for results in runs.values():
        intervals = [r for r in results if r["kind"] == "interval"]
        assert len(intervals) >= 30
        for r in intervals:
            assert r["level"] == pytest.approx(FAMILY_FALSE_FAILURE / len(intervals), rel=1e-12)
    assert runs[0][0]["estimate"] != runs[1][0]["estimate"]  # the seed still moves the draws
    assert FAMILY_FALSE_FAILURE == 1e-3
    from fgrpo_sim.sim.checks import CHECK_COUNTS, INTERVAL_COUNTS

    assert len(names[0]) == CHECK_COUNTS["quick"]
    assert sum(r["kind"] == "interval" for r in runs[0]) == INTERVAL_COUNTS["quick"]


def test_the_full_check_holds_the_stated_number_of_checks(monkeypatch):
    """The full run's check set, counted with the Monte Carlo estimators stubbed (their draws do not decide which
    checks run: the points come from the inputs alone)."""
    import numpy as np

    from fgrpo_sim.sim import checks, montecarlo

    def given_x(p, correct, n, trials, *args, **kwargs):
        z = np.zeros(n + 2)
        return {"P_pos": z, "P_neg": z, "S_R": z, "P_pos_se": z + 1, "P_neg_se": z + 1, "S_R_se": z + 1, "groups": z}

    monkeypatch.setattr(montecarlo, "estimate_tail_miss", lambda *a, **k: (0.5, 0.0))
    monkeypatch.setattr(montecarlo, "estimate_sampled_masses", lambda *a, **k: {"P_pos": (0.1, 0.01),
                                                                                "P_neg": (0.1, 0.01)})
    monkeypatch.setattr(montecarlo, "estimate_masses_given_x", given_x)
    monkeypatch.setattr(montecarlo, "estimate_unsampled_square_mass", lambda *a, **k: (0.1, 0.01))
    monkeypatch.setattr(montecarlo, "estimate_lr_multiplier", lambda *a, **k: (0.5, 0.01))
    results = checks.run_checks(quick=False)
    assert len(results) == checks.CHECK_COUNTS["full"]
    assert sum(r["kind"] == "interval" for r in results) == checks.INTERVAL_COUNTS["full"]


def test_check_help_states_the_false_failure_rate(run_cli):
    res = run_cli("check", "--help")
    assert res.exit_code == 0 and "0.1%" in " ".join(res.stdout.split())


def test_check_exits_1_when_a_check_fails(run_cli, monkeypatch):
    import fgrpo_sim.sim.checks as checks

    def broken(quick, seed, device):
        return [checks._result("deliberately wrong", 0.5, 0.1, (0.09, 0.11))]

    monkeypatch.setattr(checks, "FAMILIES", (broken,))
    res = run_cli("check", "--no-progress")
    assert res.exit_code == 1 and "FAIL" in res.stdout


def test_tail_miss_estimate_edge_cases_and_reproducibility():
    assert estimate_tail_miss(1, 0.5, 0.1, 10_000, 0) == (0.0, 0.0)  # one rollout is never active
    assert estimate_tail_miss(64, 0.5, 0.0, 10_000, 0)[0] > 0.99  # E empty: B = active
    a = estimate_tail_miss(8, 0.5, 0.05, 50_000, seed=3)
    assert a == estimate_tail_miss(8, 0.5, 0.05, 50_000, seed=3)
    assert a != estimate_tail_miss(8, 0.5, 0.05, 50_000, seed=4)
    est, se = a
    assert 0 < se < 0.01 and abs(est - 0.6578) < 5 * se


@pytest.mark.parametrize("kwargs, message", [
    (dict(n=0, mu=0.5, tau=0.1), "n must be in"),
    (dict(n=4, mu=1.5, tau=0.1), "mu must be in"),
    (dict(n=4, mu=0.5, tau=0.6), "tau must be in"),
    (dict(n=4, mu=0.5, tau=0.1, trials=0), "trials must be in"),
])
def test_tail_miss_estimate_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        estimate_tail_miss(**kwargs)


def test_tail_miss_intervals_are_scipys_wilson_intervals_at_the_level():
    from scipy.stats import binomtest

    from fgrpo_sim.sim import checks

    results = checks.finalise(checks.tail_miss_checks(True, 0, "cpu"))
    for r in results:
        hits = round(r["estimate"] * r["trials"])
        ci = binomtest(hits, r["trials"]).proportion_ci(confidence_level=1 - r["level"], method="wilson")
        assert r["interval"] == pytest.approx([ci.low, ci.high], rel=1e-12)
        assert r["level"] == pytest.approx(checks.FAMILY_FALSE_FAILURE / len(results))


def test_check_bad_device_fails_before_the_progress_bar(run_cli):
    res = run_cli("check", "--quick", "--device", "nope")
    assert res.exit_code == 2 and res.stderr.startswith("fgrpo: error: device must be")


def test_sample_counts_rejects_negative_seed():
    import torch

    from fgrpo_sim.sim.montecarlo import estimate_unsampled_square_mass

    with pytest.raises(ValueError, match=r"^seed must be in \[0, "):
        estimate_unsampled_square_mass(torch.tensor([0.5, 0.5]), 2, 10, seed=-1)


# ---- issue 28, item 5: every check can fail; each family fails on a planted error

def test_quick_tail_miss_points_can_all_fail(monkeypatch):
    import fgrpo_sim.theory as theory
    from fgrpo_sim.sim import checks

    honest = checks.finalise(checks.tail_miss_checks(True, 0, "cpu"))
    assert len(honest) == 10 and all(r["passed"] for r in honest)
    real = theory.tail_miss_probability
    monkeypatch.setattr(theory, "tail_miss_probability", lambda n, mu, tau, **k: real(n, mu, 1.25 * tau, **k))
    planted = checks.finalise(checks.tail_miss_checks(True, 0, "cpu"))
    assert [r["name"] for r in planted] == [r["name"] for r in honest]  # the grid does not ask the formula
    # every point but N = 4 at tau = 0.008 (there for the mu terms: tau x 1.25 moves Pr(B) by 1.3 SE only)
    assert [r["name"] for r in planted if r["passed"]] == ["lemma3.1 Pr(B) N=4 mu=0.8 tau=0.008"]


@pytest.mark.parametrize("quick", [True, False])
def test_every_tail_miss_point_can_fail(quick):
    """The fixed grids (chosen from the inputs) hold only points where a wrong formula can show: at least
    100 expected hits and as many misses; N = 1 (Pr(B) = 0) and tails below 1e-4 stay out."""
    from fgrpo_sim.sim.checks import tail_miss_points
    from fgrpo_sim.theory import tail_miss_probability

    grid, trials = tail_miss_points(quick)
    assert len(grid) == (10 if quick else 52)
    assert len({(round(mu, 12), round(tau, 12), n) for mu, tau, n in grid}) == len(grid)  # no point twice
    for mu, tau, n in grid:
        expected_hits = float(tail_miss_probability(n, mu, tau)) * trials
        assert 100 <= expected_hits <= trials - 100, (mu, tau, n)
    assert {0.1, 0.9} <= {mu for mu, _, _ in grid}


@pytest.fixture(scope="module")
def honest_conditional():
    from fgrpo_sim.sim import checks

    return checks.finalise(checks.conditional_on_x_checks(True, 0, "cpu"))


def test_lemma_h1_and_corollary_h2_against_unconditioned_groups(honest_conditional):
    names = [r["name"] for r in honest_conditional]
    assert sum(n.startswith("corH.2 E[S_R|X=k] ") for n in names) >= 5
    assert sum(">= 0" in n for n in names) >= 4 and any("unconditioned" in n for n in names)
    assert all(r["passed"] for r in honest_conditional)


def test_conditional_checks_fail_on_a_planted_error(monkeypatch):
    import fgrpo_sim.theory as theory
    from fgrpo_sim.sim import checks

    real = theory.expected_sampled_correct_mass
    # the correct mass a group with k + 1 correct draws would cover: off by one draw
    monkeypatch.setattr(theory, "expected_sampled_correct_mass", lambda p, c, n, k: real(p, c, n, k + 1))
    planted = checks.finalise(checks.conditional_on_x_checks(True, 0, "cpu"))
    values = [r for r in planted if ("lemmaH.1 E[P_pos" in r["name"] or "corH.2 E[S_R|X=k] " in r["name"])]
    assert values and not any(r["passed"] for r in values)


def test_corollary_increments_fail_when_the_closed_form_decreases(monkeypatch):
    import fgrpo_sim.theory as theory
    from fgrpo_sim.sim import checks

    pos, neg = theory.expected_sampled_correct_mass, theory.expected_sampled_incorrect_mass
    # planted: k read as N - k, so the closed form of E[S_R | X = k] falls with k
    monkeypatch.setattr(theory, "expected_sampled_correct_mass", lambda p, c, n, k: pos(p, c, n, n - k))
    monkeypatch.setattr(theory, "expected_sampled_incorrect_mass", lambda p, c, n, k: neg(p, c, n, n - k))
    increments = [r for r in checks.finalise(checks.conditional_on_x_checks(True, 0, "cpu")) if ">= 0" in r["name"]]
    assert increments and not any(r["passed"] for r in increments)
    assert all(r["closed_form"] < 0 for r in increments)


def test_prop32_tolerance_checks_fail_on_a_planted_error(monkeypatch):
    import numpy as np

    import fgrpo_sim.theory as theory
    from fgrpo_sim.sim import checks

    honest = checks.first_order_checks(True, 0, "cpu")
    assert all(r["passed"] and r["kind"] == "tolerance" for r in honest)
    first, exact = theory.first_order_mass_change, theory.exact_mass_change
    # a first-order formula off by a term linear in eta: the error then shrinks as eta, slope 1
    monkeypatch.setattr(theory, "first_order_mass_change",
                        lambda p, c, counts, rc, rw, eta: tuple(np.asarray(v) + 1e-3 * eta for v in first(p, c, counts, rc, rw, eta)))
    monkeypatch.setattr(theory, "exact_mass_change",
                        lambda p, c, counts, rc, rw, eta: tuple(np.asarray(v) * (1 + 1e-6) for v in exact(p, c, counts, rc, rw, eta)))
    planted = checks.first_order_checks(True, 0, "cpu")
    assert len(planted) == 4 and not any(r["passed"] for r in planted)


def test_format_names_intervals_and_tolerances():
    from fgrpo_sim.sim.checks import _normal_check, _result, finalise, format_results

    text = format_results(finalise([_normal_check("a", 0.5, 0.5, 0.01), _result("b", 2.0, 2.0, (1.8, 2.2))]))
    assert "interval" in text and "tolerance" in text and "bounds" in text.splitlines()[0]
    assert "1 sampling intervals, each at false-failure level 0.001" in text and "0.1%" in text


def test_smoothing_checks_pass_and_fail_when_the_closed_forms_ignore_alpha(monkeypatch):
    """Issue 49: E[g_alpha] and m_gamma(N, alpha) against core's smoothed weight; a closed form that drops alpha
    (the raw X / N weight) fails at every alpha > 0 point, and the alpha = 0 points still pass."""
    import fgrpo_sim.theory as theory
    from fgrpo_sim.sim import checks

    honest = checks.finalise(checks.smoothing_checks(True, 0, "cpu"))
    assert len(honest) == 7 and all(r["passed"] and r["kind"] == "interval" for r in honest)
    weight, lr = theory.expected_smoothed_focal_weight, theory.smoothed_lr_multiplier
    monkeypatch.setattr(theory, "expected_smoothed_focal_weight", lambda n, mu, g, alpha=0.0: weight(n, mu, g))
    monkeypatch.setattr(theory, "smoothed_lr_multiplier", lambda n, g, alpha=0.0: lr(n, g))
    planted = checks.finalise(checks.smoothing_checks(True, 0, "cpu"))
    assert [r["passed"] for r in planted] == [not r["name"].endswith("alpha=0.5") and not r["name"].endswith("alpha=1")
                                              for r in planted]


def test_help_quotes_the_check_counts(run_cli):
    """`check --help` states how many checks each mode runs: the numbers CHECK_COUNTS fixes (it once said 66 / 123
    after the smoothing checks made them 73 / 130)."""
    import re

    from fgrpo_sim.sim.checks import CHECK_COUNTS

    text = " ".join(run_cli("check", "--help").stdout.split())
    found = re.search(r"(\d+) checks instead of (\d+)", text)
    assert found and (int(found.group(1)), int(found.group(2))) == (CHECK_COUNTS["quick"], CHECK_COUNTS["full"])
