"""The judge: an OpenAI-compatible endpoint (the `openai` engine's client) asked for verdicts, with a journal.

Every verdict the judge gives is appended to the run's `judgements.jsonl` as it arrives (one JSON line, flushed),
keyed by everything it depends on: the judge's model, prompt (its template's hash) and settings, the question, the
reference and the extracted answer. A resumed run, a re-score (`report`, `score`) or a second task with the same
question reads the verdict back instead of paying for it again. A call that fails (HTTP errors, timeouts, a reply out
of format) is retried `retries` times, then that sample is ungraded: nothing is journaled, so the next scoring asks
again.

A judge that cannot serve at all (nothing listens at its endpoint, the key is refused, the model is not served there)
is a configuration error, not a failed call: `check_judge` says so in one line before a run generates anything, and a
scoring pass that finds it so raises the same error rather than leaving every sample ungraded.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from reasoneval.errors import UserError
from reasoneval.scoring.judge.prompts import JUDGE_PROMPTS, JudgePrompt

log = logging.getLogger("reasoneval")



@dataclass(frozen=True)
class JudgeSettings:
    """The judge as config.json records it (the cascade's `judge` setting): what its verdicts depend on, and how it is
    reached. `model`, `prompt`, `prompt_sha`, `temperature` and `max_tokens` are in the cache key; where it is
    served (`base_url`, `api_key_env`) and how patiently (`retries`, `concurrency`, `timeout_s`) are not."""

    model: str
    base_url: str
    prompt: str = "equivalence"
    prompt_sha: str = ""
    temperature: float = 0.0
    max_tokens: int = 4096
    retries: int = 2
    concurrency: int = 16
    timeout_s: float = 300.0
    api_key_env: str = "OPENAI_API_KEY"

    @classmethod
    def make(cls, model: str, base_url: str, prompt: str = "equivalence", **kw: Any) -> JudgeSettings:
        if prompt not in JUDGE_PROMPTS:
            raise UserError(f"unknown judge prompt {prompt!r}; known: {', '.join(JUDGE_PROMPTS)}")
        if not model or not base_url:
            raise UserError("a judge needs both --judge-model and --judge-base-url (an OpenAI-compatible endpoint, "
                            "e.g. http://localhost:8001/v1)")
        return cls(model=model, base_url=base_url, prompt=prompt, prompt_sha=JUDGE_PROMPTS[prompt].sha, **kw)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JudgeSettings:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown or "model" not in data or "base_url" not in data:
            raise UserError(f"config.json's judge settings are not readable (unknown {unknown or 'none'}; model and "
                            "base_url are needed): re-score with --judge-model and --judge-base-url")
        settings = cls(**{k: v for k, v in data.items() if k in known})
        if settings.prompt not in JUDGE_PROMPTS:
            raise UserError(f"config.json names judge prompt {settings.prompt!r}, unknown to this reasoneval")
        current = JUDGE_PROMPTS[settings.prompt].sha
        if settings.prompt_sha and settings.prompt_sha != current:
            log.warning("judge prompt %r changed since this run was judged (%s -> %s): its verdicts are asked again",
                        settings.prompt, settings.prompt_sha, current)
        return settings

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def template(self) -> JudgePrompt:
        return JUDGE_PROMPTS[self.prompt]

    def identity(self) -> str:
        """What a verdict depends on besides its item, as one string (the version a result records)."""
        return f"{self.model}|{self.prompt}@{self.template.sha}|t={self.temperature:g}|max={self.max_tokens}"


@dataclass(frozen=True)
class JudgeItem:
    question: str
    reference: str
    answer: str


@dataclass(frozen=True)
class Judgement:
    """A verdict (None: ungraded, `error` says why), and whether it came from the journal."""

    verdict: bool | None
    error: str | None = None
    cached: bool = False


def judgement_key(settings: JudgeSettings, item: JudgeItem) -> str:
    blob = json.dumps([settings.identity(), item.question, item.reference, item.answer], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def judge_error(settings: JudgeSettings, cause: UserError, scoring: bool = False) -> UserError:
    """The engine's one-line reason a judge cannot serve, in the judge's own flags (`scoring`: said while scoring,
    after the samples were generated)."""
    why = re.sub(r"--model\b", "--judge-model", re.sub(r"--base-url\b", "--judge-base-url", str(cause)))
    kept = "; the samples are kept: re-score with `reasoneval report RUN_DIR` once it serves" if scoring else ""
    return UserError(f"the judge cannot serve ({why}): start it, or fix --judge-base-url {settings.base_url} / "
                     f"--judge-model {settings.model}{kept}")


async def _probe(settings: JudgeSettings) -> None:
    from reasoneval.engines.openai import OpenAIEngine

    engine = OpenAIEngine(settings.base_url, settings.model, api="chat",
                          api_key=os.environ.get(settings.api_key_env), timeout_s=min(30.0, settings.timeout_s),
                          max_connections=1)
    try:
        await engine.start()
    except UserError as e:
        raise judge_error(settings, e) from None
    finally:
        await engine.close()


def check_judge(settings: JudgeSettings) -> None:
    """One cheap request (GET /models): a one-line UserError naming the cause and the flags to change when the judge
    is unreachable, refuses the key or does not serve its model."""
    with concurrent.futures.ThreadPoolExecutor(1) as ex:  # its own event loop, whoever calls
        ex.submit(asyncio.run, _probe(settings)).result()


class JudgeClient:
    """Verdicts for items: the journal's, else the judge's (asked concurrently, each retried), journaled."""

    def __init__(self, settings: JudgeSettings, journal: Path | None) -> None:
        self.settings = settings
        self.journal = journal
        self.verdicts: dict[str, bool] = {}
        self.requests = 0  # calls sent to the judge by this client (retries included)
        # Whether to ask for the prompt's response_format (structured output): until the server refuses it.
        self.structured = settings.template.response_format is not None
        if journal is not None and journal.exists():
            self._load(journal)

    def _load(self, journal: Path) -> None:
        with open(journal, encoding="utf-8") as f:
            for line in f:
                try:
                    d = json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash: that verdict is asked again
                if isinstance(d, dict) and isinstance(d.get("key"), str) and isinstance(d.get("verdict"), bool):
                    self.verdicts[d["key"]] = d["verdict"]

    def judge_many(self, items: Sequence[JudgeItem]) -> list[Judgement]:
        keys = [judgement_key(self.settings, it) for it in items]
        missing = {k: it for k, it in zip(keys, items) if k not in self.verdicts}
        errors: dict[str, str] = {}
        if missing:
            with concurrent.futures.ThreadPoolExecutor(1) as ex:  # its own event loop, whoever calls
                errors = ex.submit(asyncio.run, self._ask_all(missing)).result()
        return [Judgement(self.verdicts[k], cached=k not in missing) if k in self.verdicts
                else Judgement(None, errors.get(k, "no verdict")) for k in keys]

    async def _ask_all(self, items: Mapping[str, JudgeItem]) -> dict[str, str]:
        from reasoneval.engines.openai import OpenAIEngine

        s = self.settings
        engine = OpenAIEngine(s.base_url, s.model, api="chat", api_key=os.environ.get(s.api_key_env),
                              timeout_s=s.timeout_s, max_connections=s.concurrency)
        try:
            await engine.start()
        except UserError as e:
            raise judge_error(s, e, scoring=True) from None
        errors: dict[str, str] = {}
        gate = asyncio.Semaphore(max(1, s.concurrency))
        out = open(self.journal, "a", encoding="utf-8") if self.journal is not None else None
        try:
            async def one(key: str, item: JudgeItem) -> None:
                async with gate:
                    verdict, error = await self._ask(engine, item)
                if verdict is None:
                    errors[key] = error
                    return
                self.verdicts[key] = verdict
                if out is not None:
                    out.write(json.dumps({"key": key, "verdict": verdict, "model": s.model, "prompt": s.prompt,
                                          "answer": item.answer[:500]}, ensure_ascii=False) + "\n")
                    out.flush()

            await asyncio.gather(*(one(k, it) for k, it in items.items()))
        finally:
            if out is not None:
                out.close()
            await engine.close()
        return errors

    async def _ask(self, engine: Any, item: JudgeItem) -> tuple[bool | None, str]:
        from reasoneval.engines.base import EngineError

        s = self.settings
        messages = ({"role": "user", "content": s.template.render(item.question, item.reference, item.answer)},)
        error = ""
        for attempt in range(s.retries + 1):
            if attempt:
                await asyncio.sleep(min(2.0, 0.1 * 2 ** attempt))
            try:
                text = await self._generate(engine, messages, attempt)
            except EngineError as e:
                error = f"judge call failed: {e}"
                if getattr(e, "permanent", False):
                    break
                continue
            verdict = s.template.parse(text)
            if verdict is not None:
                return verdict, ""
            error = f"judge answered out of format: {' '.join(text.split())[:120]!r}"
        return None, error

    async def _generate(self, engine: Any, messages: tuple[dict[str, str], ...], attempt: int) -> str:
        """One judge call's reply: with the prompt's response format while the server takes it; a server that refuses
        the field (HTTP 400, 422, 501) is asked again at once without it, and from then on."""
        from reasoneval.engines.base import EngineError
        from reasoneval.records import Request, SamplingParams

        s = self.settings
        while True:
            structured = self.structured
            extra = {"response_format": dict(s.template.response_format or {})} if structured else {}
            params = SamplingParams(temperature=s.temperature, top_p=1.0, max_tokens=s.max_tokens, extra_body=extra)
            self.requests += 1
            request = Request(task="judge", problem_key="", problem_id="", index=attempt, seed=attempt, params=params,
                              messages=messages)
            try:
                reply = await engine.generate(request)
            except EngineError as e:
                if structured and getattr(e, "status", None) in (400, 422, 501) and not e.context_limit:
                    if self.structured:
                        log.info("judge %s refused structured output (%s): its prompt asks for the JSON alone",
                                 s.model, e)
                    self.structured = False
                    continue
                raise
            return str(reply.text)
