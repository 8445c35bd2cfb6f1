"""The plan stage: which samples a run still needs, as requests. Pure: no I/O, no engine.

A sample is (task, problem key, sample index); its seed derives from the run seed, so sample j of a
problem is the same request in a first run, a resumed run, or a run with a larger K.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, AbstractSet, Callable, Literal, Mapping, Sequence

from reasoneval.prompts import PROMPTS, Exemplar, PromptConfig, build_messages, build_prompt, drawn_shots
from reasoneval.records import Problem, Request, SamplingParams
from reasoneval.results.identity import sample_seed

if TYPE_CHECKING:  # an annotation only: `run --help` lists SCHEDULES without importing the task catalog
    from reasoneval.tasks import TaskSpec

SampleKey = tuple[str, str, int]  # (task, problem key, sample index)
ProblemRef = tuple[str, str]  # (task, problem key)
# The order pending samples start in: "longest-first" (one pilot sample of every problem whose length is
# unknown, then the samples of the problems expected to be longest) or "sample-major" (every problem's
# sample j before any problem's sample j + 1).
Schedule = Literal["longest-first", "sample-major"]
SCHEDULES: tuple[str, ...] = ("longest-first", "sample-major")


@dataclass(frozen=True)
class LoadedTask:
    """A task with the problems a run covers."""

    spec: TaskSpec
    problems: Sequence[Problem]
    # The rows a drawing few-shot style picks its exemplars from (lm-eval's gsm8k: the train split).
    fewshot_pool: Sequence[Exemplar] = ()

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class Plan:
    tasks: Sequence[LoadedTask]
    n: int
    # The samples still missing, sample-index-major (the order `schedule="sample-major"` starts them in).
    requests: Sequence[Request]
    # Expected output length (tokens) of the problems whose length is known (from finished samples).
    expected: Mapping[ProblemRef, float] = field(default_factory=dict)

    def queue(self, schedule: Schedule = "longest-first") -> RequestQueue:
        return RequestQueue(self.requests, self.expected, schedule=schedule)

    @property
    def total(self) -> int:
        """Samples wanted, finished or not."""
        return sum(len(t.problems) for t in self.tasks) * self.n


def with_style_stop(sampling: SamplingParams, prompt: PromptConfig) -> SamplingParams:
    """The run's sampling parameters plus the stop sequences of the task's prompt style (few-shot styles
    stop where the next exemplar would start), --stop strings first, no duplicates."""
    stop = tuple(dict.fromkeys((*sampling.stop, *prompt.stop())))
    return sampling if stop == sampling.stop else dataclasses.replace(sampling, stop=stop)


def with_completion_stop(sampling: SamplingParams, prompt: PromptConfig) -> SamplingParams:
    """Plus the stop sequences a zero-shot style's completion prompt needs (MBPP's `[DONE]`, HumanEval's
    next top-level block); not for a template, nor with --no-style-stop."""
    if prompt.template is not None or not prompt.style_stop:
        return sampling
    stop = tuple(dict.fromkeys((*sampling.stop, *PROMPTS.get(prompt.style).completion_stop)))
    return sampling if stop == sampling.stop else dataclasses.replace(sampling, stop=stop)


def request_maker(tasks: Sequence[LoadedTask], *, seed: int, sampling: SamplingParams, api: str,
                  prompt: PromptConfig) -> Callable[[Problem, int], Request]:
    """make(problem, j): the request for sample j of a problem of `tasks` (its task's prompt style,
    stop sequences and the seed derived from the run seed)."""
    per_task: dict[str, tuple[PromptConfig, SamplingParams]] = {}
    shots: dict[tuple[str, str], tuple[Exemplar, ...]] = {}
    for t in tasks:
        cfg = prompt.for_task(t.name, t.spec.prompt, t.spec.fewshot)
        params = with_style_stop(sampling, cfg)
        if api == "completions":
            params = with_completion_stop(params, cfg)
        per_task[t.name] = (cfg, params)
        # Drawn exemplars depend on the problem's position in the task (lm-eval's sampler runs on in order).
        drawn = drawn_shots(cfg, t.fewshot_pool, t.problems)
        if drawn is not None:
            shots.update({(t.name, p.key): d for p, d in zip(t.problems, drawn)})

    def make(p: Problem, j: int) -> Request:
        cfg, params = per_task[p.task]
        own = shots.get((p.task, p.key))
        return Request(task=p.task, problem_key=p.key, problem_id=p.id, index=j,
                       seed=sample_seed(seed, p.task, p.key, j), params=params,
                       messages=build_messages(p, cfg, own) if api == "chat" else None,
                       prompt=build_prompt(p, cfg, own) if api == "completions" else None)

    return make


def plan(tasks: Sequence[LoadedTask], *, n: int, seed: int, sampling: SamplingParams, api: str,
         prompt: PromptConfig, done: AbstractSet[SampleKey] = frozenset(),
         expected: Mapping[ProblemRef, float] | None = None) -> Plan:
    """The missing samples, ordered sample-index-major so that an interrupted run has spread its
    samples over all problems (every problem gets sample 0 before any gets sample 1).

    expected: known output lengths per problem (the store's finished samples, an earlier checkpoint's);
    `Plan.queue()` starts the samples of long problems first."""
    make = request_maker(tasks, seed=seed, sampling=sampling, api=api, prompt=prompt)
    per_problem: list[tuple[Problem, list[int]]] = []
    for t in tasks:
        for p in t.problems:
            missing = [j for j in range(n) if (t.name, p.key, j) not in done]
            if missing:
                per_problem.append((p, missing))
    requests = [make(p, j) for j in range(n) for p, missing in per_problem if j in missing]
    wanted = {(r.task, r.problem_key) for r in requests}
    return Plan(tasks=tasks, n=n, requests=requests,
                expected={k: v for k, v in (expected or {}).items() if k in wanted})


class RequestQueue:
    """The pending requests of a run, handed out in the order they should start.

    Longest expected first: the makespan of a run is set by the long samples that start last, and a
    sample's length depends mostly on its problem (hard problems think long). So every problem whose
    length is not known yet first gets one pilot sample (in plan order); after that the next request is
    a sample of the problem with the longest expected length, re-ranked as samples finish
    (`finished`). A problem whose pilot has not finished yet ranks as the longest: its pilot has been
    running longer than the ones that finished. Ties keep plan order.

    Not thread-safe: one event loop owns it.
    """

    def __init__(self, requests: Sequence[Request], expected: Mapping[ProblemRef, float] | None = None, *,
                 schedule: Schedule = "longest-first") -> None:
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
        self.schedule = schedule
        self._plain: deque[Request] = deque()
        self._pilots: deque[Request] = deque()
        self._rest: dict[ProblemRef, deque[Request]] = {}
        self._order: dict[ProblemRef, int] = {}
        # Running mean of the lengths per problem: (sum, count); the prior counts as one sample.
        self._lengths: dict[ProblemRef, tuple[float, int]] = {k: (float(v), 1) for k, v in (expected or {}).items()}
        self._heap: list[tuple[float, int, ProblemRef]] = []
        self._size = 0
        for r in requests:
            self.add(r)

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def expected(self, ref: ProblemRef) -> float:
        """The expected length of a problem's samples; +inf while unknown."""
        total, count = self._lengths.get(ref, (math.inf, 1))
        return total / count

    def _push(self, ref: ProblemRef) -> None:
        heapq.heappush(self._heap, (-self.expected(ref), self._order[ref], ref))

    def pop(self) -> Request:
        """The request to start next; IndexError when none is left."""
        if self.schedule == "sample-major":
            req = self._plain.popleft()
        elif self._pilots:
            req = self._pilots.popleft()
        else:
            while True:
                neg, _, ref = heapq.heappop(self._heap)  # IndexError when empty
                pending = self._rest.get(ref)
                if pending and -neg == self.expected(ref):  # else a stale entry: re-ranked since
                    break
            req = pending.popleft()
            if pending:
                self._push(ref)
        self._size -= 1
        return req

    def add(self, req: Request) -> None:
        """A request joins the queue (the plan's, or an adaptive run's next round while the run goes on): a
        problem whose length is unknown gets it as its pilot, a known one ranks by its expected length."""
        self._size += 1
        if self.schedule == "sample-major":
            self._plain.append(req)
            return
        ref = (req.task, req.problem_key)
        if ref not in self._order:
            self._order[ref] = len(self._order)
            if ref not in self._lengths:
                self._pilots.append(req)
                return
        pending = self._rest.setdefault(ref, deque())
        pending.append(req)
        if len(pending) == 1:
            self._push(ref)

    def finished(self, req: Request, length: float | None) -> None:
        """A sample finished with `length` output tokens (None: unknown): re-rank its problem."""
        if length is None or self.schedule == "sample-major":
            return
        ref = (req.task, req.problem_key)
        total, count = self._lengths.get(ref, (0.0, 0))
        self._lengths[ref] = (total + float(length), count + 1)
        if self._rest.get(ref):
            self._push(ref)


def longest_first(requests: Sequence[Request], expected: Mapping[ProblemRef, float]) -> list[Request]:
    """The order RequestQueue starts `requests` in when nothing finishes meanwhile (pure; for tests and plans)."""
    q = RequestQueue(requests, expected)
    return [q.pop() for _ in range(len(q))]
