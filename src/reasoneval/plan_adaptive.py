"""Adaptive sampling (`run --target-se`): how many more samples each problem gets. Pure: numbers in, numbers out.

The quantity driven down is `stderr_resample`, the SE of the task's mean accuracy over re-runs of the same
problems: Var = (1/Q²) Σ_i p_i(1-p_i)/n_i. For a fixed total of samples, Σ_i σ_i²/n_i is smallest with
n_i ∝ σ_i (Neyman allocation), σ_i = √(p_i(1-p_i)) the per-sample SD of problem i. σ_i is unknown: it is
estimated from a Beta posterior (Jeffreys prior, Beta(½, ½)), as √E[p(1-p)] — which is never 0, so a
problem seen 4/4 correct still gets a share (about ⅔ of a 3/4 problem's), not written off as certain.

Samples are added greedily, one at a time, to the problem whose next sample lowers Σ σ_i²/n_i most
(σ_i²/(n_i(n_i+1))): the integer version of n_i ∝ σ_i that also respects what each problem already has.

The stopping rule uses `metrics.summary.stderr_resample` on the finished samples — the very figure
summary.json reports — so "the target is met" and the reported SE are one formula. Why the estimate of the
mean stays unbiased enough and the interval covers: docs/statistics.md (adaptive sampling).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from .metrics.summary import stderr_resample

# Jeffreys: invariant, and for Bernoulli data the least informative proper choice; its posterior mean
# (c+½)/(n+1) keeps 0/4 and 4/4 off the boundary without pulling 2/4 anywhere.
PRIOR_A = 0.5
PRIOR_B = 0.5
FLOOR_FRACTION = 0.25
FIRST_ROUND = 4  # samples every problem gets before any allocation (enough for a first σ estimate)


def posterior_sd(n: np.ndarray, c: np.ndarray) -> np.ndarray:
    """√E[p(1-p)] under the Beta(c+½, n-c+½) posterior: the expected per-sample SD of each problem."""
    a = np.asarray(c, dtype=np.float64) + PRIOR_A
    b = np.asarray(n, dtype=np.float64) - np.asarray(c, dtype=np.float64) + PRIOR_B
    return np.sqrt(a * b / ((a + b) * (a + b + 1.0)))


def estimated_se(n: np.ndarray, c: np.ndarray) -> float:
    """The re-run SE (fraction, not points) of the mean over the finished samples: summary.json's
    `stderr_resample`. inf while some problem has no finished sample."""
    n = np.asarray(n, dtype=np.float64)
    if len(n) == 0 or (n < 1).any():
        return math.inf
    return float(stderr_resample(np.asarray(c, dtype=np.float64) / n, n))


def samples_needed(sd: np.ndarray, target: float) -> float:
    """Total samples Neyman allocation needs for SE `target` (fraction): (Σ σ_i)² / (Q² S²)."""
    q = len(sd)
    return float(np.sum(sd)) ** 2 / (q * q * target * target) if q else 0.0


@dataclass(frozen=True)
class Round:
    """What to add next: `add[i]` more samples for problem i (0 = none); `done` when nothing more is wanted
    and why ("target" met, "max_n" reached by every problem that would need more, "budget" spent)."""

    add: np.ndarray
    done: bool
    reason: str | None
    se: float  # the current estimate (fraction)


def next_round(n: np.ndarray, c: np.ndarray, *, target: float, max_n: int, pending: np.ndarray | None = None,
               budget: int | None = None, min_round: int = 1, first_round: int = FIRST_ROUND) -> Round:
    """The next samples to draw for one task.

    n, c: finished samples and correct ones per problem. pending: samples already asked for but not
    finished (in flight); they count as drawn for the allocation (their outcome is not known yet).
    target: SE in fractions (0.01 = 1 point). max_n: most samples per problem. budget: most samples
    still allowed (in flight ones excluded). min_round: the least to add when more is needed (a runner
    keeps its workers busy with at least its concurrency).

    Every problem first gets `first_round` samples (capped by max_n); then, while the SE estimate from the
    finished samples is above target, about half the projected shortfall (never less than min_round) is
    allocated greedily by posterior SD. Nothing is added while the finished samples already meet the target.
    """
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    pend = np.zeros_like(n) if pending is None else np.asarray(pending, dtype=np.int64)
    have = n + pend
    zero = np.zeros_like(n)
    left = math.inf if budget is None else max(0, budget)
    first = np.clip(min(first_round, max_n) - have, 0, None)
    if first.sum() > 0:
        if left <= 0:
            return Round(zero, True, "budget", estimated_se(n, c))
        if first.sum() > left:  # spread what the budget allows, lowest problems first
            first = _cap_total(first, int(left))
        return Round(first, False, None, estimated_se(n, c))
    se = estimated_se(n, c)
    if se <= target:
        return Round(zero, pend.sum() == 0, "target" if pend.sum() == 0 else None, se)
    room = np.clip(max_n - have, 0, None)
    if room.sum() == 0:
        return Round(zero, pend.sum() == 0, "max_n" if pend.sum() == 0 else None, se)
    if left <= 0:
        return Round(zero, pend.sum() == 0, "budget" if pend.sum() == 0 else None, se)
    sd = posterior_sd(n, c)
    shortfall = samples_needed(sd, target) - float(have.sum())
    if shortfall <= 0 and pend.sum() > 0:
        # What is in flight should reach the target: wait for its outcomes before asking for more.
        return Round(zero, False, None, se)
    # At most half again what is drawn: σ is re-estimated from each round's outcomes before the next.
    size = int(min(left, room.sum(), max(min_round, min(math.ceil(shortfall / 2), int(have.sum()) // 2))))
    add = greedy_neyman(have, n, c, size, max_n)
    # The floor: no problem below a quarter of the most-sampled one. How many samples a problem gets depends
    # on its own outcomes, which biases its c/n (a lucky 4/4 stops early at 1.0); the floor bounds how
    # early (docs/statistics.md, adaptive sampling).
    floor = np.minimum(max_n, int(math.ceil(FLOOR_FRACTION * float((have + add).max()))))
    add += np.clip(floor - (have + add), 0, None)
    return Round(add, False, None, se)


def greedy_neyman(have: np.ndarray, n: np.ndarray, c: np.ndarray, size: int, max_n: int) -> np.ndarray:
    """`size` more samples, one at a time to the problem whose next sample lowers Σ σ²/n most.

    σ² of a problem at m samples is the posterior's with its observed rate carried forward (c·m/n correct
    of m): a problem seen 0/4 is not treated as 0/4 forever inside one large round, its posterior would
    narrow as its zeros accumulate. Ties go to the lower index (deterministic)."""
    add = np.zeros(len(have), dtype=np.int64)
    rate = np.where(n > 0, c / np.maximum(n, 1), 0.5)
    heap = [(-_gain(float(r), int(h)), i) for i, (r, h) in enumerate(zip(rate, have)) if h < max_n]
    heapq.heapify(heap)
    for _ in range(size):
        if not heap:
            break
        _, i = heapq.heappop(heap)
        add[i] += 1
        m = int(have[i] + add[i])
        if m < max_n:
            heapq.heappush(heap, (-_gain(float(rate[i]), m), i))
    return add


def _gain(rate: float, m: int) -> float:
    """How much the next sample lowers σ²/m for a problem at m samples observed at `rate`."""
    if m <= 0:
        return math.inf
    a = rate * m + PRIOR_A
    b = m - rate * m + PRIOR_B
    return a * b / ((a + b) * (a + b + 1.0)) / (m * (m + 1))


def _cap_total(want: np.ndarray, total: int) -> np.ndarray:
    out = np.zeros_like(want)
    while total > 0 and (want - out).sum() > 0:
        for i in np.flatnonzero(want - out > 0):
            if total == 0:
                break
            out[i] += 1
            total -= 1
    return out
