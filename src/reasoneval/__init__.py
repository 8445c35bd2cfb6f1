"""reasoneval: evaluate reasoning language models on math and science benchmarks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reasoneval.version import __version__

if TYPE_CHECKING:
    from reasoneval.results.schema import RunConfig, RunResult, load_run
    from reasoneval.run.options import EvalConfig
    from reasoneval.run.pipeline import evaluate, evaluate_async
    from reasoneval.run.score import score_run

_LAZY = {"evaluate": "run.pipeline", "evaluate_async": "run.pipeline", "EvalConfig": "run.options",
         "score_run": "run.score", "RunResult": "results.schema", "RunConfig": "results.schema",
         "load_run": "results.schema"}


def __getattr__(name: str) -> Any:
    # Lazy, so `import reasoneval` stays cheap (grading workers import only what they need).
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)


__all__ = ["__version__", "evaluate", "evaluate_async", "EvalConfig", "score_run", "RunResult", "RunConfig",
           "load_run"]
