"""Group-size study (issues 21, 28): does the shared-strategy population show Table 2's dip in pass@256?

One batched engine trains every (population draw, rare share, learning rate, N, variant, batch seed) row of
one chunk (an optimizer x parametrisation x population variant) at once on the shared-strategy population
of `population_shared` (prompts draw on one global logit vector s; rare-only prompts are solved only by rare
strategies). With `rare_correct_prob = 1` the rare strategies are correct on every common-solvable prompt,
so for those prompts they are exactly Lemma 3.1's subset E (tau = their mass, rho = tau / mu) and an active
group that samples none of them is the lemma's tail miss: its update lowers every rare strategy, hence the
pass@256 of the rare-only prompts, which share those logits. With `rare_correct_prob` below the common
strategies' 0.5, the rare strategies are no longer the globally best ones (the "rare-worse" variant).

Parametrisation (issue 28; `sim.parametrisation`): s = M theta with M the axis map (one parameter per
strategy), a random orthogonal map, or a dense random map into 4K parameters; theta0 is the least-norm
solution, so every parametrisation starts from the same policy. M is drawn from the population's seed,
so the spread over population draws includes the map's.

Why one engine instead of `simulate_shared_population` per setting: rows differ in N, gamma, learning
rate, step count and population, which that simulator cannot batch. For one-token rollouts a group
enters the loss only through its counts c_k per strategy, so N only sets the counts' total (exact
multinomial counts, cost O(N + K) per group: the sampler of `sim.categorical.sampling`). The advantages come from the core
(`core.grpo_advantages` -> `core.group_success_rate` -> `core.focal_advantages` on the N + 1 possible
reward vectors of each N, looked up by the group's correct count X), and the logit gradient of the
core's token-mean loss at ratio 1 is written out: d/dz [-(1/(B N)) sum_k c_k A_k log p_k] =
-(c A - p sum(c A)) / (B N), then g_theta = M^T g_s. Tests tie both to `shared_population_loss`
(autograd through `core.policy_loss`), and the per-row Adam to `torch.optim.Adam`.

Device: CPU or CUDA (`device`). The step loop never reads a tensor back to the host: which rows are still
training and which are due an evaluation follow from the host-side step schedule (rows sorted by their
step count, so the active rows are a prefix), and finiteness is checked when an evaluation is recorded.

Views: "equal-steps" (the paper's Table 2: same steps and prompts per step for every N) and
"equal-rollouts" (steps = steps x reference_n / N, at least 1).

Randomness (issues 36, 44): keyed by the row, never by its place in the run. Every (setting, population,
batch seed) group has a torch generator seeded from a hash of its own values (`stream_seed`: spec.seed,
rare_correct_prob, optimizer, view, rare mass, base lr, population, batch seed) that draws only the group's
prompt batches (a fixed number of draws per step, whatever rows the group holds). Every row draws its counts
from its own counter-based stream (`row_keys`: that hash with the row's N and variant, one key per prompt slot
of the batch; the step selects the stream), through the categorical simulator's exact multinomial samplers
(`sim.categorical.sampling`: the C kernel on CPU, the torch one elsewhere). So a row's numbers are the same
whatever other settings, populations, batch seeds, N values or gammas share the run. Common random numbers:
the rows of one group (its N values and variants) share their prompt batches and nothing else; their counts
are independent draws. The parametrisation is left out of both keys on purpose: the maps of one setting share
their draws, so axis and orthogonal stay identical under SGD. The engine is still one batched step per chunk.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch

from fgrpo_sim import core
from fgrpo_sim.sim.parametrisation import PARAMETRISATIONS, initial_parameters, logit_map
from fgrpo_sim.sim.population_shared import SharedPopulationSpec, make_shared_population
from fgrpo_sim.validation import check_choice, check_integer, check_range

VIEWS = ("equal-steps", "equal-rollouts")
DEFAULT_POPULATION = SharedPopulationSpec(rare_correct_prob=1.0, rare_strategies=4)
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
METRICS = ("pass@1", "pass@256", "rare_only_pass@256", "rare_strategy_mass")
DEFAULT_LRS = {"adam": (0.01, 0.03), "sgd": (2.0, 6.0)}  # the issue-21 lr and 3x it, fixed before the study
#: rows per evaluation pass ([rows, prompts, K] float64 tensors stay below ~20 MB)
EVAL_ROWS = 512


@dataclass(frozen=True)
class GroupSizeStudySpec:
    group_sizes: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
    rare_masses: tuple[float, ...] = (0.005, 0.02, 0.1)  # shared prior mass on the rare strategies
    gammas: tuple[float, ...] = (0.5, 1.0)  # F-GRPO arms (GRPO always runs)
    focal_smoothing: float = 0.0  # alpha of the F-GRPO arms' weight estimate (X + alpha) / (N + 2 alpha); 0 = X / N
    low_lr: bool = True  # GRPO at lr x m_gamma for each gamma (the paper's Table 3 control)
    # Table 3's entropy bonus and KL-to-start controls (sim.regularisers): one GRPO row per coefficient; none by
    # default, and then the trainer never computes them (the rows are bit for bit those of the study without)
    entropy_coefs: tuple[float, ...] = ()
    kl_coefs: tuple[float, ...] = ()
    # DS-GRPO (differential smoothing, Eq. 6 of arXiv 2511.19942): one GRPO row per (gamma_p, gamma_n); none by default
    ds_coefs: tuple[tuple[float, float], ...] = ()
    views: tuple[str, ...] = ("equal-steps",)
    populations: int = 10  # population draws (population seeds 0 .. populations - 1; each draws its own map M)
    # the first population seed: draws offset .. offset + populations - 1 (a row is keyed by its seed, so population
    # 40 of offset 40 is population 40 of offset 0; issue 48's robustness check draws fresh populations this way)
    population_offset: int = 0
    seeds: int = 2  # batch seeds per population (the prompt batches and rollouts)
    steps: int = 200
    reference_n: int = 8
    prompt_batch: int = 32
    optimizers: tuple[str, ...] = ("adam", "sgd")
    parametrisations: tuple[str, ...] = PARAMETRISATIONS
    adam_lrs: tuple[float, ...] = DEFAULT_LRS["adam"]
    sgd_lrs: tuple[float, ...] = DEFAULT_LRS["sgd"]
    eval_every: int = 20
    seed: int = 0  # the training randomness (prompt batches, counts)
    population: SharedPopulationSpec = field(default_factory=lambda: DEFAULT_POPULATION)

    def validate(self) -> "GroupSizeStudySpec":
        check_integer("group_sizes", np.asarray(self.group_sizes), 1, 1_000_000)
        check_range("rare_masses", np.asarray(self.rare_masses), 0.0, 1.0 - self.population.common_mass,
                    low_open=True, high_open=True)
        check_range("gammas", self.gammas, 0.0, 20.0, low_open=True)  # check_range converts: a text value is named
        check_range("focal_smoothing", self.focal_smoothing, 0.0, np.inf, high_open=True)
        for name in ("entropy_coefs", "kl_coefs", "ds_coefs"):
            values = tuple(tuple(v) if name == "ds_coefs" else v for v in getattr(self, name))
            if name == "ds_coefs" and any(len(v) != 2 for v in values):
                raise ValueError(f"ds_coefs must list (gamma_p, gamma_n) pairs, got {values}")
            # DS-GRPO's pair may hold a zero (one side only), not two; entropy and KL coefficients are positive
            check_range(name, values, 0.0, 10.0, low_open=name != "ds_coefs")
            if name == "ds_coefs" and any(not any(v) for v in values):
                raise ValueError(f"ds_coefs must hold a positive gamma_p or gamma_n in each pair, got {values}")
            if len(set(values)) != len(values):
                raise ValueError(f"{name} must list each value once, got {values}")
        for view in self.views:
            check_choice("views", view, VIEWS)
        for opt in self.optimizers:
            check_choice("optimizers", opt, ("adam", "sgd"))
        for kind in self.parametrisations:
            check_choice("parametrisations", kind, PARAMETRISATIONS)
        for name in ("group_sizes", "rare_masses", "gammas", "views", "optimizers", "parametrisations",
                     "adam_lrs", "sgd_lrs"):
            values = getattr(self, name)
            if len(values) == 0 or len(set(values)) != len(values):
                raise ValueError(f"{name} must list at least one value, each once, got {tuple(values)}")
        # the verdicts are paired bootstrap intervals over population draws: one draw has none (issue 31)
        check_integer("populations", self.populations, 2, 10_000)
        check_integer("population_offset", self.population_offset, 0, 10**9)
        check_integer("seeds", self.seeds, 1, 10_000)
        check_integer("steps", self.steps, 1, 1_000_000)
        check_integer("reference_n", self.reference_n, 1, 1_000_000)
        check_integer("prompt_batch", self.prompt_batch, 1, self.population.num_prompts)
        check_range("adam_lrs", self.adam_lrs, 0.0, 10.0, low_open=True)
        check_range("sgd_lrs", self.sgd_lrs, 0.0, 1000.0, low_open=True)
        check_integer("eval_every", self.eval_every, 1, None)
        check_integer("seed", self.seed, 0, 2**62)
        self.population.validate()
        return self

    def lrs(self, optimizer: str) -> tuple[float, ...]:
        return self.adam_lrs if optimizer == "adam" else self.sgd_lrs


def variants(spec: GroupSizeStudySpec, lr: float) -> list[tuple[str, float, float]]:
    """(name, gamma, lr): GRPO, F-GRPO per gamma, and the low-LR control per gamma."""
    from fgrpo_sim.sim.population import lr_for_control

    out = [("GRPO", 0.0, lr)]
    # alpha in the name: a table holding two alphas' chunks never pools their F-GRPO rows (gamma 0 has no alpha)
    smoothed = f" alpha={spec.focal_smoothing:g}" if spec.focal_smoothing else ""
    out += [(f"F-GRPO gamma={g:g}{smoothed}", float(g), lr) for g in spec.gammas]
    if spec.low_lr:
        out += [(f"GRPO low-LR (x m_{g:g})", 0.0, lr_for_control(lr, g)) for g in spec.gammas]
    out += [(name, 0.0, lr) for name in regularised(spec)]
    return out


def regularised(spec: GroupSizeStudySpec) -> dict[str, tuple[float, float, float, float]]:
    """The entropy, KL and DS-GRPO control rows' variant names -> (entropy, KL, DS gamma_p, DS gamma_n)."""
    out = {f"GRPO entropy={c:g}": (float(c), 0.0, 0.0, 0.0) for c in spec.entropy_coefs}
    out.update({f"GRPO KL={c:g}": (0.0, float(c), 0.0, 0.0) for c in spec.kl_coefs})
    out.update({f"GRPO DS={p:g},{n:g}": (0.0, 0.0, float(p), float(n)) for p, n in spec.ds_coefs})
    return out


