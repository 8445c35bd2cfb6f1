"""summary.json: the run's result, in the versioned shape `result.RunResult` defines."""

from __future__ import annotations

from reasoneval.atomic import FileSet, atomic_write_json
from reasoneval.results.schema import RunResult
from reasoneval.run_files import SUMMARY_FILE


def write_summary(result: RunResult, files: FileSet | None = None) -> None:
    """summary.json in the result's folder (the run directory, or its view's), now or at `files`' commit."""
    path = result.files_dir / SUMMARY_FILE
    if files is not None:
        files.write_json(path, result.to_json_dict())
    else:
        atomic_write_json(path, result.to_json_dict())
