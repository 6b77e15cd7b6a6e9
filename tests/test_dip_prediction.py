"""Issue 21, item 1: the predicted pass@k dip (planner.predict_dip) against brute-force Monte Carlo."""

import numpy as np
import pytest

from fgrpo_sim import theory
from fgrpo_sim.planner import (beta_difficulty, empirical_difficulty, expected_miss_damage, predict_dip,
                               rho_for_dip_at)

SIZES = (2, 4, 8, 16, 32, 64, 128)


def brute_force_damage(draw_mu_rho, n, gamma, groups, rng):
    """Simulate `groups` groups of n rollouts over the regions E / other-correct / wrong; average
    1{active and no draw in E} * 2 sqrt(m (1 - m)) (1 - m)^gamma, m = X / n. Returns (mean, standard error)."""
    mu, rho = draw_mu_rho(groups, rng)
    tau = mu * rho
    counts = rng.multinomial(n, np.stack([tau, mu - tau, 1 - mu], axis=1))
    x = counts[:, 0] + counts[:, 1]
    m = x / n
    hit = (x > 0) & (x < n) & (counts[:, 0] == 0)
    value = hit * 2 * np.sqrt(m * (1 - m)) * (1 - m) ** gamma
    return value.mean(), value.std(ddof=1) / np.sqrt(groups)


def _beta_const(a, b, rho):
    return lambda size, rng: (rng.beta(a, b, size), np.full(size, rho))


def _beta_beta(a, b, ra, rb):
    return lambda size, rng: (rng.beta(a, b, size), rng.beta(ra, rb, size))


PILOT_MU = np.array([0.05, 0.2, 0.35, 0.5, 0.6, 0.75, 0.9, 0.95])
PILOT_RHO = np.array([0.02, 0.05, 0.01, 0.1, 0.03, 0.02, 0.05, 0.08])


def _pilot(size, rng):
    i = rng.integers(PILOT_MU.size, size=size)
    return PILOT_MU[i], PILOT_RHO[i]


SETTINGS = [
    ("Beta(1,1), rho 0.05", lambda: (beta_difficulty(1, 1), 0.05), _beta_const(1, 1, 0.05), 0.0),
    ("Beta(2,5), rho ~ Beta(1,30), gamma 0.5", lambda: (beta_difficulty(2, 5), beta_difficulty(1, 30)),
     _beta_beta(2, 5, 1, 30), 0.5),
    ("pilot (mu, rho) pairs", lambda: (empirical_difficulty(PILOT_MU), PILOT_RHO), _pilot, 0.0),
]


@pytest.mark.parametrize("name,make,draw,gamma", SETTINGS, ids=[s[0] for s in SETTINGS])
def test_predicted_dip_matches_brute_force_monte_carlo(name, make, draw, gamma):
    difficulty, rho = make()
    prediction = predict_dip(difficulty, rho, SIZES, gamma=gamma)
    rng = np.random.default_rng(7)
    mc = np.array([brute_force_damage(draw, n, gamma, 200_000, rng) for n in SIZES])
    z = (mc[:, 0] - prediction.damage) / mc[:, 1]
    assert np.all(np.abs(z) < 5), (name, z)
    assert SIZES[int(np.argmax(mc[:, 0]))] == prediction.n_star, (name, mc[:, 0], prediction.damage)
    assert 2 < prediction.n_star < 128  # an interior peak: both ends are safe


def test_count_weight_is_lemma_3_1():
    mu = np.array([0.05, 0.3, 0.5, 0.9])
    for n in (1, 2, 8, 64):
        got = expected_miss_damage(n, mu, 0.1 * mu, weight="count")
        np.testing.assert_allclose(got, theory.tail_miss_probability(n, mu, 0.1 * mu), rtol=1e-10, atol=1e-14)


def test_smaller_rare_share_moves_the_dip_to_larger_n():
    stars = [predict_dip(beta_difficulty(1, 1), rho, SIZES).n_star for rho in (0.2, 0.05, 0.005)]
    assert stars[0] < stars[1] < stars[2]
    lo, hi = rho_for_dip_at(8, beta_difficulty(1, 1), SIZES)
    assert 0 < lo < 0.05 < hi < 0.2
    assert predict_dip(beta_difficulty(1, 1), lo, SIZES).n_star == 8


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="rho"):
        predict_dip(beta_difficulty(1, 1), 1.5)
    with pytest.raises(ValueError, match="weight"):
        predict_dip(beta_difficulty(1, 1), 0.1, weight="mass")
    with pytest.raises(ValueError, match="rho must be one number or one share per prompt"):
        predict_dip(empirical_difficulty([0.2, 0.5]), [0.1, 0.1, 0.1])


def test_plan_prints_the_dip_line():
    from typer.testing import CliRunner

    from fgrpo_sim.cli import app

    result = CliRunner().invoke(app, ["plan", "--beta", "1,1", "--rho", "0.05,0.2"])
    assert result.exit_code == 0, result.output
    assert "pass@k is predicted to dip near N = 8 (rho = 0.05); N = 4 (rho = 0.2)" in result.output
