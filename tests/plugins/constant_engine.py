"""`constant`: answers every request with the same text (a stand-in model for tests and demos)."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasoneval.engines.base import Capabilities, CommonOptions, EngineInfo, option
from reasoneval.records import Completion, Request


@dataclass(frozen=True)
class Options:
    answer: str = option("42", "what every request is answered with")


CAPABILITIES = Capabilities(extra_body_keys=frozenset())


class ConstantEngine:
    name = "constant"

    def __init__(self, common: CommonOptions, options: Options) -> None:
        self.text = f"The answer is \\boxed{{{options.answer}}}."

    async def start(self) -> EngineInfo:
        return EngineInfo(model="constant", model_identity=self.text)

    async def generate(self, request: Request) -> Completion:
        return Completion(text=self.text, finish_reason="stop", prompt_tokens=None,
                          completion_tokens=len(self.text.split()), latency_s=0.0)

    async def close(self) -> None: ...
    def attach_run(self, run_dir: Path) -> None: ...
    def describe(self) -> dict[str, Any]: return {"text": self.text}


def create(common: CommonOptions, options: Options) -> ConstantEngine:
    return ConstantEngine(common, options)
