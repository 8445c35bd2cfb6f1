"""The openai engine against a real OpenAI-compatible HTTP server on loopback."""

import asyncio
import socket
from typing import Any

import pytest

from reasoneval.engines.base import EngineError
from reasoneval.engines.openai import OpenAIEngine
from reasoneval.errors import UserError
from reasoneval.records import Request, SamplingParams
from tests.fixtures.openai_server import Reply


def req(problem: str = "What is 6*7?", seed: int = 7, **params: Any) -> Request:
    return Request(task="t", problem_key="k", problem_id="p", index=0, seed=seed, params=SamplingParams(**params),
                   messages=({"role": "user", "content": problem},))


async def start(engine: OpenAIEngine) -> Any:
    return await engine.start()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_start_reads_model_identity_and_context(make_openai_server: Any) -> None:
    server = make_openai_server(model="m", root="/ckpts/step-100", max_model_len=8192)

    async def go() -> Any:
        e = OpenAIEngine(server.base_url, "m")
        try:
            return await e.start()
        finally:
            await e.close()

    info = run(go())
    assert info.model == "m" and info.model_identity == "/ckpts/step-100" and info.max_model_len == 8192


def test_no_model_given_uses_the_only_served_one(make_openai_server: Any) -> None:
    server = make_openai_server(model="only")

    async def go() -> Any:
        e = OpenAIEngine(server.base_url, None)
        try:
            return await e.start()
        finally:
            await e.close()

    assert run(go()).model == "only"


def test_unknown_model_lists_served_ones(make_openai_server: Any) -> None:
    server = make_openai_server(model=["a", "b"])
    with pytest.raises(UserError, match=r"model 'c' is not served at .*; served: a, b"):
        run(OpenAIEngine(server.base_url, "c").start())


def test_unreachable_url_is_one_line_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(UserError, match="cannot reach http://127.0.0.1:.*/v1/models") as ei:
        run(OpenAIEngine(f"http://127.0.0.1:{port}/v1", "m", timeout_s=5).start())
    assert "\n" not in str(ei.value)


def test_html_page_is_not_an_openai_server(make_openai_server: Any) -> None:
    server = make_openai_server(not_openai=True)
    with pytest.raises(UserError, match="not an OpenAI-compatible server"):
        run(OpenAIEngine(server.base_url, "m").start())


def test_payload_carries_seed_and_sampling_and_reasoning_is_kept(make_openai_server: Any) -> None:
    server = make_openai_server(model="m", responder=lambda body: Reply(text="\\boxed{42}", reasoning="hmm",
                                                                        completion_tokens=5))

    async def go() -> Any:
        e = OpenAIEngine(server.base_url, "m")
        await e.start()
        try:
            return await e.generate(req(seed=1234, top_k=20, min_p=0.05, max_tokens=100, stop=("</s>",),
                                        extra_body={"repetition_penalty": 1.1}))
        finally:
            await e.close()

    c = run(go())
    assert c.text == "\\boxed{42}" and c.reasoning == "hmm" and c.completion_tokens == 5
    assert c.finish_reason == "stop"
    body = server.requests()[-1].body
    assert body["seed"] == 1234 and body["top_k"] == 20 and body["min_p"] == 0.05 and body["max_tokens"] == 100
    assert body["temperature"] == 0.6 and body["top_p"] == 0.95 and body["stop"] == ["</s>"]
    assert body["repetition_penalty"] == 1.1 and body["n"] == 1


def test_completions_api_sends_a_prompt(make_openai_server: Any) -> None:
    server = make_openai_server(model="m", script={"Solve": "\\boxed{1}"})

    async def go() -> Any:
        e = OpenAIEngine(server.base_url, "m", api="completions")
        await e.start()
        try:
            r = Request(task="t", problem_key="k", problem_id="p", index=0, seed=1, params=SamplingParams(),
                        prompt="Solve: 0+1")
            return await e.generate(r)
        finally:
            await e.close()

    assert run(go()).text == "\\boxed{1}"
    assert server.requests()[-1].body["prompt"] == "Solve: 0+1"


@pytest.mark.parametrize("kind,retryable", [("http500", True), ("http429", True), ("drop", True),
                                            ("malformed_json", True), ("empty_choices", True)])
def test_faults_map_to_engine_errors(make_openai_server: Any, kind: str, retryable: bool) -> None:
    server = make_openai_server(model="m")
    server.fail_next(1, kind)

    async def go() -> None:
        e = OpenAIEngine(server.base_url, "m")
        await e.start()
        try:
            with pytest.raises(EngineError) as ei:
                await e.generate(req())
            assert ei.value.retryable is retryable
            # the next request is served normally
            assert "42" in (await e.generate(req())).text
        finally:
            await e.close()

    run(go())


def test_timeout_is_retryable(make_openai_server: Any) -> None:
    server = make_openai_server(model="m", hang_s=30)
    server.fail_next(1, "hang")

    async def go() -> None:
        e = OpenAIEngine(server.base_url, "m", timeout_s=0.5)
        await e.start()
        try:
            with pytest.raises(EngineError, match="timed out") as ei:
                await e.generate(req())
            assert ei.value.retryable and ei.value.connection
        finally:
            await e.close()

    run(go())


def test_context_length_400_states_the_limit(make_openai_server: Any) -> None:
    server = make_openai_server(model="m", max_model_len=4096)

    async def go() -> None:
        e = OpenAIEngine(server.base_url, "m")
        await e.start()
        try:
            with pytest.raises(EngineError) as ei:
                await e.generate(req(max_tokens=5000))
            assert not ei.value.retryable
            assert ei.value.context_limit == 4096
            assert ei.value.prompt_tokens is not None and ei.value.prompt_tokens > 0
        finally:
            await e.close()

    run(go())
