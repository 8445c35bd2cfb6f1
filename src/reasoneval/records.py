"""Small frozen records that cross the pipeline's stage boundaries.

task -> Problem -> Request -> engine -> Completion -> SampleRecord (journal) -> grading -> metrics
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping

from reasoneval.serial import JsonRecord, json_options

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


# The metadata keys of a sampling option (sampling_option): its command-line declaration, whether requests send it.
CLI = "reasoneval.cli"
SENT = "reasoneval.sent"
EVERY_ENGINE = "reasoneval.every_engine"  # the first options, which every engine takes (later ones: Capabilities)


def sampling_option(default: Any = dataclasses.MISSING, *, help: str,
                    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
                    in_first_run_ids: bool = False, sent: bool = True, **cli: Any) -> Any:
    """A field of SamplingParams, and from it everything else: a `reasoneval run` flag and a jobs-file key (`help`,
    and how the command line spells and parses it: run.flags.CliOption's fields; the group is "sampling"),
    and when `sent` a field of every engine's request under the field's name (engines.sampling.sent_fields), sent
    only when set (not None, not empty). An engine takes a later option (not `in_first_run_ids`) only where its
    Capabilities name it, as for extra_body keys (engines.base.check_supported): never silently ignored.

    The run id hashes the field only when it differs from its default (serial's omit_default), so adding an option
    leaves every existing run id, and every sweep fingerprint, as it was; `in_first_run_ids` marks the fields run
    ids have always hashed, written at any value."""
    meta = {CLI: {"help": help, **cli}, SENT: sent, EVERY_ENGINE: in_first_run_ids,
            **json_options(omit_default=not in_first_run_ids)}
    if default_factory is not dataclasses.MISSING:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


def json_object(text: str) -> dict[str, Any]:
    """A flag's value that is a JSON object (--extra-body)."""
    import argparse

    try:
        obj = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise argparse.ArgumentTypeError("""must be a JSON object, e.g. '{"repetition_penalty": 1.05}'""")
    return obj


@dataclass(frozen=True)
class SamplingParams(JsonRecord):
    """How every sample is drawn, in OpenAI's semantics (an unset top_k / min_p is "off"). Each field is one
    sampling option, declared here once (sampling_option): its flag, its jobs-file key, its request field in the
    OpenAI, vLLM and llama.cpp engines, and its place in the run id are all read from the field."""

    temperature: float = sampling_option(0.6, parse=float, in_first_run_ids=True,
                                         help="sampling temperature (default %(default)s)")
    top_p: float = sampling_option(0.95, parse=float, in_first_run_ids=True,
                                   help="nucleus sampling: the smallest set of tokens holding this probability "
                                   "(default %(default)s)")
    top_k: int | None = sampling_option(None, parse=int, in_first_run_ids=True,
                                        help="sample from the K most likely tokens (default: the server's)")
    min_p: float | None = sampling_option(
        None, parse=float, in_first_run_ids=True,
        help="drop tokens below this fraction of the likeliest's probability (default: the server's)")
    max_tokens: int = sampling_option(32768, parse=int, in_first_run_ids=True,
                                      help="most tokens per response (default %(default)s)")
    stop: tuple[str, ...] = sampling_option((), action="append", in_first_run_ids=True,
                                            help="stop string (repeatable)")
    # Passed through verbatim to OpenAI-compatible servers (e.g. {"repetition_penalty": 1.05}), over the fields above.
    extra_body: Mapping[str, Any] = sampling_option(
        default_factory=dict, parse=json_object, metavar="JSON", in_first_run_ids=True, sent=False,
        help="""extra request fields, e.g. '{"repetition_penalty": 1.05}'""")


def sampling_options_set(params: SamplingParams, *, changed: bool = False) -> dict[str, Any]:
    """Every sampling option `params` sets, by field name, in declaration order, read from SamplingParams' fields
    (so a new option is listed with no edit where this is asked: the dashboards, `runs`' settings column, the re-run
    advice): a field left unset (None, an empty tuple or mapping) is left out; with `changed`, so is one at its
    default (what a command line must give to get the same parameters)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        if value is None or (isinstance(value, (tuple, list, Mapping)) and not value):
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if changed and value == default:
            continue
        out[f.name] = value
    return out

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
