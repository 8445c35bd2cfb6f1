"""`slow_first_echo` (tests and bench/ray_slow_replica.py only): the echo engine, slow in one replica.

Of the engines started with the same `claim` file, the one that creates it waits `slow_s` more before each
answer; the others are plain echo engines. As the Ray engine's inner engine (`--engine-arg
inner=slow_first_echo`) that makes exactly one replica slow, with no test hook in the Ray engine itself.
Registered by the code that uses it: `ENGINES.add_lazy("slow_first_echo", "tests.plugins.slow_echo")`.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasoneval.engines import echo
from reasoneval.engines.base import CommonOptions, EngineInfo, option
from reasoneval.records import Completion, Request

CAPABILITIES = echo.CAPABILITIES


@dataclass(frozen=True)
class Options:
    claim: str = option("", "a file path: the engine that creates it is the slow one")
    slow_s: float = option(0.0, "extra seconds per request of the slow engine")
    delay_s: float = option(0.0, "seconds each request takes (echo's delay_s)")
    slots: int = option(64, "requests served at once (echo's slots)")


class SlowFirstEcho:
    name = "slow_first_echo"

    def __init__(self, common: CommonOptions, options: Options) -> None:
        self.opts = options
        self.echo = echo.create(common, echo.Options(delay_s=options.delay_s, slots=options.slots))
        self.slow = False

    async def start(self) -> EngineInfo:
        try:
            os.close(os.open(self.opts.claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            self.slow = True
        except FileExistsError:
            pass
        return await self.echo.start()

    async def generate(self, request: Request) -> Completion:
        if self.slow:
            await asyncio.sleep(self.opts.slow_s)
        return await self.echo.generate(request)

    async def close(self) -> None:
        await self.echo.close()

    def attach_run(self, run_dir: Path) -> None: ...

    def describe(self) -> dict[str, Any]:
        return {"slow": self.slow, **self.echo.describe()}


def create(common: CommonOptions, options: Options) -> SlowFirstEcho:
    return SlowFirstEcho(common, options)
