"""How many samples per problem a run needs, answered from the samples it has (docs/statistics.md).

- `se_vs_k` (closed form, in summary.json): the SE of pass@1 had only k samples per problem been drawn,
  beside a seeded subsampling check that draws k of each problem's samples (hypergeometric counts) and
  measures the SE directly.
- the samples per problem for a target SE (`--target-se`), from the variance decomposition
  SE^2(k) = (s2_between + mean_i v_i / k) / Q, with v_i = p_i (1 - p_i) per sample.
- the "run it 30 times" study from one run: the K samples split into K/k disjoint subsets of k per
  problem, each scored as a run of its own; the spread of their mean accuracies beside the
  `stderr_resample` the formula predicts.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from scipy import stats

from reasoneval.analysis.outcomes import ProblemRow, by_task, iter_problem_rows, read_problem_rows
from reasoneval.errors import UserError
from reasoneval.metrics import maj_ks
from reasoneval.metrics.estimators import _per_sample_var
from reasoneval.metrics.plan_adaptive import PILOT, plan_totals
from reasoneval.results.adaptive import ADAPTIVE_MAX_N
from reasoneval.results.schema import RunResult, load_run
from reasoneval.run_files import RESULTS_FILE
from reasoneval.serial import to_json


@dataclass(frozen=True)
class SERow:
    k: int
    stderr: float | None  # closed form (se_vs_k)
    stderr_subsampled: float | None  # the same figure measured by drawing k-subsets
    stderr_resample: float | None  # sampling noise only: SD of the mean over reruns with k samples


@dataclass(frozen=True)
class SubsetSpread:
    """Mean accuracy of each disjoint block of k samples per problem, as if each were its own run."""

    k: int
    runs: int
    mean: float
    sd: float
    min: float
    max: float
    predicted_sd: float | None  # stderr_resample at k


@dataclass(frozen=True)
class TargetSE:
    target: float
    k_for_stderr: int | None  # None: more samples cannot reach it with these problems
    problems_needed: int | None  # with that many problems (and many samples) it would be reachable
    k_for_resample: int
    # What `run --target-se` would spend for the same re-run SE: its plan (plan_adaptive.plan_totals) on the pilot
    # counts these samples imply, averaged over which PILOT of each problem's samples the pilot would have been.
    adaptive_samples: int | None = None


@dataclass(frozen=True)
class TaskAnalysis:
    """One task of a run: the SE of pass@1 against samples per problem, the spread of disjoint reruns, what a target
    SE would take, and (a contest task) its verdicts."""

    task: str
    num_problems: int
    n: int
    mean: float | None
    se: list[SERow]
    spread: list[SubsetSpread]
    target: TargetSE | None
    # competition programming (the contest scorer's details): samples per verdict (passed, wrong_answer,
    # time_limit, memory_limit, runtime_error, no_code, ...) and the failing samples' first failing test by kind
    # (public, private, generated); empty for other scorers
    verdicts: dict[str, int] = dataclasses.field(default_factory=dict)
    first_failures: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class Analysis:
    result: RunResult
    tasks: list[TaskAnalysis]
    draws: int
    seed: int

    def to_json_dict(self) -> dict[str, Any]:
        return {"run_dir": str(self.result.run_dir), "model": self.result.model, "run_id": self.result.run_id,
                "n": self.result.n, "draws": self.draws, "seed": self.seed,
                "tasks": {t.task: {"num_problems": t.num_problems, "n": t.n, "mean": t.mean,
                                   "se_vs_k": to_json(t.se), "disjoint_subsets": to_json(t.spread),
                                   "target": to_json(t.target),
                                   **({"verdicts": t.verdicts, "first_failures": t.first_failures} if t.verdicts else {})}
                          for t in self.tasks}}


def _counts(rows: Sequence[ProblemRow]) -> tuple[np.ndarray, np.ndarray]:
    scored = [r for r in rows if r.n]
    return (np.array([r.n for r in scored], dtype=np.int64), np.array([r.num_correct for r in scored], dtype=np.int64))


def subsampled_stderr(n: np.ndarray, c: np.ndarray, k: int, draws: int, rng: np.random.Generator) -> float | None:
    """sqrt(E[SE^2]) over random size-k subsets of each problem's samples (all of them when n < k)."""
    q = len(n)
    if q < 2:
        return None
    kk = np.minimum(n, k)
    hits = rng.hypergeometric(np.broadcast_to(c, (draws, q)), np.broadcast_to(n - c, (draws, q)),
                              np.broadcast_to(kk, (draws, q)))
    p = hits / kk
    return float(math.sqrt(np.mean(np.var(p, axis=1, ddof=1)) / q))


