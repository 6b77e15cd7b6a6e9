"""`fgrpo check`'s exact checks (issue 44): closed forms and simulator paths against enumeration or autograd.

No sampling, so each is a tolerance check (deterministic: it never fails by chance, and adds nothing to the
family-wise false-failure rate of the sampling intervals in `checks`). Every function under test is looked up
on its package at call time (`theory.X`, `metrics.X`, `core.X`), where the simulators and the commands find it.
  * N* -- `peak_group_size(mu, tau).n_star` equals the argmax over every integer N of Lemma 3.1's Pr(B)
    (`tail_miss_probability`, itself checked against simulation), at fixed points and Fig 5's start.
  * pass@k -- the unbiased estimator equals the share of k-subsets of the n samples holding a correct one
    (itertools enumeration), and its mean over c ~ Binomial(n, p) is 1 - (1 - p)^k.
  * pass@k variance -- `pass_at_k_variance` (the paired test's) is unbiased: its mean over c ~ Binomial(n, p)
    equals the exact variance of the pass@k estimate, enumerated over c.
  * advantages -- `core.grpo_advantages` on binary groups: A+ = sqrt((1 - mu) / mu), A- = -sqrt(mu / (1 - mu))
    (std normalisation, population std), both reward scales the simulators use.
  * focal weight, both signs -- the focal advantages the population simulators train on (`core_objective`) and
    the group-size study's tables (`advantage_tables`) equal (1 - mu_hat)^gamma x the advantage, checked
    separately on A > 0 and A < 0.
  * start -- the categorical simulator's start state (its batch's softmax at step 0, App. J's 128,000 actions)
    against `CategoricalConfig.initial_masses` (Q_pos, the anchor, tau: the numbers Fig 5 and the docs quote).
  * paths -- three steps of the categorical simulator against autograd and torch.optim, for both surrogates
    (logprob, distinct) and both optimizers (SGD, AdamW); logprob + AdamW at Fig 2's settings.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch

#: seeds of the fixed toy policies and counts (independent of --seed)
POLICY_SEEDS = {"lemmaH.1": 0, "brorl": 1, "prop3.2": 2, "counts": 3, "conditional": 5}
#: (mu, tau) of the N* checks: the issue's example (N* = 14) and points on both sides of it
PEAK_POINTS = ((0.3, 0.003), (0.5, 0.05), (0.8, 0.008), (0.1, 0.01))
#: the exact checks compare to float rounding
EXACT = 1e-12
#: relative allowance of core's advantages against the closed form: the eps = 1e-6 in std + eps, and no more
ADVANTAGE_TOLERANCE = 1e-5
#: (surrogate, optimizer, weight decay, lr) of the path checks; the first is Fig 2's (the config defaults)
PATHS = (("logprob", "adamw", 0.0, 1e-2), ("logprob", "sgd", 0.0, 2.0), ("distinct", "adamw", 0.1, 1e-2),
         ("distinct", "sgd", 0.0, 2.0))


def toy_policy(num_actions: int, num_correct: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A skewed policy (log-normal weights, one dominant correct action): correct actions come first."""
    rng = np.random.default_rng(seed)
    w = np.exp(rng.normal(0.0, 1.5, num_actions))
    w[0] *= 20.0
    p = w / w.sum()
    correct = np.arange(num_actions) < num_correct
    return p, correct


def _tolerance(name: str, gap: float, allowed: float, closed_form: float = 0.0, **extra) -> dict:
    """A deterministic check: `gap` (a measured discrepancy) must lie in [0, allowed]."""
    return {"name": name, "closed_form": float(closed_form), "estimate": float(gap), "interval": [0.0, float(allowed)],
            "kind": "tolerance", "passed": bool(0.0 <= gap <= allowed), **extra}


def peak_checks(quick: bool, seed: int, device: str) -> list[dict]:
    from fgrpo_sim import theory
    from fgrpo_sim.sim.categorical.config import CategoricalConfig

    start = CategoricalConfig().initial_masses()
    out = []
    for mu, tau in PEAK_POINTS + ((start["q_pos"], start["tau"]),):
        # Pr(B) <= (1 - tau)^N < e^-40 beyond 40 / tau: the argmax lies below (inputs only)
        n = np.arange(1, math.ceil(40.0 / tau) + 1)
        brute = int(n[np.argmax(theory.tail_miss_probability(n, mu, tau))])
        n_star = int(theory.peak_group_size(mu, tau).n_star)
        out.append({"name": f"N* peak_group_size mu={mu:.6g} tau={tau:.6g} = argmax of Pr(B) over N",
                    "closed_form": n_star, "estimate": brute, "interval": [brute, brute], "kind": "tolerance",
                    "passed": n_star == brute})
    return out


