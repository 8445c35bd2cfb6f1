"""Check `reasoneval compare`'s paired test by simulation (figures in docs/statistics.md).

Two simulated models answer Q problems with n samples each. Each simulated run draws a fresh set of
problems from the population, then the samples (binomial), and runs the very function `compare` uses
(`analysis.compare.paired_difference`). Reported: how often p < 0.05 when the true accuracies are
equal (should be 5%, accepted 3-7%), and how often a true 5-point gap is detected against the power
the normal formula predicts (accepted within 3 points).

Population: model A's per-problem accuracy p_A ~ U(0, 0.9). With probability r ("relatedness") model B
is the same model shifted, p_B = p_A + gap; otherwise p_B is an unrelated draw from U(0.05, 0.95) - 0.05 + gap.
Either way E[p_B - p_A] = gap and p_B stays in [0, 1].
Formula: SE^2 = (Var(p_B - p_A) + E[p_A(1-p_A)]/n + E[p_B(1-p_B)]/n) / Q, with
Var(p_B - p_A) = (1 - r) * 2 * 0.9^2 / 12; power = Phi(gap/SE - 1.96) + Phi(-gap/SE - 1.96).

    PYTHONPATH=src python scripts/compare_simulation.py --runs 1000 --seed 0
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from reasoneval.analysis.compare import paired_difference

WIDTH = 0.9  # p_A ~ U(0, WIDTH)


def draw(rng: np.random.Generator, runs: int, q: int, n: int, gap: float, related: float) -> tuple[np.ndarray, np.ndarray]:
    pa = rng.uniform(0.0, WIDTH, size=(runs, q))
    same = rng.random((runs, q)) < related
    pb = np.where(same, pa + gap, rng.uniform(0.0, WIDTH, size=(runs, q)) + gap)
    ca = rng.binomial(n, pa)
    cb = rng.binomial(n, pb)
    return ca / n, cb / n


def predicted_power(q: int, n: int, gap: float, related: float) -> tuple[float, float]:
    mean_var = lambda lo, hi: (lo + hi) / 2 - (hi**3 - lo**3) / (3 * (hi - lo))  # E[p(1-p)], p ~ U(lo, hi)  # noqa: E731
    var_true = (1 - related) * 2 * WIDTH**2 / 12
    sampling = (mean_var(0.0, WIDTH) + mean_var(gap, WIDTH + gap)) / n
    se = math.sqrt((var_true + sampling) / q)
    z = float(stats.norm.ppf(0.975))
    return se, float(stats.norm.cdf(gap / se - z) + stats.norm.cdf(-gap / se - z))


def rejection_rate(rng: np.random.Generator, runs: int, q: int, n: int, gap: float, related: float) -> float:
    pa, pb = draw(rng, runs, q, n, gap, related)
    _, _, _, _, p = paired_difference(pa, pb)
    return float(np.mean(p < 0.05))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    print(f"{a.runs} simulated comparisons per line, seed {a.seed}")
    ok = True
    for q, n, related in ((500, 16, 0.0), (500, 16, 0.9), (100, 16, 0.9), (30, 16, 0.9)):
        rate = rejection_rate(rng, a.runs, q, n, 0.0, related)
        good = 0.03 <= rate <= 0.07
        ok &= good
        print(f"equal accuracy, Q={q} n={n} r={related}: p<0.05 in {100 * rate:.1f}% (want 3-7%) "
              f"{'ok' if good else 'FAIL'}")
    for q, n, related in ((500, 16, 0.0), (500, 16, 0.5), (500, 16, 0.9), (100, 16, 0.9)):
        se, power = predicted_power(q, n, 0.05, related)
        rate = rejection_rate(rng, a.runs, q, n, 0.05, related)
        good = abs(rate - power) <= 0.03
        ok &= good
        print(f"5-point gap, Q={q} n={n} r={related}: detected in {100 * rate:.1f}%, formula {100 * power:.1f}% "
              f"(SE {100 * se:.2f} points; ratio {rate / power:.3f}) {'ok' if good else 'FAIL'}")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
