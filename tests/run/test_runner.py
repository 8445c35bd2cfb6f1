"""The generation loop against a real loopback server: concurrency kept full, retries, failures."""

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from reasoneval.engines.base import EngineError, EngineInfo
from reasoneval.engines.openai import OpenAIEngine
from reasoneval.errors import EngineDown, UserError
from reasoneval.records import Completion, Request, SamplingParams
from reasoneval.results.store import SampleStore
from reasoneval.run.retry import RetryPolicy
from reasoneval.run.runner import ServerDown, generate

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
                        on_progress=lambda s, seen=seen: seen.append((s.done, s.in_flight)))
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


def test_a_prompt_longer_than_the_context_fails_only_its_samples(make_openai_server: Any, tmp_path: Path) -> None:
    server = make_openai_server(max_model_len=12)  # "problem 3" and its role markers: 6 tokens; longer ones do not fit
    reqs = requests(10)
    for i in (2, 7):  # problem 2: a prompt of 40 words
        reqs[i] = Request(task="t", problem_key="k2", problem_id="p2", index=i // 5, seed=i, params=SamplingParams(max_tokens=4),
                          messages=({"role": "user", "content": "problem 2 " + "word " * 40},))
    stats = run_gen(server, tmp_path, reqs, concurrency=1)
    st = SampleStore(tmp_path).scan()
    assert stats.done == 8 and stats.failed == 2 and {k[1] for k in st.failed} == {"k2"}


def test_a_refusal_no_retry_fixes_stops_at_the_first_response(make_openai_server: Any, tmp_path: Path) -> None:
    """A 400 the server will give every request (OpenAI's "max_tokens is too large"): one line with the server's
    message and what to change, after one request, not one warning per sample."""
    server = make_openai_server(fault_rates={"max_tokens_too_large": 1.0})
    with pytest.raises(UserError) as e:
        run_gen(server, tmp_path, requests(20, max_tokens=32768), concurrency=1)
    assert str(e.value).startswith("the server refused t/p0 sample 0, max_tokens 32768: HTTP 400: max_tokens is too "
                                   "large: 32768. This model supports at most 4096 completion tokens")
    assert "lower --max-tokens" in str(e.value) and "\n" not in str(e.value)
    assert server.count_requests() == 1 and not SampleStore(tmp_path).scan().failed


BREAKER = RetryPolicy(max_retries=8, backoff_base_s=0.05, backoff_cap_s=0.1, breaker_after=5, breaker_window_s=0.5,
                      breaker_burst=1000)


def test_the_breaker_stops_a_server_that_answers_every_request_with_an_error(make_openai_server: Any,
                                                                             tmp_path: Path) -> None:
    server = make_openai_server(fault_rates={"http500": 1.0})
    t0 = time.monotonic()
    with pytest.raises(EngineDown) as e:
        run_gen(server, tmp_path, requests(50), concurrency=4, policy=BREAKER)
    assert time.monotonic() - t0 < 3  # the window (0.5 s), not 50 samples x 9 attempts
    assert "answered" in str(e.value) and "HTTP 500: Internal server error (injected fault)" in str(e.value)
    assert "(the last was t/p" in str(e.value) and server.count_requests() < 60


def test_the_breaker_waits_while_the_server_holds_requests(make_openai_server: Any, tmp_path: Path) -> None:
    """Most requests fail at once and keep failing past the breaker's window, but the ones the server takes are
    answered after longer than that: the server is generating, so the run goes on and completes."""
    server = make_openai_server(delay_s=2.0)
    server.fail_next(30, "http500", contains="problem 1")  # ~1.5 s of failures, past the window, while 4 are held
    policy = RetryPolicy(max_retries=60, backoff_base_s=0.05, backoff_cap_s=0.05, breaker_after=3, breaker_window_s=0.5,
                         breaker_burst=1000)
    stats = run_gen(server, tmp_path, requests(5), concurrency=5, policy=policy)
    assert stats.done == 5 and stats.failed == 0 and stats.errors == 30


def test_a_burst_of_failures_on_every_slot_trips_the_breaker_at_once(make_openai_server: Any, tmp_path: Path) -> None:
    server = make_openai_server(fault_rates={"http500": 1.0})
    policy = RetryPolicy(max_retries=0, backoff_base_s=0.01, breaker_after=5, breaker_window_s=60, breaker_burst=4)
    with pytest.raises(EngineDown, match="answered 12 requests in a row with an error"):  # 4 + 2 x concurrency
        run_gen(server, tmp_path, requests(200), concurrency=4, policy=policy)
    assert server.count_requests() < 30


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


# ------------------------------------------------------------------ engine failures (a fake engine)