def chunks(spec: GroupSizeStudySpec) -> list[tuple[str, str]]:
    """(optimizer, parametrisation): the units the study trains (and saves, and resumes) one at a time."""
    return [(opt, kind) for opt in spec.optimizers for kind in spec.parametrisations]


#: names how the draws are derived; part of every chunk's fingerprint, so a resume never mixes seedings
SEEDING = "per-row-stream-v2"
#: the row fields that key a group's prompt-batch generator (with spec.seed); see the module docstring
STREAM_FIELDS = ("rare_correct_prob", "optimizer", "view", "rare_mass", "base_lr", "population", "seed")


def _fingerprint_value(value):
    """A value json cannot write: a numpy number as the Python number it equals (np.int64(4) fingerprints as 4, so a
    spec built from numpy arrays resumes the table its plain twin wrote; as text it was "4", another chunk id)."""
    return value.item() if isinstance(value, np.generic) else str(value)


def chunk_id(spec: GroupSizeStudySpec, optimizer: str, parametrisation: str) -> str:
    """Names a chunk and fingerprints everything that decides its rows, so resume reuses only equal work."""
    settings = asdict(replace(spec, optimizers=(optimizer,), parametrisations=(parametrisation,),
                              adam_lrs=spec.adam_lrs if optimizer == "adam" else (),
                              sgd_lrs=spec.sgd_lrs if optimizer == "sgd" else ()))
    settings["seeding"] = SEEDING
    if settings["population_offset"] == 0:  # likewise: seeds from 0 keep the fingerprints recorded before the offset
        del settings["population_offset"]
    if settings["focal_smoothing"] == 0.0:  # the paper's estimate keeps the fingerprints recorded before alpha existed
        del settings["focal_smoothing"]
    for name in ("entropy_coefs", "kl_coefs", "ds_coefs"):  # likewise the fingerprints recorded before the controls existed
        if not settings[name]:
            del settings[name]
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=_fingerprint_value).encode()).hexdigest()[:12]
    return f"{chunk_key(spec.population.rare_correct_prob, optimizer, parametrisation)}#{digest}"