def disjoint_spread(rows: Sequence[ProblemRow], k: int, predicted: float | None) -> SubsetSpread | None:
    """Sample indices [g k, (g+1) k) form run g; problems missing a sample of a block are left out of it."""
    K = max((max(r.sample_indices) + 1 for r in rows if r.sample_indices), default=0)
    blocks = K // k
    if blocks < 2:
        return None
    means = []
    for g in range(blocks):
        lo, hi = g * k, (g + 1) * k
        accs = []
        for r in rows:
            got = [c for i, c in zip(r.sample_indices, r.correct) if lo <= i < hi]
            if len(got) == k:
                accs.append(sum(got) / k)
        if accs:
            means.append(float(np.mean(accs)))
    if len(means) < 2:
        return None
    m = np.array(means)
    return SubsetSpread(k=k, runs=len(means), mean=float(m.mean()), sd=float(m.std(ddof=1)), min=float(m.min()),
                        max=float(m.max()), predicted_sd=predicted)


def target_se(n: np.ndarray, c: np.ndarray, target: float) -> TargetSE:
    q = len(n)
    p = c / n
    v = _per_sample_var(p, n)  # per-sample Bernoulli variance of each problem
    s2 = float(np.var(p, ddof=1)) if q >= 2 else 0.0
    between = max(0.0, s2 - float(np.mean(v / n)))  # variance of the true accuracies across problems
    room = q * target**2 - between
    k_total = max(1, math.ceil(float(np.mean(v)) / room)) if room > 0 else None
    problems = None if k_total is not None else math.ceil(between / target**2) + 1
    k_resample = max(1, math.ceil(float(np.sum(v)) / (q**2 * target**2)))
    adaptive = adaptive_projection(n, c, target)
    return TargetSE(target=target, k_for_stderr=k_total, problems_needed=problems, k_for_resample=k_resample,
                    adaptive_samples=adaptive)


def adaptive_projection(n: np.ndarray, c: np.ndarray, target: float) -> int:
    """Samples `run --target-se target` (fraction) would spend on these problems: the chance of each pilot count
    (hypergeometric: PILOT of a problem's n samples, c right; binomial below PILOT samples), their expected
    histogram planned by plan_adaptive.plan_totals, each problem's expected total."""
    counts = np.arange(PILOT + 1)
    chance = np.array([stats.hypergeom.pmf(counts, ni, ci, PILOT) if ni >= PILOT
                       else stats.binom.pmf(counts, PILOT, ci / max(ni, 1)) for ni, ci in zip(n, c)])
    totals = plan_totals(chance.sum(axis=0)[None, :], target, ADAPTIVE_MAX_N).totals[0]  # --max-n's default
    return int(round(float(np.sum(chance @ totals))))


def verdict_counts(run_dir: Path, result: RunResult) -> dict[str, tuple[Counter[str], Counter[str]]]:
    """Per task: samples per verdict and the failing samples' first failing test by kind, from results.parquet's
    details (the contest scorer writes `verdict` and `first_failure`; other scorers: nothing)."""
    out: dict[str, tuple[Counter[str], Counter[str]]] = {}
    for row in iter_problem_rows(run_dir, ("task", "details"), path=result.files_dir / RESULTS_FILE):
        for raw in row.get("details") or []:  # type: ignore[attr-defined]
            if not raw:
                continue
            d = json.loads(str(raw))
            if "verdict" not in d:
                continue
            verdicts, firsts = out.setdefault(str(row["task"]), (Counter(), Counter()))
            verdicts[str(d["verdict"])] += 1
            if isinstance(d.get("first_failure"), dict):
                firsts[str(d["first_failure"].get("kind"))] += 1
    return out


def analyze_run(run_dir: Path | str, *, target: float | None = None, draws: int = 200, seed: int = 0) -> Analysis:
    if draws < 2:  # the subsampling check is the SD over draws: it needs two at least
        raise UserError(f"--draws must be at least 2 (got {draws}): the subsampling check is the SD of that many "
                        "random subsets of each problem's samples")
    result = load_run(Path(run_dir))
    rows = by_task(read_problem_rows(Path(run_dir)))
    rng = np.random.default_rng(seed)
    failure_counts = verdict_counts(Path(run_dir), result)
    out = []
    for t, m in result.tasks.items():
        trows = rows.get(t, [])
        n, c = _counts(trows)
        ses, spread = [], []
        # k up to the fewest samples a problem has (like pass@k: a k-subset of a problem needs k samples)
        for k in maj_ks(int(n.min())) if len(n) else []:
            closed = m.se_vs_k.get(k)
            ses.append(SERow(k=k, stderr=closed.stderr if closed else None,
                             stderr_subsampled=subsampled_stderr(n, c, k, draws, rng),
                             stderr_resample=closed.stderr_resample if closed else None))
            s = disjoint_spread(trows, k, closed.stderr_resample if closed else None)
            if s is not None:
                spread.append(s)
        verdicts, firsts = failure_counts.get(t, (Counter(), Counter()))
        out.append(TaskAnalysis(task=t, num_problems=len(n), n=result.n, mean=m.mean, se=ses, spread=spread,
                                target=target_se(n, c, target) if target and len(n) >= 2 else None,
                                verdicts=dict(verdicts), first_failures=dict(firsts)))
    return Analysis(result=result, tasks=out, draws=draws, seed=seed)
