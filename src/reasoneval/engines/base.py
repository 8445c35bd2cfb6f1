"""The engine interface: every engine takes a Request and returns a Completion.

The runner owns concurrency, retries, seeds and the store; an engine only generates. An engine
raises `EngineError` for a failed attempt, saying whether retrying may help, so retry policy and
retry counting live in one place (the runner) for every engine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol, runtime_checkable

from reasoneval.errors import UserError
from reasoneval.records import Completion, Request, SamplingParams


class EngineError(Exception):
    """One failed generation attempt.

    retryable: connection errors, timeouts, 429 and 5xx. Not retryable: a 4xx such as a prompt
    that exceeds the context; such a sample is journaled as failed and tried again next run.
    context_limit: when the server stated its context limit (tokens), so the runner can lower
    max_tokens once to fit.
    """

    def __init__(self, message: str, *, retryable: bool, context_limit: int | None = None,
                 prompt_tokens: int | None = None, retry_after: float | None = None,
                 fatal: bool = False, connection: bool = False, engine_failure: bool = False,
                 incident: str | None = None, status: int | None = None, answered: bool = False,
                 permanent: bool = False, hint: str | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.context_limit = context_limit
        # The prompt's length when the server stated it with the context limit.
        self.prompt_tokens = prompt_tokens
        # Seconds the server asked us to wait (429 Retry-After).
        self.retry_after = retry_after
        # The server could not be reached at all (refused, dropped, timed out): used to tell a
        # server that is down from one that rejects single requests.
        self.connection = connection
        # fatal: the engine cannot serve anything (server gone after all retries, auth failure);
        # the runner stops instead of failing every remaining sample.
        self.fatal = fatal
        # The engine itself failed, not this request: a worker process or launched server died,
        # the in-process engine is dead. A few in a row with no sample finished between them
        # stop the run with the cause (exit status 4) instead of retrying every sample.
        self.engine_failure = engine_failure
        # Engine failures with the same incident are one failure (one worker death fails every request
        # of its batch); None: each counts on its own.
        self.incident = incident
        # The server answered, with an error status (`status`: its HTTP status) or a reply that is no answer
        # (malformed JSON, no choices): a server that answers every request so stops the run through the
        # runner's breaker (run/runner.py), not after every sample has used up its retries.
        self.status = status
        self.answered = answered or status is not None
        # A refusal no retry can fix (a 4xx: a parameter the server rejects, a max_tokens over its context, a bad
        # key): the run stops at the first one, with the server's message and `hint`, what to change.
        self.permanent = permanent
        self.hint = hint

    def fields(self) -> dict[str, Any]:
        """The constructor's keyword arguments (an EngineError crossing a process, e.g. from a Ray replica)."""
        return {"retryable": self.retryable, "context_limit": self.context_limit, "prompt_tokens": self.prompt_tokens,
                "retry_after": self.retry_after, "fatal": self.fatal, "connection": self.connection,
                "engine_failure": self.engine_failure, "incident": self.incident, "status": self.status,
                "answered": self.answered, "permanent": self.permanent, "hint": self.hint}


@dataclass(frozen=True)
class EngineInfo:
    """What an engine found out about the model when it started."""

    # The model name requests are sent with.
    model: str
    # The server's own identity of the model (vLLM's /v1/models `root`: the checkpoint path),
    # part of the run id so a new checkpoint served under an old name starts a new run.
    model_identity: str | None = None
    # Context length (prompt + answer), when the engine knows it.
    max_model_len: int | None = None
    # How many requests it is useful to keep in flight (None: use --concurrency).
    max_concurrency: int | None = None


@runtime_checkable
class Engine(Protocol):
    """An engine. `start` is awaited once before any `generate`, `close` once at the end.

    `attach_run(run_dir)` is called once the run directory is known (a launched server moves its
    log there); `describe()` says what served the run (recorded in config.json's engine_config).
    """

    name: str

    async def start(self) -> EngineInfo: ...

    async def generate(self, request: Request) -> Completion: ...

    async def close(self) -> None: ...

    def attach_run(self, run_dir: Path) -> None: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class CommonOptions:
    """What every engine gets from the common flags. Each engine's own options are its `Options` dataclass."""

    model: str | None = None
    base_url: str | None = None
    api: str = "chat"  # "chat" | "completions"
    # Never persisted: config.json and logs record only the variable's name.
    api_key: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 3600.0
    concurrency: int = 64
    # Where a launched server writes its log until the run directory is known (see Engine.attach_run).
    log_dir: str | None = None
    # The run's sampling options: an engine whose backend is decided where it runs (a Ray replica's inner engine)
    # checks them there against that backend's Capabilities (None: not checked again).
    sampling: SamplingParams | None = None


