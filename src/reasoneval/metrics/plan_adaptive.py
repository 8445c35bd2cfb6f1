"""`run --target-se`: the two-stage design (the plan, pure) and its unbiased estimator. Numbers in, numbers out.

The design (docs/statistics.md, "Adaptive sampling" says why each part is there):

1. **Pilot.** Every problem first gets `PILOT` = 4 samples, at sample indices 0-3; indices 0 and 2 form half a,
   1 and 3 half b. The samples after the pilot are at indices 4 and up.
2. **Plan, once.** From the task's pilot counts (how many problems got 0, 1, .., 4 of 4 right) the plan fits a prior
   (the nonparametric maximum-likelihood mixture of binomials, `fit_prior`), takes each count's posterior mean and
   variance of p(1-p), and chooses every problem's total number of samples as a function of its pilot count:
   Neyman (n ∝ posterior SD) where the prior predicts it beats uniform clearly, uniform where it does not, a blend
   in between (`plan_totals`). The scale is the smallest whose predicted variance (that of the weighted estimate
   below, `weight_factors`), plus `margin_z` posterior SDs of that prediction, is at most the target's. The
   constants are a plan version (`PlanRule`, `RULES`) that each command's history entry names. Nothing is
   re-planned: no decision ever reads the samples after the pilot, so the stop cannot select lucky runs.
3. **Estimate.** A problem's accuracy is w_a·(rate of half a) + w_b·(rate of half b) + (1 - w_a - w_b)·(rate of
   the samples after the pilot). The weight of half a comes from the plan the problem would have had if half a had
   come out like half b (everything else as observed), and the same for half b: a weight never depends on the
   outcomes it weighs, and the samples after the pilot have a count fixed by the pilot, so the estimate is exactly
   unbiased whatever the plan did (`pilot_weights`, `two_stage_estimates`). Its variance has an exactly unbiased
   estimate from the same samples (`two_stage_estimates`), summed over problems for `stderr_resample`.

The sampler (`run/adaptive.py`), the report (`run/pipeline.py`), `compare` and the simulation
(scripts/adaptive_simulation.py) all call these functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats

PILOT = 4  # samples every problem gets before the plan: two halves of two
# At least this many after the pilot (the variance estimate needs two; four keep a problem that looked settled in
# its pilot from reporting a variance of 0 as often), fewer only for a target so loose that even problems all at
# p = 1/2 would need fewer (`main_floor`).
MIN_MAIN = 4
# The blend between Neyman and uniform, from the predicted cost of Neyman over uniform at the same predicted SE:
# at or below NEYMAN_FULL all Neyman, at or above NEYMAN_NONE all uniform, linear in between (no jump: a jump
# would let one problem's pilot flip every other problem's plan).
NEYMAN_FULL = 0.70
NEYMAN_NONE = 0.90
EM_ITERATIONS = 300


@dataclass(frozen=True)
class PlanRule:
    """The constants of one version of the plan. A run's history entries name the version they were planned with
    (`"plan"`; none: version 1), so a run keeps reporting with the plan that drew its samples."""

    margin_z: float  # plan for the predicted variance plus this many of its posterior SDs
    # predict each count's variance with the pilot weights its halves will get (`pilot_weights`, `weight_factors`)
    # rather than as 1/T: where the plan is Neyman a problem whose halves disagree weighs them by other counts'
    # totals, which costs up to 10% of the variance (issue 34, round two)
    weighted: bool
    # pseudo-problems added to every pilot count before the prior is fitted: the NPMLE from a few dozen 4-sample
    # pilots puts point masses at exactly 0 and 1 where the truth is 0.05 or 0.95, and the plan then trusts them
    smoothing: float


RULES = {1: PlanRule(margin_z=1.5, smoothing=0.0, weighted=False),  # issue 34's first round
         2: PlanRule(margin_z=2.0, smoothing=0.25, weighted=True)}  # round two: set on seeds 11-13
RULE = 2  # the version new commands plan with


def entry_rule(entry: Mapping[str, Any]) -> PlanRule:
    """The plan version a history entry was made with (entries before versions were recorded: 1)."""
    return RULES[int(entry.get("plan", 1))]
# The prior's support: 0 and 1 themselves (problems a model always or never solves), dense near both ends.
_ENDS = np.geomspace(1e-3, 0.5, 30)
GRID = np.unique(np.concatenate([[0.0, 1.0], _ENDS, 1.0 - _ENDS]))
_V = GRID * (1.0 - GRID)


@cache
def _likelihood(m: int) -> np.ndarray:
    """P(c of m right | p) for c = 0..m (rows) and p on GRID (columns)."""
    return stats.binom.pmf(np.arange(m + 1)[:, None], m, GRID[None, :])


def fit_prior(hists: np.ndarray) -> np.ndarray:
    """The mixing distribution on GRID that maximises the likelihood of each row's pilot counts (row = counts of
    problems with 0..m right of m; fractional counts allowed), by EM from the uniform weights (Kiefer-Wolfowitz
    NPMLE: it takes point masses at 0 and 1, one outlier, or a Beta-like spread as the task shows them, where a
    Beta prior is one shape). Deterministic: a fixed number of iterations."""
    h = np.atleast_2d(np.asarray(hists, dtype=np.float64))
    like = _likelihood(h.shape[1] - 1)
    share = h / np.maximum(h.sum(axis=1, keepdims=True), 1e-300)
    w = np.full((len(h), len(GRID)), 1.0 / len(GRID))
    for _ in range(EM_ITERATIONS):
        w = w * ((share / np.maximum(w @ like.T, 1e-300)) @ like)
    return w


def posterior_moments(hists: np.ndarray, smoothing: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Per row and pilot count c: the posterior mean and variance of p(1-p) under the row's fitted prior (fitted to
    the counts plus `smoothing` pseudo-problems at every count)."""
    h = np.atleast_2d(np.asarray(hists, dtype=np.float64))
    w = fit_prior(h + smoothing)
    like = _likelihood(h.shape[1] - 1)
    den = np.maximum(w @ like.T, 1e-300)
    mean = ((w * _V) @ like.T) / den
    second = ((w * _V * _V) @ like.T) / den
    return mean, np.maximum(second - mean * mean, 0.0)


