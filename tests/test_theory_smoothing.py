"""The smoothed focal weight's closed forms (theory/smoothing.py) against sums written out by hand here."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fgrpo_sim.theory import derivations, expected_smoothed_focal_weight, lr_multiplier, smoothed_lr_multiplier


def _g(c, n, gamma, alpha):
    base = (n - c + alpha) / (n + 2 * alpha)
    return 1.0 if gamma == 0 else base**gamma


def _expected_by_hand(n, mu, gamma, alpha):
    return math.fsum(math.comb(n, c) * mu**c * (1 - mu) ** (n - c) * _g(c, n, gamma, alpha) for c in range(n + 1))


def _m_by_hand(n, gamma, alpha):
    w = [math.sqrt(c * (n - c)) for c in range(1, n)]
    return math.fsum(wc * _g(c, n, gamma, alpha) for c, wc in zip(range(1, n), w)) / math.fsum(w)


@pytest.mark.parametrize("n", [1, 2, 3, 8, 33])
@pytest.mark.parametrize("mu", [0.0, 0.1, 0.5, 0.93, 1.0])
@pytest.mark.parametrize("gamma, alpha", [(0.0, 0.5), (0.5, 0.0), (0.5, 0.5), (1.0, 0.5), (2.0, 2.0)])
def test_expected_weight_is_the_binomial_sum(n, mu, gamma, alpha):
    assert expected_smoothed_focal_weight(n, mu, gamma, alpha) == pytest.approx(
        _expected_by_hand(n, mu, gamma, alpha), rel=1e-12, abs=1e-15)


def test_expected_weight_gamma_one_is_linear_and_n2_edges():
    for n, mu, alpha in [(2, 0.3, 0.5), (8, 0.9, 1.0), (100, 0.01, 0.25)]:
        assert expected_smoothed_focal_weight(n, mu, 1.0, alpha) == pytest.approx(
            (n * (1 - mu) + alpha) / (n + 2 * alpha), rel=1e-12)
    # an always-correct prompt: raw weight 0, smoothed (alpha / (N + 2 alpha))^gamma
    assert expected_smoothed_focal_weight(2, 1.0, 0.5) == 0.0
    assert expected_smoothed_focal_weight(2, 1.0, 0.5, 0.5) == pytest.approx(math.sqrt(1 / 6), rel=1e-12)


def test_expected_weight_broadcasts():
    out = expected_smoothed_focal_weight(np.array([2, 8]), np.array([[0.3], [0.9]]), 0.5, 0.5)
    assert out.shape == (2, 2)
    assert out[1, 0] == pytest.approx(_expected_by_hand(2, 0.9, 0.5, 0.5), rel=1e-12)
    assert out[0, 1] == pytest.approx(_expected_by_hand(8, 0.3, 0.5, 0.5), rel=1e-12)


@pytest.mark.parametrize("n", [2, 3, 8, 64])
@pytest.mark.parametrize("gamma, alpha", [(0.5, 0.0), (0.5, 0.5), (2.0, 1.0), (0.0, 0.5)])
def test_smoothed_lr_multiplier_is_the_weighted_sum(n, gamma, alpha):
    assert smoothed_lr_multiplier(n, gamma, alpha) == pytest.approx(_m_by_hand(n, gamma, alpha), rel=1e-12)


def test_smoothed_lr_multiplier_limits():
    assert smoothed_lr_multiplier(2, 0.5, 0.5) == pytest.approx(math.sqrt(0.5), rel=1e-12)  # only c = 1 counts
    assert smoothed_lr_multiplier(8, 0.0, 0.5) == pytest.approx(1.0, rel=1e-12)
    for alpha in (0.0, 0.5):  # a Riemann sum of App. N's integral: N -> infinity gives m_gamma
        assert smoothed_lr_multiplier(2**16, 0.5, alpha) == pytest.approx(lr_multiplier(0.5), rel=1e-5)
        assert smoothed_lr_multiplier(2**16, 2.0, alpha) == pytest.approx(lr_multiplier(2.0), rel=1e-4)


@pytest.mark.parametrize("call, fragment", [
    (lambda: expected_smoothed_focal_weight(0, 0.5, 1.0), "n must be in [1"),
    (lambda: expected_smoothed_focal_weight(4, 1.5, 1.0), "mu must be in [0, 1]"),
    (lambda: expected_smoothed_focal_weight(4, 0.5, -1.0), "gamma must be in [0, inf)"),
    (lambda: expected_smoothed_focal_weight(4, 0.5, 1.0, -0.5), "focal_smoothing must be in [0, inf)"),
    (lambda: expected_smoothed_focal_weight(4, 0.5, 1.0, math.inf), "focal_smoothing must be in [0, inf)"),
    (lambda: smoothed_lr_multiplier(1, 0.5, 0.5), "n must be in [2"),
])
def test_validation(call, fragment):
    with pytest.raises(ValueError) as info:
        call()
    assert fragment in str(info.value)


def test_derivations_hold_the_smoothed_forms():
    items = derivations()
    for name in ("smoothed_focal_weight", "expected_smoothed_focal_weight", "expected_smoothed_focal_weight_gamma1",
                 "lr_multiplier_smoothed"):
        assert name in items and "alpha" in items[name].text()


def test_cli_lr_multiplier_at_n_and_expected_weight(run_cli):
    result = run_cli("theory", "lr-multiplier", "--gamma", "0.5", "--n", "8", "--focal-smoothing", "0.5", "--json")
    assert result.exit_code == 0, result.stderr
    row = json.loads(result.stdout)
    assert row["n"] == 8 and row["focal_smoothing"] == 0.5
    assert row["multiplier"] == pytest.approx(_m_by_hand(8, 0.5, 0.5), rel=1e-12)
    result = run_cli("theory", "expected-weight", "--n", "2", "--mu", "0.9", "--gamma", "1", "--focal-smoothing", "0.5",
                     "--json")
    assert result.exit_code == 0, result.stderr
    row = json.loads(result.stdout)
    assert row["expected_weight"] == pytest.approx((2 * 0.1 + 0.5) / 3, rel=1e-12)
    assert row["raw_expected_weight"] == pytest.approx(0.1, rel=1e-12)


@pytest.mark.parametrize("args, fragment", [
    (("lr-multiplier", "--focal-smoothing", "0.5"), "--focal-smoothing needs --n"),
    (("lr-multiplier", "--n", "8", "--weight", "variance"), "--n takes only --weight mean_abs_advantage"),
    (("lr-multiplier", "--n", "8", "--focal-smoothing", "-1"), "focal_smoothing must be in [0, inf)"),
    (("expected-weight", "--focal-smoothing", "nan"), "focal_smoothing must be in [0, inf)"),
    (("expected-weight", "--n", "0"), "n must be in [1"),
])
def test_cli_bad_input_is_one_line(run_cli, args, fragment):
    result = run_cli("theory", *args)
    assert result.exit_code == 2 and fragment in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr
