"""Exact multinomial count sampling for many runs at once: counts[r] ~ Multinomial(N[r], w[r] / sum w[r]).

The simulators only need how often each action was drawn, never the order of the draws, so a
batch of runs is sampled as one [runs, actions] count tensor.

Two exact samplers share one interface:

* `native` (CPU): a small C kernel, compiled with the system C compiler on first use and cached.
  Per run it draws the N uniforms bucket by bucket (bucket counts first, then fresh positions inside
  each bucket, which is the same law as N i.i.d. uniforms), so they come out sorted in O(N) time;
  one linear merge against the running sum of the weights (in float64) then yields the counts.
  Cost O(N + K) per run instead of O(N log K), and about 10x faster than torch's samplers here.
  Each run has its own random stream derived from (its key, the step), so a run's draws do not
  depend on which other runs share the batch.
* `torch` (any device, e.g. CUDA): inverse CDF with `torch.searchsorted` on a float64 cumulative
  sum, runs grouped by N, one `torch.Generator` for the batch.

Float64 running sums matter: a float32 cumsum over 128,000 actions carries absolute errors around
1e-5, larger than the probability of a single rare action (about 6e-5 at the start, far less later).
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import os
import platform
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import torch

from fgrpo_sim.validation import check_choice

SAMPLERS = ("auto", "native", "torch")

_C_SOURCE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static inline uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
typedef struct { uint64_t s[4]; } rng_t;
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t next_u64(rng_t *r) {  /* xoshiro256** */
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return result;
}
#define SQRT(x) _Generic((x), float: sqrtf, default: sqrt)(x)
static inline double u01(rng_t *r) { return (double)(next_u64(r) >> 11) * 0x1.0p-53; }
static void seed_rng(rng_t *r, uint64_t key, uint64_t stream) {
    uint64_t x = key ^ (0xD1B54A32D192ED03ULL * (stream + 1));
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

#define BLOCK 32
#define NSTAT 8
/* stats per run: total, W_c (correct weight), X (correct draws), D_c / D_w (weight of the distinct
   sampled correct / incorrect actions), Cw_c / Cw_w (sum of count * weight), distinct actions hit */
#define DEFINE_SAMPLER(NAME, T)                                                              \
int NAME(const T *w, int64_t K, int64_t C, const int64_t *rows, int64_t n_rows,             \
         const int64_t *n_draws, const uint64_t *keys, uint64_t stream, T *counts,           \
         double *stats) {                                                                    \
    int failed = 0;                                                                          \
    for (int64_t ri = 0; ri < n_rows; ri++) {                                                \
        int64_t r = rows[ri];                                                                \
        const T *wr = w + r * K;                                                             \
        T *cr = counts + r * K;                                                              \
        double *st = stats + r * NSTAT;                                                      \
        memset(cr, 0, sizeof(T) * (size_t)K);                                                \
        for (int s = 0; s < NSTAT; s++) st[s] = 0.0;                                         \
        int64_t n = n_draws[r];                                                              \
        int64_t nb = (K + BLOCK - 1) / BLOCK;                                                \
        double *bsum = (double *)malloc(sizeof(double) * (size_t)nb);                        \
        int32_t *bucket = (int32_t *)calloc((size_t)(n > 0 ? n : 1), sizeof(int32_t));       \
        if (!bsum || !bucket) { free(bsum); free(bucket); failed = 1; continue; }            \
        double total = 0.0, wc = 0.0;                                                        \
        for (int64_t blk = 0; blk < nb; blk++) {  /* block sums: lets the merge skip blocks */ \
            int64_t lo = blk * BLOCK, hi = lo + BLOCK < K ? lo + BLOCK : K;                  \
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0; int64_t j = lo;                   \
            for (; j + 3 < hi; j += 4) {  /* four chains: no wait on one adder */            \
                s0 += (double)wr[j]; s1 += (double)wr[j + 1];                                \
                s2 += (double)wr[j + 2]; s3 += (double)wr[j + 3];                            \
            }                                                                                \
            for (; j < hi; j++) s0 += (double)wr[j];                                         \
            bsum[blk] = (s0 + s1) + (s2 + s3); total += bsum[blk];                           \
            if (hi <= C) wc += bsum[blk];                                                    \
            else if (lo < C) for (j = lo; j < C; j++) wc += (double)wr[j];                   \
        }                                                                                    \
        st[0] = total; st[1] = wc;                                                           \
        if (!(total > 0.0) || total != total || total > 1e300) {                             \
            free(bsum); free(bucket); failed = 1; continue;                                  \
        }                                                                                    \
        if (n <= 0) { free(bsum); free(bucket); continue; }                                  \
        rng_t rng; seed_rng(&rng, keys[r], stream);                                          \
        int32_t most = 0;                                                                    \
        for (int64_t i = 0; i < n; i++) {  /* N uniforms -> counts in N equal buckets */     \
            int64_t b = (int64_t)(u01(&rng) * (double)n);                                    \
            if (b >= n) b = n - 1;                                                           \
            if (++bucket[b] > most) most = bucket[b];                                        \
        }                                                                                    \
        double *vals = (double *)malloc(sizeof(double) * (size_t)most);                      \
        if (!vals) { free(bsum); free(bucket); failed = 1; continue; }                       \
        double x_c = 0, d_c = 0, d_w = 0, cw_c = 0, cw_w = 0, hits = 0;                      \
        int64_t blk = 0, k = 0; double base = 0.0, bend = bsum[0], cum = (double)wr[0];      \
        for (int64_t b = 0; b < n; b++) {                                                    \
            int32_t c = bucket[b];                                                           \
            if (!c) continue;                                                                \
            for (int32_t j = 0; j < c; j++) {  /* fresh positions inside the bucket, sorted */ \
                double x = ((double)b + u01(&rng)) / (double)n * total;                      \
                int32_t i = j;                                                               \
                while (i > 0 && vals[i - 1] > x) { vals[i] = vals[i - 1]; i--; }             \
                vals[i] = x;                                                                 \
            }                                                                                \
            for (int32_t j = 0; j < c; j++) {  /* linear merge with the running sum */       \
                double x = vals[j];                                                          \
                if (bend <= x && blk < nb - 1) {                                             \
                    do { base = bend; blk++; bend = base + bsum[blk]; }                      \
                    while (bend <= x && blk < nb - 1);                                       \
                    k = blk * BLOCK; cum = base + (double)wr[k];                             \
                }                                                                            \
                int64_t last = (blk + 1) * BLOCK < K ? (blk + 1) * BLOCK - 1 : K - 1;        \
                while (cum <= x && k < last) { k++; cum += (double)wr[k]; }                  \
                int64_t hit = k;                                                             \
                while (hit > 0 && !(wr[hit] > 0)) hit--;  /* rounding at a block's end */    \
                double wh = (double)wr[hit];                                                 \
                if (cr[hit] == 0) { hits += 1; if (hit < C) d_c += wh; else d_w += wh; }     \
                if (hit < C) { x_c += 1; cw_c += wh; } else cw_w += wh;                      \
                cr[hit] += 1;                                                                \
            }                                                                                \
        }                                                                                    \
        st[2] = x_c; st[3] = d_c; st[4] = d_w; st[5] = cw_c; st[6] = cw_w; st[7] = hits;     \
        free(vals); free(bucket); free(bsum);                                                \
    }                                                                                        \
    return failed;                                                                           \
}

/* One optimizer step on the logits of the listed runs, fused with the surrogate's gradient.
   coef per run: [gs, S, a_c, a_w]; a_i = a_{c|w} * h(c_i) with h = min(c, 1) (distinct) or c;
   ascent gradient gs * w_i * (a_i - S) (distinct, draws) or gs * a_i (logprob); the optimizer
   minimises -L. opt: 0 sgd (L2), 1 adam (L2), 2 adamw (decoupled). */
#define DEFINE_UPDATE(NAME, T)                                                               \
static inline void NAME##_range(T *z, T *m, T *v, const T *w, const T *cnt, int64_t lo,     \
        int64_t hi, T gs, T S, T acoef, int surrogate, int opt, T lr, T b1, T b2, T eps,     \
        T wd, T bc1, T sbc2) {                                                               \
    for (int64_t i = lo; i < hi; i++) {                                                      \
        T c = cnt[i];                                                                        \
        T h = surrogate == 0 ? (c < (T)1 ? c : (T)1) : c;                                    \
        T a = acoef * h;                                                                     \
        T g = surrogate == 2 ? -(gs * a) : -(gs * w[i] * (a - S));                           \
        T zi = z[i];                                                                         \
        if (opt == 0) { g += wd * zi; z[i] = zi - lr * g; continue; }                        \
        if (opt == 1) g += wd * zi; else zi *= (T)1 - lr * wd;                               \
        T mi = m[i] + ((T)1 - b1) * (g - m[i]);                                              \
        T vi = b2 * v[i] + ((T)1 - b2) * g * g;                                              \
        m[i] = mi; v[i] = vi;                                                                \
        z[i] = zi - (lr / bc1) * mi / (SQRT(vi) / sbc2 + eps);                               \
    }                                                                                        \
}                                                                                            \
void NAME(T *z, T *m, T *v, const T *w, const T *counts, int64_t K, int64_t C,              \
          const int64_t *rows, int64_t n_rows, const double *coef, int surrogate, int opt,   \
          double lr, double b1, double b2, double eps, double wd, double bc1, double sbc2) { \
    for (int64_t ri = 0; ri < n_rows; ri++) {                                                \
        int64_t r = rows[ri], off = r * K;                                                   \
        const double *cf = coef + r * 4;                                                     \
        T *mr = m ? m + off : 0, *vr = v ? v + off : 0;                                      \
        NAME##_range(z + off, mr, vr, w + off, counts + off, 0, C, (T)cf[0], (T)cf[1],       \
                     (T)cf[2], surrogate, opt, lr, b1, b2, eps, wd, bc1, sbc2);              \
        NAME##_range(z + off, mr, vr, w + off, counts + off, C, K, (T)cf[0], (T)cf[1],       \
                     (T)cf[3], surrogate, opt, lr, b1, b2, eps, wd, bc1, sbc2);              \
    }                                                                                        \
}

DEFINE_SAMPLER(sample_counts_f32, float)
DEFINE_SAMPLER(sample_counts_f64, double)
DEFINE_UPDATE(update_f32, float)
DEFINE_UPDATE(update_f64, double)
"""

