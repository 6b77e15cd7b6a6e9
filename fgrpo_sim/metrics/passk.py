"""The unbiased pass@k estimator of Chen et al. (2021), vectorised and stable for large n.

pass@k = 1 - C(n - c, k) / C(n, k) for a problem with c correct out of n samples. The ratio of
binomials is evaluated in log space with log-gamma differences and turned into 1 - ratio with
expm1, so small pass@k values keep full relative precision; raw binomials (which overflow a double
beyond n of about 1030) are never formed. For n = 1e5 the log-gamma differences are accurate to
about 1e-9 relative, far below any sampling error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import gammaln

from fgrpo_sim.validation import check_integer


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
    wrong = n_b - c_b
    certain = wrong < k_b  # every k-subset contains a correct sample
    safe_rest = np.where(certain, k_b, wrong - k_b)  # placeholder where the formula is not used
    # log C(n-c, k) - log C(n, k) = lgamma(n-c+1) - lgamma(n-c-k+1) - lgamma(n+1) + lgamma(n-k+1)
    log_ratio = gammaln(wrong + 1.0) - gammaln(safe_rest + 1.0) - gammaln(n_b + 1.0) + gammaln(n_b - k_b + 1.0)
    value = np.where(certain, 1.0, -np.expm1(np.minimum(log_ratio, 0.0)))
    value = np.where(c_b == 0, 0.0, value)
    return float(value) if value.ndim == 0 else value


def pass_at_k_table(m: int, ks: Any) -> np.ndarray:
    """Lookup table T[j, x] = pass@ks[j] for x = 0..m correct out of m samples, shape [len(ks), m + 1]."""
    m = int(check_integer("m", m, 1))
    ks = np.atleast_1d(check_integer("ks", ks, 1, m))
    x = np.arange(m + 1)
    return pass_at_k(np.full((1, m + 1), m), x[None, :], ks[:, None])


__all__ = ["pass_at_k", "pass_at_k_table"]
