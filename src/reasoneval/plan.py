"""The plan stage: which samples a run still needs, as requests. Pure: no I/O, no engine.

A sample is (task, problem key, sample index); its seed derives from the run seed, so sample j of a
problem is the same request in a first run, a resumed run, or a run with a larger K.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import AbstractSet, Sequence

from .config import sample_seed
from .prompts import PromptConfig, build_messages, build_prompt
from .tasks import TaskSpec
from .types import Problem, Request, SamplingParams

SampleKey = tuple[str, str, int]  # (task, problem key, sample index)


@dataclass(frozen=True)
class LoadedTask:
    """A task with the problems a run covers."""

    spec: TaskSpec
    problems: Sequence[Problem]

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class Plan:
    tasks: Sequence[LoadedTask]
    n: int
    # The samples still missing, in the order they should start.
    requests: Sequence[Request]

    @property
    def total(self) -> int:
        """Samples wanted, finished or not."""
        return sum(len(t.problems) for t in self.tasks) * self.n


def with_style_stop(sampling: SamplingParams, prompt: PromptConfig) -> SamplingParams:
    """The run's sampling parameters plus the stop sequences of the task's prompt style (few-shot styles
    stop where the next exemplar would start), --stop strings first, no duplicates."""
    stop = tuple(dict.fromkeys((*sampling.stop, *prompt.stop())))
    return sampling if stop == sampling.stop else dataclasses.replace(sampling, stop=stop)


def plan(tasks: Sequence[LoadedTask], *, n: int, seed: int, sampling: SamplingParams, api: str,
         prompt: PromptConfig, done: AbstractSet[SampleKey] = frozenset()) -> Plan:
    """The missing samples, ordered sample-index-major so that an interrupted run has spread its
    samples over all problems (every problem gets sample 0 before any gets sample 1)."""
    per_problem: list[tuple[Problem, PromptConfig, SamplingParams, list[int]]] = []
    for t in tasks:
        cfg = prompt.for_task(t.name, t.spec.prompt, t.spec.fewshot)
        params = with_style_stop(sampling, cfg)
        for p in t.problems:
            missing = [j for j in range(n) if (t.name, p.key, j) not in done]
            if missing:
                per_problem.append((p, cfg, params, missing))
    requests = []
    for j in range(n):
        for p, cfg, params, missing in per_problem:
            if j in missing:
                requests.append(Request(
                    task=p.task, problem_key=p.key, problem_id=p.id, index=j,
                    seed=sample_seed(seed, p.task, p.key, j), params=params,
                    messages=build_messages(p, cfg) if api == "chat" else None,
                    prompt=build_prompt(p, cfg) if api == "completions" else None))
    return Plan(tasks=tasks, n=n, requests=requests)
