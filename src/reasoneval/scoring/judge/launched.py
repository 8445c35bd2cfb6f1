"""A launched judge: `--judge-server vllm|sglang|llamacpp [--judge-model-path PATH]` starts the judge's server with the
`launch` engine (engines/launch/), waits until it answers, and stops it when the command ends, however it ends
(success, an error, Ctrl-C; the launch engine also stops it at interpreter exit and on SIGTERM/SIGHUP).

The judge is then what the server serves: its base URL (a free local port) and the model name its /v1/models gives
(or --judge-model, the name vllm and sglang serve a checkpoint folder under). Where a judge runs is not part of its
verdicts' key, so a later `report RUN --judge-server ...` (another port) reads the same verdicts back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Coroutine, Iterator, TypeVar

from reasoneval.errors import UserError

log = logging.getLogger("reasoneval")
T = TypeVar("T")


@dataclass(frozen=True)
class LaunchedJudge:
    base_url: str
    model: str


def _in_own_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on an event loop of its own (whoever calls: a running loop's coroutine or plain code)."""
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        return ex.submit(asyncio.run, coro).result()


@contextlib.contextmanager
def launched_judge(server: str, model_path: str | None, model: str | None, log_dir: Path | None,
                   max_model_len: int | None = None) -> Iterator[LaunchedJudge]:
    """The judge's server, started and answering for the block, stopped after it."""
    from reasoneval.engines import engine_module, make_options
    from reasoneval.engines.base import CommonOptions

    args: dict[str, Any] = {"server": server}
    if model_path is not None:
        args["model_path"] = model_path
    if max_model_len is not None:
        args["max_model_len"] = max_model_len
    try:
        options = make_options("launch", args)
    except UserError as e:
        raise UserError(f"--judge-server: {e}") from None
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
    engine: Any = engine_module("launch").create(CommonOptions(model=model, log_dir=str(log_dir) if log_dir else None,
                                                               concurrency=16), options)

    async def start() -> LaunchedJudge:
        info = await engine.start()
        # The server stays; the engine's client belongs to this loop, so it goes (the judge makes its own).
        client, engine.client = engine.client, None
        if client is not None:
            await client.close()
        return LaunchedJudge(engine.plan.base_url, info.model)

    async def stop() -> None:
        await engine.close()

    try:
        judge = _in_own_loop(start())  # a start that fails stops its server itself
    except UserError as e:
        raise UserError(f"the judge's {server} server did not start (--judge-server, --judge-model-path): {e}") from None
    log.info("judge: %s server at %s serving %s (pid %s)", server, judge.base_url, judge.model, engine.server_pid())
    try:
        yield judge
    finally:
        _in_own_loop(stop())
