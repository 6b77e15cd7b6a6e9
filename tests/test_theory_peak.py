"""peak_group_size: equals the brute-force argmax, fast for huge N*, continuous maximiser is the slope's root."""

from __future__ import annotations

import numpy as np
import pytest

from fgrpo_sim.theory import peak_group_size, tail_miss_probability
from fgrpo_sim.theory.peak import _numeric_scaled_slope


def _brute_force(mu, tau, n_max):
    n = np.arange(1, n_max + 1)
    values = tail_miss_probability(n, mu, tau)
    return int(n[np.argmax(values)]), float(values.max())


@pytest.mark.parametrize("mu", [0.05, 0.2, 0.3, 0.5, 0.64, 0.8, 0.95])
def test_equals_brute_force_on_a_grid(mu):
    for rho in [0.005, 0.01, 0.05, 0.1, 0.2, 0.5, 0.9, 0.999]:
        tau = mu * rho
        peak = peak_group_size(mu, tau)
        n_star, best = _brute_force(mu, tau, max(256, int(8 * peak.n_continuous)))
        assert peak.n_star == n_star, (mu, rho)
        assert peak.probability == best
        assert abs(peak.n_continuous - peak.n_star) < 1.0


def test_hundreds_of_thousands_without_a_scan():
    # An easy prompt (mu close to 1) with a very rare correct subset peaks past a million rollouts.
    mu, tau = 1 - 1e-5, 1e-10
    peak = peak_group_size(mu, tau)
    assert 5e5 < peak.n_star < 5e6
    n_star, best = _brute_force(mu, tau, 3_000_000)
    assert peak.n_star == n_star and peak.probability == best


def test_vectorised_over_a_grid_matches_scalar_calls():
    mu = np.array([0.2, 0.5, 0.8])[:, None]
    rho = np.array([0.01, 0.05, 0.1, 0.2])[None, :]
    grid = peak_group_size(mu, mu * rho)
    assert grid.n_star.shape == (3, 4) and grid.n_star.dtype == np.int64
    for i in range(3):
        for j in range(4):
            single = peak_group_size(float(mu[i, 0]), float(mu[i, 0] * rho[0, j]))
            assert grid.n_star[i, j] == single.n_star
            assert grid.probability[i, j] == single.probability


def test_continuous_maximiser_is_where_the_slope_changes_sign():
    slope = _numeric_scaled_slope()
    for mu, tau in [(0.5, 0.05), (0.3, 0.003), (0.64, 6.3e-5), (0.9, 1e-6)]:
        n_c = peak_group_size(mu, tau).n_continuous
        assert slope(n_c * (1 - 1e-9), mu, tau) > 0 > slope(n_c * (1 + 1e-9), mu, tau)


def test_digest_numbers_and_the_rarer_the_later_and_higher():
    assert peak_group_size(0.5, 0.05).n_star == 5
    assert peak_group_size(0.3, 0.003).n_star == 14
    peaks = [peak_group_size(0.5, 0.5 * rho) for rho in (0.2, 0.1, 0.05, 0.01)]
    assert [p.n_star for p in peaks] == sorted(p.n_star for p in peaks)
    assert all(a.probability < b.probability for a, b in zip(peaks, peaks[1:]))


def test_degenerate_and_invalid_inputs():
    flat = peak_group_size(0.5, 0.5)  # Pr(B) is identically 0
    assert flat.n_star == 1 and flat.probability == 0.0 and np.isnan(flat.n_continuous)
    assert peak_group_size(1.0, 0.3).probability == 0.0
    with pytest.raises(ValueError, match=r"tau must be in \(0, mu\], got 0"):
        peak_group_size(0.5, 0.0)
    with pytest.raises(ValueError, match=r"tau must be in \(0, mu\], got 0.6"):
        peak_group_size(0.5, 0.6)
    with pytest.raises(ValueError, match=r"mu must be in \(0, 1\]"):
        peak_group_size(0.0, 0.0)


@pytest.mark.parametrize("mu, tau", [(1 - 1e-9, 1e-13), (1e-6, 1e-9), (1 - 1e-5, 1e-10), (0.9999, 0.5), (0.3, 1e-12)])
def test_continuous_maximiser_against_60_digit_root(mu, tau):
    import mpmath

    peak = peak_group_size(mu, tau)
    with mpmath.workdps(60):
        m, t = mpmath.mpf(mu), mpmath.mpf(tau)

        def slope(n):
            return (1 - t) ** n * mpmath.log(1 - t) - (m - t) ** n * mpmath.log(m - t) - (1 - m) ** n * mpmath.log(1 - m)

        root = mpmath.findroot(slope, peak.n_continuous)
    assert abs(peak.n_continuous - root) <= 1e-13 * root


