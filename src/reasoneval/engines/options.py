"""Every built-in engine's `Options`: the dataclasses its `--engine-arg KEY=VALUE` settings and its flags (`run --help`)
come from, in one light module, so the command line is built without importing an engine (asyncio, the local
engine's workers, the launched servers' process code). Each engine module names its class `Options`, as a plugin
engine's module defines its own (engines/__init__.py); `BUILT_IN` maps the built-in engines' names to theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

from reasoneval.engines import ENGINES
from reasoneval.engines.base import check_least, option
from reasoneval.errors import UserError

# The local engine: sequences a worker decodes together by default (see docs/engines.md for the measurements).
DEFAULT_PARALLEL = 16
# llama.cpp's limit on sequences in one context (llama_max_parallel_sequences()).
MAX_PARALLEL = 256
# The embedded model's context length when --max-model-len is not given.
DEFAULT_N_CTX = 4096
# llama.cpp's repacked CPU kernels: the local engine's and a launched llama.cpp server's setting.
REPACK_MODES = ("auto", "on", "off")
# The servers the launch engine starts.
SERVERS = ("vllm", "sglang", "llamacpp")


@dataclass(frozen=True)
class OpenAIOptions:
    """The openai engine takes only the common flags (--model, --base-url, --api, --timeout, ...)."""


@dataclass(frozen=True)
class LocalOptions:
    """The local engine's own options (`--engine-arg KEY=VALUE`; those with a flag are also CLI flags)."""

    model_path: str | None = option(None, "GGUF file to run (default: the embedded SmolLM2-135M-Instruct Q4_1)",
                                    flag=True)
    replicas: int = option(1, "worker processes; the CPU cores are split between them", flag=True, least=1)
    max_model_len: int | None = option(None, f"context length of each sequence in tokens (default {DEFAULT_N_CTX})",
                                       flag=True)
    parallel: int = option(DEFAULT_PARALLEL, "sequences each worker decodes together in one batch; "
                           "1 = exact one-sequence mode")
    cpu_repack: str = option("auto", "llama.cpp's repacked CPU kernels (AMX, AVX repack): auto = on until they "
                             "crash once on this machine (then off, remembered: docs/engines.md), on, off")
    threads: int | None = option(None, "llama.cpp threads per worker (default: CPU cores // replicas)", least=1)
    adapt_threads: bool = option(True, "measure tokens/s while decoding and use the best of threads, threads/2, ..., "
                                 "1 (a busy machine starves llama.cpp's spinning threads: docs/engines.md); "
                                 "false = always `threads`")
    reuse_prefix: bool = option(True, "keep a finished sequence's prompt KV cells so the next request in its slot "
                                "evaluates only the part of its prompt they do not share (faster, same samples: "
                                "docs/engines.md); false evaluates every prompt whole")
    startup_timeout: float = option(600.0, "seconds to wait for a worker to load the model and pass its self-test")

    def __post_init__(self) -> None:
        check_least(self, "local")
        if not 1 <= self.parallel <= MAX_PARALLEL:
            raise UserError(f"local engine option parallel must be in 1..{MAX_PARALLEL}, got {self.parallel}")
        if self.cpu_repack not in REPACK_MODES:
            raise UserError(f"local engine option cpu_repack must be one of {', '.join(REPACK_MODES)}, "
                            f"got {self.cpu_repack!r}")


@dataclass(frozen=True)
class LaunchOptions:
    server: str = option("vllm", f"the server to start: {', '.join(SERVERS)}", flag=True)
    port: int | None = option(None, "its port (default: a free one)", flag=True)
    model_path: str | None = option(None, "llamacpp: a GGUF file (default: the embedded SmolLM2-135M); vllm, sglang: "
                                    "a Hugging Face checkpoint folder (served as --model, default the folder's name)",
                                    flag=True)
    tensor_parallel_size: int = option(1, "GPUs per model (tensor parallel)", flag=True)
    data_parallel_size: int = option(1, "model replicas (data parallel)", flag=True)
    max_model_len: int | None = option(None, "context length (prompt + answer)", flag=True)
    dtype: str | None = option(None, "weights dtype (auto, bfloat16, float16, ...)", flag=True)
    gpu_memory_utilization: float | None = option(None, "share of GPU memory for weights + KV cache", flag=True)
    enable_prefix_caching: bool = option(False, "vllm: share KV cache between requests with a common prefix",
                                         flag=True)
    cpu_repack: str = option("auto", "llamacpp: llama.cpp's repacked CPU kernels (AMX, AVX repack): auto = on unless "
                             "the server crashes on a 2-token self-test (some Intel CPUs with AMX), then off; on; off")
    server_args: tuple[str, ...] = option((), "extra arguments for the server command", flag="--server-arg")
    startup_timeout: float = option(1800.0, "seconds to wait for the server to answer")

    def __post_init__(self) -> None:
        if self.server not in SERVERS:
            raise UserError(f"unknown --server {self.server!r}; choose one of {', '.join(SERVERS)}")
        if self.tensor_parallel_size < 1 or self.data_parallel_size < 1:
            raise UserError("--tensor-parallel-size and --data-parallel-size must be at least 1")
        if self.cpu_repack not in REPACK_MODES:
            raise UserError(f"launch option cpu_repack must be one of {', '.join(REPACK_MODES)}, "
                            f"got {self.cpu_repack!r}")
        if self.cpu_repack == "off" and self.server != "llamacpp":
            raise UserError("launch option cpu_repack is for --server llamacpp (llama.cpp's CPU kernels)")


