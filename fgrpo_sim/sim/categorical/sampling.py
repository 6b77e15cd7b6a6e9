"""Exact multinomial count sampling for many runs at once: counts[r] ~ Multinomial(N[r], w[r] / sum w[r]).

The simulators only need how often each action was drawn, never the order of the draws, so a
batch of runs is sampled as one [runs, actions] count tensor.

Two exact samplers share one interface:

* `native` (CPU): a small C kernel, compiled with the system C compiler on first use and cached.
  Per run it draws the N uniforms bucket by bucket (counts in min(N, 2^22) equal buckets first, then
  fresh positions inside each bucket, which is the same law as N i.i.d. uniforms), so they come out
  sorted in O(N) expected time;
  one linear merge against the running sum of the weights (in float64) then yields the counts.
  Cost O(N + K) per run instead of O(N log K) (on 2 idle cores of this machine: about 80 million
  draws/s at N = 131072, against 15-25 million/s for torch.multinomial or torch.searchsorted).
  Each run has its own random stream derived from (its key, the step), so a run's draws do not
  depend on which other runs share the batch. The same C source holds the sparse sampler and the
  fused update step of the categorical engine (driven by `categorical_native`).
* `torch` (any device, e.g. CUDA): inverse CDF with `torch.searchsorted` on a float64 cumulative
  sum, runs grouped by N. Its uniforms are counter-based (`stream_uniforms`: splitmix64 of the run's
  key, the step and the draw index), so here too a run's draws depend only on (its key, the step),
  never on its batch companions; they are other numbers than the native generator's (same law).

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
#if defined(__SSE2__)
#include <xmmintrin.h>
/* flush denormals to zero while a kernel runs: tiny second moments / weights of nearly extinct
   actions would otherwise fall into the 100x slower denormal arithmetic */
#define FTZ_BEGIN unsigned int saved_csr_ = _mm_getcsr(); _mm_setcsr(saved_csr_ | 0x8040);
#define FTZ_END _mm_setcsr(saved_csr_);
#else
#define FTZ_BEGIN
#define FTZ_END
#endif
#define SQRT(x) _Generic((x), float: sqrtf, default: sqrt)(x)
static inline double u01(rng_t *r) { return (double)(next_u64(r) >> 11) * 0x1.0p-53; }
static void seed_rng(rng_t *r, uint64_t key, uint64_t stream) {
    uint64_t x = key ^ (0xD1B54A32D192ED03ULL * (stream + 1));
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

#define MAX_BUCKETS (1 << 22)  /* bounds the bucket array (16 MB) for huge N */
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
/* c fresh uniform positions inside bucket b, scaled to [0, total) by scale = total / m, sorted */
static inline void bucket_values(double *vals, int32_t c, int64_t b, double scale, rng_t *rng) {
    for (int32_t j = 0; j < c; j++) {
        double x = ((double)b + u01(rng)) * scale;
        if (c > 16) { vals[j] = x; continue; }
        int32_t i = j;  /* insertion sort: buckets hold one value on average */
        while (i > 0 && vals[i - 1] > x) { vals[i] = vals[i - 1]; i--; }
        vals[i] = x;
    }
    if (c > 16) qsort(vals, (size_t)c, sizeof(double), cmp_double);
}
/* N uniforms -> counts in m equal buckets (bucket must be zeroed); returns the largest count */
static int32_t draw_buckets(int32_t *bucket, int64_t n, int64_t m, rng_t *rng) {
    int32_t most = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = (int64_t)(((unsigned __int128)next_u64(rng) * (uint64_t)m) >> 64);
        if (++bucket[b] > most) most = bucket[b];
    }
    return most;
}
/* One step of the linear merge of sorted positions with the running sum of the weights wr (block
   sums bsum, nb blocks of BLOCK): advances the merge state (blk, base, bend, k, cum) to position x
   and declares HIT, the action x falls on. Shared by both samplers, so they draw identically. */
#define MERGE_LOCATE(x, HIT)                                                                 \
    if (bend <= (x) && blk < nb - 1) {                                                       \
        do { base = bend; blk++; bend = base + bsum[blk]; }                                  \
        while (bend <= (x) && blk < nb - 1);                                                 \
        k = blk * BLOCK; cum = base + (double)wr[k];                                         \
    }                                                                                        \
    int64_t last_ = (blk + 1) * BLOCK < K ? (blk + 1) * BLOCK - 1 : K - 1;                   \
    while (cum <= (x) && k < last_) { k++; cum += (double)wr[k]; }                           \
    int64_t HIT = k;                                                                         \
    while (HIT > 0 && !(wr[HIT] > 0)) HIT--;  /* rounding at a block's end */

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
        int64_t m = n < MAX_BUCKETS ? (n > 0 ? n : 1) : MAX_BUCKETS;                         \
        int32_t *bucket = (int32_t *)calloc((size_t)m, sizeof(int32_t));                     \
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
        int32_t most = draw_buckets(bucket, n, m, &rng);                                     \
        double *vals = (double *)malloc(sizeof(double) * (size_t)most);                      \
        const double scale = total / (double)m;                                              \
        if (!vals) { free(bsum); free(bucket); failed = 1; continue; }                       \
        double x_c = 0, d_c = 0, d_w = 0, cw_c = 0, cw_w = 0, hits = 0;                      \
        int64_t blk = 0, k = 0; double base = 0.0, bend = bsum[0], cum = (double)wr[0];      \
        for (int64_t b = 0; b < m; b++) {                                                    \
            int32_t c = bucket[b];                                                           \
            if (!c) continue;                                                                \
            bucket_values(vals, c, b, scale, &rng);  /* fresh positions, sorted */           \
            for (int32_t j = 0; j < c; j++) {  /* linear merge with the running sum */       \
                MERGE_LOCATE(vals[j], hit)                                                   \
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

/* ---------------- fused categorical step (see categorical_native.py) ---------------- */
/* exp by range reduction + Taylor polynomial: branch-free arithmetic that gcc vectorises; a few ulp */
static inline float exp_f32(float x) {
    x = x > 88.0f ? 88.0f : x; x = x < -87.0f ? -87.0f : x;
    float t = x * 1.44269504088896341f + 12582912.0f;  /* round(x / ln 2) via the 1.5 * 2^23 trick */
    float n = t - 12582912.0f;
    float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120
              + r * (1.0f / 720 + r * (1.0f / 5040)))))));
    int32_t bits = ((int32_t)n + 127) << 23;
    union { int32_t i; float f; } u; u.i = bits;
    return p * u.f;
}
static inline double exp_f64(double x) {
    x = x > 700.0 ? 700.0 : x; x = x < -700.0 ? -700.0 : x;
    double t = x * 1.4426950408889634 + 6755399441055744.0;  /* 1.5 * 2^52 */
    double n = t - 6755399441055744.0;
    double r = (x - n * 0.6931471803691238) - n * 1.9082149292705877e-10;
    double p = 1.0 / 6227020800.0;  /* 1/13! */
    p = p * r + 1.0 / 479001600.0; p = p * r + 1.0 / 39916800.0; p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0; p = p * r + 1.0 / 40320.0; p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0; p = p * r + 1.0 / 120.0; p = p * r + 1.0 / 24.0; p = p * r + 1.0 / 6.0;
    p = p * r + 0.5; p = p * r + 1.0; p = p * r + 1.0;
    int64_t bits = ((int64_t)n + 1023) << 52;
    union { int64_t i; double f; } u; u.i = bits;
    return p * u.f;
}
#define EXP_T(x) _Generic((x), float: exp_f32, default: exp_f64)(x)
#define LANES 8

/* block sums (double) of w, its total, its correct part and its maximum; BLOCK-aligned, lanes of T
   inside a block (the maximum lets the caller re-centre the shift without another pass over z) */
#define DEFINE_BLOCKSUMS(NAME, T)                                                            \
static void NAME(const T *w, int64_t K, int64_t C, double *bsum, double *total, double *wc,  \
                 double *wmax) {                                                             \
    int64_t nb = (K + BLOCK - 1) / BLOCK; double tot = 0.0, cor = 0.0;                       \
    T mx[LANES] = {0};                                                                       \
    for (int64_t blk = 0; blk < nb; blk++) {                                                 \
        int64_t lo = blk * BLOCK, hi = lo + BLOCK < K ? lo + BLOCK : K;                      \
        double s = 0.0;                                                                      \
        if (hi - lo == BLOCK) {                                                              \
            T acc[LANES] = {0};                                                              \
            for (int64_t j = lo; j < hi; j += LANES)                                         \
                for (int l = 0; l < LANES; l++) {                                            \
                    T x = w[j + l]; acc[l] += x; mx[l] = x > mx[l] ? x : mx[l];              \
                }                                                                            \
            for (int l = 0; l < LANES; l++) s += (double)acc[l];                             \
        } else for (int64_t j = lo; j < hi; j++) {                                           \
            s += (double)w[j]; mx[0] = w[j] > mx[0] ? w[j] : mx[0];                          \
        }                                                                                    \
        bsum[blk] = s; tot += s;                                                             \
        if (hi <= C) cor += s; else if (lo < C) for (int64_t j = lo; j < C; j++) cor += (double)w[j]; \
    }                                                                                        \
    T m = mx[0]; for (int l = 1; l < LANES; l++) m = mx[l] > m ? mx[l] : m;                  \
    *total = tot; *wc = cor; *wmax = (double)m;                                              \
}
DEFINE_BLOCKSUMS(blocksums_f32, float)
DEFINE_BLOCKSUMS(blocksums_f64, double)

/* w = exp(z - shift) and its block sums, for the listed runs */
#define DEFINE_REFRESH(NAME, T, BS)                                                          \
void NAME(const T *z, T *w, int64_t K, int64_t C, const int64_t *rows, int64_t n_rows,      \
          const double *shift, double *bsum, double *total, double *wc, double *wmax) {      \
    FTZ_BEGIN                                                                                \
    int64_t nb = (K + BLOCK - 1) / BLOCK;                                                    \
    for (int64_t ri = 0; ri < n_rows; ri++) {                                                \
        int64_t r = rows[ri]; const T *zr = z + r * K; T *wr = w + r * K; T sh = (T)shift[r]; \
        for (int64_t i = 0; i < K; i++) wr[i] = EXP_T((T)(zr[i] - sh));                     \
        BS(wr, K, C, bsum + r * nb, total + r, wc + r, wmax + r);                            \
    }                                                                                        \
    FTZ_END                                                                                  \
}
DEFINE_REFRESH(refresh_f32, float, blocksums_f32)
DEFINE_REFRESH(refresh_f64, double, blocksums_f64)

/* Exact Multinomial(N, w / total) draws, kept sparse: touched action indices (ascending) and counts.
   Uses the block sums of the current w. stats as in the dense sampler. */
#define DEFINE_SPARSE_SAMPLER(NAME, T)                                                       \
int NAME(const T *w, const double *bsums, const double *totals, const double *wcs, int64_t K, \
         int64_t C, const int64_t *rows, int64_t n_rows, const int64_t *n_draws,            \
         const uint64_t *keys, uint64_t stream, const int64_t *offsets, int32_t *t_idx,      \
         int32_t *t_cnt, int64_t *t_len, double *stats) {                                    \
    int failed = 0; int64_t nb = (K + BLOCK - 1) / BLOCK;                                    \
    for (int64_t ri = 0; ri < n_rows; ri++) {                                                \
        int64_t r = rows[ri];                                                                \
        const T *wr = w + r * K; const double *bsum = bsums + r * nb;                        \
        int32_t *ti = t_idx + offsets[r], *tc = t_cnt + offsets[r];                          \
        double *st = stats + r * NSTAT, total = totals[r];                                   \
        for (int s = 0; s < NSTAT; s++) st[s] = 0.0;                                         \
        st[0] = total; st[1] = wcs[r]; t_len[r] = 0;                                         \
        int64_t n = n_draws[r];                                                              \
        if (!(total > 0.0) || total != total || total > 1e300) { failed = 1; continue; }     \
        if (n <= 0) continue;                                                                \
        int64_t m = n < MAX_BUCKETS ? n : MAX_BUCKETS;                                       \
        int32_t *bucket = (int32_t *)calloc((size_t)m, sizeof(int32_t));                     \
        if (!bucket) { failed = 1; continue; }                                               \
        rng_t rng; seed_rng(&rng, keys[r], stream);                                          \
        int32_t most = draw_buckets(bucket, n, m, &rng);                                     \
        double *vals = (double *)malloc(sizeof(double) * (size_t)most);                      \
        const double scale = total / (double)m;                                              \
        if (!vals) { free(bucket); failed = 1; continue; }                                   \
        double x_c = 0, d_c = 0, d_w = 0, cw_c = 0, cw_w = 0;                                \
        int64_t len = 0, blk = 0, k = 0;                                                     \
        double base = 0.0, bend = bsum[0], cum = (double)wr[0];                              \
        for (int64_t b = 0; b < m; b++) {                                                    \
            int32_t c = bucket[b];                                                           \
            if (!c) continue;                                                                \
            bucket_values(vals, c, b, scale, &rng);  /* fresh positions, sorted */           \
            for (int32_t j = 0; j < c; j++) {  /* linear merge with the running sum */       \
                MERGE_LOCATE(vals[j], hit)                                                   \
                double wh = (double)wr[hit];                                                 \
                if (len == 0 || ti[len - 1] != (int32_t)hit) {                               \
                    ti[len] = (int32_t)hit; tc[len] = 0; len++;                              \
                    if (hit < C) d_c += wh; else d_w += wh;                                  \
                }                                                                            \
                tc[len - 1] += 1;                                                            \
                if (hit < C) { x_c += 1; cw_c += wh; } else cw_w += wh;                      \
            }                                                                                \
        }                                                                                    \
        t_len[r] = len;                                                                      \
        st[2] = x_c; st[3] = d_c; st[4] = d_w; st[5] = cw_c; st[6] = cw_w; st[7] = (double)len; \
        free(vals); free(bucket);                                                            \
    }                                                                                        \
    return failed;                                                                           \
}
DEFINE_SPARSE_SAMPLER(sample_sparse_f32, float)
DEFINE_SPARSE_SAMPLER(sample_sparse_f64, double)

/* Fused: surrogate gradient from the sparse counts, optimizer step, then w = exp(z - shift) of the
   new logits and its block sums, block by block (the block's gradient lives in a small buffer). */
#define DEFINE_FUSED(NAME, T, BS)                                                            \
void NAME(T *z, T *m, T *v, T *w, int64_t K, int64_t C, const int64_t *rows, int64_t n_rows, \
          const int64_t *offsets, const int32_t *t_idx, const int32_t *t_cnt,                \
          const int64_t *t_len, const double *coef, int surrogate, int opt, double lr_,      \
          double b1_, double b2_, double eps_, double wd_, double bc1_, double sbc2_,        \
          const double *shift, double *bsums, double *totals, double *wcs, double *wmax) {   \
    FTZ_BEGIN                                                                                \
    int64_t nb = (K + BLOCK - 1) / BLOCK;                                                    \
    const T lr = (T)lr_, b1 = (T)b1_, b2 = (T)b2_, eps = (T)eps_, wd = (T)wd_;               \
    const T step = (T)(lr_ / bc1_), sbc2 = (T)sbc2_, decay = (T)(1.0 - lr_ * wd_);            \
    for (int64_t ri = 0; ri < n_rows; ri++) {                                                \
        int64_t r = rows[ri], off = r * K;                                                   \
        T *zr = z + off, *wr = w + off, *mr = m ? m + off : 0, *vr = v ? v + off : 0;        \
        const int32_t *ti = t_idx + offsets[r], *tc = t_cnt + offsets[r];                    \
        int64_t len = t_len[r], ptr = 0;                                                     \
        const double *cf = coef + r * 4;                                                     \
        const T gs = (T)cf[0], S = (T)cf[1], ac = (T)cf[2], aw = (T)cf[3];                   \
        const T g_free = surrogate == 2 ? (T)0 : gs * S;  /* descent gradient / w_i, a_i = 0 */ \
        const T sh = (T)shift[r];                                                            \
        T g[BLOCK];                                                                          \
        for (int64_t blk = 0; blk < nb; blk++) {                                             \
            int64_t lo = blk * BLOCK, hi = lo + BLOCK < K ? lo + BLOCK : K, nn = hi - lo;     \
            for (int64_t j = 0; j < nn; j++) g[j] = g_free * wr[lo + j];                     \
            for (; ptr < len && ti[ptr] < hi; ptr++) {                                       \
                int64_t i = ti[ptr]; T c = (T)tc[ptr];                                       \
                T h = surrogate == 0 ? (T)1 : c;                                             \
                T a = (i < C ? ac : aw) * h;                                                 \
                g[i - lo] = surrogate == 2 ? -(gs * a) : -(gs * wr[i] * (a - S));            \
            }                                                                                \
            T *restrict zb = zr + lo, *restrict wb = wr + lo;                                    \
            if (opt == 0) {                                                                  \
                for (int64_t j = 0; j < nn; j++) {                                           \
                    T zi = zb[j] - lr * (g[j] + wd * zb[j]);                                 \
                    zb[j] = zi; wb[j] = EXP_T((T)(zi - sh));                                 \
                }                                                                            \
            } else {                                                                         \
                T *restrict mb = mr + lo, *restrict vb = vr + lo;                            \
                const T l2 = opt == 1 ? wd : (T)0, dec = opt == 1 ? (T)1 : decay;            \
                for (int64_t j = 0; j < nn; j++) {                                           \
                    T gi = g[j] + l2 * zb[j];                                                \
                    T mi = mb[j] + ((T)1 - b1) * (gi - mb[j]);                               \
                    T vi = b2 * vb[j] + ((T)1 - b2) * gi * gi;                               \
                    T zi = zb[j] * dec - step * mi / (SQRT(vi) / sbc2 + eps);                \
                    mb[j] = mi; vb[j] = vi; zb[j] = zi;                                      \
                    wb[j] = EXP_T((T)(zi - sh));                                             \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
        BS(wr, K, C, bsums + r * nb, totals + r, wcs + r, wmax + r);                         \
    }                                                                                        \
    FTZ_END                                                                                  \
}
DEFINE_FUSED(fused_step_f32, float, blocksums_f32)
DEFINE_FUSED(fused_step_f64, double, blocksums_f64)

DEFINE_SAMPLER(sample_counts_f32, float)
DEFINE_SAMPLER(sample_counts_f64, double)
"""

