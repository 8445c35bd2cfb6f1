"""summary.json: the run's result, in the versioned shape `result.RunResult` defines."""

from __future__ import annotations

from reasoneval.atomic import atomic_write_json
from reasoneval.results.schema import SUMMARY_FILE, RunResult


def write_summary(result: RunResult) -> None:
    atomic_write_json(result.run_dir / SUMMARY_FILE, result.to_json_dict())