def chunk_key(rare_correct_prob: float, optimizer: str, parametrisation: str) -> str:
    return f"rare_correct_prob={float(rare_correct_prob):g}/{optimizer}/{parametrisation}"


def study_rows(spec: GroupSizeStudySpec, optimizer: str | None = None, parametrisation: str | None = None):
    """One row per trained model: optimizer, parametrisation, view, rare mass, population, N, variant, gamma,
    lr, seed, steps (and `pop`, the index of its (rare mass, population) draw). Restricted to one chunk when
    optimizer and parametrisation are given."""
    import pandas as pd

    rows = []
    for opt, kind in chunks(spec):
        if optimizer is not None and (opt, kind) != (optimizer, parametrisation):
            continue
        for view in spec.views:
            for rare_index, rare in enumerate(spec.rare_masses):
                for population in population_seeds(spec):
                    for n in spec.group_sizes:
                        steps = spec.steps if view == "equal-steps" else max(1, round(spec.steps * spec.reference_n / n))
                        for lr in spec.lrs(opt):
                            for name, gamma, row_lr in variants(spec, float(lr)):
                                for seed in range(spec.seeds):
                                    rows.append(dict(
                                        rare_correct_prob=float(spec.population.rare_correct_prob), optimizer=opt,
                                        parametrisation=kind, view=view, rare_mass=float(rare), population=population,
                                        pop=rare_index * spec.populations + population - spec.population_offset, N=int(n), base_lr=float(lr),
                                        variant=name, gamma=gamma, lr=float(row_lr), seed=seed, steps=int(steps)))
    return pd.DataFrame(rows)


