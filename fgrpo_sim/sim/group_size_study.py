"""Group-size study (issue 21): does the shared-strategy population show Table 2's dip in pass@256?

One batched engine trains every (view, rare-share setting, N, variant, seed) row of the study at once
on the shared-strategy population of `population_shared` (prompts draw on one global logit vector s;
rare-only prompts are solved only by rare strategies). With `rare_correct_prob = 1` the rare strategies
are correct on every common-solvable prompt, so for those prompts the rare strategies are exactly
Lemma 3.1's subset E (tau = their mass, rho = tau / mu) and an active group that samples none of them
is the lemma's tail miss: its update lowers every rare strategy, hence the pass@256 of the rare-only
prompts, which share those logits.

Why one engine instead of `simulate_shared_population` per setting: rows differ in N, gamma, learning
rate, step count and population, which that simulator cannot batch. For one-token rollouts a group
enters the loss only through its counts c_k per strategy, so N only sets the counts' total; the counts
are drawn as a chain of binomials (cost independent of N). The advantages come from the core
(`core.grpo_advantages` -> `core.group_success_rate` -> `core.focal_advantages` on the N + 1 possible
reward vectors of each N, looked up by the group's correct count X), and the logit gradient of the
core's token-mean loss at ratio 1 is written out: d/dz [-(1/(B N)) sum_k c_k A_k log p_k] =
-(c A - p sum(c A)) / (B N). A test ties both to `shared_population_loss` (autograd through
`core.policy_loss`), and the per-row Adam to `torch.optim.Adam`.

Views: "equal-steps" (the paper's Table 2: same steps and prompts per step for every N) and
"equal-rollouts" (steps = steps x reference_n / N, at least 1: every N spends the rollouts of
reference_n at `steps`). Rows that share a seed index see the same prompt batches (common random
numbers), so comparisons across N and variants are paired by seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import torch

from fgrpo_sim import core
from fgrpo_sim.sim.population_shared import SharedPopulationSpec, make_shared_population
from fgrpo_sim.validation import check_integer, check_range

VIEWS = ("equal-steps", "equal-rollouts")
DEFAULT_POPULATION = SharedPopulationSpec(rare_correct_prob=1.0, rare_strategies=4)
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
METRICS = ("pass@1", "pass@256", "rare_only_pass@256", "rare_strategy_mass")


@dataclass(frozen=True)
class GroupSizeStudySpec:
    group_sizes: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
    rare_masses: tuple[float, ...] = (0.005, 0.02, 0.1)  # shared prior mass on the rare strategies
    gammas: tuple[float, ...] = (0.5, 1.0)  # F-GRPO arms (GRPO always runs)
    low_lr: bool = True  # GRPO at lr x m_gamma for each gamma (the paper's Table 3 control)
    views: tuple[str, ...] = VIEWS
    seeds: int = 10
    steps: int = 200
    reference_n: int = 8
    prompt_batch: int = 32
    lr: float = 0.01  # Adam
    optimizers: tuple[str, ...] = ("adam", "sgd")  # sgd rows (at sgd_lr) show what Adam's normalisation hides
    sgd_lr: float = 2.0  # the shared-population SGD setting of docs/population.md
    eval_every: int = 20
    seed: int = 0
    population: SharedPopulationSpec = field(default_factory=lambda: DEFAULT_POPULATION)

    def validate(self) -> "GroupSizeStudySpec":
        check_integer("group_sizes", np.asarray(self.group_sizes), 1, 1_000_000)
        check_range("rare_masses", np.asarray(self.rare_masses), 0.0, 1.0 - self.population.common_mass,
                    low_open=True, high_open=True)
        check_range("gammas", np.asarray(self.gammas, dtype=float), 0.0, 20.0, low_open=True)
        for view in self.views:
            if view not in VIEWS:
                raise ValueError(f"views must be among {VIEWS}, got {view!r}")
        check_integer("seeds", self.seeds, 2, 10_000)  # the dip verdicts are paired intervals over seeds
        check_integer("steps", self.steps, 1, 1_000_000)
        check_integer("reference_n", self.reference_n, 1, 1_000_000)
        check_integer("prompt_batch", self.prompt_batch, 1, self.population.num_prompts)
        check_range("lr", self.lr, 0.0, 10.0, low_open=True)
        check_range("sgd_lr", self.sgd_lr, 0.0, 1000.0, low_open=True)
        for opt in self.optimizers:
            if opt not in ("adam", "sgd"):
                raise ValueError(f"optimizers must be among ('adam', 'sgd'), got {opt!r}")
        check_integer("eval_every", self.eval_every, 1, None)
        self.population.validate()
        return self


def variants(spec: GroupSizeStudySpec, lr: float | None = None) -> list[tuple[str, float, float]]:
    """(name, gamma, lr): GRPO, F-GRPO per gamma, and the low-LR control per gamma."""
    from fgrpo_sim.sim.population import lr_for_control

    lr = spec.lr if lr is None else lr
    out = [("GRPO", 0.0, lr)]
    out += [(f"F-GRPO gamma={g:g}", float(g), lr) for g in spec.gammas]
    if spec.low_lr:
        out += [(f"GRPO low-LR (x m_{g:g})", 0.0, lr_for_control(lr, g)) for g in spec.gammas]
    return out


def study_rows(spec: GroupSizeStudySpec):
    """One row per trained model: optimizer, view, rare mass, N, variant, gamma, lr, seed, steps."""
    import pandas as pd

    rows = []
    for opt in spec.optimizers:
        for view in spec.views:
            for pop_index, rare in enumerate(spec.rare_masses):
                for n in spec.group_sizes:
                    steps = spec.steps if view == "equal-steps" else max(1, round(spec.steps * spec.reference_n / n))
                    for name, gamma, lr in variants(spec, spec.lr if opt == "adam" else spec.sgd_lr):
                        for seed in range(spec.seeds):
                            rows.append(dict(optimizer=opt, view=view, rare_mass=float(rare), pop=pop_index, N=int(n),
                                             variant=name, gamma=gamma, lr=float(lr), seed=seed, steps=int(steps)))
    return pd.DataFrame(rows)


def advantage_tables(pairs, n_max: int) -> tuple[torch.Tensor, torch.Tensor]:
    """For each (N, gamma): the core's focal GRPO advantage of a correct and of a wrong rollout in a group
    with X = 0..N correct ([pairs, n_max + 1] each, zero where the group has no such rollout)."""
    a_correct = torch.zeros(len(pairs), n_max + 1, dtype=torch.float64)
    a_wrong = torch.zeros_like(a_correct)
    for i, (n, gamma) in enumerate(pairs):
        rewards = (torch.arange(n)[None, :] < torch.arange(n + 1)[:, None]).to(torch.float64)  # row X: X ones first
        focal = core.focal_advantages(core.grpo_advantages(rewards), core.group_success_rate(rewards), gamma)
        a_correct[i, 1:n + 1] = focal[1:, 0]
        a_wrong[i, :n] = focal[:n, n - 1]
    return a_correct, a_wrong


def sample_counts(probs: torch.Tensor, totals: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Multinomial(totals, probs) counts per strategy ([..., K]) as a chain of binomials."""
    remaining = totals.to(probs.dtype).expand(probs.shape[:-1]).clone()
    left = torch.ones_like(remaining)
    counts = torch.zeros_like(probs)
    for k in range(probs.shape[-1] - 1):
        q = (probs[..., k] / left.clamp(min=1e-300)).clamp(0.0, 1.0)
        counts[..., k] = torch.binomial(remaining, q, generator=gen)
        remaining = remaining - counts[..., k]
        left = left - probs[..., k]
    counts[..., -1] = remaining
    return counts


