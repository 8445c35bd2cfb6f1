"""Designs measured against `run --target-se`'s coverage shortfall (docs/statistics.md, adaptive sampling).

Not the shipped rule (that is scripts/adaptive_simulation.py on reasoneval.run.plan_adaptive): each design here is
simulated on the same profiles and targets (the re-run SE of uniform K), with fixed rounds of Q/8 samples where
it has rounds, and reported as bias of the mean, coverage of mean ∓ 1.96·SE (the SE the design would report),
SD of the error over the RMS of that SE (1.0 = the SE is right on average), how often that SE is at or below the
target, and samples against uniform K.

    PYTHONPATH=src python scripts/adaptive_variants.py --design twostage --runs 1000 --seed 71

Designs (streams = a problem's even / odd sample indices, as in plan_adaptive):
  shipped           plan_adaptive.next_round in fixed rounds, its stopping rule and SE (for reference)
  split-plug        each round half per stream, stream s allocated (Jeffreys gains) from stream 1-s's outcomes
                    only; stream s stops when its own mean's SE, computed with stream 1-s's unbiased plug-in
                    variances, is at most √2·target; SE: each stream's own variances, (v0/n0 + v1/n1)/4
  split-plug-ghost  split-plug designed from an independent copy of the other stream (a diagnostic, not a
                    design: it shows what the feedback between the streams costs)
  split-eb          split-plug with the variances of the stop from a Beta posterior whose prior is fitted to
                    the other stream's rates (moments); SE: the same formula as the stop
  twostage          every problem 2 + 2 samples, then each stream's final counts planned once (Neyman, same
                    Beta posterior) from the other stream's first 2 samples; SE: the stop's formula on all samples
  twostage-iter     twostage re-planned from all samples until both streams' plans are met (--first-share:
                    the first plan for only that share of the samples, so that the re-plans add less blindly)
"""

from __future__ import annotations

import argparse
import heapq
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from adaptive_simulation import PROFILES, expected_uniform_se, run_adaptive

from reasoneval.run.plan_adaptive import _gain, crossfit, estimated_se

DESIGNS = ("shipped", "split-plug", "split-plug-ghost", "split-eb", "twostage", "twostage-iter")


