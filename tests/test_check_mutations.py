"""Mutation testing of `fgrpo check`: each planted error in a closed form (or in the simulator's focal step) must
make `fgrpo check --quick` fail, through the command's real code path (issue 36).

A planted error replaces one function where the checks look it up (`fgrpo_sim.theory.X`, or the simulator's
focal weight), all else unchanged. The Monte Carlo estimates do not depend on the closed forms, so they are
computed once per module (`_memoise`) and reused by every mutant: same numbers, a fraction of
the time. The simulator's one-step checks are not memoised (a planted error in the simulator must reach them).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import fgrpo_sim.theory as theory

_tail = theory.tail_miss_probability
_correct_mass, _incorrect_mass = theory.expected_sampled_correct_mass, theory.expected_sampled_incorrect_mass
_first_order, _unsampled = theory.first_order_mass_change, theory.expected_unsampled_square_mass
_focal = theory.focal_weight


def _printed_tail(first_exponent=0, c_sign=-1.0, w_mass=lambda mu: 1.0 - mu):
    """Lemma 3.1 as printed, (1 - tau)^N - (mu - tau)^N - (1 - mu)^N, with one part changed."""
    def tail(n, mu, tau):
        n, mu, tau = (np.asarray(v, dtype=float) for v in (n, mu, tau))
        return (1.0 - tau) ** (n + first_exponent) + c_sign * (mu - tau) ** n - w_mass(mu) ** n
    return tail


def _simulator_focal_weight_one(monkeypatch):
    """The simulator's own focal weight (`core`, as the categorical engine and its torch step call it) := 1."""
    import fgrpo_sim.sim.categorical.engine as engine
    import fgrpo_sim.sim.categorical.torch_step as torch_step

    monkeypatch.setattr(engine, "focal_weight", lambda mu_hat, gamma, *_: torch.ones_like(torch.as_tensor(mu_hat)))
    monkeypatch.setattr(torch_step, "focal_weight_per_group", lambda mu, gammas, *_: torch.ones_like(mu))


def _peak_off_by_one(monkeypatch):
    """N* one below the argmax (the issue's example: N*(0.3, 0.003) printed as 13, not 14)."""
    from types import SimpleNamespace

    real = theory.peak_group_size
    monkeypatch.setattr(theory, "peak_group_size",
                        lambda mu, tau, **kw: SimpleNamespace(n_star=np.asarray(real(mu, tau, **kw).n_star) - 1))


def _metric(name, wrong):
    """Replace fgrpo_sim.metrics.NAME by wrong(real) (where the commands and the check look it up)."""
    def plant(monkeypatch):
        import fgrpo_sim.metrics as metrics

        monkeypatch.setattr(metrics, name, wrong(getattr(metrics, name)))
    return plant


def _core(name, wrong):
    """Replace fgrpo_sim.core.NAME by wrong(real) (the simulators call `core.NAME`)."""
    def plant(monkeypatch):
        import fgrpo_sim.core as core

        monkeypatch.setattr(core, name, wrong(getattr(core, name)))
    return plant


def _std_dropped(real):
    return lambda rewards, eps=1e-6, unbiased_std=False: rewards - rewards.mean(1, keepdim=True)


def _focal_on_positive_only(real):
    import fgrpo_sim.core as core

    return lambda adv, mu_hat, gamma, *_: torch.where(adv > 0, core.focal_weight(mu_hat, gamma)[:, None] * adv, adv)


def _start_anchor_at_the_correct_logit(monkeypatch):
    """The categorical start with the anchor's logit left at the other correct actions' (no anchor)."""
    import fgrpo_sim.sim.categorical.engine as engine

    real = engine.initial_logits

    def initial_logits(config, dtype=torch.float64, device="cpu"):
        z = real(config, dtype, device)
        z[0] = config.correct_logit
        return z
    monkeypatch.setattr(engine, "initial_logits", initial_logits)


def _logprob_without_baseline(monkeypatch):
    """Fig 2's path (logprob surrogate): each draw's advantage R_i instead of R_i - mean R, on either backend."""
    import fgrpo_sim.sim.categorical.engine as engine
    import fgrpo_sim.sim.categorical.torch_step as torch_step

    real_coef, real_update = engine.CategoricalBatch.update_coefficients, torch_step.TorchStep.update

    def update_coefficients(self, stats):  # native backend: (gs, S, a_correct, a_wrong) per run
        coef = real_coef(self, stats)
        if self.config.surrogate == "logprob":
            coef[:, 2], coef[:, 3] = self.config.reward_correct, self.config.reward_wrong
        return coef

    def update(self):  # torch backend: mu_hat := 0 makes (corr - mu_hat) the raw reward indicator
        if self.config.surrogate != "logprob":
            return real_update(self)
        g = torch.ones_like(self.counts[:, :1], dtype=self.logits.dtype)
        grad = self.correct.expand_as(self.logits).clone().mul_(self.counts).mul_(g * self.neg_span_over_n)
        self.mu_hat, self.focal = g * 0, g
        self._optimizer_step(grad)
    monkeypatch.setattr(engine.CategoricalBatch, "update_coefficients", update_coefficients)
    monkeypatch.setattr(torch_step.TorchStep, "update", update)