def logit_gradient(probs, counts, a_correct, a_wrong, correct, group_size) -> torch.Tensor:
    """d/dz of each row's token-mean loss -(1/(B N)) sum c_k A_k log p_k: [rows, B, K] -> summed over B."""
    weighted = counts * torch.where(correct, a_correct[..., None], a_wrong[..., None])
    grad = -(weighted - probs * weighted.sum(-1, keepdim=True))
    return grad.sum(1) / (probs.shape[1] * group_size.to(probs.dtype))[:, None]


class RowAdam:
    """torch.optim.Adam's update (default betas, eps, no weight decay), one learning rate per row."""

    def __init__(self, shape, lr: torch.Tensor):
        self.m = torch.zeros(shape, dtype=torch.float64)
        self.v = torch.zeros(shape, dtype=torch.float64)
        self.t = torch.zeros(shape[0], dtype=torch.float64)
        self.lr = lr

    def step(self, params: torch.Tensor, grad: torch.Tensor, rows: torch.Tensor) -> None:
        b1, b2 = ADAM_BETAS
        self.t[rows] += 1
        t = self.t[rows][:, None]
        self.m[rows] = b1 * self.m[rows] + (1 - b1) * grad
        self.v[rows] = b2 * self.v[rows] + (1 - b2) * grad * grad
        denom = (self.v[rows] / (1 - b2 ** t)).sqrt() + ADAM_EPS
        params[rows] -= (self.lr[rows][:, None] / (1 - b1 ** t)) * self.m[rows] / denom


def initial_mu_rho(population) -> tuple[np.ndarray, np.ndarray]:
    """Per training prompt: initial correct mass mu and rare share rho = (mass on correct rare strategies) / mu."""
    p = population.initial_probs("train")
    correct = population.correct["train"]
    mu = (p * correct).sum(1)
    tau = (p * (correct & (population.kind == 1)[None])).sum(1)
    return mu, tau / mu


