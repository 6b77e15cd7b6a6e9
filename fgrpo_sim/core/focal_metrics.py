"""The focal metrics both training stacks log each step (TRL's trainer and verl's estimators).

One definition, so a TRL run and a verl run of the same recipe report the same numbers under the same
names. Input is one value per prompt group: its focal weight g, its success rate mu_hat, whether it is
active (mixed rewards: the paper's event A_N) and its size N.

    focal/gamma                 the run's gamma
    focal/weight_mean           mean g over all groups
    focal/weight_mean_active    mean g over active groups; NaN when no group is active (a mean of nothing,
                                not a weight of 0; TRL's and verl's loggers skip or show NaN as such)
    focal/frac_active_groups    share of groups with mixed rewards
    focal/mu_hat_mean           mean mu_hat
    focal/mu_hat_frac_<bin>     histogram of mu_hat: zero (all wrong), 0-0.25, 0.25-0.5, 0.5-0.75, 0.75-1
                                ("a-b": a < mu_hat <= b and mu_hat < 1), one (all correct); sums to 1
    focal/tail_miss_mean        mean over groups of the Lemma 3.1 tail-miss probability
                                Pr(active, no rollout in a rare correct subset of share rho), with the
                                group's own mu_hat as mu and tau = rho * mu_hat (a plug-in estimate)
"""

from __future__ import annotations

import functools
import math
from typing import Any, Sequence

#: (name, low, high): a bin with low == high holds exactly that value, else low < mu_hat <= high, mu_hat < 1.
MU_HAT_BINS = (("zero", 0.0, 0.0), ("0-0.25", 0.0, 0.25), ("0.25-0.5", 0.25, 0.5), ("0.5-0.75", 0.5, 0.75),
               ("0.75-1", 0.75, 1.0), ("one", 1.0, 1.0))


@functools.lru_cache(maxsize=64)
def _tail_miss_table(group_size: int, rho: float) -> tuple[float, ...]:
    """Lemma 3.1 at mu = k / N for k = 0..N: every value a binary-reward group's mu_hat can take.

    The metrics run every training step; evaluating the theory once per (N, rho) and looking values up
    keeps them far below the 1% overhead budget (benchmarks/focal_overhead.py).
    """
    import numpy as np

    from fgrpo_sim.theory import tail_miss_from_rho

    return tuple(float(p) for p in tail_miss_from_rho(group_size, np.arange(group_size + 1) / group_size, rho))


def _group_sizes(group_size: int | Sequence[int], groups: int) -> list[int]:
    """N of each group from one N for all, or one per group (verl's batches may mix sizes)."""
    if isinstance(group_size, (int, float)):
        return [int(group_size)] * groups
    return [int(n) for n in group_size]


def mean_tail_miss(mu_hat: Sequence[float], group_size: int | Sequence[int], rho: float) -> float:
    """Mean over groups of the Lemma 3.1 tail-miss probability, each group's mu_hat as mu, tau = rho * mu.

    A mu_hat on the k / N grid (binary rewards) is looked up in the (N, rho) table, fetched once per batch;
    one off the grid (partial credit) is evaluated exactly.
    """
    from fgrpo_sim.theory import tail_miss_from_rho

    mu, rho = list(mu_hat), float(rho)
    sizes = _group_sizes(group_size, len(mu))
    tables = {n: _tail_miss_table(n, rho) for n in set(sizes)}
    total = 0.0
    for m, n in zip(mu, sizes):
        k = round(m * n)
        total += tables[n][k] if abs(m * n - k) < 1e-9 else float(tail_miss_from_rho(n, m, rho))
    return total / len(mu)


def _as_list(name: str, values: Any) -> list:
    values = values.tolist() if hasattr(values, "tolist") else list(values)
    if not isinstance(values, list):  # a 0-d tensor or array
        raise ValueError(f"{name} must hold one value per group, got a scalar")
    return values


def focal_metrics(weight: Any, mu_hat: Any, active: Any, group_size: int | Sequence[int], *, gamma: float,
                  rho: float) -> dict[str, float]:
    """The focal metrics (module docstring) of one batch of groups; {} for a batch without groups.

    `weight`, `mu_hat`, `active`: one value per group (lists, numpy arrays or CPU tensors); `group_size`: N
    of every group, or one N per group (verl's batches may mix sizes); `rho` in [0, 1]: the tail-miss
    monitor's rare share.
    """
    w, mu, act = _as_list("weight", weight), _as_list("mu_hat", mu_hat), [bool(a) for a in _as_list("active", active)]
    groups = len(mu)
    if len(w) != groups or len(act) != groups:
        raise ValueError(f"weight, mu_hat and active must have one value per group, got {len(w)}, {groups}, {len(act)}")
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho must be in [0, 1], got {rho}")
    sizes = _group_sizes(group_size, groups)
    if len(sizes) != groups or any(n < 1 for n in sizes):
        raise ValueError(f"group_size must be >= 1, one number or one per group ({groups}), got {group_size!r}")
    if groups == 0:
        return {}
    n_active = sum(act)
    out = {
        "focal/gamma": float(gamma),
        "focal/weight_mean": sum(w) / groups,
        "focal/weight_mean_active": sum(wi for wi, ai in zip(w, act) if ai) / n_active if n_active else math.nan,
        "focal/frac_active_groups": n_active / groups,
        "focal/mu_hat_mean": sum(mu) / groups,
    }
    for name, low, high in MU_HAT_BINS:
        if low == high:
            inside = sum(m == low for m in mu)
        else:
            inside = sum(low < m <= high and m < 1.0 for m in mu)
        out[f"focal/mu_hat_frac_{name}"] = inside / groups
    out["focal/tail_miss_mean"] = mean_tail_miss(mu, sizes, rho)
    return out


__all__ = ["MU_HAT_BINS", "focal_metrics", "mean_tail_miss"]