_LIB = None
_LIB_ERROR: str | None = None


def _cache_dir() -> Path:
    base = os.environ.get("FGRPO_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fgrpo-sim"


def _load_native():
    """Compile (once, cached by source hash) and load the C sampler; None if no compiler works."""
    global _LIB, _LIB_ERROR
    if _LIB is not None or _LIB_ERROR is not None:
        return _LIB
    digest = hashlib.sha256((_C_SOURCE + platform.machine() + sys.platform).encode()).hexdigest()[:16]
    cache = _cache_dir()
    lib_path = cache / f"count_sampler_{digest}.so"
    try:
        if not lib_path.exists():
            cache.mkdir(parents=True, exist_ok=True)
            compiler = os.environ.get("CC", "cc")
            with tempfile.TemporaryDirectory(dir=cache) as tmp:
                src = Path(tmp) / "count_sampler.c"
                src.write_text(_C_SOURCE)
                out = Path(tmp) / "count_sampler.so"
                base_cmd = [compiler, "-O3", "-fno-math-errno", "-shared", "-fPIC", "-std=c11", str(src), "-o", str(out)]
                result = subprocess.run(base_cmd, capture_output=True, text=True)
                if result.returncode != 0:
                    raise RuntimeError(result.stderr.strip().splitlines()[-1] if result.stderr else "compiler failed")
                os.replace(out, lib_path)  # atomic: concurrent first uses never load a half-written file
        lib = ctypes.CDLL(str(lib_path))
        ptr, i64, u64, dbl, cint = ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64, ctypes.c_double, ctypes.c_int
        for name in ("sample_counts_f32", "sample_counts_f64"):
            fn = getattr(lib, name)
            fn.restype = cint
            fn.argtypes = [ptr, i64, i64, ptr, i64, ptr, ptr, u64, ptr, ptr]
        for name in ("update_f32", "update_f64"):
            fn = getattr(lib, name)
            fn.restype = None
            fn.argtypes = [ptr, ptr, ptr, ptr, ptr, i64, i64, ptr, i64, ptr, cint, cint] + [dbl] * 7
        _LIB = lib
    except Exception as exc:  # noqa: BLE001 - any failure means: use the torch sampler
        _LIB_ERROR = f"{type(exc).__name__}: {exc}"
    return _LIB


def native_available() -> bool:
    """True when the compiled CPU sampler can be used (a C compiler was found)."""
    return _load_native() is not None


def resolve_sampler(sampler: str, device: torch.device) -> str:
    """Map `auto` to `native` on CPU when it compiles, else `torch`; `native` on a GPU is an error."""
    check_choice("sampler", sampler, SAMPLERS)
    if sampler == "auto":
        if device.type == "cpu" and native_available():
            return "native"
        if device.type == "cpu":
            warnings.warn(f"native count sampler unavailable ({_LIB_ERROR}); using the slower torch sampler")
        return "torch"
    if sampler == "native":
        if device.type != "cpu":
            raise ValueError(f"sampler must be torch or auto on device {device}, got 'native' (CPU only)")
        if not native_available():
            raise ValueError(f"sampler 'native' needs a C compiler ({_LIB_ERROR}); use sampler=torch")
    return sampler


def run_keys(seeds, salt: int = 0) -> torch.Tensor:
    """64-bit stream keys, one per run, from the runs' integer seeds (int64 tensor, CPU)."""
    keys = []
    for s in torch.as_tensor(seeds).reshape(-1).tolist():
        h = hashlib.blake2b(f"{int(s)}:{int(salt)}".encode(), digest_size=8).digest()
        keys.append(int.from_bytes(h, "little") & 0x7FFF_FFFF_FFFF_FFFF)
    return torch.tensor(keys, dtype=torch.int64)


def _balanced_row_groups(n_draws: list[int], actions: int, parts: int) -> list[list[int]]:
    """Split runs into `parts` groups of about equal cost (N + K / 8 per run), largest first."""
    cost = sorted(((n + actions // 8, r) for r, n in enumerate(n_draws)), reverse=True)
    groups: list[list[int]] = [[] for _ in range(parts)]
    load = [0] * parts
    for c, r in cost:
        i = load.index(min(load))
        groups[i].append(r)
        load[i] += c
    return [sorted(g) for g in groups if g]


STAT_NAMES = ("total", "correct_weight", "correct_draws", "distinct_correct_weight", "distinct_wrong_weight",
              "count_weight_correct", "count_weight_wrong", "distinct_hits")


def _run_parallel(fn, groups: list[torch.Tensor]) -> list:
    if len(groups) == 1:
        return [fn(groups[0])]
    return list(_thread_pool(len(groups)).map(fn, groups))


def _check_native_tensor(name: str, t: torch.Tensor, like: torch.Tensor) -> None:
    if t.shape != like.shape or t.dtype != like.dtype or t.device.type != "cpu" or not t.is_contiguous():
        raise ValueError(f"{name} must be a contiguous CPU tensor shaped {tuple(like.shape)} of dtype {like.dtype}")


def sample_counts_native(weights: torch.Tensor, n_draws, keys, stream: int, *, num_correct: int | None = None,
                         out: torch.Tensor | None = None, stats_out: torch.Tensor | None = None,
                         threads: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(counts, stats): counts [R, K] (dtype of `weights`) ~ Multinomial(n_draws[r], weights[r] / sum).

    `weights` are non-negative and need not be normalised; `keys` (int64 [R]) and `stream` (e.g. the
    step) select the random numbers, so equal (key, stream) pairs give equal draws whatever the batch.
    `stats` [R, 8] float64 holds per-run sums the update needs, named in STAT_NAMES (actions below
    `num_correct` count as correct). Runs are shared among `threads` Python threads (default: torch's
    thread count); ctypes releases the GIL, and plain threads avoid a second OpenMP runtime next to torch's.
    """
    lib = _load_native()
    if lib is None:
        raise RuntimeError(f"native count sampler unavailable: {_LIB_ERROR}")
    if weights.device.type != "cpu" or weights.dim() != 2 or weights.dtype not in (torch.float32, torch.float64):
        raise ValueError("weights must be a 2-D float32/float64 CPU tensor")
    weights = weights.contiguous()
    runs, actions = weights.shape
    num_correct = actions if num_correct is None else int(num_correct)
    n_draws = torch.as_tensor(n_draws, dtype=torch.int64).reshape(-1).contiguous()
    keys = torch.as_tensor(keys, dtype=torch.int64).reshape(-1).contiguous()
    if n_draws.shape != (runs,) or keys.shape != (runs,):
        raise ValueError(f"n_draws and keys must be shaped [{runs}]")
    if bool((n_draws < 0).any()) or int(n_draws.max()) > 2**31 - 1:
        raise ValueError("n_draws must be in [0, 2147483647]")
    out = torch.empty_like(weights) if out is None else out
    _check_native_tensor("out", out, weights)
    stats = torch.empty((runs, len(STAT_NAMES)), dtype=torch.float64) if stats_out is None else stats_out
    fn = lib.sample_counts_f32 if weights.dtype == torch.float32 else lib.sample_counts_f64
    stream = ctypes.c_uint64(int(stream) & 0xFFFF_FFFF_FFFF_FFFF)
    threads = max(1, min(threads or torch.get_num_threads(), runs))
    groups = [torch.tensor(g, dtype=torch.int64) for g in _balanced_row_groups(n_draws.tolist(), actions, threads)]

    def work(rows: torch.Tensor) -> int:
        return fn(weights.data_ptr(), actions, num_correct, rows.data_ptr(), rows.numel(), n_draws.data_ptr(),
                  keys.data_ptr(), stream, out.data_ptr(), stats.data_ptr())

    if max(_run_parallel(work, groups)):
        raise ValueError("weights must have a positive finite sum in every run")
    return out, stats


SURROGATE_CODES = {"distinct": 0, "draws": 1, "logprob": 2}
OPTIMIZER_CODES = {"sgd": 0, "adam": 1, "adamw": 2}


def native_update(logits: torch.Tensor, exp_avg: torch.Tensor | None, exp_avg_sq: torch.Tensor | None,
                  weights: torch.Tensor, counts: torch.Tensor, num_correct: int, coef: torch.Tensor,
                  surrogate: str, optimizer: str, *, lr: float, beta1: float, beta2: float, eps: float,
                  weight_decay: float, step: int, threads: int | None = None) -> None:
    """Fused surrogate gradient + optimizer step on `logits` (in place), one pass over memory per run.

    coef [R, 4] float64 per run: gradient scale gs, baseline S, a_correct, a_wrong; a_i is a_correct or
    a_wrong times min(c_i, 1) (distinct) or c_i; the ascent gradient is gs w_i (a_i - S) (distinct,
    draws) or gs a_i (logprob). `step` is the optimizer's step number after this update (>= 1).
    """
    lib = _load_native()
    if lib is None:
        raise RuntimeError(f"native kernels unavailable: {_LIB_ERROR}")
    for name, t in (("weights", weights), ("counts", counts)):
        _check_native_tensor(name, t, logits)
    if optimizer != "sgd":
        _check_native_tensor("exp_avg", exp_avg, logits)
        _check_native_tensor("exp_avg_sq", exp_avg_sq, logits)
    runs, actions = logits.shape
    coef = coef.to(torch.float64).contiguous()
    if coef.shape != (runs, 4):
        raise ValueError(f"coef must be shaped [{runs}, 4]")
    fn = lib.update_f32 if logits.dtype == torch.float32 else lib.update_f64
    bc1 = 1.0 - beta1**step
    sbc2 = math.sqrt(1.0 - beta2**step)
    m_ptr = exp_avg.data_ptr() if optimizer != "sgd" else None
    v_ptr = exp_avg_sq.data_ptr() if optimizer != "sgd" else None
    threads = max(1, min(threads or torch.get_num_threads(), runs))
    groups = [torch.arange(i, runs, threads, dtype=torch.int64) for i in range(threads)]

    def work(rows: torch.Tensor) -> None:
        fn(logits.data_ptr(), m_ptr, v_ptr, weights.data_ptr(), counts.data_ptr(), actions, int(num_correct),
           rows.data_ptr(), rows.numel(), coef.data_ptr(), SURROGATE_CODES[surrogate], OPTIMIZER_CODES[optimizer],
           lr, beta1, beta2, eps, weight_decay, bc1, sbc2)

    _run_parallel(work, groups)


_POOLS: dict = {}


def _thread_pool(n: int):
    from concurrent.futures import ThreadPoolExecutor

    if n not in _POOLS:
        _POOLS[n] = ThreadPoolExecutor(max_workers=n, thread_name_prefix="fgrpo-sampler")
    return _POOLS[n]


def sample_counts_torch(weights: torch.Tensor, n_draws: torch.Tensor, generator: torch.Generator | None = None,
                        out: torch.Tensor | None = None) -> torch.Tensor:
    """Same law as `sample_counts_native`, in torch on any device: inverse CDF, runs grouped by N."""
    runs, actions = weights.shape
    if out is None:
        out = torch.empty_like(weights)
    out.zero_()
    n_list = torch.as_tensor(n_draws).reshape(-1).tolist()
    for n in sorted(set(int(v) for v in n_list)):
        if n <= 0:
            continue
        rows = torch.tensor([i for i, v in enumerate(n_list) if int(v) == n], device=weights.device)
        cdf = torch.cumsum(weights.index_select(0, rows).to(torch.float64), dim=1)
        total = cdf[:, -1:]
        if not bool(torch.all(total > 0)):
            raise ValueError("weights must have a positive finite sum in every run")
        u = torch.rand((rows.numel(), n), generator=generator, device=weights.device, dtype=torch.float64) * total
        idx = torch.searchsorted(cdf, u, right=True).clamp_(max=actions - 1)
        counts = torch.zeros((rows.numel(), actions), device=weights.device, dtype=weights.dtype)
        counts.scatter_add_(1, idx, torch.ones_like(u, dtype=weights.dtype))
        out.index_copy_(0, rows, counts)
    return out
