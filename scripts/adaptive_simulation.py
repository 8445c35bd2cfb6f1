"""Check `run --target-se` by simulation on profiles it was not designed on (docs/statistics.md, adaptive sampling).

A profile is a fixed list of per-problem accuracies p_i. The four of issue 34 (bimodal-hard, beta-0.3,
near-ceiling, one-hard-tail) come first, then `--profiles` more drawn at random from a wide family: Q from 20 to
500 (log-uniform), a share of problems at exactly 0 and at exactly 1 (each 0-40%, in half the profiles), the rest
from Beta(a, b) with a, b log-uniform in 0.2-10, and in a third of the profiles one outlier at the other end.
Each profile is run at two targets, the re-run SE uniform K = 16 and K = 64 would have on its true p_i
(√(Σ p(1-p)/K)/Q), `--runs` times, with Bernoulli outcomes and the very functions a run uses
(reasoneval.metrics.plan_adaptive: count_tables, own_totals, pilot_weights, two_stage_estimates).

Per cell: the bias of the mean against mean(p_i) (the re-run estimand) with its Monte Carlo SE; how often
mean ∓ 1.96·SE covers it; the RMS of the reported SE over the SD of the means (1 = honest); that SD over the
target; the samples spent against uniform K at the same true SE, per run (the run's allocation and weights with
the true p_i: Σ_i (wa² + wb²)·v_i/2 + wm²·v_i/n_i over Q², against Σ v_i/(Q² K)) and pooled over runs (mean
samples × SD² of the means); samples against uniform K at the target; how often the reported SE is at or below
the target; the Neyman share of the plan; the kurtosis of the errors and the largest one in SDs (heavy tails).
The worst cell of each column is printed last.

    PYTHONPATH=src python scripts/adaptive_simulation.py --profiles 32 --runs 2000 --seed 0
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reasoneval.metrics.plan_adaptive import (
    PILOT,
    RULE,
    count_tables,
    entry_rule,
    own_totals,
    pilot_weights,
    plan_totals,
    reported_variances,
    two_stage_estimates,
    variance_floor,
)

ROOT = Path(__file__).resolve().parents[1]  # the checkout: tests.plugins.bernoulli_engine for --real

MAX_N = 256


def issue_profiles(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The four profiles of issue 34 (their random parts drawn once from rng)."""
    return {
        "bimodal-hard": np.r_[np.zeros(15), np.ones(6), rng.uniform(0.02, 0.3, 9)],
        "beta-0.3": rng.beta(0.3, 0.3, 40),
        "near-ceiling": rng.beta(8.0, 1.0, 100),
        "one-hard-tail": np.r_[np.full(29, 0.95), 0.05],
    }


