"""Small frozen records that cross the pipeline's stage boundaries.

task -> Problem -> Request -> engine -> Completion -> SampleRecord (journal) -> grading -> metrics
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from reasoneval.serial import JsonRecord

# The letters multiple-choice answers are given in (a data file may have up to 26 options): what prompts
# label the choices with (tasks.choice) and what the scorer reads back (scoring.maths.extract).
CHOICE_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Problem:
    """One benchmark item in the uniform schema.

    `key` identifies the problem across sources and runs: a hash of the normalised problem
    text and reference answer (see `tasks.problem_key`), so a changed problem never reuses
    old samples and the same problem from the Hub or a data dir is the same key.
    `payload` holds what a task's prompt and scorer need beyond the text and the reference:
    `choices` for multiple choice, test code for code tasks, instruction arguments for IFEval.
    `metadata` is for reports only (subject, level, year, source).
    """

    task: str
    id: str
    problem: str
    answer: str
    key: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def choices(self) -> tuple[str, ...] | None:
        """Multiple choice: the choices in presentation order (already shuffled); `answer` is a letter."""
        c = self.payload.get("choices")
        return tuple(c) if c else None


@dataclass(frozen=True)
class SamplingParams(JsonRecord):
    temperature: float = 0.6
    top_p: float = 0.95
    top_k: int | None = None
    min_p: float | None = None
    max_tokens: int = 32768
    stop: tuple[str, ...] = ()
    # Passed through verbatim to OpenAI-compatible servers (e.g. {"repetition_penalty": 1.05}).
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:  # the engines' name for to_json_dict()
        return self.to_json_dict()


@dataclass(frozen=True)
class Request:
    """One sample to generate: problem x sample index, with its own seed."""

    task: str
    problem_key: str
    problem_id: str
    index: int
    seed: int
    params: SamplingParams
    # Chat API: the messages; completions API: the raw prompt. Exactly one is set.
    messages: tuple[Mapping[str, str], ...] | None = None
    prompt: str | None = None


@dataclass(frozen=True)
class Completion:
    """What every engine returns for one request."""

    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    # Reasoning returned separately by the server (`reasoning_content` / `reasoning`); not graded.
    reasoning: str | None = None


SampleStatus = Literal["ok", "failed"]


@dataclass(frozen=True)
class SampleRecord(JsonRecord):
    """One journal line of samples.jsonl.

    A failed sample (non-retryable error, or retries used up) is journaled with its error so
    the failure is visible, and is generated again on the next run; it is never graded as wrong.
    """

    task: str
    problem_key: str
    problem_id: str
    index: int
    seed: int
    status: SampleStatus
    text: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    attempts: int = 1
    error: str | None = None
    time: float | None = None
