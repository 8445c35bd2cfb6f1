"""`run --target-se` against uniform K: samples and server seconds to reach the same re-run SE.

For each profile of per-problem accuracies (scripts/adaptive_simulation.py: AIME-like, MATH-500-like, uniform)
and K in (16, 64): draw the problems, take as target the re-run SE uniform K has on them
(√(Σ p(1-p)/K)/Q), and sample adaptively (plan_adaptive.next_round, Bernoulli outcomes, rounds of Q/8
samples as a run's rounds of C) until the estimate is at the target. Server seconds: each problem has a length
(seconds per sample, lognormal, longer for harder problems, like reasoning models), the same for both runs;
a run costs Σ_i n_i · length_i. Reported: the mean over draws of adaptive / uniform, for samples and for
seconds (< 1: adaptive is cheaper), beside the oracle: Neyman allocation with the true p_i,
(Σ σ_i)² / (Q Σ σ_i²), the least any allocation can spend, and the same with the first round's floor of 4
samples per problem (what any rule that starts with 4 can at best spend).

    PYTHONPATH=src python bench/adaptive_samples.py --draws 100 --seed 0
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from _common import ROOT  # noqa: F401  (puts src/ and the repo root on sys.path)


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
    from scripts.adaptive_simulation import PROFILES, expected_uniform_se, run_adaptive

    from reasoneval.run.plan_adaptive import FIRST_ROUND

    rng = np.random.default_rng(a.seed)
    print("| profile | Q | uniform K | adaptive samples | uniform samples | ratio | oracle Neyman ratio | "
          "oracle, 4 or more each | adaptive server h | uniform server h | ratio | target met |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    t0 = time.monotonic()
    worst = 0.0
    for name, (make, q) in PROFILES.items():
        for k in (16, 64):
            s_ad, s_un, t_ad, t_un, oracle, floor, met = [], [], [], [], [], [], 0
            for _ in range(a.draws):
                p = make(rng, q)
                secs = lengths(rng, p)
                n, _, why = run_adaptive(p, expected_uniform_se(p, k), rng, fixed_rounds=True)
                per_problem = n.sum(axis=1)
                s_ad.append(per_problem.sum())
                s_un.append(q * k)
                t_ad.append(float(per_problem @ secs))
                t_un.append(float(k * secs.sum()))
                met += why == "target"
                sd = np.sqrt(p * (1 - p))
                oracle.append(float(sd.sum()) ** 2 / (q * float((sd**2).sum())))  # n_i ∝ true σ_i, no first round
                floor.append(neyman_with_floor(sd, expected_uniform_se(p, k), FIRST_ROUND) / (q * k))
            ratio = float(np.mean(s_ad)) / float(np.mean(s_un))
            t_ratio = float(np.mean(t_ad)) / float(np.mean(t_un))
            worst = max(worst, ratio)
            print(f"| {name} | {q} | {k} | {np.mean(s_ad):.0f} | {np.mean(s_un):.0f} | {ratio:.2f} | "
                  f"{np.mean(oracle):.2f} | {np.mean(floor):.2f} | "
                  f"{np.mean(t_ad) / 3600:.1f} | {np.mean(t_un) / 3600:.1f} | {t_ratio:.2f} | {met / a.draws:.2f} |",
                  flush=True)
    print(f"({time.monotonic() - t0:.0f} s, {a.draws} draws per line; ratio = adaptive / uniform at the same SE; "
          f"largest sample ratio {worst:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
