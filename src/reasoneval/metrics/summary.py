"""Per-task and over-all metrics from graded samples. Formulas and their reasons: docs/statistics.md."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats

from reasoneval.errors import UserError
from reasoneval.metrics.majority import maj_at_k, maj_ks
from reasoneval.metrics.passk import pass_at_k_matrix


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


def _f(x: float | np.floating | None) -> float | None:
    """A plain float for JSON, None for undefined (NaN) values."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else x


def _se(values: np.ndarray) -> float | None:
    """Standard error of the mean of per-problem values (sample SD / sqrt(Q)); None below 2 problems."""
    if len(values) < 2:
        return None
    return float(np.std(values, ddof=1) / math.sqrt(len(values)))


def mean_stderr_ci(per_problem: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean, standard error and 95% CI of per-problem accuracies along the last axis.

    Vectorised so a simulation can score thousands of runs with the very code the reports use.
    SE = sample SD / sqrt(Q) (NaN for Q < 2); CI = mean -/+ t(0.975, Q-1) * SE, clipped to [0, 1]
    (Student t: the normal quantile is too narrow for small Q).
    """
    x = np.asarray(per_problem, dtype=np.float64)
    q = x.shape[-1]
    mean = x.mean(axis=-1)
    if q < 2:
        nan = np.full(mean.shape, np.nan)
        return mean, nan, nan.copy(), nan.copy()
    se = x.std(axis=-1, ddof=1) / math.sqrt(q)
    half = float(stats.t.ppf(0.975, q - 1)) * se
    return mean, se, np.clip(mean - half, 0.0, 1.0), np.clip(mean + half, 0.0, 1.0)


def _per_sample_var(p: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Estimate of each problem's Bernoulli variance p_i (1-p_i) along the last axis.

    n_i >= 2: the unbiased p_hat (1-p_hat) n/(n-1). n_i = 1: one sample cannot estimate its own
    variance (p_hat is 0 or 1); use pbar (1-pbar) of the pool instead, which on average bounds
    p_i (1-p_i) from above (Jensen), so the SE errs on the wide side.
    """
    p = np.asarray(p, dtype=np.float64)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), p.shape)
    pbar = p.mean(axis=-1, keepdims=True)
    unbiased = p * (1.0 - p) * n / np.maximum(n - 1.0, 1.0)
    return np.where(n >= 2, unbiased, pbar * (1.0 - pbar))


def stderr_resample(per_problem: np.ndarray, n: np.ndarray) -> np.ndarray:
    """SE of the mean over re-running the same problems (sampling noise only), along the last axis.

    Var(p_hat_i) = p_i (1-p_i) / n_i, estimated per problem, summed, over Q^2.
    """
    p = np.asarray(per_problem, dtype=np.float64)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), p.shape)
    return np.sqrt(np.sum(_per_sample_var(p, n) / n, axis=-1)) / p.shape[-1]


def task_metrics(outcomes: Sequence[ProblemOutcome], K: int) -> dict[str, Any]:
    """All metrics of one task (or of any pool of problems), JSON-ready."""
    _check(outcomes, K)
    scored = [o for o in outcomes if len(o.correct) > 0]
    n = np.array([len(o.correct) for o in scored], dtype=np.int64)
    c = np.array([int(sum(bool(x) for x in o.correct)) for o in scored], dtype=np.int64)
    q = len(scored)
    p = c / n if q else np.zeros(0)

    if q:
        m_arr, se_arr, lo_arr, hi_arr = mean_stderr_ci(p)
        mean, se = float(m_arr), _f(se_arr)
        ci95 = [float(lo_arr), float(hi_arr)] if se is not None else None
    else:
        mean, se, ci95 = None, None, None
    se_resample = float(stderr_resample(p, n)) if q else None

    pass_k: dict[str, float | None] = {}
    pass_k_se: dict[str, float | None] = {}
    mat = pass_at_k_matrix(n, c, K) if q else np.full((0, K), np.nan)
    for k in range(1, K + 1):
        col = mat[:, k - 1]
        col = col[~np.isnan(col)]  # problems with fewer than k samples are left out
        pass_k[str(k)] = _f(col.mean()) if len(col) else None
        pass_k_se[str(k)] = _se(col)

    maj: dict[str, float | None] = {}
    for k in maj_ks(K):
        vals = [maj_at_k(o.classes, o.correct_classes, k) for o in scored if len(o.classes) >= k]
        maj[str(k)] = _f(np.mean(vals)) if vals else None

    tokens = np.array(
        [t for o in outcomes for t in o.completion_tokens if t is not None], dtype=np.float64
    )
    total = int(n.sum()) if q else 0
    truncated = sum(1 for o in outcomes for r in o.finish_reasons if r == "length")
    no_answer = sum(1 for o in outcomes for cls in o.classes if cls is None)

    return {
        "num_problems": len(outcomes),
        "num_samples": K,
        "num_missing": int(sum(o.num_missing for o in outcomes)),
        "mean": _f(mean),
        "stderr": _f(se),
        "ci95": ci95,
        "stderr_resample": _f(se_resample),
        "pass_at_k": pass_k,
        "pass_at_k_stderr": pass_k_se,
        "maj_at_k": maj,
        "tokens": {
            "mean": _f(tokens.mean()) if len(tokens) else None,
            "median": _f(np.median(tokens)) if len(tokens) else None,
            "p90": _f(np.percentile(tokens, 90)) if len(tokens) else None,
            "max": int(tokens.max()) if len(tokens) else None,
        },
        "truncation_rate": truncated / total if total else None,
        "no_answer_rate": no_answer / total if total else None,
    }


