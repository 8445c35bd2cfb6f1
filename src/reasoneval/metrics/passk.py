"""Unbiased pass@k (Chen et al. 2021) without raw binomial coefficients.

pass@k = 1 - C(n-c, k) / C(n, k). C(1024, 512) is ~1e306, so the binomials themselves overflow
float64 (and lose precision long before); the ratio is a product of factors in [0, 1]:

    C(n-c, k) / C(n, k) = prod_{j=0}^{k-1} (n-c-j) / (n-j)  =  prod_{i=n-c+1}^{n} (1 - k/i)

The second form has c factors, the first k; the cumulative product of the first gives every k at once.
"""

from __future__ import annotations

import numpy as np

from reasoneval.errors import UserError


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem with n samples, c of them correct."""
    if not (0 <= c <= n) or k < 1:
        raise UserError(f"pass_at_k needs 0 <= c <= n and k >= 1, got n={n} c={c} k={k}")
    if k > n:
        raise UserError(f"pass_at_k needs k <= n (the samples a problem has), got n={n} k={k}")
    if n - c < k:
        # Every size-k subset holds a correct sample.
        return 1.0
    i = np.arange(n - c + 1, n + 1, dtype=np.float64)
    return float(1.0 - np.prod(1.0 - k / i))


def pass_at_k_curve(n: int, c: int) -> np.ndarray:
    """pass@k for k = 1..n of one problem, as an array of length n (index k-1)."""
    if not (0 <= c <= n) or n < 1:
        raise UserError(f"pass_at_k_curve needs 0 <= c <= n and n >= 1, got n={n} c={c}")
    j = np.arange(n, dtype=np.float64)
    # Factor j is (n-c-j)/(n-j); once n-c-j hits 0 every further ratio is exactly 0.
    factors = np.clip((n - c - j) / (n - j), 0.0, 1.0)
    return 1.0 - np.cumprod(factors)


def pass_at_k_matrix(n: np.ndarray, c: np.ndarray, K: int) -> np.ndarray:
    """pass@k for many problems at once: shape (Q, K), NaN where k > n (too few samples).

    Problems are grouped by n so each group is one vectorised cumulative product.
    """
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    out = np.full((len(n), K), np.nan)
    for n_val in np.unique(n):
        if n_val < 1:
            continue
        rows = np.nonzero(n == n_val)[0]
        width = int(min(n_val, K))
        j = np.arange(width, dtype=np.float64)
        factors = (n_val - c[rows, None] - j[None, :]) / (n_val - j[None, :])
        np.clip(factors, 0.0, 1.0, out=factors)
        out[rows, :width] = 1.0 - np.cumprod(factors, axis=1)
    return out
