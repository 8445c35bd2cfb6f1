"""Simulation: does `ci95` cover the population mean 95% of the time, and is `stderr_resample` right?

True per-problem accuracies p_i ~ Beta(a, b), K samples each, Q problems, 1,000 simulated runs per
cell, scored with the same vectorised functions `task_metrics` uses. Print the table with
    PYTHONPATH=src python tests/metrics/test_metrics_coverage.py [--extra]
"""

from __future__ import annotations

import numpy as np
import pytest

from reasoneval.metrics import ProblemOutcome, mean_stderr_ci, stderr_resample, task_metrics

RUNS = 1000
SEED = 2024
BETAS = [(2.0, 2.0), (1.0, 4.0)]  # symmetric; skewed towards hard problems (mean 0.2)
QS = [30, 500]
KS = [1, 4, 64]


def simulate(a: float, b: float, q: int, k: int, rng: np.random.Generator) -> dict[str, float]:
    p = rng.beta(a, b, size=(RUNS, q))
    p_hat = rng.binomial(k, p) / k
    mean, se, lo, hi = mean_stderr_ci(p_hat)
    mu = a / (a + b)
    # stderr_resample is about the drawn problems: the target is their own mean of true p_i.
    se_rs = stderr_resample(p_hat, np.full(q, k))
    fixed = p.mean(axis=1)
    return {
        "ci95_coverage": float(np.mean((lo <= mu) & (mu <= hi))),
        "resample_coverage": float(np.mean(np.abs(mean - fixed) <= 1.96 * se_rs)),
        "mean_stderr": float(se.mean()),
        "sd_of_means": float(mean.std(ddof=1)),
    }


def table(betas: list[tuple[float, float]] = BETAS) -> list[tuple[str, int, int, dict[str, float]]]:
    rng = np.random.default_rng(SEED)
    return [
        (f"Beta({a:g},{b:g})", q, k, simulate(a, b, q, k, rng))
        for a, b in betas
        for q in QS
        for k in KS
    ]


def test_ci95_covers_population_mean_93_to_97_percent() -> None:
    rows = table()
    for name, q, k, r in rows:
        assert 0.93 <= r["ci95_coverage"] <= 0.97, (name, q, k, r)
        # The SE is an estimate of the spread of the mean across runs: within 10% of it.
        assert r["mean_stderr"] == pytest.approx(r["sd_of_means"], rel=0.1), (name, q, k, r)
        if k > 1:
            # Sampling noise only: covers the drawn problems' own mean ~95% of the time.
            assert 0.93 <= r["resample_coverage"] <= 0.97, (name, q, k, r)
        else:
            # K = 1 falls back to pbar(1 - pbar), conservative on average: never too narrow.
            assert r["resample_coverage"] >= 0.93, (name, q, k, r)


def test_task_metrics_uses_the_simulated_formulas() -> None:
    rng = np.random.default_rng(3)
    q, k = 40, 8
    p_hat = rng.binomial(k, rng.beta(2, 2, q)) / k
    outcomes = [
        ProblemOutcome(
            task="t",
            problem_key=str(i),
            correct=[j < round(x * k) for j in range(k)],
            classes=[0 if j < round(x * k) else 1 for j in range(k)],
            correct_classes=frozenset({0}),
            completion_tokens=[10] * k,
            finish_reasons=["stop"] * k,
        )
        for i, x in enumerate(p_hat)
    ]
    m = task_metrics(outcomes, k).to_json_dict()
    mean, se, lo, hi = mean_stderr_ci(p_hat)
    assert m["mean"] == pytest.approx(float(mean))
    assert m["stderr"] == pytest.approx(float(se))
    assert m["ci95"] == pytest.approx([float(lo), float(hi)])
    assert m["stderr_resample"] == pytest.approx(float(stderr_resample(p_hat, np.full(q, k))))


if __name__ == "__main__":
    import sys

    # --extra: also the cells where the t interval is known to fall short (see docs/statistics.md).
    betas = BETAS + [(5.0, 1.0), (0.5, 2.0)] if "--extra" in sys.argv else BETAS
    print(f"{RUNS} runs per cell, seed {SEED}; population mean covered by ci95, and the drawn")
    print("problems' own mean covered by mean -/+ 1.96 stderr_resample\n")
    print("| p_i ~ | Q | K | ci95 coverage | resample coverage | mean stderr | SD of means |")
    print("|---|---|---|---|---|---|---|")
    for name, q, k, r in table(betas):
        print(
            f"| {name} | {q} | {k} | {r['ci95_coverage']:.3f} | {r['resample_coverage']:.3f} "
            f"| {r['mean_stderr']:.4f} | {r['sd_of_means']:.4f} |"
        )
