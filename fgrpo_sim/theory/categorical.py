"""One-step analysis of the categorical policy (paper Sec. 3.2, App. C/E/F/H; after Hu et al., BroRL).

A policy p = softmax(z) over a finite action set, a mask of correct actions, and one group of N draws
(`counts[i]` draws of action i). Sampled correct actions (A) get reward R_c, sampled incorrect ones (B)
get R_w, unsampled ones (U) get 0; the batch baseline is S_R = R_c P_pos + R_w P_neg. The linear
surrogate moves each logit by

    dz_i = (eta / N) p_i (R_i - S_R).

The first-order mass changes are derived (`symbolic_mass_changes`) by applying the softmax subset-mass
identity dQ_S = sum_{i in S} p_i dz_i - Q_S sum_j p_j dz_j (itself checked against the derivative of a
symbolic softmax) to the four classes A, B, U_pos, U_neg: within a class every dz_i / p_i is the same,
so sum_{class} p_i dz_i = (eta / N)(R_class - S_R) * (sum_{class} p_i^2). The results equal Hu et al.'s
dQ_pos and the paper's Proposition 3.2 for dQ_upos, as printed; `exact_mass_change` applies the same
step through the softmax exactly, so its difference from the first-order value is O(eta^2).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from fgrpo_sim.validation import check_integer, check_range
from fgrpo_sim.theory.lambdified import closed_form, lambdified

# Classes of actions after one group is drawn, with the reward each class receives.
CLASSES = ("A", "B", "U_pos", "U_neg")  # sampled correct, sampled incorrect, unsampled correct / incorrect


@cache
def _aggregate_symbols():
    import sympy as sp

    names = "N_draws Q_pos Q_upos A2 B2 U_pos2 U_neg2 S_R"
    n_draws, q_pos, q_upos, a2, b2, u_pos2, u_neg2, s_r = sp.symbols(names, real=True)
    return dict(N=n_draws, Q_pos=q_pos, Q_upos=q_upos, A2=a2, B2=b2, U_pos2=u_pos2, U_neg2=u_neg2, S_R=s_r)


@cache
def verify_subset_mass_identity(n_actions: int = 4) -> bool:
    """Check dQ_S/d(eps) of softmax(z + eps dz) at eps = 0 against the identity, for symbolic z and dz."""
    import sympy as sp

    z = sp.symbols(f"z0:{n_actions}", real=True)
    dz = sp.symbols(f"d0:{n_actions}", real=True)
    eps = sp.Symbol("epsilon", real=True)
    subset = range(n_actions // 2)  # any proper subset will do; the identity is linear in its members
    moved = [sp.exp(zi + eps * di) for zi, di in zip(z, dz)]
    q_s = sp.Add(*(moved[i] for i in subset)) / sp.Add(*moved)
    derivative = sp.diff(q_s, eps).subs(eps, 0)
    p = [sp.exp(zi) / sp.Add(*(sp.exp(zj) for zj in z)) for zi in z]
    identity = sp.Add(*(p[i] * dz[i] for i in subset)) - sp.Add(*(p[i] for i in subset)) * sp.Add(
        *(pj * dj for pj, dj in zip(p, dz))
    )
    assert sp.simplify(derivative - identity) == 0, "softmax subset-mass identity failed"
    return True


@cache
def symbolic_mass_changes():
    """First-order (dQ_pos, dQ_upos) derived from the subset-mass identity, as sympy expressions.

    Symbols: eta, R_c, R_w and the class aggregates N (draws), Q_pos, Q_upos, A2, B2, U_pos2, U_neg2, S_R.
    """
    from fgrpo_sim.theory.symbols import R_c, R_w, eta

    s = _aggregate_symbols()
    reward = {"A": R_c, "B": R_w, "U_pos": 0, "U_neg": 0}
    square_mass = {"A": s["A2"], "B": s["B2"], "U_pos": s["U_pos2"], "U_neg": s["U_neg2"]}

    def weighted_step(classes):  # sum over the classes of p_i dz_i
        return sum((eta / s["N"]) * (reward[c] - s["S_R"]) * square_mass[c] for c in classes)

    def mass_change(classes, mass):  # the subset-mass identity for S = union of `classes`
        return weighted_step(classes) - mass * weighted_step(CLASSES)

    return mass_change(("A", "U_pos"), s["Q_pos"]), mass_change(("U_pos",), s["Q_upos"])


@cache
def printed_mass_changes():
    """Hu et al.'s dQ_pos and Proposition 3.2's dQ_upos exactly as printed (for comparison with the derivation)."""
    from fgrpo_sim.theory.symbols import R_c, R_w, eta

    s = _aggregate_symbols()
    q_neg = 1 - s["Q_pos"]
    u2 = s["U_pos2"] + s["U_neg2"]
    dq_pos = (eta / s["N"]) * (
        (R_c - s["S_R"]) * q_neg * s["A2"]
        + (s["S_R"] - R_w) * s["Q_pos"] * s["B2"]
        + s["S_R"] * (s["Q_pos"] * s["U_neg2"] - q_neg * s["U_pos2"])
    )
    dq_upos = (eta / s["N"]) * (
        -s["S_R"] * s["U_pos2"]
        - s["Q_upos"] * ((R_c - s["S_R"]) * s["A2"] + (R_w - s["S_R"]) * s["B2"] - s["S_R"] * u2)
    )
    return dq_pos, dq_upos


@cache
def _numeric_mass_changes():
    return lambdified("mass_changes")


@closed_form("mass_changes")
def _derive_mass_changes():
    import sympy as sp

    from fgrpo_sim.theory.symbols import R_c, R_w, eta

    s = _aggregate_symbols()
    args = (eta, R_c, R_w, s["N"], s["Q_pos"], s["Q_upos"], s["A2"], s["B2"], s["U_pos2"], s["U_neg2"], s["S_R"])
    return tuple(sp.lambdify(args, expr, modules="numpy") for expr in symbolic_mass_changes())


def _check_policy(p, correct, counts):
    """Validated (p normalised, correct, counts) broadcast along a last 'action' axis."""
    p = check_range("p", p, 0.0, 1.0)
    if p.ndim == 0 or p.shape[-1] < 1:
        raise ValueError("p must be an array of action probabilities (last axis = actions)")
    total = p.sum(axis=-1, keepdims=True)
    if np.any(np.abs(total - 1.0) > 1e-6):
        bad = float(np.asarray(total).flat[np.argmax(np.abs(total - 1.0))])
        raise ValueError(f"p must sum to 1 along its last axis (tolerance 1e-6), got a sum of {bad:.9g}")
    correct = np.asarray(correct)
    if correct.dtype != bool:
        if not np.all(np.isin(correct, (0, 1))):
            raise ValueError("correct must be a boolean mask (True = correct action)")
        correct = correct.astype(bool)
    try:
        p, correct = np.broadcast_arrays(p / total, correct)
        if counts is not None:
            counts = check_integer("counts", counts, low=0)
            p, correct, counts = np.broadcast_arrays(p, correct, counts)
    except ValueError as exc:
        if "must be" in str(exc):
            raise
        raise ValueError("correct and counts must have the shape of p (one entry per action)") from None
    return p, correct, counts


def _check_rewards(reward_correct, reward_wrong, eta):
    reward_correct = float(check_range("reward_correct", reward_correct))
    reward_wrong = float(check_range("reward_wrong", reward_wrong, high=reward_correct, high_open=True))
    eta = float(check_range("eta", eta, 0.0))
    return reward_correct, reward_wrong, eta


def _step(p, correct, counts, reward_correct, reward_wrong, eta):
    """Per-action logit change dz and the class masks, for validated inputs."""
    n_draws = counts.sum(axis=-1)
    if np.any(n_draws < 1):
        raise ValueError("counts must contain at least one draw (counts.sum() >= 1)")
    sampled = counts > 0
    rewards = np.where(sampled, np.where(correct, reward_correct, reward_wrong), 0.0)
    p_pos = np.sum(p * (sampled & correct), axis=-1)
    p_neg = np.sum(p * (sampled & ~correct), axis=-1)
    s_r = reward_correct * p_pos + reward_wrong * p_neg
    dz = (eta / n_draws)[..., None] * p * (rewards - s_r[..., None])
    return dz, sampled, n_draws, s_r


def _scalar(x):
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def first_order_mass_change(p, correct, counts, reward_correct=1.0, reward_wrong=0.0, eta=1.0):
    """First-order (dQ_pos, dQ_upos) after one logit step on one group (Hu et al.; Proposition 3.2).

    p: action probabilities (last axis = actions, sums to 1); correct: boolean mask of correct actions;
    counts: draws of each action in the group (N = counts.sum(); sampled set = counts > 0);
    reward_correct > reward_wrong; eta >= 0. Leading axes broadcast (a batch of groups).
    Q_upos is the mass of the correct actions this group did not sample.
    """
    p, correct, counts = _check_policy(p, correct, counts)
    reward_correct, reward_wrong, eta = _check_rewards(reward_correct, reward_wrong, eta)
    _, sampled, n_draws, s_r = _step(p, correct, counts, reward_correct, reward_wrong, eta)
    sq = p * p
    aggregates = (
        n_draws,
        np.sum(p * correct, axis=-1),
        np.sum(p * (correct & ~sampled), axis=-1),
        np.sum(sq * (correct & sampled), axis=-1),
        np.sum(sq * (~correct & sampled), axis=-1),
        np.sum(sq * (correct & ~sampled), axis=-1),
        np.sum(sq * (~correct & ~sampled), axis=-1),
        s_r,
    )
    dq_pos, dq_upos = (f(eta, reward_correct, reward_wrong, *aggregates) for f in _numeric_mass_changes())
    return _scalar(dq_pos), _scalar(dq_upos)


def exact_mass_change(p, correct, counts, reward_correct=1.0, reward_wrong=0.0, eta=1.0):
    """Exact (dQ_pos, dQ_upos) after applying z' = log p + dz through the softmax (same inputs as the first-order one).

    The unsampled-correct set is the one fixed before the step. Computed as
    p'_i - p_i = p_i (expm1(dz_i) - M) / (1 + M), M = sum_j p_j expm1(dz_j), which keeps full relative
    precision for tiny eta (no difference of two nearly equal masses).
    """
    p, correct, counts = _check_policy(p, correct, counts)
    reward_correct, reward_wrong, eta = _check_rewards(reward_correct, reward_wrong, eta)
    dz, sampled, _, _ = _step(p, correct, counts, reward_correct, reward_wrong, eta)
    growth = np.expm1(dz)
    mean_growth = np.sum(p * growth, axis=-1, keepdims=True)
    change = p * (growth - mean_growth) / (1.0 + mean_growth)
    return _scalar(np.sum(change * correct, axis=-1)), _scalar(np.sum(change * (correct & ~sampled), axis=-1))


# ---- Lemma H.1 and BroRL's E[U2]: expectations over the draws ----------------------------------------


@cache
def symbolic_inclusion_probability():
    """Pr[a given action with within-class probability q appears among k draws], plain and log1p forms."""
    import sympy as sp
    from sympy.codegen.cfunctions import expm1, log1p

    q, k = sp.Symbol("q", positive=True), sp.Symbol("k", positive=True, integer=True)
    plain = 1 - (1 - q) ** k  # complement of "all k draws miss it"
    stable = -expm1(k * log1p(-q))
    assert sp.simplify(sp.expand_func(stable).rewrite(sp.exp) - plain.rewrite(sp.exp)) == 0
    return q, k, plain, stable


@cache
def _numeric_inclusion():
    return lambdified("inclusion")


@closed_form("inclusion")
def _derive_inclusion():
    import sympy as sp

    q, k, _, stable = symbolic_inclusion_probability()
    return sp.lambdify((q, k), stable, modules="numpy")


def _expected_sampled_mass(p, members, draws):
    """sum over `members` of p(o) Pr[o among `draws` i.i.d. draws from p restricted to members]."""
    class_mass = np.sum(p * members, axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(members & (class_mass > 0), p / np.where(class_mass > 0, class_mass, 1.0), 0.0)
        included = _numeric_inclusion()(np.minimum(q, 1.0), draws[..., None].astype(float))
    included = np.where((q > 0) & (draws[..., None] > 0), included, 0.0)
    return _scalar(np.sum(p * included, axis=-1))


def _check_draws(n, k):
    n = check_integer("n", n, low=1)
    k = check_integer("k", k, low=0)
    n, k = np.broadcast_arrays(n, k)
    if np.any(k > n):
        raise ValueError(f"k must be in [0, n], got k = {k[k > n].flat[0]} with n = {n[k > n].flat[0]}")
    return n, k


def expected_sampled_correct_mass(p, correct, n, k):
    """Lemma H.1: E[P_pos | X = k] = sum_{o correct} p(o) [1 - (1 - p(o)/mu)^k], mu = correct mass.

    n: group size (>= 1), k: number of correct draws in [0, n]; both broadcast over p's leading axes.
    """
    p, correct, _ = _check_policy(p, correct, None)
    n, k = _check_draws(n, k)
    return _expected_sampled_mass(p, correct, np.broadcast_to(k, np.broadcast_shapes(k.shape, p.shape[:-1])))


def expected_sampled_incorrect_mass(p, correct, n, k):
    """Lemma H.1: E[P_neg | X = k] = sum_{o incorrect} p(o) [1 - (1 - p(o)/(1 - mu))^(n - k)]."""
    p, correct, _ = _check_policy(p, correct, None)
    n, k = _check_draws(n, k)
    wrong_draws = n - k
    return _expected_sampled_mass(
        p, ~correct, np.broadcast_to(wrong_draws, np.broadcast_shapes(wrong_draws.shape, p.shape[:-1]))
    )


def expected_unsampled_square_mass(p, n):
    """BroRL's E[U2] = sum_i p_i^2 (1 - p_i)^n: expected squared mass of the actions n draws miss."""
    p = check_range("p", p, 0.0, 1.0)
    if p.ndim == 0:
        raise ValueError("p must be an array of action probabilities (last axis = actions)")
    n = check_integer("n", n, low=1).astype(float)
    with np.errstate(divide="ignore", under="ignore"):
        miss = np.exp(n[..., None] * np.log1p(-p))
    return _scalar(np.sum(p * p * miss, axis=-1))