@dataclass(frozen=True)
class Plans:
    """One plan per row of pilot histograms: `totals[b, c]` samples (pilot included) for a problem with c of PILOT
    right, `gamma` the Neyman share of the blend (0 uniform, 1 Neyman), `predicted_se` (fraction) the SE the plan
    predicts, `reason` why it stops where it does: "target", "max_n" (capped below what the target needs) or
    "budget"."""

    totals: np.ndarray
    gamma: np.ndarray
    predicted_se: np.ndarray
    reason: list[str]


def plan_totals(hists: np.ndarray, target: float, max_n: int, budget: int | None = None,
                rule: PlanRule = RULES[RULE]) -> Plans:
    """The plan of each row of `hists` (shape (B, PILOT + 1): how many problems had c of PILOT pilot samples right).

    target: SE of the task's mean (fraction). max_n: most samples per problem. budget: most samples the task may
    hold in all (pilot included); a plan over it is scaled down (`_within_budget`). rule: the plan's constants.

    One plan per pilot (issue 41.12): each row is planned alone (`_plan_one`, the same code whatever else is in the
    batch, so the sampler, planning one histogram, and the estimator, planning many, agree), and the step that
    turns a scale into whole totals is exact integer arithmetic (`_scaled`)."""
    h = np.atleast_2d(np.asarray(hists, dtype=np.float64))
    plans = [_plan_one(tuple(float(x) for x in row), float(target), int(max_n), None if budget is None else int(budget),
                       rule) for row in h]
    return Plans(np.array([p[0] for p in plans], dtype=np.int64).reshape(h.shape),
                 np.array([p[1] for p in plans], dtype=np.float64), np.array([p[2] for p in plans], dtype=np.float64),
                 [p[3] for p in plans])


# The shape of a plan (each count's share of the largest total) as an integer multiple of 1/SHAPE_UNIT, and its
# scale the same: totals are ceil(S · shape_q / SHAPE_UNIT²) in exact integers, so no total depends on how the last
# bit of a product rounds.
SHAPE_UNIT = 1 << 24


