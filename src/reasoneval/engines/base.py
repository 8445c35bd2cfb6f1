"""The engine interface: every engine takes a Request and returns a Completion.

The runner owns concurrency, retries, seeds and the store; an engine only generates. An engine
raises `EngineError` for a failed attempt, saying whether retrying may help, so retry policy and
retry counting live in one place (the runner) for every engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..types import Completion, Request


class EngineError(Exception):
    """One failed generation attempt.

    retryable: connection errors, timeouts, 429 and 5xx. Not retryable: a 4xx such as a prompt
    that exceeds the context; such a sample is journaled as failed and tried again next run.
    context_limit: when the server stated its context limit (tokens), so the runner can lower
    max_tokens once to fit.
    """

    def __init__(self, message: str, *, retryable: bool, context_limit: int | None = None,
                 prompt_tokens: int | None = None, retry_after: float | None = None,
                 fatal: bool = False, connection: bool = False, engine_failure: bool = False) -> None:
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
    """An engine. `start` is awaited once before any `generate`, `close` once at the end."""

    name: str

    async def start(self) -> EngineInfo: ...

    async def generate(self, request: Request) -> Completion: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class EngineOptions:
    """Everything the CLI / API knows that an engine may need. Each engine reads what applies."""

    model: str | None = None
    base_url: str | None = None
    api: str = "chat"  # "chat" | "completions"
    # Never persisted: config.json and logs record only the variable's name.
    api_key: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 3600.0
    concurrency: int = 64
    # local (llama.cpp) engine
    model_path: str | None = None
    replicas: int = 1
    n_ctx: int | None = None
    # vllm / launch engines
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    max_model_len: int | None = None
    dtype: str | None = None
    gpu_memory_utilization: float | None = None
    enable_prefix_caching: bool = False
    server: str = "vllm"  # launch: "vllm" | "sglang" | "llamacpp"
    port: int | None = None
    server_args: tuple[str, ...] = ()
    startup_timeout_s: float = 1800.0
    # Where a launched server writes its log until the run directory is known (see Engine.set_run_dir).
    log_dir: str | None = None
    logprobs: bool = False
