"""The two-stage design of `run --target-se` (reasoneval.metrics.plan_adaptive): the plan, the estimator's exact
unbiasedness (by enumerating every outcome), and the simulation script."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from reasoneval.metrics.plan_adaptive import (
    MIN_MAIN,
    PILOT,
    RULE,
    RULES,
    count_tables,
    fit_prior,
    history_totals,
    main_floor,
    own_totals,
    pilot_weights,
    plan_totals,
    posterior_moments,
    reported_variances,
    swap_tables,
    task_estimates,
    two_stage_estimates,
    variance_floor,
    weight_factors,
)

ROOT = Path(__file__).resolve().parents[2]  # the checkout (tests/run/this file)


def _entry(target_points: float, max_n: int = 256, budget: int | None = None) -> dict[str, Any]:
    return {"target_se": target_points, "max_n": max_n, "budget_samples": budget}


def _exact_moments(p: np.ndarray, tables_of: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """E[estimate_i], Var(estimate_i), E[variance estimate_i], Var(Σ estimate), E[samples] by enumerating every
    pilot outcome of every problem and every count of right answers after it (two_stage_estimates itself).
    tables_of: pilot histograms (B, PILOT + 1) -> their count tables (B, PILOT + 1, PILOT + 1), `count_tables`."""
    q = len(p)
    e1, e2, ev = np.zeros(q), np.zeros(q), np.zeros(q)
    esum, esum2, samples = 0.0, 0.0, 0.0
    half = stats.binom.pmf(np.arange(3)[:, None], 2, p[None, :])  # (3, q)
    for pilot in itertools.product(range(3), repeat=2 * q):
        ca, cb = np.array(pilot[:q]), np.array(pilot[q:])
        prob = float(np.prod(half[ca, np.arange(q)] * half[cb, np.arange(q)]))
        hist = np.bincount(ca + cb, minlength=PILOT + 1).astype(float)
        table = tables_of(hist[None, :])[0]
        n_main = own_totals(ca + cb, table) - PILOT
        wa, wb = pilot_weights(ca, cb, table)
        m_i, m2_i = np.zeros(q), np.zeros(q)
        for i in range(q):
            na, nb = (n_main[i] + 1) // 2, n_main[i] // 2
            ma, mb = np.meshgrid(np.arange(na + 1), np.arange(nb + 1), indexing="ij")
            w = stats.binom.pmf(ma, na, p[i]) * stats.binom.pmf(mb, nb, p[i])
            est, var = two_stage_estimates(ca[i], cb[i], ma, na, mb, nb, wa[i], wb[i])
            m_i[i], m2_i[i] = float(np.sum(w * est)), float(np.sum(w * est * est))
            ev[i] += prob * float(np.sum(w * var))
        e1 += prob * m_i
        e2 += prob * m2_i
        # Σ_i estimate_i: independent given the pilot, so E[(Σ)²|pilot] = Σ var_i + (Σ mean_i)²
        esum += prob * m_i.sum()
        esum2 += prob * (float(np.sum(m2_i - m_i**2)) + m_i.sum() ** 2)
        samples += prob * float(np.sum(PILOT + n_main))
    return e1, e2 - e1**2, ev, esum2 - esum**2, samples


@pytest.mark.parametrize("rule", ["plan", "plan-1", "adversarial"])
def test_the_estimate_and_its_variance_estimate_are_exactly_unbiased(rule: str) -> None:
    """Every pilot outcome of three problems and every later count, weighted by its probability: the mean of each
    problem's estimate is its p to 1e-12 and the mean of its variance estimate is its variance, whatever rule
    decides the counts from the pilot. "plan" is the shipped plan (here reactive: the totals move with the pilots),
    "plan-1" the first version's (whose runs still report with it); "adversarial" gives a problem many samples
    exactly when the task's pilot looked good."""
    p = np.array([0.05, 0.5, 0.97])
    if rule.startswith("plan"):
        history = [_entry(6.0, max_n=16) if rule == "plan-1" else {**_entry(7.0, max_n=12), "plan": RULE}]

        def tables_of(h: np.ndarray) -> np.ndarray:
            return count_tables(h, history)
        some = history_totals(np.array([[1.0, 0, 1, 0, 1], [3, 0, 0, 0, 0], [0, 0, 3, 0, 0], [0, 1, 1, 1, 0],
                                        [2, 0, 0, 0, 1], [1, 1, 0, 0, 1]]), history)
        assert len(set(some.ravel())) >= 3  # the plan does react to the pilots here
    else:
        def totals_of(h: np.ndarray) -> np.ndarray:
            right = h @ np.arange(PILOT + 1)
            return np.where((right[:, None] >= 6) ^ (np.arange(PILOT + 1) % 2 == 0), 12, 6)

        def tables_of(h: np.ndarray) -> np.ndarray:
            return swap_tables(h, totals_of)
    mean, var, var_hat, var_sum, _ = _exact_moments(p, tables_of)
    assert np.allclose(mean, p, atol=1e-12, rtol=0)
    assert np.allclose(var_hat, var, atol=1e-12, rtol=0)
    # problems are not independent (their counts share the task's plan); the SE counts the diagonal only
    assert abs(var_sum - var.sum()) < 0.2 * var.sum()


