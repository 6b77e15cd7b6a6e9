"""The torch backend's step (any device): whole-tensor passes only, fixed shapes, no host sync.

One step of every run of a batch, whatever their N: policy p = softmax(z); exact counts c ~ Multinomial(N_r, p_r)
(int32, never the policy's dtype: float32 stops counting at 2^24) in one integer inverse-CDF pass
(`sampling.DrawPlan`); mu_hat = X / N and g = (1 - mu_hat)^gamma (`core.focal_weight_per_group`); the
surrogate's logit gradient; one fused Adam/AdamW (or SGD) update.
Everything a step changes lives in device tensors (the stream and Adam step counters too), and nothing
is read back: the same launches with the same constants every step, so a CUDA graph of one step replays
them all (`CudaGraphStep`), and on a CPU nothing waits. Checks that need the host (a non-finite policy)
are the metric records' job (`run.simulate_chunk`).

Gradient (descent direction -dL/dz, see `engine`), with corr_i = 1 for correct actions and span = R_c - R_w:
  logprob   -(g / N) span c_i (corr_i - mu_hat)
  draws     -(g / (N T)) p_i (c_i span (corr_i - mu_hat) - B),   B = span sum_k c_k (corr_k - mu_hat) p_k / T
  distinct  -(g / (N T)) p_i (h_i (R_w + span corr_i) - B),       B = (R_c P_pos + R_w P_neg) / T, h_i = 1[c_i > 0]
with T = sum_k p_k as stored (1 up to rounding). A logprob step never needs p beyond the sampler.
"""

from __future__ import annotations

import torch

from fgrpo_sim.core import focal_weight_per_group
from fgrpo_sim.sim.categorical.sampling import DrawPlan, stream_mix