def issue41_profiles(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Profiles like issue 41's held-out ones (where per-problem variance estimates came out negative): a U shape,
    three levels, all hard, a tiny task, a MATH-500-like spread."""
    return {
        "u-shape": rng.beta(0.15, 0.15, 60),
        "three-levels": np.repeat([0.1, 0.5, 0.9], 10),
        "all-hard": rng.uniform(0.0, 0.08, 40),
        "tiny-q8": rng.uniform(0.0, 1.0, 8),
        "math500-like": np.r_[np.zeros(60), np.ones(160), rng.beta(1.2, 0.8, 280)],
    }


def random_profile(rng: np.random.Generator) -> tuple[str, np.ndarray]:
    """One profile from the wide family (module docstring), with a name that says how it was drawn."""
    q = int(round(math.exp(rng.uniform(math.log(20), math.log(500)))))
    a, b = (float(math.exp(rng.uniform(math.log(0.2), math.log(10.0)))) for _ in range(2))
    z0, z1 = (rng.uniform(0.0, 0.4), rng.uniform(0.0, 0.4)) if rng.random() < 0.5 else (0.0, 0.0)
    kind = rng.choice(3, size=q, p=[z0, z1, 1.0 - z0 - z1])
    p = np.where(kind == 0, 0.0, np.where(kind == 1, 1.0, rng.beta(a, b, q)))
    name = f"Q{q} B({a:.2g},{b:.2g})" + (f" 0:{z0:.0%} 1:{z1:.0%}" if z0 + z1 else "")
    if rng.random() < 1 / 3:  # one outlier at the other end from the bulk
        p[rng.integers(q)] = rng.uniform(0.0, 0.1) if p.mean() > 0.5 else rng.uniform(0.9, 1.0)
        name += " +outlier"
    return name, p


def uniform_se(p: np.ndarray, k: int) -> float:
    """The re-run SE of uniform K = k on these problems: √(Σ p(1-p)/k)/Q."""
    return math.sqrt(float(np.sum(p * (1 - p))) / k) / len(p)


@dataclass(frozen=True)
class Cell:
    profile: str
    q: int
    k_ref: int
    runs: int
    bias_points: float
    bias_mcse_points: float
    coverage: float
    se_ratio: float  # RMS of the reported SE / SD of the means
    sd_over_target: float
    sd_mcse: float  # Monte Carlo SE of sd_over_target: √((kurtosis - 1)/(4 runs)) of it
    samples_vs_uniform_run: float  # per run, at the same true SE
    samples_vs_uniform_pooled: float  # mean samples x SD² of the means, against uniform at that SD
    # pooled = per run x size_spread x rest: size_spread = E[N]·E[V]/E[N·V] (V a run's true variance, N its
    # samples) is what sizing each run from its own pilot costs (E[N]·E[1/N] where V ∝ 1/N, Jensen), rest = SD²/E[V]
    # what the covariance between problems through the shared plan adds
    size_spread: float
    rest: float
    samples_vs_uniform_k: float  # mean samples / (Q K)
    met: float
    neyman_share: float
    kurtosis: float  # of the errors of the means (3 for a normal): heavy tails show here
    worst_error_sd: float  # the largest |error| of a run's mean, in SDs of the means

    @property
    def bias_z(self) -> float:
        return self.bias_points / self.bias_mcse_points if self.bias_mcse_points > 0 else 0.0


def plan_and_weights(ca: np.ndarray, cb: np.ndarray, history: list[dict[str, Any]], task: str | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For runs (rows) of one task, from their pilot halves' counts (ca, cb: right of 2, shape (R, Q)): each
    problem's planned total, its pilot weights (wa, wb), and each run's Neyman share. The calls a run makes
    (plan_adaptive.count_tables, own_totals, pilot_weights), on every run at once."""
    c = ca + cb
    hists = np.stack([np.bincount(row, minlength=PILOT + 1) for row in c]).astype(np.float64)
    uniq, inverse = np.unique(hists, axis=0, return_inverse=True)  # runs often share a histogram
    inverse = inverse.reshape(-1)
    table = count_tables(uniq, history, task)[inverse]
    totals = own_totals(c, table)
    wa, wb = pilot_weights(ca, cb, table)
    last = history[-1]
    gamma = plan_totals(uniq, float(last["target_se"]) / 100.0, int(last["max_n"]), rule=entry_rule(last)).gamma[inverse]
    return totals, wa, wb, gamma


def simulate(name: str, p: np.ndarray, k_ref: int, runs: int, rng: np.random.Generator, *,
             max_n: int = MAX_N, plan: int = RULE) -> Cell:
    """`runs` simulated runs of `run --target-se` on the fixed accuracies p, target = uniform_se(p, k_ref), with
    the plan version `plan` (plan_adaptive.RULES)."""
    q = len(p)
    target = uniform_se(p, k_ref)
    history: list[dict[str, Any]] = [{"target_se": 100 * target, "max_n": max_n, "budget_samples": None, "plan": plan}]
    half = PILOT // 2
    ca = rng.binomial(half, p, size=(runs, q))
    cb = rng.binomial(half, p, size=(runs, q))
    totals, wa, wb, gamma = plan_and_weights(ca, cb, history)
    n_main = totals - PILOT
    na, nb = (n_main + 1) // 2, n_main // 2
    ma, mb = rng.binomial(na, p), rng.binomial(nb, p)
    est, var = two_stage_estimates(ca, cb, ma, na, mb, nb, wa, wb)
    var = reported_variances(var, variance_floor(ca, cb, ma, na, mb, nb, wa, wb))  # what a run reports
    v = p * (1 - p)
    wm = 1 - wa - wb
    var_run = np.sum((wa * wa + wb * wb) * v / half + wm * wm * v / np.maximum(n_main, 1), axis=1) / q**2
    return _cell(name, p, k_ref, est.mean(axis=1), np.sqrt(np.maximum(var.sum(axis=1), 0.0)) / q, totals.sum(axis=1),
                 var_run, gamma)


def simulate_stein(name: str, p: np.ndarray, k_ref: int, runs: int, rng: np.random.Generator, *,
                   max_n: int = MAX_N) -> Cell:
    """The simplest alternative, for comparison (not shipped): Stein's two-stage with uniform K. The same 4-sample
    pilot; K = Σ v_i/(Q² S²) from the pilot's unbiased c(4-c)/12, at least 4; the mean pools all K samples (c/K)
    and its SE is the usual plug-in. K depends on the samples the mean uses: the bias this design is about."""
    q = len(p)
    target = uniform_se(p, k_ref)
    c1 = rng.binomial(PILOT, p, size=(runs, q))
    v_hat = c1 * (PILOT - c1) / (PILOT * (PILOT - 1))
    k = np.clip(np.ceil(v_hat.sum(axis=1) / (q * target) ** 2), PILOT, max_n).astype(np.int64)
    c = c1 + rng.binomial((k - PILOT)[:, None], p[None, :])
    rate = c / k[:, None]
    se = np.sqrt(np.sum(rate * (1 - rate) / np.maximum(k[:, None] - 1, 1), axis=1)) / q
    var_run = float(np.sum(p * (1 - p))) / (q * q * k)  # uniform K: Σ v_i / (Q² K)
    return _cell(name, p, k_ref, rate.mean(axis=1), se, k * q, var_run, np.zeros(runs))


def _cell(name: str, p: np.ndarray, k_ref: int, mean: np.ndarray, se: np.ndarray, samples: np.ndarray,
          var_run: np.ndarray | None, gamma: np.ndarray) -> Cell:
    q, runs = len(p), len(mean)
    target = uniform_se(p, k_ref)
    err = mean - p.mean()
    sd = float(err.std(ddof=1))
    per_sample = float(np.sum(p * (1 - p))) / q**2  # uniform K has variance per_sample / K with q K samples
    return Cell(profile=name, q=q, k_ref=k_ref, runs=runs, bias_points=100 * float(err.mean()),
                bias_mcse_points=100 * sd / math.sqrt(runs), coverage=float(np.mean(np.abs(err) <= 1.96 * se)),
                se_ratio=math.sqrt(float(np.mean(se * se))) / sd if sd > 0 else math.nan,
                sd_over_target=sd / target,
                sd_mcse=(sd / target) * math.sqrt(max(float(np.mean((err - err.mean()) ** 4)) / sd**4 - 1, 0.0) / (4 * runs))
                if sd > 0 else math.nan,
                samples_vs_uniform_run=(float(np.mean(samples * var_run / (q * per_sample))) if var_run is not None
                                        else math.nan),
                samples_vs_uniform_pooled=float(samples.mean()) * sd * sd / (q * per_sample),
                size_spread=(float(samples.mean() * np.mean(var_run) / np.mean(samples * var_run))
                             if var_run is not None else math.nan),
                rest=sd * sd / float(np.mean(var_run)) if var_run is not None else math.nan,
                samples_vs_uniform_k=float(samples.mean()) / (q * k_ref), met=float(np.mean(se <= target)),
                neyman_share=float(gamma.mean()),
                kurtosis=float(np.mean((err - err.mean()) ** 4)) / sd**4 if sd > 0 else math.nan,
                worst_error_sd=float(np.max(np.abs(err))) / sd if sd > 0 else math.nan)


def real_path(name: str, p: np.ndarray, k_ref: int, runs: int, work: Path, seed0: int) -> tuple[Cell, int]:
    """`runs` real runs: reasoneval.evaluate(..., target_se=...) with the `bernoulli` engine plugin (sample j of
    problem i right with probability p_i, decided by its seed), the math scorer, default concurrency and --max-n.
    Each run is checked against the simulation's own code on the run's own outcomes: every verdict is the
    engine's, every problem's sample count is `plan_and_weights`' planned total, and the task's mean and SE are
    `two_stage_estimates` of them. Returns the cell of the real runs and how many runs matched in every check."""
    from tests.plugins.bernoulli_engine import is_right
    from tests.reliability._helpers import write_data

    from reasoneval.analysis.outcomes import read_problem_rows
    from reasoneval.engines import ENGINES
    from reasoneval.results.identity import sample_seed
    from reasoneval.run.pipeline import evaluate

    if "bernoulli" not in ENGINES.names():
        ENGINES.add_lazy("bernoulli", "tests.plugins.bernoulli_engine")
    q = len(p)
    target = uniform_se(p, k_ref)
    data = work / f"{name}-data"
    write_data(data, {"aime24": q})  # synthetic rows aime24-i, answer 3i + 4
    acc = work / f"{name}-accuracies.json"
    acc.write_text(json.dumps({f"aime24-{i}": {"p": float(p[i]), "answer": str(3 * i + 4)} for i in range(q)}))
    means, ses, samples, gammas, matched = [], [], [], [], 0
    for r in range(runs):
        seed = seed0 + r
        res = evaluate(tasks=["aime24"], engine="bernoulli", engine_args={"accuracies": str(acc)}, seed=seed,
                       target_se=100 * target, data_dir=str(data), output_dir=str(work / f"{name}-K{k_ref}"),
                       progress=False, print_table=False, grading_workers=1)
        rows = sorted(read_problem_rows(res.run_dir), key=lambda row: int(row.id.rsplit("-", 1)[1]))
        verdicts = [dict(zip(row.sample_indices, row.correct)) for row in rows]
        verdicts_ok = all(x == is_right(row.id, sample_seed(seed, "aime24", row.problem_key, j), float(p[i]))
                          for i, row in enumerate(rows) for j, x in zip(row.sample_indices, row.correct))
        pilot = np.array([[v[j] for j in range(PILOT)] for v in verdicts], dtype=np.int64)  # indices 0-3
        ca, cb = (pilot[:, 0] + pilot[:, 2])[None, :], (pilot[:, 1] + pilot[:, 3])[None, :]
        history = res.config.adaptive["history"] if res.config.adaptive else []
        totals, wa, wb, gamma = plan_and_weights(ca, cb, history, "aime24")
        main = [[v[j] for j in sorted(v) if j >= PILOT] for v in verdicts]
        ma, na = np.array([[sum(m[0::2]) for m in main]]), np.array([[len(m[0::2]) for m in main]])
        mb, nb = np.array([[sum(m[1::2]) for m in main]]), np.array([[len(m[1::2]) for m in main]])
        est, var = two_stage_estimates(ca, cb, ma, na, mb, nb, wa, wb)
        var = reported_variances(var, variance_floor(ca, cb, ma, na, mb, nb, wa, wb))
        mean, se = float(est.mean()), math.sqrt(max(float(var.sum()), 0.0)) / q
        summary = res.tasks["aime24"]
        a = res.adaptive["aime24"] if res.adaptive else {}
        matched += (verdicts_ok and (totals[0] == np.array([len(v) for v in verdicts])).all()
                    and math.isclose(mean, summary.mean or math.nan, abs_tol=1e-12)
                    and math.isclose(100 * se, a.get("se") or math.nan, abs_tol=1e-9))
        means.append(summary.mean or math.nan)
        ses.append((a.get("se") or math.nan) / 100)
        samples.append(a.get("samples") or 0)
        gammas.append(float(gamma[0]))
    cell = _cell(name, p, k_ref, np.array(means), np.array(ses), np.array(samples), None, np.array(gammas))
    return cell, matched


HEADER = ("| profile | Q | target = SE of uniform K | runs | bias (points) | bias / MC SE | coverage | SE / SD "
          "| SD / target | samples vs uniform at same SE (per run) | (pooled) | size spread | rest | samples / (Q K) "
          "| SE ≤ target "
          "| Neyman share | error kurtosis | largest error / SD |")


def row(c: Cell) -> str:
    return (f"| {c.profile} | {c.q} | K = {c.k_ref} | {c.runs} | {c.bias_points:+.3f} ± {c.bias_mcse_points:.3f} "
            f"| {c.bias_z:+.2f} | {c.coverage:.3f} | {c.se_ratio:.3f} | {c.sd_over_target:.3f} ± {c.sd_mcse:.3f} "
            f"| {c.samples_vs_uniform_run:.3f} | {c.samples_vs_uniform_pooled:.3f} | {c.size_spread:.3f} | {c.rest:.3f} "
            f"| {c.samples_vs_uniform_k:.3f} "
            f"| {c.met:.2f} | {c.neyman_share:.2f} | {c.kurtosis:.1f} | {c.worst_error_sd:.1f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiles", type=int, default=32, help="random profiles besides the issue's four")
    ap.add_argument("--runs", type=int, default=2000, help="simulated runs per profile and target")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", default="16,64", help="targets: the re-run SE of uniform K = these")
    ap.add_argument("--only-issue", action="store_true", help="the issue's four profiles only")
    ap.add_argument("--issue41", action="store_true", help="issue 41's five profiles only")
    ap.add_argument("--only", default="", help="comma-separated profile names (or their beginnings) to run")
    ap.add_argument("--mc-seed", type=int, default=None,
                    help="seed of the simulated runs' outcomes (default: go on from --seed, which draws the profiles)")
    ap.add_argument("--stein", action="store_true",
                    help="simulate Stein's two-stage uniform K with pooled c/n instead (for comparison; not shipped)")
    ap.add_argument("--real", type=int, default=0, metavar="N",
                    help="instead, N real runs per issue profile (--only: those) and target through reasoneval.evaluate")
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    issue = list(issue_profiles(rng).items())
    profiles = issue + ([] if a.only_issue else [random_profile(rng) for _ in range(a.profiles)])
    if a.issue41:
        issue = profiles = list(issue41_profiles(np.random.default_rng(a.seed)).items())
    if a.only:
        wanted = [w.strip() for w in a.only.split(",") if w.strip()]
        profiles = [(n, p) for n, p in profiles if any(n.startswith(w) for w in wanted)]
        issue = [(n, p) for n, p in issue if any(n.startswith(w) for w in wanted)]
    if a.mc_seed is not None:
        rng = np.random.default_rng(a.mc_seed)
    ks = [int(x) for x in a.k.split(",")]
    t0 = time.monotonic()
    if a.real:
        sys.path.insert(0, str(ROOT))
        logging.getLogger("reasoneval").setLevel(logging.WARNING)
        print(HEADER.replace("| profile |", "| profile (real evaluate runs) |") + " runs matching the simulation's code |")
        print("|" + "|".join("---" for _ in range(HEADER.count("|"))) + "|")
        with tempfile.TemporaryDirectory() as tmp:
            for name, p in issue:
                for k in ks:
                    cell, matched = real_path(name, p, k, a.real, Path(tmp), seed0=1000 * k)
                    print(row(cell) + f" {matched} / {cell.runs} |", flush=True)
        print(f"\n({time.monotonic() - t0:.0f} s)")
        return 0
    print(HEADER)
    print("|" + "|".join("---" for _ in range(HEADER.count("|") - 1)) + "|")
    cells = []
    for name, p in profiles:
        for k in ks:
            cell = (simulate_stein if a.stein else simulate)(name, p, k, a.runs, rng)
            cells.append(cell)
            print(row(cell), flush=True)
    print(f"\n({time.monotonic() - t0:.0f} s; {len(cells)} cells)\n\nworst cells:")
    for label, key in (("coverage", lambda c: c.coverage), ("|bias| / MC SE", lambda c: -abs(c.bias_z)),
                       ("SE / SD, low", lambda c: c.se_ratio), ("SE / SD, high", lambda c: -c.se_ratio),
                       ("SD / target", lambda c: -c.sd_over_target),
                       ("(SD / target - 1) / its MC SE", lambda c: -(c.sd_over_target - 1) / c.sd_mcse),
                       ("samples vs uniform, per run", lambda c: -c.samples_vs_uniform_run),
                       ("samples vs uniform, pooled", lambda c: -c.samples_vs_uniform_pooled)):
        print(f"- {label}: {row(min(cells, key=key))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
