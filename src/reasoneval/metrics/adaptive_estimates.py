"""The estimates of an adaptive run's tasks (`run --target-se`), beside the rest of the estimates (metrics.summary,
metrics.plan_adaptive): each problem's accuracy estimate and its variance, the task's `adaptive` summary, the SE its
plan predicted. Pure functions of the scored outcomes and config.adaptive's settings; score_run calls them
(run/pipeline.py), the sampler that draws the samples is run/adaptive.py."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Sequence

import numpy as np

from reasoneval.metrics.estimators import beta_prior, posterior_variance, stderr_resample_adaptive
from reasoneval.metrics.plan_adaptive import PILOT, task_estimates
from reasoneval.metrics.summary import ProblemOutcome, problem_estimates, settle

# config.adaptive["design"] of a run made with the two-stage design; a run without it used the earlier cross-fitted
# rule and reports with it. The same value as results.adaptive.ADAPTIVE_DESIGN, which config.json's writers read (a
# module without imports; tests/metrics/test_adaptive_estimates.py checks the two agree).
DESIGN = "two-stage"


def with_estimates(outcomes: Mapping[str, Sequence[ProblemOutcome]], settings: Mapping[str, Any]
                   ) -> dict[str, list[ProblemOutcome]]:
    """An adaptive run's outcomes with each problem's accuracy estimate (ProblemOutcome.estimate, .estimate_var):
    the two-stage estimate for a run of this design, the cross-fit flag (metrics.estimators.crossfit) for a run made
    before it, which reports as it did."""
    if settings.get("design") != DESIGN:
        return {t: [dataclasses.replace(o, num_missing=0, crossfit=True) for o in os_] for t, os_ in outcomes.items()}
    history = settings.get("history") or [settings]
    out: dict[str, list[ProblemOutcome]] = {}
    for t, os_ in outcomes.items():
        est = task_estimates([_by_index(o) for o in os_], history, t)
        # The problem's samples the design drew: its pilot and the first T - PILOT after it, T its planned total.
        # Samples a later uniform command added (`--n 8` after the adaptive run) are not the adaptive run's: its
        # counts, pass@k and sample totals leave them out (issue 41.4).
        os_ = [_planned(o, int(total)) for o, total in zip(os_, est.totals)]
        out[t] = [dataclasses.replace(o, num_missing=0, estimate=float(e), estimate_var=float(v))
                  if len(o.correct) else dataclasses.replace(o, num_missing=0)
                  for o, e, v in zip(os_, est.estimate, est.variance)]
    return out


def _planned(o: ProblemOutcome, total: int) -> ProblemOutcome:
    """`o` with only the samples a two-stage plan of `total` samples uses (indices 0..PILOT-1, then the first
    total - PILOT indices after them); as it is when its indices are unknown or it has no more than that."""
    if not o.indices or len(o.correct) <= total or not all(j in o.indices for j in range(PILOT)):
        return o
    after = sorted(j for j in o.indices if j >= PILOT)[:max(0, total - PILOT)]
    keep = set(range(PILOT)) | set(after)
    pos = [i for i, j in enumerate(o.indices) if j in keep]

    def pick(xs: Sequence[Any]) -> list[Any]:
        return [xs[i] for i in pos] if len(xs) == len(o.indices) else list(xs)

    return dataclasses.replace(o, correct=pick(o.correct), classes=pick(o.classes),
                               completion_tokens=pick(o.completion_tokens), finish_reasons=pick(o.finish_reasons),
                               extra={k: pick(v) for k, v in o.extra.items()}, values=pick(o.values),
                               indices=pick(o.indices))


def _by_index(o: ProblemOutcome) -> dict[int, bool]:
    """A problem's verdicts by sample index (in order when the indices are not known)."""
    return {int(j): bool(x) for j, x in zip(o.indices or range(len(o.correct)), o.correct)}


def adaptive_summary(outcomes: Sequence[ProblemOutcome], settings: Mapping[str, Any], task: str,
                     plan_se: float | None = None) -> dict[str, Any]:
    """summary.json's `adaptive` entry of one task: the target, the re-run SE reached and whether it is within the
    target, what was spent, and what uniform K reaching the same re-run SE would have cost (Σ v_i / (Q² SE²)
    samples per problem, v_i each problem's unbiased c(n-c)/(n(n-1)); for a run of the earlier cross-fit design
    its posterior variance, as that run reported)."""
    scored = [o for o in outcomes if len(o.correct)]
    n = np.array([len(o.correct) for o in scored], dtype=np.int64)
    c = np.array([sum(bool(x) for x in o.correct) for o in scored], dtype=np.int64)
    if scored and all(o.estimate_var is not None for o in scored):
        se = math.sqrt(max(sum(float(o.estimate_var or 0.0) for o in scored), 0.0)) / len(scored)
    elif scored:
        _, n_eff, _ = problem_estimates(scored)
        se = stderr_resample_adaptive(n, c, n_eff)
    else:
        se = math.inf
    target = float(settings["target_se"])
    uniform_k = None
    if len(n) and 0 < se < math.inf:
        v = (c * (n - c) / np.maximum(n * (n - 1), 1) if settings.get("design") == DESIGN
             else posterior_variance(n, c, beta_prior(n, c)))
        uniform_k = max(1, math.ceil(float(np.sum(v)) / (len(n) ** 2 * se * se) - 1e-9))  # 4.0000001 is 4
    hist = np.bincount(n, minlength=1) if len(n) else np.zeros(1, dtype=np.int64)
    se_points = settle(100 * se) if se < math.inf else None  # the rounding rule of every reported figure
    out = {"target_se": target, "se": se_points, "met": bool(100 * se <= target + 1e-9),
           "stopped": (settings.get("stopped") or {}).get(task), "max_n": settings.get("max_n"),
           "samples": int(n.sum()), "n_min": int(n.min()) if len(n) else 0, "n_max": int(n.max()) if len(n) else 0,
           "n_histogram": {str(k): int(v) for k, v in enumerate(hist) if v},
           "pass_at_k_max": int(n.min()) if len(n) else 0, "uniform_k": uniform_k,
           "uniform_samples": uniform_k * len(outcomes) if uniform_k is not None else None}
    if plan_se is not None and plan_se < math.inf:
        out["planned_se"] = settle(100 * plan_se)
    return out


def plan_se_of(outcomes: Mapping[str, Sequence[ProblemOutcome]], settings: Mapping[str, Any]) -> dict[str, float]:
    """The SE each task's plan predicted (fraction), for a two-stage run."""
    if settings.get("design") != DESIGN:
        return {}
    history = settings.get("history") or [settings]
    return {t: task_estimates([_by_index(o) for o in os_], history, t).plan_se for t, os_ in outcomes.items()}

