"""`bernoulli` (tests and scripts/adaptive_simulation.py only): a model whose sample of a problem is right with that
problem's fixed probability p_i, decided by the sample's seed.

Options: `accuracies`, a JSON file {problem id: {"p": p_i, "answer": the right answer}}. A right sample answers
`\\boxed{answer}`, a wrong one `\\boxed{answer}0` (never equivalent). Whether sample j is right depends only on the
problem and the request's seed (`is_right`), so the simulation can recompute a real run's outcomes and the same
run seed gives the same outcomes in any order or process.
Registered by the code that uses it: `ENGINES.add_lazy("bernoulli", "tests.plugins.bernoulli_engine")`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasoneval.engines.base import Capabilities, CommonOptions, EngineInfo, option
from reasoneval.errors import UserError
from reasoneval.records import Completion, Request

CAPABILITIES = Capabilities(extra_body_keys=None)


def is_right(problem_id: str, seed: int, p: float) -> bool:
    """Sample with this seed of this problem is right: a uniform number from the pair's hash below p."""
    u = int.from_bytes(hashlib.sha256(f"{problem_id}|{seed}".encode()).digest()[:8], "big") / 2**64
    return u < p


@dataclass(frozen=True)
class Options:
    accuracies: str = option("", "JSON file: {problem id: {\"p\": accuracy, \"answer\": right answer}}")


class BernoulliEngine:
    name = "bernoulli"

    def __init__(self, common: CommonOptions, options: Options) -> None:
        if not options.accuracies:
            raise UserError("the bernoulli engine needs --engine-arg accuracies=FILE")
        self.table: dict[str, dict[str, Any]] = json.loads(Path(options.accuracies).read_text())

    async def start(self) -> EngineInfo:
        return EngineInfo(model="bernoulli", model_identity=json.dumps(self.table, sort_keys=True))

    async def generate(self, request: Request) -> Completion:
        row = self.table[request.problem_id]
        answer = str(row["answer"]) if is_right(request.problem_id, request.seed, float(row["p"])) else f"{row['answer']}0"
        text = f"The answer is \\boxed{{{answer}}}."
        return Completion(text=text, finish_reason="stop", prompt_tokens=None, completion_tokens=len(text.split()),
                          latency_s=0.0)

    async def close(self) -> None: ...
    def attach_run(self, run_dir: Path) -> None: ...
    def describe(self) -> dict[str, Any]: return {"accuracies": len(self.table)}


def create(common: CommonOptions, options: Options) -> BernoulliEngine:
    return BernoulliEngine(common, options)
