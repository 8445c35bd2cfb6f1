"""Per-task and over-all metrics from graded samples. Formulas and their reasons: docs/statistics.md."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from reasoneval.errors import UserError
from reasoneval.metrics.estimators import (
    _per_sample_var,
    _se,
    crossfit_one,
    finite_or_none,
    mean_stderr_ci,
    stderr_resample,
    stderr_resample_adaptive,
)
from reasoneval.metrics.majority import maj_at_k, maj_ks
from reasoneval.metrics.passk import pass_at_k_matrix
from reasoneval.metrics.rating import RatingEstimate
from reasoneval.serial import JsonRecord, json_field


@dataclass(frozen=True)
class ProblemOutcome:
    """One problem's graded samples: one entry per present (finished, non-failed) sample."""

    task: str
    problem_key: str
    correct: Sequence[bool]
    classes: Sequence[int | None]  # answer equivalence class; None = no answer extracted
    correct_classes: frozenset[int]  # which class ids the grader deems correct
    completion_tokens: Sequence[int | None]
    finish_reasons: Sequence[str | None]
    num_missing: int = 0  # samples with index < K that are missing or failed
    # Extra scorers' verdicts (TaskScoring.extra, e.g. lm-eval's "strict-match"), one per present sample.
    extra: Mapping[str, Sequence[bool]] = field(default_factory=dict)
    # Per sample, the scorer's named figures (Score.value when it is a mapping, e.g. IFEval's); () for scorers
    # whose value is the correct flag. value_metrics() turns them into TaskMetrics.extra entries.
    values: Sequence[Mapping[str, float]] = ()
    # The sample index of each present sample (same order as `correct`); () when not known.
    indices: Sequence[int] = ()
    # An adaptive run's problem (run --target-se) made before the two-stage design: its accuracy is the cross-fit
    # estimate (problem_estimates).
    crossfit: bool = False
    # A two-stage adaptive run's problem (metrics/plan_adaptive.py): its accuracy estimate and an unbiased estimate of
    # that estimate's variance, computed over the whole task (they depend on the task's plan).
    estimate: float | None = None
    estimate_var: float | None = None


@dataclass(frozen=True)
class TokenStats:
    """Completion lengths in tokens over the samples that report one."""

    mean: float | None = None
    median: float | None = None
    p90: float | None = None
    max: int | None = None


@dataclass(frozen=True)
class GroupMetrics:
    """Mean accuracy of one group of problems (a subject, a level)."""

    num_problems: int
    mean: float
    stderr: float | None
    # A counted ratio's counts (value_metrics' `x.count` / `x.of`): `mean` = count / of, e.g. the cascade's samples
    # the judge decided of all samples, or the agreements of the samples both rule and judge decided.
    count: int | None = json_field(default=None, omit_none=True)
    of: int | None = json_field(default=None, omit_none=True)


@dataclass(frozen=True)
class SEAtK:
    """The standard errors had only k samples per problem been drawn (see `se_vs_k`)."""

    stderr: float | None
    stderr_resample: float | None