def _reference_peak(mu, tau, one_minus_mu=None):
    """(true integer argmax, real maximiser) of Pr(B) at 60 digits, for the float inputs as given."""
    import mpmath

    with mpmath.workdps(60):
        t = mpmath.mpf(tau)
        c = mpmath.mpf(one_minus_mu) if one_minus_mu is not None else 1 - mpmath.mpf(mu)  # exact
        m = 1 - c
        a, b = 1 - t, m - t

        def slope(n):
            return a**n * mpmath.log(a) - b**n * mpmath.log(b) - c**n * mpmath.log(c)

        lo = mpmath.mpf(1)
        while slope(2 * lo) > 0:
            lo *= 2
        root = mpmath.findroot(slope, (lo, 2 * lo), solver="anderson")

        def tail(n):
            return a**n - b**n - c**n

        candidates = [int(mpmath.floor(root)) + k for k in (-1, 0, 1, 2)]
        values = [tail(n) for n in candidates]
        return candidates[values.index(max(values))], root


# held out: points where the float64 comparison of neighbouring Pr(B) values picked the wrong integer
# (found by comparing against _reference_peak over random mu, tau; the last one is off by two)
@pytest.mark.parametrize("mu, tau", [(0.9999942502993272, 6.42e-12), (4.206831223129571e-08, 2.71e-10),
                                     (3.215577590837878e-09, 4.84e-10), (5.419759788187729e-09, 2.38e-11),
                                     (1e-12, 1e-13)])
def test_integer_peak_is_the_true_argmax_where_neighbours_tie_in_float64(mu, tau):
    import mpmath

    peak = peak_group_size(mu, tau)
    n_true, root = _reference_peak(mu, tau)
    assert peak.n_star == n_true
    assert peak.n_star in (int(mpmath.floor(root)), int(mpmath.ceil(root)))  # next to the real maximiser
    assert abs(peak.n_continuous - root) <= 1e-13 * root


@pytest.mark.parametrize("mu, tau, one_minus_mu", [(0.9999999972552174, 0.470, None), (None, 0.5, 1e-12),
                                                   (None, 1e-3, 1e-12), (None, 1e-13, 1e-12)])
def test_continuous_root_keeps_the_digits_of_one_minus_mu(mu, tau, one_minus_mu):
    peak = peak_group_size(mu, tau, one_minus_mu=one_minus_mu)
    n_true, root = _reference_peak(mu, tau, one_minus_mu)
    assert abs(peak.n_continuous - root) <= 1e-13 * root
    assert peak.n_star == n_true


def test_one_minus_mu_is_exclusive_with_mu():
    with pytest.raises(ValueError, match="either mu or one_minus_mu"):
        peak_group_size(0.5, 0.1, one_minus_mu=0.5)
    assert peak_group_size(None, 0.05, one_minus_mu=0.5).n_star == peak_group_size(0.5, 0.05).n_star


def test_tau_above_mu_message_shows_the_excess():
    with pytest.raises(ValueError, match=r"got 0\.5000000001 with mu = 0\.5$"):
        peak_group_size(0.5, 0.5000000001)


def test_peak_beyond_exact_integers_is_a_named_error():
    with pytest.raises(ValueError, match=r"^mu and tau too small: Pr\(B\) peaks near N = .*got mu = 1e-30"):
        peak_group_size(1e-30, 1e-31)
    assert peak_group_size(1e-12, 1e-13).n_star > 10**12  # still exact well below 2^53


def test_clashing_shapes_are_named():
    with pytest.raises(ValueError, match=r"^mu, tau must broadcast to one shape"):
        peak_group_size([0.5, 0.4], [0.1, 0.1, 0.1])


def test_cli_peak_takes_one_minus_mu_from_the_digits_typed(run_cli):
    import json

    result = run_cli("theory", "peak", "--mu", "0.9999999972552174", "--tau", "0.470", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    _, root = _reference_peak(None, "0.470", "0.0000000027447826")  # 1 - 0.9999999972552174, exactly
    assert abs(data["n_continuous"] - root) <= 1e-13 * root
    human = run_cli("theory", "peak", "--mu", "0.9999999972552174", "--tau", "0.470")
    assert "mu = 0.9999999972552174," in human.stdout  # not "mu = 1"
    refused = run_cli("theory", "peak", "--mu", "0.5", "--tau", "0.5000000001")
    assert refused.exit_code == 2 and "got 0.5000000001 with mu = 0.5" in refused.stderr
