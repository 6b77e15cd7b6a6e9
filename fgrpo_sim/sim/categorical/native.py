"""CPU fast path of the categorical simulator: the fused C kernels of `kernel.c`, driven from Python.

Per run the state keeps, besides logits and optimizer moments, the current policy weights
w = exp(z - shift) and their block sums (float64, blocks of 32 actions). One step is then
  1. `sample_sparse`: exact Multinomial(N, w / sum w) draws, merged against the block sums, kept as
     a sorted list of (action, count) plus the per-run sums of STAT_NAMES -- O(N + K / 32) per run;
  2. the per-run update coefficients, computed in torch from those sums (focal weight from core);
  3. `fused_step`: gradient of the surrogate, optimizer step, and the next step's w and block sums,
     in one pass over memory.
The per-action gradient of untouched actions depends on the run only through one scalar, so the
sparse list is all the kernel needs. Within a block, weights are summed in float32 lanes in float32
mode: the sampler is exact for the policy as stored (float32 weights), up to a relative 3e-7 of one
block's mass shifted to the block's last action. In float64 mode everything is float64.
"""

from __future__ import annotations

import math

import torch

from fgrpo_sim.sim.categorical.sampling import (
    OPTIMIZER_CODES,
    STAT_NAMES,
    SURROGATE_CODES,
    _balanced_row_groups,
    _kernel,
    _load_native,
    _run_parallel,
)

BLOCK = 32
SHIFT_SLACK = 30.0  # re-centre w = exp(z - shift) when max z drifts this far from the shift


