"""reasoneval: evaluate reasoning language models on math and science benchmarks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from .pipeline import EvalConfig, evaluate, evaluate_async, score_run
    from .result import RunConfig, RunResult, load_run

_LAZY = {"evaluate": "pipeline", "evaluate_async": "pipeline", "EvalConfig": "pipeline", "score_run": "pipeline",
         "RunResult": "result", "RunConfig": "result", "load_run": "result"}


def __getattr__(name: str) -> Any:
    # Lazy, so `import reasoneval` stays cheap (grading workers import only what they need).
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)


__all__ = ["__version__", "evaluate", "evaluate_async", "EvalConfig", "score_run", "RunResult", "RunConfig",
           "load_run"]
