"""Paired comparison of runs on the problems they share (docs/statistics.md, "Comparing two runs").

Per problem i both runs answered, d_i = p_B,i - p_A,i (each run's own estimate: its fraction of correct samples,
or for an adaptive run the estimate its summary uses: two-stage, or cross-fit for a run made before it).
The mean of d_i is the accuracy difference; its standard error is sd(d) / sqrt(Q). That one figure
includes both sources of noise: the spread of true differences across problems and the sampling
noise of each p_hat (Var p_hat_i = p_i (1 - p_i) / n_i): the sample variance of d_i estimates their
sum. Pairing removes the problem-difficulty variance that two unpaired SEs would count twice.
CI and p-value use Student t with Q - 1 degrees of freedom.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats

from reasoneval.analysis.outcomes import ProblemRow, by_task, read_problem_rows
from reasoneval.errors import UserError
from reasoneval.metrics import pass_at_k_matrix
from reasoneval.metrics.estimators import crossfit_one, finite_or_none
from reasoneval.metrics.plan_adaptive import task_estimates
from reasoneval.results.adaptive import ADAPTIVE_DESIGN
from reasoneval.results.schema import RunResult, load_run
from reasoneval.serial import to_json

# A problem "flips" when it is mostly solved (accuracy >= 0.5) in one run and mostly failed in the other.
FLIP_AT = 0.5


def paired_difference(pa: np.ndarray, pb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """Mean of pb - pa along the last axis, its SE, the 95% CI (lo, hi) and the two-sided p-value of "no
    difference". Vectorised so the simulation in scripts/compare_simulation.py runs this very code."""
    d = np.asarray(pb, dtype=np.float64) - np.asarray(pa, dtype=np.float64)
    q = d.shape[-1]
    mean = d.mean(axis=-1)
    if q < 2:
        nan = np.full(mean.shape, np.nan)
        return mean, nan, nan.copy(), nan.copy(), nan.copy()
    se = d.std(axis=-1, ddof=1) / math.sqrt(q)
    tq = float(stats.t.ppf(0.975, q - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, mean / np.where(se > 0, se, 1.0), np.where(mean == 0, 0.0, np.inf))
    p = 2.0 * stats.t.sf(np.abs(t), q - 1)
    return mean, se, mean - tq * se, mean + tq * se, p


@dataclass(frozen=True)
class PairedDifference:
    """One run against the first on the problems both scored: B - A."""

    num_common: int
    diff: float | None
    stderr: float | None
    ci95: tuple[float, float] | None
    p_value: float | None

    @classmethod
    def of(cls, pa: np.ndarray, pb: np.ndarray) -> PairedDifference:
        if len(pa) == 0:
            return cls(0, None, None, None, None)
        m, se, lo, hi, p = paired_difference(pa, pb)
        ci = (finite_or_none(lo), finite_or_none(hi))
        return cls(len(pa), finite_or_none(m), finite_or_none(se),
                   (ci[0], ci[1]) if ci[0] is not None and ci[1] is not None else None, finite_or_none(p))


@dataclass(frozen=True)
class Flip:
    id: str
    problem_key: str
    accuracy_a: float
    accuracy_b: float


@dataclass(frozen=True)
class TaskComparison:
    """One task across runs; `versus` and `flips` hold one entry per run after the first."""

    task: str
    pass1: list[tuple[float | None, float | None]]  # per run: (pass@1, SE) over all its problems
    versus: list[PairedDifference]
    ks: list[int]  # the k every run has
    pass_at_k: list[dict[int, float | None]]  # per run, on its own problems
    pass_at_k_diff: list[dict[int, PairedDifference]]  # per later run: paired difference of pass@k
    maj_ks: list[int]
    maj_at_k: list[dict[int, float | None]]
    flips: list[list[Flip]] = field(default_factory=list)


@dataclass(frozen=True)
class Comparison:
    runs: list[RunResult]
    tasks: list[TaskComparison]
    # tasks some runs have and others do not: not compared
    skipped: list[str] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        """`compare --json`: the runs, then per task every figure (reasoneval.serial's JSON of each)."""
        return {
            "runs": [{"model": r.model, "run_id": r.run_id, "run_dir": str(r.run_dir), "n": r.n} for r in self.runs],
            "tasks": {t.task: {
                "pass1": [{"mean": m, "stderr": s} for m, s in t.pass1],
                "versus_first": to_json(t.versus),
                "pass_at_k": to_json(t.pass_at_k),
                "pass_at_k_diff": to_json(t.pass_at_k_diff),
                "maj_at_k": to_json(t.maj_at_k),
                "flips": to_json(t.flips),
            } for t in self.tasks},
            "skipped_tasks": list(self.skipped),
        }


def _per_problem_pass_k(rows: Sequence[ProblemRow], k: int) -> np.ndarray:
    n = np.array([r.n for r in rows], dtype=np.int64)
    c = np.array([r.num_correct for r in rows], dtype=np.int64)
    if not len(rows):
        return np.zeros(0)
    return pass_at_k_matrix(n, c, k)[:, k - 1]


def _accuracy(row: ProblemRow, adaptive: Mapping[str, Any] | None, estimates: Mapping[str, float]) -> float:
    """The run's estimate of one problem's accuracy: c/n, or for an adaptive run (`run --target-se`) the estimate
    its summary.json's mean uses (c/n there carries the bias of counts that depended on their own outcomes;
    docs/statistics.md, adaptive sampling): the two-stage estimate (`estimates`, per problem key, computed over
    the task), or for a run made before that design the cross-fit mean of its even- and odd-indexed samples."""
    if adaptive is not None and row.problem_key in estimates:
        return estimates[row.problem_key]
    if adaptive is not None and row.sample_indices:
        return crossfit_one(row.sample_indices, row.correct)[0]
    return row.num_correct / row.n


def _two_stage(rows: Sequence[ProblemRow], adaptive: Mapping[str, Any] | None, task: str) -> dict[str, float]:
    """Problem key -> the two-stage estimate, for a run of that design (empty otherwise)."""
    if adaptive is None or adaptive.get("design") != ADAPTIVE_DESIGN:
        return {}
    verdicts = [{int(j): bool(x) for j, x in zip(r.sample_indices, r.correct)} for r in rows]
    est = task_estimates(verdicts, adaptive.get("history") or [adaptive], task)
    return {r.problem_key: float(e) for r, e in zip(rows, est.estimate)}


def compare_runs(run_dirs: Sequence[Any]) -> Comparison:
    """Compare every run with the first, task by task, on the problems each pair shares."""
    if len(run_dirs) < 2:
        raise UserError("compare needs at least two run directories (RUN_A RUN_B [...])")
    seen: dict[Path, Any] = {}
    for d in run_dirs:  # a run against itself differs by 0 on every problem: nothing to compare (issue 52.5)
        if Path(d).resolve() in seen:
            raise UserError(f"{d} is given twice (as {seen[Path(d).resolve()]} too): compare needs two different runs")
        seen[Path(d).resolve()] = d
    results = [load_run(d) for d in run_dirs]
    rows = [by_task(read_problem_rows(d)) for d in run_dirs]
    tasks = [t for t in results[0].tasks if all(t in r.tasks for r in results[1:])]
    if not tasks:
        raise UserError("the runs share no task: " + "; ".join(f"{r.run_dir}: {', '.join(r.tasks)}" for r in results))
    adaptive = [r.config.adaptive if r.adaptive is not None else None for r in results]
    out = []
    for t in tasks:
        metrics = [r.tasks[t] for r in results]
        ks = sorted(set.intersection(*(set(k for k, v in m.pass_at_k.items() if v is not None) for m in metrics)))
        mks = sorted(set.intersection(*(set(k for k, v in m.maj_at_k.items() if v is not None) for m in metrics)))
        first = {r.problem_key: r for r in rows[0].get(t, [])}
        versus, diffs, flips = [], [], []
        for j, other in enumerate(rows[1:], start=1):
            pairs = [(first[r.problem_key], r) for r in other.get(t, []) if r.problem_key in first
                     and first[r.problem_key].n and r.n]
            a = [x for x, _ in pairs]
            b = [y for _, y in pairs]
            est_a = _two_stage(rows[0].get(t, []), adaptive[0], t)
            est_b = _two_stage(other.get(t, []), adaptive[j], t)
            pa = np.array([_accuracy(x, adaptive[0], est_a) for x in a])
            pb = np.array([_accuracy(y, adaptive[j], est_b) for y in b])
            versus.append(PairedDifference.of(pa, pb))
            diffs.append({k: PairedDifference.of(_per_problem_pass_k(a, k), _per_problem_pass_k(b, k))
                          for k in ks if k > 1 and all(x.n >= k for x in a) and all(y.n >= k for y in b)})
            fl = [Flip(y.id, y.problem_key, float(u), float(v)) for (_, y), u, v in zip(pairs, pa, pb)
                  if (u >= FLIP_AT) != (v >= FLIP_AT)]
            flips.append(sorted(fl, key=lambda f: (-abs(f.accuracy_b - f.accuracy_a), f.id)))
        out.append(TaskComparison(
            task=t, pass1=[(m.mean, m.stderr) for m in metrics], versus=versus, ks=ks,
            pass_at_k=[{k: m.pass_at_k.get(k) for k in ks} for m in metrics], pass_at_k_diff=diffs,
            maj_ks=mks, maj_at_k=[{k: m.maj_at_k.get(k) for k in mks} for m in metrics], flips=flips))
    every = [t for r in results for t in r.tasks]
    return Comparison(runs=results, tasks=out, skipped=[t for t in dict.fromkeys(every) if t not in tasks])
