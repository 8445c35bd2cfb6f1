"""Check `run --target-se` by simulation: bias of the mean and coverage of its interval (docs/statistics.md).

Each simulated run draws Q per-problem accuracies p_i from a profile, then samples the way
`run --target-se` does (reasoneval.run.plan_adaptive.next_round: a first round of 4 per problem, then rounds
allocated by the Beta-posterior SD until the finished samples' `stderr_resample` is at most the target),
with Bernoulli outcomes. Reported per profile: the bias of the mean accuracy against the drawn problems'
own mean of p_i (the estimand of a re-run), how often mean ∓ 1.96·stderr_resample covers it, the
samples spent against uniform K at the same target, and how often the target was met.

    PYTHONPATH=src python scripts/adaptive_simulation.py --runs 1000 --seed 0
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from reasoneval.run.plan_adaptive import FIRST_ROUND, crossfit, estimated_se, next_round

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


# name -> (profile, Q)
PROFILES: dict[str, tuple[Profile, int]] = {"aime-like": (aime_like, 30), "math500-like": (math500_like, 500),
                                            "uniform": (uniform, 100)}


def expected_uniform_se(p: np.ndarray, k: int) -> float:
    """The re-run SE uniform K = k has on these problems: √(Σ p(1-p)/k)/Q."""
    return math.sqrt(float(np.sum(p * (1 - p))) / k) / len(p)


def run_adaptive(p: np.ndarray, target: float, rng: np.random.Generator, *, max_n: int = 256,
                 min_round: int | None = None, fixed_rounds: bool = False,
                 oracle_stop: bool = False) -> tuple[np.ndarray, np.ndarray, str]:
    """Sample like `run --target-se`: returns ((Q, 2) stream counts n, c, why it stopped).

    fixed_rounds: every round is `min_round` samples (a run's rounds of C) instead of about half the projected
    shortfall. oracle_stop: stop on the true re-run SE of the current allocation, not on its estimate (to
    measure what the stopping rule itself costs in bias; the allocation is unchanged)."""
    q = len(p)
    n = np.zeros((q, 2), dtype=np.int64)
    c = np.zeros((q, 2), dtype=np.int64)
    step = min_round or max(1, q // 8)
    while True:
        if oracle_stop and (n.sum(axis=1) >= FIRST_ROUND).all():
            _, n_eff = crossfit(n, c)
            if math.sqrt(float(np.sum(p * (1 - p) / n_eff))) / q <= target:
                return n, c, "target"
        r = next_round(n, c, target=1e-12 if oracle_stop else target, max_n=max_n, min_round=step,
                       max_round=step if fixed_rounds else None)
        if r.done or r.add.sum() == 0:
            return n, c, r.reason or "?"
        c += rng.binomial(r.add, p[:, None])
        n += r.add


@dataclass(frozen=True)
class Cell:
    profile: str
    q: int
    k_ref: int
    runs: int
    bias_points: float
    bias_se_points: float
    coverage: float
    met: float
    samples: float
    uniform_samples: int

    def ok(self) -> bool:
        return abs(self.bias_points) < 0.2 and 0.93 <= self.coverage <= 0.97


def simulate(profile: str, k_ref: int, runs: int, seed: int, *, fixed_rounds: bool = False,
             oracle_stop: bool = False) -> Cell:
    """`runs` simulated runs, target = the expected re-run SE of uniform K = k_ref on each run's problems."""
    make, q = PROFILES[profile]
    rng = np.random.default_rng(seed)
    errs, covered, met, spent = [], 0, 0, []
    for _ in range(runs):
        p = make(rng, q)
        target = expected_uniform_se(p, k_ref)
        n, c, why = run_adaptive(p, target, rng, fixed_rounds=fixed_rounds, oracle_stop=oracle_stop)
        mean = float(np.mean(crossfit(n, c)[0]))
        se = estimated_se(n, c)
        truth = float(np.mean(p))
        errs.append(mean - truth)
        covered += abs(mean - truth) <= 1.96 * se
        met += why == "target"
        spent.append(int(n.sum()))
    e = np.array(errs)
    return Cell(profile=profile, q=q, k_ref=k_ref, runs=runs, bias_points=100 * float(e.mean()),
                bias_se_points=100 * float(e.std(ddof=1)) / math.sqrt(runs), coverage=covered / runs,
                met=met / runs, samples=float(np.mean(spent)), uniform_samples=q * k_ref)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profiles", default=",".join(PROFILES))
    ap.add_argument("--k", default="16,64", help="targets: the re-run SE of uniform K = these")
    ap.add_argument("--fixed-rounds", action="store_true",
                    help="rounds of Q/8 samples (like a run's rounds of C) instead of half the projected shortfall")
    ap.add_argument("--oracle-stop", action="store_true",
                    help="stop on the true re-run SE (measures the stopping rule's share of the bias)")
    a = ap.parse_args(argv)
    print("| profile | Q | target = SE of uniform K | runs | bias of the mean (points) | 95% coverage "
          "| target met | samples (adaptive / uniform) | check |")
    print("|---|---|---|---|---|---|---|---|---|")
    failed = 0
    t0 = time.monotonic()
    for i, name in enumerate(a.profiles.split(",")):
        for j, k in enumerate(int(x) for x in a.k.split(",")):
            cell = simulate(name, k, a.runs, a.seed + 100 * i + j, fixed_rounds=a.fixed_rounds,
                            oracle_stop=a.oracle_stop)
            failed += not cell.ok()
            print(f"| {cell.profile} | {cell.q} | K = {cell.k_ref} | {cell.runs} | {cell.bias_points:+.3f} "
                  f"± {cell.bias_se_points:.3f} | {cell.coverage:.3f} | {cell.met:.3f} "
                  f"| {cell.samples:.0f} / {cell.uniform_samples} ({cell.samples / cell.uniform_samples:.2f}) "
                  f"| {'ok' if cell.ok() else 'FAIL'} |", flush=True)
    print(f"({time.monotonic() - t0:.1f} s; ok: |bias| < 0.2 points and coverage in [0.93, 0.97])")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