def test_pooling_the_same_samples_would_be_biased() -> None:
    """The reason for the weights: c/n over the same counts is biased (a lucky pilot draws fewer samples)."""
    p = np.array([0.9, 0.9])

    def totals_of(h: np.ndarray) -> np.ndarray:  # 4/4 looks settled: stop at 8; anything else gets 20
        return np.tile(np.where(np.arange(PILOT + 1) == PILOT, 8, 20), (len(h), 1))

    bias = 0.0
    for c in range(PILOT + 1):
        n = totals_of(np.zeros((1, PILOT + 1)))[0][c]
        bias += stats.binom.pmf(c, PILOT, 0.9) * ((c + (n - PILOT) * 0.9) / n - 0.9)
    assert bias > 0.005  # half a point per problem
    mean, _, _, _, _ = _exact_moments(p, lambda h: swap_tables(h, totals_of))
    assert np.allclose(mean, p, atol=1e-12)


def test_the_prior_takes_point_masses_and_an_outlier() -> None:
    # 29 problems always right, one never: the posterior variance of 4/4 and 0/4 is about 0
    mean, _ = posterior_moments(np.array([[1.0, 0, 0, 0, 29]]))
    assert mean[0, 0] < 1e-3 and mean[0, 4] < 1e-3
    w = fit_prior(np.array([[1.0, 0, 0, 0, 29]]))[0]
    from reasoneval.metrics.plan_adaptive import GRID

    assert w[GRID >= 0.99].sum() > 0.9 and w[GRID <= 0.01].sum() > 0.02
    # a task of mixed problems: 2/4 carries the most variance, and every count keeps some
    mean, var = posterior_moments(np.array([[20.0, 10, 10, 10, 20]]))
    assert mean[0, 2] == mean[0].max() and (mean[0] > 0).all() and (var[0] >= 0).all()


def test_neyman_where_it_pays_uniform_where_it_does_not() -> None:
    bimodal = plan_totals(np.array([[50.0, 6, 6, 6, 50]]), 0.005, 256)  # most problems settled, a few not
    spread = plan_totals(np.array([[5.0, 20, 40, 20, 5]]), 0.005, 256)
    # the shipped plan counts what weighing a problem's halves by other counts' totals costs (weight_factors), so it
    # goes part of the way to Neyman here; the first version, which predicted 1/T, went nearly all the way
    assert 0.2 < bimodal.gamma[0] < 0.8 and bimodal.totals[0, 2] > 1.4 * bimodal.totals[0, 0]
    first = plan_totals(np.array([[50.0, 6, 6, 6, 50]]), 0.005, 256, rule=RULES[1])
    assert first.gamma[0] > 0.8 and first.totals[0, 2] > 3 * first.totals[0, 0]
    assert spread.gamma[0] == 0.0 and len(set(spread.totals[0])) == 1
    for plans in (bimodal, spread, first):
        assert plans.reason == ["target"] and plans.predicted_se[0] <= 0.005
        assert plans.totals.min() >= PILOT + MIN_MAIN