def predicted_dips(spec: GroupSizeStudySpec) -> dict[float, int]:
    """planner.predict_dip on each setting's own initial (mu, rho) pairs of the training prompts."""
    from fgrpo_sim.planner import empirical_difficulty, predict_dip

    out = {}
    for rare in spec.rare_masses:
        mu, rho = initial_mu_rho(make_shared_population(replace(spec.population, rare_mass=float(rare))))
        out[float(rare)] = predict_dip(empirical_difficulty(mu, "training prompts"), rho, spec.group_sizes).n_star
    return out


def run_study(spec: GroupSizeStudySpec = GroupSizeStudySpec(), progress: bool = False):
    """Train every row of `study_rows(spec)` in one batched loop (CPU, float64); a tidy DataFrame with one
    line per (row, evaluation): the row's settings, `step`, `rollouts` (= step x B x N), and per split
    (train_, heldout_) the METRICS, plus `train_dnll_rare`."""
    import pandas as pd
    from tqdm import tqdm

    spec.validate()
    table = study_rows(spec)
    pops = [make_shared_population(replace(spec.population, rare_mass=float(r))) for r in spec.rare_masses]
    kind = torch.as_tensor(pops[0].kind)
    offsets = {s: torch.as_tensor(np.stack([p.offsets[s] for p in pops])) for s in ("train", "heldout")}
    correct = {s: torch.as_tensor(np.stack([p.correct[s] for p in pops])) for s in ("train", "heldout")}
    rare_only = {s: torch.as_tensor(np.stack([p.prompt_type[s] for p in pops])) == 1 for s in ("train", "heldout")}
    shared0 = torch.as_tensor(np.stack([p.shared_init for p in pops]))

    pop = torch.as_tensor(table["pop"].to_numpy().copy())
    n_row = torch.as_tensor(table["N"].to_numpy().copy())
    seed_row = torch.as_tensor(table["seed"].to_numpy().copy())
    steps_row = torch.as_tensor(table["steps"].to_numpy().copy())
    pairs = sorted({(int(n), float(g)) for n, g in zip(table["N"], table["gamma"])})
    pair_index = {pair: i for i, pair in enumerate(pairs)}
    tab = torch.as_tensor([pair_index[(int(n), float(g))] for n, g in zip(table["N"], table["gamma"])])
    a_correct, a_wrong = advantage_tables(pairs, max(n for n, _ in pairs))
    shared = shared0[pop].clone()
    lr_row = torch.as_tensor(table["lr"].to_numpy().copy())
    adam = RowAdam(shared.shape, lr_row)
    sgd_row = torch.as_tensor((table["optimizer"] == "sgd").to_numpy().copy())
    base_logp = torch.log_softmax(shared0[:, None, :] + offsets["train"], -1)  # [pops, P, K]
    rare_correct = correct["train"] & (kind == 1)
    rare_weight = base_logp.exp() * rare_correct  # App. M.2: rare-correct rollouts as the base model samples them
    records: list[np.ndarray] = []
    record_rows: list[np.ndarray] = []
    record_steps: list[int] = []

    def evaluate(rows: torch.Tensor, step: int):
        cols = []
        for split in ("train", "heldout"):
            z = shared[rows][:, None, :] + offsets[split][pop[rows]]
            logp = torch.log_softmax(z, -1)
            q = (logp.exp() * correct[split][pop[rows]]).sum(-1)
            ro = rare_only[split][pop[rows]]
            pass256 = 1 - (1 - q) ** 256
            cols += [q.mean(1), pass256.mean(1), (pass256 * ro).sum(1) / ro.sum(1).clamp(min=1),
                     logp.exp()[..., kind == 1].sum(-1).mean(1)]
            if split == "train":
                w = rare_weight[pop[rows]]
                cols.append(((base_logp[pop[rows]] - logp) * w).sum((1, 2)) / w.sum((1, 2)))
        records.append(torch.stack(cols, 1).numpy())
        record_rows.append(rows.numpy())
        record_steps.extend([step] * rows.numel())

    gen = torch.Generator().manual_seed(int(spec.seed))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small tensors: intra-op threads only add overhead (see population.py)
    try:
        evaluate(torch.arange(len(table)), 0)
        for step in tqdm(range(1, int(steps_row.max()) + 1), desc="group-size study", disable=not progress):
            rows = torch.nonzero(steps_row >= step).squeeze(1)
            chosen = torch.rand(spec.seeds, spec.population.num_prompts, generator=gen).argsort(1)[:, :spec.prompt_batch]
            prompts = chosen[seed_row[rows]]  # [rows, B]: one batch of prompts per seed, shared by its rows
            z = shared[rows][:, None, :] + offsets["train"][pop[rows][:, None], prompts]
            probs = torch.softmax(z, -1)
            counts = sample_counts(probs, n_row[rows][:, None], gen)
            corr = correct["train"][pop[rows][:, None], prompts]
            x = (counts * corr).sum(-1).long()
            grad = logit_gradient(probs, counts, a_correct[tab[rows][:, None], x], a_wrong[tab[rows][:, None], x],
                                  corr, n_row[rows])
            sgd = sgd_row[rows]
            if sgd.any():
                shared[rows[sgd]] -= lr_row[rows[sgd]][:, None] * grad[sgd]
            if not sgd.all():
                adam.step(shared, grad[~sgd], rows[~sgd])
            due = rows[(steps_row[rows] == step) | (step % spec.eval_every == 0)]
            if due.numel():
                evaluate(due, step)
    finally:
        torch.set_num_threads(threads)
    names = [f"{s}_{m}" for s in ("train", "heldout") for m in METRICS]
    names.insert(len(METRICS), "train_dnll_rare")
    out = pd.DataFrame(np.concatenate(records), columns=names)
    out.insert(0, "step", record_steps)
    settings = table.iloc[np.concatenate(record_rows)].reset_index(drop=True).drop(columns=["pop"])
    out = pd.concat([settings, out], axis=1)
    out.insert(out.columns.get_loc("step") + 1, "rollouts", out["step"] * spec.prompt_batch * out["N"])
    return out


