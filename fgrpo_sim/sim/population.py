"""Population simulator: many prompts of mixed difficulty, each a softmax over a few modes.

Every prompt owns a tabular softmax policy over three modes: common-correct actions, rare-correct
actions and incorrect actions (a handful of actions each). Its initial success probability mu_pos is
drawn from Beta(a, b) and a share rho of that correct mass sits on the rare-correct mode (Sec. 3's
tau = rho * mu_pos). One training step samples a batch of prompts, draws a group of N one-token
"rollouts" per prompt, and trains on the real objectives of `fgrpo_sim.core`: binary rewards ->
GRPO advantages -> focal weight (1 - mu_hat)^gamma -> GRPO / DAPO / CISPO token loss (one token per
sequence, token-mean over the batch), then one optimizer step shared by all prompts (SGD or Adam).
Independent runs (seeds) are batched along a leading dimension, on CPU or CUDA.

Metrics are exact where they can be: pass@k of a prompt is 1 - (1 - Q_pos)^k from its current correct
mass, not an estimate. Group-level events (active group, tail miss, unsampled-correct mass change)
are counted over the groups trained between two evaluations and set beside Lemma 3.1's prediction
evaluated at the same groups' pre-update masses.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Iterable, Sequence

import numpy as np
import torch

from fgrpo_sim import core
from fgrpo_sim.sim.parametrisation import PARAMETRISATIONS, LinearLogits
from fgrpo_sim.validation import check_beta_shapes, check_choice, check_integer, check_range

METHODS = ("grpo", "dapo", "cispo")
OPTIMIZERS = ("sgd", "adam")
DEFAULT_BUCKET_EDGES = (0.0, 0.2, 0.5, 0.8, 1.0)
#: Largest learning rate accepted (SGD needs ~50; Adam moves a logit by about lr per step): finite, so a
#: step never writes inf into the logits; a run that still diverges stops with an error (`check_finite_logits`, at
#: the next evaluation).
MAX_LR = 1e6
#: Metrics averaged over the groups trained since the previous evaluation (NaN at step 0).
TRAINING_METRICS = (
    "active_fraction", "tail_miss_observed", "tail_miss_predicted", "focal_weight_mean",
    "focal_weight_active_mean", "unsampled_correct_mass", "unsampled_correct_change",
    "correct_mass_change", "shrink_while_grow_fraction",
)


@dataclass(frozen=True)
class PopulationSpec:
    """The prompt population: difficulty distribution and the modes of each prompt's policy."""

    num_prompts: int = 512
    beta_a: float = 1.0  # mu_pos ~ Beta(beta_a, beta_b)
    beta_b: float = 1.0
    rho: float = 0.1  # rare share of the correct mass; with rho_max > rho, log-uniform on [rho, rho_max]
    rho_max: float | None = None
    common_actions: int = 2
    rare_actions: int = 2
    wrong_actions: int = 4
    mu_clip: float = 1e-3  # keep mu_pos in [mu_clip, 1 - mu_clip] so every mode has mass
    bucket_edges: tuple[float, ...] = DEFAULT_BUCKET_EDGES
    seed: int = 0  # the population (the "data set") is shared by every run and variant

    def validate(self) -> "PopulationSpec":
        check_integer("num_prompts", self.num_prompts, 1, 10_000_000)
        check_beta_shapes("beta", self.beta_a, self.beta_b)
        check_range("rho", self.rho, 0.0, 1.0, low_open=True, high_open=True)
        if self.rho_max is not None:  # rho_max = rho would silently mean "no spread": say so instead
            check_range("rho_max", self.rho_max, self.rho, 1.0, low_open=True, high_open=True)
        for name in ("common_actions", "rare_actions", "wrong_actions"):
            check_integer(name, getattr(self, name), 1, 10_000)
        check_range("mu_clip", self.mu_clip, 0.0, 0.5, low_open=True, high_open=True)
        check_integer("seed", self.seed, 0, 2**63 - 1)
        try:  # text, a ragged list, a lone number: refused below under the parameter's name, not numpy's words
            edges, shown = np.asarray(self.bucket_edges, dtype=float), tuple(self.bucket_edges)
        except (TypeError, ValueError):
            edges, shown = np.empty(0), self.bucket_edges
        # `not all(> 0)`, not `any(<= 0)`: a NaN edge compares False both ways and must be refused too
        if (edges.ndim != 1 or edges.size < 2 or edges[0] != 0.0 or edges[-1] != 1.0
                or not np.all(np.diff(edges) > 0)):
            raise ValueError(f"bucket_edges must increase from 0 to 1, got {shown}")
        return self


