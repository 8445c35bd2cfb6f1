"""maj@k: the accuracy of a majority vote over k samples, averaged over every size-k subset.

Scoring one subset: each sample with an extracted answer votes for its equivalence class, a sample
without one does not vote. The classes with the most votes win; the subset scores
(number of winning classes that are correct) / (number of winning classes), so a clear correct winner
scores 1 and a tie between the correct class and one wrong class scores 1/2. A subset without any
answer scores 0. When the grader deems several classes correct the same rule applies (each correct
class among the tied winners earns its share), so a subset scores 1 iff every winner is correct.

maj@k of a problem is the mean score over all C(n, k) subsets of its n present samples, computed
exactly without enumerating them (`_exact`): by linearity it is the sum over correct classes c of
E[1{c wins} / (number of winners)]. Condition on t, the votes c gets (a hypergeometric draw); a rival
class with m < t samples can never reach t, so it joins the no-answer samples in a free pool; each
rival with m >= t gets a polynomial sum_{s<t} w(m,s) x^s + w(m,t) x^t y (x counts samples drawn, y ties
with c), and the product over rivals, combined with the free pool for the rest of the subset, gives
the probability of each (drawn, ties) outcome. Weights are binomial pmfs w(m, s) = C(m,s) p^s q^(m-s),
p = k/n, instead of raw counts: their products never overflow (C(1024, 512) ~ 1e306 would) and the
normaliser C(n,k) p^k q^(n-k) is a single pmf value.

Where the exact count would take too long (very large K with big rival classes: an estimated
`EXACT_OP_BUDGET` microseconds per problem and k) a seeded Monte Carlo over `MC_SUBSETS` random subsets is used
instead; `maj_at_k_method` says which one a problem gets.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Collection, Literal, Sequence

import numpy as np
from scipy.special import gammaln

from reasoneval.errors import UserError
from reasoneval.metrics.passk import pass_at_k

EXACT_OP_BUDGET = 300_000.0  # microseconds of estimated work per problem and k (Monte Carlo takes ~100 ms)
MC_SUBSETS = 4096
MC_SEED = 20240601


def maj_ks(K: int) -> list[int]:
    """The k at which maj@k is reported: 1, 2, 4, ... below K, then K."""
    if K < 1:
        raise UserError(f"the number of samples per problem must be >= 1, got K={K}")
    ks: list[int] = []
    k = 1
    while k < K:
        ks.append(k)
        k *= 2
    ks.append(K)
    return ks


def _signature(
    classes: Sequence[int | None], correct_classes: Collection[int], k: int
) -> tuple[tuple[int, ...], tuple[int, ...], int, int]:
    n = len(classes)
    if not 1 <= k <= n:
        raise UserError(f"maj_at_k needs 1 <= k <= number of samples ({n}), got k={k}")
    counts = Counter(c for c in classes if c is not None)
    correct = frozenset(correct_classes)
    cc = tuple(sorted(m for cls, m in counts.items() if cls in correct))
    wc = tuple(sorted(m for cls, m in counts.items() if cls not in correct))
    return cc, wc, n - sum(counts.values()), k


def maj_at_k(classes: Sequence[int | None], correct_classes: Collection[int], k: int) -> float:
    """maj@k of one problem from its samples' answer classes (None = no answer extracted)."""
    return _maj_from_counts(*_signature(classes, correct_classes, k))


def maj_at_k_method(
    classes: Sequence[int | None], correct_classes: Collection[int], k: int
) -> Literal["exact", "monte_carlo"]:
    """Which estimator `maj_at_k` uses for this problem and k."""
    cc, wc, u, k = _signature(classes, correct_classes, k)
    if _shortcut(cc, wc, u, k) is not None or _exact_cost(cc, wc, u, k) <= EXACT_OP_BUDGET:
        return "exact"
    return "monte_carlo"


# Problems often share a vote pattern (e.g. all K samples give the right answer), and the same
# problem is scored again for the over-all-tasks aggregate: cache by the count signature.
@lru_cache(maxsize=65536)
def _maj_from_counts(cc: tuple[int, ...], wc: tuple[int, ...], u: int, k: int) -> float:
    quick = _shortcut(cc, wc, u, k)
    if quick is not None:
        return quick
    if _exact_cost(cc, wc, u, k) <= EXACT_OP_BUDGET:
        return _exact(cc, wc, u, k)
    return _monte_carlo(cc, wc, u, k)


def _shortcut(cc: tuple[int, ...], wc: tuple[int, ...], u: int, k: int) -> float | None:
    n = sum(cc) + sum(wc) + u
    if not cc:
        return 0.0
    if k == n:
        top = max(cc + wc)
        return sum(m == top for m in cc) / sum(m == top for m in cc + wc)
    if not wc:
        # Every winner is correct: the subset only has to hold some answer.
        return pass_at_k(n, n - u, k)
    if k == 1:
        return sum(cc) / n
    return None


