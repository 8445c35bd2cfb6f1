"""Engines: one module each, registered by name in ENGINES.

Entries are module paths, imported only when chosen, so an optional engine's heavy dependency
(llama.cpp, vLLM, Ray) is needed only by the users of that engine.
"""

from __future__ import annotations

import importlib

from ..registry import Registry
from .base import Engine, EngineError, EngineInfo, EngineOptions

ENGINES: Registry[str] = Registry("engine")
ENGINES.add("openai", "reasoneval.engines.openai")
ENGINES.add("local", "reasoneval.engines.local")
ENGINES.add("launch", "reasoneval.engines.launch")
ENGINES.add("vllm", "reasoneval.engines.vllm")


def create_engine(kind: str, opts: EngineOptions) -> Engine:
    module = importlib.import_module(ENGINES.get(kind))
    engine: Engine = module.create(opts)
    return engine


__all__ = ["ENGINES", "Engine", "EngineError", "EngineInfo", "EngineOptions", "create_engine"]