@dataclass(frozen=True)
class Population:
    """Drawn prompts: per-prompt initial masses and the action layout (same for every prompt)."""

    spec: PopulationSpec
    mu_pos: np.ndarray  # [P] initial correct mass
    rho: np.ndarray  # [P] rare share of it
    initial_logits: np.ndarray  # [P, A]
    is_correct: np.ndarray  # [A] bool
    is_rare: np.ndarray  # [A] bool (a subset of is_correct)
    bucket: np.ndarray  # [P] index into bucket_labels
    bucket_labels: tuple[str, ...]


def make_population(spec: PopulationSpec = PopulationSpec()) -> Population:
    """Draw mu_pos ~ Beta(a, b) and rho per prompt; spread each mode's mass evenly over its actions."""
    spec.validate()
    rng = np.random.default_rng(spec.seed)
    mu = np.clip(rng.beta(spec.beta_a, spec.beta_b, spec.num_prompts), spec.mu_clip, 1.0 - spec.mu_clip)
    if spec.rho_max is None or spec.rho_max == spec.rho:
        rho = np.full(spec.num_prompts, spec.rho)
    else:
        rho = np.exp(rng.uniform(math.log(spec.rho), math.log(spec.rho_max), spec.num_prompts))
    c, r, w = spec.common_actions, spec.rare_actions, spec.wrong_actions
    masses = np.concatenate([
        np.repeat((mu * (1 - rho) / c)[:, None], c, axis=1),
        np.repeat((mu * rho / r)[:, None], r, axis=1),
        np.repeat(((1 - mu) / w)[:, None], w, axis=1),
    ], axis=1)
    is_correct = np.array([True] * (c + r) + [False] * w)
    is_rare = np.array([False] * c + [True] * r + [False] * w)
    edges = np.asarray(spec.bucket_edges, dtype=float)
    bucket = np.clip(np.searchsorted(edges, mu, side="right") - 1, 0, edges.size - 2)
    labels = tuple(f"mu0 {edges[i]:.2g}-{edges[i + 1]:.2g}" for i in range(edges.size - 1))
    return Population(spec, mu, rho, np.log(masses), is_correct, is_rare, bucket, labels)