def _subset_pass_at_k(n: int, c: int, k: int) -> float:
    """The share of the k-subsets of n samples (c correct) holding at least one correct sample, by counting."""
    hits = total = 0
    for subset in itertools.combinations(range(n), k):
        total += 1
        hits += min(subset) < c  # samples 0 .. c - 1 are the correct ones
    return hits / total


def pass_at_k_checks(quick: bool, seed: int, device: str) -> list[dict]:
    from scipy.stats import binom

    from fgrpo_sim import metrics

    out = []
    for n in (5, 8):
        gap = max(abs(float(metrics.pass_at_k(n, c, k)) - _subset_pass_at_k(n, c, k))
                  for c in range(n + 1) for k in range(1, n + 1))
        out.append(_tolerance(f"pass@k n={n} = share of k-subsets with a correct sample (every c, k)", gap, EXACT))
    n, c = 12, np.arange(13)
    gap = 0.0
    for p in (0.05, 0.37, 0.9):
        for k in range(1, n + 1):
            mean = float((binom.pmf(c, n, p) * metrics.pass_at_k(n, c, k)).sum())
            gap = max(gap, abs(mean - (1.0 - (1.0 - p) ** k)))
    out.append(_tolerance(f"pass@k n={n} unbiased: mean over c ~ Bin(n, p) = 1 - (1 - p)^k", gap, EXACT))
    return out


