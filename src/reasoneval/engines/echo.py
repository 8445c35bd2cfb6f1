"""`echo`: a zero-cost engine that answers every request with a fixed text after a fixed delay.

For measuring the harness itself (the driver overhead of `--engine ray` against the in-process runner)
and as the replicas' inner engine in tests of the Ray engine, where the model's cost is not the point.
It never looks at the prompt, so its answers are scored as whatever the fixed text says.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path
from typing import Any

from reasoneval.engines.base import Capabilities, CommonOptions, EngineInfo
from reasoneval.engines.options import EchoOptions as Options
from reasoneval.records import Completion, Request

# It never samples: an option beyond the first ones (or an --extra-body key) would do nothing, so it is refused.
CAPABILITIES = Capabilities(extra_body_keys=frozenset())


class EchoEngine:
    name = "echo"

    def __init__(self, common: CommonOptions, options: Options) -> None:
        self.model = common.model or "echo"
        self.opts = options
        self._slots: asyncio.Semaphore | None = None
        self._tokens = len(options.text.split())

    async def start(self) -> EngineInfo:
        self._slots = asyncio.Semaphore(self.opts.slots)
        return EngineInfo(model=self.model, max_concurrency=self.opts.slots)

    async def generate(self, request: Request) -> Completion:
        assert self._slots is not None, "start() was not awaited"
        t0 = time.perf_counter()
        async with self._slots:
            if self.opts.delay_s > 0:
                await asyncio.sleep(self.opts.delay_s)
        return Completion(text=self.opts.text, finish_reason="stop", prompt_tokens=None,
                          completion_tokens=self._tokens, latency_s=time.perf_counter() - t0)

    async def close(self) -> None:
        pass

    def attach_run(self, run_dir: Path) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"model": self.model, **dataclasses.asdict(self.opts)}


def create(common: CommonOptions, options: Options) -> EchoEngine:
    return EchoEngine(common, options)
