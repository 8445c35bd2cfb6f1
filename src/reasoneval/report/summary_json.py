"""summary.json: the run's result, in the versioned shape `result.RunResult` defines."""

from __future__ import annotations

from reasoneval.results.schema import SUMMARY_FILE, RunResult, write_json_atomic


def write_summary(result: RunResult) -> None:
    write_json_atomic(result.run_dir / SUMMARY_FILE, result.to_json_dict())
