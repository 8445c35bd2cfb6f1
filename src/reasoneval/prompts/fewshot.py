"""Few-shot prompt styles for base models: exemplars are data (prompts/exemplars/<style>.json, each citing its source).

A style's file gives the exemplars and the format, following lm-evaluation-harness's construction so
that prompts are comparable with its tasks:

    prompt = join(fewshot_delimiter, [render(q_i) + target_delimiter + a_i for the first k exemplars]
                                       + [render(problem)])

where render(q) fills `question_template`'s `{question}` (one plain replacement, never str.format:
problems are full of LaTeX braces). As chat (a chat model asked few-shot), each exemplar is a user turn
(the rendered question) and an assistant turn (its answer), then the problem as the last user turn
(lm-eval's `--fewshot_as_multiturn`).

`stop` ends an answer where the model would go on to write the next exemplar ("Question:",
"Problem:"); `strict_pattern` is the regex (one group) that finds the final answer in the style's own
format ("#### N", "The answer is N.", "Final Answer: The final answer is X. ...", or "boxed": the last
\\boxed{}); the strict-match and exact_match scorers use it (scoring/lmeval.py).

A style with a `pool` (lm-eval's `gsm8k`, `hendrycks_math`) has no fixed exemplars: they are drawn per
problem from a task's rows (the GSM8K / MATH train split) exactly as lm-eval 0.4.13 draws them
(`lmeval_draws`), and the pipeline hands each problem its own shots (`LoadedTask.fewshot_pool`, `plan`).
A pool split `by` a field (MATH's `subject`: lm-eval runs one task per subject) is drawn per value: the
problems of one subject, in order, draw from that subject's rows with a generator of their own.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from importlib import resources
from typing import Any, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.records import Problem

EXEMPLAR_DIR = "exemplars"


@dataclass(frozen=True)
class Exemplar:
    question: str
    answer: str
    # The value of the style's `pool_by` field (the subject) for a pool drawn per group; None otherwise.
    group: str | None = None


@dataclass(frozen=True)
class FewShotStyle:
    """A few-shot prompt format: how a question and its exemplars are written and joined, the stop strings, and the
    exemplars, fixed or drawn from a task's rows."""

    name: str
    description: str
    source: tuple[str, ...]
    question_template: str
    target_delimiter: str
    fewshot_delimiter: str
    default_shots: int
    stop: tuple[str, ...]
    strict_pattern: str | None
    exemplars: tuple[Exemplar, ...]
    # Drawn exemplars: the task whose rows are the pool (e.g. "gsm8k_train") and the sampler's seed.
    pool: str | None = None
    pool_seed: int = 1234
    # A problem metadata field the pool is split by (each value drawn on its own, as lm-eval's subtasks).
    pool_by: str | None = None

    def render(self, question: str) -> str:
        return self.question_template.replace("{question}", question)

    def render_problem(self, problem: Problem) -> str:
        """The problem alone in the style's format (zero-shot)."""
        return self.render(problem.problem)

    def count(self, k: int | None) -> int:
        """The number of shots asked (the style's default when None)."""
        return self.default_shots if k is None else k

    def shots(self, k: int | None, drawn: Sequence[Exemplar] | None = None) -> tuple[Exemplar, ...]:
        k = self.count(k)
        if self.pool is not None:
            if drawn is None:
                if k == 0:
                    return ()
                raise UserError(f"prompt style {self.name!r} draws its exemplars from task {self.pool!r}; "
                                "build the prompt through the pipeline (it loads that split)")
            if len(drawn) != k:
                raise UserError(f"prompt style {self.name!r}: {len(drawn)} exemplars drawn for {k} shots")
            return tuple(drawn)
        if not 0 <= k <= len(self.exemplars):
            raise UserError(f"--num-fewshot {k} is out of range for prompt style {self.name!r}: it has "
                            f"{len(self.exemplars)} exemplars; pass 0 to {len(self.exemplars)}")
        return self.exemplars[:k]

    def completion(self, problem: Problem, k: int | None, drawn: Sequence[Exemplar] | None = None) -> str:
        parts = [self.render(e.question) + self.target_delimiter + e.answer for e in self.shots(k, drawn)]
        parts.append(self.render(problem.problem))
        return self.fewshot_delimiter.join(parts)

    def chat(self, problem: Problem, k: int | None, drawn: Sequence[Exemplar] | None = None) -> list[dict[str, str]]:
        msgs: list[dict[str, str]] = []
        for e in self.shots(k, drawn):
            msgs.append({"role": "user", "content": self.render(e.question)})
            msgs.append({"role": "assistant", "content": e.answer})
        msgs.append({"role": "user", "content": self.render(problem.problem)})
        return msgs


def _parse(name: str, d: Mapping[str, Any]) -> FewShotStyle:
    try:
        exemplars = tuple(Exemplar(str(e["question"]), str(e["answer"])) for e in d["exemplars"])
        style = FewShotStyle(
            name=name, description=str(d["description"]), source=tuple(d["source"]),
            question_template=str(d["question_template"]), target_delimiter=str(d["target_delimiter"]),
            fewshot_delimiter=str(d["fewshot_delimiter"]), default_shots=int(d["default_shots"]),
            stop=tuple(str(s) for s in d["stop"]), strict_pattern=d.get("strict_pattern"), exemplars=exemplars,
            pool=str(d["pool"]["task"]) if d.get("pool") else None,
            pool_seed=int(d["pool"]["seed"]) if d.get("pool") else 1234,
            pool_by=str(d["pool"]["by"]) if d.get("pool") and d["pool"].get("by") else None)
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"few-shot style file {name}.json is malformed ({e!r}); reinstall reasoneval") from None
    if "{question}" not in style.question_template or not (
            style.pool is not None or 0 <= style.default_shots <= len(exemplars)):
        raise UserError(f"few-shot style file {name}.json is malformed; reinstall reasoneval")
    return style


def load_styles() -> dict[str, FewShotStyle]:
    """Every style shipped in prompts/exemplars, by name (the file's stem)."""
    out: dict[str, FewShotStyle] = {}
    folder = resources.files(__package__).joinpath(EXEMPLAR_DIR)
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            name = entry.name[:-len(".json")]
            out[name] = _parse(name, json.loads(entry.read_text(encoding="utf-8")))
    return out


def lmeval_draws(pool_size: int, k: int, count: int, seed: int) -> list[list[int]]:
    """The pool rows lm-eval 0.4.13 puts in the prompts of a task's first `count` documents, k each.

    lm-eval (api/samplers.py ContextSampler, evaluator.py) gives each task one `random.Random(seed)`
    (`set_fewshot_seed(fewshot_random_seed)`, default 1234) before building its requests, then walks the
    test documents in order and calls `rnd.sample(fewshot_docs, k)` once per document: the generator's
    state runs on from document to document, so document i's shots depend on i, and `--limit N` gives
    the first N documents the same shots as a full run. `random.sample` consumes randomness by the
    population's length only, so sampling `range(pool_size)` picks the same rows as sampling the docs.
    (A few-shot split equal to the test split would draw k + 1 and drop the document itself; gsm8k's
    train/test split does not.)
    """
    if not 0 <= k <= pool_size:
        raise UserError(f"--num-fewshot {k} is out of range: the exemplar pool has {pool_size} rows")
    if k == 0:
        return [[] for _ in range(count)]  # lm-eval does not touch the generator for 0 shots
    rnd = random.Random(seed)
    return [rnd.sample(range(pool_size), k) for _ in range(count)]