def _exact_cost(cc: tuple[int, ...], wc: tuple[int, ...], u: int, k: int) -> float:
    """Rough run time of `_exact` in microseconds: ~1.5 us per numpy call, ~1 ns per multiply-add."""
    n = sum(cc) + sum(wc) + u
    allc = cc + wc
    cost = 0.0
    for m_c in set(cc):
        others = list(allc)
        others.remove(m_c)
        hi = min(max(others, default=0), k // 2, m_c)
        for t in range(max(1, k - (n - m_c)), hi + 1):
            rest = k - t
            rivals = sum(1 for m in others if m >= t)
            rows = (min(rivals, rest // t) + 2) // 2
            cost += rivals * (15.0 + 1e-3 * rows * (rest + t) * t) + 40.0
    return cost


@lru_cache(maxsize=4)
def _weights(n: int, k: int) -> tuple[np.ndarray, float]:
    """W[m, s] = C(m,s) p^s q^(m-s) with p = k/n (0 for s > m), and the normaliser W[n, k].

    Cached: task_metrics scores every problem of a task at one k in turn, and they share n.
    """
    p = k / n
    logp, logq = np.log(p), np.log1p(-p)
    lg = gammaln(np.arange(n + 1, dtype=np.float64) + 1.0)  # lg[i] = log(i!)
    m = np.arange(n + 1)[:, None]
    s = np.arange(n + 1)[None, :]
    valid = s <= m
    with np.errstate(invalid="ignore", over="ignore"):
        logw = lg[m] - lg[s] - lg[np.where(valid, m - s, 0)] + s * logp + (m - s) * logq
    table = np.where(valid, np.exp(np.where(valid, logw, -np.inf)), 0.0)
    table.setflags(write=False)
    return table, float(table[n, k])


@lru_cache(maxsize=64)
def _gauss01(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [0, 1]: exact for polynomials of degree < 2 * nodes."""
    x, wts = np.polynomial.legendre.leggauss(nodes)
    return (x + 1.0) / 2.0, wts / 2.0


def _exact(cc: tuple[int, ...], wc: tuple[int, ...], u: int, k: int) -> float:
    n = sum(cc) + sum(wc) + u
    W, norm = _weights(n, k)
    allc = cc + wc
    total = 0.0
    for m_c, mult in Counter(cc).items():
        others = list(allc)
        others.remove(m_c)
        w_c = W[m_c]
        biggest_rival = max(others, default=0)
        # t above every rival's size or above half the subset: no rival can reach t, c wins outright.
        lo = min(biggest_rival, k // 2) + 1
        t_out = np.arange(max(lo, k - (n - m_c)), min(k, m_c) + 1)
        if len(t_out):
            total += mult * float(np.dot(w_c[t_out], W[n - m_c, k - t_out]))
        for t in range(max(1, k - (n - m_c)), min(lo - 1, m_c) + 1):
            rest = k - t  # samples the subset draws besides c's t
            rivals = [m for m in others if m >= t]
            free = n - m_c - sum(rivals)
            # 1/(1 + ties) = integral_0^1 z^ties dz: weight each tie by z and integrate with
            # Gauss-Legendre nodes, exact for the polynomial degree (ties <= max_ties) involved.
            z, zw = _gauss01((min(len(rivals), rest // t) + 2) // 2)
            # dp[node, drawn]: weight of the rivals drawing `drawn` samples, ties weighted by z.
            # Rows are padded to width rest + t so one flat convolution serves all rows at once.
            width = rest + t
            dp = np.zeros((len(z), width))
            dp[:, 0] = 1.0
            for m in rivals:
                wm = W[m]
                new: np.ndarray = np.convolve(dp.ravel(), wm[:t])[: dp.size].reshape(dp.shape)  # draws < t
                new[:, rest + 1 :] = 0.0
                new[:, t : rest + 1] += (wm[t] * z)[:, None] * dp[:, : rest + 1 - t]  # a tie
                dp = new
            # The free pool (no-answer samples and rivals too small to reach t) fills the subset.
            fill_w = W[free, rest - np.arange(rest + 1)]
            total += mult * float(w_c[t] * (zw @ (dp[:, : rest + 1] @ fill_w)))
    return min(1.0, max(0.0, total / norm))


def _monte_carlo(cc: tuple[int, ...], wc: tuple[int, ...], u: int, k: int) -> float:
    allc = cc + wc
    r = len(allc)
    n = sum(allc) + u
    # Label r is "no answer": it gets a column so bincount stays rectangular, and is ignored in the vote.
    labels = np.repeat(np.arange(r + 1), list(allc) + [u])
    rng = np.random.default_rng([MC_SEED, *allc, u, k, len(cc)])
    scores = []
    chunk = max(1, min(MC_SUBSETS, 4_000_000 // n))
    done = 0
    while done < MC_SUBSETS:
        size = min(chunk, MC_SUBSETS - done)
        picks = np.argpartition(rng.random((size, n)), k - 1, axis=1)[:, :k]
        flat = (labels[picks] + (r + 1) * np.arange(size)[:, None]).ravel()
        votes = np.bincount(flat, minlength=size * (r + 1)).reshape(size, r + 1)[:, :r]
        top = votes.max(axis=1)
        winners = (votes == top[:, None]) & (top[:, None] > 0)
        n_win = winners.sum(axis=1)
        score = np.where(n_win > 0, winners[:, : len(cc)].sum(axis=1) / np.maximum(n_win, 1), 0.0)
        scores.append(score)
        done += size
    return float(np.concatenate(scores).mean())