def stream_seed(spec: GroupSizeStudySpec, row) -> int:
    """The prompt-batch generator seed of one (setting, population, batch seed): a hash of its own values, so it
    does not depend on which other rows share the run. `row` maps STREAM_FIELDS to values (a study_rows line)."""
    values = [int(spec.seed), float(row["rare_correct_prob"]), str(row["optimizer"]), str(row["view"]),
              float(row["rare_mass"]), float(row["base_lr"]), int(row["population"]), int(row["seed"])]
    return _hash64(repr(values))


def row_keys(spec: GroupSizeStudySpec, table) -> torch.Tensor:
    """int64 [rows, prompt_batch]: the count streams of each row of `table` (study_rows lines), one per prompt
    slot: a hash of the row's group (`stream_seed`), N and variant, then of the slot. Nothing else in the run
    enters, so adding N values or changing the gammas leaves every other row's counts as they were."""
    from fgrpo_sim.sim.categorical.sampling import run_keys

    own = [_hash64(repr([stream_seed(spec, row), int(row["N"]), str(row["variant"])]))
           for _, row in table.iterrows()]
    return torch.stack([run_keys(own, salt=slot) for slot in range(spec.prompt_batch)], 1)


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") & 0x7FFF_FFFF_FFFF_FFFF


def population_seeds(spec: GroupSizeStudySpec) -> range:
    """The population draws' seeds: population_offset .. population_offset + populations - 1."""
    return range(spec.population_offset, spec.population_offset + spec.populations)


def population_spec(spec: GroupSizeStudySpec, rare_mass: float, population: int) -> SharedPopulationSpec:
    """Population draw `population` (its seed) at one rare share."""
    return replace(spec.population, rare_mass=float(rare_mass), seed=int(population))


