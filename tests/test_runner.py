"""The generation loop against a real loopback server: concurrency kept full, retries, failures."""

import asyncio
from pathlib import Path
from typing import Any

import pytest

from reasoneval.engines.openai import OpenAIEngine
from reasoneval.runner import RetryPolicy, ServerDown, generate
from reasoneval.store import SampleStore
from reasoneval.types import Request, SamplingParams

FAST = RetryPolicy(max_retries=8, backoff_base_s=0.01, backoff_cap_s=0.05)


def requests(n: int, max_tokens: int = 100) -> list[Request]:
    return [Request(task="t", problem_key=f"k{i % 5}", problem_id=f"p{i % 5}", index=i // 5, seed=i,
                    params=SamplingParams(max_tokens=max_tokens),
                    messages=({"role": "user", "content": f"problem {i % 5}"},)) for i in range(n)]


def run_gen(server: Any, tmp_path: Path, reqs: list[Request], concurrency: int, policy: RetryPolicy = FAST,
            timeout_s: float = 30, on_progress: Any = None) -> Any:
    async def go() -> Any:
        engine = OpenAIEngine(server.base_url, None, timeout_s=timeout_s)
        info = await engine.start()
        try:
            with SampleStore(tmp_path) as store:
                return await generate(engine, reqs, store, concurrency=concurrency, policy=policy,
                                      max_model_len=info.max_model_len, on_progress=on_progress)
        finally:
            await engine.close()

    return asyncio.run(go())


def test_keeps_concurrency_full_without_batches(make_openai_server: Any, tmp_path: Path) -> None:
    # Alternating slow and fast requests: a batch-and-wait client would idle slots behind the slow ones.
    server = make_openai_server(delay_s=lambda body: 0.3 if body["seed"] % 8 == 0 else 0.02)
    stats = run_gen(server, tmp_path, requests(80), concurrency=8)
    assert stats.done == 80 and server.peak_concurrent == 8
    # ideal ≈ (10 slow * 0.3 + 70 fast * 0.02) / 8 ≈ 0.55 s; batches of 8 would take 10 * 0.3 = 3 s
    assert stats.wall_s < 2.0


def test_progress_counts_busy_slots_in_flight(make_openai_server: Any, tmp_path: Path) -> None:
    # Each report comes from a slot that takes its next request at once: with work queued, every
    # slot is busy, so "in flight" reads the concurrency, not one less (nor 0 with one slot).
    server = make_openai_server(delay_s=0.02)
    for concurrency in (1, 4):
        seen: list[tuple[int, int]] = []
        stats = run_gen(server, tmp_path / str(concurrency), requests(20), concurrency=concurrency,
                        on_progress=lambda s: seen.append((s.done, s.in_flight)))
        assert stats.done == 20 and len(seen) == 20
        assert all(f == concurrency for done, f in seen if done <= 20 - concurrency), seen


def test_retries_recover_every_sample_exactly_once(make_openai_server: Any, tmp_path: Path) -> None:
    server = make_openai_server(fault_rates={"http500": 0.2}, fault_seed=1)
    stats = run_gen(server, tmp_path, requests(100), concurrency=16)
    assert stats.done == 100 and stats.failed == 0 and stats.retries > 0
    assert stats.retries == stats.errors
    keys = [(r.task, r.problem_key, r.index) for r in SampleStore(tmp_path).records()]
    assert len(keys) == 100 == len(set(keys))
    assert stats.requests == server.count_requests()


def test_non_retryable_error_is_journaled_as_failed(make_openai_server: Any, tmp_path: Path) -> None:
    server = make_openai_server()
    server.fail_next(1, "context_length")  # a 400 without a usable prompt size is not retried forever
    stats = run_gen(server, tmp_path, requests(5), concurrency=1)
    st = SampleStore(tmp_path).scan()
    assert stats.done + stats.failed == 5
    assert len(st.ok) + len(st.failed) == 5


def test_context_limit_lowers_max_tokens_once(make_openai_server: Any, tmp_path: Path) -> None:
    server = make_openai_server(max_model_len=4096)
    stats = run_gen(server, tmp_path, requests(3, max_tokens=32768), concurrency=1)
    assert stats.done == 3 and stats.failed == 0
    sent = [r.body["max_tokens"] for r in server.requests() if r.body]
    # capped to the context first, then lowered to fit prompt + answer after the server's 400
    assert sent[0] == 4096 and 0 < sent[1] < 4096


def test_server_down_stops_the_run_keeping_finished_samples(make_openai_server: Any, tmp_path: Path) -> None:
    server = make_openai_server()
    reqs = requests(10)

    async def go() -> None:
        engine = OpenAIEngine(server.base_url, None, timeout_s=5)
        await engine.start()
        try:
            with SampleStore(tmp_path) as store:
                await generate(engine, reqs[:4], store, concurrency=2, policy=FAST)
                server.stop()
                await generate(engine, reqs[4:], store, concurrency=2,
                               policy=RetryPolicy(max_retries=2, backoff_base_s=0.01, down_after=3))
        finally:
            await engine.close()

    with pytest.raises(ServerDown, match="stopped answering.*re-run the same command"):
        asyncio.run(go())
    st = SampleStore(tmp_path).scan()
    assert len(st.ok) == 4 and 1 <= len(st.failed) <= 6