def test_budget_max_n_and_a_loose_target() -> None:
    h = np.array([[10.0, 10, 10, 10, 10]])
    free = plan_totals(h, 0.01, 256)
    capped = plan_totals(h, 0.01, 256, budget=int(free.totals[0] @ h[0]) // 2)
    assert capped.reason == ["budget"] and capped.totals[0] @ h[0] <= free.totals[0] @ h[0] // 2
    tight = plan_totals(h, 0.01, 256, budget=50 * (PILOT + 2))  # the floor comes down to 2 after the pilot
    assert (tight.totals == PILOT + 2).all()
    starved = plan_totals(h, 0.01, 256, budget=50 * (PILOT + 2) - 1)
    assert (starved.totals == PILOT).all()  # not even that fits: the pilot only
    assert plan_totals(h, 0.001, 20).reason == ["max_n"] and plan_totals(h, 0.001, 20).totals.max() == 20
    # a target that even problems all at p = 1/2 meet with the pilot: the pilot only
    assert main_floor(0.2, 50) == 0 and (plan_totals(h, 0.2, 256).totals == PILOT).all()
    assert main_floor(0.03, 50) == 2 and main_floor(0.01, 50) == MIN_MAIN  # 1/(4 Q S²): 5.6 and 50


def test_weight_factors_are_the_variance_of_the_weighted_estimate() -> None:
    """weight_factors[c]: over the ways c of 4 splits into the halves, (wa² + wb²)/2 + wm²/(T_c - 4) with the
    weights pilot_weights gives from a table whose totals do not move with the histogram; 1/T for a uniform plan."""
    tot = np.array([8.0, 20, 30, 20, 9])
    table = np.tile(tot, (PILOT + 1, 1))  # table[c, d] = tot[d]
    f = weight_factors(tot[None, :])[0]
    for c in range(PILOT + 1):
        want = 0.0
        for ca in range(3):
            cb = c - ca
            if not 0 <= cb <= 2:
                continue
            p_split = math.comb(2, ca) * math.comb(2, cb) / math.comb(PILOT, c)
            wa, wb = pilot_weights(np.array([ca]), np.array([cb]), table)
            wm = 1 - wa[0] - wb[0]
            want += p_split * ((wa[0] ** 2 + wb[0] ** 2) / 2 + wm**2 / (tot[c] - PILOT))
        assert math.isclose(f[c], want, rel_tol=1e-12)
    assert f[2] > 1.3 / tot[2]  # a 2/4 problem whose halves disagree weighs them by the 8s of counts 0 and 4
    assert np.allclose(weight_factors(np.full((1, PILOT + 1), 12.0)), 1 / 12)


def test_an_entry_plans_with_the_version_it_names() -> None:
    """A history entry without "plan" (a run made before versions were recorded) plans with version 1, so such a
    run reports as it did (tests/fixtures/runs/adaptive_two_stage); a new command's entry names RULE."""
    from reasoneval.run.adaptive import history_entry

    h = np.array([[20.0, 3, 2, 3, 12]])
    old, new = _entry(1.0), {**_entry(1.0), "plan": RULE}
    assert (history_totals(h, [old]) == plan_totals(h, 0.01, 256, rule=RULES[1]).totals).all()
    assert (history_totals(h, [new]) == plan_totals(h, 0.01, 256, rule=RULES[RULE]).totals).all()
    assert not (history_totals(h, [old]) == history_totals(h, [new])).all()
    assert history_entry(1.0, 256, None, {"aime24": 40})["plan"] == RULE


def test_a_history_keeps_what_earlier_commands_drew() -> None:
    h = np.array([[10.0, 10, 10, 10, 10]])
    loose, tight = _entry(2.0), _entry(1.0)
    both = history_totals(h, [loose, tight])
    assert (both == np.maximum(history_totals(h, [loose]), history_totals(h, [tight]))).all()
    assert (history_totals(h, [{"n": 64}, loose]) == 64).all()
    other_task = {**tight, "tasks": {"math500": {"num_problems": 50, "budget": None}}}
    assert (history_totals(h, [loose, other_task], task="aime24") == history_totals(h, [loose])).all()


def test_task_estimates_use_the_planned_samples_only() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, 30)
    history = [_entry(4.0, max_n=32)]
    pilots = [list(rng.random(PILOT) < x) for x in p]
    hist = np.bincount([sum(x) for x in pilots], minlength=PILOT + 1).astype(float)
    totals = history_totals(hist, history)[0]
    outcomes = [dict(enumerate(x + list(rng.random(int(totals[sum(x)]) - PILOT) < q))) for x, q in zip(pilots, p)]
    est = task_estimates(outcomes, history)
    more = task_estimates([{**o, **{len(o) + k: True for k in range(5)}} for o in outcomes], history)  # left over
    assert np.array_equal(est.estimate, more.estimate) and np.array_equal(est.totals, more.totals)
    assert est.reason == "target" and math.isfinite(est.plan_se)
    # the pilot is indices 0-3: a problem missing index 2 (failed) is not planned, all get plain fractions
    holes = [{j: x for j, x in o.items() if not (i == 0 and j == 2)} for i, o in enumerate(outcomes)]
    short = task_estimates(holes, history)
    assert np.allclose(short.estimate, [sum(o.values()) / len(o) for o in holes]) and short.reason is None


