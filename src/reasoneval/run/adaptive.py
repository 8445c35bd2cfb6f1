"""`run --target-se`: the generation loop's source of requests while the run goes on.

The runner asks `AdaptiveSampler.refill()` for more whenever its queue runs low; the sampler scores the
samples that came back (the task's own scorer, in a thread: for math the grading pool's processes), and
asks the pure allocation rule (plan_adaptive.next_round) for each task's next samples, counting the ones
in flight or not yet scored as drawn. So rounds overlap: the server never drains between them.

Resume: the journal is the state. At start every finished sample in the store is scored and counted; a
sample index the allocation asked for but that did not finish (killed, failed) is asked for again first;
new samples take the next indices. Sample j of a problem has the seed a uniform run gives it, so the
samples are the ones `--n` would have drawn, and a later smaller --target-se adds only what is missing.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from reasoneval.metrics import ProblemOutcome
from reasoneval.metrics.summary import beta_prior, posterior_variance, problem_estimates, stderr_resample_adaptive
from reasoneval.records import Problem, Request, SampleRecord
from reasoneval.run.plan import LoadedTask
from reasoneval.run.plan_adaptive import FIRST_ROUND, next_round
from reasoneval.scoring import Scorer
from reasoneval.scoring.stream import score_store

log = logging.getLogger("reasoneval")


@dataclass(frozen=True)
class AdaptiveSettings:
    target_se: float  # points (1.0 = one point of accuracy)
    max_n: int = 256
    budget_samples: int | None = None  # most samples the run may hold in all (a resumed run counts what it has)


@dataclass
class _ProblemState:
    """Counts per stream: stream 0 is the problem's even sample indices, stream 1 its odd ones."""

    problem: Problem
    ok: set[int] = field(default_factory=set)  # finished sample indices
    n: list[int] = field(default_factory=lambda: [0, 0])  # finished samples per stream
    correct: list[int] = field(default_factory=lambda: [0, 0])
    taken: set[int] = field(default_factory=set)  # indices finished or asked for in this process
    pending: list[int] = field(default_factory=lambda: [0, 0])  # asked for, not finished or not scored yet

    def count(self, index: int, correct: bool) -> None:
        if index not in self.ok:
            self.ok.add(index)
            self.n[index % 2] += 1
            self.correct[index % 2] += bool(correct)