class NativeState:
    """Buffers of the fused CPU step for logits [R, K] (float32 or float64, contiguous)."""

    def __init__(self, logits: torch.Tensor, num_correct: int, group_sizes: torch.Tensor, threads: int | None = None):
        lib = _load_native()
        if lib is None:
            raise RuntimeError("native kernels unavailable")
        self.lib = lib
        self.f32 = logits.dtype == torch.float32
        runs, actions = logits.shape
        self.runs, self.actions, self.num_correct = runs, actions, int(num_correct)
        self.weights = torch.empty_like(logits)
        self.block_sums = torch.zeros((runs, (actions + BLOCK - 1) // BLOCK), dtype=torch.float64)
        self.totals = torch.zeros(runs, dtype=torch.float64)
        self.correct_weight = torch.zeros(runs, dtype=torch.float64)
        self.shift = torch.zeros(runs, dtype=torch.float64)
        self.max_weight = torch.zeros(runs, dtype=torch.float64)
        self.group_sizes = torch.as_tensor(group_sizes, dtype=torch.int64).contiguous()
        capacity = torch.clamp(self.group_sizes, max=actions)
        self.offsets = torch.cat([torch.zeros(1, dtype=torch.int64), capacity.cumsum(0)[:-1]]).contiguous()
        total_cap = int(capacity.sum())
        self.touched_idx = torch.zeros(max(total_cap, 1), dtype=torch.int32)
        self.touched_cnt = torch.zeros(max(total_cap, 1), dtype=torch.int32)
        self.touched_len = torch.zeros(runs, dtype=torch.int64)
        self.stats = torch.zeros((runs, len(STAT_NAMES)), dtype=torch.float64)
        threads = max(1, min(threads or torch.get_num_threads(), runs))
        self.even_groups = [torch.arange(i, runs, threads, dtype=torch.int64) for i in range(threads)]
        self.draw_groups = [torch.tensor(g, dtype=torch.int64)
                            for g in _balanced_row_groups(self.group_sizes.tolist(), actions, threads)]

    def _fn(self, name: str):
        return _kernel(self.lib, name, self.f32)

    def refresh(self, logits: torch.Tensor) -> None:
        """w = exp(z - shift) with shift = row max, and its block sums (start, or after a large drift)."""
        self.shift.copy_(logits.amax(dim=1).to(torch.float64))
        fn = self._fn("refresh")

        def work(rows):
            fn(logits.data_ptr(), self.weights.data_ptr(), self.actions, self.num_correct, rows.data_ptr(),
               rows.numel(), self.shift.data_ptr(), self.block_sums.data_ptr(), self.totals.data_ptr(),
               self.correct_weight.data_ptr(), self.max_weight.data_ptr())

        _run_parallel(work, self.even_groups)

    def sample(self, keys: torch.Tensor, stream: int) -> torch.Tensor:
        """Draw every run's batch (sparse); returns stats [R, 8] (STAT_NAMES)."""
        fn = self._fn("sample_sparse")
        import ctypes

        stream = ctypes.c_uint64(int(stream) & 0xFFFF_FFFF_FFFF_FFFF)

        def work(rows):
            return fn(self.weights.data_ptr(), self.block_sums.data_ptr(), self.totals.data_ptr(),
                      self.correct_weight.data_ptr(), self.actions, self.num_correct, rows.data_ptr(), rows.numel(),
                      self.group_sizes.data_ptr(), keys.data_ptr(), stream, self.offsets.data_ptr(),
                      self.touched_idx.data_ptr(), self.touched_cnt.data_ptr(), self.touched_len.data_ptr(),
                      self.stats.data_ptr())

        if max(_run_parallel(work, self.draw_groups)):
            raise ValueError("policy weights must have a positive finite sum in every run (logits diverged?)")
        return self.stats

    def set_counts(self, counts: torch.Tensor) -> torch.Tensor:
        """Load given dense counts [R, K] as the sparse batch (for tests); returns their stats."""
        f64 = torch.float64
        c = self.num_correct
        capacity = torch.clamp(self.group_sizes, max=self.actions)
        for r in range(self.runs):
            idx = torch.nonzero(counts[r] > 0).view(-1)
            if idx.numel() > int(capacity[r]):
                raise ValueError("counts must touch at most N actions per run")
            o = int(self.offsets[r])
            self.touched_idx[o:o + idx.numel()] = idx.to(torch.int32)
            self.touched_cnt[o:o + idx.numel()] = counts[r, idx].round().to(torch.int32)
            self.touched_len[r] = idx.numel()
        w = self.weights.to(f64)
        cf = counts.to(f64)
        hit = (cf > 0).to(f64)
        self.stats[:] = torch.stack([self.totals, self.correct_weight, cf[:, :c].sum(1),
                                     (hit * w)[:, :c].sum(1), (hit * w)[:, c:].sum(1),
                                     (cf * w)[:, :c].sum(1), (cf * w)[:, c:].sum(1), hit.sum(1)], dim=1)
        return self.stats

    def fused_step(self, logits, exp_avg, exp_avg_sq, coef: torch.Tensor, surrogate: str, optimizer: str, *,
                   lr: float, beta1: float, beta2: float, eps: float, weight_decay: float, step: int) -> None:
        """Gradient + optimizer step + next weights, in place; re-centres the weights when needed."""
        fn = self._fn("fused_step")
        coef = coef.to(torch.float64).contiguous()
        bc1 = 1.0 - beta1**step
        sbc2 = math.sqrt(1.0 - beta2**step)
        m_ptr = exp_avg.data_ptr() if exp_avg is not None else None
        v_ptr = exp_avg_sq.data_ptr() if exp_avg_sq is not None else None
        if optimizer != "sgd" and (m_ptr is None or v_ptr is None):  # the kernel would write through NULL: a crash
            raise ValueError(f"exp_avg and exp_avg_sq must be tensors for optimizer {optimizer}, got None")

        def work(rows):
            fn(logits.data_ptr(), m_ptr, v_ptr, self.weights.data_ptr(), self.actions, self.num_correct,
               rows.data_ptr(), rows.numel(), self.offsets.data_ptr(), self.touched_idx.data_ptr(),
               self.touched_cnt.data_ptr(), self.touched_len.data_ptr(), coef.data_ptr(),
               SURROGATE_CODES[surrogate], OPTIMIZER_CODES[optimizer], lr, beta1, beta2, eps, weight_decay, bc1,
               sbc2, self.shift.data_ptr(), self.block_sums.data_ptr(), self.totals.data_ptr(),
               self.correct_weight.data_ptr(), self.max_weight.data_ptr())

        _run_parallel(work, self.even_groups)
        # max z - shift = log(max w), without another pass over the logits
        drift = self.max_weight.log()
        if not bool(((drift.abs() <= SHIFT_SLACK) & torch.isfinite(self.totals)).all()):
            self.refresh(logits)
