"""The `local` engine: LocalEngine, which starts the workers (supervisor.py) and routes requests to them.
Its options are engines/options.py's LocalOptions. See the package docstring."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
import threading
import time
from pathlib import Path
from typing import Any

from reasoneval.engines.base import Capabilities, CommonOptions, EngineError, EngineInfo
from reasoneval.engines.local import kernels
from reasoneval.engines.local.messages import WorkerConfig
from reasoneval.engines.local.model import cpu_flags, file_identity, resolve_model, threads_per_replica
from reasoneval.engines.local.supervisor import KernelsSwitched, StartFailed, Worker
from reasoneval.engines.options import DEFAULT_N_CTX
from reasoneval.engines.options import LocalOptions as Options
from reasoneval.engines.sampling import LLAMACPP_LOCAL_FIELDS, llama_fields
from reasoneval.errors import EngineDown, UserError
from reasoneval.records import Completion, Request

log = logging.getLogger("reasoneval")

# Signals of a crash in native code (not SIGKILL: that is the out-of-memory killer or a person).
_CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGABRT, signal.SIGFPE})

# llama.cpp seeds are uint32 and 0xFFFFFFFF means "random": fold run seeds into [0, 2**32 - 2].
_SEED_MODULUS = 2**32 - 1


# llama.cpp's sampler takes these extra_body keys (engines.local.decoder reads them by name).
CAPABILITIES = Capabilities.of_backend(LLAMACPP_LOCAL_FIELDS)


class LocalEngine:
    """llama.cpp in worker processes, each decoding `parallel` sequences per batch. See the package docstring."""

    name = "local"

    def __init__(self, common: CommonOptions, local: Options) -> None:
        self.common = common
        self.local = local
        self.model_path, self.model_name = resolve_model(common.model, local.model_path)
        # llama.cpp pads the context to a multiple of 256, while llama-cpp-python sizes its token
        # buffer by the requested value: ask for a multiple of 256 so the two agree.
        wanted = local.max_model_len or DEFAULT_N_CTX
        self.n_ctx = max(256, -(-wanted // 256) * 256)
        # Under auto, a machine whose repacked kernels crashed before starts on the plain ones (kernels.py).
        known = kernels.remembered() if local.cpu_repack == "auto" else None
        self.config = WorkerConfig(
            model_path=str(self.model_path),
            n_ctx=self.n_ctx,
            n_threads=local.threads or threads_per_replica(local.replicas),
            parallel=local.parallel,
            cpu_repack=local.cpu_repack == "on" or (local.cpu_repack == "auto" and known is None),
            reuse_prefix=local.reuse_prefix,
            adapt_threads=local.adapt_threads,
        )
        self.fallback: str | None = (f"remembered for this machine since {known.recorded}: {known.reason} "
                                     f"({kernels.cache_path()})") if known is not None else None
        self._switch_lock = threading.Lock()
        # The crash detail of a switch to the plain kernels, for run.log (written once the run's log is open).
        self._switch_detail: str | None = None
        self._switch_logged = False
        self.reuse_fallback: str | None = None
        self._workers: list[Worker] = []
        self._changed: asyncio.Event | None = None
        self.startup_s: float | None = None

    # -- description -----------------------------------------------------------------------------

    def kernels(self) -> str:
        return f"cpu_repack={'on' if self.config.cpu_repack else 'off'}, parallel={self.config.parallel}"

    def hint(self, code: int | None) -> str:
        tips = []
        if self.config.cpu_repack:
            tips.append("try --engine-arg cpu_repack=off (llama.cpp's repacked CPU kernels, e.g. AMX, are the "
                        "usual suspect)")
        if code == -signal.SIGKILL:
            tips.append("a SIGKILL is often the out-of-memory killer: try a smaller n_ctx or parallel, or "
                        "fewer --replicas")
        if not tips:
            tips.append("try --engine-arg parallel=1, or check the model file with another engine "
                        "(--engine launch --server llamacpp)")
        return "; ".join(tips)

    def attach_run(self, run_dir: Path) -> None:
        self._log_switch_detail()

    def _use_plain_kernels(self, reason: str, detail: str) -> None:
        """Serve with llama.cpp's plain kernels from now on (workers restarted from here load them), and remember it
        for this machine. Any thread."""
        with self._switch_lock:
            if not self.config.cpu_repack:
                return
            self.fallback = f"{reason}: {detail}"
            self._switch_detail = f"local engine: {reason}; llama.cpp's plain CPU kernels from now on: {detail}"
            self.config = dataclasses.replace(self.config, cpu_repack=False)
        kernels.remember_plain(reason, detail)

    def _log_switch(self) -> None:
        """The one plain line a switch to the plain kernels gets on the terminal (the run's task: run.log has it too)."""
        if self._switch_logged or self._switch_detail is None:
            return
        self._switch_logged = True
        log.warning("local engine: %s (cpu_repack=off; remembered for this machine in %s, `reasoneval doctor` has "
                    "the detail)", kernels.UNSTABLE.format(what=kernels.repacked_kind()), kernels.cache_path())
        self._log_switch_detail()

    def _log_switch_detail(self) -> None:
        if self._switch_detail is not None:
            log.info("%s", self._switch_detail, extra={"run_log_only": True})

    def worker_crashed(self, code: int | None, repacked: bool, message: str) -> bool:
        """supervisor.WorkerHost: a worker died while generating (its reader thread, before the restart). A crash on
        the repacked kernels under cpu_repack=auto switches to the plain ones: True, and the requests it held are
        generated again (generate). A self-test that passed is no proof: AMX kernels crash later too."""
        if not (repacked and self.local.cpu_repack == "auto" and code is not None and code < 0
                and -code in _CRASH_SIGNALS):
            return False
        self._use_plain_kernels("a worker crashed while generating with cpu_repack=on", message)
        return True

    def describe(self) -> dict[str, Any]:
        """The configuration that serves this run (for config.json): kernels, batching, threads."""
        try:
            from importlib.metadata import version

            llama_version: str | None = version("llama_cpp_python")
        except Exception:
            llama_version = None
        flags = cpu_flags()
        return {
            "engine": "local",
            "model_path": str(self.model_path),
            "replicas": self.local.replicas,
            "parallel": self.config.parallel,
            "exact_single_sequence": self.config.parallel == 1,
            "reuse_prefix": self.config.reuse_prefix,
            "reuse_prefix_requested": self.local.reuse_prefix,
            "reuse_prefix_fallback": self.reuse_fallback,
            "n_ctx": self.n_ctx,
            "n_threads": self.config.n_threads,
            "adapt_threads": self.config.adapt_threads,
            "cpu_repack": "on" if self.config.cpu_repack else "off",
            "cpu_repack_requested": self.local.cpu_repack,
            "cpu_repack_fallback": self.fallback,
            "llama_cpp_python": llama_version,
            "cpu_amx": bool(flags & {"amx_tile", "amx_int8", "amx_bf16"}),
            "cpu_avx512": "avx512f" in flags,
        }

    # -- lifecycle -------------------------------------------------------------------------------

    async def _spawn_all(self) -> None:
        loop = asyncio.get_running_loop()
        workers = [Worker(self, i, self.local.startup_timeout) for i in range(self.local.replicas)]
        self._workers = workers
        results = await asyncio.gather(*(loop.run_in_executor(None, w.spawn) for w in workers),
                                        return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await asyncio.gather(*(loop.run_in_executor(None, w.kill) for w in workers), return_exceptions=True)
            self._workers = []
            crash = next((e for e in errors if isinstance(e, StartFailed) and e.crash), None)
            raise crash or errors[0]

    async def start(self) -> EngineInfo:
        t0 = time.perf_counter()
        loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        identity_fut = loop.run_in_executor(None, file_identity, self.model_path)
        try:
            try:
                await self._spawn_all()
            except StartFailed as e:
                if not (e.crash and self.local.cpu_repack == "auto" and self.config.cpu_repack):
                    raise
                # The repacked kernels crashed the self-test (llama.cpp's AMX kernels do on some Intel
                # CPUs): serve with the plain ones, remembered for this machine. One plain line; the crash's
                # detail in run.log, describe() and `reasoneval doctor`.
                self._use_plain_kernels("the self-test with cpu_repack=on crashed", str(e))
                self._log_switch()
                await self._spawn_all()
            identity = await identity_fut
        except StartFailed as e:
            await self.close()
            if e.crash:
                raise EngineDown(f"{e}; {self.hint(None)}") from None
            raise UserError(str(e)) from None
        except BaseException:
            await self.close()
            raise
        if self.config.reuse_prefix and not all(w.reuse_prefix for w in self._workers):
            self.reuse_fallback = ("the self-test found that a prompt evaluated in other chunks than llama.cpp's "
                                   "gives different logits on this machine")
            log.warning("local engine: %s, so prompt-prefix reuse would change samples: it is off for this run "
                        "(docs/engines.md)", self.reuse_fallback)
            self.config = dataclasses.replace(self.config, reuse_prefix=False)
        for w in self._workers:
            w.start_reader(loop)
        self.startup_s = time.perf_counter() - t0
        return EngineInfo(model=self.model_name, model_identity=identity, max_model_len=self.n_ctx,
                          max_concurrency=self.local.replicas * self.config.parallel)

    def worker_changed(self) -> None:
        """supervisor.WorkerHost: a worker replied, lost a request, died, restarted or broke (on the event loop)."""
        if self._changed is not None:
            self._changed.set()

    async def _pick(self) -> Worker:
        """The live worker with the fewest requests in flight and a free sequence slot."""
        while True:
            if self._changed is None or not self._workers:
                raise EngineError("local engine is closed", retryable=False, fatal=True)
            live = [w for w in self._workers if w.alive and w.load < self.config.parallel]
            if live:
                return min(live, key=lambda w: w.load)
            broken = [w.broken for w in self._workers if w.broken is not None]
            if len(broken) == len(self._workers):
                raise EngineError(str(broken[0]), retryable=False, fatal=True, engine_failure=True)
            self._changed.clear()
            await self._changed.wait()

    async def generate(self, request: Request) -> Completion:
        if self._changed is None:
            raise EngineError("local engine is not started (or already closed)", retryable=False,
                              fatal=True)
        if (request.messages is None) == (request.prompt is None):
            raise EngineError("request must have exactly one of messages or prompt", retryable=False)
        job = {
            "params": llama_fields(request.params),
            "seed": request.seed % _SEED_MODULUS,
            "messages": [dict(m) for m in request.messages] if request.messages is not None else None,
            "prompt": request.prompt,
        }
        t0 = time.perf_counter()
        while True:
            worker = await self._pick()
            job_id, fut = worker.submit(job)
            try:
                done, _ = await asyncio.wait({fut}, timeout=self.common.timeout_s)
            except BaseException:  # cancelled: drop the sequence in the worker, free its slot
                worker.cancel(job_id)
                raise
            if not done:
                worker.cancel(job_id)
                if time.monotonic() - worker.last_reply > self.common.timeout_s and worker.proc is not None:
                    # Nothing at all from the worker for a whole timeout: it hangs. Kill it; the reader
                    # thread restarts it and fails the other requests it held.
                    worker.proc.kill()
                raise EngineError(f"local engine request timed out after {self.common.timeout_s:.0f} s (--timeout)",
                                  retryable=True)
            try:
                status, payload = fut.result()
            except KernelsSwitched:
                # Its worker crashed on the repacked kernels and restarts on the plain ones: generate it again
                # there (same seed, so the same sample the plain kernels give). Not a failure of the run.
                self._log_switch()
                continue
            break
        if status != "ok":
            if "exceed context window" in payload:
                raise EngineError(f"prompt too long for the local model: {payload}", retryable=False,
                                  context_limit=self.n_ctx)
            raise EngineError(f"local engine: {payload}", retryable=False)
        return Completion(
            text=payload["text"],
            finish_reason=payload["finish_reason"],
            prompt_tokens=payload["prompt_tokens"],
            completion_tokens=payload["completion_tokens"],
            latency_s=time.perf_counter() - t0,
        )

    async def close(self) -> None:
        workers, self._workers = self._workers, []
        for w in workers:
            w.closed = True
            for fut in w.pending.values():
                if not fut.done():
                    fut.set_exception(EngineError("local engine was closed during the request",
                                                  retryable=False, fatal=True))
            w.pending = {}
        self.worker_changed()
        self._changed = None
        if workers:
            loop = asyncio.get_running_loop()
            await asyncio.gather(*(loop.run_in_executor(None, w.kill, 2.0) for w in workers),
                                 return_exceptions=True)

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (for diagnostics and tests)."""
        return [w.proc.pid for w in self._workers if w.alive and w.proc is not None]


def create(common: CommonOptions, options: Options) -> LocalEngine:
    return LocalEngine(common, options)
