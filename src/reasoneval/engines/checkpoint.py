"""A Hugging Face checkpoint folder as a model (`--model-path DIR` with the vllm and launch engines).

`check_checkpoint(dir)` stops a run at start, with one line, on the layouts that otherwise fail deep
inside the server (or, worse, load the wrong weights): no config.json, an unreadable config, no weight
files, an index (`model.safetensors.index.json`) naming shards that are not in the folder (typically a
single `model.safetensors` next to a stale index naming `model-00001-of-00001.safetensors`), and no
tokenizer.

`checkpoint_identity(dir)` is the model identity that goes into the run id (docs/lm-eval.md,
"Checkpoints"): a SHA-256 over
  - the bytes of every small file (config.json, generation_config.json, the tokenizer files, the
    weight index; anything under 64 MiB that is not a weight file), by name;
  - for every weight file (*.safetensors, *.bin, *.pt, *.pth): its name, size, modification time
    (ns), and the bytes of its first and last MiB (the safetensors header and tensor data).
So a checkpoint saved again under the same path (new weights, or the same weights written anew) gets
a new run instead of reusing the old one's samples; the same folder read twice gets the same run. A
copy with new modification times also starts a new run: the identity errs on the side of never
mixing two checkpoints' samples. Reading ~2 MiB per shard keeps it fast on multi-GB checkpoints.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from reasoneval.errors import UserError

# Weight files of a checkpoint folder (Hugging Face safetensors / PyTorch; a GGUF export for llama.cpp):
# what `watch` waits for before a folder counts as a checkpoint, and what the identity samples.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
# Any one of these makes a tokenizer transformers / vLLM can load.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "spiece.model", "tokenizer.tiktoken")
SMALL_FILE = 64 << 20
SAMPLE = 1 << 20


def _weights(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)


def check_checkpoint(folder: Path) -> None:
    """One-line UserError for a folder that is not a loadable Hugging Face checkpoint."""
    where = f"checkpoint folder {str(folder)!r}"
    if not folder.is_dir():
        raise UserError(f"{where} does not exist or is not a folder: pass a folder with config.json, "
                        "*.safetensors weights and tokenizer files")
    config = folder / "config.json"
    if not config.is_file():
        raise UserError(f"{where} has no config.json: pass the folder save_pretrained() wrote (not a parent "
                        "or a sub-folder), or copy the base model's config.json in")
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise UserError(f"{where}: config.json cannot be read as JSON ({e}); re-save the checkpoint") from None
    weights = _weights(folder)
    if not weights:
        raise UserError(f"{where} has no weight files (*.safetensors or *.bin): the save did not finish, or the "
                        "weights are in a sub-folder")
    for name in INDEX_FILES:
        index = folder / name
        if not index.is_file():
            continue
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            shards = sorted(set(weight_map.values()))
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise UserError(f"{where}: {name} is not a valid weight index ({e!r}); delete it or re-save") from None
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            have = ", ".join(p.name for p in weights)
            raise UserError(f"{where}: {name} names shard(s) {', '.join(missing[:3])}"
                            f"{' ...' if len(missing) > 3 else ''} that are not in the folder (it has: {have}); "
                            "delete the stale index if the weights are one file, or copy the missing shards")
    if not any((folder / t).is_file() for t in TOKENIZER_FILES):
        raise UserError(f"{where} has no tokenizer (none of {', '.join(TOKENIZER_FILES)}): copy the base model's "
                        "tokenizer files in (tokenizer.save_pretrained(DIR))")


def checkpoint_identity(folder: Path) -> str:
    """Content identity of a checkpoint folder (see the module docstring); "hf-checkpoint:<sha256>"."""
    h = hashlib.sha256()
    for p in sorted(folder.iterdir()):
        if not p.is_file():
            continue
        st = p.stat()
        h.update(p.name.encode() + b"\0")
        if p.suffix in WEIGHT_SUFFIXES:
            h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
            with p.open("rb") as f:
                h.update(f.read(SAMPLE))
                if st.st_size > 2 * SAMPLE:
                    f.seek(st.st_size - SAMPLE)
                    h.update(f.read())
        elif st.st_size <= SMALL_FILE:
            h.update(p.read_bytes())
        else:
            h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
        h.update(b"\0")
    return "hf-checkpoint:" + h.hexdigest()
