"""`fgrpo check` and the Monte Carlo estimators behind it."""

from __future__ import annotations

import json

import pytest

from fgrpo_sim.sim.montecarlo import estimate_tail_miss, wilson_interval


def test_fgrpo_check_quick_passes_and_prints_json(run_cli):
    res = run_cli("check", "--quick", "--json", "--no-progress")
    assert res.exit_code == 0, res.stdout[-2000:]
    results = json.loads(res.stdout)
    names = " ".join(r["name"] for r in results)
    for family in ("lemma3.1", "lemmaH.1", "brorl.EU2", "prop3.2"):
        assert family in names
    assert any("N=4096" in r["name"] for r in results if r["name"].startswith("lemma3.1"))
    for r in results:
        assert set(r) >= {"name", "closed_form", "estimate", "interval", "passed"}
        lo, hi = r["interval"]
        assert r["passed"] and lo <= r["closed_form"] <= hi


def test_check_exits_1_when_a_check_fails(run_cli, monkeypatch):
    import fgrpo_sim.sim.checks as checks

    def broken(quick, seed, device):
        return [checks._result("deliberately wrong", 0.5, 0.1, (0.09, 0.11))]

    monkeypatch.setattr(checks, "tail_miss_checks", broken)
    monkeypatch.setattr(checks, "lemma_h1_checks", lambda *a: [])
    monkeypatch.setattr(checks, "unsampled_square_checks", lambda *a: [])
    monkeypatch.setattr(checks, "first_order_checks", lambda *a: [])
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


def test_wilson_interval_covers_zero_and_one():
    lo, hi = wilson_interval(0, 1000)
    assert lo == 0.0 and 0 < hi < 0.02
    lo, hi = wilson_interval(1000, 1000)
    assert hi == 1.0 and lo > 0.98


def test_check_bad_device_fails_before_the_progress_bar(run_cli):
    res = run_cli("check", "--quick", "--device", "nope")
    assert res.exit_code == 2 and res.stderr.startswith("fgrpo: error: device must be")


def test_sample_counts_rejects_negative_seed():
    import torch

    from fgrpo_sim.sim.montecarlo import estimate_unsampled_square_mass

    with pytest.raises(ValueError, match=r"^seed must be in \[0, "):
        estimate_unsampled_square_mass(torch.tensor([0.5, 0.5]), 2, 10, seed=-1)