@dataclass(frozen=True)
class TrainSpec:
    """One training configuration; `runs` independent seeds of it are simulated together."""

    method: str = "grpo"  # grpo | dapo | cispo (core.policy_loss)
    group_size: int = 8
    gamma: float = 0.0  # focal exponent; 0 = the unweighted method
    focal_smoothing: float = 0.0  # alpha of the weight's estimate (X + alpha) / (N + 2 alpha); 0 = the paper's X / N
    optimizer: str = "adam"  # sgd | adam, one optimizer over every prompt's logits
    lr: float = 0.05  # Adam; SGD needs ~50 because the token mean divides each prompt's gradient by B*N
    steps: int = 200
    prompt_batch: int = 64
    updates_per_step: int = 1  # optimizer steps on the same rollouts (PPO epochs); >1 makes clipping bite
    reward_correct: float = 1.0
    reward_wrong: float = 0.0
    runs: int = 4
    eval_every: int = 10
    pass_k: tuple[int, ...] = (1, 8, 64, 256)
    seed: int = 0
    variant: str = ""  # free label carried into the output (e.g. "low-LR control")
    parametrisation: str = "axis"  # logits = M theta (sim.parametrisation): axis | orthogonal | dense; M from `seed`

    def validate(self, num_prompts: int) -> "TrainSpec":
        check_choice("method", self.method, METHODS)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_choice("parametrisation", self.parametrisation, PARAMETRISATIONS)
        check_integer("group_size", self.group_size, 1, 1_000_000)
        check_range("gamma", self.gamma, 0.0, None)
        check_range("focal_smoothing", self.focal_smoothing, 0.0, np.inf, high_open=True)
        check_range("lr", self.lr, 0.0, MAX_LR, low_open=True)
        check_integer("steps", self.steps, 0, 10_000_000)
        check_integer("prompt_batch", self.prompt_batch, 1, num_prompts)
        check_integer("updates_per_step", self.updates_per_step, 1, 1000)
        check_integer("runs", self.runs, 1, 100_000)
        check_integer("eval_every", self.eval_every, 1, None)
        if not len(self.pass_k):
            raise ValueError("pass_k must list at least one k, got none")
        check_integer("pass_k", np.asarray(self.pass_k), 1, None)
        check_integer("seed", self.seed, 0, 2**63 - 1)
        check_range("reward_correct", self.reward_correct, -1e12, 1e12)
        check_range("reward_wrong", self.reward_wrong, -1e12, self.reward_correct, high_open=True)
        if not self.reward_correct > self.reward_wrong:
            raise ValueError(f"reward_correct must be > reward_wrong, got {self.reward_correct:g} <= {self.reward_wrong:g}")
        return self


def resolve_device(device: str = "auto") -> torch.device:
    check_choice("device", device, ("auto", "cpu", "cuda"))
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device must be cpu or auto on this machine: CUDA is not available")
    return torch.device(device)


@dataclass
class StepBatch:
    """What one training step drew: prompt indices [R, B] and actions [R, B, N]."""

    prompts: torch.Tensor
    actions: torch.Tensor


def group_rewards(actions: torch.Tensor, is_correct: torch.Tensor, reward_correct: float, reward_wrong: float,
                  dtype: torch.dtype | None = None):
    """Binary rewards [R * B, N] of sampled actions [R, B, N], in `dtype` (default: torch's default dtype).

    Made directly in the training dtype: a float32 -0.3 cast to float64 lies below reward_wrong = -0.3 and
    core.group_success_rate rejects it.
    """
    dtype = dtype or torch.get_default_dtype()
    correct = is_correct[actions]
    rewards = torch.where(correct, torch.as_tensor(reward_correct, dtype=dtype),
                          torch.as_tensor(reward_wrong, dtype=dtype))
    return rewards.reshape(-1, actions.shape[-1])


def population_loss(logits: torch.Tensor, batch: StepBatch, is_correct: torch.Tensor, train: TrainSpec,
                    old_logp: torch.Tensor | None = None):
    """The core's loss for one step, summed over runs (each run's own token mean, so runs never mix).

    logits [R, P, A] (the parameter); returns (loss, stats, focal advantages [R*B, N], rewards [R*B, N]).
    Each sampled action is a one-token sequence: logp [R*B*N, 1], advantages per sequence.
    """
    runs, batch_size, n = batch.actions.shape
    z = logits.gather(1, batch.prompts[..., None].expand(-1, -1, logits.shape[-1]))
    logp_all = torch.log_softmax(z, dim=-1)
    logp = logp_all.gather(-1, batch.actions).reshape(-1, 1)
    rewards = group_rewards(batch.actions, is_correct, train.reward_correct, train.reward_wrong, logits.dtype)
    loss, stats, focal = core_objective(logp, rewards, train, old_logp, runs)
    return loss, stats, focal, rewards


def core_objective(logp: torch.Tensor, rewards: torch.Tensor, train: TrainSpec, old_logp: torch.Tensor | None,
                   runs: int):
    """rewards -> GRPO advantages -> focal weighting -> the core's token loss, summed over runs.

    logp [R*B*N, 1] one-token sequences, rewards [R*B, N]; returns (loss, stats, focal advantages).
    Both population simulators train through this, so they share one objective.
    """
    advantages = core.grpo_advantages(rewards)
    mu_hat = core.group_success_rate(rewards, train.reward_correct, train.reward_wrong)
    focal = core.focal_advantages(advantages, mu_hat, train.gamma, train.focal_smoothing)
    if old_logp is None:
        old_logp = logp.detach()
    mask = torch.ones_like(logp, dtype=torch.bool)
    loss, stats = core.policy_loss(logp, old_logp, focal.reshape(-1), mask, method=train.method)
    # token_mean averages over all R*B*N tokens; times R gives the sum of each run's own token mean.
    return loss * runs, stats, focal