def test_simulation_small_size() -> None:
    """scripts/adaptive_simulation.py at small size on the issue's profiles (full size: docs/benchmarks.md)."""
    sys.path.insert(0, str(ROOT))
    from scripts.adaptive_simulation import issue_profiles, simulate

    rng = np.random.default_rng(5)
    for name, p in issue_profiles(rng).items():
        cell = simulate(name, p, 16, 300, rng)
        assert abs(cell.bias_z) < 4, cell
        assert 0.88 <= cell.coverage <= 1.0 and 0.8 <= cell.se_ratio <= 1.2, cell
        assert cell.samples_vs_uniform_run < 1.1, cell


def test_simulation_script_runs() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "adaptive_simulation.py"), "--only-issue", "--runs", "50",
                        "--k", "16"], capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "src")}, timeout=300)
    assert "| bimodal-hard | 30 | K = 16 | 50 |" in r.stdout and "worst cells" in r.stdout, r.stdout + r.stderr


# ---- issue 41: one plan per pilot, and never a false zero --------------------------------------------------

def _all_histograms(q: int) -> np.ndarray:
    """Every pilot histogram of a task of q problems (how many had 0..PILOT of PILOT right)."""
    return np.array([h for h in itertools.product(range(q + 1), repeat=PILOT + 1) if sum(h) == q], dtype=np.float64)


@pytest.mark.parametrize("target, max_n", [(4.0, 16), (2.0, 64), (7.0, 12)])
def test_one_plan_per_pilot_in_the_sampler_the_estimator_and_any_batch(target: float, max_n: int) -> None:
    """Issue 41.12: the sampler planned pilot [16, 2, 4, 2, 16] 21/24/25/24/21 per count, the estimator (planning it
    in a batch with its neighbours) 20/26/26/26/19. Every pilot histogram of a 6-problem task, planned alone (the
    sampler: run/adaptive.py `_plan`), all at once, in shuffled batches, and inside the estimator's count tables:
    one plan each, the same integers every way."""
    rng = np.random.default_rng(0)
    hists = _all_histograms(6)
    entry = {**_entry(target, max_n=max_n), "plan": RULE}
    alone = np.stack([plan_totals(h[None, :], target / 100, max_n, rule=RULES[RULE]).totals[0] for h in hists])
    assert np.array_equal(plan_totals(hists, target / 100, max_n, rule=RULES[RULE]).totals, alone)
    for _ in range(3):
        order = rng.permutation(len(hists))
        for batch in np.array_split(order, 7):
            got = plan_totals(np.concatenate([hists[batch], hists[rng.integers(len(hists), size=5)]]), target / 100, max_n,
                              rule=RULES[RULE]).totals[:len(batch)]
            assert np.array_equal(got, alone[batch])
    # The estimator: a problem's own total in the count table of its task's histogram is the sampler's plan.
    tables = count_tables(hists, [entry])
    for h, table, plan in zip(hists, tables, alone):
        for c in np.flatnonzero(h):
            assert table[c, c] == plan[c], (h, c, table[c, c], plan[c])
    assert len({tuple(t) for t in alone}) > 1  # the plans do differ between pilots