@dataclass(frozen=True)
class Capabilities:
    """What an engine, as configured, takes; a run that asks for more stops at start with one line, on every engine.

    An engine module's `CAPABILITIES` is what it takes whatever its options; a module whose options change it (the
    `launch` engine's --server, the `ray` engine's inner engine) also defines `configured_capabilities(options)`,
    which `engines.capabilities(name, args)` asks (engines/__init__.py)."""

    apis: frozenset[str] = frozenset({"chat", "completions"})
    # --extra-body keys it honours, and the sampling options added after the first ones (records.sampling_option)
    # it takes; None: any (passed through to the server as is).
    extra_body_keys: frozenset[str] | None = None
    # Options its backend spells otherwise, ours -> its own (llama.cpp's server: repetition_penalty ->
    # repeat_penalty): requests carry them under the backend's name (engines.sampling.openai_fields).
    renamed: Mapping[str, str] = field(default_factory=dict)
    # How the check's message names it ("launch engine (--server llamacpp)"); None: "<name> engine".
    label: str | None = None

    @classmethod
    def of_backend(cls, fields: Mapping[str, str], label: str | None = None,
                   apis: frozenset[str] = frozenset({"chat", "completions"})) -> Capabilities:
        """From a backend's map of the options it takes beyond the first ones (ours -> its name for it)."""
        return cls(apis=apis, extra_body_keys=frozenset(fields),
                   renamed={k: v for k, v in fields.items() if k != v}, label=label)

    def meet(self, other: Capabilities, label: str | None = None) -> Capabilities:
        """What both take (the `ray` engine's inner `auto`: vllm or local, decided on each replica's node)."""
        keys = (other.extra_body_keys if self.extra_body_keys is None else self.extra_body_keys
                if other.extra_body_keys is None else self.extra_body_keys & other.extra_body_keys)
        return Capabilities(apis=self.apis & other.apis, extra_body_keys=keys, label=label)


def check_supported(engine: str, caps: Capabilities, api: str, sampling: SamplingParams) -> None:
    """One line for the first thing the run asks for that `caps` does not take: an API, an --extra-body key, a sampling
    option. Nothing an engine cannot honour is sent and silently dropped."""
    who = caps.label or f"{engine} engine"
    if api not in caps.apis:
        raise UserError(f"the {who} does not support --api {api}; it supports: {', '.join(sorted(caps.apis))}")
    if caps.extra_body_keys is not None:
        from reasoneval.engines.sampling import engine_specific

        supported = ', '.join(sorted(caps.extra_body_keys)) or 'none'
        unknown = sorted(set(sampling.extra_body) - caps.extra_body_keys)
        if unknown:
            raise UserError(f"--extra-body key(s) {', '.join(unknown)} are not supported by the {who}, which would "
                            f"drop them (supported: {supported}); remove them, or run an engine that takes them "
                            "(`reasoneval engines` lists each one's keys; --engine openai sends any key to a server "
                            "you started)")
        options = sorted(engine_specific(sampling) - caps.extra_body_keys)
        if options:
            flags = ", ".join("--" + o.replace("_", "-") for o in options)
            raise UserError(f"{flags} {'is' if len(options) == 1 else 'are'} not supported by the {who} "
                            f"(it takes: {supported}); leave {'it' if len(options) == 1 else 'them'} unset, or run "
                            "an engine that takes it (`reasoneval engines`)")


def option(default: Any, help: str, *, flag: str | bool = False, least: float | None = None) -> Any:
    """A field of an engine's Options dataclass: its default, one line of help, whether it is also a top-level CLI
    flag (True: --field-name; a string: that flag) besides `--engine-arg field=VALUE`, and the least value it takes
    (None, as a value, is always taken: the option's default is used; `check_least` checks)."""
    return field(default=default, metadata={"help": help, "flag": flag, "least": least})


def check_least(options: Any, engine: str) -> None:
    """Raises UserError for the first of an engine's options below the least value its `option` declares, naming
    the option as the user gave it: its flag, else `--engine-arg`'s key."""
    for f in dataclasses.fields(options):
        least, value = f.metadata.get("least"), getattr(options, f.name)
        if least is None or value is None or value >= least:
            continue
        flag = f.metadata.get("flag")
        name = (flag if isinstance(flag, str) else "--" + f.name.replace("_", "-")) if flag else \
            f"{engine} engine option {f.name}"
        raise UserError(f"{name} must be at least {least:g}, got {value}")
