"""The `openai` engine: any OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp server, TGI, hosted APIs).

One base HTTP client: `build_payload` makes the request body, `parse_reply` reads the answer;
a server flavour that differs only in those overrides them. One request per sample, each with
its own seed; the runner decides how many are in flight and when to retry.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from reasoneval.engines.base import Capabilities, CommonOptions, EngineError, EngineInfo
from reasoneval.engines.options import OpenAIOptions as Options
from reasoneval.engines.sampling import openai_fields
from reasoneval.errors import UserError
from reasoneval.records import Completion, Request

if TYPE_CHECKING:  # imported where used: `run --help` reads this module's Options without aiohttp (0.2 s)
    import aiohttp

# Context-limit wordings of vLLM (old and new), SGLang and OpenAI.
_CONTEXT_LIMIT = re.compile(r"maximum context length (?:is|of) (\d+)", re.I)
_PROMPT_TOKENS = re.compile(
    r"\((\d+) in the messages|(\d+) in the prompt|request has (\d+) input tokens|(\d+) tokens from the input",
    re.I,
)
_RETRYABLE_STATUS = {408, 409, 425, 429}
# Response headers that say what serves the model (recorded in the run's fingerprint: results/fingerprint.py); never
# one that could carry a secret or changes per request.
_IDENTITY_HEADERS = ("server", "x-powered-by", "openai-version", "via", "x-vllm-version", "x-sglang-version")


def refusal_hint(status: int, message: str) -> str:
    """What to change when the server refuses a request with a 4xx that no retry fixes."""
    text = message.lower()
    if status in (401, 403):
        return "set the API key in OPENAI_API_KEY (or the variable --api-key-env names)"
    if status == 404:
        return "check --model (the served name), --base-url and --api (chat or completions: the server may lack one)"
    if status == 413:
        return "the request is too large for the server: a shorter prompt (--num-fewshot, --system-prompt)"
    if any(w in text for w in ("max_tokens", "max_completion_tokens", "context", "too many tokens", "too long")):
        return ("lower --max-tokens (or give the server a longer context, e.g. vLLM's --max-model-len, "
                "--engine-arg max_model_len=N with --engine launch)")
    return ("check the request's settings: --extra-body, --top-k, --min-p, --stop and --api are sent as given, "
            "and a server may not take one of them")


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _error_message(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return _short(body)
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, dict):
        return _short(str(err.get("message") or err))
    return _short(str(err))


class OpenAIEngine:
    name = "openai"

    def __init__(self, base_url: str, model: str | None, *, api: str = "chat", api_key: str | None = None,
                 timeout_s: float = 3600.0, max_connections: int = 64,
                 renamed: Mapping[str, str] | None = None) -> None:
        if api not in ("chat", "completions"):
            raise UserError(f"unknown --api {api!r}; use 'chat' or 'completions'")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api = api
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        # Options the server spells otherwise (Capabilities.renamed: llama.cpp's repeat_penalty), sent under its name.
        self.renamed = dict(renamed or {})
        self._session: aiohttp.ClientSession | None = None
        # What the server says about itself (`server_report`): /version, identity headers, its /models entry, and the
        # `system_fingerprint`s its replies carried (OpenAI's name for the backend configuration that served them).
        self._version: str | None = None
        self._headers_seen: dict[str, str] = {}
        self._model_entry: dict[str, Any] = {}
        self._system_fingerprints: set[str] = set()

    # -- lifecycle -------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    async def start(self) -> EngineInfo:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=max(1, self.max_connections), ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers=self._headers(),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=min(30.0, self.timeout_s)),
        )
        models = await self._list_models()
        served = [m.get("id") for m in models if isinstance(m, dict) and m.get("id")]
        if not served:
            await self.close()
            raise UserError(f"the server at {self.base_url} serves no models (GET /models returned an empty list)")
        if self.model is None:
            if len(served) > 1:
                await self.close()
                raise UserError(f"the server at {self.base_url} serves several models; choose one with --model: "
                                + ", ".join(map(str, served)))
            self.model = str(served[0])
        if self.model not in served:
            await self.close()
            raise UserError(f"model {self.model!r} is not served at {self.base_url}; served: {', '.join(map(str, served))}")
        entry = next(m for m in models if m.get("id") == self.model)
        self._model_entry = {k: v for k, v in entry.items() if isinstance(v, (str, int, float, bool)) and k != "created"}
        self._version = await self._server_version()
        root = entry.get("root")
        max_len = entry.get("max_model_len")
        return EngineInfo(
            model=self.model,
            model_identity=str(root) if root and root != self.model else None,
            max_model_len=int(max_len) if isinstance(max_len, (int, float)) and max_len > 0 else None,
        )

    async def _list_models(self) -> list[dict[str, Any]]:
        import aiohttp

        assert self._session is not None
        url = f"{self.base_url}/models"
        try:
            async with self._session.get(url, timeout=aiohttp.ClientTimeout(total=min(60.0, self.timeout_s))) as r:
                body = await r.text()
                status, ctype = r.status, r.headers.get("Content-Type", "")
                self._note_headers(r.headers)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
            await self.close()
            reason = str(e) or type(e).__name__
            raise UserError(f"cannot reach {url}: {_short(reason, 160)}; is the server running? "
                            "(--base-url must include /v1, e.g. http://localhost:8000/v1)") from None
        hint = "(--base-url must point at an OpenAI-compatible API and include /v1, e.g. http://localhost:8000/v1)"
        if status in (401, 403):
            await self.close()
            raise UserError(f"{url} refused the API key (HTTP {status}); set it in OPENAI_API_KEY or --api-key-env")
        if status != 200:
            await self.close()
            raise UserError(f"{url} answered HTTP {status}, not a model list {hint}")
        try:
            data = json.loads(body)
            models = data["data"]
            if not isinstance(models, list):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            await self.close()
            kind = "an HTML page" if "html" in ctype or body.lstrip().startswith("<") else "no OpenAI model list"
            raise UserError(f"{url} returned {kind}: this is not an OpenAI-compatible server {hint}") from None
        return [m for m in models if isinstance(m, dict)]

    def _note_headers(self, headers: Mapping[str, str]) -> None:
        for name in _IDENTITY_HEADERS:
            value = headers.get(name)
            if value:
                self._headers_seen[name] = str(value)[:200]

    async def _server_version(self) -> str | None:
        """The server's own version where it reports one (vLLM's and SGLang's GET /version, beside /v1); None
        where it does not (hosted APIs): recorded as unknown, never guessed."""
        import aiohttp

        assert self._session is not None
        root = self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url
        for url in (f"{root}/version", f"{self.base_url}/version"):
            try:
                async with self._session.get(url, timeout=aiohttp.ClientTimeout(total=min(10.0, self.timeout_s))) as r:
                    if r.status != 200:
                        continue
                    data = json.loads(await r.text())
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError):
                continue
            version = data.get("version") if isinstance(data, dict) else None
            if isinstance(version, (str, int, float)) and str(version):
                return str(version)[:100]
        return None

    def server_report(self) -> dict[str, Any]:
        """What the server reported about itself (for the run's fingerprint)."""
        return {"version": self._version, "headers": dict(sorted(self._headers_seen.items())),
                "model_entry": dict(sorted(self._model_entry.items())),
                "system_fingerprints": sorted(self._system_fingerprints)}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def attach_run(self, run_dir: Path) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"api": self.api, "server_report": self.server_report()}

    # -- one request -----------------------------------------------------------------------

    def build_payload(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model}
        if self.api == "chat":
            if request.messages is None:
                raise ValueError("chat API needs messages")
            body["messages"] = [dict(m) for m in request.messages]
        else:
            if request.prompt is None:
                raise ValueError("completions API needs a prompt")
            body["prompt"] = request.prompt
        body.update(openai_fields(request.params, request.seed, self.renamed))
        return body

    def parse_reply(self, data: Any, latency_s: float) -> Completion:
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise EngineError("server returned no choices", retryable=True, answered=True)
        choice = choices[0]
        reasoning = None
        if self.api == "chat":
            msg = choice.get("message") or {}
            text = msg.get("content")
            reasoning = msg.get("reasoning_content") or msg.get("reasoning")
        else:
            text = choice.get("text")
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise EngineError("server returned a non-text answer", retryable=True, answered=True)
        usage = data.get("usage") or {}
        fingerprint = data.get("system_fingerprint")
        if isinstance(fingerprint, str) and fingerprint and len(self._system_fingerprints) < 32:
            self._system_fingerprints.add(fingerprint[:100])
        return Completion(
            text=text,
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=latency_s,
            reasoning=reasoning if isinstance(reasoning, str) else None,
        )

    async def generate(self, request: Request) -> Completion:
        import aiohttp

        if self._session is None:
            raise RuntimeError("OpenAIEngine.start() was not awaited")
        url = f"{self.base_url}/{'chat/completions' if self.api == 'chat' else 'completions'}"
        payload = self.build_payload(request)
        t0 = time.monotonic()
        try:
            async with self._session.post(url, json=payload,
                                          timeout=aiohttp.ClientTimeout(total=self.timeout_s)) as r:
                body = await r.read()
                status = r.status
                retry_after = r.headers.get("Retry-After")
        except asyncio.TimeoutError:
            raise EngineError(f"request timed out after {self.timeout_s:g} s", retryable=True,
                              connection=True) from None
        except (aiohttp.ClientError, OSError) as e:
            raise EngineError(f"connection error: {_short(str(e) or type(e).__name__, 160)}",
                              retryable=True, connection=True) from None
        latency = time.monotonic() - t0
        if status != 200:
            text = body.decode("utf-8", "replace")
            message = f"HTTP {status}: {_error_message(text)}"
            if status in _RETRYABLE_STATUS or status >= 500:
                ra = None
                if retry_after:
                    try:
                        ra = float(retry_after)
                    except ValueError:
                        ra = None
                raise EngineError(message, retryable=True, retry_after=ra, status=status)
            hint = refusal_hint(status, message)
            m = _CONTEXT_LIMIT.search(text) if status == 400 else None
            if m:
                pm = _PROMPT_TOKENS.search(text)
                prompt_tokens = next((int(g) for g in pm.groups() if g), None) if pm else None
                raise EngineError(message, retryable=False, context_limit=int(m.group(1)), prompt_tokens=prompt_tokens,
                                  status=status, permanent=True, hint=hint)
            raise EngineError(message, retryable=False, status=status, permanent=True, hint=hint)
        try:
            data = json.loads(body)
        except ValueError:
            raise EngineError(f"server returned malformed JSON: {_short(body.decode('utf-8', 'replace'), 120)}",
                              retryable=True, answered=True) from None
        return self.parse_reply(data, latency)


CAPABILITIES = Capabilities()  # any --extra-body key goes to the server as is


def create(common: CommonOptions, options: Options) -> OpenAIEngine:
    base_url = common.base_url or os.environ.get("OPENAI_BASE_URL") or "http://localhost:8000/v1"
    return OpenAIEngine(base_url, common.model, api=common.api, api_key=common.api_key, timeout_s=common.timeout_s,
                        max_connections=common.concurrency)