def variance_checks(quick: bool, seed: int, device: str) -> list[dict]:
    """The paired test's per-problem variance is unbiased for the pass@k estimate's variance (enumerated)."""
    from scipy.stats import binom

    from fgrpo_sim import metrics

    out = []
    for n in (8, 21):
        c = np.arange(n + 1)
        gap = 0.0
        for p in (0.05, 0.3, 0.8):
            pmf = binom.pmf(c, n, p)
            for k in range(1, n // 2 + 1):
                estimate = metrics.pass_at_k(n, c, k)
                exact = float((pmf * (estimate - (1.0 - (1.0 - p) ** k)) ** 2).sum())
                gap = max(gap, abs(float((pmf * metrics.pass_at_k_variance(n, c, k)).sum()) - exact))
        out.append(_tolerance(f"pass@k variance n={n} unbiased: mean over c ~ Bin(n, p) = exact variance", gap, EXACT))
    return out


def _binary_groups(n: int, reward_correct: float = 1.0, reward_wrong: float = 0.0) -> torch.Tensor:
    """[n + 1, n] float64 rewards: row X holds X correct rollouts first."""
    correct = torch.arange(n)[None, :] < torch.arange(n + 1)[:, None]
    return torch.where(correct, reward_correct, reward_wrong).to(torch.float64)


def _closed_form_advantages(n: int, gamma: float = 0.0) -> torch.Tensor:
    """The paper's binary-reward advantages x the focal weight: row X = 0..n, zero for an inactive group."""
    mu = (torch.arange(n + 1, dtype=torch.float64) / n)[:, None]
    correct = torch.arange(n)[None, :] < torch.arange(n + 1)[:, None]
    active = (mu > 0) & (mu < 1)
    safe = torch.where(active, mu, 0.5)
    a = torch.where(correct, torch.sqrt((1 - safe) / safe), -torch.sqrt(safe / (1 - safe)))
    return torch.where(active, a * (1 - mu) ** gamma, 0.0)


def _relative_gap(got: torch.Tensor, want: torch.Tensor, where: torch.Tensor | None = None) -> float:
    where = torch.ones_like(want, dtype=torch.bool) if where is None else where
    return float(((got - want).abs() / want.abs().clamp(min=1e-12))[where].max())


def advantage_checks(quick: bool, seed: int, device: str) -> list[dict]:
    from fgrpo_sim import core

    n = 8
    want = _closed_form_advantages(n)
    live = want != 0
    gap = max(_relative_gap(core.grpo_advantages(_binary_groups(n, r_c, r_w)), want, live)
              for r_c, r_w in ((1.0, 0.0), (1.0, -1.0)))
    inactive = max(float(core.grpo_advantages(_binary_groups(n))[~live.any(1)].abs().max()), 0.0)
    return [_tolerance(f"core.grpo_advantages N={n}: A+ = sqrt((1-mu)/mu), A- = -sqrt(mu/(1-mu)) (max relative gap)",
                       max(gap, inactive), ADVANTAGE_TOLERANCE)]


def focal_sign_checks(quick: bool, seed: int, device: str) -> list[dict]:
    from fgrpo_sim.sim.group_size_study import advantage_tables
    from fgrpo_sim.sim.population import TrainSpec, core_objective

    n, gamma = 8, 1.0
    want = _closed_form_advantages(n, gamma)
    rewards = _binary_groups(n)
    logp = torch.zeros(rewards.numel(), 1, dtype=torch.float64, requires_grad=True)
    _, _, focal = core_objective(logp, rewards, TrainSpec(gamma=gamma), None, 1)  # the population simulators' path
    out = []
    for sign, label in ((1, "A > 0"), (-1, "A < 0")):
        where = torch.sign(want) == sign
        out.append(_tolerance(f"focal weight on {label}: simulators' focal advantage = (1-mu_hat)^gamma A, gamma={gamma:g} "
                              f"N={n}", _relative_gap(focal.detach(), want, where), ADVANTAGE_TOLERANCE))
    a_correct, a_wrong = advantage_tables([(n, gamma)], n)  # the group-size study's lookup tables, both signs
    x = torch.arange(1, n)
    table = torch.stack([a_correct[0, x], a_wrong[0, x]], 1)
    expected = torch.stack([want[x, 0], want[x, n - 1]], 1)
    out.append(_tolerance(f"focal weight, both signs: group-size study's advantage tables, gamma={gamma:g} N={n}",
                          _relative_gap(table, expected), ADVANTAGE_TOLERANCE))
    return out


def start_checks(quick: bool, seed: int, device: str) -> list[dict]:
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    # App. J's start (128,000 actions) as the engine lays it out; float64, so that only the layout is compared
    config = CategoricalConfig(device="cpu", dtype="float64")
    p = CategoricalBatch(config, [4], [0.0], [0]).probs()[0].to(torch.float64)
    got = {"q_pos": float(p[:config.num_correct].sum()), "p_anchor": float(p[0]), "tau": float(p[1])}
    want = config.initial_masses()
    gap = max(abs(got[k] - want[k]) / want[k] for k in want)
    return [_tolerance(f"categorical start: Q_pos={want['q_pos']:.6g}, anchor={want['p_anchor']:.4g}, "
                       f"tau={want['tau']:.4g} (max relative gap)", gap, 1e-9)]


def _reference_steps(p0: np.ndarray, num_correct: int, counts: list[np.ndarray], config, gamma: float) -> torch.Tensor:
    """The categorical surrogates written out with autograd and torch.optim (SGD with L2 decay, AdamW)."""
    z = torch.as_tensor(np.log(p0)).clone().requires_grad_(True)
    if config.optimizer == "sgd":
        opt = torch.optim.SGD([z], lr=config.lr, weight_decay=config.weight_decay)
    else:
        opt = torch.optim.AdamW([z], lr=config.lr, betas=(config.beta1, config.beta2), eps=config.eps,
                                weight_decay=config.weight_decay)
    correct = torch.arange(len(p0)) < num_correct
    reward = torch.where(correct, config.reward_correct, config.reward_wrong).to(torch.float64)
    for c in counts:
        c = torch.as_tensor(c, dtype=torch.float64)
        n = float(c.sum())
        mu_hat = float(c[correct].sum()) / n
        mean_reward = mu_hat * config.reward_correct + (1 - mu_hat) * config.reward_wrong
        logp = torch.log_softmax(z, 0)
        if config.surrogate == "logprob":
            objective = (c * (reward - mean_reward) * logp).sum() / n
        else:
            objective = (reward * (c > 0) * logp.exp()).sum() / n
        opt.zero_grad()
        (-((1 - mu_hat) ** gamma) * objective).backward()
        opt.step()
    return z.detach()


def path_checks(quick: bool, seed: int, device: str) -> list[dict]:
    from fgrpo_sim.sim.categorical import CategoricalBatch, CategoricalConfig

    p0, correct = toy_policy(60, 15, POLICY_SEEDS["prop3.2"])
    rng = np.random.default_rng(POLICY_SEEDS["counts"])
    counts = [rng.multinomial(16, p0) for _ in range(3)]
    gamma, out = 1.0, []
    for surrogate, optimizer, decay, lr in PATHS:
        config = CategoricalConfig(num_actions=len(p0), num_correct=int(correct.sum()), surrogate=surrogate,
                                   optimizer=optimizer, lr=lr, weight_decay=decay, dtype="float64", device="cpu",
                                   steps=3)
        batch = CategoricalBatch(config, [16], [gamma], [0])
        batch.logits[0] = torch.as_tensor(np.log(p0))
        if batch.native is not None:
            batch.native.refresh(batch.logits)
        for c in counts:
            batch.step_with_counts(torch.as_tensor(c).unsqueeze(0))
        want = _reference_steps(p0, int(correct.sum()), counts, config, gamma)
        moved = float((want - torch.as_tensor(np.log(p0))).abs().max())
        gap = float((batch.logits[0].to(torch.float64) - want).abs().max()) / moved
        fig2 = " (Fig 2)" if (surrogate, optimizer, decay) == ("logprob", "adamw", 0.0) else ""
        out.append(_tolerance(f"path {surrogate} + {optimizer} wd={decay:g}{fig2}: simulator = autograd, 3 steps "
                              f"(gap / step size)", gap, 1e-9))
    return out


FAMILIES = (peak_checks, pass_at_k_checks, variance_checks, advantage_checks, focal_sign_checks, start_checks,
            path_checks)

__all__ = ["FAMILIES", "PEAK_POINTS", "PATHS"]