#: name -> what to patch: (attribute of fgrpo_sim.theory, replacement), or a function of monkeypatch
MUTATIONS = {
    "tail miss: a sign, + (mu - tau)^N": ("tail_miss_probability", _printed_tail(c_sign=1.0)),
    "tail miss: (1 - mu)^N read as mu^N": ("tail_miss_probability", _printed_tail(w_mass=lambda mu: mu)),
    "tail miss: exponent off by one, (1 - tau)^(N + 1)": ("tail_miss_probability", _printed_tail(first_exponent=1)),
    "tail miss: the (mu - tau)^N term dropped": ("tail_miss_probability", _printed_tail(c_sign=0.0)),
    "tail miss: tau read as rho = tau / mu": ("tail_miss_probability", lambda n, mu, tau: _tail(n, mu, tau / mu)),
    "lemma H.1: the incorrect mass with n draws, not n - k":
        ("expected_sampled_incorrect_mass", lambda p, c, n, k: _incorrect_mass(p, c, n, 0)),
    "lemma H.1: the correct mass with k + 1 draws (exponent off by one)":
        ("expected_sampled_correct_mass", lambda p, c, n, k: _correct_mass(p, c, n, np.minimum(np.asarray(k) + 1, n))),
    "brorl E[U2]: (1 - p)^(N + 1)": ("expected_unsampled_square_mass", lambda p, n: _unsampled(p, np.asarray(n) + 1)),
    "prop 3.2: the first-order mass change x 1.02":
        ("first_order_mass_change", lambda *a, **k: tuple(1.02 * np.asarray(v) for v in _first_order(*a, **k))),
    "focal weight := 1": ("focal_weight", lambda mu_hat, gamma: np.ones_like(np.asarray(mu_hat, dtype=float))),
    "focal weight: mu_hat^gamma, not (1 - mu_hat)^gamma": ("focal_weight", lambda mu_hat, gamma: _focal(1.0 - np.asarray(mu_hat), gamma)),
    "m_gamma := 1": ("lr_multiplier", lambda gamma, weight="mean_abs_advantage": np.ones_like(np.asarray(gamma, dtype=float))),
    # the prose's reading of App. N, 6 / ((gamma + 2)(gamma + 3)) (0.686 at gamma = 0.5, against 0.679)
    "m_gamma: the variance weight mu(1 - mu), not mean |A|":
        ("lr_multiplier", lambda gamma, weight="mean_abs_advantage": 6.0 / ((np.asarray(gamma) + 2) * (np.asarray(gamma) + 3))),
    "the simulator's focal weight (core) := 1": _simulator_focal_weight_one,
    # issue 44: errors of our own where no check looked before
    "N* off by one (the argmax's neighbour)": _peak_off_by_one,
    "pass@k off by one: C(n + 1, k) below": _metric("pass_at_k", lambda real: lambda n, c, k: 1.0 - (1.0 - real(n, c, k))
                                                     * (np.asarray(n) - np.asarray(k) + 1) / (np.asarray(n) + 1)),
    "pass@k variance: a Bessel factor n / (n - 1) too many":
        _metric("pass_at_k_variance", lambda real: lambda n, c, k: real(n, c, k) * np.asarray(n) / (np.asarray(n) - 1)),
    "core's advantages without the std normalisation": _core("grpo_advantages", _std_dropped),
    "the focal weight on positive advantages only": _core("focal_advantages", _focal_on_positive_only),
    "the categorical start without its anchor": _start_anchor_at_the_correct_logit,
    "logprob path (Fig 2): advantages without the group mean": _logprob_without_baseline,
}


def _plant(monkeypatch, mutation) -> None:
    if callable(mutation):
        mutation(monkeypatch)
    else:
        monkeypatch.setattr(theory, *mutation)


#: the estimators of sim.montecarlo that `fgrpo check` draws from; estimate_lr_multiplier stays live (it calls
#: core's focal weight, a place an error can be planted)
MEMOISED = ("estimate_tail_miss", "estimate_sampled_masses", "estimate_masses_given_x", "estimate_unsampled_square_mass")


@pytest.fixture(scope="module")
def _estimate_cache():
    return {}


def _memoise(mp: pytest.MonkeyPatch, cache: dict) -> None:
    """Every estimator in MEMOISED memoised by its arguments: a seeded draw depends on nothing else."""
    from fgrpo_sim.sim import montecarlo

    for name in MEMOISED:
        real = getattr(montecarlo, name)

        def memoised(*args, _real=real, _name=name, **kwargs):
            key = (_name, repr(args), repr(sorted(kwargs.items())))
            if key not in cache:
                cache[key] = _real(*args, **kwargs)
            return cache[key]

        mp.setattr(montecarlo, name, memoised)


def _check_quick(run_cli) -> tuple[int, list[dict]]:
    res = run_cli("check", "--quick", "--json", "--no-progress", "--device", "cpu")
    return res.exit_code, json.loads(res.stdout)


@pytest.fixture(scope="module")
def honest(_estimate_cache):
    """The honest build's quick run (names and verdicts)."""
    from fgrpo_sim.sim.checks import format_results, run_checks

    with pytest.MonkeyPatch.context() as mp:
        _memoise(mp, _estimate_cache)
        results = run_checks(quick=True, seed=0, device="cpu")
    assert all(r["passed"] for r in results), format_results(results)
    return results


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_check_quick_catches_each_planted_error(run_cli, monkeypatch, _estimate_cache, honest, name):
    _memoise(monkeypatch, _estimate_cache)
    _plant(monkeypatch, MUTATIONS[name])
    code, results = _check_quick(run_cli)
    failed = [r["name"] for r in results if not r["passed"]]
    assert code == 1 and failed, f"{name}: every check passed"
    # the same checks as the honest build: a wrong formula cannot choose which points it is checked at
    assert [r["name"] for r in results] == [r["name"] for r in honest]


def test_the_list_is_long_enough():
    assert len(MUTATIONS) >= 21
