"""`run --target-se` against uniform K: samples and server seconds for the same re-run SE.

For each profile of per-problem accuracies (AIME-like: 40% of problems from Beta(0.3, 12), 30% from Beta(12, 0.3),
30% from Beta(1.2, 1.2), Q = 30; MATH-500-like: Beta(4, 0.45), Q = 500; uniform: U(0, 1), Q = 100) and K in (16, 64),
`--draws` times: draw the problems, take as target the re-run SE uniform K has on them (√(Σ p(1-p)/K)/Q), and run
the two-stage design once with Bernoulli outcomes, through the functions a run uses
(scripts/adaptive_simulation.plan_and_weights, plan_adaptive.two_stage_estimates).

Reported, as means over draws of adaptive / uniform: samples against uniform K (what a user asking for K's SE
spends), samples against uniform at the same true SE as the run's (the run's allocation and weights with the true
p_i), and server seconds (each problem has a length, seconds per sample, lognormal, longer for harder problems,
the same for both runs; a run costs Σ_i n_i · length_i). Beside them the oracle: Neyman allocation with the true
p_i, (Σ σ_i)² / (Q Σ σ_i²), the least any allocation can spend, and the same held to the design's floor of
PILOT + MIN_MAIN samples per problem.

    PYTHONPATH=src python bench/adaptive_samples.py --draws 200 --seed 0
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Callable

import numpy as np

from _common import ROOT  # noqa: F401  (puts src/ and the repo root on sys.path)

Profile = Callable[[np.random.Generator, int], np.ndarray]


def aime_like(rng: np.random.Generator, q: int) -> np.ndarray:
    """Many problems near 0 or 1, a few in between (a strong model on AIME: 40% never, 30% always)."""
    kind = rng.choice(3, size=q, p=[0.4, 0.3, 0.3])
    return np.where(kind == 0, rng.beta(0.3, 12.0, q), np.where(kind == 1, rng.beta(12.0, 0.3, q), rng.beta(1.2, 1.2, q)))


def math500_like(rng: np.random.Generator, q: int) -> np.ndarray:
    """Most problems near 1 (mean about 0.9)."""
    return rng.beta(4.0, 0.45, q)


def uniform(rng: np.random.Generator, q: int) -> np.ndarray:
    return rng.uniform(0.0, 1.0, q)


PROFILES: dict[str, tuple[Profile, int]] = {"aime-like": (aime_like, 30), "math500-like": (math500_like, 500),
                                            "uniform": (uniform, 100)}


def lengths(rng: np.random.Generator, p: np.ndarray) -> np.ndarray:
    """Seconds per sample: median 60 s at p = 0.5, 3x longer on unsolved problems than on solved ones."""
    return 60.0 * np.exp(np.log(3.0) * (0.5 - p) + rng.normal(0.0, 0.5, len(p)))


def neyman_with_floor(sd: np.ndarray, target: float, floor: int) -> float:
    """Fewest samples (real-valued) with Σ σ_i²/n_i ≤ Q² target² and n_i ≥ floor: n_i = max(floor, λ σ_i)."""
    q = len(sd)
    budget = (q * target) ** 2
    lo, hi = 0.0, 1e12
    for _ in range(200):  # bisection on λ: the variance falls as λ grows
        lam = (lo + hi) / 2
        if float(np.sum(sd**2 / np.maximum(floor, lam * sd))) > budget:
            lo = lam
        else:
            hi = lam
    return float(np.sum(np.maximum(floor, hi * sd)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    from scripts.adaptive_simulation import MAX_N, plan_and_weights, uniform_se

    from reasoneval.metrics.plan_adaptive import MIN_MAIN, PILOT, RULE, two_stage_estimates

    rng = np.random.default_rng(a.seed)
    print("| profile | Q | uniform K | adaptive samples | uniform samples | samples / uniform K | at the same true SE | "
          "server hours / uniform K | oracle Neyman | oracle, 8 or more each | SE ≤ target |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    t0 = time.monotonic()
    for name, (make, q) in PROFILES.items():
        for k in (16, 64):
            spent, same_se, hours, oracle, floor, met = [], [], [], [], [], 0
            for _ in range(a.draws):
                p = make(rng, q)
                target = uniform_se(p, k)
                secs = lengths(rng, p)
                history = [{"target_se": 100 * target, "max_n": MAX_N, "budget_samples": None, "plan": RULE}]
                ca, cb = rng.binomial(2, p, size=(1, q)), rng.binomial(2, p, size=(1, q))
                totals, wa, wb, _ = plan_and_weights(ca, cb, history)
                n_main = totals - PILOT
                na, nb = (n_main + 1) // 2, n_main // 2
                _, var = two_stage_estimates(ca, cb, rng.binomial(na, p), na, rng.binomial(nb, p), nb, wa, wb)
                v = p * (1 - p)
                run_var = float(np.sum((wa**2 + wb**2) * v / 2 + (1 - wa - wb) ** 2 * v / n_main)) / q**2
                n = totals[0]
                spent.append(n.sum() / (q * k))
                same_se.append(n.sum() * run_var * q / float(v.sum()))
                hours.append(float(n @ secs) / (k * float(secs.sum())))
                sd = np.sqrt(v)
                oracle.append(float(sd.sum()) ** 2 / (q * float((sd**2).sum())))
                floor.append(neyman_with_floor(sd, target, PILOT + MIN_MAIN) / (q * k))
                met += math.sqrt(max(float(var.sum()), 0.0)) / q <= target
            mean_n = float(np.mean(spent)) * q * k
            print(f"| {name} | {q} | {k} | {mean_n:.0f} | {q * k} | {np.mean(spent):.2f} | {np.mean(same_se):.2f} | "
                  f"{np.mean(hours):.2f} | {np.mean(oracle):.2f} | {np.mean(floor):.2f} | {met / a.draws:.2f} |", flush=True)
    print(f"({time.monotonic() - t0:.0f} s, {a.draws} draws per line; ratios are adaptive / uniform, means over draws)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
