"""The unbiased pass@k estimator of Chen et al. (2021), vectorised and stable for large n.

pass@k = 1 - C(n - c, k) / C(n, k) for a problem with c correct out of n samples. The ratio of
binomials is evaluated in log space and turned into 1 - ratio with expm1; raw binomials (which
overflow a double beyond n of about 1030) are never formed. Two log-space forms are used:

* product form, when min(c, k) <= 64: log ratio = sum_{j < min(c, k)} log1p(-max(c, k) / (n - j))
  (Chen et al.'s product, over the shorter index). Accurate to a few ulp relative, which matters when
  pass@k is tiny (e.g. c = 1, k = 1, n = 1e5 gives 1e-5);
* log-gamma differences otherwise. Their absolute error grows like n log n ulp (about 1e-9 at
  n = 1e5), but min(c, k) > 64 forces pass@k >= 1 - exp(-65^2 / n) (>= 0.04 at n = 1e5), so the
  relative error stays below about 1e-7.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import gammaln

from fgrpo_sim.validation import check_integer


_PRODUCT_TERMS = 64  # use the product form when min(c, k) is at most this
_CHUNK = 1 << 15  # elements per product-form block (bounds memory to ~16 MB)


def _log_ratio_product(n: np.ndarray, c: np.ndarray, k: np.ndarray) -> np.ndarray:
    """log C(n-c, k) / C(n, k) as a sum of at most _PRODUCT_TERMS log1p terms (requires n - c >= k)."""
    short = np.minimum(c, k)
    other = np.maximum(c, k).astype(float)
    j = np.arange(_PRODUCT_TERMS)
    out = np.empty(n.shape, dtype=float)
    for start in range(0, n.size, _CHUNK):
        sl = slice(start, start + _CHUNK)
        used = j[None, :] < short[sl, None]
        denominators = np.where(used, n[sl, None] - j[None, :], 1.0)
        out[sl] = np.log1p(np.where(used, -other[sl, None] / denominators, 0.0)).sum(axis=1)
    return out


def pass_at_k(n: Any, c: Any, k: Any) -> np.ndarray | float:
    """Unbiased pass@k for n samples with c correct; n, c, k broadcast together (numpy rules).

    For a table over problems and several k use ``pass_at_k(n[:, None], c[:, None], ks[None, :])``.
    Requires n >= 1, 0 <= c <= n and 1 <= k <= n (ValueError otherwise). Returns a float for scalar
    input, else a float64 array of the broadcast shape. Exact edge cases: c = 0 gives 0, and
    n - c < k (in particular c = n, or k = n with c > 0) gives 1.
    """
    n_arr = check_integer("n", n, 1)
    c_arr = check_integer("c", c, 0)
    k_arr = check_integer("k", k, 1)
    try:
        n_b, c_b, k_b = np.broadcast_arrays(n_arr, c_arr, k_arr)
    except ValueError:
        raise ValueError(
            f"n, c and k must broadcast together, got shapes {n_arr.shape}, {c_arr.shape}, {k_arr.shape}"
        ) from None
    if np.any(c_b > n_b):
        i = np.flatnonzero(c_b > n_b)[0]
        raise ValueError(f"c must be in [0, n], got c = {c_b.flat[i]} for n = {n_b.flat[i]}")
    if np.any(k_b > n_b):
        i = np.flatnonzero(k_b > n_b)[0]
        raise ValueError(f"k must be in [1, n], got k = {k_b.flat[i]} for n = {n_b.flat[i]}")
    certain = n_b - c_b < k_b  # every k-subset contains a correct sample
    value = np.where(certain, 1.0, -np.expm1(np.minimum(log_miss_ratio(n_b, c_b, k_b), 0.0)))
    value = np.where(c_b == 0, 0.0, value)
    return float(value) if value.ndim == 0 else value


def log_miss_ratio(n: np.ndarray, c: np.ndarray, k: np.ndarray) -> np.ndarray:
    """log C(n - c, k) / C(n, k), the log of the unbiased estimate of (1 - p)^k, for broadcast integer arrays of
    one shape with 0 <= c <= n and 1 <= k <= n (the caller checks); -inf where n - c < k. The module docstring's
    two forms (product where min(c, k) <= 64, log-gamma otherwise)."""
    wrong = n - c
    certain = wrong < k
    safe_rest = np.where(certain, k, wrong - k)  # placeholder where the formula is not used
    # log C(n-c, k) - log C(n, k) = lgamma(n-c+1) - lgamma(n-c-k+1) - lgamma(n+1) + lgamma(n-k+1)
    log_ratio = gammaln(wrong + 1.0) - gammaln(safe_rest + 1.0) - gammaln(n + 1.0) + gammaln(n - k + 1.0)
    log_ratio = np.array(log_ratio, dtype=float, copy=True).reshape(np.shape(n))
    short = ~certain & (c > 0) & (np.minimum(c, k) <= _PRODUCT_TERMS)
    if np.any(short):
        log_ratio[short] = _log_ratio_product(n[short], c[short], k[short])
    log_ratio[c == 0] = 0.0
    log_ratio[certain] = -np.inf
    return log_ratio


def pass_at_every_k(n: Any, c: Any, k_max: int) -> np.ndarray:
    """pass@k for every k = 1..k_max of each problem (n, c: 1-D, one entry per problem; k_max <= every n), shape
    [problems, k_max]: `pass_at_k` at all k at once, for `fgrpo passk --k all`.

    Chen et al.'s product, log C(n - c, k) / C(n, k) = sum_{j < k} log1p(-c / (n - j)), is one cumulative sum
    per distinct (n, c): O(k_max) work, where `pass_at_k` spends up to 64 terms per k (the product form) or
    four log-gammas. Each partial sum adds at most k ulp of rounding to the log ratio, so pass@k stays within
    about k_max ulp relative of the exact value (tests/test_metrics.py holds it to mpmath at n = 2,000,000).
    Terms from j = n - c on are -inf: every k-subset then holds a correct sample, pass@k = 1.
    """
    n = np.atleast_1d(check_integer("n", n, 1))
    c = np.atleast_1d(check_integer("c", c, 0))
    if n.ndim != 1 or n.shape != c.shape:
        raise ValueError(f"n and c must be 1-D with one entry per problem, got shapes {n.shape} and {c.shape}")
    if np.any(c > n):
        i = int(np.flatnonzero(c > n)[0])
        raise ValueError(f"c must be in [0, n], got c = {c[i]} for n = {n[i]}")
    k_max = int(check_integer("k_max", k_max, 1, int(n.min()) if n.size else 1))
    pairs, inverse = np.unique(np.stack([n, c], axis=1), axis=0, return_inverse=True)
    j = np.arange(k_max, dtype=float)
    table = np.zeros((len(pairs), k_max))
    for row, (total, correct) in enumerate(pairs):
        if correct == 0:
            continue  # never a correct sample: pass@k = 0
        certain = int(total - correct)  # from index j = n - c on, the product holds a zero factor
        logs = np.full(k_max, -np.inf)
        logs[:certain] = np.log1p(-float(correct) / (total - j[:certain]))
        np.cumsum(logs, out=logs)
        table[row] = -np.expm1(logs)
    return table[inverse.ravel()]


def pass_at_k_table(m: int, ks: Any) -> np.ndarray:
    """Lookup table T[j, x] = pass@ks[j] for x = 0..m correct out of m samples, shape [len(ks), m + 1]."""
    m = int(check_integer("m", m, 1))
    ks = np.atleast_1d(check_integer("ks", ks, 1, m))
    x = np.arange(m + 1)
    return pass_at_k(np.full((1, m + 1), m), x[None, :], ks[:, None])


__all__ = ["pass_at_k", "pass_at_every_k", "pass_at_k_table", "log_miss_ratio"]