def advantage_tables(pairs, n_max: int, focal_smoothing: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """For each (N, gamma): the core's focal GRPO advantage of a correct and of a wrong rollout in a group
    with X = 0..N correct ([pairs, n_max + 1] each, zero where the group has no such rollout); the weight's
    estimate smoothed by `focal_smoothing` (core.focal_advantages)."""
    a_correct = torch.zeros(len(pairs), n_max + 1, dtype=torch.float64)
    a_wrong = torch.zeros_like(a_correct)
    for i, (n, gamma) in enumerate(pairs):
        rewards = (torch.arange(n)[None, :] < torch.arange(n + 1)[:, None]).to(torch.float64)  # row X: X ones first
        focal = core.focal_advantages(core.grpo_advantages(rewards), core.group_success_rate(rewards), gamma,
                                      focal_smoothing)
        a_correct[i, 1:n + 1] = focal[1:, 0]
        a_wrong[i, :n] = focal[:n, n - 1]
    return a_correct, a_wrong


class RowCounts:
    """Each step's counts [active rows, B, K] (float64, exact integers), row r slot b ~ Multinomial(N_r, probs),
    drawn from the stream (row_keys[r, b], step): the C kernel on CPU when it compiles, else the torch sampler
    (one batched search per N, in slices of at most SLICE_DRAWS draws). Neither reads the device."""

    SLICE_DRAWS = 1 << 22

    def __init__(self, n_host: np.ndarray, keys: torch.Tensor, dev, sampler: str = "auto"):
        from fgrpo_sim.sim.categorical.sampling import resolve_sampler

        self.sampler = resolve_sampler(sampler, dev)
        batch = keys.shape[1]
        self.n_host, self.batch = n_host.astype(np.int64), batch
        self.n_flat = torch.as_tensor(self.n_host).repeat_interleave(batch)  # the native sampler's host inputs
        self.keys_flat = keys.reshape(-1).contiguous()
        self.keys = keys.to(dev)
        # rows of each N, ascending (the active rows are a prefix, so each N's active rows are a prefix of these)
        self.by_n = {int(n): np.nonzero(self.n_host == n)[0] for n in np.unique(self.n_host)}
        self._plans: dict[int, list] = {}

    def draw(self, probs: torch.Tensor, active: int, step: int) -> torch.Tensor:
        from fgrpo_sim.sim.categorical import sampling

        rows, batch, k = probs.shape
        if self.sampler == "native":
            counts, _ = sampling.sample_counts_native(probs.reshape(-1, k), self.n_flat[:active * batch],
                                                      self.keys_flat[:active * batch], step)
            return counts.view(rows, batch, k).to(probs.dtype)
        counts = torch.empty(probs.shape, dtype=probs.dtype, device=probs.device)
        for n, idx in self._slices(active, probs.device):
            drawn = sampling.sample_counts_equal_n(probs[idx].reshape(-1, k), n, self.keys[idx].reshape(-1), step)
            counts[idx] = drawn.view(-1, batch, k).to(probs.dtype)
        return counts

    def _slices(self, active: int, device) -> list[tuple[int, torch.Tensor]]:
        """(N, row indices on the device) per slice of the first `active` rows; built once per prefix (the
        prefix changes only where a row's step count ends), so a step copies no index to the device."""
        if active not in self._plans:
            plan = []
            for n, rows_n in self.by_n.items():
                rows_n = rows_n[:int(np.searchsorted(rows_n, active))]
                per_slice = max(1, self.SLICE_DRAWS // (n * self.batch))
                plan += [(n, torch.as_tensor(rows_n[start:start + per_slice], device=device))
                         for start in range(0, rows_n.size, per_slice)]
            self._plans[active] = plan
        return self._plans[active]


def logit_gradient(probs, counts, a_correct, a_wrong, correct, group_size) -> torch.Tensor:
    """d/dz of each row's token-mean loss -(1/(B N)) sum c_k A_k log p_k: [rows, B, K] -> summed over B."""
    weighted = counts * torch.where(correct, a_correct[..., None], a_wrong[..., None])
    grad = -(weighted - probs * weighted.sum(-1, keepdim=True))
    return grad.sum(1) / (probs.shape[1] * group_size.to(probs.dtype))[:, None]


class RowAdam:
    """torch.optim.Adam's update (default betas, eps, no weight decay), one learning rate per row.

    `step` updates a prefix of the rows (those still training), all of which have taken the same number of
    steps, so the bias corrections are host numbers and the update never reads the device.
    """

    def __init__(self, shape, lr: torch.Tensor):
        self.m = torch.zeros(shape, dtype=lr.dtype, device=lr.device)
        self.v = torch.zeros_like(self.m)
        self.lr = lr

    def step(self, params: torch.Tensor, grad: torch.Tensor, active: int, t: int) -> None:
        b1, b2 = ADAM_BETAS
        m, v = self.m[:active], self.v[:active]
        m.mul_(b1).add_(grad, alpha=1 - b1)
        v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
        denom = (v / (1 - b2 ** t)).sqrt_().add_(ADAM_EPS)
        params[:active] -= (self.lr[:active, None] / (1 - b1 ** t)) * m / denom


def sgd_step(params: torch.Tensor, grad: torch.Tensor, lr: torch.Tensor, active: int) -> None:
    params[:active] -= lr[:active, None] * grad


def initial_mu_rho(population) -> tuple[np.ndarray, np.ndarray]:
    """Per training prompt: initial correct mass mu and rare share rho = (mass on correct rare strategies) / mu."""
    p = population.initial_probs("train")
    correct = population.correct["train"]
    mu = (p * correct).sum(1)
    tau = (p * (correct & (population.kind == 1)[None])).sum(1)
    return mu, tau / mu


def predicted_dips(spec: GroupSizeStudySpec) -> dict[float, int]:
    """planner.predict_dip per rare share, on the initial (mu, rho) of the training prompts of every
    population draw pooled (the parametrisation does not change the initial policy, so one prediction)."""
    from fgrpo_sim.planner import empirical_difficulty, predict_dip

    out = {}
    for rare in spec.rare_masses:
        pairs = [initial_mu_rho(make_shared_population(population_spec(spec, rare, p)))
                 for p in population_seeds(spec)]
        mu, rho = np.concatenate([m for m, _ in pairs]), np.concatenate([r for _, r in pairs])
        keep = rho > 0  # prompts without a correct rare strategy cannot miss one
        out[float(rare)] = predict_dip(empirical_difficulty(mu[keep], "training prompts"), rho[keep],
                                       spec.group_sizes).n_star
    return out


def run_study(spec: GroupSizeStudySpec = GroupSizeStudySpec(), progress: bool = False, device: str = "cpu",
              skip: set | frozenset = frozenset(), on_chunk=None, executor=None):
    """Train every row of `study_rows(spec)`, one (optimizer, parametrisation) chunk at a time, float64 on
    `device` (auto, cpu, cuda). Returns a tidy DataFrame, one line per (row, evaluation): the row's settings,
    `chunk` (its `chunk_id`), `step`, `rollouts` (= step x B x N), and per split (train_, heldout_) the
    METRICS, plus `train_dnll_rare`. Chunks whose id is in `skip` are not trained; `on_chunk(frame)` is
    called with each finished chunk's rows (the CLI saves there, so an interrupted study resumes). With an
    `executor` (sim.executor) of kind ray each chunk is a Ray task and on_chunk is called as chunks finish, in
    any order; the returned table keeps the chunks' order."""
    import pandas as pd

    spec.validate()
    todo = [(opt, kind) for opt, kind in chunks(spec) if chunk_id(spec, opt, kind) not in skip]
    frames: dict[int, pd.DataFrame] = {}

    def keep(index: int, frame) -> None:
        frames[index] = frame
        if on_chunk is not None:
            on_chunk(frame)

    if executor is not None and executor.is_ray:
        from fgrpo_sim.sim.executor import ray_session, run_on_ray

        with ray_session(executor, device) as (dev, gpus):
            run_on_ray(train_chunk, [(spec, opt, kind, dev) for opt, kind in todo], keep, executor=executor,
                       gpus=gpus, progress=progress, desc="group-size chunks")
    else:
        from fgrpo_sim.sim.population import resolve_device

        dev = resolve_device(device)
        for index, (optimizer, kind) in enumerate(todo):
            keep(index, train_chunk(spec, optimizer, kind, dev, progress))
    ordered = [frames[i] for i in sorted(frames)]
    return pd.concat(ordered, ignore_index=True) if ordered else pd.DataFrame()


def train_chunk(spec: GroupSizeStudySpec, optimizer: str, kind: str, device, progress: bool = False):
    """One (optimizer, parametrisation) chunk's rows, `chunk` first: the unit a Ray task trains."""
    from fgrpo_sim.sim.population import resolve_device

    frame = _train_chunk(spec, optimizer, kind, resolve_device(str(device)), progress)
    frame.insert(0, "chunk", chunk_id(spec, optimizer, kind))
    return frame


def _population_tensors(spec: GroupSizeStudySpec, kind: str, dev):
    """Per (rare mass, population) draw: offsets, correct sets, rare-only flags, initial logits, map, theta0."""
    pops = [make_shared_population(population_spec(spec, rare, p))
            for rare in spec.rare_masses for p in population_seeds(spec)]
    seeds = [p for _ in spec.rare_masses for p in population_seeds(spec)]
    k = pops[0].kind.size
    maps = [logit_map(kind, k, s) for s in seeds]
    theta0 = np.stack([initial_parameters(m, pop.shared_init) for m, pop in zip(maps, pops)])

    def stack(get):
        return {s: torch.as_tensor(np.stack([get(p, s) for p in pops]), device=dev) for s in ("train", "heldout")}

    return dict(kind=torch.as_tensor(pops[0].kind, device=dev),
                offsets=stack(lambda p, s: p.offsets[s]), correct=stack(lambda p, s: p.correct[s]),
                rare_only={s: v == 1 for s, v in stack(lambda p, s: p.prompt_type[s]).items()},
                shared0=torch.as_tensor(np.stack([p.shared_init for p in pops]), device=dev),
                maps=None if kind == "axis" else torch.as_tensor(np.stack(maps), device=dev),
                theta0=torch.as_tensor(theta0, device=dev))


def _train_chunk(spec: GroupSizeStudySpec, optimizer: str, kind: str, dev, progress: bool, sampler: str = "auto"):
    import pandas as pd
    from fgrpo_sim.progress import bar as progress_bar

    # rows sorted by step count, longest first: the rows still training at any step are a prefix
    table = study_rows(spec, optimizer, kind).sort_values("steps", ascending=False, kind="stable").reset_index(drop=True)
    pt = _population_tensors(spec, kind, dev)
    f64 = torch.float64

    def col(name, dtype=None):
        return torch.as_tensor(table[name].to_numpy().copy(), device=dev, dtype=dtype)

    pop, n_row, lr_row = col("pop"), col("N"), col("lr", f64)
    steps_host = table["steps"].to_numpy()
    pairs = sorted({(int(n), float(g)) for n, g in zip(table["N"], table["gamma"])})
    pair_index = {pair: i for i, pair in enumerate(pairs)}
    tab = torch.as_tensor([pair_index[(int(n), float(g))] for n, g in zip(table["N"], table["gamma"])], device=dev)
    a_correct, a_wrong = (t.to(dev) for t in advantage_tables(pairs, max(n for n, _ in pairs),
                                                                               spec.focal_smoothing))
    coefs = regularised(spec)
    if coefs:  # per row (zero for the rows without a control); none at all keeps the step as it was
        from fgrpo_sim.sim.regularisers import ds_gradient, entropy_kl_gradient

        per_row = torch.as_tensor([coefs.get(v, (0.0,) * 4) for v in table["variant"]], dtype=f64, device=dev)
        entropy_row, kl_row, ds_pos_row, ds_neg_row = per_row.unbind(1)
        with_ds = bool(spec.ds_coefs)
    theta = pt["theta0"][pop].clone()  # [rows, D]
    maps = None if pt["maps"] is None else pt["maps"][pop]  # [rows, K, D]
    adam = RowAdam(theta.shape, lr_row) if optimizer == "adam" else None
    kind_t, offsets, correct, rare_only = pt["kind"], pt["offsets"], pt["correct"], pt["rare_only"]
    base_logp = torch.log_softmax(pt["shared0"][:, None, :] + offsets["train"], -1)  # [pops, P, K]
    rare_weight = base_logp.exp() * (correct["train"] & (kind_t == 1))  # App. M.2: rare-correct rollouts, base model
    records, record_rows, record_steps = [], [], []

    def logits(rows):  # s = M theta for `rows` (a slice or an index tensor)
        return theta[rows] if maps is None else torch.einsum("rkd,rd->rk", maps[rows], theta[rows])

    def evaluate(rows_host: np.ndarray, step: int):
        for start in range(0, rows_host.size, EVAL_ROWS):
            rows = torch.as_tensor(rows_host[start:start + EVAL_ROWS], device=dev)
            shared, p_rows = logits(rows), pop[rows]
            cols = []
            for split in ("train", "heldout"):
                logp = torch.log_softmax(shared[:, None, :] + offsets[split][p_rows], -1)
                q = (logp.exp() * correct[split][p_rows]).sum(-1)
                ro = rare_only[split][p_rows]
                pass256 = 1 - (1 - q) ** 256
                cols += [q.mean(1), pass256.mean(1), (pass256 * ro).sum(1) / ro.sum(1).clamp(min=1),
                         logp.exp()[..., kind_t == 1].sum(-1).mean(1)]
                if split == "train":
                    w = rare_weight[p_rows]
                    cols.append(((base_logp[p_rows] - logp) * w).sum((1, 2)) / w.sum((1, 2)))
            block = torch.stack(cols, 1)
            if not bool(torch.isfinite(block).all()):  # validation at record time, never inside a step
                # name a row that diverged (the block's first row may be another lr's, still finite)
                first = int((~torch.isfinite(block).all(1)).to(torch.uint8).argmax())
                bad = table.iloc[rows_host[start + first]]
                raise ValueError(f"lr must be small enough to keep the logits finite: {optimizer} "
                                 f"lr {bad['lr']:g} diverged by step {step} ({kind}, N = {bad['N']})")
            records.append(block)
            record_rows.append(rows_host[start:start + EVAL_ROWS])
            record_steps.extend([step] * block.shape[0])

    # one prompt-batch generator per (setting, population, batch seed) group; the counts come from each row's
    # own keyed stream (RowCounts)
    groups = table.groupby(list(STREAM_FIELDS), sort=False).indices
    gens = [torch.Generator(device=dev).manual_seed(stream_seed(spec, table.iloc[v[0]])) for v in groups.values()]
    group_of_row = torch.empty(len(table), dtype=torch.long, device=dev)
    for g, rows in enumerate(groups.values()):
        group_of_row[torch.as_tensor(rows, device=dev)] = g
    row_counts = RowCounts(table["N"].to_numpy(), row_keys(spec, table), dev, sampler)
    threads = torch.get_num_threads()
    if dev.type == "cpu":
        torch.set_num_threads(1)  # small tensors: intra-op threads only add overhead (see population.py)
    try:
        evaluate(np.arange(len(table)), 0)
        last = int(steps_host.max())
        for step in progress_bar(range(1, last + 1), progress=progress, desc=f"{optimizer} {kind}", leave=False):
            active = int(np.searchsorted(-steps_host, -step, side="right"))  # rows with steps >= step
            r = slice(0, active)
            # every group draws its prompt batch each step (finished groups too: their later draws are unused)
            chosen = torch.stack([torch.rand(spec.population.num_prompts, generator=g, device=dev) for g in gens])
            prompts = chosen.argsort(1)[:, :spec.prompt_batch][group_of_row[r]]  # [rows, B]: one batch per group
            z = logits(r)[:, None, :] + offsets["train"][pop[r][:, None], prompts]
            probs = torch.softmax(z, -1)
            counts = row_counts.draw(probs, active, step)
            corr = correct["train"][pop[r][:, None], prompts]
            x = (counts * corr).sum(-1).long()
            grad = logit_gradient(probs, counts, a_correct[tab[r][:, None], x], a_wrong[tab[r][:, None], x],
                                  corr, n_row[r])
            if coefs:
                logp = torch.log_softmax(z, -1)
                grad = grad + entropy_kl_gradient(logp, base_logp[pop[r][:, None], prompts], entropy_row[r], kl_row[r])
                if with_ds:
                    grad = grad + ds_gradient(probs, counts, logp, corr, ds_pos_row[r], ds_neg_row[r], n_row[r])
            if maps is not None:
                grad = torch.einsum("rkd,rk->rd", maps[r], grad)  # g_theta = M^T g_s
            if adam is None:
                sgd_step(theta, grad, lr_row, active)
            else:
                adam.step(theta, grad, active, step)
            due = np.nonzero((steps_host == step) | ((step % spec.eval_every == 0) & (steps_host >= step)))[0]
            if due.size:
                evaluate(due, step)
    finally:
        torch.set_num_threads(threads)
    names = [f"{s}_{m}" for s in ("train", "heldout") for m in METRICS]
    names.insert(len(METRICS), "train_dnll_rare")
    out = pd.DataFrame(torch.cat(records).cpu().numpy(), columns=names)
    out.insert(0, "step", record_steps)
    settings = table.iloc[np.concatenate(record_rows)].reset_index(drop=True).drop(columns=["pop"])
    out = pd.concat([settings, out], axis=1)
    out.insert(out.columns.get_loc("step") + 1, "rollouts", out["step"] * spec.prompt_batch * out["N"])
    return out


def final_rows(frame):
    """Each trained row's last evaluation (its own step count)."""
    return frame[frame["step"] == frame["steps"]].reset_index(drop=True)


__all__ = ["GroupSizeStudySpec", "run_study", "final_rows", "study_rows", "variants", "predicted_dips",
           "initial_mu_rho", "advantage_tables", "regularised", "RowCounts", "row_keys", "logit_gradient", "RowAdam", "chunks", "chunk_id",
           "chunk_key", "population_spec", "population_seeds", "stream_seed", "STREAM_FIELDS", "SEEDING", "VIEWS", "METRICS", "DEFAULT_POPULATION", "DEFAULT_LRS"]
