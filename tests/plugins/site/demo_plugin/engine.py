"""`demo_calc`: squares the number the prompt asks about, wrongly (off by one) from `wrong_from` on."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasoneval.engines.base import Capabilities, CommonOptions, EngineInfo, option
from reasoneval.records import Completion, Request


@dataclass(frozen=True)
class Options:
    wrong_from: int = option(8, "the first N whose square is answered off by one")


CAPABILITIES = Capabilities(extra_body_keys=frozenset())


class CalcEngine:
    name = "demo_calc"

    def __init__(self, common: CommonOptions, options: Options) -> None:
        self.wrong_from = options.wrong_from

    async def start(self) -> EngineInfo:
        return EngineInfo(model="demo-calc")

    async def generate(self, request: Request) -> Completion:
        prompt = request.prompt if request.prompt is not None else request.messages[-1]["content"]  # type: ignore[index]
        n = int(re.findall(r"What is (\d+) squared", prompt)[-1])
        text = str(n * n + (1 if n >= self.wrong_from else 0))
        return Completion(text=text, finish_reason="stop", prompt_tokens=None, completion_tokens=1, latency_s=0.0)

    async def close(self) -> None: ...
    def attach_run(self, run_dir: Path) -> None: ...
    def describe(self) -> dict[str, Any]: return {"wrong_from": self.wrong_from}


def create(common: CommonOptions, options: Options) -> CalcEngine:
    return CalcEngine(common, options)