def plugin_var(n: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Unbiased r(1-r)n/(n-1) per problem of one stream."""
    n = n.astype(np.float64)
    r = c / np.maximum(n, 1)
    return r * (1 - r) * n / np.maximum(n - 1, 1)


def eb_var(n: np.ndarray, c: np.ndarray) -> np.ndarray:
    """E[p(1-p)] per problem under the Beta posterior whose prior is fitted to these problems by moments
    (between-problem variance = variance of the rates less their mean binomial variance)."""
    n = n.astype(np.float64)
    c = c.astype(np.float64)
    r = c / np.maximum(n, 1)
    m = float(np.clip(r.mean(), 1e-3, 1 - 1e-3))
    between = float(r.var()) - float(np.mean(r * (1 - r) / np.maximum(n - 1, 1)))
    between = min(max(between, 1e-4), 0.99 * m * (1 - m))
    strength = m * (1 - m) / between - 1
    a = c + m * strength
    b = n - c + (1 - m) * strength
    return a * b / ((a + b) * (a + b + 1))


def stream_design_var(n: np.ndarray, c: np.ndarray, s: int, var: str) -> float:
    """Σ_i v_i / n_{i,s} with v_i from stream 1-s only (what stream s's stop reads): Q² · Var(stream s's mean)."""
    v = (plugin_var if var == "plug" else eb_var)(n[:, 1 - s], c[:, 1 - s])
    return float(np.sum(v / np.maximum(n[:, s], 1)))


def greedy_stream(n: np.ndarray, rate_other: np.ndarray, s: int, size: int, cap: int) -> np.ndarray:
    """`size` samples for stream s, one at a time where the Jeffreys gain from the other stream's rate is largest."""
    add = np.zeros(len(n), dtype=np.int64)
    heap = [(-_gain(float(rate_other[i]), int(n[i, s])), i) for i in range(len(n)) if n[i, s] < cap]
    heapq.heapify(heap)
    for _ in range(size):
        if not heap:
            break
        _, i = heapq.heappop(heap)
        add[i] += 1
        if n[i, s] + add[i] < cap:
            heapq.heappush(heap, (-_gain(float(rate_other[i]), int(n[i, s] + add[i])), i))
    return add


def run_split(p: np.ndarray, target: float, rng: np.random.Generator, var: str, ghost: bool,
              max_n: int = 256) -> tuple[np.ndarray, np.ndarray]:
    q = len(p)
    n = np.full((q, 2), 2, dtype=np.int64)
    c = rng.binomial(n, p[:, None])
    design = rng.binomial(n, p[:, None]) if ghost else c  # the outcomes the design reads
    half = max(1, q // 16)
    active = [True, True]
    while True:
        for s in (0, 1):
            active[s] = active[s] and stream_design_var(n, design, s, var) > 2 * (q * target) ** 2
        if not any(active):
            return n, c
        add = np.zeros_like(n)
        for s in (0, 1):
            if active[s]:
                rate_other = design[:, 1 - s] / np.maximum(n[:, 1 - s], 1)
                add[:, s] = greedy_stream(n, rate_other, s, half, max_n // 2)
        if add.sum() == 0:
            return n, c
        c += rng.binomial(add, p[:, None])
        if ghost:
            design += rng.binomial(add, p[:, None])
        n += add


def neyman_plan(v: np.ndarray, have: np.ndarray, goal: float, cap: int) -> np.ndarray:
    """Fewest more samples (greedy Neyman) for Σ v_i / n_i ≤ goal, never fewer than `have`."""
    n = have.astype(np.int64).copy()
    cur = float(np.sum(v / n))
    heap = [(-v[i] / (n[i] * (n[i] + 1)), i) for i in range(len(v)) if n[i] < cap]
    heapq.heapify(heap)
    while cur > goal and heap:
        g, i = heapq.heappop(heap)
        cur += g
        n[i] += 1
        if n[i] < cap:
            heapq.heappush(heap, (-v[i] / (n[i] * (n[i] + 1)), i))
    return n


def run_twostage(p: np.ndarray, target: float, rng: np.random.Generator, iterate: bool, first_share: float = 1.0,
                 max_n: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """first_share: the first plan is for that share of the samples the target needs (its goal variance 1/share
    times the target's), the re-plans for the rest."""
    q = len(p)
    n = np.full((q, 2), 2, dtype=np.int64)
    c = rng.binomial(n, p[:, None])
    goal = 2 * (q * target) ** 2
    for it in range(50 if iterate else 1):
        g = goal / first_share if it == 0 else goal
        plans = [neyman_plan(eb_var(n[:, 1 - s], c[:, 1 - s]), n[:, s], g, max_n // 2) for s in (0, 1)]
        if all((plans[s] == n[:, s]).all() for s in (0, 1)):
            break
        for s in (0, 1):
            c[:, s] += rng.binomial(plans[s] - n[:, s], p)
            n[:, s] = plans[s]
    return n, c


def reported_se(design: str, n: np.ndarray, c: np.ndarray) -> float:
    q = len(n)
    if design == "shipped":
        return estimated_se(n, c)
    if design.startswith("split-plug"):  # each stream's own unbiased variance
        v = plugin_var(n, c)
        return math.sqrt(float(np.sum(v[:, 0] / n[:, 0] + v[:, 1] / n[:, 1])) / 4) / q
    return math.sqrt((stream_design_var(n, c, 0, "eb") + stream_design_var(n, c, 1, "eb")) / 4) / q


def simulate(design: str, profile: str, k: int, runs: int, seed: int, first_share: float = 1.0) -> str:
    make, q = PROFILES[profile]
    rng = np.random.default_rng(seed)
    errs, ses, met, spent = [], [], 0, []
    for _ in range(runs):
        p = make(rng, q)
        target = expected_uniform_se(p, k)
        if design == "shipped":
            n, c, _ = run_adaptive(p, target, rng, fixed_rounds=True)
        elif design.startswith("split"):
            n, c = run_split(p, target, rng, "eb" if design == "split-eb" else "plug", design.endswith("ghost"))
        else:
            n, c = run_twostage(p, target, rng, design == "twostage-iter", first_share)
        se = reported_se(design, n, c)
        errs.append(float(np.mean(crossfit(n, c)[0])) - float(np.mean(p)))
        ses.append(se)
        met += se <= target * (1 + 1e-9)
        spent.append(int(n.sum()))
    e, s = np.array(errs), np.array(ses)
    return (f"| {design} | {profile} | K = {k} | {runs} | {100 * e.mean():+.3f} ± {100 * e.std(ddof=1) / math.sqrt(runs):.3f} "
            f"| {np.mean(np.abs(e) <= 1.96 * s):.3f} | {e.std() / math.sqrt(float(np.mean(s * s))):.3f} | {met / runs:.2f} "
            f"| {np.mean(spent) / (q * k):.2f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--design", choices=DESIGNS, required=True)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profiles", default=",".join(PROFILES))
    ap.add_argument("--k", default="16,64")
    ap.add_argument("--first-share", type=float, default=1.0,
                    help="twostage-iter: the first plan is for this share of the samples the target needs")
    a = ap.parse_args(argv)
    print("| design | profile | target = SE of uniform K | runs | bias (points) | 95% coverage | SD(error) / RMS(SE) "
          "| SE ≤ target | samples / uniform |")
    print("|---|---|---|---|---|---|---|---|---|")
    t0 = time.monotonic()
    for i, name in enumerate(a.profiles.split(",")):
        for j, k in enumerate(int(x) for x in a.k.split(",")):
            print(simulate(a.design, name, k, a.runs, a.seed + 100 * i + j, a.first_share), flush=True)
    print(f"({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
