"""`launch`: reasoneval starts a vLLM, SGLang or llama.cpp server, evaluates through it, stops it.

Modules: `engine` (the server's command line and `LaunchEngine`; its options are `engines.options.LaunchOptions`),
`process` (the server process: its process group and log),
`llamacpp_server` (llama-cpp-python's server with a switch for llama.cpp's repacked CPU kernels:
`python -m reasoneval.engines.launch.llamacpp_server [--no-repack] ARGS`) and `vllm_cli` (vLLM's CLI where its
own `vllm` script cannot start: `python -m reasoneval.engines.launch.vllm_cli serve MODEL ...`).
"""

from reasoneval.engines.launch.engine import (
    CAPABILITIES,
    HOST,
    LLAMACPP_SERVER,
    VLLM_CLI,
    LaunchEngine,
    ServerPlan,
    build_plan,
    configured_capabilities,
    create,
    free_port,
    vllm_command,
)
from reasoneval.engines.launch.process import ServerProcess, log_tail
from reasoneval.engines.options import SERVERS
from reasoneval.engines.options import LaunchOptions as Options

__all__ = [
    "CAPABILITIES", "HOST", "LLAMACPP_SERVER", "SERVERS", "VLLM_CLI", "LaunchEngine", "Options", "ServerPlan",
    "ServerProcess", "build_plan", "configured_capabilities", "create", "free_port", "log_tail", "vllm_command",
]
