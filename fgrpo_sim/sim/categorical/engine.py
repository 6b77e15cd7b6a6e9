"""Batched categorical-policy simulator: many runs (N, gamma, seed) advance as one [runs, actions] program.

Per step and run: counts c ~ Multinomial(N, p) (exact, see `sampling`), the group's success rate
mu_hat = X / N and focal weight g = (1 - mu_hat)^gamma (from `fgrpo_sim.core`), the logit gradient of
the chosen surrogate, and one optimizer step on the logits. Nothing loops over runs or draws in
Python. The draws enter only through counts, and the surrogates only through a few per-run sums of
them (STAT_NAMES), so the dense per-action work is: exp, one sampling pass, one fused update pass.

The torch backend (any device) runs `torch_step.TorchStep`: one sampling pass for all runs whatever their N,
no host sync inside a step, and on CUDA one graph replay per step; the native backend (CPU) runs the C
kernels through `native.NativeState`.

Gradient of each surrogate (ascent direction on L; the optimizer minimises -L), with a_i from the counts:
  distinct  a_i = R_i 1[c_i > 0]          dL/dz_i = (g/N) p_i (a_i - sum_k a_k p_k)
  draws     a_i = c_i (R_i - mean R)      dL/dz_i = (g/N) p_i (a_i - sum_k a_k p_k)
  logprob   a_i = c_i (R_i - mean R)      dL/dz_i = (g/N) (a_i - p_i sum_k a_k) = (g/N) a_i   (sum_k a_k = 0)
"""

from __future__ import annotations

import math

import torch

from fgrpo_sim.core import focal_weight, success_rate_from_counts
from fgrpo_sim.sim.categorical.config import CategoricalConfig, resolve_device
from fgrpo_sim.sim.categorical.native import NativeState
from fgrpo_sim.sim.categorical.sampling import resolve_sampler, run_keys
from fgrpo_sim.sim.categorical.torch_step import CudaGraphStep, TorchStep
from fgrpo_sim.validation import check_integer

METRICS = (
    "q_pos",  # total correct mass
    "m_ret",  # retained positive mass, App. J eq. 26
    "unsampled_correct_mass",  # correct mass not hit by the latest batch (Q_upos of Prop. 3.2)
    "entropy",  # nats
    "anchor_prob",
    "frac_correct_above_start",  # share of correct actions whose probability exceeds its start value (beyond rounding)
    "worst_drop",  # largest relative loss max_a (p0 - p) / p0 over correct actions (1 = extinct)
    "mu_hat",  # success rate of the latest batch
    "focal_weight",  # its focal weight g
)


def resolve_backend(config: CategoricalConfig, device: str | None = None) -> tuple[torch.device, str]:
    """(device, backend) that runs of `config` use here; ValueError for a device or backend this machine lacks."""
    dev = resolve_device(device or config.device)
    return dev, resolve_sampler(config.sampler, dev)


def initial_logits(config: CategoricalConfig, dtype=torch.float64, device="cpu") -> torch.Tensor:
    """[K] logits: anchor, other correct, incorrect (App. J)."""
    z = torch.full((config.num_actions,), config.incorrect_logit, dtype=dtype, device=device)
    z[: config.num_correct] = config.correct_logit
    z[0] = config.anchor_logit
    return z


