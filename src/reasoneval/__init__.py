"""reasoneval: evaluate reasoning language models on math and science benchmarks."""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pipeline import EvalConfig, evaluate, report_run
    from .report import Summary


def __getattr__(name: str) -> Any:
    # Lazy, so `import reasoneval` stays cheap (grading workers import only what they need).
    if name in ("evaluate", "EvalConfig", "report_run"):
        from . import pipeline as _pipeline

        return getattr(_pipeline, name)
    if name == "Summary":
        from .report import Summary

        return Summary
    raise AttributeError(name)


__all__ = ["__version__", "evaluate", "EvalConfig", "report_run", "Summary"]