class FlakyEngine:
    """Serves `healthy` requests, then fails every request as a dead engine would: each call one
    new incident, or all calls of one "batch" the same incident."""

    name = "flaky"

    def __init__(self, healthy: int, *, delay_s: float = 0.01, same_incident: bool = False,
                 hang_after: int | None = None, fatal: bool = False) -> None:
        self.healthy = healthy
        self.delay_s = delay_s
        self.same_incident = same_incident
        self.fatal = fatal
        self.calls = 0
        self.served = 0
        self.cancelled = 0

    async def start(self) -> EngineInfo:
        return EngineInfo(model="flaky")

    async def generate(self, request: Request) -> Completion:
        self.calls += 1
        call = self.calls
        try:
            await asyncio.sleep(self.delay_s)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        if self.served < self.healthy:
            self.served += 1
            return Completion(text="ok", finish_reason="stop", prompt_tokens=3, completion_tokens=1, latency_s=0.01)
        err = EngineError(f"the worker (pid {1000 + call}) was killed by SIGSEGV while generating; last lines of "
                          "its stderr: Fatal Python error: Segmentation fault | simulated; try cpu_repack=off",
                          retryable=not self.fatal, fatal=self.fatal, engine_failure=True)
        err.incident = "one" if self.same_incident else f"death-{call}"  # type: ignore[attr-defined]
        raise err

    async def close(self) -> None:
        pass


def run_engine(engine: Any, tmp_path: Path, reqs: list[Request], concurrency: int,
               policy: RetryPolicy = FAST) -> Any:
    async def go() -> Any:
        with SampleStore(tmp_path) as store:
            return await generate(engine, reqs, store, concurrency=concurrency, policy=policy)

    return asyncio.run(go())


def test_a_dead_engine_stops_the_run_fast_with_exit_status_4_keeping_finished_samples(tmp_path: Path) -> None:
    engine = FlakyEngine(healthy=5)
    t0 = time.monotonic()
    with pytest.raises(EngineDown) as e:
        run_engine(engine, tmp_path, requests(40), concurrency=1)
    assert time.monotonic() - t0 < 5
    msg = str(e.value)
    assert e.value.exit_code == 4 and "\n" not in msg
    assert "3 times in a row" in msg and "killed by SIGSEGV" in msg and "Segmentation fault" in msg
    assert "cpu_repack=off" in msg and "re-run the same command" in msg
    # 3 failed attempts, not 7 attempts of every remaining sample.
    assert engine.calls == 5 + 3
    st = SampleStore(tmp_path).scan()
    assert len(st.ok) == 5 and not st.failed  # the sample in flight is not journaled as failed


def test_requests_in_flight_at_the_stop_are_cancelled_not_journaled(tmp_path: Path) -> None:
    engine = FlakyEngine(healthy=8, delay_s=0.05)
    with pytest.raises(EngineDown):
        run_engine(engine, tmp_path, requests(60), concurrency=8)
    st = SampleStore(tmp_path).scan()
    assert len(st.ok) == 8 and not st.failed
    assert engine.cancelled > 0  # the others were stopped, not left to fail one by one


def test_one_death_that_fails_a_whole_batch_counts_once(tmp_path: Path) -> None:
    # 8 requests in flight all fail with one incident (one worker death), then the engine recovers.
    class OneDeath(FlakyEngine):
        async def generate(self, request: Request) -> Completion:
            if self.calls >= 16:
                self.healthy = 10**9
            return await super().generate(request)

    engine = OneDeath(healthy=8, same_incident=True)
    stats = run_engine(engine, tmp_path, requests(30), concurrency=8)
    assert stats.done == 30 and stats.failed == 0


def test_a_finished_sample_resets_the_count(tmp_path: Path) -> None:
    class Alternating(FlakyEngine):
        async def generate(self, request: Request) -> Completion:
            self.healthy = self.served + (self.calls % 3 == 0)  # two failures, then one success
            return await super().generate(request)

    engine = Alternating(healthy=0)
    stats = run_engine(engine, tmp_path, requests(10), concurrency=1)
    assert stats.done == 10 and stats.failed == 0 and stats.retries >= 10  # 2 failures before most samples


def test_a_fatal_engine_failure_stops_at_once_and_a_rerun_resumes(tmp_path: Path) -> None:
    reqs = requests(20)
    with pytest.raises(EngineDown, match="cannot serve"):
        run_engine(FlakyEngine(healthy=6, fatal=True), tmp_path, reqs, concurrency=2)
    done = SampleStore(tmp_path).scan().ok
    assert len(done) == 6
    missing = [r for r in reqs if (r.task, r.problem_key, r.index) not in done]
    stats = run_engine(FlakyEngine(healthy=100), tmp_path, missing, concurrency=2)
    assert stats.done == 14
    st = SampleStore(tmp_path).scan()
    assert len(st.ok) == 20 and not st.failed
