"""Monte Carlo estimates of the theory's probabilities and expectations, from sampled counts only.

Nothing here evaluates the closed forms it is meant to check: each estimate comes from simulated
groups (region counts or per-action counts), and its standard error from the sample.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from fgrpo_sim.validation import check_integer, check_range


def _device(device: str | torch.device) -> torch.device:
    from fgrpo_sim.sim.categorical import resolve_device

    return device if isinstance(device, torch.device) else resolve_device(str(device))


def estimate_tail_miss(n: int, mu: float, tau: float, trials: int = 1_000_000, seed: int = 0,
                       device: str | torch.device = "cpu") -> tuple[float, float]:
    """(estimate, standard error) of Pr(B), B = {0 < X < N and no draw lands in E} (Lemma 3.1).

    Each simulated group draws its region counts, not its N individual draws: X_E ~ Bin(N, tau) hits
    in the target subset E, then (only where X_E = 0) X_C ~ Bin(N, (mu - tau) / (1 - tau)) hits in
    the rest of the correct set; B holds when X_E = 0 and 0 < X_C < N. Groups are processed in chunks
    of 2^20 (TAIL_MISS_CHUNK), so memory stays flat for any `trials`. On CPU the draws come from numpy's
    binomial sampler (seeded with `seed`), on a GPU from torch's; both are exact.
    """
    n = int(check_integer("n", n, 1, 2**31 - 1))
    mu = float(check_range("mu", mu, 0.0, 1.0))
    tau = float(check_range("tau", tau, 0.0, mu))
    trials = int(check_integer("trials", trials, 1, 10**12))
    seed = int(check_integer("seed", seed, 0, 2**62))
    dev = _device(device)
    q_rest = (mu - tau) / (1.0 - tau) if tau < 1.0 else 0.0
    # numpy's binomial sampler is 2-4x faster than torch's on CPU; torch's runs on any device (tested on CPU)
    hits = (_tail_miss_hits_numpy if dev.type == "cpu" else _tail_miss_hits_torch)(n, tau, q_rest, trials, seed, dev)
    est = hits / trials
    return est, math.sqrt(max(est * (1.0 - est), 0.0) / trials)


#: groups drawn per chunk of the tail-miss estimate, so memory stays flat for any `trials`
TAIL_MISS_CHUNK = 1 << 20


def _tail_miss_hits_numpy(n: int, tau: float, q_rest: float, trials: int, seed: int, dev: torch.device) -> int:
    """How many of `trials` groups fall in B, drawn with numpy's binomial sampler (seeded with `seed`)."""
    rng = np.random.default_rng(seed)
    hits = done = 0
    while done < trials:
        m = min(TAIL_MISS_CHUNK, trials - done)
        k = int(np.count_nonzero(rng.binomial(n, tau, size=m) == 0))
        if k:
            x_c = rng.binomial(n, q_rest, size=k)
            hits += int(np.count_nonzero((x_c > 0) & (x_c < n)))
        done += m
    return hits


def _tail_miss_hits_torch(n: int, tau: float, q_rest: float, trials: int, seed: int, dev: torch.device) -> int:
    """As `_tail_miss_hits_numpy`, with torch's binomial sampler on `dev` (the GPU path; exact on any device)."""
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    f64 = torch.float64
    hits = done = 0
    while done < trials:
        m = min(TAIL_MISS_CHUNK, trials - done)
        n_t = torch.full((m,), float(n), dtype=f64, device=dev)
        x_e = torch.binomial(n_t, torch.full((m,), tau, dtype=f64, device=dev), generator=gen)
        k = int((x_e == 0).sum())
        if k:
            x_c = torch.binomial(n_t[:k], torch.full((k,), q_rest, dtype=f64, device=dev), generator=gen)
            hits += int(((x_c > 0) & (x_c < n)).sum())
        done += m
    return hits


