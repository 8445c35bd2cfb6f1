"""Run llama-cpp-python's OpenAI server: `python -m reasoneval.engines.launch.llamacpp_server [--no-repack] ARGS`.

Why: the server's settings have no switch for llama.cpp's repacked CPU kernels (the model parameter
`use_extra_bufts`, llama.cpp's own `--no-repack`), and those kernels (AMX) crash on some Intel
CPUs (docs/engines.md). With `--no-repack` every model the server loads uses llama.cpp's plain
kernels; otherwise this is `python -m llama_cpp.server ARGS`.

(The tests make a server without `--no-repack` crash as the AMX kernels do: tests/fixtures/local_faults.)
"""

from __future__ import annotations

import runpy
import sys


def disable_repack() -> None:
    """Make every later `llama_cpp.Llama(...)` load its weights without repacking."""
    from llama_cpp import llama_cpp as C

    from reasoneval.engines.local.model import model_params_with_repack

    C.llama_model_default_params = model_params_with_repack(C.llama_model_default_params, False)


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--no-repack"]:
        args = args[1:]
        disable_repack()
    sys.argv = ["llama_cpp.server", *args]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
