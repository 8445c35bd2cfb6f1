"""A battery's table for many checkpoints: one column per checkpoint (Markdown, the baseline layout) and one CSV
row per checkpoint (a column per row of the table, `<task>/<setting>/<metric>` and its `_stderr`).

Checkpoints are keyed by the name they were given (a sweep's job name, or the model's full path), never by a
folder's last part alone: two training runs' `checkpoint-100` stay two columns.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Sequence

from reasoneval.atomic import FileSet
from reasoneval.run.battery import Battery, RowFigure, metric_name

MatrixColumn = tuple[str, "int | None", Sequence[RowFigure]]  # a checkpoint: (name, training step, the battery's figures)


def _ordered(checkpoints: Sequence[MatrixColumn]) -> list[MatrixColumn]:
    return sorted(checkpoints, key=lambda c: (c[1] is None, c[1] if c[1] is not None else 0, c[0]))


def matrix_markdown(battery: Battery, checkpoints: Sequence[MatrixColumn]) -> str:
    """Rows of the battery (task, setting, metric), one column per checkpoint: "value ± SE" (fractions)."""
    from reasoneval.report.text import markdown_table

    ordered = _ordered(checkpoints)
    head = ["task", "setting", "metric", *[name if step is None else f"{name} (step {step})" for name, step, _ in ordered]]
    cells = []
    for i, row in enumerate(battery.rows):
        line = [row.task if row.subject is None else f" - {row.task}", row.setting, row.metric]
        for _, _, figures in ordered:
            f = figures[i]
            line.append("" if f.value is None else f"{f.value:.4f}" + ("" if f.stderr is None else f" ± {f.stderr:.4f}"))
        cells.append(line)
    return markdown_table(head, cells, left=3)


def matrix_csv(battery: Battery, checkpoints: Sequence[MatrixColumn]) -> str:
    """One row per checkpoint (by step): checkpoint, step, then each row's value and `_stderr`, full precision."""
    columns = ["checkpoint", "step"]
    for row in battery.rows:
        columns += [metric_name(row), metric_name(row) + "_stderr"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for name, step, figures in _ordered(checkpoints):
        line: list[Any] = [name, "" if step is None else step]
        for f in figures:
            line += ["" if f.value is None else f.value, "" if f.stderr is None else f.stderr]
        writer.writerow(line)
    return out.getvalue()


def write_matrix(base: Path, battery: Battery, checkpoints: Sequence[MatrixColumn], files: FileSet) -> tuple[Path, Path]:
    """`<base>.<battery>.csv` and `.md` (a sweep: beside its jobs file), moved into place when `files` commits."""
    csv_path = base.with_name(f"{base.name}.{battery.name}.csv")
    md_path = base.with_name(f"{base.name}.{battery.name}.md")
    files.write_text(csv_path, matrix_csv(battery, checkpoints))
    files.write_text(md_path, f"{battery.description}\n\n" + matrix_markdown(battery, checkpoints))
    return csv_path, md_path


__all__ = ["MatrixColumn", "matrix_csv", "matrix_markdown", "write_matrix"]