def sample_counts(p: torch.Tensor, n: int, groups: int, seed: int, device: str | torch.device = "cpu") -> torch.Tensor:
    """counts [groups, K] (int64), each row ~ Multinomial(n, p): the simulator's exact sampler."""
    from fgrpo_sim.sim.categorical.sampling import native_available, run_keys, sample_counts_native, sample_counts_torch

    seed = int(check_integer("seed", seed, 0, 2**62))
    check_integer("n", n, 1, 2**31 - 1)
    check_integer("groups", groups, 1, 10**12)
    dev = _device(device)
    weights = p.to(device=dev, dtype=torch.float64).expand(groups, -1).contiguous()
    draws = torch.full((groups,), int(n), dtype=torch.int64)
    if dev.type == "cpu" and native_available():
        counts, _ = sample_counts_native(weights, draws, run_keys(range(groups), salt=seed), stream=seed)
        return counts
    return sample_counts_torch(weights, draws, run_keys(range(groups), salt=seed), stream=seed)


def mean_and_se(samples: torch.Tensor) -> tuple[float, float]:
    x = samples.to(torch.float64)
    m = x.numel()
    return float(x.mean()), (float(x.std(correction=1)) / math.sqrt(m) if m > 1 else float("inf"))


def estimate_sampled_masses(p, correct, n: int, k: int, trials: int, seed: int = 0,
                            device: str | torch.device = "cpu") -> dict[str, tuple[float, float]]:
    """Lemma H.1 by simulation: given X = k correct draws out of n, draw k i.i.d. from the correct
    actions (law q_pos = p / mu) and n - k from the incorrect ones; return (mean, SE) of the distinct
    sampled correct mass P_pos and incorrect mass P_neg."""
    p = torch.as_tensor(np.asarray(p, dtype=float))
    correct = torch.as_tensor(np.asarray(correct, dtype=bool))
    out = {}
    for name, members, draws, salt in (("P_pos", correct, k, 1), ("P_neg", ~correct, n - k, 2)):
        if draws == 0:
            out[name] = (0.0, 0.0)
            continue
        restricted = torch.where(members, p, torch.zeros_like(p))
        counts = sample_counts(restricted, draws, trials, seed * 1000 + salt, device).cpu()
        mass = ((counts > 0).to(torch.float64) * p).sum(dim=1)
        out[name] = mean_and_se(mass)
    return out