_LIB = None
_LIB_ERROR: str | None = None


def _cache_dir() -> Path:
    base = os.environ.get("FGRPO_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fgrpo-sim"


def _cpu_signature() -> str:
    """CPU model and feature flags (Linux), so a cached -march=native build never runs on another CPU."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    keep = [ln for ln in lines if ln.startswith(("model name", "flags"))][:2]
    return "\n".join(keep)


def _load_native():
    """Compile (once, cached by source hash) and load the C sampler; None if no compiler works."""
    global _LIB, _LIB_ERROR
    if _LIB is not None or _LIB_ERROR is not None:
        return _LIB
    digest = hashlib.sha256((_C_SOURCE + platform.machine() + sys.platform + _cpu_signature()).encode()).hexdigest()[:16]
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
                # -fno-trapping-math lets gcc turn the clamps of exp into vector min/max; -march=native
                # doubles the vector width where AVX2 exists (the cache key includes the CPU's flags)
                base_cmd = [compiler, "-O3", "-fno-math-errno", "-fno-trapping-math", "-shared", "-fPIC", "-std=c11",
                            str(src), "-o", str(out)]
                result = subprocess.run(base_cmd[:2] + ["-march=native"] + base_cmd[2:], capture_output=True, text=True)
                if result.returncode != 0:
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
        for name in ("refresh_f32", "refresh_f64"):
            fn = getattr(lib, name)
            fn.restype = None
            fn.argtypes = [ptr, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, ptr, ptr]
        for name in ("sample_sparse_f32", "sample_sparse_f64"):
            fn = getattr(lib, name)
            fn.restype = cint
            fn.argtypes = [ptr, ptr, ptr, ptr, i64, i64, ptr, i64, ptr, ptr, u64, ptr, ptr, ptr, ptr, ptr]
        for name in ("fused_step_f32", "fused_step_f64"):
            fn = getattr(lib, name)
            fn.restype = None
            fn.argtypes = [ptr, ptr, ptr, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, ptr, ptr, cint, cint] + [dbl] * 7 + [
                ptr, ptr, ptr, ptr, ptr]
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
            raise ValueError(f"backend (sampler) must be torch or auto on device {device}, got 'native' (CPU only)")
        if not native_available():
            raise ValueError(f"backend (sampler) 'native' needs a C compiler ({_LIB_ERROR}); use the torch backend")
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
    """fn over the row groups: the calling thread takes the first group, pool threads the rest."""
    if len(groups) == 1:
        return [fn(groups[0])]
    futures = [_thread_pool(len(groups) - 1).submit(fn, g) for g in groups[1:]]
    first = fn(groups[0])
    return [first] + [f.result() for f in futures]


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


_POOLS: dict = {}


def _thread_pool(n: int):
    from concurrent.futures import ThreadPoolExecutor

    if n not in _POOLS:
        _POOLS[n] = ThreadPoolExecutor(max_workers=n, thread_name_prefix="fgrpo-sampler")
    return _POOLS[n]


_GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's increment
_STREAM_MIX = 0xD1B54A32D192ED03  # the C kernel's seed_rng: key ^ (this * (stream + 1))


def _as_int64(x: int) -> int:
    """A 64-bit pattern as the signed int64 torch stores (torch integer arithmetic wraps modulo 2^64)."""
    x &= 0xFFFF_FFFF_FFFF_FFFF
    return x - (1 << 64) if x >> 63 else x


def _xor_shift_right_(z: torch.Tensor, k: int, scratch: torch.Tensor) -> torch.Tensor:
    """z ^= z >>> k in place (logical shift of int64 bit patterns: torch's >> is arithmetic on signed ints)."""
    torch.bitwise_right_shift(z, k, out=scratch)
    return z.bitwise_xor_(scratch.bitwise_and_((1 << (64 - k)) - 1))


def stream_uniforms(keys: torch.Tensor, stream: int, n: int, device=None) -> torch.Tensor:
    """[R, n] float64 uniforms in [0, 1): draw j of run r is a pure function of (keys[r], stream, j).

    Counter-based: the splitmix64 sequence seeded, like the native kernel's generator, with
    key ^ (0xD1B54A32D192ED03 * (stream + 1)); output j is the splitmix64 finaliser of
    seed + (j + 1) * golden. No generator state is shared between runs, so a run's draws never depend
    on the other runs of a batch, and the same integers come out on every device. A dozen in-place
    integer passes over [R, n] (one scratch buffer), no Python loop over runs or draws.
    """
    keys = torch.as_tensor(keys, dtype=torch.int64).reshape(-1, 1).to(device)
    seeds = keys ^ _as_int64(_STREAM_MIX * (int(stream) + 1))
    z = torch.arange(1, n + 1, dtype=torch.int64, device=keys.device).mul_(_as_int64(_GOLDEN)) + seeds
    scratch = torch.empty_like(z)
    _xor_shift_right_(z, 30, scratch).mul_(_as_int64(0xBF58476D1CE4E5B9))
    _xor_shift_right_(z, 27, scratch).mul_(_as_int64(0x94D049BB133111EB))
    _xor_shift_right_(z, 31, scratch)
    torch.bitwise_right_shift(z, 11, out=scratch).bitwise_and_((1 << 53) - 1)  # the top 53 bits
    return scratch.to(torch.float64).mul_(2.0**-53)


def sample_counts_torch(weights: torch.Tensor, n_draws, keys, stream: int,
                        out: torch.Tensor | None = None) -> torch.Tensor:
    """Same law as `sample_counts_native`, in torch on any device: inverse CDF, runs grouped by N.

    Run r's uniforms come from `stream_uniforms(keys[r], stream, N_r)`, so equal (key, stream) pairs give
    equal draws whatever the batch (as in the native sampler, whose generator differs: the two backends
    draw different numbers from the same law).
    """
    runs, actions = weights.shape
    if out is None:
        out = torch.empty_like(weights)
    out.zero_()
    keys = torch.as_tensor(keys, dtype=torch.int64).reshape(-1)
    n_list = torch.as_tensor(n_draws).reshape(-1).tolist()
    if len(n_list) != runs or keys.numel() != runs:
        raise ValueError(f"n_draws and keys must be shaped [{runs}]")
    for n in sorted(set(int(v) for v in n_list)):
        if n <= 0:
            continue
        members = [i for i, v in enumerate(n_list) if int(v) == n]
        rows = torch.tensor(members, device=weights.device)
        cdf = torch.cumsum(weights.index_select(0, rows).to(torch.float64), dim=1)
        total = cdf[:, -1:]
        if not bool(torch.all((total > 0) & torch.isfinite(total))):
            raise ValueError("weights must have a positive finite sum in every run")
        u = stream_uniforms(keys[members], stream, n, weights.device).mul_(total)
        idx = torch.searchsorted(cdf, u, right=True).clamp_(max=actions - 1)
        counts = torch.zeros((rows.numel(), actions), device=weights.device, dtype=weights.dtype)
        counts.scatter_add_(1, idx, torch.ones_like(u, dtype=weights.dtype))
        out.index_copy_(0, rows, counts)
    return out