def test_the_plan_is_exact_integers_at_the_rounding_step() -> None:
    """The scale that turns a plan's shape into totals is an integer (plan_adaptive._scaled): a product landing on
    a whole number rounds the same way whatever the last bit of the float arithmetic."""
    from reasoneval.metrics.plan_adaptive import SHAPE_UNIT, _scaled

    # the scale is an integer multiple of 1/SHAPE_UNIT: scale 20 x shape 1 is exactly 20, one unit more is 21
    assert list(_scaled(20 * SHAPE_UNIT, [SHAPE_UNIT, SHAPE_UNIT // 2], 4, 64)) == [20, 10]
    assert list(_scaled(20 * SHAPE_UNIT + 1, [SHAPE_UNIT, SHAPE_UNIT // 2], 4, 64)) == [21, 11]
    assert list(_scaled(0, [SHAPE_UNIT], 4, 64)) == [4] and list(_scaled(10**30, [1], 4, 64)) == [64]  # clipped


def test_the_reported_variance_is_never_below_the_fixed_weight_floor() -> None:
    """Issue 41.11: a three-levels run reported SE 0.0 (its per-problem variance estimates summed to -0.0025). Over
    simulated runs of that profile the unbiased sums do come out below the floor (and below zero), and the
    variances a task reports (task_estimates: `reported_variances`) never sum below `variance_floor`'s, which is
    positive wherever some problem's samples disagree."""
    sys.path.insert(0, str(ROOT))
    from scripts.adaptive_simulation import plan_and_weights, uniform_se

    rng = np.random.default_rng(3)
    p = np.repeat([0.1, 0.5, 0.9], 10)
    history = [{**_entry(100 * uniform_se(p, 16), max_n=256), "plan": RULE}]
    runs = 400
    ca, cb = rng.binomial(2, p, size=(runs, len(p))), rng.binomial(2, p, size=(runs, len(p)))
    totals, wa, wb, _ = plan_and_weights(ca, cb, history)
    n_main = totals - PILOT
    na, nb = (n_main + 1) // 2, n_main // 2
    ma, mb = rng.binomial(na, p), rng.binomial(nb, p)
    _, var = two_stage_estimates(ca, cb, ma, na, mb, nb, wa, wb)
    floor = variance_floor(ca, cb, ma, na, mb, nb, wa, wb)
    assert (floor >= 0).all()
    low = var.sum(axis=1) < floor.sum(axis=1)
    assert low.any()  # the floor is needed: unbiased sums below it happen on this profile
    reported = reported_variances(var, floor)
    assert (reported.sum(axis=1) >= floor.sum(axis=1) - 1e-15).all() and (reported.sum(axis=1) > 0).all()
    assert np.array_equal(reported[~low], var[~low])  # elsewhere the unbiased estimate, untouched
    # One run through task_estimates (what summary.json's `se` is the square root of, over Q): the same.
    r = int(np.flatnonzero(low)[0])
    outcomes = []
    for i in range(len(p)):
        pilot = {0: ca[r, i] >= 1, 2: ca[r, i] == 2, 1: cb[r, i] >= 1, 3: cb[r, i] == 2}
        main = [j < ma[r, i] for j in range(na[r, i])], [j < mb[r, i] for j in range(nb[r, i])]
        later = {PILOT + 2 * j: x for j, x in enumerate(main[0])} | {PILOT + 1 + 2 * j: x for j, x in enumerate(main[1])}
        outcomes.append({**pilot, **later})
    est = task_estimates(outcomes, history)
    assert np.allclose(est.variance, floor[r]) and est.variance.sum() > 0


def test_the_issues_pilot_is_planned_the_same_by_the_sampler_and_the_estimator() -> None:
    """Pilot [16, 2, 4, 2, 16] over a grid of targets: the sampler's plan (alone) and the estimator's (the count
    tables, planned in a batch of its neighbours) are one plan. Before: target 1.2 points gave 10/16/17/16/9 and
    10/16/17/16/10."""
    h = np.array([[16, 2, 4, 2, 16.0]])
    for target in np.linspace(1.0, 8.0, 71):
        for max_n in (64, 256):
            alone = plan_totals(h, target / 100, max_n).totals[0]
            table = count_tables(h, [{**_entry(float(target), max_n=max_n), "plan": RULE}])[0]
            assert [table[c, c] for c in range(PILOT + 1)] == list(alone), (target, max_n)