class TorchStep:
    """The tensors of one batch's torch step; `step()` advances logits and moments in place."""

    def __init__(self, config, logits: torch.Tensor, exp_avg, exp_avg_sq, group_sizes, gammas, keys):
        self.config = config
        self.logits, self.exp_avg, self.exp_avg_sq = logits, exp_avg, exp_avg_sq
        runs, k = logits.shape
        dev, dt = logits.device, logits.dtype
        c = config.num_correct
        self.num_correct = c
        # counts in int32 (N <= 2^31 - 1), never the policy's dtype: float32 stops counting at 2^24
        self.plan = DrawPlan(group_sizes, keys, k, dev, torch.int32)
        self.counts_flat = torch.zeros(runs * k + 1, dtype=torch.int32, device=dev)  # + the spare slot of `DrawPlan`
        self.counts = self.counts_flat[:-1].view(runs, k)
        n = torch.as_tensor([float(v) for v in group_sizes], dtype=dt, device=dev).unsqueeze(1)
        self.inv_n = 1.0 / n
        self.n = n  # for a smoothed weight estimate (config.focal_smoothing > 0)
        self.gammas = torch.as_tensor([float(g) for g in gammas], dtype=dt, device=dev).unsqueeze(1)
        span = config.reward_correct - config.reward_wrong
        self.span = span
        self.neg_span_over_n = -span / n
        self.correct = (torch.arange(k, device=dev) < c).to(dt).unsqueeze(0)  # [1, K]
        # segment sums (correct, wrong) of several [R, K] tensors at once, as one matmul
        self.segments = torch.stack([self.correct[0], 1.0 - self.correct[0]], dim=1)  # [K, 2]
        # the stream's seed multiplier 0xD1B54A32D192ED03 * (stream + 1), advanced on the device by one addition
        self.mix = torch.zeros((), dtype=torch.int64, device=dev)
        self.mix_step = torch.tensor(stream_mix(0), dtype=torch.int64, device=dev)
        self.rewards = torch.tensor([config.reward_correct, config.reward_wrong], dtype=dt, device=dev)
        self.adam_step = torch.zeros((), dtype=torch.float32, device=dev)
        fused = "_fused_adamw_" if config.optimizer == "adamw" else "_fused_adam_"
        self.fused_adam = getattr(torch, fused, None) if config.optimizer != "sgd" else None
        self.p = None  # the policy that drew the latest counts (for the records' unsampled mass)
        self.mu_hat = self.focal = None

    # -- the step ---------------------------------------------------------------------------------------
    def step(self) -> None:
        """Sample every run's batch and update every run once (no host sync)."""
        self.p = torch.softmax(self.logits, dim=1)
        self.mix.add_(self.mix_step)
        self.plan.sample_into(self.p, self.mix, self.counts_flat)
        self.update()

    def step_with_counts(self, counts: torch.Tensor) -> None:
        """One update from given counts [R, K] (tests, Prop. 3.2's check)."""
        self.p = torch.softmax(self.logits, dim=1)
        self.counts.copy_(counts)
        self.mix.add_(self.mix_step)  # the stream still advances, as in a sampled step
        self.update()

    def update(self) -> None:
        cfg, c, p, counts = self.config, self.num_correct, self.p, self.counts
        x = counts.narrow(1, 0, c).sum(1, keepdim=True)  # correct draws X (int64: exact)
        mu = x * self.inv_n  # promoted to the policy's dtype in the product: no extra op
        g = focal_weight_per_group(mu, self.gammas, cfg.focal_smoothing, self.n)  # alpha 0: not one op more
        self.mu_hat, self.focal = mu, g
        if cfg.surrogate == "logprob":
            grad = torch.sub(self.correct, mu).mul_(counts).mul_(g * self.neg_span_over_n)
        else:
            grad = self._probability_surrogate_gradient(p, counts, mu, g)
        self._optimizer_step(grad)

    def _probability_surrogate_gradient(self, p, counts, mu, g):
        cfg = self.config
        # a_i without its per-run coefficients: 1[c_i > 0] (counts are integers >= 0) or c_i; an integer tensor,
        # promoted to the policy's dtype where it meets a float
        a = counts.clamp(max=1) if cfg.surrogate == "distinct" else counts
        sums = torch.stack([a * p, p]) @ self.segments  # [2, R, 2]: (correct, wrong) sums of a_i p_i and of p_i
        total = sums[1].sum(1, keepdim=True)
        gs = g * self.inv_n / total
        if cfg.surrogate == "distinct":
            # a_i = h_i (R_w + span corr_i); B = (R_c P_pos + R_w P_neg) / T
            alpha, beta = -gs * self.span, -gs * cfg.reward_wrong
            b = (sums[0] @ self.rewards).unsqueeze(1) / total
        else:
            # a_i = c_i span (corr_i - mu); B = span (S_c (1 - mu) - S_w mu) / T
            alpha, beta = -gs * self.span, gs * self.span * mu
            b = self.span * (sums[0].narrow(1, 0, 1) - sums[0].sum(1, keepdim=True) * mu) / total
        # -dL/dz = p (a (alpha corr + beta) + gs B)
        return torch.addcmul(beta, self.correct, alpha).mul_(a).add_(gs * b).mul_(p)

    def _optimizer_step(self, grad: torch.Tensor) -> None:
        cfg = self.config
        if cfg.optimizer == "sgd":
            if cfg.weight_decay:
                grad.add_(self.logits, alpha=cfg.weight_decay)
            self.logits.add_(grad, alpha=-cfg.lr)
            return
        self.adam_step.add_(1.0)
        if self.fused_adam is None:  # an old torch: the reference update, still without host sync
            self._adam_reference(grad)
            return
        self.fused_adam([self.logits], [grad], [self.exp_avg], [self.exp_avg_sq], [], [self.adam_step], lr=cfg.lr,
                        beta1=cfg.beta1, beta2=cfg.beta2, weight_decay=cfg.weight_decay, eps=cfg.eps,
                        amsgrad=False, maximize=False)

    def _adam_reference(self, grad: torch.Tensor) -> None:
        """Adam/AdamW as torch.optim, bias corrections from the step tensor (no Python step count)."""
        cfg = self.config
        if cfg.weight_decay:
            if cfg.optimizer == "adamw":
                self.logits.mul_(1.0 - cfg.lr * cfg.weight_decay)
            else:
                grad.add_(self.logits, alpha=cfg.weight_decay)
        self.exp_avg.lerp_(grad, 1.0 - cfg.beta1)
        self.exp_avg_sq.mul_(cfg.beta2).addcmul_(grad, grad, value=1.0 - cfg.beta2)
        t = self.adam_step.to(self.logits.dtype)
        bc1, bc2 = 1.0 - torch.pow(cfg.beta1, t), 1.0 - torch.pow(cfg.beta2, t)
        denom = (self.exp_avg_sq.sqrt() / bc2.sqrt()).add_(cfg.eps)
        self.logits.sub_(self.exp_avg / denom * (cfg.lr / bc1))

    # -- what the metric records read ---------------------------------------------------------------------
    def unsampled_correct_mass(self) -> torch.Tensor:
        """[R] float64: correct mass of the policy that drew the latest batch, on actions it missed."""
        c = self.num_correct
        p = self.p.narrow(1, 0, c).to(torch.float64)
        missed = (self.counts.narrow(1, 0, c) == 0).to(torch.float64)
        return ((p * missed).sum(1) / self.p.to(torch.float64).sum(1)).clamp(min=0.0)


class CudaGraphStep:
    """Runs `TorchStep.step` as one CUDA graph replay: the first call runs it eagerly (warm-up, on a side
    stream as torch asks), the second captures and replays it, later calls replay. A capture that fails
    falls back to eager steps with a warning. Valid because a step has fixed shapes, reads no host value and
    keeps its counters on the device (`tests/test_sim_torch_step.py` checks that two steps issue the same ops
    with the same constants)."""

    def __init__(self, step: TorchStep):
        self.inner = step
        self.graph = None
        self.eager_only = False
        self.calls = 0
        self.outputs = None

    def __call__(self) -> None:
        inner = self.inner
        self.calls += 1
        if self.graph is not None:
            self.graph.replay()
            inner.p, inner.mu_hat, inner.focal = self.outputs  # the graph's own tensors, rewritten by each replay
        elif self.eager_only:
            inner.step()
        elif self.calls == 1:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                inner.step()
            torch.cuda.current_stream().wait_stream(side)
        else:
            self._capture_and_replay()

    def _capture_and_replay(self) -> None:
        import warnings

        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                self.inner.step()
        except Exception as exc:  # noqa: BLE001 - any capture failure: keep stepping eagerly
            warnings.warn(f"CUDA graph capture of the categorical step failed ({type(exc).__name__}: {exc}); "
                          "running eager steps")
            self.eager_only = True
            self.inner.step()
            return
        self.graph = graph
        self.outputs = (self.inner.p, self.inner.mu_hat, self.inner.focal)
        graph.replay()  # capturing recorded the step without running it