class CategoricalBatch:
    """State of a batch of runs sharing one setting: logits [R, K] plus optimizer moments.

    `group_sizes`, `gammas`, `seeds` are per-run sequences of equal length R. Two backends compute the
    same update: `torch` (any device; a few in-place tensor passes) and `native` (CPU; the C kernels of
    `kernel.c`, which fuse sampling statistics, gradient and optimizer into about two passes over memory).
    `cuda_graph` (torch backend on CUDA; default: on unless FGRPO_CUDA_GRAPH=0) replays each step as a graph.
    """

    def __init__(self, config: CategoricalConfig, group_sizes, gammas, seeds, device: str | None = None,
                 cuda_graph: bool | None = None):
        self.config = config
        self.device, self.backend = resolve_backend(config, device)
        self.dtype = torch.float32 if config.dtype == "float32" else torch.float64
        self.group_sizes = torch.as_tensor(list(group_sizes), dtype=torch.int64)
        self.gammas = [float(g) for g in gammas]
        self.seeds = [int(s) for s in seeds]
        runs = len(self.group_sizes)
        if not (len(self.gammas) == len(self.seeds) == runs) or runs == 0:
            raise ValueError("group_sizes, gammas and seeds must have the same non-zero length")
        check_integer("group_sizes", self.group_sizes.numpy(), 1, 2**31 - 1)
        k, c = config.num_actions, config.num_correct
        self.num_correct = c
        dev, dt = self.device, self.dtype
        z0 = initial_logits(config, torch.float64)
        self.p0_correct = torch.softmax(z0, 0)[:c].to(device=dev, dtype=dt)  # start probabilities, same for all runs
        self.logits = z0.to(device=dev, dtype=dt).expand(runs, k).contiguous()
        self.exp_avg = torch.zeros_like(self.logits) if config.optimizer != "sgd" else None
        self.exp_avg_sq = torch.zeros_like(self.logits) if config.optimizer != "sgd" else None
        self.step_count = 0
        self._keys = run_keys(self.seeds, salt=0)  # both backends: run r's draws at step t depend on (seed, t) only
        self.native = None  # work buffers are reused every step: allocating 100 MB per step costs more than the maths
        self.torch_step = None
        if self.backend == "native":
            self._n64 = self.group_sizes.to(device=dev, dtype=torch.float64)
            self._gamma_masks = {g: torch.tensor([x == g for x in self.gammas], device=dev) for g in set(self.gammas)}
            self.native = NativeState(self.logits, c, self.group_sizes)
            self.native.refresh(self.logits)
        else:
            self.torch_step = TorchStep(config, self.logits, self.exp_avg, self.exp_avg_sq, self.group_sizes.tolist(),
                                        self.gammas, self._keys)
            if cuda_graph is None:
                import os

                cuda_graph = os.environ.get("FGRPO_CUDA_GRAPH", "1") != "0"
            self._run_step = (CudaGraphStep(self.torch_step) if cuda_graph and dev.type == "cuda"
                              else self.torch_step.step)
        # "above its start" means by more than the rounding of the state's dtype
        self._above_factor = 1.0 + (1e-6 if dt == torch.float32 else 1e-12)
        nan = torch.full((runs,), float("nan"), dtype=torch.float64, device=dev)
        self._last = {"mu_hat": nan, "focal": nan.clone(), "unsampled": nan.clone()}  # native backend's

    # -- the latest batch ---------------------------------------------------------------------------
    @property
    def last_mu_hat(self) -> torch.Tensor:
        """[R] float64: success rate X / N of each run's latest batch (NaN before the first step)."""
        ts = self.torch_step
        return ts.mu_hat.view(-1).to(torch.float64) if ts is not None and ts.mu_hat is not None else self._last["mu_hat"]

    @property
    def last_focal(self) -> torch.Tensor:
        """[R] float64: focal weight g of each run's latest batch."""
        ts = self.torch_step
        return ts.focal.view(-1).to(torch.float64) if ts is not None and ts.focal is not None else self._last["focal"]

    @property
    def last_unsampled_correct(self) -> torch.Tensor:
        """[R] float64: correct mass (of the policy that drew it) on actions the latest batch missed."""
        ts = self.torch_step
        if ts is not None and ts.p is not None:
            return ts.unsampled_correct_mass()
        return self._last["unsampled"]

    # -- policy ---------------------------------------------------------------------------------
    def unnormalised_probs(self) -> torch.Tensor:
        """w = exp(z - shift) per run, so p = w / w.sum(). The shift is the
        row maximum for rows whose maximum is large (0 otherwise). The native backend keeps w up to date itself
        (its update writes the next step's weights); the torch backend's step samples from softmax(z) and
        computes w only for the metric records."""
        if self.native is not None:
            self._shift = self.native.shift.to(self.dtype).unsqueeze(1)
            return self.native.weights
        zmax = self.logits.amax(dim=1, keepdim=True)
        # the shift is decided per run, so a run's weights never depend on its batch companions
        self._shift = torch.where(zmax.abs() <= 40.0, torch.zeros_like(zmax), zmax)
        return torch.sub(self.logits, self._shift).exp_()

    def probs(self) -> torch.Tensor:
        """p = softmax(z) per run, as a new tensor."""
        return torch.softmax(self.logits, dim=1)

    # -- one step ------------------------------------------------------------------------------
    def update_coefficients(self, stats: torch.Tensor) -> torch.Tensor:
        """coef [R, 4] = (gs, S, a_correct, a_wrong) of the native `fused_step` from the count statistics.

        mu_hat = X / N and g = (1 - mu_hat)^gamma come from `fgrpo_sim.core`; the advantages
        R - mean R of a correct / wrong draw are span (1 - mu_hat) and -span mu_hat (Dr. GRPO centring).
        """
        cfg = self.config
        stats = stats.to(device=self.device, dtype=torch.float64)
        total, wc, x, d_c, d_w, cw_c, cw_w = stats[:, :7].unbind(1)
        n = self._n64
        mu_hat = success_rate_from_counts(x, n).to(torch.float64)
        g = torch.empty_like(mu_hat)
        for gamma, mask in self._gamma_masks.items():
            g[mask] = focal_weight(mu_hat[mask], gamma, cfg.focal_smoothing, n[mask]).to(torch.float64)
        self._last.update(mu_hat=mu_hat, focal=g, unsampled=((wc - d_c) / total).clamp(min=0.0))
        span = cfg.reward_correct - cfg.reward_wrong
        if cfg.surrogate == "distinct":
            a_c = torch.full_like(mu_hat, cfg.reward_correct)
            a_w = torch.full_like(mu_hat, cfg.reward_wrong)
            baseline = (a_c * d_c + a_w * d_w) / total  # S_R = sum over distinct sampled R_i p_i
        else:
            a_c, a_w = span * (1.0 - mu_hat), -span * mu_hat
            baseline = (a_c * cw_c + a_w * cw_w) / total  # sum_k c_k A_k p_k
        if cfg.surrogate == "logprob":
            gs, baseline = g / n, torch.zeros_like(baseline)
        else:
            gs = g / (n * total)  # p_i = w_i / total
        return torch.stack([gs, baseline, a_c, a_w], dim=1)

    def _apply(self, coef: torch.Tensor) -> None:
        """Native backend: gradient of the surrogate from the loaded counts + one optimizer step (minimising -L)."""
        cfg = self.config
        self.step_count += 1
        self.native.fused_step(self.logits, self.exp_avg, self.exp_avg_sq, coef, cfg.surrogate, cfg.optimizer,
                               lr=cfg.lr, beta1=cfg.beta1, beta2=cfg.beta2, eps=cfg.eps,
                               weight_decay=cfg.weight_decay, step=self.step_count)

    def step(self) -> None:
        """Sample a batch for every run and update every run once."""
        if self.native is None:
            self._run_step()  # no host sync: a diverged run shows at the next metric record
            self.step_count += 1
            return
        stats = self.native.sample(self._keys, self.step_count)
        self._apply(self.update_coefficients(stats))

    def step_with_counts(self, counts: torch.Tensor) -> None:
        """One update of every run from given counts [R, K] (not modified), e.g. to compare implementations.

        Counts stay integers (int64), never the policy's dtype: float32 stops counting at 2^24, so 2^24 + 1
        would become 2^24 before the correct draws X are summed. Float input must hold whole numbers."""
        counts = torch.as_tensor(counts, device=self.device)
        if counts.dtype.is_floating_point:
            if not bool(torch.equal(counts, counts.round())) or bool((counts < 0).any()):
                raise ValueError("counts must be whole numbers >= 0")
        counts = counts.to(torch.int64).contiguous()
        if self.native is None:
            self.torch_step.step_with_counts(counts)
            self.step_count += 1
            return
        self._apply(self.update_coefficients(self.native.set_counts(counts)))

    # -- metrics -------------------------------------------------------------------------------
    def metrics(self) -> dict[str, torch.Tensor]:
        """State metrics of every run (tensors shaped [R]); see METRICS."""
        c = self.num_correct
        unsampled = self.last_unsampled_correct  # first: it reads the policy that drew the latest batch
        w = self.unnormalised_probs()
        if self.native is not None:  # float64 sum kept by the kernels
            total = self.native.totals.to(self.dtype).unsqueeze(1)
        else:
            total = w.sum(dim=1, keepdim=True)
        pc = w[:, :c] / total
        p0 = self.p0_correct
        q_pos = pc.sum(dim=1)
        lost = (p0 - pc).clamp_(min=0.0).sum(dim=1)
        # Entropy = log Z - E[logit]: a difference of two large numbers, so it is formed in float64 and
        # row by row. A batched product (bmm) picks its summation blocking from the batch shape, which made
        # a run's entropy depend on its batch companions (3.8e-6 in float32); one row's float64 dot
        # product does not.
        total64 = total.view(-1).to(torch.float64)
        log_z = self._shift.view(-1).to(torch.float64) + total64.log()
        expected_logit = torch.stack([torch.dot(w[i].to(torch.float64), self.logits[i].to(torch.float64))
                                      for i in range(w.shape[0])]) / total64
        return {
            "q_pos": q_pos,
            "m_ret": 1.0 - lost / p0.sum(),
            "unsampled_correct_mass": unsampled.to(self.dtype),
            "entropy": (log_z - expected_logit).clamp_(min=0.0).to(self.dtype),
            "anchor_prob": pc[:, 0].clone(),
            "frac_correct_above_start": (pc > p0 * self._above_factor).to(self.dtype).mean(dim=1),
            "worst_drop": (1.0 - (pc / p0).amin(dim=1)).clamp_(min=0.0),
            "mu_hat": self.last_mu_hat.to(self.dtype),
            "focal_weight": self.last_focal.to(self.dtype),
        }