class AdaptiveSampler:
    def __init__(self, tasks: Sequence[LoadedTask], settings: AdaptiveSettings,
                 make_request: Callable[[Problem, int], Request], scorers: Mapping[str, Scorer],
                 *, min_round: int = 1) -> None:
        self.tasks = list(tasks)
        self.settings = settings
        self.make_request = make_request
        self.scorers = scorers
        self.min_round = min_round
        self.state = {t.name: [_ProblemState(p) for p in t.problems] for t in tasks}
        self._by_key = {(p.problem.task, p.problem.key): p for ps in self.state.values() for p in ps}
        self._unscored: list[SampleRecord] = []
        self._scoring: asyncio.Future[None] | None = None
        self.added = 0  # samples asked for by this process
        self.loaded = 0  # finished samples found in the store at start (they count against --budget-samples)
        self.stopped: dict[str, str] = {}  # task -> why it needs no more ("target", "max_n", "budget")

    def load(self, run_dir: Path) -> None:
        """Score and count the finished samples in the store (a resumed or extended run)."""
        problems = [p.problem for ps in self.state.values() for p in ps]
        bound = 2 * self.settings.max_n  # the streams can differ in length: indices reach past max_n
        outcomes = score_store(run_dir, problems, bound, self.scorers)
        index = _ok_indices(run_dir, set(self._by_key), bound)
        for os_ in outcomes.values():
            for o in os_:
                st = self._by_key[(o.task, o.problem_key)]
                for j, x in zip(sorted(index.get((o.task, o.problem_key), set())), o.correct):
                    st.count(j, x)
                    self.loaded += 1
                st.taken = set(st.ok)

    def on_sample(self, rec: SampleRecord) -> None:
        """A journaled sample: an ok one waits for its verdict; a failed one is no longer pending."""
        st = self._by_key.get((rec.task, rec.problem_key))
        if st is None:
            return
        if rec.status == "ok":
            self._unscored.append(rec)
        else:
            st.pending[rec.index % 2] -= 1

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
                    st.pending[r.index % 2] -= 1
                    st.count(r.index, s.correct)

    async def refill(self) -> list[Request]:
        """The next requests: the verdicts that came back so far decide them."""
        await self._score_unscored()
        out: list[Request] = []
        for task, states in self.state.items():
            n = np.array([s.n for s in states], dtype=np.int64)
            c = np.array([s.correct for s in states], dtype=np.int64)
            pend = np.array([s.pending for s in states], dtype=np.int64)
            budget = (None if self.settings.budget_samples is None
                      else self.settings.budget_samples - self.loaded - self.added)
            r = next_round(n, c, target=self.settings.target_se / 100.0, max_n=self.settings.max_n, pending=pend,
                           budget=budget, min_round=self.min_round, max_round=self.min_round,
                           first_round=FIRST_ROUND)
            if r.done:
                if task not in self.stopped:
                    log.info("%s: %s after %d samples (re-run SE %.3f points, target %.3f)", task,
                             {"target": "target met", "max_n": "every problem at --max-n",
                              "budget": "--budget-samples spent"}[r.reason or "target"], int(n.sum()),
                             100 * r.se, self.settings.target_se)
                    self.stopped[task] = r.reason or "target"
                continue
            self.stopped.pop(task, None)
            for st, per_stream in zip(states, r.add):
                for stream, k in enumerate(per_stream):
                    for _ in range(int(k)):
                        # the stream's lowest index not yet drawn (a killed run's unfinished ones first)
                        j = next(i for i in range(stream, 2 * self.settings.max_n + 2, 2) if i not in st.taken)
                        st.taken.add(j)
                        st.pending[stream] += 1
                        out.append(self.make_request(st.problem, j))
            self.added += int(r.add.sum())
        return out

    async def drain(self) -> None:
        """Score what is left (the end of the run)."""
        await self._score_unscored()


def _ok_indices(run_dir: Path, wanted: set[tuple[str, str]], bound: int) -> dict[tuple[str, str], set[int]]:
    from reasoneval.results.store import iter_samples
    from reasoneval.results.store.sample_store import SAMPLES_FILE

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


def adaptive_summary(outcomes: Sequence[ProblemOutcome], settings: Mapping[str, Any], task: str) -> dict[str, Any]:
    """summary.json's `adaptive` entry of one task: the target, whether it was met, what was spent, and what
    uniform K reaching the same re-run SE would have cost (Σ v_i / (Q² SE²) samples per problem)."""
    scored = [o for o in outcomes if len(o.correct)]
    _, n_eff, n_f = problem_estimates(scored)
    n = n_f.astype(np.int64)
    c = np.array([sum(bool(x) for x in o.correct) for o in scored], dtype=np.int64)
    se = stderr_resample_adaptive(n, c, n_eff) if len(n) else math.inf
    target = float(settings["target_se"])
    uniform_k = None
    if len(n) and 0 < se < math.inf:
        v = posterior_variance(n, c, beta_prior(n, c))
        uniform_k = max(1, math.ceil(float(np.sum(v)) / (len(n) ** 2 * se * se) - 1e-9))  # 4.0000001 is 4
    hist = np.bincount(n, minlength=1) if len(n) else np.zeros(1, dtype=np.int64)
    return {"target_se": target, "se": 100 * se if se < math.inf else None, "met": bool(100 * se <= target + 1e-9),
            "stopped": (settings.get("stopped") or {}).get(task), "max_n": settings.get("max_n"),
            "samples": int(n.sum()), "n_min": int(n.min()) if len(n) else 0, "n_max": int(n.max()) if len(n) else 0,
            "n_histogram": {str(k): int(v) for k, v in enumerate(hist) if v},
            "pass_at_k_max": int(n.min()) if len(n) else 0, "uniform_k": uniform_k,
            "uniform_samples": uniform_k * len(outcomes) if uniform_k is not None else None}