def final_rows(frame):
    """Each trained row's last evaluation (its own step count)."""
    return frame[frame["step"] == frame["steps"]].reset_index(drop=True)


def seed_matrix(final, metric: str, view: str, optimizer: str, rare_mass: float, variant: str):
    """[seeds, N] of `metric` at each row's last evaluation, and the N values (columns)."""
    part = final[(final["view"] == view) & (final["optimizer"] == optimizer) & (final["rare_mass"] == rare_mass)
                 & (final["variant"] == variant)]
    table = part.pivot(index="seed", columns="N", values=metric).sort_index(axis=1)
    return table.to_numpy(), table.columns.to_numpy()


def argmin_share(values: np.ndarray, resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """Share of seed resamples (with replacement) in which each column has the lowest mean."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(values.shape[0], size=(resamples, values.shape[0]))
    winners = values[idx].mean(1).argmin(1)
    return np.bincount(winners, minlength=values.shape[1]) / resamples


def dip_report(final, predictions: dict, view: str = "equal-steps", optimizer: str = "adam",
               metric: str = "heldout_pass@256", variant: str = "GRPO"):
    """Per rare-share setting: where `variant`'s `metric` is lowest over N, whether that is a dip (interior, and
    below both ends with paired bootstrap intervals excluding 0), the lemma's prediction, and every other
    variant minus `variant` at that N (paired by seed)."""
    import pandas as pd

    from fgrpo_sim.metrics.bootstrap import bootstrap_mean_ci, bootstrap_paired_difference_ci

    out = []
    for rare in sorted(final["rare_mass"].unique()):
        values, ns = seed_matrix(final, metric, view, optimizer, rare, variant)
        means = values.mean(0)
        low = int(means.argmin())
        share = argmin_share(values)
        left = bootstrap_paired_difference_ci(values[:, 0], values[:, low])
        right = bootstrap_paired_difference_ci(values[:, -1], values[:, low])
        dip = 0 < low < len(ns) - 1 and left.low > 0 and right.low > 0
        row = {"rare_mass": rare, "predicted_N": predictions.get(float(rare)), "lowest_N": int(ns[low]),
               "argmin_share": float(share[low]), "dip": bool(dip), f"{metric} at lowest": str(bootstrap_mean_ci(values[:, low])),
               f"N={ns[0]} minus lowest": str(left), f"N={ns[-1]} minus lowest": str(right)}
        for other in sorted(set(final["variant"]) - {variant}):
            o, _ = seed_matrix(final, metric, view, optimizer, rare, other)
            row[f"{other} minus {variant}"] = str(bootstrap_paired_difference_ci(o[:, low], values[:, low]))
        out.append(row)
    return pd.DataFrame(out)


def mean_table(final, metric: str, view: str = "equal-steps", optimizer: str = "adam"):
    """Mean over seeds of `metric` per (rare_mass, variant) and N."""
    part = final[(final["view"] == view) & (final["optimizer"] == optimizer)]
    return part.groupby(["rare_mass", "variant", "N"])[metric].mean().unstack("N")


__all__ = ["GroupSizeStudySpec", "run_study", "final_rows", "study_rows", "variants", "predicted_dips", "initial_mu_rho",
           "dip_report", "mean_table", "seed_matrix", "argmin_share", "advantage_tables", "sample_counts",
           "logit_gradient", "RowAdam", "VIEWS", "METRICS", "DEFAULT_POPULATION"]