@dataclass(frozen=True)
class TaskMetrics(JsonRecord):
    """Every metric of one task, or of a pool of tasks (`macro_mean` is set for the pool).

    Dict keys k are ints here and strings in summary.json. docs/statistics.md defines each figure.
    """

    num_problems: int
    num_samples: int
    num_missing: int
    mean: float | None
    stderr: float | None
    ci95: tuple[float, float] | None
    stderr_resample: float | None
    pass_at_k: dict[int, float | None]
    pass_at_k_stderr: dict[int, float | None]
    maj_at_k: dict[int, float | None]
    tokens: TokenStats
    truncation_rate: float | None
    no_answer_rate: float | None
    macro_mean: float | None = json_field(default=None, omit_none=True)
    # metadata field ("subject", "level") -> value -> accuracy of that group
    breakdown: dict[str, dict[str, GroupMetrics]] = json_field(default_factory=dict, omit_empty=True)
    se_vs_k: dict[int, SEAtK] = json_field(default_factory=dict, omit_empty=True)
    # Extra scorers' accuracy (mean over problems of each problem's mean over samples) ± SE, by metric
    # name (e.g. lm-eval's "strict-match", "flexible-extract", "exact_match"); see extra_metrics;
    # and the scorer's own named figures (IFEval's instruction-level accuracy), see value_metrics.
    extra: dict[str, GroupMetrics] = json_field(default_factory=dict, omit_empty=True)
    # (fewest, most) samples a problem with samples has, where that is not num_samples for every one of them
    # (an adaptive run, a file with uneven rows, failed samples); None: each has num_samples. pass@k and maj@k are
    # defined for k <= the fewest only (`defined_k`).
    samples_per_problem: tuple[int, int] | None = json_field(default=None, omit_none=True)
    # A Codeforces-style rating from the problems of known rating (metadata "rating"; metrics/rating.py), None where
    # the task's problems have no ratings.
    rating: RatingEstimate | None = json_field(default=None, omit_none=True)
    # Which evaluation every figure of this entry comes from (issue 52.1): {"kind": "adaptive", "samples_per_problem":
    # [fewest, most]} (run --target-se: the samples its design drew) or {"kind": "fixed", "k": K, ...} (indices < K);
    # set by scoring (run/score.py), empty for figures computed elsewhere.
    evaluation: dict[str, Any] = json_field(default_factory=dict, omit_empty=True)

    def __post_init__(self) -> None:
        # Every figure under the one rounding rule, however the record was made (computed, replaced, read back).
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _settled(getattr(self, f.name)))

    def sample_range(self) -> tuple[int, int]:
        """(fewest, most) samples a problem has (num_samples, num_samples when every problem has K)."""
        return self.samples_per_problem or (self.num_samples, self.num_samples)


REPORTED_DIGITS = 10
REPORTED_FLOOR = 1e-15  # below it in magnitude a figure is 0


def settle(x: float) -> float:
    """A reported figure, rounded to `REPORTED_DIGITS` significant digits (0 below `REPORTED_FLOOR`): the same on
    every machine.

    numpy's exp/log and BLAS pick their kernels by CPU (AVX-512 or not, the vendor's), so the last bits of a figure
    differ between machines (maj@2 came out 0.49999999999999994 on one and ...95 on another). Ten digits keep
    every figure far finer than any error bar, and a difference of a few units in the last place changes the rounded
    value only when a figure lies within that of a rounding boundary (about one figure in 10^5; none of the
    pinned ones, tests/results/test_old_runs.py checks)."""
    if not math.isfinite(x):
        return x
    if abs(x) < REPORTED_FLOOR:  # a zero that cancellation left as 1e-17 on one machine and 0.0 on another
        return 0.0
    return float(f"{x:.{REPORTED_DIGITS}g}")