def lemma31_tail_miss(n: int, mu: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """Pr(B) = (1 - tau)^N - (mu - tau)^N - (1 - mu)^N (Lemma 3.1) on torch tensors, kept on device.

    Same formula as fgrpo_sim.theory.tail_miss_probability (a test checks they agree); written in
    torch so that the per-step prediction never leaves the GPU.
    """
    return ((1 - tau) ** n - (mu - tau).clamp(min=0) ** n - (1 - mu) ** n).clamp(min=0)


class _Accumulator:
    """Sums of per-group quantities per (run, bucket) between two evaluations."""

    def __init__(self, runs: int, buckets: int, device):
        self.shape = (runs, buckets)
        self.device = device
        self.reset()

    def reset(self):
        self.sums: dict[str, torch.Tensor] = {}
        self.counts: dict[str, torch.Tensor] = {}

    def add(self, name: str, values: torch.Tensor, bucket: torch.Tensor, where: torch.Tensor | None = None):
        runs, buckets = self.shape
        flat = (torch.arange(runs, device=self.device)[:, None] * buckets + bucket).reshape(-1)
        weight = torch.ones_like(values, dtype=torch.float64) if where is None else where.to(torch.float64)
        s = torch.zeros(runs * buckets, dtype=torch.float64, device=self.device)
        c = torch.zeros(runs * buckets, dtype=torch.float64, device=self.device)
        s.index_add_(0, flat, (values.to(torch.float64) * weight).reshape(-1))
        c.index_add_(0, flat, weight.reshape(-1))
        self.sums[name] = self.sums.get(name, 0) + s.reshape(runs, buckets)
        self.counts[name] = self.counts.get(name, 0) + c.reshape(runs, buckets)


def bucket_means(values: torch.Tensor, bucket: torch.Tensor, buckets: int) -> torch.Tensor:
    """values [R, P] -> [R, buckets + 1] means per bucket (NaN for an empty one), last column over all prompts."""
    runs = values.shape[0]
    sums = torch.zeros(runs, buckets, dtype=torch.float64, device=values.device)
    sums.index_add_(1, bucket, values.to(torch.float64))
    counts = torch.bincount(bucket, minlength=buckets).to(torch.float64)
    per_bucket = sums / counts.clamp(min=1)
    per_bucket[:, counts == 0] = float("nan")
    return torch.cat([per_bucket, values.to(torch.float64).mean(dim=1, keepdim=True)], dim=1)


def simulate_population(population: Population, train: TrainSpec, device: str = "auto",
                        dtype: torch.dtype = torch.float32, progress: bool = False, progress_desc: str = ""):
    """Train `train.runs` independent runs on `population`; returns a tidy pandas DataFrame.

    One row per (run, evaluation step, difficulty bucket), bucket "all" included. Columns: the
    training settings, `pass@k` for each k, `correct_mass` (= pass@1), `rare_mass`,
    `rare_mass_retained` (mean rare mass / its initial mean), `retained_correct_mass`
    (1 - sum_correct max(0, p0 - p) / Q_pos0, averaged), and the TRAINING_METRICS averaged over the
    groups trained since the previous evaluation.
    """
    train.validate(population.spec.num_prompts)
    return run_on_device(_simulate, device, population, train, dtype, progress, progress_desc)


def run_on_device(simulate, device: str, *args):
    """simulate(*args[:2], device, *args[2:]) on the resolved device, with one intra-op thread on CPU."""
    dev = resolve_device(device)
    threads = torch.get_num_threads()
    if dev.type == "cpu":  # tensors of a few thousand numbers: intra-op threads only add overhead
        torch.set_num_threads(1)
    try:
        return simulate(*args[:2], dev, *args[2:])
    finally:
        torch.set_num_threads(threads)


def make_optimizer(params, train: TrainSpec) -> torch.optim.Optimizer:
    """One optimizer over every prompt's (or the shared) logits of all runs."""
    params = list(params)
    return torch.optim.SGD(params, lr=train.lr) if train.optimizer == "sgd" else torch.optim.Adam(params, lr=train.lr)


def variant_columns(train: TrainSpec) -> dict:
    """The settings columns every output row of a simulation starts with."""
    return {"method": train.method, "N": train.group_size, "gamma": float(train.gamma),
            "optimizer": train.optimizer, "parametrisation": train.parametrisation, "lr": float(train.lr),
            "variant": train.variant or _default_variant(train)}


def train_loop(train: TrainSpec, num_prompts: int, dev: torch.device, logits_of, loss_of, opt, record, evaluate, desc: str,
               progress: bool) -> None:
    """The training schedule both simulators share: evaluate at step 0, then per step draw a batch of prompts
    and N actions per prompt, take `updates_per_step` optimizer steps on the core objective (old log-probs
    frozen at the rollout policy), record the step's groups, and evaluate every `eval_every` steps and last.

    logits_of(prompts [R, B]) -> [R, B, A] current logits; loss_of(batch, old_logp) -> (loss, stats, focal,
    rewards); record(batch, probs, rewards) after the update; evaluate(step).
    """
    from fgrpo_sim.progress import bar as progress_bar

    gen = torch.Generator(device=dev)
    gen.manual_seed(int(train.seed))
    runs, n, batch_size = train.runs, train.group_size, train.prompt_batch
    evaluate(0)
    # the first step whose update made a logit non-finite (0: none yet), kept on the device and read only at the
    # evaluations, so a step never waits for the host (a GPU step would stall on every such read)
    first_bad = torch.zeros((), dtype=torch.long, device=dev)
    bar = progress_bar(range(1, train.steps + 1), progress=progress, desc=desc, leave=False)

    def one_step(step: int) -> None:
        with torch.no_grad():
            chosen = torch.rand(runs, num_prompts, generator=gen, device=dev).argsort(dim=1)[:, :batch_size]
            z = logits_of(chosen)
            probs = torch.softmax(z.to(torch.float64), dim=-1)
            actions = torch.multinomial(probs.reshape(-1, probs.shape[-1]).to(torch.float32), n, replacement=True,
                                        generator=gen).reshape(runs, batch_size, n)
            rollout_logp = torch.log_softmax(z, -1).gather(-1, actions).reshape(-1, 1)
        batch = StepBatch(chosen, actions)
        old_logp = None  # the first update's own log-probs (detached) equal the rollout's
        for _ in range(train.updates_per_step):
            opt.zero_grad(set_to_none=True)
            loss, _, _, rewards = loss_of(batch, old_logp)
            old_logp = rollout_logp
            loss.backward()
            opt.step()
        with torch.no_grad():
            mark_non_finite(opt, step, first_bad)
            record(batch, probs, rewards)

    for step in bar:
        # the rewards are the simulator's own lookups (finite and in range by construction): core's
        # device-reading value checks would cost a host sync each per step; divergence is caught below
        with core.values_trusted():
            one_step(step)
        if step % train.eval_every == 0 or step == train.steps:
            check_finite_logits(first_bad, train)
            evaluate(step)
    bar.close()


def mark_non_finite(opt: torch.optim.Optimizer, step: int, first_bad: torch.Tensor) -> None:
    """Record in `first_bad` (on the device, no host read) the first step whose update left a non-finite logit."""
    params = [p for group in opt.param_groups for p in group["params"]]
    finite = torch.stack([torch.isfinite(p).all() for p in params]).all()
    first_bad.copy_(torch.where((first_bad == 0) & ~finite, step, first_bad))


def check_finite_logits(first_bad: torch.Tensor, train: TrainSpec) -> None:
    """Refuse to go on (and so to write NaN/inf results) once an update made a logit non-finite: read at the
    evaluations, it names the step where it happened."""
    step = int(first_bad)
    if step:
        raise ValueError(f"lr = {train.lr:g} made the logits non-finite at step {step} "
                         f"({train.variant or _default_variant(train)}, N = {train.group_size}); use a smaller --lr")


def _simulate(population: Population, train: TrainSpec, dev: torch.device, dtype: torch.dtype, progress: bool,
              progress_desc: str):
    import pandas as pd

    runs = train.runs
    is_correct = torch.as_tensor(population.is_correct, device=dev)
    is_rare = torch.as_tensor(population.is_rare, device=dev)
    bucket_of_prompt = torch.as_tensor(population.bucket, device=dev)
    n_buckets = len(population.bucket_labels)
    init = torch.as_tensor(population.initial_logits, dtype=dtype, device=dev)
    # logits = theta @ M^T: per prompt, one map M shared by the prompts (drawn from the training seed)
    policy = LinearLogits(init.expand(runs, -1, -1).clone(), train.parametrisation, train.seed)
    opt = make_optimizer(policy.parameters(), train)
    p0 = torch.softmax(init, dim=-1).to(torch.float64)
    q_pos0 = p0[:, is_correct].sum(-1)
    q_rare0 = p0[:, is_rare].sum(-1)
    acc = _Accumulator(runs, n_buckets, dev)
    rows: list[dict] = []
    base = variant_columns(train)
    labels = list(population.bucket_labels) + ["all"]
    prompts_in_bucket = np.bincount(population.bucket, minlength=n_buckets)

    def evaluate(step: int):
        with torch.no_grad():
            p = torch.softmax(policy.logits(), dim=-1).to(torch.float64)
            q_pos = p[..., is_correct].sum(-1)
            q_rare = p[..., is_rare].sum(-1)
            lost = (p0[None][..., is_correct] - p[..., is_correct]).clamp(min=0).sum(-1)
            per = {
                "correct_mass": q_pos,
                "rare_mass": q_rare,
                "retained_correct_mass": 1 - lost / q_pos0[None],
            }
            for k in train.pass_k:
                per[f"pass@{k}"] = 1 - (1 - q_pos) ** int(k)
            means = {name: bucket_means(v, bucket_of_prompt, n_buckets).cpu().numpy() for name, v in per.items()}
            rare0 = bucket_means(q_rare0[None], bucket_of_prompt, n_buckets).cpu().numpy()[0]
            training = {}
            for name in TRAINING_METRICS:
                if name in acc.sums:
                    s, c = acc.sums[name], acc.counts[name]
                    s = torch.cat([s, s.sum(1, keepdim=True)], 1)
                    c = torch.cat([c, c.sum(1, keepdim=True)], 1)
                    training[name] = torch.where(c > 0, s / c.clamp(min=1), torch.nan).cpu().numpy()
            groups = acc.counts.get("active_fraction")
            groups = torch.cat([groups, groups.sum(1, keepdim=True)], 1).cpu().numpy() if groups is not None else None
        for r in range(runs):
            for b, label in enumerate(labels):
                if b < n_buckets and not prompts_in_bucket[b]:
                    continue  # no prompt of this difficulty: no row, rather than NaN written as a result
                row = dict(base, run=r, step=step, bucket=label)
                for name, m in means.items():
                    row[name] = float(m[r, b])
                row["rare_mass_retained"] = float(means["rare_mass"][r, b] / rare0[b]) if rare0[b] > 0 else math.nan
                for name in TRAINING_METRICS:
                    row[name] = float(training[name][r, b]) if name in training else math.nan
                row["groups"] = int(groups[r, b]) if groups is not None else 0
                rows.append(row)
        acc.reset()

    def logits_of(prompts: torch.Tensor) -> torch.Tensor:
        logits = policy.logits().detach()
        return logits.gather(1, prompts[..., None].expand(-1, -1, logits.shape[-1]))

    def record(batch: StepBatch, probs: torch.Tensor, rewards: torch.Tensor):
        _record_step(acc, batch, probs, policy.logits(), rewards, train, is_correct, is_rare,
                     bucket_of_prompt[batch.prompts])

    train_loop(train, population.spec.num_prompts, dev, logits_of,
               lambda batch, old_logp: population_loss(policy.logits(), batch, is_correct, train, old_logp),
               opt, record, evaluate, progress_desc or base["variant"], progress)
    return pd.DataFrame(rows)


def _record_step(acc: _Accumulator, batch: StepBatch, probs: torch.Tensor, logits: torch.Tensor,
                 rewards: torch.Tensor, train: TrainSpec, is_correct, is_rare, bucket):
    runs, batch_size, n = batch.actions.shape
    counts = torch.zeros_like(probs).scatter_add_(-1, batch.actions, torch.ones_like(batch.actions, dtype=probs.dtype))
    sampled = counts > 0
    q_pos = probs[..., is_correct].sum(-1)
    q_rare = probs[..., is_rare].sum(-1)
    unsampled_correct = is_correct & ~sampled
    q_upos = (probs * unsampled_correct).sum(-1)
    after = torch.softmax(logits.detach().gather(1, batch.prompts[..., None].expand(-1, -1, probs.shape[-1]))
                          .to(torch.float64), dim=-1)
    d_upos = (after * unsampled_correct).sum(-1) - q_upos
    d_pos = after[..., is_correct].sum(-1) - q_pos
    active = core.active_groups(rewards).reshape(runs, batch_size)
    mu_hat = core.group_success_rate(rewards, train.reward_correct, train.reward_wrong)
    weight = core.focal_weight(mu_hat, train.gamma, train.focal_smoothing, n).reshape(runs, batch_size)
    missed_rare = counts[..., is_rare].sum(-1) == 0
    acc.add("active_fraction", active.to(torch.float64), bucket)
    acc.add("tail_miss_observed", (active & missed_rare).to(torch.float64), bucket)
    acc.add("tail_miss_predicted", lemma31_tail_miss(n, q_pos, q_rare), bucket)
    acc.add("focal_weight_mean", weight, bucket)
    acc.add("focal_weight_active_mean", weight, bucket, where=active)
    acc.add("unsampled_correct_mass", q_upos, bucket)
    acc.add("unsampled_correct_change", d_upos, bucket)
    acc.add("correct_mass_change", d_pos, bucket)
    acc.add("shrink_while_grow_fraction", ((d_pos > 0) & (d_upos < 0)).to(torch.float64), bucket, where=active)


def _default_variant(train: TrainSpec) -> str:
    name = train.method.upper()
    smoothed = f" alpha={train.focal_smoothing:g}" if train.focal_smoothing else ""  # gamma 0 has no weight to smooth
    return f"F-{name} gamma={train.gamma:g}{smoothed}" if train.gamma > 0 else name


def lr_for_control(lr: float, gamma: float) -> float:
    """The paper's low-LR control: the learning rate times m_gamma (theory.lr_multiplier)."""
    from fgrpo_sim import theory

    return float(lr * float(theory.lr_multiplier(gamma)))


def _check_control_lr(lr: float, gamma: float) -> None:
    """The low-LR control needs lr x m_gamma to be a usable learning rate: blame gamma when it underflows."""
    control = lr_for_control(lr, gamma)
    if not control >= 1e-300:
        raise ValueError(f"gamma must be small enough that the low-LR control's lr x m_gamma is positive "
                         f"(lr {lr:g} x m_gamma = {control:g} at gamma = {gamma!r}); lower --gamma or pass --no-low-lr")


def sweep_variants(base: TrainSpec, group_sizes: Sequence[int], gammas: Sequence[float],
                   methods: Sequence[str] | None = None, low_lr_control: bool = True) -> list[TrainSpec]:
    """Every (method, N, gamma) combination, plus for each gamma > 0 the unweighted method at lr * m_gamma."""
    methods = list(methods) if methods else [base.method]
    specs = []
    for method in methods:
        for n in group_sizes:
            for gamma in gammas:
                specs.append(replace(base, method=method, group_size=int(n), gamma=float(gamma), variant=""))
                if low_lr_control and gamma > 0:
                    _check_control_lr(base.lr, gamma)
                    specs.append(replace(base, method=method, group_size=int(n), gamma=0.0,
                                         lr=lr_for_control(base.lr, gamma),
                                         variant=f"{method.upper()} low-LR (x m_{gamma:g})"))
    return specs


def run_sweep(population: Population, specs: Iterable[TrainSpec], device: str = "auto",
              progress: bool = False, executor=None, on_variant=None):
    """Concatenate `simulate_population` over `specs` (one tqdm bar over the variants)."""
    return sweep_with(simulate_population, population, specs, device, progress, executor, on_variant)


def sweep_with(simulate, population, specs: Iterable[TrainSpec], device: str, progress: bool, executor=None,
               on_variant=None):
    """Concatenate simulate(population, spec, ...) over `specs` (one tqdm bar over the variants). With an
    `executor` (sim.executor) of kind ray each variant is a Ray task (its own generator, seeded from its
    spec: the same numbers wherever it runs), concatenated in the order of `specs`. `on_variant(index,
    frame)` sees each variant as it finishes (the CLI saves there, so an interrupted sweep resumes)."""
    import pandas as pd
    from fgrpo_sim.progress import bar as progress_bar

    specs = list(specs)
    if executor is not None and executor.is_ray:
        from fgrpo_sim.sim.executor import ray_session, run_on_ray

        finished = {}

        def keep(index, frame):
            finished[index] = frame
            if on_variant is not None:
                on_variant(index, frame)

        with ray_session(executor, device) as (dev, gpus):
            run_on_ray(simulate, [(population, spec, dev) for spec in specs], keep,
                       executor=executor, gpus=gpus, progress=progress, desc="variants")
        return pd.concat([finished[i] for i in range(len(specs))], ignore_index=True)
    frames = []
    for index, spec in enumerate(progress_bar(specs, progress=progress, desc="variants")):
        frames.append(simulate(population, spec, device=device, progress=progress,
                               progress_desc=f"N={spec.group_size} {spec.variant or _default_variant(spec)}"))
        if on_variant is not None:
            on_variant(index, frames[-1])
    return pd.concat(frames, ignore_index=True)


def final_summary(frame, bucket: str = "all"):
    """Mean over runs of the last evaluation of each variant and N (one row each)."""
    return last_evaluation_means(frame[frame["bucket"] == bucket])


def last_evaluation_means(rows):
    """Mean over runs of the last evaluation of each (variant, N, method) in `rows` (one bucket, one split)."""
    rows = rows[rows["step"] == rows.groupby(["variant", "N", "method"])["step"].transform("max")]
    keys = ["method", "variant", "N", "gamma", "lr"]
    return rows.groupby(keys, sort=False).mean(numeric_only=True).drop(columns=["run", "step"]).reset_index()


def rare_mass_at_equal_pass1(frame, bucket: str = "all"):
    """(level, {variant: rare mass kept}) when each variant's mean pass@1 curve reaches a common level.

    The level is the lowest final pass@1 among the variants, so every curve reaches it (curves are
    interpolated linearly between evaluations). It asks the paper's question "is focal weighting more
    than a smaller step?" at equal accuracy rather than at equal step count. Use one N per call.
    """
    import numpy as np

    rows = frame[frame["bucket"] == bucket]
    curves = rows.groupby(["variant", "step"])[["pass@1", "rare_mass_retained"]].mean()
    level = float(min(c["pass@1"].iloc[-1] for _, c in curves.groupby(level=0)))
    return level, {v: float(np.interp(level, c["pass@1"], c["rare_mass_retained"])) for v, c in curves.groupby(level=0)}


__all__ = ["rare_mass_at_equal_pass1", "PopulationSpec", "Population", "TrainSpec", "StepBatch", "make_population", "simulate_population",
           "population_loss", "group_rewards", "lemma31_tail_miss", "sweep_variants", "run_sweep",
           "lr_for_control", "final_summary", "resolve_device", "METHODS", "OPTIMIZERS", "TRAINING_METRICS"]
