"""Adaptive sampling (`run --target-se`): how many more samples each problem gets. Pure: numbers in, numbers out.

Two streams per problem (cross-fitting): stream 0 is its even sample indices, stream 1 its odd ones. How many
samples a stream gets is decided from the *other* stream's outcomes only, so given those, a stream's count is
fixed and its c/n is an unbiased estimate of p_i. The problem's estimate is the mean of its two streams'
rates (`crossfit`). Pooling c/n over samples whose number depends on their own outcomes is biased (a lucky 4/4
on a 90% problem stops early at 1.0): 0.5 to 0.9 points on a MATH-500-like profile, many times the SE.

The quantity driven down is `stderr_resample`, the SE of the task's mean accuracy over re-runs of the same
problems: Var = (1/Q²) Σ_i p_i(1-p_i)/n_i. For a fixed total of samples, Σ_i σ_i²/n_i is smallest with
n_i ∝ σ_i (Neyman allocation), σ_i = √(p_i(1-p_i)) the per-sample SD of problem i. σ_i is unknown: it is
estimated from a Beta posterior (Jeffreys prior, Beta(½, ½)), as √E[p(1-p)] — which is never 0, so a
problem seen 4/4 correct still gets a share (about ⅔ of a 3/4 problem's), not written off as certain.

Samples are added greedily, one at a time, to the problem whose next sample lowers Σ σ_i²/n_i most
(σ_i²/(n_i(n_i+1))): the integer version of n_i ∝ σ_i that also respects what each problem already has.

The stopping rule uses `metrics.summary.stderr_resample_adaptive` on the finished samples — the very figure
summary.json reports as `stderr_resample` — so "the target is met" and the reported SE are one formula. Its
per-problem variances are posterior means under a Beta prior fitted to the task (not the Jeffreys prior of the
allocation, not the plug-in p̂(1-p̂)): the plug-in let a run stop after lucky draws (4/4 problems add 0) and its
interval covered 91-92%. Why the estimate of the mean stays unbiased enough and the interval covers:
docs/statistics.md (adaptive sampling).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from reasoneval.metrics.summary import crossfit, stderr_resample_adaptive

# Jeffreys: invariant, and for Bernoulli data the least informative proper choice; its posterior mean
# (c+½)/(n+1) keeps 0/4 and 4/4 off the boundary without pulling 2/4 anywhere.
PRIOR_A = 0.5
PRIOR_B = 0.5
FIRST_ROUND = 4  # samples every problem gets before any allocation (enough for a first σ estimate)


def posterior_sd(n: np.ndarray, c: np.ndarray) -> np.ndarray:
    """√E[p(1-p)] under the Beta(c+½, n-c+½) posterior: the expected per-sample SD of each problem."""
    a = np.asarray(c, dtype=np.float64) + PRIOR_A
    b = np.asarray(n, dtype=np.float64) - np.asarray(c, dtype=np.float64) + PRIOR_B
    return np.sqrt(a * b / ((a + b) * (a + b + 1.0)))


def estimated_se(n: np.ndarray, c: np.ndarray) -> float:
    """The re-run SE (fraction, not points) of the task's mean from (Q, 2) stream counts: summary.json's
    `stderr_resample` of an adaptive run (`metrics.summary.stderr_resample_adaptive`: posterior variances under
    the task's fitted prior, cross-fit effective sample sizes). inf while some problem has no finished sample."""
    n = np.asarray(n)
    if len(n) == 0 or (n.sum(axis=1) < 1).any():
        return math.inf
    _, n_eff = crossfit(n, c)
    return stderr_resample_adaptive(n.sum(axis=1), np.asarray(c).sum(axis=1), n_eff)


def samples_needed(sd: np.ndarray, target: float) -> float:
    """Total samples Neyman allocation needs for SE `target` (fraction): (Σ σ_i)² / (Q² S²)."""
    q = len(sd)
    return float(np.sum(sd)) ** 2 / (q * q * target * target) if q else 0.0


@dataclass(frozen=True)
class Round:
    """What to add next: `add[i, s]` more samples for stream s of problem i; `done` when nothing more is wanted
    and why ("target" met, "max_n" reached by every problem that would need more, "budget" spent)."""

    add: np.ndarray
    done: bool
    reason: str | None
    se: float  # the current estimate (fraction)


def next_round(n: np.ndarray, c: np.ndarray, *, target: float, max_n: int, pending: np.ndarray | None = None,
               budget: int | None = None, min_round: int = 1, max_round: int | None = None,
               first_round: int = FIRST_ROUND) -> Round:
    """The next samples to draw for one task.

    n, c: (Q, 2) finished samples and correct ones per problem and stream. pending: (Q, 2) samples asked for
    but not finished or not scored; they count as drawn for the allocation. target: SE in fractions (0.01 =
    1 point). max_n: most samples per problem. budget: most samples still allowed (pending excluded).
    min_round: the least to add when more is needed (a runner keeps its workers busy with at least its
    concurrency). max_round: the most to add at once (a runner asks again as soon as its queue runs low, so
    small rounds keep every decision on the latest outcomes).

    Every problem first gets `first_round` samples, half per stream; then, while the SE estimate from the
    finished samples is above target, about half the projected shortfall (never less than min_round, never
    more than half again what is drawn) is allocated greedily. Nothing is added while the finished samples
    meet the target.
    """
    n = np.asarray(n, dtype=np.int64).reshape(-1, 2)
    c = np.asarray(c, dtype=np.int64).reshape(-1, 2)
    pend = np.zeros_like(n) if pending is None else np.asarray(pending, dtype=np.int64).reshape(-1, 2)
    have = n + pend
    zero = np.zeros_like(n)
    waiting = int(pend.sum()) > 0
    left = math.inf if budget is None else max(0, budget)
    first_total = min(first_round, max_n)
    first = np.clip(np.array([(first_total + 1) // 2, first_total // 2]) - have, 0, None)
    if first.sum() > 0:
        if left <= 0:
            return Round(zero, not waiting, "budget" if not waiting else None, estimated_se(n, c))
        if first.sum() > left:  # spread what the budget allows, lowest problems first
            first = _cap_total(first, int(left))
        return Round(first, False, None, estimated_se(n, c))
    se = estimated_se(n, c)
    if se <= target:
        return Round(zero, not waiting, "target" if not waiting else None, se)
    room = np.clip(max_n - have.sum(axis=1), 0, None)
    if room.sum() == 0:
        return Round(zero, not waiting, "max_n" if not waiting else None, se)
    if left <= 0:
        return Round(zero, not waiting, "budget" if not waiting else None, se)
    shortfall = samples_needed(posterior_sd(n.sum(axis=1), c.sum(axis=1)), target) - float(have.sum())
    if shortfall <= 0 and waiting:
        # What is in flight should reach the target: wait for its outcomes before asking for more.
        return Round(zero, False, None, se)
    # At most half again what is drawn: σ is re-estimated from each round's outcomes before the next.
    size = int(min(left, room.sum(), max(min_round, min(math.ceil(shortfall / 2), int(have.sum()) // 2))))
    if max_round is not None:
        size = min(size, max(1, max_round))
    return Round(greedy_neyman(have, n, c, size, max_n), False, None, se)


def greedy_neyman(have: np.ndarray, n: np.ndarray, c: np.ndarray, size: int, max_n: int) -> np.ndarray:
    """`size` more samples, one at a time to the stream whose next sample lowers Σ_i v_i (1/n_i0 + 1/n_i1)
    most (the cross-fit variance, up to a constant): v_i/(m(m+1)) at m samples in the stream.

    v_i of stream s comes from the *other* stream's posterior, with its observed rate carried forward to m
    samples (a problem seen 0/4 is not treated as 0/4 forever inside one large round: its posterior would
    narrow as its zeros accumulate). Ties go to the lower index (deterministic)."""
    q = len(have)
    add = np.zeros((q, 2), dtype=np.int64)
    rate = np.where(n > 0, c / np.maximum(n, 1), 0.5)[:, ::-1]  # the other stream's
    total = have.sum(axis=1)
    heap = [(-_gain(float(rate[i, s]), int(have[i, s])), i, s) for i in range(q) for s in (0, 1) if total[i] < max_n]
    heapq.heapify(heap)
    placed = 0
    while heap and placed < size:
        _, i, s = heapq.heappop(heap)
        if total[i] >= max_n:
            continue
        add[i, s] += 1
        total[i] += 1
        placed += 1
        if total[i] < max_n:
            heapq.heappush(heap, (-_gain(float(rate[i, s]), int(have[i, s] + add[i, s])), i, s))
    return add


def _gain(rate: float, m: int) -> float:
    """How much the next sample of a stream at m samples, observed at `rate`, lowers v/m."""
    if m <= 0:
        return math.inf
    a = rate * m + PRIOR_A
    b = m - rate * m + PRIOR_B
    return a * b / ((a + b) * (a + b + 1.0)) / (m * (m + 1))


def _cap_total(want: np.ndarray, total: int) -> np.ndarray:
    out = np.zeros_like(want)
    flat_want, flat_out = want.reshape(-1), out.reshape(-1)
    while total > 0 and (flat_want - flat_out).sum() > 0:
        for i in np.flatnonzero(flat_want - flat_out > 0):
            if total == 0:
                break
            flat_out[i] += 1
            total -= 1
    return out
