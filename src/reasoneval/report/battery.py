"""A battery's files (analysis/battery.py: the table and its figures): one run of it as battery.json, .csv and .md
(the baseline layout), and its table for many checkpoints: one column per checkpoint (Markdown) and one CSV row per
checkpoint (a column per row of the table, `<task>/<setting>/<metric>` and its `_stderr`).

Checkpoints are keyed by the name they were given (a sweep's job name, or the model's full path), never by a
folder's last part alone: two training runs' `checkpoint-100` stay two columns.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from reasoneval.analysis.battery import Battery, RowFigure, metric_name
from reasoneval.atomic import FileSet, atomic_write_text
from reasoneval.report.text import csv_text, markdown_table

MatrixColumn = tuple[str, "int | None", Sequence[RowFigure]]  # a checkpoint: (name, training step, the battery's figures)


def table_cells(figures: Sequence[RowFigure]) -> tuple[list[str], list[list[str]]]:
    """The baseline layout: task, setting, metric, value ± SE (fractions, 4 decimals, as lm-eval prints them: a
    group's pooled within-subject stderr), n; and where a group row's SE over all its problems (reasoneval's)
    differs from lm-eval's pooled one, that beside it, labelled."""
    own = any(f.stderr_all is not None for f in figures)
    head = ["task", "setting", "metric", "value", "± stderr", "n", *(["SE over all problems (reasoneval)"] if own else [])]
    cells = []
    for f in figures:
        r = f.row
        line = [r.task if r.subject is None else f" - {r.task}", r.setting, r.metric,
                "" if f.value is None else f"{f.value:.4f}", "" if f.stderr is None else f"{f.stderr:.4f}",
                "" if f.num_problems is None else str(f.num_problems)]
        if own:
            differs = f.stderr_all is not None and (f.stderr is None or f"{f.stderr_all:.4f}" != f"{f.stderr:.4f}")
            line.append(f"{f.stderr_all:.4f}" if differs and f.stderr_all is not None else "")
        cells.append(line)
    return head, cells


def battery_record(battery: Battery, figures: Sequence[RowFigure], results: Mapping[str, Any], model: str,
                   deviations: Mapping[str, Any]) -> dict[str, Any]:
    """battery.json: the rows with their figures, each run's directory and settings, and the deviations (the
    mandatory settings the user set otherwise: run.battery.deviations)."""
    runs = {}
    for run in battery.runs:
        r = results.get(run.name)
        if r is None:
            continue
        s = r.config.settings
        runs[run.name] = {"run_dir": str(r.run_dir), "run_id": r.run_id, "complete": r.complete,
                          "tasks": list(r.tasks), "seed": s.seed, "api": s.api,
                          "sampling": None if s.sampling is None else dataclasses.asdict(s.sampling),
                          "prompt_style": s.prompt_style, "n": r.n}
    return {"battery": battery.name, "description": battery.description, "model": model,
            "mandatory": dict(battery.mandatory), "deviations": dict(deviations),
            "rows": [{"task": f.row.task, "setting": f.row.setting, "metric": f.row.metric, "value": f.value,
                      "stderr": f.stderr, "num_problems": f.num_problems, "run": f.row.run,
                      **({"stderr_all_problems": f.stderr_all} if f.stderr_all is not None else {})} for f in figures],
            "runs": runs}


def write_battery(out_dir: Path, battery: Battery, figures: Sequence[RowFigure], results: Mapping[str, Any],
                  model: str, deviations: Mapping[str, Any]) -> list[Path]:
    """`<battery>.json`, `.csv` (full precision) and `.md` (the printed layout) in out_dir (the model's folder of
    the results)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    head, cells = table_cells(figures)
    base = out_dir / battery.name
    paths = [base.with_suffix(".json"), base.with_suffix(".csv"), base.with_suffix(".md")]
    atomic_write_text(paths[0], json.dumps(battery_record(battery, figures, results, model, deviations), indent=2) + "\n")
    atomic_write_text(paths[1], csv_text([{"task": f.row.task, "setting": f.row.setting, "metric": f.row.metric,
                                           "value": "" if f.value is None else f.value,
                                           "stderr": "" if f.stderr is None else f.stderr,
                                           "n": "" if f.num_problems is None else f.num_problems,
                                           "stderr_all_problems": "" if f.stderr_all is None else f.stderr_all}
                                          for f in figures]))
    atomic_write_text(paths[2], markdown_table(head, cells, left=3))
    return paths


def _ordered(checkpoints: Sequence[MatrixColumn]) -> list[MatrixColumn]:
    return sorted(checkpoints, key=lambda c: (c[1] is None, c[1] if c[1] is not None else 0, c[0]))


def matrix_markdown(battery: Battery, checkpoints: Sequence[MatrixColumn]) -> str:
    """Rows of the battery (task, setting, metric), one column per checkpoint: "value ± SE" (fractions)."""
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


__all__ = ["MatrixColumn", "battery_record", "matrix_csv", "matrix_markdown", "table_cells", "write_battery", "write_matrix"]
