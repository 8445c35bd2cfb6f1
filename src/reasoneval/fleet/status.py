"""A sweep's (or watcher's) tables: jobs x tasks (pass@1 ± SE) and jobs by training step x (task, metric).

Written beside the jobs file as `<JOBS>.status.csv` / `.status.md` and `<JOBS>.checkpoints.csv` / `.md`,
and printed; rendered with reasoneval.report.text like every other table.
"""

from __future__ import annotations

import contextlib
import csv
import io
from pathlib import Path
from typing import Any, Iterator, Sequence

from reasoneval.atomic import FileSet
from reasoneval.errors import UserError
from reasoneval.fleet.jobs import Job
from reasoneval.fleet.state import SweepState, read_state, state_path
from reasoneval.run_files import SUMMARY_FILE


def _results(jobs: Sequence[Job], state: SweepState) -> dict[str, Any]:
    """The scored result of each job that has one (its summary.json), by job name."""
    from reasoneval.results.schema import load_run

    out = {}
    for job in jobs:
        entry = state.get(job.name)
        if entry is not None and entry.run_dir and (Path(entry.run_dir) / SUMMARY_FILE).exists():
            try:
                out[job.name] = load_run(Path(entry.run_dir))
            except UserError:
                pass
    return out


def status_rows(jobs: Sequence[Job], state: SweepState) -> tuple[list[str], list[list[str]]]:
    """Header and rows: job, state, then pass@1 ± SE per task (the jobs' tasks, in order)."""
    from reasoneval.report.text import pct

    results = _results(jobs, state)
    tasks: list[str] = []
    for job in jobs:
        names = list(results[job.name].tasks) if job.name in results else list(job.config.tasks)
        tasks.extend(t for t in names if t not in tasks)
    rows = []
    for job in jobs:
        entry = state.get(job.name)
        row = [job.name, entry.state if entry is not None else "pending"]
        r = results.get(job.name)
        for t in tasks:
            m = r.tasks.get(t) if r is not None else None
            if m is None or m.mean is None:
                row.append("")
            else:
                row.append(pct(m.mean) + (f" ± {pct(m.stderr)}" if m.stderr is not None else ""))
        rows.append(row)
    return ["job", "state", *tasks], rows


def write_status(jobs_path: Path, header: Sequence[str], rows: Sequence[Sequence[str]],
                 files: FileSet | None = None) -> tuple[Path, Path]:
    """`<JOBS>.status.csv` and `.md`, now or at `files`' commit (with the checkpoint tables: all or none)."""
    from reasoneval.report.text import markdown_table

    csv_path = jobs_path.with_name(jobs_path.name + ".status.csv")
    md_path = jobs_path.with_name(jobs_path.name + ".status.md")
    buf = io.StringIO()
    csv.writer(buf).writerows([header, *rows])
    with _files(files) as out:
        out.write_text(csv_path, buf.getvalue())
        out.write_text(md_path, "pass@1 (%) ± SE per task\n\n" + markdown_table(header, rows, left=2))
    return csv_path, md_path


def write_checkpoint_table(path: Path, jobs: Sequence[Job], state: SweepState,
                           files: FileSet | None = None) -> tuple[Path, Path]:
    """`<path>.checkpoints.csv` and `.md`: the scored jobs by training step x (task, metric), lm-eval's metric
    names (report.runs.checkpoint_table; the same as `reasoneval runs --by-checkpoint`)."""
    from reasoneval.report.dashboards import Checkpoint, model_checkpoint
    from reasoneval.report.runs import checkpoint_table, text_columns
    from reasoneval.report.text import csv_text, markdown_table

    results = _results(jobs, state)
    # Each job's training run (its model's folder, as `runs --by-checkpoint` reads it): run7's and run8's
    # checkpoint-100 are two rows, ordered by training run, then step.
    head, cells, records = checkpoint_table([(Checkpoint(model_checkpoint(results[j.name].config).training_run, j.name,
                                                         j.step), results[j.name]) for j in jobs if j.name in results])
    csv_path = path.with_name(path.name + ".checkpoints.csv")
    md_path = path.with_name(path.name + ".checkpoints.md")
    with _files(files) as out:
        out.write_text(csv_path, csv_text(records) if records else ",".join(head) + "\n")
        out.write_text(md_path, markdown_table(head, cells, left=text_columns(head)))
    return csv_path, md_path


@contextlib.contextmanager
def _files(files: FileSet | None) -> Iterator[FileSet]:
    """The caller's FileSet (it commits), or one of our own committed here."""
    if files is not None:
        yield files
        return
    with FileSet() as own:
        yield own


def print_status(header: Sequence[str], rows: Sequence[Sequence[str]], title: str) -> None:
    from reasoneval.report.text import print_table

    print_table([h if i < 2 else f"{h} pass@1 ± SE" for i, h in enumerate(header)], rows, title, left=2)


def write_battery_matrices(path: Path, jobs: Sequence[Job], state: SweepState, files: FileSet | None = None
                           ) -> list[Path]:
    """For jobs that run a battery (`battery:`): `<path>.<battery>.csv` and `.md`, checkpoint × row, a checkpoint
    per model entry of the jobs file (its name), its figures from its runs' scored results."""
    from reasoneval.analysis.battery import get_battery, row_figures
    from reasoneval.report.battery import write_matrix

    results = _results(jobs, state)
    out: list[Path] = []
    for name in dict.fromkeys(j.battery for j in jobs if j.battery):
        battery = get_battery(str(name))
        checkpoints: dict[str, tuple[int | None, dict[str, Any]]] = {}
        for j in jobs:
            if j.battery == name and j.checkpoint is not None:
                step, runs = checkpoints.setdefault(j.checkpoint, (j.step, {}))
                if j.name in results and j.battery_run is not None:
                    runs[j.battery_run] = results[j.name]
        columns = [(c, step, row_figures(battery, runs)) for c, (step, runs) in checkpoints.items()]
        with _files(files) as written:
            out += write_matrix(path, battery, columns, written)
    return out


def show_status(jobs_path: Path, jobs: Sequence[Job]) -> bool:
    """Print the table and write it beside the jobs file; True when every job is done."""
    state = read_state(state_path(jobs_path))
    header, rows = status_rows(jobs, state)
    with FileSet() as files:  # the tables change together, or (a failure) not at all
        write_status(jobs_path, header, rows, files)
        write_checkpoint_table(jobs_path, jobs, state, files)
        matrices = write_battery_matrices(jobs_path, jobs, state, files)
    for path in matrices:
        print(f"battery table: {path}")
    print_status(header, rows, f"sweep {jobs_path.name}")
    return all(state[j.name].state == "done" if j.name in state else False for j in jobs)


__all__ = ["print_status", "show_status", "status_rows", "write_battery_matrices", "write_checkpoint_table", "write_status"]