def aggregate_metrics(by_task: Mapping[str, Sequence[ProblemOutcome]], K: int) -> dict[str, Any]:
    """Metrics over all tasks: micro (every problem pooled, same keys as a task) plus macro_mean."""
    pooled = [o for outcomes in by_task.values() for o in outcomes]
    out = task_metrics(pooled, K)
    task_means = []
    for outcomes in by_task.values():
        ps = [sum(bool(x) for x in o.correct) / len(o.correct) for o in outcomes if len(o.correct) > 0]
        if ps:
            task_means.append(float(np.mean(ps)))
    out["macro_mean"] = _f(np.mean(task_means)) if task_means else None
    return out


def breakdown(
    outcomes: Sequence[ProblemOutcome],
    problems_metadata: Mapping[str, Mapping[str, Any]],
    key: str,
) -> dict[str, dict[str, Any]]:
    """Mean accuracy per value of a metadata field (e.g. "subject", "level").

    `problems_metadata` maps problem_key -> that problem's metadata. Problems without the field (or
    without samples) are left out; values are stringified so the result is JSON-ready.
    """
    groups: dict[str, list[float]] = {}
    for o in outcomes:
        meta = problems_metadata.get(o.problem_key)
        if meta is None or meta.get(key) is None or len(o.correct) == 0:
            continue
        groups.setdefault(str(meta[key]), []).append(sum(bool(x) for x in o.correct) / len(o.correct))
    out: dict[str, dict[str, Any]] = {}
    for value in sorted(groups, key=_natural):
        ps = np.array(groups[value])
        out[value] = {"num_problems": len(ps), "mean": float(ps.mean()), "stderr": _f(_se(ps))}
    return out


def _natural(s: str) -> tuple[int, float, str]:
    # "Level 2" before "Level 10"; numbers in numeric order.
    try:
        return (0, float(s), s)
    except ValueError:
        digits = "".join(ch for ch in s if ch.isdigit())
        return (1, float(digits) if digits else math.inf, s)


def se_vs_k(outcomes: Sequence[ProblemOutcome], K: int) -> dict[str, dict[str, float | None]]:
    """How the standard errors shrink with the samples per problem, for k in maj_ks(K).

    For each k: the expected `stderr` had only k of the samples been used, averaged over all size-k
    subsamples of each problem (exact, no resampling: a subsample mean adds variance
    p_hat (1-p_hat) (n-k) / (k (n-1)) to p_hat), and `stderr_resample` for k fresh samples.
    """
    _check(outcomes, K)
    scored = [o for o in outcomes if len(o.correct) > 0]
    q = len(scored)
    out: dict[str, dict[str, float | None]] = {}
    if q == 0:
        return {str(k): {"stderr": None, "stderr_resample": None} for k in maj_ks(K)}
    n = np.array([len(o.correct) for o in scored], dtype=np.float64)
    p = np.array([sum(bool(x) for x in o.correct) for o in scored], dtype=np.float64) / n
    s2 = float(np.var(p, ddof=1)) if q >= 2 else math.nan
    var1 = _per_sample_var(p, n)
    for k in maj_ks(K):
        kk = np.minimum(n, k)  # a problem with fewer than k samples uses all it has
        extra = np.where(n >= 2, p * (1 - p) * (n - kk) / (kk * np.maximum(n - 1, 1)), 0.0)
        se = math.sqrt((s2 + float(extra.mean())) / q) if q >= 2 else None
        out[str(k)] = {
            "stderr": _f(se),
            "stderr_resample": _f(math.sqrt(float(np.sum(var1 / kk))) / q),
        }
    return out
