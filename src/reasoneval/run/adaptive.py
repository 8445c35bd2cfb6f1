"""`run --target-se`: the generation loop's source of requests while the run goes on. (The estimates of the run's
tasks, which scoring attaches, are metrics.adaptive_estimates'.)

The runner asks `AdaptiveSampler.refill()` for more whenever its queue runs low; the sampler scores the
samples that came back (the task's own scorer, in a thread: for math the grading pool's processes). A task first
gets its pilot (plan_adaptive.PILOT samples per problem); once every problem's pilot is scored, the plan
(plan_adaptive.history_totals, pure) fixes every problem's total, and the rest is asked for at once. Nothing is
decided on the samples after the pilot (docs/statistics.md, adaptive sampling, says why).

The pilot is sample indices 0-3 of every problem, the rest indices 4 and up. Resume: the journal is the state. At
start every finished sample in the store is scored and counted; a problem short of its pilot or its planned
total is asked for what it lacks (an index that was asked for and did not finish is asked for again first; one
that failed in this process is not, as in a uniform run: a task whose pilot lacks a failed index waits for the
next run). Sample j of a problem has the seed a uniform run gives it, so the samples are the ones `--n` would have
drawn; the plan is a function of the pilot, so a resumed run plans the same totals, and a later smaller
--target-se adds only what is missing (a problem holds the most any command of the run asked for: `history`).
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from reasoneval.errors import UserError
from reasoneval.metrics.plan_adaptive import (
    PILOT,
    RULE,
    entry_budget,
    entry_rule,
    history_totals,
    pilot_counts,
    plan_totals,
    task_estimates,
)
from reasoneval.records import Problem, Request, SampleRecord
from reasoneval.results.adaptive import ADAPTIVE_DESIGN as DESIGN  # config.adaptive["design"]
from reasoneval.results.stream import score_store
from reasoneval.run.plan import LoadedTask
from reasoneval.scoring import Scorer

log = logging.getLogger("reasoneval")


@dataclass(frozen=True)
class AdaptiveSettings:
    target_se: float  # points (1.0 = one point of accuracy)
    max_n: int = 256
    budget_samples: int | None = None  # most samples the run may hold in all (a resumed run counts what it has)
    # every command this run directory was given, oldest first, this one last (plan_adaptive.history_totals);
    # empty: this command alone
    history: tuple[Mapping[str, Any], ...] = ()

    def entries(self, tasks: Mapping[str, int]) -> list[Mapping[str, Any]]:
        return list(self.history) or [history_entry(self.target_se, self.max_n, self.budget_samples, tasks)]


def history_entry(target_se: float, max_n: int, budget_samples: int | None, tasks: Mapping[str, int]
                  ) -> dict[str, Any]:
    """config.adaptive's record of one `run --target-se` command: its settings, the plan version it plans with
    (plan_adaptive.RULES) and, per task, the number of problems and its share of --budget-samples (in proportion to
    its problems; fixed before any outcome)."""
    total = sum(tasks.values())
    return {"target_se": target_se, "max_n": max_n, "budget_samples": budget_samples, "plan": RULE,
            "tasks": {t: {"num_problems": q, "budget": None if budget_samples is None or not total
                          else int(math.floor(budget_samples * q / total))} for t, q in tasks.items()}}


def history_for(previous: Any | None, entry: Mapping[str, Any], run_dir: Path) -> list[dict[str, Any]]:
    """The command history of a run directory this command extends: the earlier adaptive commands (or the uniform
    K of an earlier uniform run) and this one. Any pilot-determined count keeps the estimate unbiased, so the
    history only lets a problem keep what an earlier command drew. An adaptive run made before the two-stage
    design cannot be extended (which of its samples exist depended on other samples' outcomes): a one-line error."""
    if previous is None:
        return [dict(entry)]
    if previous.adaptive is None:
        uniform = {"n": previous.n, "tasks": {t: {"num_problems": len(k)} for t, k in previous.problem_keys.items()}}
        return [uniform, dict(entry)]
    if previous.adaptive.get("design") != DESIGN:
        raise UserError(f"{run_dir} was sampled by the earlier --target-se rule (cross-fitted streams): "
                        "`reasoneval report` still reports it, but it cannot be extended; use another --output-dir")
    history = [dict(e) for e in previous.adaptive.get("history") or []]
    return history if history and history[-1] == dict(entry) else [*history, dict(entry)]


@dataclass
class _ProblemState:
    problem: Problem
    verdicts: dict[int, bool] = field(default_factory=dict)  # finished sample index -> correct
    pending: set[int] = field(default_factory=set)  # asked for, not finished or not scored yet
    failed: set[int] = field(default_factory=set)  # failed in this process: not asked for again in it

    def held(self) -> int:
        return len(self.verdicts) + len(self.pending)

    def next_index(self, start: int) -> int:
        """The lowest index from `start` not finished, in flight or failed in this process."""
        j = start
        while j in self.verdicts or j in self.pending or j in self.failed:
            j += 1
        return j


class AdaptiveSampler:
    def __init__(self, tasks: Sequence[LoadedTask], settings: AdaptiveSettings,
                 make_request: Callable[[Problem, int], Request], scorers: Mapping[str, Scorer]) -> None:
        self.tasks = list(tasks)
        self.settings = settings
        self.make_request = make_request
        self.scorers = scorers
        self.state = {t.name: [_ProblemState(p) for p in t.problems] for t in tasks}
        self._by_key = {(p.problem.task, p.problem.key): p for ps in self.state.values() for p in ps}
        self._entries = settings.entries({t.name: len(t.problems) for t in tasks})
        self._unscored: list[SampleRecord] = []
        self._plans: dict[str, tuple[np.ndarray, str]] = {}  # task -> (totals per problem, reason)
        self.added = 0  # samples asked for by this process
        self.stopped: dict[str, str] = {}  # task -> why it needs no more ("target", "max_n", "budget")

    def load(self, run_dir: Path) -> None:
        """Score and count the finished samples in the store (a resumed or extended run)."""
        problems = [p.problem for ps in self.state.values() for p in ps]
        bound = self._index_bound()
        outcomes = score_store(run_dir, problems, bound, self.scorers)
        index = _ok_indices(run_dir, set(self._by_key), bound)
        for os_ in outcomes.values():
            for o in os_:
                st = self._by_key[(o.task, o.problem_key)]
                for j, x in zip(sorted(index.get((o.task, o.problem_key), set())), o.correct):
                    st.verdicts[j] = bool(x)

    def _index_bound(self) -> int:
        """Sample indices an adaptive run may use: a problem holds at most max_n of any command, and failed
        samples take indices too (the same bound `EvalConfig.samples_per_problem` gives the report)."""
        most = max([int(e.get("max_n") or e.get("n") or 0) for e in self._entries] + [self.settings.max_n])
        return 2 * most

    def on_sample(self, rec: SampleRecord) -> None:
        """A journaled sample: an ok one waits for its verdict; a failed one is no longer pending."""
        st = self._by_key.get((rec.task, rec.problem_key))
        if st is None:
            return
        if rec.status == "ok":
            self._unscored.append(rec)
        else:
            st.pending.discard(rec.index)
            st.failed.add(rec.index)

    async def _score_unscored(self) -> None:
        while self._unscored:
            batch, self._unscored = self._unscored, []
            by_task: dict[str, list[SampleRecord]] = {}
            for rec in batch:
                by_task.setdefault(rec.task, []).append(rec)
            loop = asyncio.get_running_loop()
            for task, recs in by_task.items():
                problems = [self._by_key[(r.task, r.problem_key)].problem for r in recs]
                scores = await loop.run_in_executor(None, self.scorers[task].score_many, problems, recs)
                for r, s in zip(recs, scores):
                    st = self._by_key[(r.task, r.problem_key)]
                    st.pending.discard(r.index)
                    st.verdicts[r.index] = bool(s.correct)

    async def refill(self) -> list[Request]:
        """The next requests: the pilot, then (once a task's pilot is all scored) the rest of its plan."""
        await self._score_unscored()
        out: list[Request] = []
        for task, states in self.state.items():
            want, reason = self._wanted(task, states)
            for st, indices in zip(states, want):
                for j in indices:
                    st.pending.add(j)
                    out.append(self.make_request(st.problem, j))
            self.added += sum(len(w) for w in want)
            if reason is not None and not any(want) and not any(s.pending for s in states):
                if task not in self.stopped:
                    self._log_stop(task, states, reason)
                    self.stopped[task] = reason
            else:
                self.stopped.pop(task, None)
        return out

    def _wanted(self, task: str, states: list[_ProblemState]) -> tuple[list[list[int]], str | None]:
        """The sample indices to ask for per problem, and why the task is done once they are in (None: not
        planned yet, or its pilot lacks an index that failed in this process)."""
        budget = entry_budget(self._entries[-1], task)
        pilot = min(PILOT, self.settings.max_n)
        missing = [[j for j in range(pilot) if j not in s.verdicts and j not in s.pending and j not in s.failed]
                   for s in states]
        if any(missing):  # the pilot, within the budget (lowest problems first)
            room = None if budget is None else max(0, budget - sum(s.held() for s in states))
            if room is not None and room < sum(len(m) for m in missing):
                counts = _cap_total(np.array([len(m) for m in missing]), room)
                missing = [m[:k] for m, k in zip(missing, counts)]
                if not any(missing):
                    return [[] for _ in states], "budget"
            return missing, None
        if any(j not in s.verdicts for s in states for j in range(pilot)):
            return [[] for _ in states], None  # pilot samples in flight, unscored, or failed in this process
        if task not in self._plans:
            self._plans[task] = self._plan(task, states, budget, pilot)
        totals, reason = self._plans[task]
        want = []
        for st, t in zip(states, totals):
            more, j = [], PILOT - 1
            for _ in range(max(0, int(t) - st.held())):
                j = st.next_index(j + 1)
                more.append(j)
            want.append(more)
        return want, reason

    def _plan(self, task: str, states: list[_ProblemState], budget: int | None,
              pilot: int) -> tuple[np.ndarray, str]:
        if pilot < PILOT:
            return np.array([len(s.verdicts) for s in states]), "max_n"
        ca, cb, _ = pilot_counts([s.verdicts for s in states])
        hist = np.bincount(ca + cb, minlength=PILOT + 1).astype(np.float64)
        last = self._entries[-1]  # this command: planned once (the plan is the slow part, and the server waits)
        plan = plan_totals(hist, float(last["target_se"]) / 100.0, int(last["max_n"]), budget, entry_rule(last))
        totals = np.maximum(history_totals(hist, self._entries[:-1], task)[0], plan.totals[0])
        return totals[ca + cb], plan.reason[0]

    def _log_stop(self, task: str, states: list[_ProblemState], reason: str) -> None:
        est = task_estimates([s.verdicts for s in states], self._entries, task)
        se = math.sqrt(max(float(np.nansum(est.variance)), 0.0)) / max(len(states), 1)
        log.info("%s: %s after %d samples (re-run SE %.3f points, target %.3f; the plan predicted %.3f)", task,
                 {"target": "planned for the target", "max_n": "every problem at --max-n",
                  "budget": "--budget-samples spent"}[reason], sum(len(s.verdicts) for s in states), 100 * se,
                 self.settings.target_se, 100 * est.plan_se)

    async def drain(self) -> None:
        """Score what is left (the end of the run)."""
        await self._score_unscored()


def _cap_total(want: np.ndarray, total: int) -> np.ndarray:
    out = np.zeros_like(want)
    while total > 0 and (want - out).sum() > 0:
        for i in np.flatnonzero(want - out > 0):
            if total == 0:
                break
            out[i] += 1
            total -= 1
    return out


def _ok_indices(run_dir: Path, wanted: set[tuple[str, str]], bound: int) -> dict[tuple[str, str], set[int]]:
    from reasoneval.results.store import iter_samples
    from reasoneval.run_files import SAMPLES_FILE

    out: dict[tuple[str, str], set[int]] = {}
    path = run_dir / SAMPLES_FILE
    if not path.exists():
        return out
    for d in iter_samples(path):
        pk = (d.get("task"), d.get("problem_key"))
        i = d.get("index")
        if d.get("status") == "ok" and pk in wanted and isinstance(i, int) and i < bound:
            out.setdefault((str(pk[0]), str(pk[1])), set()).add(i)
    return out
