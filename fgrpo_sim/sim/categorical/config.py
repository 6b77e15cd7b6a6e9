"""Settings of the categorical simulation (paper Sec. 5.1 / App. J), with what the paper leaves open made explicit."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING

from fgrpo_sim.validation import check_choice, check_integer, check_range

if TYPE_CHECKING:
    import torch

SURROGATES = ("distinct", "draws", "logprob")
OPTIMIZERS = ("sgd", "adam", "adamw")
DTYPES = ("float32", "float64")
#: Largest |reward| per state dtype: ~sqrt(largest float) / 16, so a squared gradient stays finite.
REWARD_LIMITS = {"float32": 1e18, "float64": 1e152}

PAPER_GROUP_SIZES = tuple(2**k for k in range(1, 18))  # 2 .. 131072
PAPER_GAMMAS = (0.0, 1.0)
PAPER_SEEDS = (0, 1, 2, 3)

# Fields that say which runs to make (one row per (group size, gamma, seed)); every other field is
# part of the "setting", hashed into `config_id` so that resumed tables never mix settings.
RUN_GRID_FIELDS = ("group_sizes", "gammas", "seeds")
EXECUTION_FIELDS = ("device", "sampler", "chunk_runs")


def resolve_device(device: str) -> torch.device:
    """`auto` -> CUDA when available, else CPU; anything else is passed to torch.device."""
    import torch  # here, not at the top: reading a config must not load torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda"):  # mps, meta, xpu, ...: the simulators are CPU/CUDA code
        raise ValueError(f"device must be auto, cpu, cuda or cuda:K, got {device!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device must be auto or cpu on this machine (no CUDA), got {device!r}")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"device must name one of the {torch.cuda.device_count()} CUDA devices here "
                         f"(cuda:0 .. cuda:{torch.cuda.device_count() - 1}), got {device!r}")
    return dev


@dataclass(frozen=True)
class CategoricalConfig:
    """One categorical-simulation experiment: a softmax policy over `num_actions` actions.

    Actions are laid out as [anchor, other correct ..., incorrect ...]: index 0 is the anchor, indices
    below `num_correct` are correct. Defaults are the paper's (App. J) where it states them; the
    surrogate (logprob) and the optimizer details (AdamW, eps 1e-8, no weight decay) are our choice:
    of 24 settings studied (docs/categorical.md), logprob with AdamW at weight decay 0 is the only
    family that shows all three claims of Fig 2. The paper describes a linear surrogate in p instead.

    surrogate:
      distinct  L = (g/N) sum over DISTINCT sampled actions of R_i p_i (Hu et al. / paper Sec. 2.3);
                logit gradient (g/N) p_i (R_i 1[c_i>0] - S_R).
      draws     L = (g/N) sum over the N draws of (R_j - mean R) p_{a_j} (paper App. J, duplicates count).
      logprob   L = (g/N) sum over the N draws of (R_j - mean R) log p_{a_j} (policy gradient, Dr. GRPO advantages).
    g = (1 - mu_hat)^gamma is the focal weight of the group (mu_hat = correct draws / N; with focal_smoothing
    alpha > 0, (correct draws + alpha) / (N + 2 alpha) inside g).
    optimizer: sgd (L2 weight decay), adam (L2 weight decay added to the gradient), adamw (decoupled decay),
    all minimising -L over the logits.
    """

    num_actions: int = 128_000
    num_correct: int = 10_000
    anchor_logit: float = 5.0
    correct_logit: float = 3.0
    incorrect_logit: float = 0.0
    reward_correct: float = 1.0
    reward_wrong: float = -1.0
    steps: int = 1000
    group_sizes: tuple[int, ...] = PAPER_GROUP_SIZES
    gammas: tuple[float, ...] = PAPER_GAMMAS
    focal_smoothing: float = 0.0  # alpha of the weight's estimate (X + alpha) / (N + 2 alpha); 0 = the paper's X / N
    seeds: tuple[int, ...] = PAPER_SEEDS
    surrogate: str = "logprob"  # the only surrogate that shows all three Fig 2 claims (docs/categorical.md)
    optimizer: str = "adamw"
    lr: float = 1e-2
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0
    stride: int = 10
    dtype: str = "float32"
    device: str = "auto"
    sampler: str = "auto"
    chunk_runs: int = 68
    metadata: dict = field(default_factory=dict, compare=False)  # free-form labels copied into the table

    def __post_init__(self) -> None:
        check_integer("num_actions", self.num_actions, 2, 2**31 - 1)
        check_integer("num_correct", self.num_correct, 1, self.num_actions - 1)
        for name in ("anchor_logit", "correct_logit", "incorrect_logit"):
            check_range(name, getattr(self, name), -50.0, 50.0)
        check_choice("dtype", self.dtype, DTYPES)
        # The update squares gradients of size up to |R_c - R_w| (Adam's second moment): rewards beyond
        # sqrt(max float) / 16 overflow it to inf and the run silently stops learning; spans whose square
        # is below the smallest normal float vanish the same way.
        big = REWARD_LIMITS[self.dtype]
        check_range("reward_correct", self.reward_correct, -big, big)
        check_range("reward_wrong", self.reward_wrong, -big, self.reward_correct, high_open=True)
        if not self.reward_correct - self.reward_wrong >= 1.0 / big:
            raise ValueError(f"reward_correct - reward_wrong must be >= {1.0 / big:g} in {self.dtype} (its square "
                             f"underflows below), got {self.reward_correct - self.reward_wrong!r}"
                             + ("; use --dtype float64" if self.dtype == "float32" else ""))
        check_integer("steps", self.steps, 0, 10**7)
        if len(self.group_sizes) == 0 or len(self.gammas) == 0 or len(self.seeds) == 0:
            raise ValueError("group_sizes, gammas and seeds must each hold at least one value")
        check_integer("group_sizes", list(self.group_sizes), 1, 2**31 - 1)
        check_range("gammas", list(self.gammas), 0.0, 100.0)
        check_range("focal_smoothing", self.focal_smoothing, 0.0, math.inf, high_open=True)
        check_integer("seeds", list(self.seeds), 0, 2**62)
        check_choice("surrogate", self.surrogate, SURROGATES)
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_range("lr", self.lr, 0.0, 1e3, low_open=True)
        check_range("beta1", self.beta1, 0.0, 1.0, high_open=True)
        check_range("beta2", self.beta2, 0.0, 1.0, high_open=True)
        check_range("eps", self.eps, 0.0, 1.0)
        check_range("weight_decay", self.weight_decay, 0.0, 1.0 / self.lr)
        check_integer("stride", self.stride, 1, 10**7)
        check_choice("dtype", self.dtype, DTYPES)
        check_choice("sampler", self.sampler, ("auto", "native", "torch"))
        check_integer("chunk_runs", self.chunk_runs, 1, 10**6)
        if self.optimizer in ("adam", "adamw") and self.eps == 0.0 and self.dtype == "float32":
            raise ValueError("eps must be > 0 with dtype float32 (use dtype float64 for eps = 0)")
        object.__setattr__(self, "group_sizes", tuple(int(n) for n in self.group_sizes))
        object.__setattr__(self, "gammas", tuple(float(g) for g in self.gammas))
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))

    def runs(self) -> list[tuple[int, float, int]]:
        """All (group_size, gamma, seed) runs, ordered seed-major so a chunk holds every N of one seed."""
        return [(n, g, s) for s in self.seeds for g in self.gammas for n in self.group_sizes]

    def setting(self) -> dict:
        """The fields that change results (everything but which runs, where and how fast)."""
        skip = set(RUN_GRID_FIELDS) | set(EXECUTION_FIELDS) | {"metadata"}
        if self.focal_smoothing == 0.0:  # the paper's estimate keeps the ids of tables written before alpha existed
            skip.add("focal_smoothing")
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}

    def backend(self) -> str:
        """The backend `sampler` resolves to on `device` here: native or torch."""
        import warnings

        from fgrpo_sim.sim.categorical.sampling import resolve_sampler

        with warnings.catch_warnings():  # the fallback warning belongs to the run, not to every id lookup
            warnings.simplefilter("ignore")
            return resolve_sampler(self.sampler, resolve_device(self.device))

    def config_id(self) -> str:
        """Short hash of `setting()`: rows with equal config_id come from the same simulation setting.

        The torch backend draws other random numbers than the native one (same law, other streams), so
        it is part of the hash: a resume never mixes the two. Native ids hash `setting()` alone.
        """
        setting = self.setting()
        if self.backend() == "torch":
            setting["backend"] = "torch"
        text = json.dumps(setting, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def with_(self, **changes) -> "CategoricalConfig":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)

    def initial_masses(self) -> dict:
        """The policy at step 0, from the initial logits (float64): Q_pos, the anchor's probability and
        `tau`, the probability of one other (rare) correct action. With the defaults Q_pos = 0.630075
        and tau = 6.2967e-5; the paper rounds them to mu = 0.64 and tau = 6.3e-5 (Fig. 5 caption)."""
        top = max(self.anchor_logit, self.correct_logit, self.incorrect_logit)  # shift: no overflow
        anchor = math.exp(self.anchor_logit - top)
        correct = math.exp(self.correct_logit - top)
        incorrect = math.exp(self.incorrect_logit - top)
        total = anchor + (self.num_correct - 1) * correct + (self.num_actions - self.num_correct) * incorrect
        q_pos = (anchor + (self.num_correct - 1) * correct) / total
        return {"q_pos": q_pos, "p_anchor": anchor / total, "tau": correct / total}
