"""Shared-parameter population: prompts draw on one global set of "solution strategies".

The tabular population simulator (`population.py`) gives each prompt its own logits, so sharpening one
prompt can never hurt another and pass@k only follows each prompt's own correct mass. The paper's pass@k
decline needs the opposite: parameters shared across prompts, so that what GRPO learns on easy prompts
transfers to hard ones. This module models that with the smallest change that has it:

* K global strategies (the actions): `common` ones, `rare` ones and never-correct `wrong` ones. Their
  logits s[k] are ONE parameter vector shared by every prompt (per run).
* Prompt p's policy is softmax(s + o_p (+ d_p)): o_p is a fixed per-prompt offset (how natural each
  strategy is for that prompt, Gaussian noise of scale `offset_scale`), and d_p an optional trainable
  per-prompt offset (`trainable_offsets=True`, zero-initialised; held-out prompts have none).
* Each prompt has its own correct subset of strategies. A "common-solvable" prompt has each common
  strategy correct with probability `common_correct_prob` (at least one) and each rare strategy with
  probability `rare_correct_prob` (its rare-correct mode, the paper's subset E). A "rare-only" prompt
  (share `rare_only_share`) is solvable by `rare_only_strategies` rare strategies and nothing else.
* Held-out prompts are drawn from the same distribution and never trained: their pass@k measures what
  the shared parameters transfer.

Training is the same pipeline as the tabular simulator: binary rewards -> core.grpo_advantages ->
core.group_success_rate -> core.focal_advantages -> core.policy_loss (one-token sequences, token mean
over the batch), autograd into the shared logits, one optimizer (SGD or Adam); runs are a leading
batch dimension whose losses are summed, so runs never interact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import torch

from fgrpo_sim import core
from fgrpo_sim.sim.parametrisation import LinearLogits
from fgrpo_sim.sim.population import (StepBatch, TrainSpec, bucket_means, core_objective, last_evaluation_means,
                                     make_optimizer, run_on_device, sweep_with, train_loop, variant_columns)
from fgrpo_sim.validation import check_integer, check_range

PROMPT_TYPES = ("common-solvable", "rare-only")
SPLITS = ("train", "heldout")


@dataclass(frozen=True)
class SharedPopulationSpec:
    """Strategies, which prompts each one solves, and the shared/per-prompt split of the logits."""

    num_prompts: int = 256  # training prompts
    heldout_prompts: int = 256  # evaluated, never trained
    common_strategies: int = 4
    rare_strategies: int = 12
    wrong_strategies: int = 8
    common_mass: float = 0.6  # initial shared prior mass on all common strategies together
    rare_mass: float = 0.15  # ... on all rare strategies together (the rest goes to the wrong ones)
    common_correct_prob: float = 0.5  # per common strategy, on a common-solvable prompt
    rare_correct_prob: float = 0.1  # per rare strategy, on a common-solvable prompt
    rare_only_share: float = 0.25  # prompts solvable only by rare strategies
    rare_only_strategies: int = 1  # correct rare strategies of a rare-only prompt
    offset_scale: float = 1.0  # std of the fixed per-prompt logit offsets o_p
    trainable_offsets: bool = False  # add a trainable per-prompt offset d_p (training prompts only)
    seed: int = 0

    def validate(self) -> "SharedPopulationSpec":
        check_integer("num_prompts", self.num_prompts, 1, 10_000_000)
        check_integer("heldout_prompts", self.heldout_prompts, 0, 10_000_000)
        check_integer("common_strategies", self.common_strategies, 1, 10_000)
        check_integer("rare_strategies", self.rare_strategies, 1, 10_000)
        check_integer("wrong_strategies", self.wrong_strategies, 1, 10_000)
        check_range("common_mass", self.common_mass, 0.0, 1.0, low_open=True, high_open=True)
        check_range("rare_mass", self.rare_mass, 0.0, 1.0 - self.common_mass, low_open=True, high_open=True)
        check_range("common_correct_prob", self.common_correct_prob, 0.0, 1.0)
        check_range("rare_correct_prob", self.rare_correct_prob, 0.0, 1.0)
        check_range("rare_only_share", self.rare_only_share, 0.0, 1.0)
        check_integer("rare_only_strategies", self.rare_only_strategies, 1, self.rare_strategies)
        check_range("offset_scale", self.offset_scale, 0.0, 20.0)
        check_integer("seed", self.seed, 0, 2**63 - 1)
        return self

    @property
    def num_strategies(self) -> int:
        return self.common_strategies + self.rare_strategies + self.wrong_strategies


@dataclass(frozen=True)
class SharedPopulation:
    """Drawn prompts of both splits; arrays of one split are indexed [prompt, strategy]."""

    spec: SharedPopulationSpec
    shared_init: np.ndarray  # [K] initial shared logits (log prior masses)
    kind: np.ndarray  # [K] 0 common, 1 rare, 2 wrong
    offsets: dict  # split -> [P_split, K] fixed offsets
    correct: dict  # split -> [P_split, K] bool
    prompt_type: dict  # split -> [P_split] index into PROMPT_TYPES

    def initial_probs(self, split: str) -> np.ndarray:
        z = self.shared_init[None] + self.offsets[split]
        z = z - z.max(1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(1, keepdims=True)


def _draw_split(spec: SharedPopulationSpec, rng: np.random.Generator, count: int):
    c, r, k = spec.common_strategies, spec.rare_strategies, spec.num_strategies
    correct = np.zeros((count, k), dtype=bool)
    rare_only = rng.random(count) < spec.rare_only_share
    for p in range(count):
        if rare_only[p]:
            correct[p, c + rng.choice(r, spec.rare_only_strategies, replace=False)] = True
            continue
        common = rng.random(c) < spec.common_correct_prob
        if not common.any():  # a common-solvable prompt has at least one common solution
            common[rng.integers(c)] = True
        correct[p, :c] = common
        correct[p, c:c + r] = rng.random(r) < spec.rare_correct_prob
    offsets = spec.offset_scale * rng.standard_normal((count, k))
    return offsets, correct, rare_only.astype(np.int64)


def make_shared_population(spec: SharedPopulationSpec = SharedPopulationSpec()) -> SharedPopulation:
    """Draw the training and held-out prompts (seeded; shared by every run and variant)."""
    spec.validate()
    rng = np.random.default_rng(spec.seed)
    c, r, w = spec.common_strategies, spec.rare_strategies, spec.wrong_strategies
    prior = np.concatenate([np.full(c, spec.common_mass / c), np.full(r, spec.rare_mass / r),
                            np.full(w, (1 - spec.common_mass - spec.rare_mass) / w)])
    kind = np.array([0] * c + [1] * r + [2] * w)
    offsets, correct, types = {}, {}, {}
    for split, count in (("train", spec.num_prompts), ("heldout", spec.heldout_prompts)):
        offsets[split], correct[split], types[split] = _draw_split(spec, rng, count)
    return SharedPopulation(spec, np.log(prior), kind, offsets, correct, types)


class SharedPolicy(torch.nn.Module):
    """Logits of every prompt: shared [R, K] + fixed offsets [P, K] (+ trainable offsets [R, P, K]).

    The shared logits (and the trainable offsets) are `LinearLogits`: theta @ M^T for the run's
    parametrisation (axis, orthogonal, dense; sim.parametrisation), M drawn from `seed`.
    """

    def __init__(self, population: SharedPopulation, runs: int, device, dtype, parametrisation: str = "axis",
                 seed: int = 0):
        super().__init__()
        init = torch.as_tensor(population.shared_init, dtype=dtype, device=device)
        self.shared_map = LinearLogits(init.expand(runs, -1).clone(), parametrisation, seed)
        self.local_map = (LinearLogits(torch.zeros(runs, population.spec.num_prompts, init.numel(), dtype=dtype,
                                                   device=device), parametrisation, seed)
                          if population.spec.trainable_offsets else None)
        self.offsets = {s: torch.as_tensor(population.offsets[s], dtype=dtype, device=device) for s in SPLITS}

    @property
    def shared(self) -> torch.Tensor:
        return self.shared_map.logits()

    @property
    def local(self) -> torch.Tensor | None:
        return None if self.local_map is None else self.local_map.logits()

    def logits(self, prompts: torch.Tensor | None = None, split: str = "train") -> torch.Tensor:
        """[R, B, K] for training-prompt indices [R, B], or [R, P_split, K] for a whole split."""
        shared, local = self.shared, self.local
        k = shared.shape[-1]
        if prompts is None:
            z = shared[:, None, :] + self.offsets[split][None]
            if local is not None and split == "train":
                z = z + local
            return z
        z = shared[:, None, :] + self.offsets["train"][prompts]
        if local is not None:
            z = z + local.gather(1, prompts[..., None].expand(-1, -1, k))
        return z


def shared_population_loss(policy: SharedPolicy, batch: StepBatch, correct: torch.Tensor, train: TrainSpec,
                           old_logp: torch.Tensor | None = None):
    """The core's loss for one step, summed over runs; autograd reaches the shared logits.

    correct: [P, K] bool of the training prompts. Returns (loss, stats, focal advantages [R*B, N], rewards).
    """
    runs, batch_size, n = batch.actions.shape
    z = policy.logits(batch.prompts)
    logp = torch.log_softmax(z, dim=-1).gather(-1, batch.actions).reshape(-1, 1)
    hit = correct[batch.prompts[..., None], batch.actions]  # [R, B, N]
    rewards = torch.where(hit, torch.as_tensor(train.reward_correct, dtype=z.dtype, device=z.device),
                          torch.as_tensor(train.reward_wrong, dtype=z.dtype, device=z.device)).reshape(-1, n)
    loss, stats, focal = core_objective(logp, rewards, train, old_logp, runs)
    return loss, stats, focal, rewards


def simulate_shared_population(population: SharedPopulation, train: TrainSpec, device: str = "auto",
                               dtype: torch.dtype = torch.float32, progress: bool = False, progress_desc: str = ""):
    """Train `train.runs` runs; returns a tidy DataFrame, one row per (run, step, split, bucket).

    Buckets: the prompt types (common-solvable, rare-only) and "all". Columns: settings, `split`,
    `pass@k`, `correct_mass`, `rare_correct_mass` (mass on the prompt's correct rare strategies),
    `rare_mass_retained` (its bucket mean / initial bucket mean), `common_strategy_mass` (mass on the
    common strategies: how far the shared policy has sharpened), and over the groups trained since the
    previous evaluation (training split only): `active_fraction`, `tail_miss_observed` (active groups of
    prompts that have a rare-correct strategy and sampled none of them), `focal_weight_mean`, `groups`.
    """
    train.validate(population.spec.num_prompts)
    return run_on_device(_simulate, device, population, train, dtype, progress, progress_desc)


def _simulate(population: SharedPopulation, train: TrainSpec, dev, dtype, progress: bool, progress_desc: str):
    import pandas as pd

    runs = train.runs
    policy = SharedPolicy(population, runs, dev, dtype, train.parametrisation, train.seed)
    opt = make_optimizer(policy.parameters(), train)
    kind = torch.as_tensor(population.kind, device=dev)
    correct = {s: torch.as_tensor(population.correct[s], device=dev) for s in SPLITS}
    ptype = {s: torch.as_tensor(population.prompt_type[s], device=dev) for s in SPLITS}
    rare_correct = {s: correct[s] & (kind == 1)[None] for s in SPLITS}
    has_rare = rare_correct["train"].any(-1)
    base = dict(variant_columns(train), trainable_offsets=bool(population.spec.trainable_offsets))
    labels = list(PROMPT_TYPES) + ["all"]
    sums = torch.zeros(3, runs, len(PROMPT_TYPES), dtype=torch.float64, device=dev)  # active, miss, weight
    counts = torch.zeros(runs, len(PROMPT_TYPES), dtype=torch.float64, device=dev)
    rows: list[dict] = []
    initial_rare: dict = {}

    def evaluate(step: int):
        for split in SPLITS:
            if population.correct[split].shape[0] == 0:
                continue
            with torch.no_grad():
                p = torch.softmax(policy.logits(split=split).to(torch.float64), -1)
                q_pos = (p * correct[split]).sum(-1)
                per = {"correct_mass": q_pos, "rare_correct_mass": (p * rare_correct[split]).sum(-1),
                       "common_strategy_mass": p[..., kind == 0].sum(-1)}
                for k in train.pass_k:
                    per[f"pass@{k}"] = 1 - (1 - q_pos) ** int(k)
                means = {name: bucket_means(v, ptype[split], len(PROMPT_TYPES)).cpu().numpy()
                         for name, v in per.items()}
                if split not in initial_rare:
                    initial_rare[split] = means["rare_correct_mass"].mean(0)
                training = None
                if split == "train":
                    tot_c = torch.cat([counts, counts.sum(1, keepdim=True)], 1)
                    tot_s = torch.cat([sums, sums.sum(2, keepdim=True)], 2)
                    training = (torch.where(tot_c > 0, tot_s / tot_c.clamp(min=1), torch.nan).cpu().numpy(),
                                tot_c.cpu().numpy())
            for r in range(runs):
                for b, label in enumerate(labels):
                    row = dict(base, run=r, step=step, split=split, bucket=label)
                    for name, m in means.items():
                        row[name] = float(m[r, b])
                    rare0 = initial_rare[split][b]
                    row["rare_mass_retained"] = float(means["rare_correct_mass"][r, b] / rare0) if rare0 > 0 else math.nan
                    for i, name in enumerate(("active_fraction", "tail_miss_observed", "focal_weight_mean")):
                        row[name] = float(training[0][i, r, b]) if training is not None else math.nan
                    row["groups"] = int(training[1][r, b]) if training is not None else 0
                    rows.append(row)
        sums.zero_()
        counts.zero_()

    def record(batch: StepBatch, probs: torch.Tensor, rewards: torch.Tensor):
        chosen, actions = batch.prompts, batch.actions
        active = core.active_groups(rewards).reshape(chosen.shape).to(torch.float64)
        mu_hat = core.group_success_rate(rewards, train.reward_correct, train.reward_wrong)
        weight = core.focal_weight(mu_hat, train.gamma, train.focal_smoothing, rewards.shape[1])
        weight = weight.reshape(chosen.shape).to(torch.float64)
        rare_hit = rare_correct["train"][chosen[..., None], actions].any(-1)
        miss = active * (has_rare[chosen] & ~rare_hit).to(torch.float64)
        t = ptype["train"][chosen]
        for i, v in enumerate((active, miss, weight)):
            sums[i].scatter_add_(1, t, v)
        counts.scatter_add_(1, t, torch.ones_like(active))

    train_loop(train, population.spec.num_prompts, dev, policy.logits,
               lambda batch, old_logp: shared_population_loss(policy, batch, correct["train"], train, old_logp),
               opt, record, evaluate, progress_desc or base["variant"], progress)
    return pd.DataFrame(rows)


def run_shared_sweep(population: SharedPopulation, specs: Iterable[TrainSpec], device: str = "auto",
                     progress: bool = False, executor=None, on_variant=None):
    """Concatenate `simulate_shared_population` over `specs` (e.g. from population.sweep_variants)."""
    return sweep_with(simulate_shared_population, population, specs, device, progress, executor, on_variant)


def shared_summary(frame, split: str = "heldout", bucket: str = "all"):
    """Mean over runs of the last evaluation of each variant and N, for one split and bucket."""
    return last_evaluation_means(frame[(frame["split"] == split) & (frame["bucket"] == bucket)])


def at_equal_pass1(frame, metric: str = "pass@256", split: str = "heldout", bucket: str = "all",
                   level: float | None = None):
    """(level, {variant: metric}) where each variant's mean pass@1 curve first reaches `level`.

    Default level: the lowest final pass@1 of the variants, so every curve reaches it. Linear
    interpolation between evaluations; NaN for a variant whose curve never reaches the level.
    Use one N per call.
    """
    rows = frame[(frame["split"] == split) & (frame["bucket"] == bucket)]
    curves = {v: c.groupby("step")[["pass@1", metric]].mean() for v, c in rows.groupby("variant")}
    if level is None:
        level = float(min(c["pass@1"].iloc[-1] for c in curves.values()))
    out = {}
    for variant, c in curves.items():
        x, y = c["pass@1"].to_numpy(), c[metric].to_numpy()
        above = np.nonzero(x >= level)[0]
        if above.size == 0:
            out[variant] = math.nan
            continue
        i = int(above[0])
        if i == 0 or x[i] == x[i - 1]:
            out[variant] = float(y[i])
        else:
            f = (level - x[i - 1]) / (x[i] - x[i - 1])
            out[variant] = float(y[i - 1] + f * (y[i] - y[i - 1]))
    return level, out


def equal_pass1_by_run(frame, metric: str = "pass@256", split: str = "heldout", bucket: str = "all"):
    """(level, DataFrame) of `metric` where each run's pass@1 curve first reaches a common level.

    The level is the lowest final pass@1 of any run of any variant (so every run reaches it); the table
    has one row per variant: mean, standard error over runs, and the runs. Use one N per call.
    """
    import pandas as pd

    rows = frame[(frame["split"] == split) & (frame["bucket"] == bucket)]
    last = rows[rows["step"] == rows.groupby(["variant", "run"])["step"].transform("max")]
    level = float(last["pass@1"].min())
    per_run: dict = {}
    for run, part in rows.groupby("run"):
        for variant, value in at_equal_pass1(part, metric, split, bucket, level=level)[1].items():
            per_run.setdefault(variant, []).append(value)
    table = pd.DataFrame([{"variant": v, "mean": float(np.mean(x)),
                           "se": float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan,
                           "runs": len(x)} for v, x in per_run.items()])
    return level, table


def best_checkpoint(frame, split: str = "heldout", bucket: str = "all", metric: str = "pass@256"):
    """Per variant and N, the evaluation step where the run-mean pass@1 is highest, with `metric` there.

    The paper's model selection (best checkpoint by pass@1, then report pass@k there).
    """
    import pandas as pd

    rows = frame[(frame["split"] == split) & (frame["bucket"] == bucket)]
    out = []
    for (variant, n), part in rows.groupby(["variant", "N"], sort=False):
        curve = part.groupby("step")[["pass@1", metric]].mean()
        step = int(curve["pass@1"].idxmax())
        out.append({"variant": variant, "N": n, "step": step, "pass@1": float(curve.loc[step, "pass@1"]),
                    metric: float(curve.loc[step, metric])})
    return pd.DataFrame(out)


__all__ = ["best_checkpoint", "equal_pass1_by_run", "SharedPopulationSpec", "SharedPopulation", "SharedPolicy", "make_shared_population",
           "shared_population_loss", "simulate_shared_population", "run_shared_sweep", "shared_summary",
           "at_equal_pass1", "PROMPT_TYPES", "SPLITS"]
