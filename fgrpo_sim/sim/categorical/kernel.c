/* Native kernels of the categorical simulator, compiled on first use by sampling._load_native
   (cached by a hash of this file, the machine and its CPU flags; see fgrpo_sim/sim/categorical/sampling.py).
   sample_counts: exact Multinomial counts (dense); refresh / sample_sparse / fused_step: the engine's
   native step, driven by native.py. */

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
         const int64_t *n_draws, const uint64_t *keys, uint64_t stream, int64_t *counts,     \
         double *stats) {                                                                    \
    int failed = 0;                                                                          \
    for (int64_t ri = 0; ri < n_rows; ri++) {                                                \
        int64_t r = rows[ri];                                                                \
        const T *wr = w + r * K;                                                             \
        int64_t *cr = counts + r * K;  /* integers: a float32 count stops at 2^24 */         \
        double *st = stats + r * NSTAT;                                                      \
        memset(cr, 0, sizeof(int64_t) * (size_t)K);                                          \
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

/* ---------------- fused categorical step (see native.py) ---------------- */
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
