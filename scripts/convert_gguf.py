#!/usr/bin/env python
"""Convert a GGUF model to a safetensors folder that vLLM (including its CPU build) can load.

    python scripts/convert_gguf.py                      # the embedded SmolLM2-135M-Instruct, cached
    python scripts/convert_gguf.py model.gguf [-o DIR] [--dtype bfloat16]

Prints the folder. Needs transformers, gguf, accelerate and torch (`pip install
'reasoneval[convert]'`). Without -o the folder is cached under ~/.cache/reasoneval/models and reused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from reasoneval.engines.gguf_convert import convert_gguf
from reasoneval.engines.local import default_model_path
from reasoneval.errors import UserError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("gguf", nargs="?", help="GGUF file (default: the embedded SmolLM2-135M-Instruct)")
    p.add_argument("-o", "--output", help="output folder (default: the reasoneval model cache)")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    a = p.parse_args(argv)
    try:
        src = Path(a.gguf) if a.gguf else default_model_path()
        print(convert_gguf(src, a.output, dtype=a.dtype))
    except UserError as e:
        print(f"convert_gguf: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