def _scaled(scale: int, shape_q: Sequence[int], lo: Sequence[int] | int, max_n: int) -> np.ndarray:
    """clip(ceil(scale · shape_q / SHAPE_UNIT²), lo, max_n), exactly (Python integers)."""
    unit = SHAPE_UNIT * SHAPE_UNIT
    los = [lo] * len(shape_q) if isinstance(lo, int) else list(lo)
    return np.array([min(max(-((-scale * q) // unit), f), max_n) for q, f in zip(shape_q, los)], dtype=np.float64)


def _quantised(shape: np.ndarray) -> list[int]:
    return [max(1, int(round(float(x) * SHAPE_UNIT))) for x in shape]


def _smallest_scale(shape_q: Sequence[int], lo: int, max_n: int, ok: Any) -> np.ndarray:
    """The totals `_scaled` gives at the smallest integer scale S with ok(totals) (every problem at max_n when none
    smaller passes), by bisection over the integers."""
    lo_s, hi_s = 0, -((-max_n * SHAPE_UNIT * SHAPE_UNIT) // min(shape_q))  # hi: every problem at max_n
    while hi_s - lo_s > 1:
        mid = (lo_s + hi_s) // 2
        if ok(_scaled(mid, shape_q, lo, max_n)):
            hi_s = mid
        else:
            lo_s = mid
    return _scaled(hi_s, shape_q, lo, max_n)


@lru_cache(maxsize=1 << 16)
def _plan_one(hist: tuple[float, ...], target: float, max_n: int, budget: int | None, rule: PlanRule
              ) -> tuple[tuple[int, ...], float, float, str]:
    """One pilot histogram's plan: (totals by pilot count, gamma, predicted SE, reason)."""
    h = np.asarray(hist, dtype=np.float64)[None, :]
    q = float(h.sum())
    lo = PILOT + main_floor(target, int(q))
    if lo == PILOT or max_n < lo:  # the pilot alone (at most max_n samples) is all there is
        return (min(PILOT, max_n),) * len(hist), 0.0, math.inf, "target" if lo == PILOT else "max_n"
    mean, var = posterior_moments(h, rule.smoothing)
    goal = (q * target) ** 2
    sd = np.sqrt(np.maximum(mean[0], 1e-12))

    def predicted(tot: np.ndarray) -> float:
        f = weight_factors(tot[None, :])[0] if rule.weighted else 1.0 / tot
        return float(np.sum(h[0] * mean[0] * f)
                     + rule.margin_z * math.sqrt(max(float(np.sum(h[0] * var[0] * f * f)), 0.0)))

    def fit(shape: np.ndarray) -> np.ndarray:
        """Totals clip(ceil(s · shape), lo, max_n) at the smallest s predicted to meet the goal."""
        return _smallest_scale(_quantised(shape), lo, max_n, lambda tot: predicted(tot) <= goal)

    neyman, uniform = fit(sd / sd.max()), fit(np.ones_like(sd))
    ratio = float(np.sum(h[0] * neyman)) / max(float(np.sum(h[0] * uniform)), 1e-300)
    gamma = min(max((NEYMAN_NONE - ratio) / (NEYMAN_NONE - NEYMAN_FULL), 0.0), 1.0)
    blend = (sd / sd.max()) ** gamma
    tot = fit(blend)
    reason = "max_n" if predicted(tot) > goal * (1 + 1e-9) else "target"
    if budget is not None and float(np.sum(h[0] * tot)) > budget:
        tot, reason = _within_budget(h[0], blend, lo, max_n, budget), "budget"
    se = math.sqrt(max(float(np.sum(h[0] * mean[0] / tot)), 0.0)) / max(q, 1.0)
    return tuple(int(t) for t in tot), gamma, se, reason


# Every way a pilot count c splits over the halves (j of 2 in half a, c - j in half b), with its probability given c
# (hypergeometric): `weight_factors` sums over them.
_SPLITS = [(c, j, math.comb(2, j) * math.comb(2, c - j) / math.comb(PILOT, c))
           for c in range(PILOT + 1) for j in range(3) if 0 <= c - j <= 2]
_SPLIT_C = np.array([c for c, _, _ in _SPLITS])
_SPLIT_A = np.array([2 * (c - j) for c, j, _ in _SPLITS])  # the count behind half a's weight: half b's doubled
_SPLIT_B = np.array([2 * j for _, j, _ in _SPLITS])
_SPLIT_SUM = np.array([[pr if c == cc else 0.0 for cc in range(PILOT + 1)] for c, _, pr in _SPLITS])


def weight_factors(tot: np.ndarray) -> np.ndarray:
    """f[b, c]: the variance of a problem's estimate per unit of p(1-p) when its pilot count is c and the totals
    are tot[b] (shape (B, PILOT + 1)), averaged over how c splits over the halves: (w_a² + w_b²)/2 + w_m²/(T_c - 4)
    with w_a = 2/T at half b's count doubled, w_b = 2/T at half a's (`pilot_weights`, the histogram's shift from
    moving one problem left out). Equal to 1/T_c where the plan is uniform."""
    t = np.asarray(tot, dtype=np.float64)
    wa, wb = 2.0 / t[:, _SPLIT_A], 2.0 / t[:, _SPLIT_B]
    main = np.maximum(t[:, _SPLIT_C] - PILOT, 1.0)
    return ((wa * wa + wb * wb) / 2.0 + (1.0 - wa - wb) ** 2 / main) @ _SPLIT_SUM


def main_floor(target: float, q: int) -> int:
    """The fewest samples after the pilot: MIN_MAIN, fewer where uniform K for problems all at p = 1/2 (the
    largest variance there is), 1/(4 Q S²), is below PILOT + MIN_MAIN, and none where it is at most PILOT. A
    function of the target and Q only, so no plan's floor depends on any outcome."""
    if q <= 0 or target <= 0:
        return MIN_MAIN
    k_max = 0.25 / (q * target * target)
    if k_max <= PILOT:
        return 0
    return int(min(MIN_MAIN, max(2, math.ceil(k_max) - PILOT)))


def _within_budget(h: np.ndarray, shape: np.ndarray, lo: int, max_n: int, budget: int) -> np.ndarray:
    """The largest totals clip(ceil(s · shape), floor, max_n) that fit the budget, with the highest floor (from
    `lo` down to PILOT + 2) that fits; the pilot alone where not even PILOT + 2 per problem does. The floor depends
    on the budget and Q only. h: one pilot histogram."""
    q = float(h.sum())
    floor = next((f for f in range(lo, PILOT + 1, -1) if q * f <= budget), PILOT)
    if floor == PILOT:
        return np.full(len(h), float(PILOT))
    shape_q = _quantised(shape)
    lo_s, hi_s = 0, -((-max_n * SHAPE_UNIT * SHAPE_UNIT) // min(shape_q))  # lo fits (floor · Q <= budget)
    if float(np.sum(h * _scaled(hi_s, shape_q, floor, max_n))) <= budget:  # even every problem at max_n fits
        return _scaled(hi_s, shape_q, floor, max_n)
    while hi_s - lo_s > 1:
        mid = (lo_s + hi_s) // 2
        if float(np.sum(h * _scaled(mid, shape_q, floor, max_n))) <= budget:
            lo_s = mid
        else:
            hi_s = mid
    return _scaled(lo_s, shape_q, floor, max_n)


def history_totals(hists: np.ndarray, history: Sequence[Mapping[str, Any]], task: str | None = None) -> np.ndarray:
    """totals[b, c]: the total of a problem of pilot count c in a run whose pilot histogram is row b and whose
    commands were `history` (oldest first); a problem holds the most any of them asked for (a smaller later target
    only adds). An entry is a uniform run `{"n": K}` or an adaptive one `{"target_se": points, "max_n": N,
    "budget_samples": B or None, "plan": version}`; with `"tasks": {name: {"budget": b}}` it applies to those tasks
    only, with that task's share of the budget (`run/adaptive.py`, `history_entry`). The diagonal of
    `count_tables`, planned on the histogram alone."""
    h = np.atleast_2d(np.asarray(hists, dtype=np.float64))
    out = np.zeros(h.shape, dtype=np.int64)
    for entry in history:
        tasks = entry.get("tasks")
        if task is not None and tasks is not None and task not in tasks:
            continue
        if entry.get("target_se") is None:
            out = np.maximum(out, int(entry.get("n") or 0))
            continue
        plans = plan_totals(h, float(entry["target_se"]) / 100.0, int(entry["max_n"]), entry_budget(entry, task),
                            entry_rule(entry))
        out = np.maximum(out, plans.totals)
    return out


def count_tables(hists: np.ndarray, history: Sequence[Mapping[str, Any]], task: str | None = None) -> np.ndarray:
    """table[b, c, d]: the total a problem gets at pilot count d when it takes the place of one problem of count c
    in row b's histogram (the other problems as observed), under every command of `history` (the most any asked
    for). table[b, c, c] is a problem's own total; table[b, c, 2j] is the total behind the weight of a pilot half
    whose other half is j of 2 (`pilot_weights`). Meaningless where row b has no problem of count c."""
    def totals_of(hs: np.ndarray) -> np.ndarray:
        return history_totals(hs, history, task)

    return swap_tables(hists, totals_of).astype(np.int64)


def _plan_variants(variants: np.ndarray, totals_of: Any) -> np.ndarray:
    """totals_of on every histogram of variants (shape (..., k)), each distinct one planned once."""
    k = variants.shape[-1]
    uniq, inverse = np.unique(variants.reshape(-1, k), axis=0, return_inverse=True)
    return np.asarray(totals_of(uniq), dtype=np.float64)[inverse.reshape(-1)].reshape(variants.shape)


def swap_tables(hists: np.ndarray, totals_of: Any) -> np.ndarray:
    """table[b, c, d] = totals_of(row b with one problem moved from count c to d)[d]."""
    h = np.atleast_2d(np.asarray(hists, dtype=np.float64))
    b, k = h.shape
    eye = np.eye(k)
    variants = np.maximum(h[:, None, None, :] - eye[None, :, None, :] + eye[None, None, :, :], 0.0)  # (B, c, d, k)
    tot = _plan_variants(variants, totals_of)
    return np.take_along_axis(tot, np.arange(k)[None, None, :, None], axis=3)[..., 0]


def pilot_weights(ca: np.ndarray, cb: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weights of pilot halves a and b of each problem. ca, cb: right of 2 in each half, shape (..., Q); table:
    `count_tables` of the task's pilot histogram, shape (..., PILOT + 1, PILOT + 1).

    Half a's weight is 2/T (its share of the problem's samples), T the total the plan gives a problem whose pilot
    is half b twice, in the place of this problem, every other problem as observed: a function of half b and of
    the other problems, never of half a. Half b's the same way from half a."""
    ca, cb = np.asarray(ca, dtype=np.int64), np.asarray(cb, dtype=np.int64)
    row = np.take_along_axis(table, (ca + cb)[..., None], axis=-2)  # (..., Q, k): the others + this one at d
    ta = np.take_along_axis(row, 2 * cb[..., None], axis=-1)[..., 0]
    tb = np.take_along_axis(row, 2 * ca[..., None], axis=-1)[..., 0]
    return 2.0 / ta, 2.0 / tb


def own_totals(c: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Each problem's total, table[c, c] (c: pilot counts, shape (..., Q); table: `count_tables`, (..., k, k))."""
    c = np.asarray(c, dtype=np.int64)
    row = np.take_along_axis(table, c[..., None], axis=-2)
    return np.take_along_axis(row, c[..., None], axis=-1)[..., 0].astype(np.int64)


def two_stage_estimates(ca: np.ndarray, cb: np.ndarray, ma: np.ndarray, na: np.ndarray, mb: np.ndarray, nb: np.ndarray,
                        wa: np.ndarray, wb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per problem (any leading shape): the accuracy estimate and an unbiased estimate of its variance.

    ca, cb: right of 2 in pilot halves a, b; ma of na and mb of nb: right among the samples after the pilot at even
    and odd positions (na + nb >= 2, so na, nb >= 1); wa, wb: the pilot weights (`pilot_weights`).

    estimate = wa·A + wb·B + wm·M, A = ca/2, B = cb/2, M = (ma + mb)/(na + nb), wm = 1 - wa - wb.
    variance = wa²·v(a)/2 + wb²·v(b)/2 + wm²·v(main)/n + 2·wa·(A - Mb)·wb·(B - Ma)
    with v(x) = c(n-c)/(n(n-1)) the unbiased p(1-p) of a group of n, Ma = ma/na, Mb = mb/nb. Each term is unbiased
    for its part of the variance (docs/statistics.md): wa is independent of half a, the samples after the pilot are
    fresh given the pilot, and the last term's two main halves are independent of each other and of the pilot."""
    ca, cb, ma, na, mb, nb = (np.asarray(x, dtype=np.float64) for x in (ca, cb, ma, na, mb, nb))
    wa, wb = np.asarray(wa, dtype=np.float64), np.asarray(wb, dtype=np.float64)
    n = na + nb
    a_rate, b_rate = ca / 2.0, cb / 2.0
    main = (ma + mb) / np.maximum(n, 1.0)
    wm = 1.0 - wa - wb
    est = wa * a_rate + wb * b_rate + wm * main
    var = (wa * wa * ca * (2.0 - ca) / 4.0 + wb * wb * cb * (2.0 - cb) / 4.0
           + wm * wm * (ma + mb) * (n - ma - mb) / np.maximum(n * n * (n - 1.0), 1.0)
           + 2.0 * wa * (a_rate - mb / np.maximum(nb, 1.0)) * wb * (b_rate - ma / np.maximum(na, 1.0)))
    return est, var


def variance_floor(ca: np.ndarray, cb: np.ndarray, ma: np.ndarray, na: np.ndarray, mb: np.ndarray, nb: np.ndarray,
                   wa: np.ndarray, wb: np.ndarray) -> np.ndarray:
    """Per problem: the variance its estimate would have with its weights fixed, (wa²/2 + wb²/2 + wm²/n)·v, v the
    unbiased p(1-p) of all its samples (pilot and after: c(N-c)/(N(N-1))). Never negative, 0 only where every sample
    of the problem agrees.

    The floor of a task's reported variance (`task_estimates`): the two-stage variance estimate is unbiased but its
    last term (the weights' own randomness) can be negative, and its sum over a task can come out below zero
    (an SE of 0) or far below what the samples show. When the unbiased sum is below the sum of these, the task
    reports these: an SE never below the one of a design with fixed weights on the same samples."""
    ca, cb, ma, na, mb, nb = (np.asarray(x, dtype=np.float64) for x in (ca, cb, ma, na, mb, nb))
    wa, wb = np.asarray(wa, dtype=np.float64), np.asarray(wb, dtype=np.float64)
    n = na + nb
    right, total = ca + cb + ma + mb, PILOT + n
    v = right * (total - right) / np.maximum(total * (total - 1.0), 1.0)
    wm = 1.0 - wa - wb
    return (wa * wa / 2.0 + wb * wb / 2.0 + wm * wm / np.maximum(n, 1.0)) * v


def reported_variances(var: np.ndarray, floor: np.ndarray, use: np.ndarray | None = None) -> np.ndarray:
    """The per-problem variances a task reports (tasks along the last axis; `use`: the problems its sum counts):
    the unbiased estimates `var`, or `variance_floor`'s where those sum lower over the task."""
    var, floor = np.asarray(var, dtype=np.float64), np.asarray(floor, dtype=np.float64)
    use = np.ones(var.shape, dtype=bool) if use is None else np.asarray(use, dtype=bool)
    below = (np.sum(np.where(use, var, 0.0), axis=-1, keepdims=True)
             < np.sum(np.where(use, floor, 0.0), axis=-1, keepdims=True))
    return np.where(below, floor, var)


@dataclass(frozen=True)
class TaskEstimate:
    """A task of a two-stage adaptive run: per problem (in the order given) the accuracy estimate and its variance
    estimate, the samples the plan asks for, and the plan."""

    estimate: np.ndarray
    variance: np.ndarray
    totals: np.ndarray  # planned samples per problem
    plan_se: float  # the plan's predicted SE (fraction), inf without a plan
    reason: str | None  # the plan's stopping reason; None while some pilot is incomplete


def pilot_counts(outcomes: Sequence[Mapping[int, bool]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per problem (its finished samples' verdicts by sample index): right in pilot half a (indices 0, 2), in half
    b (1, 3), and whether all four are there."""
    full = np.array([all(j in x for j in range(PILOT)) for x in outcomes], dtype=bool)
    ca = np.array([int(bool(x[0])) + int(bool(x[2])) if f else 0 for x, f in zip(outcomes, full)], dtype=np.int64)
    cb = np.array([int(bool(x[1])) + int(bool(x[3])) if f else 0 for x, f in zip(outcomes, full)], dtype=np.int64)
    return ca, cb, full


def task_estimates(outcomes: Sequence[Mapping[int, bool]], history: Sequence[Mapping[str, Any]],
                   task: str | None = None) -> TaskEstimate:
    """The two-stage estimate of every problem of one task, from its finished samples' verdicts by sample index
    (failed samples left out) and the run's command history (`history_totals`, for `task`).

    A problem whose pilot is incomplete (a run stopped early, or a budget below the pilot) is estimated by its
    plain fraction right with the usual unbiased variance; so are all problems when some pilot is incomplete or
    the plan gives none more than the pilot. After the pilot a problem's first T - PILOT samples by index are used,
    T its planned total: samples beyond it (an earlier command asked for more) are not, because the estimate is
    unbiased over the samples the plan's count rule chose."""
    q = len(outcomes)
    ca, cb, full = pilot_counts(outcomes)
    if not full.any():
        est, var = _plain(outcomes)
        return TaskEstimate(est, var, np.zeros(q, dtype=np.int64), math.inf, None)
    hist = np.bincount((ca + cb)[full], minlength=PILOT + 1).astype(np.float64)
    adaptive_entries = [e for e in history if e.get("target_se") is not None
                        and (task is None or e.get("tasks") is None or task in e["tasks"])]

    table = count_tables(hist, history, task)[0]
    totals = np.where(full, own_totals(ca + cb, table), np.array([len(x) for x in outcomes]))
    # The plain fractions too over the design's samples only (its pilot, then the first T - PILOT): a run stopped at
    # its pilot, then `--n 8` on the same folder, must not estimate from 8 samples what it counts as 4 (issue 52.1).
    est, var = _plain([_design_samples(x, int(t)) if f else x for x, t, f in zip(outcomes, totals, full)])
    last = adaptive_entries[-1] if adaptive_entries else None
    plan = None
    if last is not None:
        budget = entry_budget(last, task)
        plan = plan_totals(hist, float(last["target_se"]) / 100.0, int(last["max_n"]), budget, entry_rule(last))
    if full.all() and totals[full].max() > PILOT:
        wa, wb = pilot_weights(ca, cb, table)
        main = [[bool(x[j]) for j in sorted(x) if j >= PILOT][: max(0, int(t) - PILOT)] for x, t in zip(outcomes, totals)]
        ma, na = np.array([sum(m[0::2]) for m in main]), np.array([len(m[0::2]) for m in main])
        mb, nb = np.array([sum(m[1::2]) for m in main]), np.array([len(m[1::2]) for m in main])
        ok = (na >= 1) & (nb >= 1)
        e2, v2 = two_stage_estimates(ca, cb, ma, na, mb, nb, wa, wb)
        # Never a false zero (issue 41.11): where the unbiased variances sum below what the samples support with the
        # weights taken as fixed, that is reported instead (`variance_floor`).
        v2 = reported_variances(v2, variance_floor(ca, cb, ma, na, mb, nb, wa, wb), ok)
        est = np.where(ok, e2, est)  # a problem whose samples after the pilot are not all in yet: plain fraction
        var = np.where(ok, v2, var)
    return TaskEstimate(est, var, totals.astype(np.int64), float(plan.predicted_se[0]) if plan else math.inf,
                        plan.reason[0] if plan and full.all() else None)


def entry_budget(entry: Mapping[str, Any], task: str | None) -> int | None:
    """The budget (samples, pilot included) an adaptive history entry gives `task`."""
    tasks = entry.get("tasks")
    budget = tasks[task].get("budget") if task is not None and tasks is not None and task in tasks \
        else entry.get("budget_samples")
    return None if budget is None else int(budget)


def _plain(outcomes: Sequence[Mapping[int, bool]]) -> tuple[np.ndarray, np.ndarray]:
    """Each problem's plain fraction right (nan without samples) and its unbiased variance."""
    est = np.array([sum(map(bool, x.values())) / len(x) if len(x) else math.nan for x in outcomes], dtype=np.float64)
    return est, np.array([_plain_var(list(x.values())) for x in outcomes], dtype=np.float64)


def _design_samples(x: Mapping[int, bool], total: int) -> dict[int, bool]:
    """A problem's verdicts the two-stage design drew for it: its pilot (indices < PILOT), then the first
    total - PILOT indices after it."""
    after = sorted(j for j in x if j >= PILOT)[:max(0, total - PILOT)]
    return {j: x[j] for j in [*range(PILOT), *after]}


def _plain_var(x: Sequence[bool]) -> float:
    """Unbiased variance of a fraction of n right: c(n-c)/(n²(n-1)); a single sample has none to offer (0)."""
    n = len(x)
    c = sum(map(bool, x))
    return c * (n - c) / (n * n * (n - 1)) if n >= 2 else 0.0


def samples_needed(sd: np.ndarray, target: float) -> float:
    """Total samples Neyman allocation needs for SE `target` (fraction): (Σ σ_i)² / (Q² S²)."""
    q = len(sd)
    return float(np.sum(sd)) ** 2 / (q * q * target * target) if q else 0.0