def _settled(value: Any) -> Any:
    if isinstance(value, float):
        return settle(value)
    if isinstance(value, dict):
        return {k: _settled(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_settled(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _settled(getattr(value, f.name))
                                             for f in dataclasses.fields(value)})
    return value


def _check(outcomes: Sequence[ProblemOutcome], K: int) -> None:
    if K < 1:
        raise UserError(f"metrics need K >= 1 samples per problem, got K={K}")
    for o in outcomes:
        n = len(o.correct)
        if not (len(o.classes) == len(o.completion_tokens) == len(o.finish_reasons) == n):
            raise UserError(
                f"problem {o.task}/{o.problem_key}: correct, classes, completion_tokens and "
                f"finish_reasons must have one entry per present sample, got lengths "
                f"{n}, {len(o.classes)}, {len(o.completion_tokens)}, {len(o.finish_reasons)}"
            )
        if n > K:
            raise UserError(
                f"problem {o.task}/{o.problem_key} has {n} samples but K={K}: pass only samples with index < K"
            )


def defined_k(outcomes: Sequence[ProblemOutcome]) -> int:
    """The largest k pass@k and maj@k are defined for over these problems: the fewest samples a problem with
    samples has (0 when none has any). Above it a figure would cover only the problems that reached k, a subset
    whose value is not the pool's (an adaptive run's hard problems, a file's longer rows)."""
    return min((len(o.correct) for o in outcomes if len(o.correct) > 0), default=0)


def problem_estimates(scored: Sequence[ProblemOutcome]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per problem with samples: (accuracy estimate, effective samples n_eff for its variance, samples).

    c/n and n, except for an adaptive run's problems: the two-stage estimate a run of that design carries
    (`ProblemOutcome.estimate`, n_eff left at n: its variance comes with it), or for a run made before
    it (`ProblemOutcome.crossfit`) the mean of the even- and odd-indexed samples' rates, whose counts were each
    decided by the other's outcomes, with n_eff = 4/(1/n_0 + 1/n_1). docs/statistics.md, adaptive sampling."""
    n = np.array([len(o.correct) for o in scored], dtype=np.float64)
    c = np.array([sum(bool(x) for x in o.correct) for o in scored], dtype=np.float64)
    p = c / np.maximum(n, 1.0)
    n_eff = n.copy()
    for i, o in enumerate(scored):
        if o.estimate is not None:
            p[i] = o.estimate
        elif o.crossfit and o.indices:
            p[i], n_eff[i] = crossfit_one(o.indices, o.correct)
    return p, n_eff, n


def task_metrics(outcomes: Sequence[ProblemOutcome], K: int) -> TaskMetrics:
    """All metrics of one task (or of any pool of problems)."""
    _check(outcomes, K)
    scored = [o for o in outcomes if len(o.correct) > 0]
    n = np.array([len(o.correct) for o in scored], dtype=np.int64)
    c = np.array([int(sum(bool(x) for x in o.correct)) for o in scored], dtype=np.int64)
    q = len(scored)
    p, n_eff, _ = problem_estimates(scored) if q else (np.zeros(0), np.zeros(0), np.zeros(0))

    if q:
        m_arr, se_arr, lo_arr, hi_arr = mean_stderr_ci(p)
        mean, se = float(m_arr), finite_or_none(float(se_arr))
        ci95 = [float(lo_arr), float(hi_arr)] if se is not None else None
    else:
        mean, se, ci95 = None, None, None
    if not q:
        se_resample = None
    elif all(o.estimate_var is not None for o in scored):  # a two-stage adaptive run's: unbiased per problem
        se_resample = math.sqrt(max(sum(float(o.estimate_var or 0.0) for o in scored), 0.0)) / q
    elif any(o.crossfit for o in scored):  # an earlier adaptive run's: see stderr_resample_adaptive
        se_resample = stderr_resample_adaptive(n, c, n_eff)
    else:
        se_resample = float(stderr_resample(p, n_eff))

    # pass@k and maj@k over every problem with samples, so only for k <= the fewest any has (defined_k).
    k_max = defined_k(scored)
    pass_k: dict[str, float | None] = {}
    pass_k_se: dict[str, float | None] = {}
    mat = pass_at_k_matrix(n, c, k_max) if k_max else np.full((0, 0), np.nan)
    for k in range(1, k_max + 1):
        col = mat[:, k - 1]
        pass_k[str(k)] = finite_or_none(col.mean())
        pass_k_se[str(k)] = _se(col)

    maj: dict[str, float | None] = {}
    for k in maj_ks(k_max) if k_max else []:
        maj[str(k)] = finite_or_none(np.mean([maj_at_k(o.classes, o.correct_classes, k) for o in scored]))

    tokens = np.array(
        [t for o in outcomes for t in o.completion_tokens if t is not None], dtype=np.float64
    )
    total = int(n.sum()) if q else 0
    truncated = sum(1 for o in outcomes for r in o.finish_reasons if r == "length")
    no_answer = sum(1 for o in outcomes for cls in o.classes if cls is None)

    return TaskMetrics(
        num_problems=len(outcomes),
        num_samples=K,
        num_missing=int(sum(o.num_missing for o in outcomes)),
        mean=finite_or_none(mean),
        stderr=finite_or_none(se),
        ci95=(ci95[0], ci95[1]) if ci95 is not None else None,
        stderr_resample=finite_or_none(se_resample),
        pass_at_k={int(k): v for k, v in pass_k.items()},
        pass_at_k_stderr={int(k): v for k, v in pass_k_se.items()},
        maj_at_k={int(k): v for k, v in maj.items()},
        tokens=TokenStats(
            mean=finite_or_none(tokens.mean()) if len(tokens) else None,
            median=finite_or_none(np.median(tokens)) if len(tokens) else None,
            p90=finite_or_none(np.percentile(tokens, 90)) if len(tokens) else None,
            max=int(tokens.max()) if len(tokens) else None,
        ),
        truncation_rate=truncated / total if total else None,
        no_answer_rate=no_answer / total if total else None,
        extra={**extra_metrics(outcomes), **value_metrics(outcomes)},
        samples_per_problem=(int(n.min()), int(n.max())) if q and not (n.min() == n.max() == K) else None,
    )


def extra_metrics(outcomes: Sequence[ProblemOutcome]) -> dict[str, GroupMetrics]:
    """Each extra scorer's accuracy ± SE over problems, like `mean`/`stderr` of the primary grade.

    Only metrics every scored problem has (a pool of tasks reports the ones they share)."""
    scored = [o for o in outcomes if len(o.correct) > 0]
    if not scored:
        return {}
    names = [n for n in scored[0].extra if all(n in o.extra for o in scored)]
    out: dict[str, GroupMetrics] = {}
    for name in names:
        ps = np.array([sum(bool(x) for x in o.extra[name]) / len(o.extra[name]) for o in scored], dtype=np.float64)
        out[name] = GroupMetrics(num_problems=len(ps), mean=float(ps.mean()), stderr=finite_or_none(_se(ps)))
    return out


def value_metrics(outcomes: Sequence[ProblemOutcome]) -> dict[str, GroupMetrics]:
    """The scorer's own figures, from each sample's named values (ProblemOutcome.values).

    A name `x` is averaged over a problem's samples, then over problems (SE over problems, like `mean`).
    A pair `x.num` / `x.den` is the ratio metric `x` = sum(num) / sum(den) over every sample (IFEval's
    instruction-level accuracy: instructions followed / instructions), with the delta-method standard error
    that treats problems as clusters: sqrt(Q/(Q-1) * sum_i (X_i - r Y_i)^2) / sum_i Y_i, X_i and Y_i the
    problem's sums. docs/statistics.md. A pair `x.count` / `x.of` is the same ratio of counts, reported with
    them (GroupMetrics.count and .of: the cascade's samples each stage decided).
    """
    rows = [o.values for o in outcomes if o.values]
    if not rows:
        return {}
    names = list(dict.fromkeys(k for vs in rows for v in vs for k in v))
    out: dict[str, GroupMetrics] = {}
    for name in names:
        if name.endswith((".den", ".of")):
            continue
        pair = (".num", ".den") if name.endswith(".num") else (".count", ".of") if name.endswith(".count") else None
        if pair is not None:
            base = name[:-len(pair[0])]
            x = np.array([sum(v.get(name, 0.0) for v in vs) for vs in rows], dtype=np.float64)
            y = np.array([sum(v.get(base + pair[1], 0.0) for v in vs) for vs in rows], dtype=np.float64)
            if y.sum() <= 0:
                continue
            r = x.sum() / y.sum()
            q = len(rows)
            se = math.sqrt(q / (q - 1) * float(((x - r * y) ** 2).sum())) / y.sum() if q > 1 else None
            counted = pair[0] == ".count"
            out[base] = GroupMetrics(num_problems=q, mean=float(r), stderr=finite_or_none(se),
                                     count=round(float(x.sum())) if counted else None,
                                     of=round(float(y.sum())) if counted else None)
        else:
            per_problem = np.array([np.mean([v[name] for v in vs if name in v]) for vs in rows
                                    if any(name in v for v in vs)], dtype=np.float64)
            if len(per_problem):
                out[name] = GroupMetrics(num_problems=len(per_problem), mean=float(per_problem.mean()),
                                         stderr=finite_or_none(_se(per_problem)))
    return out


def aggregate_metrics(by_task: Mapping[str, Sequence[ProblemOutcome]], K: int) -> TaskMetrics:
    """Metrics over all tasks: micro (every problem pooled, same fields as a task) plus macro_mean. pass@k and
    maj@k of the pool are defined for the k every task has (defined_k of the pooled problems)."""
    pooled = [o for outcomes in by_task.values() for o in outcomes]
    task_means = []
    for outcomes in by_task.values():
        ps = problem_estimates([o for o in outcomes if len(o.correct) > 0])[0]
        if len(ps):
            task_means.append(float(np.mean(ps)))
    # over all tasks only the extra scorers' metrics the tasks share, not a scorer's own named figures
    # (IFEval's mean something for IFEval only)
    return dataclasses.replace(task_metrics(pooled, K), extra=extra_metrics(pooled),
                               macro_mean=finite_or_none(np.mean(task_means)) if task_means else None)


def breakdown(
    outcomes: Sequence[ProblemOutcome],
    problems_metadata: Mapping[str, Mapping[str, Any]],
    key: str,
    metric: str | None = None,
) -> dict[str, GroupMetrics]:
    """Mean accuracy per value of a metadata field (e.g. "subject", "level").

    `problems_metadata` maps problem_key -> that problem's metadata. Problems without the field (or
    without samples) are left out; values are stringified so the result is JSON-ready. `metric`: an
    extra scorer's verdicts (lm-eval's "exact_match" per subject) instead of the primary grade.
    """
    groups: dict[str, list[float]] = {}
    scored = [o for o in outcomes if len(o.correct) > 0]
    for o, p in zip(scored, problem_estimates(scored)[0]):
        meta = problems_metadata.get(o.problem_key)
        if meta is None or meta.get(key) is None:
            continue
        if metric is None:
            groups.setdefault(str(meta[key]), []).append(float(p))
            continue
        verdicts = o.extra.get(metric, ())
        if len(verdicts) > 0:
            groups.setdefault(str(meta[key]), []).append(sum(bool(x) for x in verdicts) / len(verdicts))
    out: dict[str, GroupMetrics] = {}
    for value in sorted(groups, key=_natural):
        ps = np.array(groups[value])
        out[value] = GroupMetrics(num_problems=len(ps), mean=float(ps.mean()), stderr=finite_or_none(_se(ps)))
    return out


def _natural(s: str) -> tuple[int, float, str]:
    # "Level 2" before "Level 10"; numbers in numeric order.
    try:
        return (0, float(s), s)
    except ValueError:
        digits = "".join(ch for ch in s if ch.isdigit())
        return (1, float(digits) if digits else math.inf, s)


def se_vs_k(outcomes: Sequence[ProblemOutcome], K: int) -> dict[int, SEAtK]:
    """How the standard errors shrink with the samples per problem, for k in maj_ks(K).

    For each k: the expected `stderr` had only k of the samples been used, averaged over all size-k
    subsamples of each problem (exact, no resampling: a subsample mean adds variance
    p_hat (1-p_hat) (n-k) / (k (n-1)) to p_hat), and `stderr_resample` for k fresh samples. Only for k up to
    the fewest samples a problem has (defined_k), like pass@k: a subsample of k needs k samples.
    """
    _check(outcomes, K)
    scored = [o for o in outcomes if len(o.correct) > 0]
    q = len(scored)
    out: dict[int, SEAtK] = {}
    if q == 0:
        return {}
    n = np.array([len(o.correct) for o in scored], dtype=np.float64)
    p = np.array([sum(bool(x) for x in o.correct) for o in scored], dtype=np.float64) / n
    s2 = float(np.var(p, ddof=1)) if q >= 2 else math.nan
    var1 = _per_sample_var(p, n)
    for k in maj_ks(defined_k(scored)):
        kk = np.minimum(n, k)
        extra = np.where(n >= 2, p * (1 - p) * (n - kk) / (kk * np.maximum(n - 1, 1)), 0.0)
        se = math.sqrt((s2 + float(extra.mean())) / q) if q >= 2 else None
        out[k] = SEAtK(stderr=finite_or_none(se), stderr_resample=finite_or_none(math.sqrt(float(np.sum(var1 / kk))) / q))
    return out