@dataclass(frozen=True)
class VLLMOptions:
    model_path: str | None = option(None, "a model folder or Hub id (default: --model, else the embedded "
                                    "SmolLM2-135M converted to safetensors)", flag=True)
    tensor_parallel_size: int = option(1, "GPUs per model (tensor parallel)", flag=True, least=1)
    data_parallel_size: int = option(1, "model replicas (data parallel)", flag=True, least=1)
    max_model_len: int | None = option(None, "context length (prompt + answer)", flag=True, least=1)
    dtype: str | None = option(None, "weights dtype (auto, bfloat16, float16, ...)", flag=True)
    gpu_memory_utilization: float | None = option(None, "share of GPU memory for weights + KV cache", flag=True)
    enable_prefix_caching: bool = option(False, "share KV cache between requests with a common prefix", flag=True)
    server_args: tuple[str, ...] = option((), "extra vLLM engine arguments as `vllm serve` flags "
                                          "(e.g. --enforce-eager)", flag="--server-arg")

    def __post_init__(self) -> None:
        check_least(self, "vllm")
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            raise UserError(f"--gpu-memory-utilization must be in (0, 1], got {self.gpu_memory_utilization}")


@dataclass(frozen=True)
class RayOptions:
    """The Ray engine's options (`--engine-arg KEY=VALUE`; those with a flag are also CLI flags)."""

    replicas: int = option(1, "engine replicas (Ray actors)", flag=True, least=1)
    gpus_per_replica: int = option(1, "GPUs per replica (vLLM tensor parallel size); ignored on a cluster "
                                   "without GPUs", flag=True, least=0)
    ray_address: str | None = option(None, "Ray cluster to join (`auto`: the running one; default: start a "
                                     "local one for this run)", flag=True)
    inner: str = option("auto", "engine inside each replica: auto = vllm where the replica has GPUs, else local; "
                        "or any registered engine but ray (`reasoneval engines`), e.g. echo")
    inner_args: tuple[str, ...] = option((), "options of the inner engine as KEY=VALUE words, e.g. "
                                         "'threads=1 parallel=2'")
    slots_per_replica: int | None = option(None, "requests in flight per replica (default: what the inner engine "
                                           "serves at once, at most --concurrency / replicas)", least=1)
    cpus_per_replica: float = option(1.0, "CPUs Ray reserves for each replica")
    max_restarts: int = option(2, "times Ray restarts a replica that died before it is given up", least=0)
    startup_timeout: float = option(900.0, "seconds to wait for every replica to start its engine")
    num_cpus: int | None = option(None, "CPUs a locally started cluster declares (default: detected)")
    num_gpus: int | None = option(None, "GPUs a locally started cluster declares (default: detected)")
    object_store_mb: int = option(100, "object store of a locally started cluster, MB")

    def __post_init__(self) -> None:
        check_least(self, "ray")
        if self.inner != "auto" and (self.inner == "ray" or self.inner not in ENGINES):
            known = ", ".join(n for n in ENGINES.names() if n != "ray")
            raise UserError(f"engine option inner={self.inner!r} of the ray engine is not valid (choose auto or a "
                            f"registered engine other than ray: {known})")


@dataclass(frozen=True)
class EchoOptions:
    """The echo engine's options (`--engine-arg KEY=VALUE`)."""

    text: str = option("The answer is \\boxed{0}.", "the answer every request gets")
    delay_s: float = option(0.0, "seconds each request takes (0: none)", least=0)
    slots: int = option(64, "requests served at once (more wait their turn)", least=1)

    def __post_init__(self) -> None:
        check_least(self, "echo")


BUILT_IN: dict[str, type] = {"openai": OpenAIOptions, "local": LocalOptions, "launch": LaunchOptions,
                             "vllm": VLLMOptions, "ray": RayOptions, "echo": EchoOptions}