def estimate_masses_given_x(p, correct, n: int, trials: int, seed: int = 0, device: str | torch.device = "cpu",
                            reward_correct: float = 1.0, reward_wrong: float = 0.0) -> dict[str, np.ndarray]:
    """Lemma H.1 and Corollary H.2 from unconditioned groups: draw `trials` groups of n actions from p,
    read off each group's correct count X, distinct sampled correct mass P_pos, incorrect mass P_neg and
    batch baseline S_R = R_c P_pos + R_w P_neg, and average them within each X = k.

    Returns arrays over k = 0..n: `groups` (how many groups had X = k) and, for each of P_pos, P_neg, S_R,
    its mean and standard error given X = k (NaN where fewer than 2 groups had that k)."""
    p_t = torch.as_tensor(np.asarray(p, dtype=float))
    correct_t = torch.as_tensor(np.asarray(correct, dtype=bool))
    sums = {name: np.zeros(n + 1) for name in ("P_pos", "P_neg", "S_R")}
    squares = {name: np.zeros(n + 1) for name in sums}
    groups = np.zeros(n + 1)
    chunk = max(1, 4_000_000 // p_t.numel())  # counts are [chunk, K] float64: about 32 MB
    for start in range(0, trials, chunk):
        m = min(chunk, trials - start)
        counts = sample_counts(p_t, n, m, seed * 1_000_003 + start // chunk, device).cpu()
        x = (counts * correct_t).sum(1).long().numpy()
        hit = (counts > 0).to(torch.float64) * p_t
        values = {"P_pos": (hit * correct_t).sum(1).numpy(), "P_neg": (hit * ~correct_t).sum(1).numpy()}
        values["S_R"] = reward_correct * values["P_pos"] + reward_wrong * values["P_neg"]
        groups += np.bincount(x, minlength=n + 1)
        for name, v in values.items():
            sums[name] += np.bincount(x, weights=v, minlength=n + 1)
            squares[name] += np.bincount(x, weights=v * v, minlength=n + 1)
    out = {"groups": groups}
    with np.errstate(invalid="ignore", divide="ignore"):
        for name in sums:
            mean = sums[name] / groups
            var = (squares[name] - groups * mean * mean) / (groups - 1)
            out[name] = np.where(groups >= 2, mean, np.nan)
            out[f"{name}_se"] = np.where(groups >= 2, np.sqrt(np.maximum(var, 0.0) / groups), np.nan)
    return out


def estimate_unsampled_square_mass(p, n: int, trials: int, seed: int = 0,
                                   device: str | torch.device = "cpu") -> tuple[float, float]:
    """(mean, SE) of U2 = sum over actions missed by n draws of p_i^2 (BroRL's E[U2])."""
    p = torch.as_tensor(np.asarray(p, dtype=float))
    counts = sample_counts(p, n, trials, seed, device).cpu()
    u2 = ((counts == 0).to(torch.float64) * p * p).sum(dim=1)
    return mean_and_se(u2)


def estimate_lr_multiplier(gamma: float, trials: int = 1_000_000, seed: int = 0) -> tuple[float, float]:
    """(estimate, SE) of m_gamma (App. N) from simulated prompts: success rates mu ~ U(0, 1), each prompt's
    focal weight from `core` (what the simulators apply) averaged with the prompt's mean |GRPO advantage|
    mu |A+| + (1 - mu) |A-| as its weight (binary rewards, population std). A ratio estimator; its SE by
    the delta method."""
    from fgrpo_sim import core

    gamma = float(check_range("gamma", gamma, 0.0))
    trials = int(check_integer("trials", trials, 2, 10**9))
    rng = np.random.default_rng(int(check_integer("seed", seed, 0, 2**62)))
    mu = (rng.integers(0, 2**53, trials) + 0.5) * 2.0**-53  # inside (0, 1): every group has a spread
    std = np.sqrt(mu * (1.0 - mu))
    weight = mu * ((1.0 - mu) / std) + (1.0 - mu) * (mu / std)
    g = core.focal_weight(torch.from_numpy(mu), gamma).numpy()
    est = float(np.sum(weight * g) / np.sum(weight))
    residual = weight * (g - est)
    return est, float(np.std(residual, ddof=1) / math.sqrt(trials) / np.mean(weight))


def _binary_groups(c: np.ndarray, n: int) -> torch.Tensor:
    """Reward rows [groups, n] with c[i] ones first (one-token rollouts of a binary reward)."""
    return (torch.arange(n)[None, :] < torch.from_numpy(c)[:, None]).to(torch.float64)


def estimate_smoothed_focal_weight(n: int, mu: float, gamma: float, focal_smoothing: float, trials: int = 1_000_000,
                                   seed: int = 0) -> tuple[float, float]:
    """(mean, SE) of `core`'s focal weight with smoothing alpha over simulated groups of n binary rollouts,
    each correct with probability mu (the weight from the group's rewards, as the simulators compute it)."""
    from fgrpo_sim import core

    n = int(check_integer("n", n, 1, 4096))
    trials = int(check_integer("trials", trials, 2, 10**9))
    rng = np.random.default_rng(int(check_integer("seed", seed, 0, 2**62)))
    c = rng.binomial(n, float(check_range("mu", mu, 0.0, 1.0)), trials)
    rewards = _binary_groups(c, n)
    return mean_and_se(core.focal_weight(core.group_success_rate(rewards), gamma, focal_smoothing, n))


def estimate_smoothed_lr_multiplier(n: int, gamma: float, focal_smoothing: float, trials: int = 1_000_000,
                                    seed: int = 0) -> tuple[float, float]:
    """(estimate, SE) of m_gamma(N, alpha) from simulated groups: prompts with mu ~ U(0, 1), c ~ Bin(n, mu)
    correct rollouts, each group weighted by its mean |GRPO advantage| (`core.grpo_advantages`, population
    std) and scaled by `core`'s smoothed focal weight. A ratio estimator; its SE by the delta method."""
    from fgrpo_sim import core

    n = int(check_integer("n", n, 2, 4096))
    trials = int(check_integer("trials", trials, 2, 10**9))
    rng = np.random.default_rng(int(check_integer("seed", seed, 0, 2**62)))
    c = rng.binomial(n, rng.random(trials))
    rewards = _binary_groups(c, n)
    weight = core.grpo_advantages(rewards).abs().mean(dim=1).numpy()
    g = core.focal_weight(core.group_success_rate(rewards), gamma, focal_smoothing, n).numpy()
    est = float(np.sum(weight * g) / np.sum(weight))
    residual = weight * (g - est)
    return est, float(np.std(residual, ddof=1) / math.sqrt(trials) / np.mean(weight))
